import Foundation
import HTTPCaching
import HanekeProtocols
import Logging
package import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// An HTTP/1.1 server with keep-alive in front of a ``CachingProxy``: it reads each request whole
/// (within the limits), asks the proxy, and writes the response. Header size and count, request
/// bodies and connections are bounded; a request past a limit is answered `400`, `413` or
/// refused at the connection.
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
    private let serving = Mutex<Task<Void, Never>?>(nil)
    private let connections = Atomic<Int>(0)

    private init(address: SocketAddress, listener: any Channel) {
        self.address = address
        self.listener = listener
    }

    /// The port the server listens on.
    package var port: Int { address.port ?? 0 }

    /// Starts serving on `host:port` (an address; port 0 for an ephemeral one).
    /// - Parameters:
    ///   - host: An IP address to listen on.
    ///   - port: The port; 0 for any free one.
    ///   - limits: The limits.
    ///   - group: The event loops.
    ///   - respond: Answers each request.
    /// - Returns: The running server.
    /// - Throws: NIO's error when the address cannot be bound.
    package static func start(
        host: String, port: Int, limits: Limits = Limits(), group: any EventLoopGroup,
        respond: @escaping @Sendable (ProxyRequest) async -> ProxyResponse
    ) async throws -> ProxyServer {
        let decoderLimits = {
            var decoderLimits = NIOHTTPDecoderLimitConfiguration()
            decoderLimits.maxHeaderFieldCount = limits.maximumHeaderCount
            decoderLimits.maxHeaderListSize = limits.maximumHeaderBytes
            return decoderLimits
        }()
        let bootstrap = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .serverChannelOption(.backlog, value: 256)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .bind(to: try SocketAddress(ipAddress: host, port: port)) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandlers([
                        IdleStateHandler(allTimeout: TimeAmount(limits.idleTimeout)), IdleConnectionCloser(),
                    ])
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withOutboundHeaderValidation: false, withEncoderConfiguration: .init(), withDecoderLimitConfiguration: decoderLimits)
                    return try NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>(wrappingChannelSynchronously: channel)
                }
            }
        guard let address = bootstrap.channel.localAddress else { throw CancellationError() }
        let server = ProxyServer(address: address, listener: bootstrap.channel)
        let task = Task<Void, Never> {
            try? await withThrowingDiscardingTaskGroup { group in
                try await bootstrap.executeThenClose { inbound in
                    for try await connection in inbound {
                        guard server.connections.wrappingAdd(1, ordering: .relaxed).oldValue < limits.maximumConnections else {
                            server.connections.wrappingSubtract(1, ordering: .relaxed)
                            connection.channel.close(promise: nil)
                            continue
                        }
                        group.addTask {
                            await server.serve(connection, limits: limits, respond: respond)
                            server.connections.wrappingSubtract(1, ordering: .relaxed)
                        }
                    }
                }
            }
        }
        server.serving.withLock { $0 = task }
        return server
    }

    /// Stops listening, closes the connections, and returns once they have closed.
    package func shutdown() async {
        try? await listener.close()
        let task = serving.withLock { $0 }
        task?.cancel()
        await task?.value
    }

    /// The answer to a request whose body is over the limit; the connection then closes.
    private static func payloadTooLarge(_ limits: Limits, version: HTTPVersion) -> [HTTPServerResponsePart] {
        let text = "The request body is larger than \(limits.maximumRequestBodySize) bytes\n"
        let headers: HTTPHeaders = ["Content-Length": String(text.utf8.count), "Connection": "close"]
        return [.head(HTTPResponseHead(version: version, status: .payloadTooLarge, headers: headers)), .body(.byteBuffer(ByteBuffer(string: text))), .end(nil)]
    }

    private func serve(
        _ connection: NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>, limits: Limits,
        respond: @Sendable (ProxyRequest) async -> ProxyResponse
    ) async {
        try? await connection.executeThenClose { inbound, outbound in
            var head: HTTPRequestHead?
            var body: ByteBuffer?
            var tooLarge = false
            for try await part in inbound {
                switch part {
                case .head(let received):
                    head = received
                    body = nil
                    tooLarge = false
                    // A client that waits for `100 Continue` before its body gets it, or at once
                    // a 413 when the body it announces is over the limit.
                    if received.version == .http1_1, received.headers["Expect"].contains(where: { $0.lowercased() == "100-continue" }) {
                        let announced = received.headers["Content-Length"].first.flatMap { Int($0) } ?? 0
                        if announced > limits.maximumRequestBodySize {
                            try await outbound.write(contentsOf: Self.payloadTooLarge(limits, version: received.version))
                            return
                        }
                        try await outbound.write(.head(HTTPResponseHead(version: received.version, status: .continue)))
                    }
                case .body(var piece):
                    guard !tooLarge else { continue }
                    if (body?.readableBytes ?? 0) + piece.readableBytes > limits.maximumRequestBodySize {
                        tooLarge = true
                        body = nil
                    } else if body == nil {
                        body = piece
                    } else {
                        body!.writeBuffer(&piece)
                    }
                case .end:
                    guard let request = head else { return }
                    head = nil
                    let response: ProxyResponse
                    if tooLarge {
                        try await outbound.write(contentsOf: Self.payloadTooLarge(limits, version: request.version))
                        return
                    } else {
                        response = await respond(ProxyRequest(method: request.method.name, target: request.uri, headers: HTTPHeaderFields(request.headers), body: body))
                    }
                    body = nil
                    // Informational responses only to HTTP/1.1 clients (RFC 9110 §15.2).
                    for interim in response.interim where request.version == .http1_1 {
                        try await outbound.write(.head(HTTPResponseHead(version: request.version, status: interim.status, headers: interim.headers)))
                    }
                    var headers = response.headers.nio
                    let keepAlive = request.isKeepAlive
                    if !keepAlive {
                        headers.replaceOrAdd(name: "Connection", value: "close")
                    } else if request.version.major == 1, request.version.minor == 0 {
                        headers.replaceOrAdd(name: "Connection", value: "keep-alive")
                    }
                    // One write, one flush: head, body and end together.
                    var parts: [HTTPServerResponsePart] = [.head(HTTPResponseHead(version: request.version, status: HTTPResponseStatus(statusCode: response.status), headers: headers))]
                    if response.body.readableBytes > 0 { parts.append(.body(.byteBuffer(response.body))) }
                    parts.append(.end(nil))
                    try await outbound.write(contentsOf: parts)
                    if !keepAlive { return }
                }
            }
        }
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
