import ArgumentParser
import Foundation
import Haneke

struct Trim: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Evict the least recently used entries until a cache folder holds at most SIZE.",
        discussion: "SIZE is bytes or a number with K, M, G or T (powers of 1024), e.g. 100M."
    )

    @Argument(help: "The cache folder (one format's FileStore directory).")
    var directory: String

    @Option(name: .customLong("to"), help: "The size to trim to.")
    var size: ByteSize

    func run() throws {
        let folder = try requireStoreFolder(directory, forChanges: true)
        let store = try FileStore(directory: folder, configuration: .init(capacity: nil))
        let before = (store.count, store.totalSize)
        store.trim(toSize: size.bytes)
        try store.flush()
        print("\(before.0) entries, \(ByteSize.format(before.1)) → \(store.count) entries, \(ByteSize.format(store.totalSize))")
    }
}
