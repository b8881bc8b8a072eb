public import Foundation
public import Haneke
public import HanekeProtocols
public import Logging

/// A cache of `Codable` values of any type, by string key, each with a lifetime of its own to the
/// millisecond: what a server keeps between requests (sessions, rate-limit counters, computed
/// pages), and what the Hummingbird and Vapor drivers keep their values in.
///
/// Values are stored as JSON in a `Cache<Data>`: a memory layer bounded in bytes, then the disk
/// (small values as rows of a database, larger ones as LZ4-compressed files) in a folder that
/// several worker processes may share, so that values survive a restart. A custom stack (a Redis
/// tier under the disk, a test double) takes the place of the default one with
/// ``init(name:stack:clock:)``.
///
/// Processes that share the folder see each other's writes and removals at once: once a `set`,
/// `remove` or `removeAll` has returned in one process, a `get` in any other returns the new value
/// or `nil`, never what its memory layer held before (a logout in one worker ends the session in
/// all of them). Each change counts in a file of the folder that every process maps, and a memory
/// hit checks its key's counter there: one load of shared memory. A process sees the others'
/// changes once its disk layer has opened (the first operation waits for it); a custom stack has
/// no such check.
///
/// ```swift
/// import Foundation
/// import HanekeServer
///
/// struct Session: Codable, Sendable { var user: String }
///
/// let sessions = KeyValueCache(name: "sessions", configuration: .init(eviction: .never))
/// try await sessions.set("s-1", to: Session(user: "ada"), timeToLive: .seconds(1_800))
/// let session = try await sessions.get("s-1", as: Session.self)
/// ```
public final class KeyValueCache: Sendable {
    /// Whether the disk layer evicts values over its capacity.
    public enum Eviction: Sendable, Hashable {
        /// The disk keeps at most ``Configuration/diskCapacity`` bytes, the least recently used
        /// going first: for values that can be made again.
        case bounded
        /// The disk keeps every value until it expires or is removed, however many: for values
        /// that cannot be made again (sessions). The memory layer stays bounded; what leaves it is
        /// read from disk.
        case never
    }

    /// The layers' sizes.
    public struct Configuration: Sendable {
        /// The most memory the cache takes, in bytes: the entries of its memory layer (each value
        /// and what is kept beside it), and an eighth of it (at most 32 MiB) for the page cache of
        /// the database of small values on disk. `64 MiB` by default.
        public var memoryCostLimit: Int
        /// The most values kept in memory; `100,000` by default.
        public var memoryCountLimit: Int
        /// The most bytes on disk with ``Eviction/bounded``; `1 GiB` by default.
        public var diskCapacity: Int
        /// Whether the disk evicts; `.bounded` by default.
        public var eviction: Eviction
        /// Values of up to this many bytes on disk are rows of a database, larger ones files of
        /// their own; `16 KiB` by default (where a file starts to read faster).
        public var smallValueThreshold: Int

        /// Creates a configuration.
        /// - Parameters:
        ///   - memoryCostLimit: The most bytes in memory; `64 MiB` by default.
        ///   - memoryCountLimit: The most values in memory; `100,000` by default.
        ///   - diskCapacity: The most bytes on disk with `.bounded`; `1 GiB` by default.
        ///   - eviction: Whether the disk evicts; `.bounded` by default.
        ///   - smallValueThreshold: The largest value kept as a database row; `16 KiB` by default.
        public init(
            memoryCostLimit: Int = 64 << 20,
            memoryCountLimit: Int = 100_000,
            diskCapacity: Int = 1 << 30,
            eviction: Eviction = .bounded,
            smallValueThreshold: Int = 16 << 10
        ) {
            self.memoryCostLimit = memoryCostLimit
            self.memoryCountLimit = memoryCountLimit
            self.diskCapacity = diskCapacity
            self.eviction = eviction
            self.smallValueThreshold = smallValueThreshold
        }

        /// What an entry of the memory layer costs beyond its value, in bytes (measured with
        /// `scripts/bench-server-memory`).
        static let entryOverhead = 256

