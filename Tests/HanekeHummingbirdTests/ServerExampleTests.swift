import Foundation
import HanekeTesting
import Testing
import TestSupport
#if Hummingbird
import HTTPTypes
import HummingbirdTesting
import NIOCore

/// The server examples as a user runs them: built binaries in child processes, real requests over
/// TCP on loopback, two workers sharing one cache folder.
@Suite(.timeLimit(.minutes(2)), .tags(.process))
struct ServerExampleTests {
    /// The test clients run on SwiftNIO's shared event loops: started off the pool first.
    init() async throws {
        try await startNIOSingletons()
    }

    /// The port of a started example, from the line it prints once it serves.
    static func port(of running: ChildProcess.Running, after prefix: String) async throws -> Int {
        while let line = try await running.readLine() {
            guard let range = line.range(of: prefix) else { continue }
            return try #require(Int(line[range.upperBound...].prefix { $0.isNumber }))
        }
        Issue.record("the example ended before it served: \(await running.errorOutput())")
        throw CancellationError()
    }

    static func client(_ port: Int) -> TestClient {
        let client = TestClient(host: "127.0.0.1", port: port, configuration: .init(timeout: .seconds(60)))
        client.connect()
        return client
    }

    @Test func twoHummingbirdWorkersShareOneFolderAndServeBothRoutes() async throws {
        let folder = try TemporaryDirectory(prefix: "example")
        let binary = ChildProcess.binary("HummingbirdExample")
        let first = try await ChildProcess.start(binary, ["--port", "0", "--folder", folder.path])
        let second = try await ChildProcess.start(binary, ["--port", "0", "--folder", folder.path])
        do {
            let one = Self.client(try await Self.port(of: first, after: "Serving on http://127.0.0.1:"))
            let two = Self.client(try await Self.port(of: second, after: "Serving on http://127.0.0.1:"))
            let user = try await one.get("/users/7")
            #expect(user.status == .ok)
            #expect(user.body.map { String(buffer: $0) } == #"{"id":7,"name":"User 7"}"#)
            #expect(try await one.get("/users/700").status == .notFound)
            // A whole response kept by the response cache: the second is a hit, the same page.
            let report = try await one.get("/report")
            #expect(report.headers[HTTPField.Name("Cache-Status")!] == "haneke; fwd=uri-miss; fwd-status=200; stored")
            let again = try await one.get("/report")
            #expect(again.headers[HTTPField.Name("Cache-Status")!]?.hasPrefix("haneke; hit; ttl=") == true)
            #expect(again.body == report.body)
            let image = try await two.get("/images/gradient.png?size=small")
            #expect(image.status == .ok)
            #expect(image.headers[.contentType] == "image/png")
            #expect(try await two.get("/images/..hidden").status == .badRequest)
            #expect(try await two.get("/images/missing.png").status == .notFound)
            // A session started on one worker is read on the other, from the shared folder.
            let session = try #require(try await one.post("/sessions?user=ada", body: ByteBuffer()).body.map { String(buffer: $0) })
            let read = try await two.get("/sessions/\(session)")
            #expect(read.status == .ok)
            #expect(read.body.map { String(buffer: $0) } == "ada")
            try await one.shutdown()
            try await two.shutdown()
            // A graceful shutdown on SIGTERM, its caches' journals written.
            #expect(await first.kill(SIGTERM) == 0)
            #expect(await second.kill(SIGTERM) == 0)
        } catch {
            _ = await first.kill()
            _ = await second.kill()
            throw error
        }
    }

    #if Vapor
    @Test func theVaporExampleServesBothRoutes() async throws {
        let folder = try TemporaryDirectory(prefix: "example")
        let running = try await ChildProcess.start(
            "/usr/bin/env", ["HANEKE_EXAMPLE_FOLDER=\(folder.path)", ChildProcess.binary("VaporExample"), "serve", "--port", "0"]
        )
        do {
            let client = Self.client(try await Self.port(of: running, after: "Server started on http://127.0.0.1:"))
            #expect(try await client.get("/users/7").body.map { String(buffer: $0) } == #"{"id":7,"name":"User 7"}"#)
            #expect(try await client.get("/users/0").status == .notFound)
            let image = try await client.get("/images/gradient.png?size=large")
            #expect(image.status == .ok)
            #expect(image.headers[.contentType] == "image/png")
            let session = try #require(try await client.post("/sessions?user=grace", body: ByteBuffer()).body.map { String(buffer: $0) })
            #expect(try await client.get("/sessions/\(session)").body.map { String(buffer: $0) } == "grace")
            try await client.shutdown()
            #expect(await running.kill(SIGTERM) == 0)
        } catch {
            _ = await running.kill()
            throw error
        }
    }

    /// The bounded-memory benchmark's probe (scripts/bench-server-memory) at a small scale: the
    /// Haneke drivers write 2,000 keys, shut down gracefully, and a second process reads every one.
    @Test(arguments: ["haneke-hummingbird", "haneke-vapor"])
    func theMemoryProbeReadsEveryKeyBackAfterARestart(driver: String) async throws {
        let folder = try TemporaryDirectory(prefix: "probe")
        let probe = ChildProcess.binary("ServerMemoryProbe")
        let arguments = [driver, "2000", folder.appending(driver), "\(1 << 20)"]
        let written = try await ChildProcess.run(probe, arguments)
        #expect(written.status == 0, "\(written.stderr)")
        #expect(written.output.hasSuffix("readable 1000\n"), "\(written.output)")
        let restarted = try await ChildProcess.run(probe, arguments + ["restart"])
        #expect(restarted.status == 0, "\(restarted.stderr)")
        #expect(restarted.output.hasSuffix("readable 2000\n"), "\(restarted.output)")
    }
    #endif
}
#endif
