import Foundation
public import NIOCore
import NIOPosix
import Synchronization

/// A bare TCP client on loopback from a chosen local address, to play slow or several peers.
public enum RawClient {
    /// A connection from `address` to the port, reading nothing unless asked. With `reading` false
    /// it reads only when told (`channel.read()`), into a receive buffer of 4 KiB: a client that
    /// does not read what it is sent.
    public static func connect(port: Int, from address: String, group: any EventLoopGroup, collector: Collected? = nil, reading: Bool = true) async throws -> any Channel {
        var bootstrap = ClientBootstrap(group: group)
        if !reading {
            bootstrap = bootstrap.channelOption(.autoRead, value: false).channelOption(.socketOption(.so_rcvbuf), value: 4 << 10)
        }
        return try await bootstrap
            .bind(to: try SocketAddress(ipAddress: address, port: 0))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let collector { try channel.pipeline.syncOperations.addHandler(Collecting(collected: collector)) }
                }
            }
            .connect(host: "127.0.0.1", port: port)
            .get()
    }

    /// Sends `request` from `address` and returns what came back before the server's answer
    /// ended the exchange (the connection closes after it: the request asks for no keep-alive).
    public static func exchange(_ request: String, port: Int, from address: String, group: any EventLoopGroup) async throws -> String {
        let collected = Collected()
        let channel = try await connect(port: port, from: address, group: group, collector: collected)
        try await channel.writeAndFlush(ByteBuffer(string: request.replacingOccurrences(of: "\r\n\r\n", with: "\r\nConnection: close\r\n\r\n")))
        try await channel.closeFuture.get()
        return collected.text
    }

    /// The bytes a connection received.
    public final class Collected: Sendable {
        /// Creates an empty record.
        public init() {}
        private let bytes = Mutex("")
        /// What arrived so far, as text.
        public var text: String { bytes.withLock { $0 } }
        /// Adds what arrived.
        public func append(_ text: String) { bytes.withLock { $0 += text } }
    }

    private final class Collecting: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        let collected: Collected
        init(collected: Collected) { self.collected = collected }
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            collected.append(String(buffer: unwrapInboundIn(data)))
        }
    }
}
