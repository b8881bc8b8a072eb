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
/// bounded; a request past a limit is answered `400` or `413`, or refused at the connection. The
/// bytes held for requests and responses in flight, across connections, are bounded by one
/// ``MemoryBudget`` (past it, `503`), and a response's body is written as the client reads it.
/// Every phase of a request has a deadline (``RequestDeadlineHandler``): the head, the body's
/// rate, the wait between requests. One peer may hold at most
/// ``Limits-swift.struct/maximumConnectionsPerPeer`` connections; at the total, the connection
/// idle the longest is closed to make room, and a new one is refused only when none is idle.
///
/// Concurrency: each connection's state is its `ProxyConnectionHandler`'s, touched only on the
/// connection's event loop; a task's answer is written back there. The set of open connections is
/// one `Mutex` (`ConnectionRegistry`).
package final class ProxyServer: Sendable {
    /// The server's limits, beside nginx's and Apache's defaults.
    package struct Limits: Sendable, Hashable {
        /// `1024` by default: the most client connections at once (nginx: `worker_connections`
        /// 512 a worker). At the limit the connection idle the longest (waiting for its first or
        /// next request) is closed to make room, as nginx does; a new one is closed at once only
        /// when every connection is busy.
        package var maximumConnections = 1_024
        /// `256` by default: the most connections from one IP address (nginx and Apache: none
        /// without `limit_conn` or `mod_reqtimeout`'s companions); more are closed at once.
        package var maximumConnectionsPerPeer = 256
        /// `30 seconds` by default: the longest a request's head may take from its first byte
        /// (nginx: `client_header_timeout` 60 s; Apache: `RequestReadTimeout header=20-40`).
        package var headerTimeout = Duration.seconds(30)
        /// `500` bytes a second by default: the slowest a request body may arrive, measured over
        /// each ``bodyRateWindow`` (Apache: `MinRate=500`; nginx: `client_body_timeout` 60 s between
        /// two reads).
        package var minimumBodyRate = 500
        /// `10 seconds` by default: the window over which ``minimumBodyRate`` is measured.
        package var bodyRateWindow = Duration.seconds(10)
        /// `100` by default: the most header fields in a request; more answer `400`.
        package var maximumHeaderCount = 100
        /// `64 KiB` by default: the most bytes of header fields in a request; more answer `400`.
        package var maximumHeaderBytes = 64 << 10
        /// `16 MiB` by default: the largest request body; a larger one answers `413`.
        package var maximumRequestBodySize = 16 << 20
        /// `256 MiB` by default: the most bytes in flight across all connections (request bodies
        /// being read, upstream bodies being collected, response bodies being written; see
        /// ``MemoryBudget``). Past it, new requests are answered `503` with `Retry-After`. nginx
        /// has no such bound: each connection's buffers are bounded alone.
        package var memoryBudget = 256 << 20
        /// `64 KiB` by default: the most bytes of a request body kept in memory; the rest of a
        /// longer one goes to a file with no name in ``spoolDirectory`` and is sent upstream from
        /// there (nginx: `client_body_buffer_size` 16 KiB, `client_body_temp_path`).
        package var requestBodyBufferSize = 64 << 10
        /// The folder of request bodies' files: `TMPDIR`, or `/tmp`.
        package var spoolDirectory = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        /// `1 GiB` by default: the most bytes of request bodies in files at once; past it, new
        /// requests with bodies are answered `503` with `Retry-After` (nginx: none, the disk's).
        package var spoolBudget = 1 << 30
        /// `90 seconds` by default: a connection on which nothing is read or written for this long
        /// is closed (an idle keep-alive connection, or a client that sends nothing; nginx:
        /// `keepalive_timeout` 75 s).
        package var idleTimeout = Duration.seconds(90)

        /// Creates the default limits.
        package init() {}
    }

    /// The address the server listens on.
    package let address: SocketAddress
    private let listener: any Channel
    private let connections: ConnectionRegistry
    /// The bytes in flight, and the most there may be.
    package let budget: MemoryBudget
    /// The bytes of request bodies in files, and the most there may be.
    package let spooled: MemoryBudget

    private init(address: SocketAddress, listener: any Channel, connections: ConnectionRegistry, budget: MemoryBudget, spooled: MemoryBudget) {
        self.address = address
        self.listener = listener
        self.connections = connections
        self.budget = budget
        self.spooled = spooled
    }

    /// The port the server listens on.
    package var port: Int { address.port ?? 0 }

    /// How many client connections are open.
    package var connectionCount: Int { connections.open.count }

    /// How many of them wait for a request.
    package var idleConnectionCount: Int { connections.idleCount }

    /// Starts serving on `host:port` (port 0 for an ephemeral one).
    /// - Parameters:
    ///   - host: An IP address or a host name (`localhost`) to listen on.
    ///   - port: The port; 0 for any free one.
    ///   - limits: The limits.
    ///   - group: The event loops.
    ///   - budget: The budget of bytes in flight, shared with the proxy's upstream side; `nil`
    ///     (the default) for one of ``Limits-swift.struct/memoryBudget`` bytes of the server's own.
    ///   - respondAtOnce: Answers a request on the event loop, or returns `nil` to leave it to `respond`.
    ///   - respond: Answers each other request.
    /// - Returns: The running server.
    /// - Throws: `StoreError` with code `unavailable` when the address cannot be bound (in use, not
    ///   this machine's), naming it, with the system's error as its cause.
    package static func start(
        host: String, port: Int, limits: Limits = Limits(), group: any EventLoopGroup, budget: MemoryBudget? = nil,
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
        let budget = budget ?? MemoryBudget(limit: limits.memoryBudget)
        let spooled = MemoryBudget(limit: limits.spoolBudget)
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .serverChannelOption(.backlog, value: 256)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                guard registry.admit(channel, limits: limits) else {
                    return channel.close()
                }
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandlers([
                        RequestDeadlineHandler(limits: limits, registry: registry), IdleStateHandler(allTimeout: TimeAmount(limits.idleTimeout)), IdleConnectionCloser(),
                    ])
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(
                        withOutboundHeaderValidation: true, withEncoderConfiguration: .init(), withDecoderLimitConfiguration: decoderLimits
                    )
                    try channel.pipeline.syncOperations.addHandler(ProxyConnectionHandler(limits: limits, budget: budget, spooled: spooled, respondAtOnce: respondAtOnce, respond: respond))
                }
            }
        let listener: any Channel
        do {
            // A name is resolved by getaddrinfo, which blocks: off the cooperative pool.
            let literal = try? SocketAddress(ipAddress: host, port: port)
            let address = if let literal { literal } else {
                try await IOExecutor.shared.run { try SocketAddress.makeAddressResolvingHost(host, port: port) }
            }
            listener = try await bootstrap.bind(to: address).get()
        } catch {
            let shown = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
            throw StoreError(.unavailable, "Cannot listen on \(shown)", cause: error, posixCode: (error as? IOError).flatMap { POSIXErrorCode(rawValue: $0.errnoCode) })
        }
        guard let address = listener.localAddress else { throw CancellationError() }
        return ProxyServer(address: address, listener: listener, connections: registry, budget: budget, spooled: spooled)
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

