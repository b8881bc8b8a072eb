import HanekeProtocols
import Logging
import NIOCore
import Synchronization

/// The connection that receives Redis's invalidation notices (server-assisted client-side
/// caching, over RESP2): it learns its client id (`CLIENT ID`) and subscribes to
/// `__redis__:invalidate`; a connection that enables tracking with `REDIRECT` to that id
/// (`CLIENT TRACKING ON REDIRECT <id> BCAST PREFIX <prefix> NOLOOP`) has the server send it a
/// notice for every key with the prefix that anyone else modifies, and that expires or is evicted.
///
/// The listener keeps the connection open: it pings it every ``pingInterval`` (a connection that
/// stops answering is closed, as a command past its timeout closes any connection), and after
/// the connection closes or cannot open it tries again after the pool's backoff. What happens
/// goes to the handler in order: ``Event/subscribed(clientID:)`` each time notices start
/// arriving, the notices, and ``Event/lost`` each time they may have stopped — notices sent
/// meanwhile are gone, so a user of the notices must treat everything it holds as possibly stale.
final class InvalidationListener: Sendable {
    /// What the handler is told.
    enum Event: Sendable, Hashable {
        /// Subscribed: notices redirected to `clientID` arrive from now on.
        case subscribed(clientID: Int64)
        /// These keys were modified, deleted, expired or evicted.
        case invalidated([ByteBuffer])
        /// Every key may have changed: the database was flushed (a notice without keys).
        case flushed
        /// The connection closed or could not open: notices may have been missed since the
        /// last ``subscribed(clientID:)``.
        case lost
    }

    /// The channel Redis sends invalidation notices to in RESP2.
    static let channel = "__redis__:invalidate"

    /// How often the connection is pinged.
    let pingInterval: Duration
    private let pool: RedisConnectionPool
    private let logger: Logger
    private let handler: @Sendable (Event) -> Void
    private let task = Mutex<Task<Void, Never>?>(nil)

    /// Creates a listener; it connects once ``start()`` is called.
    /// - Parameters:
    ///   - pool: The pool whose server, TLS settings and backoff the connection uses.
    ///   - pingInterval: How often the connection is pinged.
    ///   - logger: Where lost connections are reported.
    ///   - handler: Called with each event, in order; it must not block (notices come on an
    ///     event loop's thread).
    init(pool: RedisConnectionPool, pingInterval: Duration, logger: Logger, handler: @escaping @Sendable (Event) -> Void) {
        self.pool = pool
        self.pingInterval = pingInterval
        self.logger = logger
        self.handler = handler
    }

    deinit {
        task.withLock { $0?.cancel() }
    }

    /// Starts connecting, and keeps the connection open until ``stop()``. Calls after the first do
    /// nothing.
    func start() {
        task.withLock { task in
            guard task == nil else { return }
            task = Task { [pool, pingInterval, logger, handler] in
                await Self.run(pool: pool, pingInterval: pingInterval, logger: logger, handler: handler)
            }
        }
    }

    /// Closes the connection for good; the handler is told ``Event/lost`` if it was subscribed.
    func stop() {
        task.withLock { $0?.cancel() }
    }

    /// Connects, subscribes and pings until the task is cancelled, reconnecting after the backoff.
    private static func run(pool: RedisConnectionPool, pingInterval: Duration, logger: Logger, handler: @escaping @Sendable (Event) -> Void) async {
        var failures = 0
        while !Task.isCancelled {
            do {
                let connection = try await subscribe(pool: pool, handler: handler)
                failures = 0
                await withTaskCancellationHandler {
                    await keepAlive(connection, pool: pool, every: pingInterval)
                } onCancel: {
                    connection.close()
                }
                handler(.lost)
                if !Task.isCancelled {
                    logger.warning("The connection for Redis's invalidation notices closed; reconnecting", metadata: ["redis": "\(pool.endpoint)"])
                }
            } catch {
                failures += 1
                if failures == 1 {
                    logger.warning(
                        "Cannot subscribe to Redis's invalidation notices; trying again",
                        metadata: ["redis": "\(pool.endpoint)", "error": "\(error)"]
                    )
                }
            }
            let delay = pool.backoff.delay(afterFailures: max(1, failures), random: Double.random(in: 0..<1))
            try? await Task.sleep(for: .nanoseconds(delay.nanoseconds))
        }
    }

    /// Opens a connection, reads its client id and subscribes to ``channel``; the handler is
    /// told ``Event/subscribed(clientID:)`` once the server confirms.
    private static func subscribe(pool: RedisConnectionPool, handler: @escaping @Sendable (Event) -> Void) async throws -> RedisConnection {
        let group = try await RedisConnectionPool.eventLoopGroup()
        let tls = try await pool.tls()
        let endpoint = pool.endpoint
        let connection = try await RedisConnection.connect(to: endpoint, id: -1, group: group, tls: tls) { channel, payload in
            guard channel == Self.channel else { return }
            switch payload {
            case .array(let keys?):
                handler(.invalidated(keys.compactMap { if case .bulkString(let key?) = $0 { key } else { nil } }))
            default:
                // A notice with no keys (a null): the database was flushed.
                handler(.flushed)
            }
        }.get()
        do {
            let id = connection.send(.command("CLIENT", "ID"), timeout: endpoint.commandTimeout)
            let subscribed = connection.send(.command("SUBSCRIBE", Self.channel), timeout: endpoint.commandTimeout)
            guard case .integer(let clientID) = try await id.get() else {
                throw RedisClientError.handshakeRefused(command: "CLIENT ID", reply: try await id.get().summary)
            }
            let reply = try await subscribed.get()
            guard case .array(let elements?) = reply, elements.first?.text == "subscribe" else {
                throw RedisClientError.handshakeRefused(command: "SUBSCRIBE", reply: reply.summary)
            }
            handler(.subscribed(clientID: clientID))
            return connection
        } catch {
            connection.close()
            throw error
        }
    }

    /// Pings `connection` every `interval` until it closes (a ping unanswered within the command
    /// timeout closes it) or the task is cancelled.
    private static func keepAlive(_ connection: RedisConnection, pool: RedisConnectionPool, every interval: Duration) async {
        let closed = connection.channel.closeFuture
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                try? await closed.get()
            }
            group.addTask {
                while !Task.isCancelled {
                    try? await Task.sleep(for: interval)
                    guard !Task.isCancelled else { return }
                    // A subscribed connection answers PING with `*2 pong ""`; the handler closes
                    // the connection when the answer does not come in time.
                    _ = try? await connection.send(.command("PING"), timeout: pool.endpoint.commandTimeout).get()
                }
            }
            await group.next()
            group.cancelAll()
        }
    }
}
