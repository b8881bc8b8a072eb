import Foundation
import HTTPCaching
@testable import HanekeProxy
import NIOCore
import NIOEmbedded
import NIOHTTP1
import NIOPosix
import Synchronization
import Testing
import TestSupport

/// The proxy's front door bounded: a deadline for each phase of a request (on an embedded event
/// loop whose time the test moves), and connections from one peer bounded below the total, over
/// real sockets on loopback.
struct FrontDoorTests {
    /// A connection's pipeline as the server makes it, on an embedded loop, answering every request
    /// at once with `200`.
    func embeddedConnection(_ limits: ProxyServer.Limits = ProxyServer.Limits()) throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(RequestDeadlineHandler(limits: limits, registry: ConnectionRegistry()))
        try channel.pipeline.syncOperations.configureHTTPServerPipeline()
        try channel.pipeline.syncOperations.addHandler(ProxyConnectionHandler(
            limits: limits, budget: MemoryBudget(limit: limits.memoryBudget), spooled: MemoryBudget(limit: limits.spoolBudget),
            respondAtOnce: { _ in ProxyResponse(status: 200, headers: ["Content-Length": "0"], body: ByteBuffer(), interim: []) },
            respond: { _ in ProxyResponse(status: 500, headers: ["Content-Length": "0"], body: ByteBuffer(), interim: []) }
        ))
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        return channel
    }

    @Test func aHeadDrippedAByteAtATimeIsClosedAtItsDeadline() throws {
        let channel = try embeddedConnection()
        var sent = 0
        for byte in "GET /resource HTTP/1.1\r\nHost: proxy\r\nX-Drip: 1\r\n".utf8 where channel.isActive {
            try channel.writeInbound(ByteBuffer(bytes: [byte]))
            channel.embeddedEventLoop.advanceTime(by: .seconds(2))
            sent += 1
        }
        // 30 s from the first byte: its 16th, two seconds apart.
        #expect(!channel.isActive)
        #expect(sent == 15)
    }

    @Test func aHeadOnTimeIsAnsweredAndTheWaitBetweenRequestsHasNoHeadDeadline() throws {
        let channel = try embeddedConnection()
        try channel.writeInbound(ByteBuffer(string: "GET /a HTTP/1.1\r\nHost: proxy\r\n"))
        channel.embeddedEventLoop.advanceTime(by: .seconds(29))
        try channel.writeInbound(ByteBuffer(string: "\r\n"))
        let written = try #require(try channel.readOutbound(as: ByteBuffer.self))
        #expect(String(buffer: written).hasPrefix("HTTP/1.1 200 OK"))
        channel.embeddedEventLoop.advanceTime(by: .seconds(60))
        #expect(channel.isActive)
        // The next request's head has its own 30 seconds.
        try channel.writeInbound(ByteBuffer(string: "GET /b HTTP/1.1\r\n"))
        channel.embeddedEventLoop.advanceTime(by: .seconds(31))
        #expect(!channel.isActive)
    }

    @Test func aBodySlowerThanTheMinimumRateIsClosed() throws {
        let channel = try embeddedConnection()
        try channel.writeInbound(ByteBuffer(string: "POST /upload HTTP/1.1\r\nHost: proxy\r\nContent-Length: 1000000\r\n\r\n"))
        // 6,000 bytes in the first 10 s (over 500 a second), then 1,000 in the next 10.
        try channel.writeInbound(ByteBuffer(repeating: 0x41, count: 6_000))
        channel.embeddedEventLoop.advanceTime(by: .seconds(10))
        #expect(channel.isActive)
        try channel.writeInbound(ByteBuffer(repeating: 0x41, count: 1_000))
        channel.embeddedEventLoop.advanceTime(by: .seconds(10))
        #expect(!channel.isActive)
    }

    /// 1,024 slow heads from one peer fill its share (256 with the default limits), not the
    /// server: another peer is served.
    @Test(.timeLimit(.minutes(2))) func slowConnectionsFromOnePeerLeaveAnotherPeerServed() async throws {
        let limits = ProxyServer.Limits()
        let group = try await sharedEventLoops()
        let server = try await ProxyServer.start(host: "127.0.0.1", port: 0, limits: limits, group: group) { _ in
            ProxyResponse(status: 200, headers: ["Content-Length": "2"], body: ByteBuffer(string: "ok"), interim: [])
        }
        try await withServer(server, shutdown: { await $0.shutdown() }) { server in
            var slow: [any Channel] = []
            for _ in 0..<1_024 {
                let channel = try await RawClient.connect(port: server.port, from: "127.0.0.1", group: group)
                channel.writeAndFlush(ByteBuffer(string: "GET /slow HTTP/1.1\r\nHost: proxy\r\n"), promise: nil)
                slow.append(channel)
            }
            let answer = try await RawClient.exchange("GET /fast HTTP/1.1\r\nHost: proxy\r\n\r\n", port: server.port, from: "127.0.0.2", group: group)
            #expect(answer.hasPrefix("HTTP/1.1 200 OK"))
            try await waitUntil("768 of the 1,024 slow connections closed") { slow.count(where: { !$0.isActive }) == 1_024 - limits.maximumConnectionsPerPeer }
            // The other peer's connection closed after its answer; the server may see that close
            // a moment after the client does.
            try await waitUntil("only the slow peer's share left open") { server.connectionCount == limits.maximumConnectionsPerPeer }
            #expect(slow.count(where: { $0.isActive }) == limits.maximumConnectionsPerPeer)
            for channel in slow { try? await channel.close() }
        }
    }

    /// At the total, the connection idle the longest makes room for a new one.
    @Test(.timeLimit(.minutes(2))) func atTheLimitTheOldestIdleConnectionMakesRoom() async throws {
        var limits = ProxyServer.Limits()
        limits.maximumConnections = 4
        // Only the eviction closes a connection here: under load the steps below once took longer
        // than a head's 30 s, the busy connections were closed at their deadline instead, and the
        // idle one was left to its 90 s idle timer (past the test's time limit).
        limits.headerTimeout = .seconds(3_600)
        limits.idleTimeout = .seconds(3_600)
        let group = try await sharedEventLoops()
        let server = try await ProxyServer.start(host: "127.0.0.1", port: 0, limits: limits, group: group) { _ in
            ProxyResponse(status: 200, headers: ["Content-Length": "2"], body: ByteBuffer(string: "ok"), interim: [])
        }
        try await withServer(server, shutdown: { await $0.shutdown() }) { server in
            let idle = try await RawClient.connect(port: server.port, from: "127.0.0.1", group: group)
            try await waitUntil("the idle connection accepted") { server.connectionCount == 1 }
            var busy: [any Channel] = []
            for _ in 0..<3 {
                let channel = try await RawClient.connect(port: server.port, from: "127.0.0.1", group: group)
                try await channel.writeAndFlush(ByteBuffer(string: "GET /slow HTTP/1.1\r\n"))
                busy.append(channel)
            }
            try await waitUntil("four connections, three of them reading a head") { server.connectionCount == 4 && server.idleConnectionCount == 1 }
            let answer = try await RawClient.exchange("GET /new HTTP/1.1\r\nHost: proxy\r\n\r\n", port: server.port, from: "127.0.0.1", group: group)
            #expect(answer.hasPrefix("HTTP/1.1 200 OK"))
            try await idle.closeFuture.get()
            #expect(busy.allSatisfy { $0.isActive })
            for channel in busy { try? await channel.close() }
        }
    }
}
