import HanekeProtocols
import NIOCore
import NIOPosix
import NIOSSL
import NIOTLS
@testable import RedisStore
import Synchronization

/// A fake Redis on 127.0.0.1 whose answers a test scripts byte for byte: for the replies a real
/// server never sends (malformed bytes, silence, a reply nobody asked for).
final class ScriptedRedisServer: Sendable {
    /// What to do with one command.
    enum Answer: Sendable {
        /// Send these bytes.
        case bytes(String)
        /// Send nothing.
        case silence
        /// Close the connection.
        case close
    }

    let port: Int
    private let listener: any Channel
    private let accepted = Atomic<Int>(0)
    private let closed = Atomic<Int>(0)
    private let commands = Locked<[String]>([])
    private let names: Locked<[String?]>

    /// Connections accepted so far.
    var connectionsAccepted: Int { accepted.load(ordering: .relaxed) }
    /// Connections that have ended so far.
    var connectionsClosed: Int { closed.load(ordering: .relaxed) }
    /// The names of the commands received, in order.
    var commandNames: [String] { commands.withLock { $0 } }
    /// With TLS, the server name (SNI) each connection's client sent, `nil` for none, in order.
    var serverNames: [String?] { names.withLock { $0 } }

    var url: String { "redis://127.0.0.1:\(port)" }

    private init(port: Int, listener: any Channel, names: Locked<[String?]>) {
        self.port = port
        self.listener = listener
        self.names = names
    }

    /// Starts a server that answers each command (an array of bulk strings) with `answer`; with
    /// `tls`, over TLS, recording the server name each client sends (``serverNames``).
    static func start(
        tls: NIOSSLContext? = nil,
        answer: @escaping @Sendable (_ name: String, _ arguments: [String]) -> Answer
    ) async throws -> ScriptedRedisServer {
        let names = Locked<[String?]>([])
        let server = try await ServerBootstrap(group: RedisConnectionPool.eventLoopGroup())
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            // An address, not a host name: NIO resolves a name with getaddrinfo on the calling thread.
            .bind(to: try SocketAddress(ipAddress: "127.0.0.1", port: 0)) { channel in
                channel.eventLoop.makeCompletedFuture {
                    let decoder = ByteToMessageHandler(RESPDecoder())
                    if let tls {
                        // The client's hello is read for its server name, then TLS takes over
                        // between it and the decoder.
                        let before = NIOLoopBound(decoder, eventLoop: channel.eventLoop)
                        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(SNIHandler { result in
                            let name: String? = if case .hostname(let name) = result { name } else { nil }
                            names.withLock { $0.append(name) }
                            return channel.eventLoop.makeCompletedFuture {
                                try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls), position: .before(before.value))
                            }
                        }))
                    }
                    try channel.pipeline.syncOperations.addHandler(decoder)
                    return try NIOAsyncChannel<RESPValue, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        let instance = ScriptedRedisServer(port: server.channel.localAddress!.port!, listener: server.channel, names: names)
        Task {
            try? await withThrowingDiscardingTaskGroup { group in
                try await server.executeThenClose { connections in
                    for try await connection in connections {
                        instance.accepted.add(1, ordering: .relaxed)
                        group.addTask { await instance.serve(connection, answer: answer) }
                    }
                }
            }
        }
        return instance
    }

    func shutdown() async {
        try? await listener.close()
    }

    private func serve(_ connection: NIOAsyncChannel<RESPValue, ByteBuffer>, answer: @Sendable (String, [String]) -> Answer) async {
        defer { closed.add(1, ordering: .relaxed) }
        try? await connection.executeThenClose { inbound, outbound in
            for try await command in inbound {
                guard case .array(let parts?) = command else { return }
                let words = parts.map { $0.text ?? "" }
                commands.withLock { $0.append(words.first?.uppercased() ?? "") }
                switch answer(words.first?.uppercased() ?? "", Array(words.dropFirst())) {
                case .bytes(let text): try await outbound.write(ByteBuffer(string: text))
                case .silence: break
                case .close: return
                }
            }
        }
    }
}
