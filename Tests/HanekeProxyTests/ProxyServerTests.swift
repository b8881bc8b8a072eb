import Foundation
import HTTPCaching
import HanekeTesting
import LoopbackHTTPServer
@testable import HanekeProxy
import NIOCore
import NIOHTTP1
import Testing
import TestSupport

/// The proxy's server over real TCP on loopback: keep-alive, Cache-Status, limits.
struct ProxyServerTests {
    func withProxyServer(limits: ProxyServer.Limits = ProxyServer.Limits(), _ body: (ProxyFixture, UpstreamClient) async throws -> Void) async throws {
        try await withProxyServer(limits: limits) { fixture, client, _ in try await body(fixture, client) }
    }

    /// The same, `body` also given the server (its budgets).
    func withProxyServer(
        limits: ProxyServer.Limits = ProxyServer.Limits(), inspecting body: (ProxyFixture, UpstreamClient, ProxyServer) async throws -> Void
    ) async throws {
        try await ProxyFixture.run { fixture in
            let group = try await sharedEventLoops()
            let proxy = fixture.proxy
            let server = try await ProxyServer.start(
                host: "127.0.0.1", port: 0, limits: limits, group: group, respondAtOnce: { proxy.respondAtOnce(to: $0) }, respond: { await proxy.respond(to: $0) }
            )
            try await withServer(server, shutdown: { await $0.shutdown() }) { server in
                let client = UpstreamClient(
                    host: "127.0.0.1", port: server.port, authority: "127.0.0.1:\(server.port)", group: group,
                    maximumBodySize: 1 << 20, timeout: .seconds(3_600), maximumIdleConnections: 4, budget: MemoryBudget(limit: 1 << 30)
                )
                defer { client.close() }
                try await body(fixture, client, server)
            }
        }
    }

    func get(_ path: String, _ headers: HTTPHeaders = [:]) -> HTTPRequestHead {
        HTTPRequestHead(version: .http1_1, method: .GET, uri: path, headers: headers)
    }

    @Test func requestsOnOneKeptAliveConnectionAreAnsweredInTurnWithTheirCacheStatus() async throws {
        try await withProxyServer { fixture, client in
            fixture.origin.answer(origin(200, [("Cache-Control", "max-age=60")], body: "hello"))
            let first = try await client.send(get("/a"), body: nil)
            let second = try await client.send(get("/a"), body: nil)
            #expect(String(buffer: first.body) == "hello")
            #expect(first.head.headers["Cache-Status"].first == "haneke; fwd=uri-miss; fwd-status=200; stored")
            #expect(String(buffer: second.body) == "hello")
            #expect(second.head.headers["Cache-Status"].first == "haneke; hit; ttl=60")
            #expect(second.head.headers["Content-Length"].first == "5")
            #expect(fixture.origin.requests.count == 1)
        }
    }

    @Test func aClientThatExpectsContinueGetsItThenItsAnswer() async throws {
        try await withProxyServer { fixture, client in
            fixture.origin.answer(origin(201, [], body: "made"))
            var head = HTTPRequestHead(version: .http1_1, method: .PUT, uri: "/upload")
            head.headers.add(name: "Content-Length", value: "5")
            head.headers.add(name: "Expect", value: "100-continue")
            let response = try await client.send(head, body: .buffer(ByteBuffer(string: "hello")))
            #expect(response.interim.map(\.status) == [.continue])
            #expect(response.head.status == .created)
            #expect(!(fixture.origin.requests.first?.headers.contains { $0.0.lowercased() == "expect" } ?? true))
        }
    }

    @Test func aFreshHitInMemoryIsAnsweredAtOnceAndAStaleOneByTheUpstream() async throws {
        try await withProxyServer { fixture, client in
            fixture.origin.answer(
                origin(200, [("Cache-Control", "max-age=60"), ("ETag", "\"a\"")], body: "hello"),
                origin(304, [("Cache-Control", "max-age=60"), ("ETag", "\"a\"")], body: "")
            )
            _ = try await client.send(get("/a"), body: nil)
            #expect(fixture.proxy.respondAtOnce(to: ProxyRequest(target: "/a"))?.status == 200)
            fixture.clock.advance(by: .seconds(61))
            #expect(fixture.proxy.respondAtOnce(to: ProxyRequest(target: "/a")) == nil)
            let revalidated = try await client.send(get("/a"), body: nil)
            #expect(String(buffer: revalidated.body) == "hello")
            #expect(revalidated.head.headers["Cache-Status"].first?.hasPrefix("haneke; fwd=stale; fwd-status=304") == true)
            #expect(fixture.origin.requests.count == 2)
        }
    }

