#if Vapor
import Foundation
import Haneke
public import HanekeServer
public import Vapor
import HanekeProtocols

/// Vapor's `Cache` on a Haneke cache: memory bounded in bytes, then the disk, so that values
/// survive a restart and several worker processes may share the folder.
///
/// It keeps Vapor's rules: `set` replaces a value and its lifetime (one set without a lifetime
/// lives until removed or evicted), and `set(_:to: nil)` removes. Beyond them it has lifetimes to
/// the millisecond (``set(_:to:timeToLive:)``, where `CacheExpirationTime` has whole seconds), an
/// atomic ``create(_:value:timeToLive:)``, and the time a value has left
/// (``getWithTimeToLive(_:as:)``).
///
/// ```swift
/// import Vapor
/// import HanekeVapor
///
/// func configure(_ app: Application) throws {
///     app.caches.use(.haneke(name: "app"))
///     app.get("visits") { request async throws -> String in
///         let visits = (try await request.cache.get("visits", as: Int.self) ?? 0) + 1
///         try await request.cache.set("visits", to: visits, expiresIn: .minutes(60))
///         return "\(visits)"
///     }
/// }
/// ```
public struct HanekeVaporCache: Vapor.Cache, Sendable {
    /// The cache that keeps the values.
    public let cache: KeyValueCache
    /// The event loop the futures complete on.
    public let eventLoop: any EventLoop

    /// Creates a view of `cache` whose futures complete on `eventLoop`.
    /// - Parameters:
    ///   - cache: The cache that keeps the values.
    ///   - eventLoop: The event loop of the futures.
    public init(cache: KeyValueCache, on eventLoop: any EventLoop) {
        self.cache = cache
        self.eventLoop = eventLoop
    }

    /// The value for `key` decoded as `type`, or `nil` when there is none or it has expired.
    /// - Parameters:
    ///   - key: The key.
    ///   - type: The type to decode.
    /// - Returns: A future of the value; it fails with a `StoreError` (`decoding` for a value of another type).
    public func get<T: Decodable & Sendable>(_ key: String, as type: T.Type) -> EventLoopFuture<T?> {
        let cache = cache
        return eventLoop.makeFutureWithTask { try await cache.cache.entry(forKey: key)?.value }
            .flatMapThrowing { data in try data.map { try KeyValueCache.decode(T.self, from: $0, key: key) } }
    }

    /// Stores `value` for `key` with no lifetime, replacing any other; `nil` removes the key.
    /// - Parameters:
    ///   - key: The key.
    ///   - value: The value, or `nil` to remove.
    /// - Returns: A future that fails with a `StoreError`.
    public func set<T: Encodable>(_ key: String, to value: T?) -> EventLoopFuture<Void> {
        set(key, to: value, expiresIn: nil)
    }

    /// Stores `value` for `key`, replacing any other value and lifetime; `nil` removes the key.
    /// - Parameters:
    ///   - key: The key.
    ///   - value: The value, or `nil` to remove.
    ///   - expirationTime: How long it lives; `nil` for until removed or evicted.
    /// - Returns: A future that fails with a `StoreError`.
    public func set<T: Encodable>(_ key: String, to value: T?, expiresIn expirationTime: CacheExpirationTime?) -> EventLoopFuture<Void> {
        write(key, value, timeToLive: expirationTime.map { .seconds($0.seconds) })
    }

    /// This cache, its futures completing on the request's event loop.
    /// - Parameter request: The request.
    /// - Returns: The view for the request.
    public func `for`(_ request: Request) -> HanekeVaporCache {
        HanekeVaporCache(cache: cache, on: request.eventLoop)
    }

    // MARK: - Beyond Vapor's protocol

    /// Stores `value` for `key` with a lifetime to the millisecond, replacing any other.
    /// - Parameters:
    ///   - key: The key.
    ///   - value: The value.
    ///   - timeToLive: How long it lives; `nil` for until removed or evicted.
    /// - Throws: `StoreError`.
    public func set<T: Encodable & Sendable>(_ key: String, to value: T, timeToLive: Duration?) async throws {
        try await cache.set(key, to: value, timeToLive: timeToLive)
    }

    /// Stores `value` for `key` only if the key has no unexpired value, atomically.
    /// - Parameters:
    ///   - key: The key.
    ///   - value: The value.
    ///   - timeToLive: How long it lives; `nil` for until removed or evicted.
    /// - Returns: `false` when the key had a value (it is unchanged).
    /// - Throws: `StoreError`.
    @discardableResult
    public func create<T: Encodable & Sendable>(_ key: String, value: T, timeToLive: Duration? = nil) async throws -> Bool {
        try await cache.create(key, value: value, timeToLive: timeToLive)
    }

    /// The value for `key` with the time it has left to live (`nil` for no expiry), or `nil`.
    /// - Parameters:
    ///   - key: The key.
    ///   - type: The type to decode.
    /// - Returns: The value and its time left, or `nil`.
    /// - Throws: `StoreError` (`decoding` for a value of another type).
    public func getWithTimeToLive<T: Decodable & Sendable>(_ key: String, as type: T.Type) async throws -> (value: T, timeToLive: Duration?)? {
        try await cache.getWithTimeToLive(key, as: type)
    }

    /// Encodes on the caller's thread (the value need not be `Sendable`), then stores the bytes.
    private func write<T: Encodable>(_ key: String, _ value: T?, timeToLive: Duration?) -> EventLoopFuture<Void> {
        let cache = cache.cache
        guard let value else {
            return eventLoop.makeFutureWithTask { try await cache.remove(key: key) }
        }
        let data: Data
        do { data = try KeyValueCache.encode(value, key: key) } catch { return eventLoop.makeFailedFuture(error) }
        return eventLoop.makeFutureWithTask { try await cache.set(data, forKey: key, timeToLive: timeToLive) }
    }
}

extension Application.Caches.Provider {
    /// A Haneke cache as the application's `app.cache` and `request.cache`: made once here, shared
    /// by every request, and made ready for the process to end when the application shuts down.
    /// - Parameter cache: The cache.
    /// - Returns: The provider, for `app.caches.use(_:)`.
    public static func haneke(_ cache: KeyValueCache) -> Self {
        .init { application in
            application.lifecycle.use(ShutdownHandler(cache: cache))
            application.caches.use { application in HanekeVaporCache(cache: cache, on: application.eventLoopGroup.any()) }
        }
    }

    /// A new Haneke cache with the default stack (memory, then disk) as the application's cache.
    /// - Parameters:
    ///   - name: The cache's name, also its folder's name.
    ///   - directory: The folder of its files; `$XDG_CACHE_HOME/haneke/<name>` by default.
    ///   - configuration: The layers' sizes, and whether the disk evicts (`.never` for sessions).
    /// - Returns: The provider, for `app.caches.use(_:)`.
    public static func haneke(name: String, directory: String? = nil, configuration: KeyValueCache.Configuration = .init()) -> Self {
        haneke(KeyValueCache(name: name, directory: directory, configuration: configuration))
    }
}

/// Writes the cache's journals when the application shuts down.
private struct ShutdownHandler: LifecycleHandler {
    let cache: KeyValueCache

    func shutdownAsync(_ application: Application) async {
        do {
            try await cache.shutdown()
        } catch {
            application.logger.warning("Could not make cache '\(cache.name)' ready for shutdown: \(error)")
        }
    }
}
#endif
