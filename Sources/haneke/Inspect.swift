import ArgumentParser
import Foundation
import Haneke

struct Inspect: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the entries of a cache folder, most recently used first.",
        discussion: """
        One row per entry: key, file, payload size, file length, blocks on disk, created, expires, \
        last access. Nothing is changed.

        --json prints an array with one object per entry, keys sorted, every field always there: \
        key (whole), file (its path), payloadSize, storedSize (file length), allocatedSize (bytes \
        on disk), created, expires and lastAccess (ISO 8601 dates; expires and lastAccess null \
        when there are none).
        """ + ExitStatus.help
    )

    @Argument(help: "The cache folder (one format's FileStore directory).")
    var directory: String

    @Flag(help: "Print JSON (an array of objects) for scripts.")
    var json = false

    @OptionGroup var progressOptions: ProgressOptions

    func run() throws {
        let folder = try requireStoreFolder(directory)
        let inspection = try inspect(folder, judge: nil, progress: progressOptions.line())
        if json {
            try printJSON(inspection.entries.map(EntryRow.init))
        } else {
            printTable(
                ["key", "file", "payload", "in file", "on disk", "created", "expires", "last access"],
                inspection.entries.map { entry in
                    [
                        shown(entry.key),
                        String(entry.path.dropFirst(folder.count + 1)),
                        ByteSize.format(entry.payloadSize),
                        ByteSize.format(entry.storedSize),
                        ByteSize.format(entry.allocatedSize),
                        entry.created.iso8601,
                        entry.expires?.iso8601 ?? "never",
                        entry.lastAccess?.iso8601 ?? "—",
                    ]
                },
                rightAligned: [2, 3, 4]
            )
            let inFiles = inspection.entries.reduce(0) { $0 + $1.storedSize }
            let onDisk = inspection.entries.reduce(0) { $0 + $1.allocatedSize }
            print("\n\(inspection.entries.count) entries, \(ByteSize.format(inFiles)) in files, \(ByteSize.format(onDisk)) on disk")
        }
        if !inspection.problems.isEmpty {
            printError("\(inspection.problems.count) problem(s) found; run `\(toolInvocation) verify \(shown(folder))` for details")
        }
    }

    /// One entry as JSON: every field always present, `null` when absent.
    struct EntryRow: Encodable {
        var key: String
        var file: String
        var payloadSize: Int
        var storedSize: Int
        var allocatedSize: Int
        var created: Date
        var expires: OrNull<Date>
        var lastAccess: OrNull<Date>

        init(_ entry: FileStore.Entry) {
            key = entry.key
            file = entry.path
            payloadSize = entry.payloadSize
            storedSize = entry.storedSize
            allocatedSize = entry.allocatedSize
            created = entry.created
            expires = OrNull(entry.expires)
            lastAccess = OrNull(entry.lastAccess)
        }
    }
}
