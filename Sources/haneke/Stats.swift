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
        let inspection = try inspect(folder, judge: judge, progress: progressOptions.line())
        let database = try inspectDatabase(folder, progress: progressOptions.line())
        let summary = Summary(folder, inspection, judge.tally, database: database, now: now)
        if json { return try printJSON(summary) }
        var rows: [[String]] = [["entries", "\(summary.entries)"]]
        if let database = summary.database {
            rows += [["  in files", "\(summary.entries - database.entries)"], ["  in the database", "\(database.entries)"]]
        }
        rows += [
            ["on disk (du)", ByteSize.format(summary.allocatedSize)],
            ["  entry files", ByteSize.format(summary.entryFilesAllocatedSize)],
            ["  marker and journal", ByteSize.format(summary.metadataAllocatedSize)],
            ["  folders", ByteSize.format(summary.foldersAllocatedSize)],
        ]
        if let database = summary.database {
            rows.append(["  database, log and index", ByteSize.format(database.allocatedSize)])
        }
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
        /// The folder's SQLite database, when it has one (left out of the JSON otherwise).
        var database: Database?

        /// What `stats` shows of the database.
        struct Database: Encodable {
            /// Its valid entries.
            var entries: Int
            /// The bytes the database, its log and the log's index take on disk.
            var allocatedSize: Int
            /// The payloads' lengths.
            var payloadSize: Int
            /// Its expired entries.
            var expired: Int
            /// Its damaged rows, plus one for a damaged structure or an unreadable database.
            var problems: Int
        }

        /// Sums up a walk.
        init(_ folder: String, _ inspection: FileStore.Inspection, _ tally: PayloadJudge.Tally, database sqlite: SQLiteStore.Inspection?, now: Date) {
            let entries = inspection.entries
            directory = folder
            self.entries = entries.count
            entryFilesAllocatedSize = entries.reduce(0) { $0 + $1.allocatedSize }
            metadataAllocatedSize = inspection.metadataSize
            foldersAllocatedSize = inspection.foldersSize
            allocatedSize = entryFilesAllocatedSize + metadataAllocatedSize + foldersAllocatedSize
            storedSize = entries.reduce(0) { $0 + $1.storedSize }
            payloadSize = entries.reduce(0) { $0 + $1.payloadSize }
            lz4Frames = tally.frames
            uncompressedSize = tally.contentBytes + tally.rawBytes
            lz4Ratio = OrNull(tally.frameBytes == 0 ? nil : Double(tally.contentBytes) / Double(tally.frameBytes))
            expired = entries.filter { ($0.expires ?? .distantFuture) <= now }.count
            oldest = OrNull(entries.map(\.created).min())
            newest = OrNull(entries.map(\.created).max())
            problems = inspection.problems.count
            guard let sqlite else { return }
            let rows = sqlite.entries
            let database = Database(
                entries: rows.count,
                allocatedSize: sqlite.totalSize,
                payloadSize: rows.reduce(0) { $0 + $1.payloadSize },
                expired: rows.filter { ($0.expires ?? .distantFuture) <= now }.count,
                problems: sqlite.problemCount
            )
            self.database = database
            self.entries += database.entries
            allocatedSize += database.allocatedSize
            payloadSize += database.payloadSize
            expired += database.expired
            oldest = OrNull((entries.map(\.created) + rows.map(\.created)).min())
            newest = OrNull((entries.map(\.created) + rows.map(\.created)).max())
            problems += database.problems
        }
    }
}
