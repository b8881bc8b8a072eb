import Foundation
import HTTPCaching
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// A response from the upstream server, whole.
struct UpstreamResponse: HTTPCacheOriginResponse {
    var head: HTTPResponseHead
    var body: ByteBuffer
    /// The informational (1xx) responses that came before it.
    var interim: [HTTPResponseHead]

    var status: Int { Int(head.status.code) }

    var headers: HTTPHeaderFields { HTTPHeaderFields(head.headers) }

    func body(upTo limit: Int) async throws -> Data? {
        body.readableBytes <= limit ? Data(body.readableBytesView) : nil
    }
}

/// Why an exchange with the upstream failed.
enum UpstreamFailure: Error, CustomStringConvertible {
    /// The connection closed before a whole response arrived; `started` when some of it had.
    case closed(started: Bool)
    /// The body passed the limit.
    case tooLarge(limit: Int)
    /// The body did not fit the proxy's budget of bytes in flight.
    case overBudget(limit: Int)
    /// No whole response within the deadline.
    case timedOut(Duration)
    /// The connection could not be made.
    case unreachable(any Error)

    var description: String {
        switch self {
        case .closed(let started): started ? "the upstream closed the connection in the middle of a response" : "the upstream closed the connection before responding"
        case .tooLarge(let limit): "the upstream's response body passed the limit of \(limit) bytes"
        case .overBudget(let limit): "the upstream's response body did not fit the budget of \(limit) bytes in flight"
        case .timedOut(let limit): "the upstream sent no whole response within \(limit)"
        case .unreachable(let error): "the upstream could not be reached: \(error)"
        }
    }
}

/// HTTP/1.1 to one upstream server over a pool of keep-alive connections, one exchange per
/// connection at a time. Bodies are collected whole, within a limit, their bytes held in the
/// proxy's ``MemoryBudget`` while they arrive.
///
/// Concurrency: the pool of idle connections is one `Mutex`; each connection's state is its
/// `ExchangeHandler`'s, touched only on the connection's event loop.
final class UpstreamClient: Sendable {
    let host: String
    let port: Int
    /// The `Host` field sent: the upstream's authority.
    let authority: String
    private let group: any EventLoopGroup
    private let maximumBodySize: Int
    private let timeout: Duration
    private let maximumIdleConnections: Int
    private let budget: MemoryBudget
    private let idle = Mutex<[any Channel]>([])

    init(host: String, port: Int, authority: String, group: any EventLoopGroup, maximumBodySize: Int, timeout: Duration, maximumIdleConnections: Int, budget: MemoryBudget) {
        self.host = host
        self.port = port
        self.authority = authority
        self.group = group
        self.maximumBodySize = maximumBodySize
        self.timeout = timeout
        self.maximumIdleConnections = maximumIdleConnections
        self.budget = budget
    }

    /// Sends a request and returns the upstream's whole response. A request that fails on a
    /// reused connection before any response arrives (the server closed it while idle) is sent
    /// once more on a new one, if its method is idempotent.
    func send(_ head: HTTPRequestHead, body: ProxyRequestBody?) async throws -> UpstreamResponse {
        if let channel = takeIdle() {
            do {
                return try await exchange(head, body: body, on: channel)
            } catch UpstreamFailure.closed(started: false) where ["GET", "HEAD", "OPTIONS", "PUT", "DELETE", "TRACE"].contains(head.method.rawValue) {
                // The idle connection was closed by the server: try a new one.
            }
        }
        return try await exchange(head, body: body, on: try await connect())
    }

    /// Closes the idle connections.
    func close() {
        let channels = idle.withLock { idle in
            defer { idle.removeAll() }
            return idle
        }
        for channel in channels { channel.close(promise: nil) }
    }

    private func takeIdle() -> (any Channel)? {
        idle.withLock { idle in
            while let channel = idle.popLast() {
                if channel.isActive { return channel }
            }
            return nil
        }
    }

    private func putIdle(_ channel: any Channel) {
        let kept = idle.withLock { idle in
            guard idle.count < maximumIdleConnections else { return false }
            idle.append(channel)
            return true
        }
        if !kept { channel.close(promise: nil) }
    }

    private func connect() async throws -> any Channel {
        let (limit, budget) = (maximumBodySize, self.budget)
        do {
            return try await ClientBootstrap(group: group)
                .channelOption(.socketOption(.tcp_nodelay), value: 1)
                .connectTimeout(.seconds(10))
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandlers([
                            HTTPRequestEncoder(),
                            ByteToMessageHandler(HTTPResponseDecoder(leftOverBytesStrategy: .dropBytes, informationalResponseStrategy: .forward)),
                            ExchangeHandler(maximumBodySize: limit, budget: budget),
                        ])
                    }
                }
                .connect(host: host, port: port)
                .get()
        } catch {
            throw UpstreamFailure.unreachable(error)
        }
    }

    private func exchange(_ head: HTTPRequestHead, body: ProxyRequestBody?, on channel: any Channel) async throws -> UpstreamResponse {
        let promise = channel.eventLoop.makePromise(of: UpstreamResponse.self)
        let timeout = self.timeout
        // Past the deadline the exchange fails, and then the connection closes: a body read until
        // the close is never taken for a whole one. (A promise completed twice keeps its first result.)
        let timer = channel.eventLoop.scheduleTask(in: TimeAmount(timeout)) {
            promise.fail(UpstreamFailure.timedOut(timeout))
            channel.close(promise: nil)
        }
        // A write that never reaches the handler (the connection closed meanwhile) fails the exchange.
        let written = channel.eventLoop.makePromise(of: Void.self)
        written.futureResult.whenFailure { promise.fail($0) }
        channel.writeAndFlush(UpstreamExchange(head: head, body: body, promise: promise), promise: written)
        do {
            let response = try await promise.futureResult.get()
            timer.cancel()
            if response.head.isKeepAlive && head.isKeepAlive && channel.isActive {
                putIdle(channel)
            } else {
                channel.close(promise: nil)
            }
            return response
        } catch {
            timer.cancel()
            channel.close(promise: nil)
            throw error
        }
    }
}

