import Foundation
import HTTPCaching
@testable import HanekeProxy
import NIOCore
import NIOPosix
import Testing
import TestSupport

/// One budget for the bytes the proxy holds across connections: request bodies as they arrive,
/// response bodies while clients read them (a stored body once, however many write it), `503`
/// past it. Over real sockets on loopback; what is asserted is the server's own count.
struct MemoryBudgetTests {
    @Test func aChargeForAStoredBodyIsTakenOnceForAllItsWriters() throws {
        let budget = MemoryBudget(limit: 10_000)
        let stored = Data(repeating: 7, count: 6_000)
        let first = try #require(budget.charge(stored))
        let second = try #require(budget.charge(stored))
        #expect(budget.used == 6_000)
        // A copy of the same bytes is a body of its own, and does not fit beside it.
        #expect(budget.charge(Data(stored)) == nil)
        budget.release(first)
        #expect(budget.used == 6_000)
        budget.release(second)
        #expect(budget.used == 0)
        #expect(budget.peak == 6_000)
    }

    /// Uploads that never finish hold the budget, no more: past it, the next is answered `503`
    /// and closed, while a request without a body is still answered.
    @Test(.timeLimit(.minutes(2))) func unfinishedUploadsStopAtTheBudget() async throws {
        var limits = ProxyServer.Limits()
        limits.memoryBudget = 1 << 20
        // Bodies kept in memory (by default, past 64 KiB they go to files).
        limits.requestBodyBufferSize = 1 << 20
        let group = try await sharedEventLoops()
        let server = try await ProxyServer.start(host: "127.0.0.1", port: 0, limits: limits, group: group) { _ in
            ProxyResponse(status: 200, headers: ["Content-Length": "2"], body: ByteBuffer(string: "ok"), interim: [])
        }
        try await withServer(server, shutdown: { await $0.shutdown() }) { server in
            var uploads: [(channel: any Channel, answer: RawClient.Collected)] = []
            for index in 0..<5 {
                let answer = RawClient.Collected()
                let channel = try await RawClient.connect(port: server.port, from: "127.0.0.1", group: group, collector: answer)
                var upload = ByteBuffer(string: "POST /upload HTTP/1.1\r\nHost: proxy\r\nContent-Length: 1000000\r\n\r\n")
                upload.writeRepeatingByte(0x41, count: 300_000)
                try await channel.writeAndFlush(upload)
                uploads.append((channel, answer))
                // Three fit (900,000 bytes); the fourth and fifth do not.
                let held = min(index + 1, 3) * 300_000
                try await waitUntil(timeout: .seconds(10), "upload \(index + 1) read or refused (held \(server.budget.used), \(answer.text.prefix(40)))") {
                    server.budget.used == held && (index < 3 || answer.text.contains("\r\n\r\n"))
                }
            }
            #expect(uploads.map { $0.answer.text.hasPrefix("HTTP/1.1 503 Service Unavailable") } == [false, false, false, true, true])
            #expect(uploads[3].answer.text.contains("Retry-After: 1"))
            #expect(server.budget.peak <= limits.memoryBudget)
            let answer = try await RawClient.exchange("GET /small HTTP/1.1\r\nHost: proxy\r\n\r\n", port: server.port, from: "127.0.0.1", group: group)
            #expect(answer.hasPrefix("HTTP/1.1 200 OK"))
            for upload in uploads { try? await upload.channel.close() }
            try await waitUntil("the uploads' bytes given back") { server.budget.used == 0 }
        }
    }

    /// Twelve clients that read no more than the head of one stored 8 MiB body hold it once; twelve
    /// that are each sent a body of their own hold at most the budget, and those past it get `503`.
    /// (Each body is larger than a socket's send buffer may grow, 4 MiB by Linux's default, so no
    /// answer is handed to the kernel whole.)
    @Test(.timeLimit(.minutes(2))) func clientsThatDoNotReadHoldTheBudgetAtMost() async throws {
        var limits = ProxyServer.Limits()
        limits.memoryBudget = 20 << 20
        let stored = Data(repeating: 0x42, count: 8 << 20)
        let group = try await sharedEventLoops()
        let server = try await ProxyServer.start(host: "127.0.0.1", port: 0, limits: limits, group: group) { request in
            if request.target == "/stored" {
                return ProxyResponse(HTTPResponse(status: 200, headers: ["Content-Length": String(stored.count)], body: stored))
            }
            let own = ByteBuffer(repeating: 0x43, count: 6 << 20)
            return ProxyResponse(status: 200, headers: ["Content-Length": String(own.readableBytes)], body: own, interim: [])
        }
        try await withServer(server, shutdown: { await $0.shutdown() }) { server in
            for target in ["/stored", "/own"] {
                var clients: [(channel: any Channel, answer: RawClient.Collected)] = []
                for _ in 0..<12 {
                    let answer = RawClient.Collected()
                    let channel = try await RawClient.connect(port: server.port, from: "127.0.0.1", group: group, collector: answer, reading: false)
                    try await channel.writeAndFlush(ByteBuffer(string: "GET \(target) HTTP/1.1\r\nHost: proxy\r\n\r\n"))
                    channel.read()
                    clients.append((channel, answer))
                }
                try await waitUntil("twelve answers begun") { clients.allSatisfy { $0.answer.text.contains("\r\n\r\n") } }
                let refused = clients.count { $0.answer.text.hasPrefix("HTTP/1.1 503") }
                if target == "/stored" {
                    #expect(refused == 0)
                    #expect(server.budget.used == stored.count)
                } else {
                    // Three bodies of 6 MiB fit in 20 MiB; the others are refused.
                    #expect(refused == 9)
                    #expect(server.budget.used == 18 << 20)
                }
                #expect(server.budget.peak <= limits.memoryBudget)
                for client in clients { try? await client.channel.close() }
                try await waitUntil("the bodies given back") { server.budget.used == 0 }
            }
        }
    }
}
