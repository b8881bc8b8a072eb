public import Foundation
public import HanekeProtocols
public import Logging
import NIOCore

/// A store of bytes on a Redis server: the shared tier of a fleet of machines, each keeping its own
/// memory and disk tiers in front of it.
///
/// ```swift
/// let redis = try RedisStore(url: "redis://cache.internal:6379/0", keyPrefix: "myapp:")
/// let images = MemoryStore<String, Data>(costLimit: 64 << 20)
///     .chained(to: try FileStore(directory: "/var/cache/myapp").compressed())
///     .chained(to: redis)
///     .fetching(from: ImageDownloader())
/// ```
///
/// - Keys: every key is stored as ``Configuration/keyPrefix`` followed by the key's UTF-8 bytes, so
///   stores with different prefixes share a database without meeting (as long as no prefix starts
///   another: `removeAll()` of `"app:"` would also remove the keys of `"app:images:"`).
///   `removeAll()` deletes only that namespace, with `SCAN` and `UNLINK` in batches — never `FLUSHDB`.
/// - Values: `GET`, `SET` (with `PX` when the entry expires) and `UNLINK`. Each value is stored in
///   a small envelope — a 28-byte header (magic, version, when it was stored, when it expires) and
///   the entry's metadata before the value — so that ``attributes(forKey:)`` reads a prefix of it
///   (`GETRANGE`) and ``setAttributes(_:forKey:)`` replaces that prefix on the server (a Lua
///   script), never sending the value. ``addEntry(_:forKey:)`` is `SET … NX`. A value without the
///   envelope (stored by 0.3.0) reads as a plain value that never expires.
/// - Time: expiry is on the store's ``clock``: `PX` is the time left on it, and every read checks
///   the envelope's expiry against it too.
/// - Connections: a small pool (``Configuration/connectionCount``), opened on first use; each
///   connection carries any number of commands at once (pipelining). Every command has a
///   timeout. A connection that fails is reopened on demand; after a failed attempt the next one
///   waits a backoff delay (100 ms doubling to 5 s, with jitter), and meanwhile operations throw
///   `unavailable` at once. So with Redis down the store answers quickly, a chain reads it as a
///   miss (logged, and counted in ``statistics``), and when Redis is back the store reconnects by
///   itself.
/// - Credentials: when the server refuses the `AUTH` of the URL, or wants a password and the URL
///   has none (`NOAUTH`), operations throw `authentication` — while the store waits to try again
///   too — rather than `unavailable`: retrying will not help until the configuration changes. A
///   chain still reads it as a miss.
/// - Cancellation: a cancelled task stops waiting at once and gets `CancellationError` (a command
///   already sent still runs on the server; its reply is dropped).
/// - The client speaks RESP2 over SwiftNIO (`AUTH` with a password or an ACL user, `SELECT`), in
///   clear with `redis://` or over TLS with `rediss://` (the server's certificate verified by
///   default; see ``Configuration/tls``).
/// - Redis Cluster: with ``Configuration/cluster`` (``Configuration/init(clusterURLs:keyPrefix:)``)
///   the store learns the cluster's map (`CLUSTER SLOTS`) from the first node that answers, keeps
///   a pool of connections to each master, and sends each command to the master of its key's
///   slot. It follows `MOVED` (and reloads the map) and `ASK` (with `ASKING`) while slots move, and
///   after a master fails it loads a new map at once, so its keys are served again as soon as a
///   replica has taken over. ``removeAll()`` scans every master. Local layers kept coherent with a
///   cluster follow every master's notices (see ``CoherentStore``).
public final class RedisStore: Store {
    /// The type of the keys: any string.
    public typealias Key = String
    /// The type of the values.
    public typealias Value = Data

    /// The server, the namespace and the connection policies.
    public let configuration: Configuration
    /// The clock of expiry and of the time entries are stored; the system clock by default.
    public let clock: any StoreClock
    /// The name of this store's layer in ``layerStatistics``; `"redis"` by default.
    public let name: String
    let logger: Logger

