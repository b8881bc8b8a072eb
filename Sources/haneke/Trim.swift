import ArgumentParser
import Foundation
import Haneke

struct Trim: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Evict the least recently used entries until a cache folder takes at most SIZE on disk.",
        discussion: """
        SIZE is bytes or a number with K, M, G or T (powers of 1024), e.g. 100M: the blocks the \
        store's files take on disk, as `du` counts them (its marker and journal included; the \
        folders themselves not). Only a store's folder is trimmed, and only its entry files are \
        deleted. Progress (on a terminal) names the step under way: opening the store, then \
        evicting.
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
        progress.show("evicting from \(before.0) entries to fit in \(size)…", now: true)
        try store.trim(toSize: size.bytes)
        try store.flush()
        progress.end()
        print("\(before.0) entries, \(ByteSize.format(before.1)) on disk → \(store.count) entries, \(ByteSize.format(store.totalSize + store.metadataSize))")
    }
}
