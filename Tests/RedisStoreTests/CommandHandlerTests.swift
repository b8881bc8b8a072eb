import HanekeProtocols
import NIOCore
import NIOEmbedded
@testable import RedisStore
import Testing

/// The connection's pipeline (decoder, encoder, command handler) on an embedded channel, whose
/// clock only moves when the test moves it.
struct CommandHandlerTests {
    @Test func pipelinedCommandsGetTheirRepliesInOrder() throws {
        let channel = try Self.connectedChannel()
        let replies = [RESPValue.command("GET", "a"), .command("SET", "b", "2"), .command("UNLINK", "c")]
            .map { Self.send($0, on: channel) }
        var written = ""
        while let bytes = try channel.readOutbound(as: ByteBuffer.self) { written += String(buffer: bytes) }
        #expect(written == "*2\r\n$3\r\nGET\r\n$1\r\na\r\n*3\r\n$3\r\nSET\r\n$1\r\nb\r\n$1\r\n2\r\n*2\r\n$6\r\nUNLINK\r\n$1\r\nc\r\n")
        #expect(replies.allSatisfy { !$0.isDone })

        try channel.writeInbound(ByteBuffer(string: "$1\r\n1\r\n+OK\r\n"))
        #expect(try replies[0].future.wait() == .bulkString(ByteBuffer(string: "1")))
        #expect(try replies[1].future.wait() == .simpleString("OK"))
        #expect(!replies[2].isDone)
        try channel.writeInbound(ByteBuffer(string: ":1\r\n"))
        #expect(try replies[2].future.wait() == .integer(1))
        #expect(channel.isActive)
    }

    @Test func aMalformedReplyFailsEveryWaitingCommandAndDropsTheConnection() throws {
        let channel = try Self.connectedChannel()
        let first = Self.send(.command("GET", "a"), on: channel)
        let second = Self.send(.command("GET", "b"), on: channel)
        // The handler takes the decoder's error: it fails the commands and closes the channel.
        try channel.writeInbound(ByteBuffer(string: "%3\r\n"))
        for reply in [first, second] {
            #expect { try reply.future.wait() } throws: { error in
                guard case .malformedReply(let problem) = error as? RedisClientError else { return false }
                return problem.reason.contains("unknown type byte 0x25 ('%')")
            }
        }
        #expect(!channel.isActive)
        // A command written after the failure fails at once.
        let late = Self.send(.command("GET", "c"), on: channel)
        #expect(throws: (any Error).self) { try late.future.wait() }
    }

    @Test func aReplyNobodyAskedForDropsTheConnection() throws {
        let channel = try Self.connectedChannel()
        try channel.writeInbound(ByteBuffer(string: "+OK\r\n"))
        #expect(!channel.isActive)
    }

    @Test func aCommandWithoutAReplyTimesOutAndDropsTheConnection() throws {
        let channel = try Self.connectedChannel()
        let reply = Self.send(.command("GET", "a"), on: channel, timeout: .milliseconds(100))
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(99))
        #expect(!reply.isDone)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        #expect { try reply.future.wait() } throws: { error in
            guard case .timedOut(let timeout) = error as? RedisClientError else { return false }
            return timeout == .milliseconds(100)
        }
        #expect(!channel.isActive)
    }

    /// The one timer follows the oldest command: answered commands never time out, and a later
    /// command times out at its own deadline, not its predecessor's.
    @Test func theTimerFollowsTheOldestCommand() throws {
        let channel = try Self.connectedChannel()
        let first = Self.send(.command("GET", "a"), on: channel, timeout: .milliseconds(100))
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(50))
        let second = Self.send(.command("GET", "b"), on: channel, timeout: .milliseconds(100))
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(10))
        try channel.writeInbound(ByteBuffer(string: "$-1\r\n"))
        #expect(try first.future.wait() == .bulkString(nil))
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(80))   // t = 140: the second is not due
        #expect(!second.isDone)
        #expect(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(10))   // t = 150: it is
        #expect(throws: RedisClientError.self) { try second.future.wait() }
        #expect(!channel.isActive)
    }

    /// A command with a shorter timeout than the one before it (the handshake has the connect
    /// timeout) times out at its own deadline.
    @Test func aShorterTimeoutAfterALongerOneFiresOnTime() throws {
        let channel = try Self.connectedChannel()
        let handshake = Self.send(.command("PING"), on: channel, timeout: .seconds(1))
        try channel.writeInbound(ByteBuffer(string: "+PONG\r\n"))
        #expect(try handshake.future.wait() == .simpleString("PONG"))
        let command = Self.send(.command("GET", "a"), on: channel, timeout: .milliseconds(200))
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(199))
        #expect(!command.isDone)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        #expect(throws: RedisClientError.self) { try command.future.wait() }
        #expect(!channel.isActive)
    }

    @Test func aClosedConnectionFailsWaitingCommands() throws {
        let channel = try Self.connectedChannel()
        let reply = Self.send(.command("GET", "a"), on: channel)
        channel.pipeline.fireChannelInactive()
        #expect { try reply.future.wait() } throws: { error in
            guard case .connectionClosed = error as? RedisClientError else { return false }
            return true
        }
    }

    // MARK: - Helpers

    struct Reply {
        let future: EventLoopFuture<RESPValue>
        let done: Locked<Bool>
        var isDone: Bool { done.withLock { $0 } }
    }

    static func send(_ command: RESPValue, on channel: EmbeddedChannel, timeout: TimeAmount = .seconds(1)) -> Reply {
        let promise = channel.eventLoop.makePromise(of: RESPValue.self)
        let done = Locked(false)
        promise.futureResult.whenComplete { _ in done.withLock { $0 = true } }
        channel.writeAndFlush(RedisRequest(command: command, promise: promise, timeout: timeout), promise: nil)
        return Reply(future: promise.futureResult, done: done)
    }

    static func connectedChannel() throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandlers(
            ByteToMessageHandler(RESPDecoder()),
            MessageToByteHandler(RESPEncoder()),
            RedisCommandHandler()
        )
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 6379)).wait()
        return channel
    }
}
