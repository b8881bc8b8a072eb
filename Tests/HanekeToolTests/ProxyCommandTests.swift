import Foundation
@testable import HanekeProxy
import HanekeTesting
import LoopbackHTTPServer
import NIOCore
import NIOHTTP1
import NIOPosix
import Testing
import TestSupport

/// `haneke proxy` as a user runs it: a real origin on loopback, the tool in a child process, a
/// real client over TCP.
struct ProxyCommandTests {
    @Test func theProxyCachesInItsFolderAndEndsOnSIGTERM() async throws {
        let origin = try await LoopbackHTTPServer.start { _ in
            LoopbackHTTPServer.Response(body: Data("hello".utf8), headers: [("Cache-Control", "max-age=600")])
        }
        try await withServer(origin, shutdown: { await $0.shutdown() }) { origin in
            let folder = try TemporaryDirectory()
            let running = try await ChildProcess.start(ChildProcess.binary("haneke"), [
                "proxy", "--upstream", origin.baseURL.absoluteString, "--listen", "127.0.0.1:0", "--dir", folder.path, "--capacity", "16M",
            ])
            do {
                try await Self.checkCaching(through: running, origin: origin, folder: folder)
            } catch {
                _ = await running.kill()   // a failed check leaves no proxy running
                throw error
            }
        }
    }

    /// Two requests through the running proxy, then SIGTERM.
    private static func checkCaching(through running: ChildProcess.Running, origin: LoopbackHTTPServer, folder: TemporaryDirectory) async throws {
        let (_, client) = try await Self.client(of: running)
        defer { client.close() }
        let request = HTTPRequestHead(version: .http1_1, method: .GET, uri: "/greeting")
        let first = try await client.send(request, body: nil)
        let second = try await client.send(request, body: nil)
        #expect(String(buffer: first.body) == "hello")
        #expect(first.head.headers["Cache-Status"].first == "haneke; fwd=uri-miss; fwd-status=200; stored")
        #expect(second.head.headers["Cache-Status"].first?.hasPrefix("haneke; hit") == true)
        #expect(origin.requestCount == 1)
        #expect(await running.kill(SIGTERM) == 0)
        #expect(FileManager.default.fileExists(atPath: folder.path + "/.haneke-store"))
    }

    @Test func aHostNameIsListenedOnAndAPortInUseIsNamed() async throws {
        let running = try await ChildProcess.start(ChildProcess.binary("haneke"), ["proxy", "--upstream", "http://127.0.0.1:9", "--listen", "localhost:0"])
        do {
            let line = try #require(try await running.readLine())
            #expect(line.hasPrefix("haneke proxy: listening on http://localhost:"))
            let port = try #require(Int(line.split(separator: ":")[3].prefix { $0.isNumber }))
            let second = try await ChildProcess.run(ChildProcess.binary("haneke"), ["proxy", "--upstream", "http://127.0.0.1:9", "--listen", "localhost:\(port)"])
            #expect(second.status == 3)
            #expect(second.stderr.contains("Cannot listen on localhost:\(port): Address already in use"))
            #expect(await running.kill(SIGTERM) == 0)
        } catch {
            _ = await running.kill()
            throw error
        }
    }

    @Test func anUpstreamThatIsNotAnHTTPURLIsAUsageError() async throws {
        let run = try await ChildProcess.run(ChildProcess.binary("haneke"), ["proxy", "--upstream", "ftp://example.com", "--listen", "127.0.0.1:0"])
        #expect(run.status == 2)
        #expect(run.stderr.contains("--upstream must be an http URL"))
    }

