import Foundation
import HTTPCaching
import HanekeProtocols
package import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// An HTTP/1.1 server with keep-alive in front of a ``CachingProxy``: it reads each request whole
/// (within the limits) and writes the response. A request the proxy can answer at once (a fresh
/// hit in memory) is answered on the connection's event loop; any other is answered by a task.
/// Header size and count, request bodies, idle connections and the number of connections are
/// bounded; a request past a limit is answered `400` or `413`, or refused at the connection.
///
/// Concurrency: each connection's state is its `ProxyConnectionHandler`'s, touched only on the
/// connection's event loop; a task's answer is written back there. The set of open connections is
/// one `Mutex` (`ConnectionRegistry`).
package final class ProxyServer: Sendable {
    /// The server's limits.
    package struct Limits: Sendable, Hashable {
        /// `1024` by default: the most client connections at once; more are closed at once.
        package var maximumConnections = 1_024
        /// `100` by default: the most header fields in a request; more answer `400`.
        package var maximumHeaderCount = 100
        /// `64 KiB` by default: the most bytes of header fields in a request; more answer `400`.
        package var maximumHeaderBytes = 64 << 10
        /// `16 MiB` by default: the largest request body; a larger one answers `413`.
        package var maximumRequestBodySize = 16 << 20
        /// `90 seconds` by default: a connection on which nothing is read or written for this long
        /// is closed (an idle keep-alive connection, or a client that sends nothing).
        package var idleTimeout = Duration.seconds(90)

        /// Creates the default limits.
        package init() {}
    }

    /// The address the server listens on.
    package let address: SocketAddress
    private let listener: any Channel
    private let connections: ConnectionRegistry

    private init(address: SocketAddress, listener: any Channel, connections: ConnectionRegistry) {
        self.address = address
        self.listener = listener
        self.connections = connections
    }

    /// The port the server listens on.
    package var port: Int { address.port ?? 0 }

    /// Starts serving on `host:port` (port 0 for an ephemeral one).
    /// - Parameters:
    ///   - host: An IP address or a host name (`localhost`) to listen on.
    ///   - port: The port; 0 for any free one.
    ///   - limits: The limits.
    ///   - group: The event loops.
    ///   - respondAtOnce: Answers a request on the event loop, or returns `nil` to leave it to `respond`.
    ///   - respond: Answers each other request.
    /// - Returns: The running server.
    /// - Throws: `StoreError` with code `unavailable` when the address cannot be bound (in use, not
    ///   this machine's), naming it, with the system's error as its cause.
    package static func start(
        host: String, port: Int, limits: Limits = Limits(), group: any EventLoopGroup,
        respondAtOnce: @escaping @Sendable (ProxyRequest) -> ProxyResponse? = { _ in nil },
        respond: @escaping @Sendable (ProxyRequest) async -> ProxyResponse
    ) async throws -> ProxyServer {
        let decoderLimits = {
            var decoderLimits = NIOHTTPDecoderLimitConfiguration()
            decoderLimits.maxHeaderFieldCount = limits.maximumHeaderCount
            decoderLimits.maxHeaderListSize = limits.maximumHeaderBytes
            return decoderLimits
        }()
        let registry = ConnectionRegistry()
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .serverChannelOption(.backlog, value: 256)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                guard registry.admit(channel, limit: limits.maximumConnections) else {
                    return channel.close()
                }
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandlers([
                        IdleStateHandler(allTimeout: TimeAmount(limits.idleTimeout)), IdleConnectionCloser(),
                    ])
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(
                        withOutboundHeaderValidation: true, withEncoderConfiguration: .init(), withDecoderLimitConfiguration: decoderLimits
                    )
                    try channel.pipeline.syncOperations.addHandler(ProxyConnectionHandler(limits: limits, respondAtOnce: respondAtOnce, respond: respond))
                }
            }
        let bound: any Channel
        do {
            // A name is resolved by getaddrinfo, which blocks: off the cooperative pool.
            let literal = try? SocketAddress(ipAddress: host, port: port)
            let address = if let literal { literal } else {
                try await IOExecutor.shared.run { try SocketAddress.makeAddressResolvingHost(host, port: port) }
            }
            bound = try await bootstrap.bind(to: address).get()
        } catch {
            let shown = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
            throw StoreError(.unavailable, "Cannot listen on \(shown)", cause: error, posixCode: (error as? IOError).flatMap { POSIXErrorCode(rawValue: $0.errnoCode) })
        }
        let listener = bound
        guard let address = listener.localAddress else { throw CancellationError() }
        return ProxyServer(address: address, listener: listener, connections: registry)
    }

    /// The host and port of a listening address as an operator writes it: `HOST:PORT` (an address
    /// or a name), `[IPv6]:PORT`, or `:PORT` for every IPv4 address (`0.0.0.0`).
    /// - Parameter text: The address.
    /// - Returns: The host and port, or `nil` when it is none of these.
    package static func listenAddress(_ text: String) -> (host: String, port: Int)? {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), (0...65_535).contains(port) else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") {
            host = String(host.dropFirst().dropLast())
        } else if host.contains(":") {
            return nil   // an IPv6 address needs its brackets
        }
        return (host.isEmpty ? "0.0.0.0" : host, port)
    }

    /// Stops listening, closes the connections, and returns once the listener has closed.
    package func shutdown() async {
        try? await listener.close()
        for channel in connections.open { try? await channel.close() }
    }
}