/// A request to send and where its response goes.
struct UpstreamExchange: Sendable {
    var head: HTTPRequestHead
    var body: ProxyRequestBody?
    var promise: EventLoopPromise<UpstreamResponse>
}

/// Sends one exchange's request and collects its response, on the connection's event loop.
final class ExchangeHandler: ChannelDuplexHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundIn = UpstreamExchange
    typealias OutboundOut = HTTPClientRequestPart

    /// The most informational responses kept for one exchange; more are dropped.
    static let maximumInterimResponses = 8

    private let maximumBodySize: Int
    private let budget: MemoryBudget
    /// The bytes of `body` taken from the budget, given back when the exchange ends.
    private var held = 0
    private var pending: EventLoopPromise<UpstreamResponse>?
    private var head: HTTPResponseHead?
    private var interim: [HTTPResponseHead] = []
    private var body = ByteBuffer()
    /// Set once the upstream sent a response to no request: the connection is closing.
    private var unsolicited = false

    init(maximumBodySize: Int, budget: MemoryBudget) {
        self.maximumBodySize = maximumBodySize
        self.budget = budget
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let exchange = unwrapOutboundIn(data)
        guard pending == nil, !unsolicited, context.channel.isActive else {
            exchange.promise.fail(UpstreamFailure.closed(started: false))
            promise?.fail(UpstreamFailure.closed(started: false) as any Error)
            return
        }
        pending = exchange.promise
        head = nil
        interim = []
        body.clear()
        context.write(wrapOutboundOut(.head(exchange.head)), promise: nil)
        switch exchange.body {
        case .buffer(let payload) where payload.readableBytes > 0:
            context.write(wrapOutboundOut(.body(.byteBuffer(payload))), promise: nil)
        case .spooled(let file) where file.count > 0:
            // Sent by `sendfile` from a descriptor of this exchange's own (the body may be sent
            // again on another connection), closed once the request is written or has failed.
            let copy = dup(file.descriptor)
            guard copy >= 0 else {
                let error = UpstreamFailure.closed(started: false)
                fail(error)
                promise?.fail(error)
                context.close(promise: nil)
                return
            }
            let handle = NIOFileHandle(_deprecatedTakingOwnershipOfDescriptor: copy)
            context.write(wrapOutboundOut(.body(.fileRegion(FileRegion(fileHandle: handle, readerIndex: 0, endIndex: file.count)))), promise: nil)
            let written = context.eventLoop.makePromise(of: Void.self)
            written.futureResult.whenComplete { result in
                try? handle.close()
                promise?.completeWith(result)
            }
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: written)
            return
        default:
            break
        }
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: promise)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // A byte while no exchange waits (after a response's end, or on an idle connection) is a
        // response to no request: whatever it is, it must never be taken for the next exchange's.
        guard pending != nil else {
            unsolicited = true
            context.close(promise: nil)
            return
        }
        switch unwrapInboundIn(data) {
        case .head(let received):
            if (100..<200).contains(received.status.code), received.status.code != 101 {
                // Informational responses are passed on, a few of them, without hop-by-hop fields.
                guard interim.count < Self.maximumInterimResponses else { return }
                var kept = received
                kept.headers = HTTPCachePolicy.withoutHopByHopFields(HTTPHeaderFields(received.headers)).nio
                interim.append(kept)
            } else {
                head = received
            }
        case .body(var piece):
            guard body.readableBytes + piece.readableBytes <= maximumBodySize else {
                fail(UpstreamFailure.tooLarge(limit: maximumBodySize))
                context.close(promise: nil)
                return
            }
            guard budget.reserve(piece.readableBytes) else {
                fail(UpstreamFailure.overBudget(limit: budget.limit))
                context.close(promise: nil)
                return
            }
            held += piece.readableBytes
            body.writeBuffer(&piece)
        case .end:
            guard let head, let pending else { return }
            self.pending = nil
            self.head = nil
            releaseBody()
            pending.succeed(UpstreamResponse(head: head, body: body, interim: interim))
            body = ByteBuffer()
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        fail(UpstreamFailure.closed(started: head != nil))
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        fail(error)
        context.close(promise: nil)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        releaseBody()
    }

    /// Gives the collected body's bytes back to the budget: from here the response holds them.
    private func releaseBody() {
        budget.release(held)
        held = 0
    }

    private func fail(_ error: any Error) {
        releaseBody()
        body.clear()
        let pending = self.pending
        self.pending = nil
        pending?.fail(error)
    }
}
