import ArgumentParser
import Foundation
import Haneke

struct Trim: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Evict the least recently used entries until a cache folder takes at most SIZE on disk.",
        discussion: """
        SIZE is \(ByteSize.syntax), e.g. 100M: the blocks the \
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
        let stores = try diskEngines.compactMap { try $0.openForTrimming(inFolder: folder, size: size.bytes, logger: quietLogger) }
        let before = stores.map { (count: $0.count, allocated: $0.allocatedSize, trimmed: $0.trimmedSize) }
        // The target split in proportion to the sizes now, each by the measure its trim uses; the
        // first store (the folder's files) takes what the others leave.
        let measured = before.reduce(0) { $0 + $1.trimmed }
        var shares = before.map { measured == 0 ? 0 : Int(Double(size.bytes) * Double($0.trimmed) / Double(measured)) }
        if !shares.isEmpty { shares[0] = size.bytes - shares.dropFirst().reduce(0, +) }
        for (index, store) in stores.enumerated() {
            let part = Self.partName(of: store).map { " of \($0)" } ?? ""
            progress.show("evicting from \(before[index].count) entries\(part) to fit in \(ByteSize.format(shares[index]))…", now: true)
            try store.trim(toSize: shares[index])
            try store.flush()
        }
        progress.end()
        for (index, store) in stores.enumerated() {
            let part = Self.partName(of: store).map { "\($0): " } ?? ""
            print("\(part)\(counted(before[index].count, "entry", "entries")), \(ByteSize.format(before[index].allocated)) on disk → \(counted(store.count, "entry", "entries")), \(ByteSize.format(store.allocatedSize))")
        }
    }

    /// How the output names a store's part of the folder (see `DiskEngine.partName`).
    static func partName(of store: any DiskEngine) -> String? {
        type(of: store).partName
    }
}
