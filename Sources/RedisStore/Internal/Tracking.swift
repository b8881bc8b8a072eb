import HanekeProtocols
import Logging
import NIOCore

/// What tells a ``CoherentStore`` that keys of its ``RedisStore`` changed on the server: one
/// server's ``Tracking``, or a cluster's (``ClusterTracking``, a ``Tracking`` per master).
protocol KeyTracking: AnyObject, Sendable {
    /// Adds a subscriber; it is told ``Tracking/Notice/reset(coherent:)`` at once with the
    /// current state, then every notice in order.
    /// - Returns: The subscription's number, for ``unsubscribe(_:)``.
    func subscribe(_ handler: @escaping @Sendable (Tracking.Notice) -> Void) -> Int
    /// Removes a subscriber.
    func unsubscribe(_ number: Int)
    /// Closes the connections for good; subscribers are told ``Tracking/Notice/reset(coherent:)``
    /// with `false`.
    func stop()
    /// The tracking connection to send modifications through (at the cluster node `address`),
    /// while tracking is up there.
    func writer(at address: RedisCluster.Address?) -> RedisConnection?
}

/// Server-assisted client-side caching for one ``RedisStore``: what tells the layers on this
/// machine that a key of the store's prefix changed on the server.
///
/// Two connections of its own. The listener (``InvalidationListener``) receives the notices. The
/// writer is the tracking client: `CLIENT TRACKING ON REDIRECT <listener> BCAST PREFIX <prefix>
/// NOLOOP` — the server keeps no state per key (`BCAST`), sends the listener a notice for every
/// key of the prefix that another client modifies, or that expires or is evicted, and none for
/// the writer's own modifications (`NOLOOP`): the store sends its writes through it while tracking
/// is up, so this machine's own writes do not empty its own layers. (Two modifications of one key
/// in the same round of the server's event loop, one by the writer and one by another client, are
/// still noticed: the server remembers that not only the writer modified it.)
///
/// Subscribers are told ``Notice/reset(coherent:)`` whenever notices may have been missed (a
/// connection lost, the database flushed) or start arriving again, and
/// ``Notice/invalidated(_:)`` with the store's keys (the prefix removed) otherwise, in order.
final class Tracking: KeyTracking {
    /// What subscribers are told.
    enum Notice: Sendable, Hashable {
        /// These keys of the store changed on the server.
        case invalidated([String])
        /// Anything may have changed: drop every key. `coherent` says whether notices arrive from
        /// now on (`false`: until the next reset, nothing held on this machine can be trusted).
        case reset(coherent: Bool)
    }

    private enum Event: Sendable {
        case listener(InvalidationListener.Event)
        case writerClosed(id: Int)
    }

    private struct State {
        var writer: RedisConnection?
        var listenerID: Int64?
        var subscribers: [Int: @Sendable (Notice) -> Void] = [:]
        var nextSubscriber = 0
        var nextWriterID = 0
        var stopped = false
    }

    private let state: Locked<State>
    private let listener: InvalidationListener
    private let events: AsyncStream<Event>.Continuation
    private let supervisor: Task<Void, Never>

    /// Starts listening and tracking for the keys of `prefix` on `pool`'s server.
    init(pool: RedisConnectionPool, prefix: String, pingInterval: Duration, logger: Logger) {
        let (stream, continuation) = AsyncStream.makeStream(of: Event.self)
        let state = Locked(State())
        self.state = state
        events = continuation
        listener = InvalidationListener(pool: pool, pingInterval: pingInterval, logger: logger) { event in
            // The listener's id is current before anything waits for the event in the stream.
            switch event {
            case .subscribed(let id): state.withLock { $0.listenerID = id }
            case .lost: state.withLock { $0.listenerID = nil }
            default: break
            }
            continuation.yield(.listener(event))
        }
        supervisor = Task {
            await Self.supervise(stream, state: state, pool: pool, prefix: prefix, events: continuation, logger: logger)
        }
        listener.start()
    }

    deinit {
        stop()
    }

    /// The writer, while tracking is up: the connection the store's modifications go through.
    var writer: RedisConnection? {
        state.withLock { $0.writer }
    }

    /// The writer (`address` is not looked at: one server).
    func writer(at address: RedisCluster.Address?) -> RedisConnection? {
        writer
    }

    /// Adds a subscriber; it is told ``Notice/reset(coherent:)`` at once with the current state.
    /// - Returns: The subscription's number, for ``unsubscribe(_:)``.
    func subscribe(_ handler: @escaping @Sendable (Notice) -> Void) -> Int {
        let (number, coherent) = state.withLock { state in
            defer { state.nextSubscriber += 1 }
            state.subscribers[state.nextSubscriber] = handler
            return (state.nextSubscriber, state.writer != nil)
        }
        handler(.reset(coherent: coherent))
        return number
    }

