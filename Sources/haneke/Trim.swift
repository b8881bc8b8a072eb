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
        deleted.
        """
    )

    @Argument(help: "The cache folder (one format's FileStore directory).")
    var directory: String

    @Option(name: .customLong("to"), help: "The size on disk to trim to.")
    var size: ByteSize

    func run() throws {
        let folder = try requireStoreFolder(directory)
        let store = try FileStore(directory: folder, configuration: .init(capacity: nil, countLimit: nil), logger: quietLogger)
        let before = (store.count, store.totalSize + store.metadataSize)
        try store.trim(toSize: size.bytes)
        try store.flush()
        print("\(before.0) entries, \(ByteSize.format(before.1)) on disk → \(store.count) entries, \(ByteSize.format(store.totalSize + store.metadataSize))")
    }
}
