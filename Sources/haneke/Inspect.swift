import ArgumentParser
import Foundation
import Haneke

struct Inspect: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the entries of a cache folder, most recently used first.",
        discussion: "One row per entry: key, file, payload size, file length, blocks on disk, created, expires, last access. Nothing is changed."
    )

    @Argument(help: "The cache folder (one format's FileStore directory).")
    var directory: String

    @Flag(help: "Print JSON (an array of objects) for scripts.")
    var json = false

    func run() throws {
        let folder = try requireStoreFolder(directory)
        let inspection = try FileStore.inspect(directory: folder)
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            encoder.dateEncodingStrategy = .iso8601
            let rows = inspection.entries.map(EntryRow.init)
            print(String(decoding: try encoder.encode(rows), as: UTF8.self))
        } else {
            printTable(
                ["key", "file", "payload", "in file", "on disk", "created", "expires", "last access"],
                inspection.entries.map { entry in
                    [
                        entry.key.count > 60 ? String(entry.key.prefix(59)) + "…" : entry.key,
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
            printError("\(inspection.problems.count) problem(s) found; run `haneke verify \(folder)` for details")
        }
    }

    /// One entry as JSON.
    struct EntryRow: Encodable {
        var key: String
        var file: String
        var payloadSize: Int
        var storedSize: Int
        var allocatedSize: Int
        var created: Date
        var expires: Date?
        var lastAccess: Date?

        init(_ entry: FileStore.Entry) {
            key = entry.key
            file = entry.path
            payloadSize = entry.payloadSize
            storedSize = entry.storedSize
            allocatedSize = entry.allocatedSize
            created = entry.created
            expires = entry.expires
            lastAccess = entry.lastAccess
        }
    }
}