    @Test func tooManyHeaderFieldsAreRefusedWith400() async throws {
        var limits = ProxyServer.Limits()
        limits.maximumHeaderCount = 10
        try await withProxyServer(limits: limits) { fixture, client in
            let headers = HTTPHeaders((0..<20).map { ("X-Field-\($0)", "1") })
            let response = try await client.send(get("/a", headers), body: nil)
            #expect(response.head.status == .badRequest)
            #expect(fixture.origin.requests.isEmpty)
        }
    }

    /// A body longer than the memory buffer (3 MiB) goes to a file with no name and from there upstream
    /// (by `sendfile`), whole and in order; the memory budget holds at most the buffer of it, and
    /// once answered no byte is left in either budget.
    @Test func aLongRequestBodyGoesUpstreamFromAFileNotMemory() async throws {
        var limits = ProxyServer.Limits()
        limits.memoryBudget = 256 << 10
        // 48 blocks of 64 KiB, each of its own byte: a piece out of order or lost shows.
        var sent = ByteBuffer()
        for block in 0..<48 { sent.writeRepeatingByte(UInt8(block), count: 64 << 10) }
        try await withProxyServer(limits: limits, inspecting: { fixture, client, server in
            fixture.origin.answer(origin(201, [], body: "made"))
            var head = HTTPRequestHead(version: .http1_1, method: .POST, uri: "/upload")
            head.headers.add(name: "Content-Length", value: String(sent.readableBytes))
            let response = try await client.send(head, body: .buffer(sent))
            #expect(response.head.status == .created)
            #expect(String(buffer: response.body) == "made")
            let received = try #require(fixture.origin.requests.last)
            let same = sent.withUnsafeReadableBytes { sent in
                received.body.withUnsafeBytes { $0.count == sent.count && memcmp($0.baseAddress!, sent.baseAddress!, sent.count) == 0 }
            }
            #expect(same)
            #expect(server.spooled.peak == sent.readableBytes)
            #expect(server.budget.peak <= limits.requestBodyBufferSize + 64)
            try await waitUntil("the body's file closed") { server.spooled.used == 0 && server.budget.used == 0 }
        })
    }

    /// Unfinished long uploads hold the budget of spooled bytes, no more: past it the next is
    /// answered `503`, and a request without a body is still answered.
    @Test func longUploadsPastTheSpoolBudgetAreRefusedWith503() async throws {
        var limits = ProxyServer.Limits()
        limits.spoolBudget = 2 << 20
        let group = try await sharedEventLoops()
        let server = try await ProxyServer.start(host: "127.0.0.1", port: 0, limits: limits, group: group) { _ in
            ProxyResponse(status: 200, headers: ["Content-Length": "2"], body: ByteBuffer(string: "ok"), interim: [])
        }
        try await withServer(server, shutdown: { await $0.shutdown() }) { server in
            var uploads: [(channel: any Channel, answer: RawClient.Collected)] = []
            for index in 0..<3 {
                let answer = RawClient.Collected()
                let channel = try await RawClient.connect(port: server.port, from: "127.0.0.1", group: group, collector: answer)
                var upload = ByteBuffer(string: "POST /upload HTTP/1.1\r\nHost: proxy\r\nContent-Length: 5000000\r\n\r\n")
                upload.writeRepeatingByte(0x41, count: 900_000)
                try await channel.writeAndFlush(upload)
                uploads.append((channel, answer))
                // Two fit (1,800,000 bytes); the third does not.
                try await waitUntil(timeout: .seconds(10), "upload \(index + 1) spooled or refused (\(server.spooled.used) spooled)") {
                    index < 2 ? server.spooled.used == (index + 1) * 900_000 : answer.text.contains("\r\n\r\n")
                }
            }
            #expect(uploads.map { $0.answer.text.hasPrefix("HTTP/1.1 503 Service Unavailable") } == [false, false, true])
            #expect(server.spooled.peak <= limits.spoolBudget)
            #expect(server.budget.used == 0)
            let answer = try await RawClient.exchange("GET /small HTTP/1.1\r\nHost: proxy\r\n\r\n", port: server.port, from: "127.0.0.1", group: group)
            #expect(answer.hasPrefix("HTTP/1.1 200 OK"))
            for upload in uploads { try? await upload.channel.close() }
            try await waitUntil("the uploads' files closed") { server.spooled.used == 0 }
        }
    }

    @Test func aRequestBodyOverTheLimitIsRefusedWith413() async throws {
        var limits = ProxyServer.Limits()
        limits.maximumRequestBodySize = 1_000
        try await withProxyServer(limits: limits) { fixture, client in
            var head = HTTPRequestHead(version: .http1_1, method: .POST, uri: "/upload")
            head.headers.add(name: "Content-Length", value: "5000")
            let response = try await client.send(head, body: .buffer(ByteBuffer(repeating: 0x41, count: 5_000)))
            #expect(response.head.status == .payloadTooLarge)
            #expect(fixture.origin.requests.isEmpty)
        }
    }
}