/// The server's open connections, recorded from the moment they are accepted until they close:
/// each with its peer's address and, while it waits for a request, since when.
final class ConnectionRegistry: Sendable {
    private struct Connection {
        var channel: any Channel
        var peer: SocketAddress?
        /// When it began to wait for a request; `nil` while one is read or answered.
        var idleSince: NIODeadline?
    }

    private let connections = Mutex<[ObjectIdentifier: Connection]>([:])

    /// The connections open now.
    var open: [any Channel] { connections.withLock { $0.values.map(\.channel) } }

    /// How many of them wait for a request.
    var idleCount: Int { connections.withLock { $0.values.count { $0.idleSince != nil } } }

    /// Records a new connection until it closes, if `limits` allow: at most
    /// `maximumConnectionsPerPeer` from its peer's address, and at most `maximumConnections` in
    /// all, the one idle the longest closed to make room. `false` (nothing recorded) when refused.
    func admit(_ channel: any Channel, limits: ProxyServer.Limits) -> Bool {
        let peer = channel.remoteAddress
        let outcome = connections.withLock { connections -> (admitted: Bool, evicted: (any Channel)?) in
            if let peer, connections.values.count(where: { Self.sameHost($0.peer, peer) }) >= limits.maximumConnectionsPerPeer {
                return (false, nil)
            }
            var evicted: (any Channel)?
            if connections.count >= limits.maximumConnections {
                let idle = connections.compactMap { key, connection in connection.idleSince.map { (key: key, since: $0) } }
                guard let oldest = idle.min(by: { $0.since < $1.since }) else { return (false, nil) }
                evicted = connections.removeValue(forKey: oldest.key)?.channel
            }
            connections[ObjectIdentifier(channel)] = Connection(channel: channel, peer: peer, idleSince: .now())
            return (true, evicted)
        }
        outcome.evicted?.close(promise: nil)
        guard outcome.admitted else { return false }
        channel.closeFuture.whenComplete { _ in
            _ = self.connections.withLock { $0.removeValue(forKey: ObjectIdentifier(channel)) }
        }
        return true
    }

