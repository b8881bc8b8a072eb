#if Hummingbird
public import HanekeServer
public import Hummingbird
import HanekeProtocols

/// Hummingbird's persist framework on a Haneke cache: values survive a restart (the disk layer),
/// memory is bounded, several worker processes may share the folder, and each key has a lifetime
/// to the millisecond.
///
/// It keeps Hummingbird's rules: ``create(key:value:expires:)`` throws `PersistError.duplicate`
/// for a key that has an unexpired value, ``set(key:value:expires:)`` without a lifetime keeps the
/// old value's expiry, and ``get(key:as:)`` throws `PersistError.invalidConversion` for a value
/// stored as another type. For sessions, which cannot be made again, give the cache
/// `.init(eviction: .never)`: the disk then drops values only when they expire or are removed.
///
/// ```swift
/// import Hummingbird
/// import HanekeHummingbird
///
/// let persist = HanekePersistDriver(name: "sessions", configuration: .init(eviction: .never))
/// let router = Router()
/// router.get("visits") { _, _ -> String in
///     let visits = (try await persist.get(key: "visits", as: Int.self) ?? 0) + 1
///     try await persist.set(key: "visits", value: visits, expires: .seconds(3_600))
///     return "\(visits)"
/// }
/// var app = Application(router: router)
/// app.addServices(persist)   // its journals are flushed on a graceful shutdown
/// ```
public struct HanekePersistDriver: PersistDriver {
    /// The cache that keeps the values.
    public let cache: KeyValueCache

    /// Creates a driver over a cache.
    /// - Parameter cache: The cache that keeps the values.
    public init(cache: KeyValueCache) {
        self.cache = cache
    }

    /// Creates a driver over a new cache with the default stack (memory, then disk).
    /// - Parameters:
    ///   - name: The cache's name, also its folder's name.
    ///   - directory: The folder of its files; `$XDG_CACHE_HOME/haneke/<name>` by default.
    ///   - configuration: The layers' sizes, and whether the disk evicts.
    public init(name: String, directory: String? = nil, configuration: KeyValueCache.Configuration = .init()) {
        self.init(cache: KeyValueCache(name: name, directory: directory, configuration: configuration))
    }

    /// Stores `value` for `key` unless the key has an unexpired value.
    /// - Parameters:
    ///   - key: The key.
    ///   - value: The value.
    ///   - expires: How long it lives; `nil` for until removed (or evicted).
    /// - Throws: `PersistError.duplicate` when the key has a value; `StoreError` when a layer failed.
    public func create<Object: Codable & Sendable>(key: String, value: Object, expires: Duration?) async throws {
        guard try await cache.create(key, value: value, timeToLive: expires) else { throw PersistError.duplicate }
    }

    /// Stores `value` for `key`, replacing any other; without `expires` it keeps the old value's expiry.
    /// - Parameters:
    ///   - key: The key.
    ///   - value: The value.
    ///   - expires: How long it lives; `nil` keeps the old value's expiry, if any.
    /// - Throws: `StoreError` when a layer failed.
    public func set<Object: Codable & Sendable>(key: String, value: Object, expires: Duration?) async throws {
        try await cache.set(key, to: value, timeToLive: expires, overwrite: .keep)
    }

    /// The value for `key`, or `nil` when there is none or it has expired.
    /// - Parameters:
    ///   - key: The key.
    ///   - type: The type it was stored as.
    /// - Returns: The value, or `nil`.
    /// - Throws: `PersistError.invalidConversion` for a value of another type; `StoreError` when a layer failed.
    public func get<Object: Codable & Sendable>(key: String, as type: Object.Type) async throws -> Object? {
        try await getWithTTL(key: key, as: type)?.object
    }

    /// The value for `key` with the time it has left to live, or `nil`.
    /// - Parameters:
    ///   - key: The key.
    ///   - type: The type it was stored as.
    /// - Returns: The value and its time left (`nil` for no expiry), or `nil`.
    /// - Throws: `PersistError.invalidConversion` for a value of another type; `StoreError` when a layer failed.
    public func getWithTTL<Object: Codable & Sendable>(key: String, as type: Object.Type) async throws -> (object: Object, ttl: Duration?)? {
        do {
            return try await cache.getWithTimeToLive(key, as: type).map { ($0.value, $0.timeToLive) }
        } catch let error as StoreError where error.code == .decoding {
            throw PersistError.invalidConversion
        }
    }

    /// Removes the value for `key`.
    /// - Parameter key: The key.
    /// - Throws: `StoreError` when a layer failed.
    public func remove(key: String) async throws {
        try await cache.remove(key)
    }

    /// Waits for the work under way and writes the journals (the service's graceful shutdown).
    /// - Throws: `StoreError` when a journal cannot be written.
    public func shutdown() async throws {
        try await cache.shutdown()
    }
}
#endif
