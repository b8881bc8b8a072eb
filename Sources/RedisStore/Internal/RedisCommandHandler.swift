import NIOCore

/// A command on its way to the server, with the promise its reply completes.
struct RedisRequest: Sendable {
    /// The command, an array of bulk strings.
    var command: RESPValue
    /// Completed with the reply, or failed with a `RedisClientError`.
    var promise: EventLoopPromise<RESPValue>
    /// How long the reply may take.
    var timeout: TimeAmount
}

/// Pairs replies with commands on one connection, in order — so any number of commands may be in
/// flight at once (pipelining) — and enforces each command's timeout.
///
/// Sits after the RESP decoder and encoder. When anything goes wrong that could leave replies out
/// of step with commands (a malformed or unsolicited reply, a reply that never comes), every
/// waiting command fails and the connection is closed; commands written after that fail at once.
final class RedisCommandHandler: ChannelDuplexHandler {
    typealias InboundIn = RESPValue
    typealias OutboundIn = RedisRequest
    typealias OutboundOut = RESPValue

    private struct Pending {
        var promise: EventLoopPromise<RESPValue>
        var deadline: NIODeadline
        var timeout: TimeAmount
    }

    /// Commands written and not answered yet, oldest first.
    private var pending = CircularBuffer<Pending>(initialCapacity: 16)
    /// The one timer, armed for the earliest deadline of the waiting commands (or a little
    /// earlier, when that command has been answered since).
    private var timer: Scheduled<Void>?
    private var timerDeadline = NIODeadline.distantFuture
    /// Set once the connection is no longer usable.
    private var failure: RedisClientError?
    /// Where a subscribed connection's messages go (``RESPValue/publishedMessage``), which answer
    /// no command; `nil` on a connection that does not subscribe, where such a value is a reply.
    private let onMessage: (@Sendable (_ channel: String, _ payload: RESPValue) -> Void)?

    /// Creates the handler of one connection.
    /// - Parameter onMessage: For a connection that subscribes to channels: called on the event
    ///   loop with each published message, in order.
    init(onMessage: (@Sendable (_ channel: String, _ payload: RESPValue) -> Void)? = nil) {
        self.onMessage = onMessage
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let request = unwrapOutboundIn(data)
        if let failure {
            request.promise.fail(failure)
            promise?.fail(failure)
            return
        }
        let deadline = context.eventLoop.now + request.timeout
        pending.append(Pending(promise: request.promise, deadline: deadline, timeout: request.timeout))
        if timer == nil || deadline < timerDeadline {
            armTimer(for: deadline, context: context)
        }
        context.write(wrapOutboundOut(request.command), promise: promise)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let reply = unwrapInboundIn(data)
        if let onMessage, let (channel, payload) = reply.publishedMessage {
            onMessage(channel, payload)
            return
        }
        guard let oldest = pending.popFirst() else {
            let error = RESPProtocolError(reason: "a reply arrived when no command was waiting for one (\(reply.summary))")
            fail(with: .malformedReply(error), context: context)
            return
        }
        oldest.promise.succeed(reply)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let error = error as? RESPProtocolError {
            fail(with: .malformedReply(error), context: context)
        } else {
            fail(with: .connectionClosed(cause: error), context: context)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        timerDeadline = .distantFuture
        let error = failure ?? .connectionClosed(cause: nil)
        failure = error
        failAll(with: error)
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        failAll(with: failure ?? .connectionClosed(cause: nil))
    }

    /// Fails every waiting command with `error`, refuses later ones, and closes the connection.
    private func fail(with error: RedisClientError, context: ChannelHandlerContext) {
        if failure == nil { failure = error }
        failAll(with: failure ?? error)
        context.close(promise: nil)
    }

    private func failAll(with error: RedisClientError) {
        while let next = pending.popFirst() {
            next.promise.fail(error)
        }
    }

    /// Arms the timer for `deadline`, replacing any timer armed for later. When it fires, a
    /// command past its deadline fails everything and closes the connection (replies come in
    /// order, so nothing after it can be answered first); otherwise the timer re-arms for the
    /// earliest deadline still waiting. Deadlines usually grow with each command, but not always:
    /// the handshake's commands have the connect timeout.
    private func armTimer(for deadline: NIODeadline, context: ChannelHandlerContext) {
        timer?.cancel()
        timerDeadline = deadline
        timer = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { [self] in
            timer = nil
            timerDeadline = .distantFuture
            let now = context.eventLoop.now
            if let overdue = pending.first(where: { $0.deadline <= now }) {
                fail(with: .timedOut(overdue.timeout), context: context)
            } else if let earliest = pending.lazy.map(\.deadline).min() {
                armTimer(for: earliest, context: context)
            }
        }
    }
}