        /// The database's page cache within a memory limit: an eighth, between 64 KiB and 32 MiB.
        static func pageCacheSize(within limit: Int) -> Int {
            min(32 << 20, max(64 << 10, limit / 8))
        }

        /// The disk capacity that never evicts: more than any disk holds, with room left for the
        /// stores' arithmetic on it.
        static let unbounded = Int.max >> 4
    }

    /// The cache of the values' JSON, for statistics, sizes and flushing.
    public let cache: Cache<Data>

    /// Creates a cache with the default stack: memory, then the disk in `directory`.
    /// - Parameters:
    ///   - name: The cache's name, also its folder's name.
    ///   - directory: The folder of its files; `$XDG_CACHE_HOME/haneke/<name>` by default. Worker
    ///     processes of one server may share it: each sees the others' changes at once.
    ///   - configuration: The layers' sizes.
    ///   - clock: The clock that decides lifetimes; the system clock by default.
    ///   - logger: Where disk failures are logged.
    public init(
        name: String,
        directory: String? = nil,
        configuration: Configuration = Configuration(),
        clock: any StoreClock = SystemClock(),
        logger: Logger = Logger(label: "haneke.keyvalue")
    ) {
        var format = Format<Data>(name: Cache<Data>.originalFormatName)
        let pageCache = Configuration.pageCacheSize(within: configuration.memoryCostLimit)
        format.memoryCostLimit = configuration.memoryCostLimit - pageCache
        format.databasePageCacheSize = pageCache
        // An entry costs its JSON and what the memory layer keeps beside it (its key, its slot, its
        // attributes), so that the limit bounds the memory of many small values too.
        format.memoryCost = { $0.count + Configuration.entryOverhead }
        format.memoryCountLimit = configuration.memoryCountLimit
        format.diskCapacity = configuration.eviction == .never ? Configuration.unbounded : configuration.diskCapacity
        format.smallValueThreshold = configuration.smallValueThreshold
        cache = Cache(name: name, directory: directory, originalFormat: format, clock: clock, logger: logger)
    }

    /// Creates a cache over layers you built (a chain with a Redis tier, a test double): they must
    /// keep expiries and add atomically, as every store of this package does.
    /// - Parameters:
    ///   - name: The cache's name.
    ///   - stack: The layers, keeping each value's JSON.
    ///   - clock: The clock that decides lifetimes; give the layers the same one.
    public init(name: String, stack: some Store<String, Data>, clock: any StoreClock = SystemClock()) {
        cache = Cache(name: name, stack: stack, clock: clock)
    }

    /// Wraps a cache of JSON you made.
    /// - Parameter cache: The cache whose original format keeps the values.
    public init(cache: Cache<Data>) {
        self.cache = cache
    }

    /// The cache's name.
    public var name: String { cache.name }

    // MARK: - Reading

    /// The value for `key` decoded as `type`, or `nil` when there is none or it has expired.
    /// - Parameters:
    ///   - key: The key.
    ///   - type: The type to decode.
    /// - Returns: The value, or `nil`.
    /// - Throws: `StoreError` with code `decoding` when the stored value is not a `type`; a layer's error.
    public func get<Object: Decodable>(_ key: String, as type: Object.Type) async throws -> Object? {
        try await getWithTimeToLive(key, as: type)?.value
    }

    /// The value for `key` decoded as `type` with the time it has left to live (`nil` for none), or
    /// `nil` when there is none or it has expired.
    /// - Parameters:
    ///   - key: The key.
    ///   - type: The type to decode.
    /// - Returns: The value and its time left, or `nil`.
    /// - Throws: `StoreError` with code `decoding` when the stored value is not a `type`; a layer's error.
    public func getWithTimeToLive<Object: Decodable>(
        _ key: String, as type: Object.Type
    ) async throws -> (value: Object, timeToLive: Duration?)? {
        guard let entry = try await cache.entry(forKey: key) else { return nil }
        return (try Self.decode(type, from: entry.value, key: key), timeLeft(until: entry.attributes.expiresAt))
    }

