import ArgumentParser
import Foundation
import Haneke

struct Trim: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Evict the least recently used entries until a cache folder takes at most SIZE on disk.",
        discussion: """
        SIZE is bytes or a number with K, M, G or T (powers of 1024), e.g. 100M: the blocks the \
        store's files take on disk, as `du` counts them (its marker and journal included; the \
        folders themselves not). Only a store's folder is trimmed, and only its entry files (and \
        its database's rows) are deleted. Progress (on a terminal) names the step under way: opening the store, then \
        evicting.

        A folder that also holds an SQLite database (a format with a small-value threshold sends \
        small values there) is trimmed too, SIZE split between the two in proportion to what each \
        takes now: the files as above, the database as SQLiteStore counts it (its pages in use \
        plus the room it keeps for its log, for a store whose capacity is SIZE). Each then \
        evicts its own least recently used entries down to its share, so neither loses more than \
        its part; freed database pages are returned to the file system.
        """ + ExitStatus.help
    )

    @Argument(help: "The cache folder (one format's FileStore directory).")
    var directory: String

    @Option(name: .customLong("to"), parsing: .unconditional, help: ArgumentHelp("The size on disk to trim to.", valueName: "size"))
    var size: ByteSize

    @OptionGroup var progressOptions: ProgressOptions

    func run() throws {
        let folder = try requireStoreFolder(directory)
        let progress = progressOptions.line()
        defer { progress.end() }
        progress.show("opening \(shown(folder))…", now: true)
        let store = try FileStore(directory: folder, configuration: .init(capacity: nil, countLimit: nil), logger: quietLogger)
        let before = (store.count, store.totalSize + store.metadataSize)
        let database = try Self.openDatabase(in: folder, size: size.bytes)
        let databaseBefore = database.map { ($0.count, $0.totalSize, $0.usedSize) }
        // The target split in proportion to the sizes now, each by the measure its trim uses.
        let databaseShare = databaseBefore.map { before.1 + $0.2 == 0 ? 0 : Int(Double(size.bytes) * Double($0.2) / Double(before.1 + $0.2)) } ?? 0
        progress.show("evicting from \(before.0) entries to fit in \(ByteSize.format(size.bytes - databaseShare))…", now: true)
        try store.trim(toSize: size.bytes - databaseShare)
        try store.flush()
        if let database, let databaseBefore {
            progress.show("evicting from \(databaseBefore.0) entries of the database to fit in \(ByteSize.format(databaseShare))…", now: true)
            try database.trim(toSize: databaseShare)
            try database.flush()
        }
        progress.end()
        print("\(before.0) entries, \(ByteSize.format(before.1)) on disk → \(store.count) entries, \(ByteSize.format(store.totalSize + store.metadataSize))")
        if let database, let databaseBefore {
            print("the database: \(databaseBefore.0) entries, \(ByteSize.format(databaseBefore.1)) on disk → \(database.count) entries, \(ByteSize.format(database.totalSize))")
        }
    }

    /// The folder's database as a store with capacity `size` (never evicting by itself: it is only
    /// trimmed), or `nil` when the folder has none.
    static func openDatabase(in folder: String, size: Int) throws -> SQLiteStore? {
        guard FileManager.default.fileExists(atPath: folder + "/" + SQLiteStore.databaseFileName) else { return nil }
        return try SQLiteStore(directory: folder, configuration: .init(capacity: max(size, 1)), logger: quietLogger)
    }
}
