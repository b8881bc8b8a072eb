import HanekeProtocols
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import Synchronization

/// A fixed number of connections to one Redis server, opened on demand and reopened on demand.
///
/// Each slot is idle, connecting, connected, or failed (with the time of its next attempt). A
/// command goes to a connected slot (round robin); when none is connected, the slot whose turn it
/// is connects — and the command waits for that, at most the connect timeout. A failed slot
/// does not try again before its backoff delay has passed: meanwhile commands fail at once, so a
/// Redis that is down costs callers nothing. A connection that closes (the server went away, a
/// timeout, a malformed reply) returns its slot to idle, and the next command reconnects it.
final class RedisConnectionPool: Sendable {
    let endpoint: RedisEndpoint
    let backoff: ReconnectBackoff
    private let logger: Logger
    private let state: Locked<State>
    /// The TLS context, once made (or why it cannot be): made at the first connection, on the
    /// I/O executor, since it reads certificate files.
    private let tlsContext = Locked<Result<NIOSSLContext, RedisClientError>?>(nil)

    private enum Slot {
        case idle
        case connecting(EventLoopFuture<RedisConnection>, id: Int, failures: Int)
        case connected(RedisConnection)
        case failed(any Error, failures: Int, retryAt: NIODeadline)
    }

    private struct State {
        var slots: [Slot]
        var nextSlot = 0
        var nextID = 0
        var isShutDown = false
        /// Whether the server was reachable at the last attempt; only changes are logged.
        var reachable = true
        /// Why the last attempt to connect failed.
        var lastFailure: (any Error)?
        /// Connections opened, for tests and statistics.
        var connectionsOpened = 0
    }

    private enum Action {
        case use(RedisConnection, alsoConnect: Attempt?)
        case wait(EventLoopFuture<RedisConnection>)
        case connect(Attempt)
        case fail(RedisClientError)
    }

    /// A connection attempt to start, for one slot.
    private struct Attempt {
        var promise: EventLoopPromise<RedisConnection>
        var slot: Int
        var id: Int
        var failures: Int
    }

    init(endpoint: RedisEndpoint, size: Int, backoff: ReconnectBackoff, logger: Logger) {
        self.endpoint = endpoint
        self.backoff = backoff
        self.logger = logger
        self.state = Locked(State(slots: Array(repeating: .idle, count: max(1, size))))
    }

    /// How many connections the pool has opened so far (reconnections included).
    var connectionsOpened: Int { state.withLock { $0.connectionsOpened } }

    /// How many connections are open now.
    var openConnections: Int {
        state.withLock { state in
            state.slots.count(where: { if case .connected = $0 { true } else { false } })
        }
    }

    /// Sends `command` on a pooled connection and returns the reply. A command whose connection
    /// closed under it is sent once more, on another connection, when `retrying` (an idempotent
    /// command: all but the add-if-absent's `SET … NX`, whose second sending would find the value
    /// the first one stored).
    ///
    /// A cancelled task stops waiting at once and gets `CancellationError`; a command already
    /// written still runs on the server, and its reply is dropped when it comes (replies must stay in
    /// step with commands, so the connection cannot skip it).
    /// - Throws: `RedisClientError`, or `CancellationError`.
    func send(_ command: RESPValue, retrying: Bool = true) async throws -> RESPValue {
        do {
            return try await Self.value(of: connection().send(command, timeout: endpoint.commandTimeout))
        } catch let error as RedisClientError where error.isRetryable && retrying {
            return try await Self.value(of: connection().send(command, timeout: endpoint.commandTimeout))
        }
    }

    /// Sends `command` on `writer` (the connection that tracks keys for invalidation, whose own
    /// modifications the server does not notice back) when there is one, otherwise as
    /// ``send(_:retrying:)``; should the writer fail, a command that may be sent again goes
    /// through the pool.
    /// - Throws: `RedisClientError`, or `CancellationError`.
    func send(_ command: RESPValue, retrying: Bool, via writer: RedisConnection?) async throws -> RESPValue {
        guard let writer else { return try await send(command, retrying: retrying) }
        do {
            return try await Self.value(of: writer.send(command, timeout: endpoint.commandTimeout))
        } catch let error as RedisClientError where error.isRetryable && retrying {
            return try await send(command, retrying: retrying)
        }
    }

    /// Sends `ASKING` and then `command` on one pooled connection (``RedisConnection/sendAsking(_:timeout:)``),
    /// and returns the reply to `command`. Sent once: the redirect it follows is one moment's.
    /// - Throws: `RedisClientError`, or `CancellationError`.
    func sendAsking(_ command: RESPValue) async throws -> RESPValue {
        try await Self.value(of: connection().sendAsking(command, timeout: endpoint.commandTimeout))
    }