    /// Records that `channel` waits for a request (`true`) or is reading or answering one.
    func setIdle(_ channel: any Channel, _ idle: Bool) {
        connections.withLock { connections in
            connections[ObjectIdentifier(channel)]?.idleSince = idle ? .now() : nil
        }
    }

    /// Whether two addresses are one host's (the port aside).
    private static func sameHost(_ first: SocketAddress?, _ second: SocketAddress) -> Bool {
        guard let first else { return false }
        return first.ipAddress == second.ipAddress
    }
}

/// One client connection: collects each request, answers it at once or through a task, and writes
/// the answer as the client reads it. HTTPServerPipelineHandler before it holds a pipelined request
/// back until the answer to the one before is written, so there is one request at a time.
///
/// Every byte it holds is in the server's ``MemoryBudget``: a request body as it arrives, and a
/// response body (a stored one once for all its writers) until its last piece is written. A body
/// is written ``pieceSize`` bytes at a time, the next only once the socket takes it
/// (`channelWritabilityChanged`), so a client that does not read holds one piece and its socket's
/// buffers, not a copy of the body. A request that arrives while the budget is spent, or whose
/// body or answer does not fit, is answered `503`.
final class ProxyConnectionHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    /// The most bytes of a body handed to the socket at once: 64 KiB.
    static let pieceSize = 64 << 10
    /// A body of at most this many bytes (16 KiB) is written without a charge on the budget: the
    /// fixed texts, small responses. All the connections' together stay under 16 MiB.
    static let unchargedBodySize = 16 << 10

    /// Why a request is answered by the connection, not the proxy.
    private enum Refusal {
        /// Its body is over the limit: `413`.
        case tooLarge
        /// The memory budget is spent: `503`.
        case overBudget
    }

    /// A response being written.
    private struct Writing {
        var content: ProxyBody
        /// The bytes of `content` handed to the socket so far.
        var offset = 0
        /// What `content` holds of the budget.
        var charge: MemoryBudget.Charge?
        var keepAlive: Bool
    }

    private let limits: ProxyServer.Limits
    private let budget: MemoryBudget
    /// The budget of request bodies' bytes in files.
    private let spooled: MemoryBudget
    private let respondAtOnce: @Sendable (ProxyRequest) -> ProxyResponse?
    private let respond: @Sendable (ProxyRequest) async -> ProxyResponse
    private var head: HTTPRequestHead?
    private var body: ByteBuffer?
    /// The bytes of `body` taken from the budget.
    private var heldForBody = 0
    /// The file of a body longer than `limits.requestBodyBufferSize`, instead of `body`.
    private var spool: RequestBodySpool?
    private var refusal: Refusal?
    private var writing: Writing?
    /// Set once the connection is to close: whatever else arrives is ignored.
    private var closing = false

    init(
        limits: ProxyServer.Limits, budget: MemoryBudget, spooled: MemoryBudget,
        respondAtOnce: @escaping @Sendable (ProxyRequest) -> ProxyResponse?, respond: @escaping @Sendable (ProxyRequest) async -> ProxyResponse
    ) {
        self.limits = limits
        self.budget = budget
        self.spooled = spooled
        self.respondAtOnce = respondAtOnce
        self.respond = respond
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !closing else { return }
        switch unwrapInboundIn(data) {
        case .head(let received):
            head = received
            dropBody()
            refusal = budget.isSpent ? .overBudget : nil
            context.triggerUserOutboundEvent(RequestDeadlineHandler.Phase.headReceived, promise: nil)
            // A client that waits for `100 Continue` before its body gets it, or at once a 413
            // when the body it announces is over the limit (a 503 when the budget is spent).
            if received.version == .http1_1, received.headers["Expect"].contains(where: { $0.lowercased() == "100-continue" }) {
                let announced = received.headers["Content-Length"].first.flatMap { Int($0) } ?? 0
                if announced > limits.maximumRequestBodySize { refusal = .tooLarge }
                if let refusal {
                    refuse(refusal, context: context, version: received.version)
                    return
                }
                context.writeAndFlush(wrapOutboundOut(.head(HTTPResponseHead(version: received.version, status: .continue))), promise: nil)
            }
        case .body(var piece):
            guard refusal == nil else { return }
            let received = spool?.count ?? body?.readableBytes ?? 0
            // A body past a limit is answered at once, without waiting for the rest of it.
            if received + piece.readableBytes > limits.maximumRequestBodySize {
                refuse(.tooLarge, context: context, version: head?.version ?? .http1_1)
            } else if spool != nil || received + piece.readableBytes > limits.requestBodyBufferSize, spoolBody(adding: piece, context: context) {
                return
            } else if !budget.reserve(piece.readableBytes) {
                refuse(.overBudget, context: context, version: head?.version ?? .http1_1)
            } else {
                heldForBody += piece.readableBytes
                if body == nil { body = piece } else { body!.writeBuffer(&piece) }
            }
        case .end:
            guard let received = head else { return }
            head = nil
            context.triggerUserOutboundEvent(RequestDeadlineHandler.Phase.requestReceived, promise: nil)
            if let refusal {
                refuse(refusal, context: context, version: received.version)
                return
            }
            var request = ProxyRequest(method: received.method.name, target: received.uri, headers: HTTPHeaderFields(received.headers), body: body)
            if let spool { request.body = .spooled(spool.finish()) }
            request.peerAddress = context.channel.remoteAddress
            body = nil
            spool = nil
            let held = heldForBody
            heldForBody = 0
            if let response = respondAtOnce(request) {
                budget.release(held)
                write(response, to: received, context: context)
                return
            }
            let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            let (respond, budget) = (self.respond, self.budget)
            Task {
                let response = await respond(request)
                budget.release(held)
                bound.eventLoop.execute {
                    let (handler, context) = bound.value
                    handler.write(response, to: received, context: context)
                }
            }
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { writeMore(context: context) }
        context.fireChannelWritabilityChanged()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        dropBody()
        if let charge = writing?.charge { budget.release(charge) }
        writing = nil
    }

    /// Writes `piece` to the body's file, made (with what memory held of the body) when there is
    /// none yet; `false` only when no file could be made, which leaves the body in memory, under
    /// the memory budget. A file that cannot take the piece (the budget of spooled bytes spent,
    /// the disk full) is dropped, and the request answered `503`.
    private func spoolBody(adding piece: ByteBuffer, context: ChannelHandlerContext) -> Bool {
        let spool: RequestBodySpool
        if let existing = self.spool {
            spool = existing
        } else {
            guard let made = try? RequestBodySpool(directory: limits.spoolDirectory, budget: spooled) else { return false }
            spool = made
        }
        do {
            if self.spool == nil, let body { try spool.append(body) }
            try spool.append(piece)
        } catch {
            dropBody()
            refuse(.overBudget, context: context, version: head?.version ?? .http1_1)
            return true
        }
        if self.spool == nil {
            self.spool = spool
            body = nil
            budget.release(heldForBody)
            heldForBody = 0
        }
        return true
    }

    /// Gives the request body being read back to the budget.
    private func dropBody() {
        spool = nil
        body = nil
        budget.release(heldForBody)
        heldForBody = 0
    }

    /// Writes a response's head (its informational responses first, to HTTP/1.1 clients only) and
    /// as much of its body as the socket takes; ``writeMore(context:)`` goes on. A body that does
    /// not fit the budget is not written: `503` instead.
    private func write(_ response: ProxyResponse, to request: HTTPRequestHead, context: ChannelHandlerContext) {
        guard context.channel.isActive, !closing else { return }
        var charge: MemoryBudget.Charge?
        if response.content.count > Self.unchargedBodySize {
            charge = switch response.content {
            case .buffer(let buffer): budget.charge(bytes: buffer.readableBytes)
            case .stored(let data): budget.charge(data)
            }
            guard charge != nil else { return refuse(.overBudget, context: context, version: request.version) }
        }
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
        writing = Writing(content: response.content, charge: charge, keepAlive: keepAlive)
        writeMore(context: context)
    }

    /// Hands the socket pieces of the body being written while it takes them, then the end: the
    /// budget gets the body's bytes back once the end is written (or the connection closes), and
    /// the connection then waits for the next request or closes.
    private func writeMore(context: ChannelHandlerContext) {
        guard var current = writing else { return }
        while current.offset < current.content.count, context.channel.isWritable {
            let piece = current.content.piece(at: current.offset, length: Self.pieceSize, allocator: context.channel.allocator)
            current.offset += piece.readableBytes
            context.write(wrapOutboundOut(.body(.byteBuffer(piece))), promise: nil)
        }
        guard current.offset >= current.content.count else {
            writing = current
            context.flush()
            return
        }
        writing = nil
        let (budget, charge) = (self.budget, current.charge)
        if current.keepAlive {
            let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { result in
                if let charge { budget.release(charge) }
                if case .success = result {
                    bound.value.triggerUserOutboundEvent(RequestDeadlineHandler.Phase.responseSent, promise: nil)
                }
            }
        } else {
            closing = true
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in
                if let charge { budget.release(charge) }
                channel.close(promise: nil)
            }
        }
    }

    /// Answers `413` for a body over the limit, or `503` while the budget is spent, then closes
    /// the connection.
    private func refuse(_ refusal: Refusal, context: ChannelHandlerContext, version: HTTPVersion) {
        closing = true
        dropBody()
        let (status, text, retry): (HTTPResponseStatus, String, Bool) = switch refusal {
        case .tooLarge: (.payloadTooLarge, "The request body is larger than \(limits.maximumRequestBodySize) bytes\n", false)
        case .overBudget: (.serviceUnavailable, "The proxy is busy: too many bytes in flight. Try again shortly.\n", true)
        }
        var headers: HTTPHeaders = ["Content-Length": String(text.utf8.count), "Connection": "close", "Cache-Control": "no-store"]
        if retry { headers.add(name: "Retry-After", value: "1") }
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: version, status: status, headers: headers))), promise: nil)
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
