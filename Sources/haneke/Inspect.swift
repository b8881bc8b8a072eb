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

    func run() throws {
        let folder = try requireStoreFolder(directory)
        let inspection = try inspect(folder, judge: nil, progress: progressOptions.line())
        let database = try inspectDatabase(folder, progress: progressOptions.line())
        if json {
            try printJSON(inspection.entries.map(EntryRow.init) + (database.map { database in database.entries.map { EntryRow($0, in: database) } } ?? []))
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
            if let database { Self.printDatabase(database) }
        }
        let problems = inspection.problems.count + (database?.problemCount ?? 0)
        if problems > 0 {
            printError("\(problems) problem(s) found; run `\(toolInvocation) verify \(shown(folder))` for details")
        }
    }

    /// The database's section of the table.
    static func printDatabase(_ database: SQLiteStore.Inspection) {
        print("\nin the database \(shown(database.path)):\n")
        printTable(
            ["key", "payload", "created", "expires", "last access"],
            database.entries.map { entry in
                [
                    shown(entry.key),
                    ByteSize.format(entry.payloadSize),
                    entry.created.iso8601,
                    entry.expires?.iso8601 ?? "never",
                    entry.lastAccess.iso8601,
                ]
            },
            rightAligned: [1]
        )
        let payloads = database.entries.reduce(0) { $0 + $1.payloadSize }
        print("\n\(database.entries.count) entries in the database, \(ByteSize.format(payloads)) of payloads, \(ByteSize.format(database.totalSize)) on disk (database, log and index)")
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

        init(_ entry: SQLiteStore.Entry, in database: SQLiteStore.Inspection) {
            key = entry.key
            file = database.path
            payloadSize = entry.payloadSize
            storedSize = entry.key.utf8.count + entry.payloadSize
            allocatedSize = 0
            created = entry.created
            expires = OrNull(entry.expires)
            lastAccess = OrNull(entry.lastAccess)
        }
    }
}
