import HanekeProtocols
import Logging

/// A store opened in the background: `open` runs on an I/O executor as soon as the wrapper is made
/// (a `FileStore` walks its folder when it opens), and every operation waits for it — suspending,
/// never blocking a thread. So a `Cache` can be created anywhere, on a cooperative thread or as a
/// global (`Shared`), without its caller waiting on the disk.
///
/// A store that cannot be opened (a folder that is not a store's, another user's, a full disk)
/// is logged once and then behaves as an empty store that keeps nothing: the format works from its
/// memory layer alone, as it would with no folder at all.
final class OpeningStore<Base: Store>: Store {
    typealias Key = Base.Key
    typealias Value = Base.Value

    let name: String
    private let opening: Task<Base?, Never>
    private let opened = Locked<Base?>(nil)

    /// Starts opening the store.
    /// - Parameters:
    ///   - name: The layer's name in statistics, before the store is open.
    ///   - executor: Where `open` runs.
    ///   - logger: Where a failure to open is reported.
    ///   - what: What is being opened, for the log (a folder's path).
    ///   - open: Opens the store; blocking work.
    init(name: String, executor: IOExecutor, logger: Logger, what: String, open: @escaping @Sendable () throws -> Base) {
        self.name = name
        let opened = self.opened
        opening = Task {
            do {
                let base = try await executor.run(open)
                opened.withLock { $0 = base }
                return base
            } catch {
                logger.error("The cache folder cannot be used; this format keeps values in memory only", metadata: ["folder": "\(what)", "error": "\(error)"])
                return nil
            }
        }
    }

    /// The store, once opened; `nil` when it could not be opened.
    var base: Base? {
        get async { await opening.value }
    }

    func value(forKey key: Key) async throws -> Value? {
        guard let base = await base else { return nil }
        return try await base.value(forKey: key)
    }

    func value<Transformed: Sendable>(
        forKey key: Key,
        transformedBy transform: @escaping @Sendable (Value) throws -> Transformed
    ) async throws -> Transformed? {
        guard let base = await base else { return nil }
        return try await base.value(forKey: key, transformedBy: transform)
    }

    func setValue(_ value: Value, forKey key: Key) async throws {
        try await base?.setValue(value, forKey: key)
    }

    func removeValue(forKey key: Key) async throws {
        try await base?.removeValue(forKey: key)
    }

    func removeAll() async throws {
        try await base?.removeAll()
    }

    /// The store's layers once it is open; until then one empty layer named ``name``.
    var layerStatistics: [LayerStatistics] {
        opened.withLock { $0 }?.layerStatistics ?? [LayerStatistics(name: name, statistics: StoreStatistics())]
    }
}
