import ArgumentParser
import Foundation
import Haneke

struct Inspect: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the entries of a cache folder, most recently used first.",
        discussion: """
        One row per entry: key, file, payload size, file length, blocks on disk, created, expires, \
        last access. Nothing is changed. A key that is a URL is shown without its secrets (its \
        user info, and the values of query items such as token, signature, code or \
        X-Goog-Signature, as ***) unless --show-secrets.

        --json prints an array with one object per entry, keys sorted, every field always there: \
        key (whole, its secrets hidden the same way), file (its path), payloadSize, storedSize (file length), allocatedSize (bytes \
        on disk), created, expires and lastAccess (ISO 8601 dates; expires and lastAccess null \
        when there are none).

        Values kept in the folder's SQLite database (a format with a small-value threshold sends \
        small values there) are listed after the files, under "in the database": key, payload \
        size, created, expires, last access. In JSON they are objects of the same fields: file \
        is the database's path, storedSize the key and payload bytes, allocatedSize 0 (the rows \
        share the database's pages).
        """ + ExitStatus.help
    )

    @Argument(help: "The cache folder (one format's FileStore directory).")
    var directory: String

    @Flag(help: "Print JSON (an array of objects) for scripts.")
    var json = false

    @OptionGroup var progressOptions: ProgressOptions
    @OptionGroup var secretOptions: SecretOptions

    func run() throws {
        secretOptions.apply()
        let folder = try requireStoreFolder(directory)
        let parts = try diskEngines.compactMap { try inspect($0, in: folder, judge: nil, progress: progressOptions.line()) }
        if json {
            try printJSON(parts.flatMap { $0.entries.map(EntryRow.init) })
        } else {
            for part in parts {
                if let name = part.partName { Self.printPart(part, named: name) } else { Self.printFolder(part, folder) }
            }
        }
        let problems = parts.reduce(0) { $0 + $1.problems.count }
        if problems > 0 {
            printError("\(counted(problems, "problem", "problems")) found; run `\(toolInvocation) verify \(shown(folder))` for details")
        }
    }

    /// The folder's own part: a row per entry file, then the files' totals.
    static func printFolder(_ part: DiskInspection, _ folder: String) {
        printTable(
            ["key", "file", "payload", "in file", "on disk", "created", "expires", "last access"],
            part.entries.map { entry in
                [
                    shownKey(entry.key),
                    String(entry.location.dropFirst(folder.count + 1)),
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
        let inFiles = part.entries.reduce(0) { $0 + $1.storedSize }
        let onDisk = part.entries.reduce(0) { $0 + $1.allocatedSize }
        print("\n\(counted(part.entries.count, "entry", "entries")), \(ByteSize.format(inFiles)) in files, \(ByteSize.format(onDisk)) on disk")
    }

    /// A named part's section of the table ("in the database <path>:"), its entries sharing its
    /// files.
    static func printPart(_ part: DiskInspection, named name: String) {
        print("\nin \(name) \(shown(part.path)):\n")
        printTable(
            ["key", "payload", "created", "expires", "last access"],
            part.entries.map { entry in
                [
                    shownKey(entry.key),
                    ByteSize.format(entry.payloadSize),
                    entry.created.iso8601,
                    entry.expires?.iso8601 ?? "never",
                    entry.lastAccess?.iso8601 ?? "—",
                ]
            },
            rightAligned: [1]
        )
        let payloads = part.entries.reduce(0) { $0 + $1.payloadSize }
        print("\n\(counted(part.entries.count, "entry", "entries")) in \(name), \(ByteSize.format(payloads)) of payloads, \(ByteSize.format(part.allocatedSize)) on disk (\(part.filesDescription))")
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

        /// An entry of any part: `file` is its own file, or the one it shares.
        init(_ entry: DiskInspection.Entry) {
            key = printedKey(entry.key)
            file = entry.location
            payloadSize = entry.payloadSize
            storedSize = entry.storedSize
            allocatedSize = entry.allocatedSize
            created = entry.created
            expires = OrNull(entry.expires)
            lastAccess = OrNull(entry.lastAccess)
        }
    }
}
