import NIOCore

/// Deadlines for the phases of a request on one connection, at the front of its pipeline where
/// it sees every byte: the whole head within ``ProxyServer/Limits-swift.struct/headerTimeout``
/// from its first byte (nginx's `client_header_timeout`; any byte restarting an idle timer let a
/// head dripped at a byte every 45 s hold a connection for ever), and then the body at
/// ``ProxyServer/Limits-swift.struct/minimumBodyRate`` at least, over every
/// ``ProxyServer/Limits-swift.struct/bodyRateWindow`` (Apache's `mod_reqtimeout` `MinRate`). A
/// connection past a deadline is closed. While a request is answered, and between requests (the
/// idle timer's time), no deadline runs.
///
/// `ProxyConnectionHandler` says where the request is with an outbound user event (``Phase``);
/// this handler tells the ``ConnectionRegistry`` when the connection waits for a request (from
/// its response's end to the next request's first byte), which is when it may be closed to make
/// room. Concurrency: touched only on the connection's event loop.
final class RequestDeadlineHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// Where a request is, told by the handler that reads requests.
    enum Phase {
        /// Its head has been read: its body follows (or its end, at once).
        case headReceived
        /// All of it has been read: it is being answered.
        case requestReceived
        /// Its response has been written: the connection waits for the next request.
        case responseSent
    }

    private enum State {
        /// Waiting for a request's first byte.
        case awaitingRequest
        /// Reading a head, since its first byte.
        case readingHead
        /// Reading a body: the bytes read in the current window.
        case readingBody(bytes: Int)
        /// Answering; bytes that arrive are a pipelined request, held by the HTTP handlers.
        case answering
    }

    private let headerTimeout: TimeAmount
    private let minimumBodyRate: Int
    private let bodyRateWindow: TimeAmount
    private let registry: ConnectionRegistry
    private var state = State.awaitingRequest
    private var timer: Scheduled<Void>?

    init(limits: ProxyServer.Limits, registry: ConnectionRegistry) {
        self.registry = registry
        headerTimeout = TimeAmount(limits.headerTimeout)
        minimumBodyRate = limits.minimumBodyRate
        bodyRateWindow = TimeAmount(limits.bodyRateWindow)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let count = unwrapInboundIn(data).readableBytes
        switch state {
        case .awaitingRequest where count > 0:
            state = .readingHead
            registry.setIdle(context.channel, false)
            schedule(after: headerTimeout, context: context) { handler, context in
                guard case .readingHead = handler.state else { return }
                context.close(promise: nil)
            }
        case .readingBody(let bytes):
            state = .readingBody(bytes: bytes + count)
        default:
            break
        }
        context.fireChannelRead(data)
    }

    func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        guard let phase = event as? Phase else {
            context.triggerUserOutboundEvent(event, promise: promise)
            return
        }
        promise?.succeed()
        timer?.cancel()
        timer = nil
        switch phase {
        case .headReceived:
            state = .readingBody(bytes: 0)
            checkBodyRate(context: context)
        case .requestReceived:
            state = .answering
        case .responseSent:
            state = .awaitingRequest
            registry.setIdle(context.channel, true)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
    }

    /// Past each window, closes the connection if the body came slower than the minimum rate.
    private func checkBodyRate(context: ChannelHandlerContext) {
        let window = bodyRateWindow
        let minimum = Int((Double(minimumBodyRate) * Double(window.nanoseconds) / 1e9).rounded(.up))
        schedule(after: window, context: context) { handler, context in
            guard case .readingBody(let bytes) = handler.state else { return }
            guard bytes >= minimum else {
                context.close(promise: nil)
                return
            }
            handler.state = .readingBody(bytes: 0)
            handler.checkBodyRate(context: context)
        }
    }

    private func schedule(after delay: TimeAmount, context: ChannelHandlerContext, _ body: @escaping (RequestDeadlineHandler, ChannelHandlerContext) -> Void) {
        let bound = NIOLoopBound((self, context, body), eventLoop: context.eventLoop)
        timer?.cancel()
        timer = context.eventLoop.scheduleTask(in: delay) {
            let (handler, context, body) = bound.value
            handler.timer = nil
            body(handler, context)
        }
    }
}