    let pool: RedisConnectionPool
    /// The cluster's nodes and map, for a configuration with ``Configuration/cluster``; commands
    /// then go through it rather than `pool`.
    let cluster: RedisCluster?
    /// The tracking of keys for invalidation notices, once a ``CoherentStore`` asked for it.
    let tracking = Locked<(any KeyTracking)?>(nil)
    let counter = StatisticsCounter()
    private let prefix: ByteBuffer
    /// The store's lifetime in whole milliseconds (rounded up); `nil` for none, or a century or more.
    let timeToLiveMilliseconds: Int64?
    private let scanCount: String
    private let maximumScanRounds: Int?
    let allocator = ByteBufferAllocator()

    /// The largest value Redis accepts (its `proto-max-bulk-len`), 512 MiB: the most
    /// ``RedisStore/RedisStore/Configuration-swift.struct/maximumValueSize`` may be.
    public static let maximumValueSize = 512 << 20

    /// Creates a store; it connects on first use, so this never waits and never fails.
    /// - Parameters:
    ///   - configuration: The server, the namespace and the connection policies.
    ///   - name: The layer name reported in statistics; `"redis"` by default.
    ///   - logger: Where changes of the server's reachability and damaged entries are logged.
    ///   - clock: The clock of expiry; the system clock by default (tests pass a `TestClock`).
    public init(
        configuration: Configuration = Configuration(),
        name: String = "redis",
        logger: Logger = Logger(label: "haneke.redis"),
        clock: any StoreClock = SystemClock()
    ) {
        self.configuration = configuration
        self.name = name
        self.clock = clock
        self.logger = logger
        let endpoint = RedisEndpoint(
            host: configuration.host,
            port: configuration.port,
            username: configuration.username,
            password: configuration.password,
            database: configuration.database,
            connectTimeout: Self.timeAmount(configuration.connectTimeout),
            commandTimeout: Self.timeAmount(configuration.commandTimeout),
            maximumReplySize: RESPDecoder.replySize(forValuesUpTo: configuration.effectiveMaximumValueSize),
            tls: configuration.tls
        )
        let backoff = ReconnectBackoff(
            minimum: Self.timeAmount(configuration.minimumReconnectDelay),
            maximum: Self.timeAmount(max(configuration.minimumReconnectDelay, configuration.maximumReconnectDelay))
        )
        cluster = configuration.cluster.map { nodes in
            let first = RedisCluster.Address(host: configuration.host, port: configuration.port)
            let seeds = [first] + nodes.map { RedisCluster.Address(host: $0.host, port: $0.port) }.filter { $0 != first }
            return RedisCluster(template: endpoint, seeds: seeds, connectionCount: configuration.connectionCount, backoff: backoff, logger: logger)
        }
        pool = cluster?.pool(at: RedisCluster.Address(host: configuration.host, port: configuration.port))
            ?? RedisConnectionPool(endpoint: endpoint, size: configuration.connectionCount, backoff: backoff, logger: logger)
        prefix = ByteBuffer(string: configuration.keyPrefix)
        timeToLiveMilliseconds = configuration.timeToLive.flatMap { ttl in
            // A century or more is forever: no PX (Redis refuses expiry times that overflow).
            guard ttl < .seconds(100 * 365 * 24 * 3600) else { return nil }
            // Rounded up to whole milliseconds: a lifetime under one is not "none".
            let milliseconds = ttl.saturatingMilliseconds
            return ttl > .milliseconds(milliseconds) ? milliseconds + 1 : milliseconds
        }
        scanCount = String(max(1, configuration.scanCount))
        maximumScanRounds = configuration.maximumScanRounds.map { max(1, $0) }
    }

    /// Creates a store for the server at `url`, with the other settings at their defaults.
    /// - Parameters:
    ///   - url: `redis://[[user]:password@]host[:port][/database]`.
    ///   - keyPrefix: The namespace of the store's keys; `"haneke:"` by default.
    ///   - name: The layer name reported in statistics; `"redis"` by default.
    /// - Throws: `StoreError` with code `invalidConfiguration` when the URL is not valid.
    public convenience init(url: String, keyPrefix: String = "haneke:", name: String = "redis") throws {
        try self.init(configuration: Configuration(url: url, keyPrefix: keyPrefix), name: name)
    }