    // MARK: - Writing

    /// What a write without a lifetime does to the lifetime of the value it replaces.
    public enum LifetimeOnOverwrite: Sendable, Hashable {
        /// The new value lives until evicted (Vapor's rule).
        case drop
        /// The new value keeps the old one's expiry (Hummingbird's rule).
        case keep
    }

    /// Stores `value` for `key`, replacing any other.
    /// - Parameters:
    ///   - key: The key.
    ///   - value: The value.
    ///   - timeToLive: How long it lives; `nil` for no lifetime of its own (see `overwrite`).
    ///   - overwrite: With no `timeToLive`, whether the value keeps the old one's expiry; `.drop`
    ///     (it lives until evicted) by default.
    /// - Throws: `StoreError` with code `encoding` when `value` does not encode; a layer's error.
    public func set<Object: Encodable>(
        _ key: String, to value: Object, timeToLive: Duration? = nil, overwrite: LifetimeOnOverwrite = .drop
    ) async throws {
        let data = try Self.encode(value, key: key)
        var lifetime = timeToLive
        if lifetime == nil, overwrite == .keep, let expiry = try await cache.entry(forKey: key)?.attributes.expiresAt {
            // What was left of the old lifetime; an expiry passed meanwhile leaves the least there is.
            lifetime = timeLeft(until: expiry) ?? .milliseconds(1)
        }
        try await cache.set(data, forKey: key, timeToLive: lifetime)
    }

    /// Stores `value` for `key` only if there is no unexpired value for it, atomically (between
    /// worker processes sharing the folder, and between machines sharing a Redis tier).
    /// - Parameters:
    ///   - key: The key.
    ///   - value: The value.
    ///   - timeToLive: How long it lives; `nil` for until evicted.
    /// - Returns: `true` when it was stored, `false` when the key already had a value (unchanged).
    /// - Throws: `StoreError` with code `encoding` when `value` does not encode; a layer's error.
    @discardableResult
    public func create<Object: Encodable>(_ key: String, value: Object, timeToLive: Duration? = nil) async throws -> Bool {
        try await cache.add(try Self.encode(value, key: key), forKey: key, timeToLive: timeToLive).inserted
    }

    /// Removes the value for `key`; removing a missing key does nothing.
    /// - Parameter key: The key.
    /// - Throws: A layer's error.
    public func remove(_ key: String) async throws {
        try await cache.remove(key: key)
    }

    /// Removes every value.
    /// - Throws: A layer's error.
    public func removeAll() async throws {
        try await cache.removeAll()
    }

    /// Makes the cache ready for the process to end: see `Cache.shutdown()`.
    /// - Throws: `StoreError` with code `io` when a journal cannot be written.
    public func shutdown() async throws {
        try await cache.shutdown()
    }

    // MARK: - JSON

    private func timeLeft(until expiry: Date?) -> Duration? {
        guard let expiry else { return nil }
        let left = expiry.timeIntervalSince(cache.clock.now())
        return left > 0 ? .milliseconds(Int64((left * 1_000).rounded())) : nil
    }

    /// `value` as JSON, or an `encoding` error naming `key`.
    package static func encode(_ value: some Encodable, key: String) throws -> Data {
        do {
            return try JSONEncoder().encode(value)
        } catch {
            throw StoreError(.encoding, "Could not encode a \(type(of: value)) as JSON for key \(Logger.describe(key))", cause: error)
        }
    }

    /// A `type` from JSON, or a `decoding` error naming `key`.
    package static func decode<Object: Decodable>(_ type: Object.Type, from data: Data, key: String) throws -> Object {
        do {
            return try JSONDecoder().decode(type, from: data)
        } catch {
            throw StoreError(
                .decoding, "The value stored for key \(Logger.describe(key)) is not a \(type) (\(data.count) bytes of JSON)", cause: error
            )
        }
    }
}