    /// Uploads that never finish and clients that do not read what they asked for keep the
    /// proxy's resident memory within its budget: 20 unfinished 15 MB uploads and 12 clients of
    /// one cached 32 MiB response, with `--memory-budget 64M`. (Before the budget: +288 MiB for the
    /// uploads and +384 MiB for the readers.)
    @Test(.timeLimit(.minutes(3))) func slowClientsKeepTheProxysMemoryWithinItsBudget() async throws {
        let big = Data(repeating: 0x61, count: 32 << 20)
        let origin = try await LoopbackHTTPServer.start { request in
            request.uri == "/big" ? LoopbackHTTPServer.Response(body: big, headers: [("Cache-Control", "max-age=600")]) : LoopbackHTTPServer.Response(body: Data("ok".utf8))
        }
        try await withServer(origin, shutdown: { await $0.shutdown() }) { origin in
            let running = try await ChildProcess.start(ChildProcess.binary("haneke"), [
                "proxy", "--upstream", origin.baseURL.absoluteString, "--listen", "127.0.0.1:0", "--memory-budget", "64M",
            ])
            do {
                let growth = try await Self.memoryGrowthUnderSlowClients(of: running, bodySize: big.count)
                print("haneke proxy --memory-budget 64M: resident memory +\(growth.resident >> 20) MiB (peak +\(growth.peak >> 20) MiB) under slow clients")
                #expect(growth.resident <= (64 + 32) << 20)
                #expect(growth.peak <= (64 + 32) << 20)
                #expect(await running.kill(SIGTERM) == 0)
            } catch {
                _ = await running.kill()
                throw error
            }
        }
    }

    /// What the proxy's resident memory grew by, now and at its peak, once 12 clients that read
    /// nothing past the head of `/big` and 20 uploads that never end have been taken in.
    private static func memoryGrowthUnderSlowClients(of running: ChildProcess.Running, bodySize: Int) async throws -> (resident: Int, peak: Int) {
        let (port, client) = try await Self.client(of: running)
        defer { client.close() }
        let group = try await sharedEventLoops()
        // Stored, and read once whole, before the resident memory is taken as the start.
        let warm = try await client.send(HTTPRequestHead(version: .http1_1, method: .GET, uri: "/big"), body: nil)
        #expect(warm.body.readableBytes == bodySize)
        let pid = running.process.processIdentifier
        let before = try Self.memory(of: pid)
        var channels: [any Channel] = []
        var readers: [RawClient.Collected] = []
        for _ in 0..<12 {
            let answer = RawClient.Collected()
            let channel = try await RawClient.connect(port: port, from: "127.0.0.1", group: group, collector: answer, reading: false)
            try await channel.writeAndFlush(ByteBuffer(string: "GET /big HTTP/1.1\r\nHost: proxy\r\n\r\n"))
            channel.read()
            channels.append(channel)
            readers.append(answer)
        }
        try await waitUntil("the twelve heads") { readers.allSatisfy { $0.text.contains("\r\n\r\n") } }
        // 14 MB of each 15 MB upload, in pieces of 250,000 bytes that every upload shares.
        let piece = ByteBuffer(repeating: 0x62, count: 250_000)
        for _ in 0..<20 {
            let channel = try await RawClient.connect(port: port, from: "127.0.0.1", group: group)
            channel.write(ByteBuffer(string: "POST /upload HTTP/1.1\r\nHost: proxy\r\nContent-Length: 15000000\r\n\r\n"), promise: nil)
            for _ in 0..<55 { channel.write(piece, promise: nil) }
            // Taken in whole, or refused with 503 and the connection closed.
            try? await channel.writeAndFlush(piece)
            channels.append(channel)
        }
        let after = try Self.memory(of: pid)
        for channel in channels { try? await channel.close() }
        return (after.resident - before.resident, after.peak - before.resident)
    }

    /// The port the running proxy says it listens on, once it does, and a client of it.
    private static func client(of running: ChildProcess.Running) async throws -> (port: Int, client: UpstreamClient) {
        let line = try #require(try await running.readLine())
        #expect(line.hasPrefix("haneke proxy: listening on http://127.0.0.1:"))
        let address = try #require(line.range(of: "http://127.0.0.1:"))
        let port = try #require(Int(line[address.upperBound...].prefix { $0.isNumber }))
        let client = UpstreamClient(
            host: "127.0.0.1", port: port, authority: "127.0.0.1:\(port)", group: try await sharedEventLoops(),
            maximumBodySize: 64 << 20, timeout: .seconds(3_600), maximumIdleConnections: 2, budget: MemoryBudget(limit: 1 << 30)
        )
        return (port, client)
    }

    /// A process's resident memory and its peak (`VmRSS`, `VmHWM`), in bytes.
    private static func memory(of pid: Int32) throws -> (resident: Int, peak: Int) {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        func field(_ name: String) -> Int {
            let line = status.split(separator: "\n").first { $0.hasPrefix(name + ":") } ?? ""
            return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) << 10
        }
        return (field("VmRSS"), field("VmHWM"))
    }
}