    deinit {
        tracking.withLock { $0 }?.stop()
        pool.shutDown()
        cluster?.shutDown()
    }

    // MARK: - Store

    /// Returns the value for `key` (`GET`), or `nil` when Redis has none or its entry has expired
    /// on the store's ``clock``.
    /// - Parameter key: The key to look up.
    /// - Returns: The stored bytes, or `nil`.
    /// - Throws: `StoreError` with code `unavailable` when Redis cannot be reached, `authentication`
    ///   when it refuses the configured credentials (or wants some and none are configured),
    ///   `timeout` when it does not answer in time, `io` when it answers with an error or a
    ///   malformed reply, `corrupted` when the stored bytes start as an envelope but are not one.
    ///   The error's `cause` says what Redis answered.
    /// - Performs network I/O: one round trip (`GET`), pipelined with other requests.
    public func value(forKey key: String) async throws -> Data? {
        try await readEntry(forKey: key)?.value
    }

    /// Stores `value` for `key` (`SET`, with `PX` when a time to live is configured), in its
    /// envelope: stored now, expiring after the time to live, without metadata.
    /// - Parameters:
    ///   - value: The bytes to store.
    ///   - key: The key to store them under.
    /// - Throws: `StoreError` with code `valueTooLarge` over 512 MiB, `invalidConfiguration` when the
    ///   configured time to live is not positive, `unavailable`, `authentication`, `timeout` or
    ///   `io` as for reads.
    /// - Performs network I/O: one round trip (`SET`).
    public func setValue(_ value: Data, forKey key: String) async throws {
        try await writeEntry(value, attributes: nil, forKey: key)
    }

    /// Removes the value for `key` (`UNLINK`); removing a missing key is a no-op.
    /// - Parameter key: The key to remove.
    /// - Throws: `StoreError` with code `unavailable`, `authentication`, `timeout` or `io` as for
    ///   reads.
    /// - Performs network I/O: one round trip (`UNLINK`).
    public func removeValue(forKey key: String) async throws {
        try Task.checkCancellation()
        let reply = try await send(.command("UNLINK", [redisKey(key)]), "remove", key: key)
        guard case .integer = reply else { throw unexpected(reply, "remove", key: key) }
        counter.recordRemoval()
    }

