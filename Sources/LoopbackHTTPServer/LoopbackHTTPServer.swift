public import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// A real HTTP/1.1 server on 127.0.0.1 (an ephemeral port), for the fetcher tests and the `haneke
/// demo`: requests go through the kernel's loopback, libcurl and `URLSession` exactly as they would
/// to a remote server. Built on SwiftNIO; each response comes from an async handler.
public final class LoopbackHTTPServer: Sendable {
    /// A request, as the handler sees it.
    public struct Request: Sendable {
        /// The method, `GET` for a fetcher.
        public var method: String
        /// The path and query, e.g. `/documents/42?format=json`.
        public var uri: String
        /// The header fields, in order.
        public var headers: [(String, String)] = []
        /// The body; empty for none.
        public var body = Data()
    }

    /// A response to send.
    public struct Response: Sendable {
        /// The status code.
        public var status: Int
        /// The body.
        public var body: Data
        /// The `Content-Length` to announce; by default the body's length. A larger number makes the
        /// server send the head, the (short) body, and then close: a body cut short.
        public var announcedLength: Int?
        /// Extra headers.
        public var headers: [(String, String)]
        /// `nil` (the whole body at once) by default; otherwise the pause before each byte of a body
        /// sent one byte at a time, a server that drips. Sending stops when the client goes away.
        public var dripInterval: Duration?
        /// `nil` by default; otherwise the body has no `Content-Length` (it goes chunked) and, after
        /// ``body``, ``Endless/chunk`` is sent again and again for as long as
        /// ``Endless/sending`` says so and the client stays, then the connection closes.
        public var endless: Endless?

        /// A body that goes on while ``sending`` returns `true`.
        public struct Endless: Sendable {
            /// What is sent again and again after the response's body.
            public var chunk: Data
            /// Asked before each chunk.
            public var sending: @Sendable () -> Bool

            /// Creates an endless body.
            /// - Parameters:
            ///   - chunk: What is sent again and again.
            ///   - sending: Asked before each chunk; sending stops once it returns `false`.
            public init(chunk: Data, sending: @escaping @Sendable () -> Bool) {
                self.chunk = chunk
                self.sending = sending
            }
        }

        /// Creates a response.
        /// - Parameters:
        ///   - status: The status code; 200 by default.
        ///   - body: The body; empty by default.
        ///   - announcedLength: The `Content-Length` to announce; the body's length by default.
        ///   - headers: Extra headers; none by default.
        ///   - dripInterval: The pause before each byte of the body; `nil` (no pause, the whole
        ///     body at once) by default.
        public init(
            status: Int = 200,
            body: Data = Data(),
            announcedLength: Int? = nil,
            headers: [(String, String)] = [],
            dripInterval: Duration? = nil
        ) {
            self.status = status
            self.body = body
            self.announcedLength = announcedLength
            self.headers = headers
            self.dripInterval = dripInterval
        }
    }

    /// The port the server listens on.
    public let port: Int
    private let listener: any Channel
    private let served = Atomic<Int>(0)
    private let received = Atomic<Int>(0)
    private let byPath: Mutex<[String: Int]>
    /// The task that accepts connections and serves them; set once, right after the start.
    private let serving = Mutex<Task<Void, Never>?>(nil)

    /// The server's root URL, `http://127.0.0.1:<port>`.
    public var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// The number of requests answered so far.
    public var requestCount: Int { served.load(ordering: .relaxed) }

    /// The number of requests received so far, answered or not.
    public var requestsReceived: Int { received.load(ordering: .relaxed) }

    /// The number of requests for one path (without the query) answered so far.
    /// - Parameter path: A path such as `/documents/1`.
    /// - Returns: The count.
    public func requestCount(path: String) -> Int {
        byPath.withLock { $0[path] ?? 0 }
    }

    private init(port: Int, listener: any Channel) {
        self.port = port
        self.listener = listener
        self.byPath = Mutex([:])
    }

