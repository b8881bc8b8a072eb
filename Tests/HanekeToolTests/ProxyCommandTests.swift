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
        let line = try #require(try await running.readLine())
        #expect(line.hasPrefix("haneke proxy: listening on http://127.0.0.1:"))
        let address = try #require(line.range(of: "http://127.0.0.1:"))
        let port = try #require(Int(line[address.upperBound...].prefix { $0.isNumber }))
        let group = try await sharedEventLoops()
        let client = UpstreamClient(
            host: "127.0.0.1", port: port, authority: "127.0.0.1:\(port)", group: group,
            maximumBodySize: 1 << 20, timeout: .seconds(3_600), maximumIdleConnections: 2, budget: MemoryBudget(limit: 1 << 30)
        )
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
}