    /// Removes every key of the namespace — the keys that start with ``Configuration/keyPrefix`` —
    /// with `SCAN … MATCH` and `UNLINK` in batches of ``Configuration/scanCount``. Other keys in
    /// the database stay; the store stays usable (a key written meanwhile may or may not be removed).
    /// - Throws: `StoreError` with code `unavailable`, `authentication`, `timeout` or `io` as for
    ///   reads; `io` when the scan has not ended after ``Configuration/maximumScanRounds`` rounds
    ///   (the keys removed by then stay removed).
    /// - Performs network I/O: a `SCAN` round trip per batch, and an `UNLINK` per batch that found keys.
    public func removeAll() async throws {
        try Task.checkCancellation()
        var pattern = allocator.buffer(capacity: prefix.readableBytes * 2 + 1)
        for byte in prefix.readableBytesView {
            if byte == UInt8(ascii: "*") || byte == UInt8(ascii: "?") || byte == UInt8(ascii: "[")
                || byte == UInt8(ascii: "]") || byte == UInt8(ascii: "\\") {
                pattern.writeInteger(UInt8(ascii: "\\"))
            }
            pattern.writeInteger(byte)
        }
        pattern.writeStaticString("*")
        guard let cluster else {
            try await removeAll(matching: pattern, scan: { try await self.send($0, "remove all keys", key: nil, reads: true) }) { keys in
                let unlinked = try await self.send(.command("UNLINK", keys), "remove all keys", key: nil)
                guard case .integer = unlinked else { throw self.unexpected(unlinked, "remove all keys", key: nil) }
            }
            return
        }
        // A cluster: each master's keys are scanned on that master, and removed a slot at a time
        // (a command's keys must share a slot), the slots' removals at once.
        let masters: [RedisCluster.Address]
        do {
            masters = try await cluster.masters()
        } catch let cancellation as CancellationError {
            throw cancellation
        } catch {
            counter.recordError()
            throw storeError(error, "remove all keys", key: nil)
        }
        for master in masters {
            let node = cluster.pool(at: master)
            try await removeAll(matching: pattern, scan: { command in
                try await self.checked("remove all keys", key: nil) { try await node.send(command) }
            }) { keys in
                let bySlot = Dictionary(grouping: keys, by: ClusterSlot.of)
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for (slot, keys) in bySlot {
                        group.addTask {
                            let unlinked = try await self.send(.command("UNLINK", keys), "remove all keys", key: nil, slot: slot)
                            guard case .integer = unlinked else { throw self.unexpected(unlinked, "remove all keys", key: nil) }
                        }
                    }
                    try await group.waitForAll()
                }
            }
        }
    }

    /// Scans with `scan` for the keys that match `pattern`, and removes each batch found with
    /// `unlink`, until the scan ends or reaches ``Configuration/maximumScanRounds``.
    private func removeAll(
        matching pattern: ByteBuffer, scan: (RESPValue) async throws -> RESPValue, unlink: ([ByteBuffer]) async throws -> Void
    ) async throws {
        var cursor = "0"
        var rounds = 0
        repeat {
            try Task.checkCancellation()
            if let maximumScanRounds, rounds >= maximumScanRounds {
                counter.recordError()
                throw StoreError(.io, "\(subject("remove all keys", key: nil)): the scan for keys with prefix \"\(Logger.describe(configuration.keyPrefix))\" has not ended after \(rounds) SCAN rounds, the limit (the cursor is still \(Logger.describe(cursor))); the keys found so far were removed. For a database this large, raise maximumScanRounds")
            }
            rounds += 1
            let command = RESPValue.command("SCAN", [
                ByteBuffer(string: cursor), ByteBuffer(string: "MATCH"), pattern,
                ByteBuffer(string: "COUNT"), ByteBuffer(string: scanCount),
            ])
            let reply = try await scan(command)
            guard case .array(let parts?) = reply, parts.count == 2, let next = parts[0].text,
                  case .array(let found?) = parts[1] else {
                throw unexpected(reply, "remove all keys", key: nil)
            }
            let keys = found.compactMap { element -> ByteBuffer? in
                if case .bulkString(let key?) = element { key } else { nil }
            }
            if !keys.isEmpty { try await unlink(keys) }
            cursor = next
        } while cursor != "0"
    }

    /// One layer, named ``name``. Reads and writes that failed (Redis down, a timeout) are errors.
    public var layerStatistics: [LayerStatistics] {
        [LayerStatistics(name: name, statistics: counter.snapshot)]
    }

    // MARK: - Beyond Store

    /// This store's counters.
    public var statistics: StoreStatistics { counter.snapshot }

    /// Checks that Redis answers (`PING`), connecting if needed: for health checks, or to connect
    /// before the first request.
    /// - Throws: `StoreError` with code `unavailable`, `authentication`, `timeout` or `io`.
    /// - Performs network I/O: one round trip, after opening a connection if none is open.
    public func ping() async throws {
        let reply = try await send(.command("PING"), "ping", key: nil, counted: false, reads: true)
        guard case .simpleString("PONG") = reply else { throw unexpected(reply, "ping", key: nil, counted: false) }
    }

    /// Closes the store's connections. Operations afterwards throw `unavailable`. Called when the
    /// store is released.
    public func shutdown() {
        tracking.withLock { $0 }?.stop()
        pool.shutDown()
        cluster?.shutDown()
    }

    /// The tracking of this store's keys for invalidation notices, started at the first call
    /// (by the first ``CoherentStore`` over this store).
    func startTracking(pingInterval: Duration) -> any KeyTracking {
        tracking.withLock { tracking in
            if let tracking { return tracking }
            let started: any KeyTracking = if let cluster {
                ClusterTracking(cluster: cluster, prefix: configuration.keyPrefix, pingInterval: pingInterval, logger: logger)
            } else {
                Tracking(pool: pool, prefix: configuration.keyPrefix, pingInterval: pingInterval, logger: logger)
            }
            tracking = started
            return started
        }
    }

    /// The Redis key under which the value for `key` is stored: the prefix, then the key.
    /// - Parameter key: A key of this store.
    /// - Returns: The key as Redis sees it, for `redis-cli`.
    public func redisKey(for key: String) -> String {
        configuration.keyPrefix + key
    }

    // MARK: - Internals

    /// Sends any command, for tests: the reply, or a `StoreError`.
    func command(_ name: String, _ arguments: String...) async throws -> RESPValue {
        try await send(.command(name, arguments.map { ByteBuffer(string: $0) }), name, key: nil, counted: false)
    }

    /// Sends any command with binary arguments, for tests: the reply, or a `StoreError`.
    func command(_ name: String, _ arguments: [ByteBuffer]) async throws -> RESPValue {
        try await send(.command(name, arguments), name, key: nil, counted: false)
    }

    func redisKey(_ key: String) -> ByteBuffer {
        var buffer = allocator.buffer(capacity: prefix.readableBytes + key.utf8.count)
        buffer.writeImmutableBuffer(prefix)
        buffer.writeString(key)
        return buffer
    }

    /// Sends `command`; an error reply or a failure becomes a `StoreError` naming the key.
    /// While a ``CoherentStore`` keeps layers coherent with this store, a command that may modify
    /// a key (any but those marked `reads`) goes through the tracking connection, whose own
    /// modifications the server does not notice to this machine; should that connection fail, a
    /// command that may be sent again goes through the pool.
    /// With a cluster, the command goes to the master of `slot`, or of `key`'s slot (through that
    /// master's tracking connection, likewise).
    func send(
        _ command: RESPValue, _ operation: String, key: String?, slot: Int? = nil, counted: Bool = true, retrying: Bool = true, reads: Bool = false
    ) async throws -> RESPValue {
        try await checked(operation, key: key, counted: counted) {
            let tracking: (any KeyTracking)? = reads ? nil : tracking.withLock { $0 }
            if let cluster {
                var writer: (@Sendable (RedisCluster.Address) -> RedisConnection?)?
                if let tracking { writer = { address in tracking.writer(at: address) } }
                let slot = slot ?? key.map { ClusterSlot.of(configuration.keyPrefix + $0) }
                return try await cluster.send(command, slot: slot, retrying: retrying, writer: writer)
            }
            return try await pool.send(command, retrying: retrying, via: tracking?.writer(at: nil))
        }
    }

    /// What `deliver` returns; an error reply or a failure becomes a `StoreError` naming the key
    /// (counted as an error when `counted`).
    func checked(_ operation: String, key: String?, counted: Bool = true, _ deliver: () async throws -> RESPValue) async throws -> RESPValue {
        let reply: RESPValue
        do {
            reply = try await deliver()
        } catch let cancellation as CancellationError {
            throw cancellation
        } catch {
            if counted { counter.recordError() }
            throw storeError(error, operation, key: key)
        }
        if case .error(let message) = reply {
            if counted { counter.recordError() }
            throw storeError(RedisClientError.errorReply(message), operation, key: key)
        }
        return reply
    }

    func subject(_ operation: String, key: String?) -> String {
        let server = cluster == nil ? "Redis at \(pool.endpoint)" : "the Redis Cluster of \(pool.endpoint)"
        return if let key {
            "Could not \(operation) key \(Logger.describe(key)) on \(server)"
        } else {
            "Could not \(operation) on \(server)"
        }
    }

    /// The error users see: what failed on which key, with the client's error as the cause.
    private func storeError(_ error: any Error, _ operation: String, key: String?) -> StoreError {
        StoreError((error as? RedisClientError)?.code ?? .unavailable, subject(operation, key: key), cause: error)
    }

    func unexpected(_ reply: RESPValue, _ operation: String, key: String?, counted: Bool = true) -> StoreError {
        if counted { counter.recordError() }
        return StoreError(.io, "\(subject(operation, key: key)): unexpected reply \(reply.summary)")
    }

    private static func timeAmount(_ duration: Duration) -> TimeAmount {
        // About 292 years is as long as a TimeAmount gets; longer means "no limit" (half of it, so
        // that a deadline of now plus it does not overflow).
        .nanoseconds(max(1, min(duration.saturatingNanoseconds, Int64.max / 2)))
    }
}