/// The server's open connections, recorded from the moment they are accepted until they close.
private final class ConnectionRegistry: Sendable {
    private let channels = Mutex<[ObjectIdentifier: any Channel]>([:])

    /// The connections open now.
    var open: [any Channel] { channels.withLock { Array($0.values) } }

    /// Records a new connection until it closes; `false` (and nothing recorded) at `limit`.
    func admit(_ channel: any Channel, limit: Int) -> Bool {
        let admitted = channels.withLock { channels in
            guard channels.count < limit else { return false }
            channels[ObjectIdentifier(channel)] = channel
            return true
        }
        guard admitted else { return false }
        channel.closeFuture.whenComplete { _ in
            _ = self.channels.withLock { $0.removeValue(forKey: ObjectIdentifier(channel)) }
        }
        return true
    }
}

/// One client connection: collects each request, answers it at once or through a task, and writes
/// the answer. HTTPServerPipelineHandler before it holds a pipelined request back until the answer
/// to the one before is written, so there is one request at a time.
final class ProxyConnectionHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let limits: ProxyServer.Limits
    private let respondAtOnce: @Sendable (ProxyRequest) -> ProxyResponse?
    private let respond: @Sendable (ProxyRequest) async -> ProxyResponse
    private var head: HTTPRequestHead?
    private var body: ByteBuffer?
    private var tooLarge = false
    /// Set once the connection is to close: whatever else arrives is ignored.
    private var closing = false

    init(limits: ProxyServer.Limits, respondAtOnce: @escaping @Sendable (ProxyRequest) -> ProxyResponse?, respond: @escaping @Sendable (ProxyRequest) async -> ProxyResponse) {
        self.limits = limits
        self.respondAtOnce = respondAtOnce
        self.respond = respond
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !closing else { return }
        switch unwrapInboundIn(data) {
        case .head(let received):
            head = received
            body = nil
            tooLarge = false
            // A client that waits for `100 Continue` before its body gets it, or at once a 413
            // when the body it announces is over the limit.
            if received.version == .http1_1, received.headers["Expect"].contains(where: { $0.lowercased() == "100-continue" }) {
                let announced = received.headers["Content-Length"].first.flatMap { Int($0) } ?? 0
                if announced > limits.maximumRequestBodySize {
                    refuseTooLarge(context: context, version: received.version)
                    return
                }
                context.writeAndFlush(wrapOutboundOut(.head(HTTPResponseHead(version: received.version, status: .continue))), promise: nil)
            }
        case .body(var piece):
            guard !tooLarge else { return }
            if (body?.readableBytes ?? 0) + piece.readableBytes > limits.maximumRequestBodySize {
                tooLarge = true
                body = nil
            } else if body == nil {
                body = piece
            } else {
                body!.writeBuffer(&piece)
            }
        case .end:
            guard let received = head else { return }
            head = nil
            if tooLarge {
                refuseTooLarge(context: context, version: received.version)
                return
            }
            var request = ProxyRequest(method: received.method.name, target: received.uri, headers: HTTPHeaderFields(received.headers), body: body)
            request.peerAddress = context.channel.remoteAddress
            body = nil
            if let response = respondAtOnce(request) {
                write(response, to: received, context: context)
                return
            }
            let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            let respond = self.respond
            Task {
                let response = await respond(request)
                bound.eventLoop.execute {
                    let (handler, context) = bound.value
                    handler.write(response, to: received, context: context)
                }
            }
        }
    }

    /// Writes a response (its informational responses first, to HTTP/1.1 clients only) in one
    /// flush, then closes the connection unless it stays open.
    private func write(_ response: ProxyResponse, to request: HTTPRequestHead, context: ChannelHandlerContext) {
        for interim in response.interim where request.version == .http1_1 {
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: request.version, status: interim.status, headers: interim.headers))), promise: nil)
        }
        var headers = response.headers.nio
        let keepAlive = request.isKeepAlive && !response.closesConnection
        if !keepAlive {
            headers.replaceOrAdd(name: "Connection", value: "close")
        } else if request.version.major == 1, request.version.minor == 0 {
            headers.replaceOrAdd(name: "Connection", value: "keep-alive")
        }
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: request.version, status: HTTPResponseStatus(statusCode: response.status), headers: headers))), promise: nil)
        if response.body.readableBytes > 0 {
            context.write(wrapOutboundOut(.body(.byteBuffer(response.body))), promise: nil)
        }
        if keepAlive {
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        } else {
            closing = true
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
        }
    }

    /// Answers `413` for a body over the limit, then closes the connection.
    private func refuseTooLarge(context: ChannelHandlerContext, version: HTTPVersion) {
        closing = true
        let text = "The request body is larger than \(limits.maximumRequestBodySize) bytes\n"
        let headers: HTTPHeaders = ["Content-Length": String(text.utf8.count), "Connection": "close"]
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: version, status: .payloadTooLarge, headers: headers))), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: text)))), promise: nil)
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
    }
}

/// Closes a connection once `IdleStateHandler` says nothing moved on it for its timeout.
final class IdleConnectionCloser: ChannelInboundHandler {
    typealias InboundIn = NIOAny

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is IdleStateHandler.IdleStateEvent {
            context.close(promise: nil)
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }
}