    /// Where a wait for a future stands: not waiting yet, waiting with its continuation, or over
    /// (answered, or cancelled).
    private enum Wait<Value: Sendable>: Sendable {
        case notYet
        case waiting(CheckedContinuation<Value, any Error>)
        case over
    }

    /// The future's value, or `CancellationError` as soon as the task is cancelled: whichever
    /// comes first resumes the continuation, exactly once.
    static func value<Value: Sendable>(of future: EventLoopFuture<Value>) async throws -> Value {
        let wait = Locked<Wait<Value>>(.notYet)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Value, any Error>) in
                let cancelledAlready = wait.withLock { state -> Bool in
                    if case .over = state { return true }
                    state = .waiting(continuation)
                    return false
                }
                if cancelledAlready {
                    continuation.resume(throwing: CancellationError())
                    return
                }
                future.whenComplete { result in
                    wait.withLock { state in Self.finish(&state) }?.resume(with: result)
                }
            }
        } onCancel: {
            wait.withLock { state in Self.finish(&state) }?.resume(throwing: CancellationError())
        }
    }

    /// Ends a wait; returns the continuation to resume, unless the wait was already over.
    private static func finish<Value: Sendable>(_ state: inout Wait<Value>) -> CheckedContinuation<Value, any Error>? {
        defer { state = .over }
        if case .waiting(let continuation) = state { return continuation }
        return nil
    }

    /// Closes every connection; later commands fail with `shutDown`.
    func shutDown() {
        let connections = state.withLock { state -> [RedisConnection] in
            state.isShutDown = true
            let open = state.slots.compactMap { slot -> RedisConnection? in
                if case .connected(let connection) = slot { connection } else { nil }
            }
            state.slots = state.slots.map { _ in .idle }
            return open
        }
        for connection in connections { connection.close() }
    }

    /// A connection to send on: a connected one if any; otherwise a slot that may connect now
    /// (idle, or failed with its retry due) connects and the command waits for it; otherwise
    /// the command waits for a first attempt under way, or fails at once while every slot waits
    /// out its backoff (or retries — a retry may take the whole connect timeout when the server
    /// is unreachable, and only the command that started it waits for it).
    private func connection() async throws -> RedisConnection {
        let group = try await Self.eventLoopGroup()
        let tls = try await tls()
        let now = NIODeadline.now()
        let action = state.withLock { state -> Action in
            guard !state.isShutDown else { return .fail(.shutDown) }
            let count = state.slots.count
            let first = state.nextSlot
            state.nextSlot = (first + 1) % count
            let order = (0..<count).map { (first + $0) % count }
            for index in order {
                guard case .connected(let connection) = state.slots[index] else { continue }
                // A connection that has just closed fails its commands before its close is
                // reported; never hand it out again (a retry would fail on it too).
                guard connection.channel.isActive else {
                    state.slots[index] = .idle
                    continue
                }
                // Use it; and if the slot whose turn it is could connect, connect it meanwhile, so
                // the pool grows to its size under load.
                switch state.slots[first] {
                case .idle:
                    return .use(connection, alsoConnect: Self.startConnecting(&state, slot: first, failures: 0, on: group))
                case .failed(_, let failures, let retryAt) where now >= retryAt:
                    return .use(connection, alsoConnect: Self.startConnecting(&state, slot: first, failures: failures, on: group))
                default:
                    return .use(connection, alsoConnect: nil)
                }
            }
            for index in order {
                switch state.slots[index] {
                case .idle:
                    return .connect(Self.startConnecting(&state, slot: index, failures: 0, on: group))
                case .failed(_, let failures, let retryAt) where now >= retryAt:
                    return .connect(Self.startConnecting(&state, slot: index, failures: failures, on: group))
                default:
                    continue
                }
            }
            var backingOff: (error: any Error, retryAt: NIODeadline)?
            for index in order {
                switch state.slots[index] {
                case .connecting(let future, _, failures: 0):
                    return .wait(future)
                case .failed(let error, _, let retryAt) where retryAt < backingOff?.retryAt ?? .distantFuture:
                    backingOff = (error, retryAt)
                default:
                    continue
                }
            }
            guard let backingOff else {
                // Every slot is retrying after a failure: fail rather than wait for a retry.
                return .fail(.backingOff(lastError: state.lastFailure ?? RedisClientError.connectionClosed(cause: nil), retryIn: .zero))
            }
            return .fail(.backingOff(lastError: backingOff.error, retryIn: backingOff.retryAt - now))
        }
        switch action {
        case .use(let connection, let attempt):
            if let attempt { start(attempt, on: group, tls: tls) }
            return connection
        case .wait(let future):
            return try await Self.value(of: future)
        case .fail(let error):
            throw error
        case .connect(let attempt):
            start(attempt, on: group, tls: tls)
            return try await Self.value(of: attempt.promise.futureResult)
        }
    }

    /// The TLS context of the endpoint's settings, `nil` without TLS. The first call makes it on the
    /// I/O executor; settings that cannot be used fail this and every later call alike.
    func tls() async throws -> NIOSSLContext? {
        guard let settings = endpoint.tls else { return nil }
        if let made = tlsContext.withLock({ $0 }) { return try made.get() }
        let made = try await IOExecutor.shared.run { Result { () throws(RedisClientError) in try settings.sharedContext() } }
        return try tlsContext.withLock { context in
            if context == nil { context = made }
            return context!
        }.get()
    }

    /// Whether NIO's shared event loop group has started.
    private static let groupStarted = Atomic<Bool>(false)

    /// NIO's shared event loop group, which every pool connects on. Its first use starts one
    /// thread per core and waits until each runs — milliseconds on a busy machine — so the first
    /// pool to need it starts it on the I/O executor rather than on a cooperative thread. (The
    /// tests' scripted server reaches it here too.)
    static func eventLoopGroup() async throws -> any EventLoopGroup {
        guard groupStarted.load(ordering: .acquiring) else {
            let group = try await IOExecutor.shared.run { MultiThreadedEventLoopGroup.singleton }
            groupStarted.store(true, ordering: .releasing)
            return group
        }
        return MultiThreadedEventLoopGroup.singleton
    }

    /// Marks `slot` as connecting and returns the attempt to start once the lock is released.
    private static func startConnecting(_ state: inout State, slot: Int, failures: Int, on group: any EventLoopGroup) -> Attempt {
        let id = state.nextID
        state.nextID += 1
        let promise = group.next().makePromise(of: RedisConnection.self)
        state.slots[slot] = .connecting(promise.futureResult, id: id, failures: failures)
        return Attempt(promise: promise, slot: slot, id: id, failures: failures)
    }

    private func start(_ attempt: Attempt, on group: any EventLoopGroup, tls: NIOSSLContext?) {
        let endpoint = endpoint
        attempt.promise.completeWith(RedisConnection.connect(to: endpoint, id: attempt.id, group: group, tls: tls))
        attempt.promise.futureResult.whenComplete { result in
            self.finishConnecting(slot: attempt.slot, id: attempt.id, failures: attempt.failures, result: result)
        }
    }

    private func finishConnecting(slot: Int, id: Int, failures: Int, result: Result<RedisConnection, any Error>) {
        enum Outcome { case stale, connected(recovered: Bool), failed(firstFailure: Bool, delay: TimeAmount) }
        let outcome = state.withLock { state -> Outcome in
            guard case .connecting(_, let current, _) = state.slots[slot], current == id, !state.isShutDown else {
                return .stale
            }
            switch result {
            case .success(let connection):
                state.slots[slot] = .connected(connection)
                state.connectionsOpened += 1
                let recovered = !state.reachable
                state.reachable = true
                return .connected(recovered: recovered)
            case .failure(let error):
                let delay = backoff.delay(afterFailures: failures + 1, random: Double.random(in: 0..<1))
                state.slots[slot] = .failed(error, failures: failures + 1, retryAt: .now() + delay)
                state.lastFailure = error
                let first = state.reachable
                state.reachable = false
                return .failed(firstFailure: first, delay: delay)
            }
        }
        switch (outcome, result) {
        case (.stale, .success(let connection)):
            connection.close()
        case (.connected(let recovered), .success(let connection)):
            if recovered {
                logger.notice("Connected to Redis again", metadata: ["redis": "\(endpoint)"])
            }
            connection.channel.closeFuture.whenComplete { _ in
                self.connectionClosed(slot: slot, id: connection.id)
            }
        case (.failed(let firstFailure, let delay), .failure(let error)):
            let code = (error as? RedisClientError)?.code ?? .unavailable
            logger.log(
                level: firstFailure ? .warning : .debug,
                firstFailure ? "Cannot connect to Redis; its operations fail with `\(code)` until a connection succeeds" : "Still cannot connect to Redis",
                metadata: ["redis": "\(endpoint)", "error": "\(error)", "retryIn": "\(RedisClientError.describe(delay))"]
            )
        default:
            break
        }
    }

    private func connectionClosed(slot: Int, id: Int) {
        let wasCurrent = state.withLock { state -> Bool in
            guard case .connected(let connection) = state.slots[slot], connection.id == id else { return false }
            state.slots[slot] = .idle
            return true
        }
        if wasCurrent {
            logger.info("A connection to Redis closed; the next command reconnects", metadata: ["redis": "\(endpoint)"])
        }
    }
}
