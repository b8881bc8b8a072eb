import ArgumentParser
import Foundation
import Haneke

struct Stats: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Summarise a cache folder: entries, sizes, LZ4 ratio, expired entries, problems.",
        discussion: """
        "on disk" is the blocks the files take, as du counts them (what the capacity bounds); \
        "in files" is their lengths. Reads every file once; nothing is changed.

        --json prints one object, keys sorted, every field always there: directory, entries, \
        allocatedSize (on disk, du), entryFilesAllocatedSize, metadataAllocatedSize (marker and \
        journal), foldersAllocatedSize, storedSize (in files), payloadSize, lz4Frames, \
        uncompressedSize (values before compression), lz4Ratio (null without frames), expired, \
        oldest and newest (ISO 8601 dates of creation, null without entries), problems (a count). \
        Sizes are bytes.

        A folder that also holds an SQLite database (a format with a small-value threshold sends \
        small values there) counts its entries among the entries, expired, payloads, oldest and \
        newest, its files (database, log and index) in "on disk", and its damaged rows among the \
        problems; the table adds rows for it, and JSON a database object (only then): entries, \
        allocatedSize, payloadSize, expired, problems. The LZ4 rows count the entry files only.
        """ + ExitStatus.help
    )

    @Argument(help: "The cache folder (one format's FileStore directory).")
    var directory: String

    @OptionGroup var payloadOptions: PayloadOptions

    @Flag(help: "Print JSON (one object) for scripts.")
    var json = false

    @OptionGroup var progressOptions: ProgressOptions

    func run() throws {
        let folder = try requireStoreFolder(directory)
        let now = Date()
        // One walk: the payloads come with the entries, each decoded within the limit, never sized
        // by what its frame claims; damage counts among the problems exactly as `verify` finds it.
        let judge = PayloadJudge(payloadOptions, now: now)
        let parts = try diskEngines.compactMap { try inspect($0, in: folder, judge: judge, progress: progressOptions.line()) }
        guard let files = parts.first(where: { $0.partName == nil }) else {
            throw ToolError.problems("\(shown(folder)) has no part of its own")
        }
        let summary = Summary(folder, files, judge.tally, named: parts.filter { $0.partName != nil }, now: now)
        if json { return try printJSON(summary) }
        var rows: [[String]] = [["entries", "\(summary.entries)"]]
        if !summary.named.isEmpty {
            rows.append(["  in files", "\(files.entries.count)"])
            rows += summary.named.map { ["  in \($0.name)", "\($0.part.entries)"] }
        }
        rows += [
            ["on disk (du)", ByteSize.format(summary.allocatedSize)],
            ["  entry files", ByteSize.format(summary.entryFilesAllocatedSize)],
            ["  marker and journal", ByteSize.format(summary.metadataAllocatedSize)],
            ["  folders", ByteSize.format(summary.foldersAllocatedSize)],
        ]
        rows += summary.named.map { ["  \($0.filesDescription)", ByteSize.format($0.part.allocatedSize)] }
        rows += [
            ["in files", ByteSize.format(summary.storedSize)],
            ["payloads", ByteSize.format(summary.payloadSize)],
            ["LZ4 frames", "\(summary.lz4Frames)"],
            ["values before compression", ByteSize.format(summary.uncompressedSize)],
            ["LZ4 ratio", summary.lz4Ratio.value.map { String(format: "%.2f", $0) } ?? "—"],
            ["expired", "\(summary.expired)"],
            ["oldest", summary.oldest.value?.iso8601 ?? "—"],
            ["newest", summary.newest.value?.iso8601 ?? "—"],
            ["problems", "\(summary.problems)"],
        ]
        printTable(["", shown(folder)], rows)
    }

    /// What `stats` shows, as the table's rows and as JSON (sizes in bytes).
    struct Summary: Encodable {
        /// The store's folder.
        var directory: String
        /// The valid entries.
        var entries: Int
        /// Everything on disk, as `du` counts it.
        var allocatedSize: Int
        /// The blocks of the entry files.
        var entryFilesAllocatedSize: Int
        /// The blocks of the marker and the journal.
        var metadataAllocatedSize: Int
        /// The blocks of the folder and its shard folders.
        var foldersAllocatedSize: Int
        /// The entry files' lengths.
        var storedSize: Int
        /// The payloads' lengths.
        var payloadSize: Int
        /// The unexpired payloads that are LZ4 frames.
        var lz4Frames: Int
        /// The unexpired values' sizes before compression.
        var uncompressedSize: Int
        /// Decompressed over compressed bytes of the frames; `null` without frames.
        var lz4Ratio: OrNull<Double>
        /// The expired entries.
        var expired: Int
        /// The oldest entry's creation.
        var oldest: OrNull<Date>
        /// The newest entry's creation.
        var newest: OrNull<Date>
        /// The problems found.
        var problems: Int
        /// The folder's named parts (its SQLite database), each an object under its key (left out
        /// of the JSON when there are none).
        var named: [Named]

        /// What `stats` shows of a named part (the database).
        struct Named {
            /// How the output names the part ("the database").
            var name: String
            /// Its key in JSON (`database`).
            var key: String
            /// What its files are ("database, log and index").
            var filesDescription: String
            /// Its figures.
            var part: Part
        }

        /// The figures of a named part, as JSON shows them.
        struct Part: Encodable {
            /// Its valid entries.
            var entries: Int
            /// The bytes its files (the database, its log and the log's index) take on disk.
            var allocatedSize: Int
            /// The payloads' lengths.
            var payloadSize: Int
            /// Its expired entries.
            var expired: Int
            /// Its problems: damaged rows, plus one for a damaged structure or an unreadable database.
            var problems: Int
        }

        /// Sums up a walk.
        init(_ folder: String, _ files: DiskInspection, _ tally: PayloadJudge.Tally, named parts: [DiskInspection], now: Date) {
            let entries = files.entries
            directory = folder
            self.entries = entries.count
            entryFilesAllocatedSize = entries.reduce(0) { $0 + $1.allocatedSize }
            metadataAllocatedSize = files.metadataSize
            foldersAllocatedSize = files.foldersSize
            allocatedSize = entryFilesAllocatedSize + metadataAllocatedSize + foldersAllocatedSize
            storedSize = entries.reduce(0) { $0 + $1.storedSize }
            payloadSize = entries.reduce(0) { $0 + $1.payloadSize }
            lz4Frames = tally.frames
            uncompressedSize = tally.contentBytes + tally.rawBytes
            lz4Ratio = OrNull(tally.frameBytes == 0 ? nil : Double(tally.contentBytes) / Double(tally.frameBytes))
            expired = entries.filter { ($0.expires ?? .distantFuture) <= now }.count
            oldest = OrNull(entries.map(\.created).min())
            newest = OrNull(entries.map(\.created).max())
            problems = files.problems.count
            named = []
            var created = entries.map(\.created)
            for inspection in parts {
                let rows = inspection.entries
                let part = Part(
                    entries: rows.count,
                    allocatedSize: inspection.allocatedSize,
                    payloadSize: rows.reduce(0) { $0 + $1.payloadSize },
                    expired: rows.filter { ($0.expires ?? .distantFuture) <= now }.count,
                    problems: inspection.problems.count
                )
                named.append(Named(name: inspection.partName ?? "", key: inspection.jsonKey, filesDescription: inspection.filesDescription, part: part))
                self.entries += part.entries
                allocatedSize += part.allocatedSize
                payloadSize += part.payloadSize
                expired += part.expired
                created += rows.map(\.created)
                oldest = OrNull(created.min())
                newest = OrNull(created.max())
                problems += part.problems
            }
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: JSONKey.self)
            try container.encode(directory, forKey: "directory")
            try container.encode(entries, forKey: "entries")
            try container.encode(allocatedSize, forKey: "allocatedSize")
            try container.encode(entryFilesAllocatedSize, forKey: "entryFilesAllocatedSize")
            try container.encode(metadataAllocatedSize, forKey: "metadataAllocatedSize")
            try container.encode(foldersAllocatedSize, forKey: "foldersAllocatedSize")
            try container.encode(storedSize, forKey: "storedSize")
            try container.encode(payloadSize, forKey: "payloadSize")
            try container.encode(lz4Frames, forKey: "lz4Frames")
            try container.encode(uncompressedSize, forKey: "uncompressedSize")
            try container.encode(lz4Ratio, forKey: "lz4Ratio")
            try container.encode(expired, forKey: "expired")
            try container.encode(oldest, forKey: "oldest")
            try container.encode(newest, forKey: "newest")
            try container.encode(problems, forKey: "problems")
            for part in named {
                try container.encode(part.part, forKey: JSONKey(part.key))
            }
        }
    }
}
