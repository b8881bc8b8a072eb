import NIOCore
import NIOPosix
import NIOSSL

/// Where and how to connect: the parts of the store's configuration a connection needs.
struct RedisEndpoint: Sendable, Hashable, CustomStringConvertible {
    var host: String
    var port: Int
    var username: String?
    var password: String?
    var database: Int
    var connectTimeout: TimeAmount
    var commandTimeout: TimeAmount
    /// The most bytes a reply may hold (``RESPDecoder/maximumReplySize``).
    var maximumReplySize: Int = RESPDecoder.maximumReplySize
    /// TLS settings; `nil` for plain TCP.
    var tls: RedisStore.Configuration.TLS? = nil

    /// `host:port`, with brackets around an IPv6 address.
    var description: String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }
}

/// One open connection to Redis: a channel with the RESP decoder, encoder and command handler.
/// Commands may be sent from any thread, any number at a time; replies complete them in order.
final class RedisConnection: Sendable {
    /// The channel.
    let channel: any Channel
    /// A number unique in the pool, to tell a connection from its replacement.
    let id: Int

    private init(channel: any Channel, id: Int) {
        self.channel = channel
        self.id = id
    }

    /// Sends `command` and returns a future of its reply.
    /// - Parameters:
    ///   - command: The command, an array of bulk strings.
    ///   - timeout: How long the reply may take.
    /// - Returns: The reply (an error reply is a reply); fails with `RedisClientError`.
    func send(_ command: RESPValue, timeout: TimeAmount) -> EventLoopFuture<RESPValue> {
        let promise = channel.eventLoop.makePromise(of: RESPValue.self)
        // A write that never reaches the handler (the channel already closed) still fails the
        // command; a promise completed twice keeps its first result.
        channel.writeAndFlush(RedisRequest(command: command, promise: promise, timeout: timeout)).whenFailure { error in
            promise.fail(error as? RedisClientError ?? .connectionClosed(cause: error))
        }
        return promise.futureResult
    }

    /// Sends `ASKING`, then `command`, one right after the other (no command of another caller
    /// between them: both are written in one turn of the event loop), for a key a cluster node is
    /// importing (an `ASK` redirect).
    /// - Returns: The reply to `command`; fails with `RedisClientError`.
    func sendAsking(_ command: RESPValue, timeout: TimeAmount) -> EventLoopFuture<RESPValue> {
        let loop = channel.eventLoop
        let asking = loop.makePromise(of: RESPValue.self)
        let promise = loop.makePromise(of: RESPValue.self)
        let channel = channel
        loop.execute {
            for (request, promise) in [(RESPValue.command("ASKING"), asking), (command, promise)] {
                channel.writeAndFlush(RedisRequest(command: request, promise: promise, timeout: timeout)).whenFailure { error in
                    promise.fail(error as? RedisClientError ?? .connectionClosed(cause: error))
                }
            }
        }
        return asking.futureResult.and(promise.futureResult).map { $0.1 }
    }

    /// Closes the connection; commands waiting for a reply fail with `connectionClosed`.
    func close() {
        channel.close(mode: .all, promise: nil)
    }

    /// Opens a connection to `endpoint` and performs the handshake: `AUTH` when a password is set,
    /// `SELECT` when the database is not 0, otherwise `PING` (so that a server that accepts the TCP
    /// connection but does not answer counts as down). Runs on the event loop from start to end,
    /// so that connecting never waits for a thread of Swift's cooperative pool. The connect timeout
    /// covers both: the handshake gets what the TCP connection left of it. With `tls`, the TLS
    /// handshake comes first, within the same timeout.
    /// - Parameter onMessage: For a connection that will subscribe to channels: where their
    ///   messages go (``RedisCommandHandler/init(onMessage:)``).
    /// - Returns: The connection; fails with `RedisClientError.connectFailed` or `.handshakeRefused`.
    static func connect(
        to endpoint: RedisEndpoint, id: Int, group: any EventLoopGroup, tls: NIOSSLContext? = nil,
        onMessage: (@Sendable (_ channel: String, _ payload: RESPValue) -> Void)? = nil
    ) -> EventLoopFuture<RedisConnection> {
        let eventLoop = group.next()
        let deadline = NIODeadline.now() + endpoint.connectTimeout
        return ClientBootstrap(group: eventLoop)
            .connectTimeout(endpoint.connectTimeout)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let tls, let settings = endpoint.tls {
                        let serverHostname = settings.serverHostname(connectingTo: endpoint.host)
                        try channel.pipeline.syncOperations.addHandler(NIOSSLClientHandler(context: tls, serverHostname: serverHostname))
                    }
                    try channel.pipeline.syncOperations.addHandlers(
                        ByteToMessageHandler(RESPDecoder(maximumReplySize: endpoint.maximumReplySize)),
                        MessageToByteHandler(RESPEncoder()),
                        RedisCommandHandler(onMessage: onMessage)
                    )
                }
            }
            .connect(host: endpoint.host, port: endpoint.port)
            .flatMapErrorThrowing { error in
                throw RedisClientError.connectFailed(cause: error)
            }
            .flatMap { channel in
                let connection = RedisConnection(channel: channel, id: id)
                return connection.handshake(endpoint, timeout: max(.milliseconds(1), deadline - .now()))
                    .map { connection }
                    .flatMapErrorThrowing { error in
                        connection.close()
                        throw error
                    }
            }
    }

    private func handshake(_ endpoint: RedisEndpoint, timeout: TimeAmount) -> EventLoopFuture<Void> {
        var commands: [(name: String, command: RESPValue)] = []
        if let password = endpoint.password {
            let arguments = [endpoint.username, password].compactMap { $0 }.map { ByteBuffer(string: $0) }
            commands.append(("AUTH", .command("AUTH", arguments)))
        }
        if endpoint.database != 0 {
            commands.append(("SELECT", .command("SELECT", String(endpoint.database))))
        }
        if commands.isEmpty {
            commands.append(("PING", .command("PING")))
        }
        // Pipelined: every command is written before the first reply arrives.
        let names = commands.map(\.name)
        let replies = commands.map { send($0.command, timeout: timeout) }
        return EventLoopFuture.whenAllComplete(replies, on: channel.eventLoop).flatMapThrowing { results in
            for (result, name) in zip(results, names) {
                switch result {
                case .failure(let error):
                    throw RedisClientError.connectFailed(cause: error)
                case .success(.error(let message)):
                    throw RedisClientError.handshakeRefused(command: name, reply: message)
                case .success:
                    continue
                }
            }
        }
    }
}