    /// NIO's shared event loop group, reached from a Dispatch thread: its first use starts one
    /// thread per core and waits until each runs, which must not happen on a cooperative thread.
    private static func eventLoopGroup() async -> MultiThreadedEventLoopGroup {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: MultiThreadedEventLoopGroup.singleton) }
        }
    }

    /// Starts a server whose responses come from `handler`.
    /// - Parameter handler: Answers each request.
    /// - Returns: The running server.
    /// - Throws: NIO's error when the socket cannot be bound.
    public static func start(handler: @escaping @Sendable (Request) async -> Response) async throws -> LoopbackHTTPServer {
        let server = try await ServerBootstrap(group: eventLoopGroup())
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            // An address, not a host name: NIO resolves a name with getaddrinfo on the calling thread.
            .bind(to: try SocketAddress(ipAddress: "127.0.0.1", port: 0)) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    return try NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>(wrappingChannelSynchronously: channel)
                }
            }
        guard let port = server.channel.localAddress?.port else {
            throw CancellationError()
        }
        let instance = LoopbackHTTPServer(port: port, listener: server.channel)
        let serving = Task<Void, Never> {
            try? await withThrowingDiscardingTaskGroup { group in
                try await server.executeThenClose { connections in
                    for try await connection in connections {
                        group.addTask { await instance.serve(connection, handler: handler) }
                    }
                }
            }
        }
        instance.serving.withLock { $0 = serving }
        return instance
    }

    /// Stops listening, ends the connections still open (idle keep-alive ones, a dripping body,
    /// a handler still running: its task is cancelled), and returns once they have all closed.
    public func shutdown() async {
        try? await listener.close()
        let serving = serving.withLock { $0 }
        serving?.cancel()
        await serving?.value
    }

    private func serve(
        _ connection: NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>,
        handler: @Sendable (Request) async -> Response
    ) async {
        try? await connection.executeThenClose { inbound, outbound in
            var head: HTTPRequestHead?
            var body = Data()
            for try await part in inbound {
                switch part {
                case .head(let requestHead):
                    head = requestHead
                    body = Data()
                case .body(let piece):
                    body.append(contentsOf: piece.readableBytesView)
                case .end:
                    guard let requestHead = head else { return }
                    received.add(1, ordering: .relaxed)
                    let response = await handler(Request(method: requestHead.method.rawValue, uri: requestHead.uri, headers: requestHead.headers.map { ($0.name, $0.value) }, body: body))
                    served.add(1, ordering: .relaxed)
                    let path = String(requestHead.uri.split(separator: "?", maxSplits: 1).first ?? "")
                    byPath.withLock { $0[path, default: 0] += 1 }
                    var headers = HTTPHeaders()
                    if response.endless == nil {
                        headers.add(name: "Content-Length", value: String(response.announcedLength ?? response.body.count))
                    }
                    for (name, value) in response.headers { headers.add(name: name, value: value) }
                    try await outbound.write(.head(HTTPResponseHead(version: requestHead.version, status: .init(statusCode: response.status), headers: headers)))
                    if let interval = response.dripInterval {
                        // A write fails once the client has gone away; the sleep, once the server shuts down.
                        for byte in response.body {
                            try await Task.sleep(for: interval)
                            try await outbound.write(.body(.byteBuffer(ByteBuffer(bytes: [byte]))))
                        }
                    } else if !response.body.isEmpty {
                        try await outbound.write(.body(.byteBuffer(ByteBuffer(bytes: response.body))))
                    }
                    if let endless = response.endless {
                        // A write fails once the client has gone away.
                        let chunk = ByteBuffer(bytes: endless.chunk)
                        while endless.sending() { try await outbound.write(.body(.byteBuffer(chunk))) }
                        return   // close without the chunked body's end
                    }
                    if let announced = response.announcedLength, announced > response.body.count {
                        return   // close with the body cut short
                    }
                    try await outbound.write(.end(nil))
                    head = nil
                }
            }
        }
    }
}
