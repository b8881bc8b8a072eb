#if ServiceLifecycle
public import Haneke
public import HanekeServer
public import Logging
public import ServiceLifecycle

/// Caches as a swift-service-lifecycle `Service`: it waits for the graceful shutdown, then makes
/// each cache ready for the process to end (`Cache.shutdown()`: the refreshes under way finish and
/// the journals are written), so that the next run's LRU order and preloading see every use.
///
/// ```swift
/// import Haneke
/// import HanekeServiceLifecycle
/// import Logging
/// import ServiceLifecycle
///
/// let users = Cache<String>(name: "users")
/// let pages = Cache<String>(name: "pages")
/// let caches = CacheService(users, pages)
/// let group = ServiceGroup(
///     configuration: .init(services: [caches], gracefulShutdownSignals: [.sigterm], logger: Logger(label: "app"))
/// )
/// ```
public struct CacheService: Service {
    private let shutdowns: [(name: String, shutdown: @Sendable () async throws -> Void)]
    private let logger: Logger

    /// A service for some caches.
    /// - Parameters:
    ///   - caches: The caches, of any value types.
    ///   - logger: Where a cache that could not be made ready is logged.
    public init<each Value>(_ caches: repeat Cache<each Value>, logger: Logger = Logger(label: "haneke.service")) {
        var shutdowns: [(name: String, shutdown: @Sendable () async throws -> Void)] = []
        for cache in repeat each caches {
            shutdowns.append((cache.name, { try await cache.shutdown() }))
        }
        self.shutdowns = shutdowns
        self.logger = logger
    }

    /// A service for some key-value caches (what the framework drivers keep their values in).
    /// - Parameters:
    ///   - caches: The caches.
    ///   - logger: Where a cache that could not be made ready is logged.
    public init(keyValueCaches caches: [KeyValueCache], logger: Logger = Logger(label: "haneke.service")) {
        self.shutdowns = caches.map { cache in (cache.name, { try await cache.shutdown() }) }
        self.logger = logger
    }

    /// Waits for the graceful shutdown (or cancellation), then makes every cache ready for the
    /// process to end, each even when another failed.
    /// - Throws: The first cache's error, after trying every cache.
    public func run() async throws {
        // Cancellation ends the wait as a graceful shutdown does: the caches are made ready either way.
        try? await gracefulShutdown()
        var firstError: (any Error)?
        for (name, shutdown) in shutdowns {
            do {
                try await shutdown()
            } catch {
                logger.error("Could not make a cache ready for shutdown", metadata: ["cache": "\(name)", "error": "\(error)"])
                firstError = firstError ?? error
            }
        }
        if let firstError { throw firstError }
    }
}
#endif