    /// Removes a subscriber.
    func unsubscribe(_ number: Int) {
        state.withLock { _ = $0.subscribers.removeValue(forKey: number) }
    }

    /// Closes both connections for good; subscribers are told ``Notice/reset(coherent:)`` with
    /// `false`.
    func stop() {
        let (writer, subscribers) = state.withLock { state in
            defer { state.writer = nil; state.stopped = true }
            return (state.writer, state.stopped ? [] : Array(state.subscribers.values))
        }
        listener.stop()
        supervisor.cancel()
        events.finish()
        writer?.close()
        for subscriber in subscribers { subscriber(.reset(coherent: false)) }
    }

    private static func publish(_ notice: Notice, state: Locked<State>) {
        for subscriber in state.withLock({ Array($0.subscribers.values) }) { subscriber(notice) }
    }

    /// Handles the listener's events in order, and (re)connects the writer whenever the listener
    /// subscribes or the writer closes.
    private static func supervise(
        _ stream: AsyncStream<Event>, state: Locked<State>, pool: RedisConnectionPool, prefix: String,
        events: AsyncStream<Event>.Continuation, logger: Logger
    ) async {
        for await event in stream {
            switch event {
            case .listener(.subscribed(let id)):
                let old = state.withLock { state in defer { state.writer = nil }; return state.writer }
                old?.close()
                await connectWriter(redirectingTo: id, state: state, pool: pool, prefix: prefix, events: events, logger: logger)
            case .listener(.invalidated(let keys)):
                let prefixBytes = Array(prefix.utf8)
                let names = keys.compactMap { key -> String? in
                    guard key.readableBytesView.starts(with: prefixBytes) else { return nil }
                    return key.getString(at: key.readerIndex + prefixBytes.count, length: key.readableBytes - prefixBytes.count)
                }
                if !names.isEmpty { publish(.invalidated(names), state: state) }
            case .listener(.flushed):
                publish(.reset(coherent: state.withLock { $0.writer != nil }), state: state)
            case .listener(.lost):
                let writer = state.withLock { state in defer { state.writer = nil }; return state.writer }
                writer?.close()
                publish(.reset(coherent: false), state: state)
            case .writerClosed(let id):
                let (wasCurrent, listenerID) = state.withLock { state -> (Bool, Int64?) in
                    guard state.writer?.id == id else { return (false, state.listenerID) }
                    state.writer = nil
                    return (true, state.listenerID)
                }
                guard wasCurrent else { continue }
                logger.warning("The connection tracking Redis keys for invalidation closed; reconnecting", metadata: ["redis": "\(pool.endpoint)"])
                publish(.reset(coherent: false), state: state)
                if let listenerID {
                    await connectWriter(redirectingTo: listenerID, state: state, pool: pool, prefix: prefix, events: events, logger: logger)
                }
            }
        }
    }

    /// Opens the writer and turns tracking on, redirected to the listener `id`; tries again after
    /// the pool's backoff for as long as the listener keeps that id. Once it is up, subscribers
    /// are told ``Notice/reset(coherent:)`` with `true`.
    private static func connectWriter(
        redirectingTo id: Int64, state: Locked<State>, pool: RedisConnectionPool, prefix: String,
        events: AsyncStream<Event>.Continuation, logger: Logger
    ) async {
        var failures = 0
        while !Task.isCancelled, state.withLock({ $0.listenerID == id && !$0.stopped }) {
            do {
                let number = state.withLock { state in defer { state.nextWriterID += 1 }; return state.nextWriterID }
                let group = try await RedisConnectionPool.eventLoopGroup()
                let writer = try await RedisConnection.connect(to: pool.endpoint, id: number, group: group, tls: try await pool.tls()).get()
                let reply = try await writer.send(
                    .command("CLIENT", "TRACKING", "ON", "REDIRECT", String(id), "BCAST", "PREFIX", prefix, "NOLOOP"),
                    timeout: pool.endpoint.commandTimeout
                ).get()
                guard reply.text == "OK" else {
                    writer.close()
                    throw RedisClientError.handshakeRefused(command: "CLIENT TRACKING", reply: reply.summary)
                }
                let current = state.withLock { state -> Bool in
                    guard state.listenerID == id, !state.stopped else { return false }
                    state.writer = writer
                    return true
                }
                guard current else {
                    writer.close()
                    return
                }
                writer.channel.closeFuture.whenComplete { _ in events.yield(.writerClosed(id: number)) }
                publish(.reset(coherent: true), state: state)
                return
            } catch {
                failures += 1
                if failures == 1 {
                    logger.warning("Cannot turn on Redis's tracking of keys for invalidation; trying again", metadata: ["redis": "\(pool.endpoint)", "error": "\(error)"])
                }
                let delay = pool.backoff.delay(afterFailures: failures, random: Double.random(in: 0..<1))
                try? await Task.sleep(for: .nanoseconds(delay.nanoseconds))
            }
        }
    }
}
