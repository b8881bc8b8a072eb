import Foundation
import Haneke
import HanekeTesting
import LoopbackHTTPServer
import Testing

@Suite(.timeLimit(.minutes(1)))
struct NetworkFetcherTests {
    /// Routes: `/status/<code>` answers that status with a body, `/empty` an empty 200, `/short` a
    /// body shorter than its Content-Length, `/slow` never answers, anything else its path as JSON.
    static func startServer() async throws -> LoopbackHTTPServer {
        try await LoopbackHTTPServer.start { request in
            let path = String(request.uri.split(separator: "?").first ?? "")
            if path.hasPrefix("/status/"), let code = Int(path.dropFirst("/status/".count)) {
                return .init(status: code, body: Data(#"{"status":\#(code)}"#.utf8))
            }
            switch path {
            case "/empty": return .init(status: 200)
            case "/short": return .init(status: 200, body: Data(#"{"cut":"#.utf8), announcedLength: 100)
            case "/slow":
                try? await Task.sleep(for: .seconds(30))
                return .init(status: 200, body: Data("late".utf8))
            case "/text": return .init(status: 200, body: Data("plain text".utf8))
            default: return .init(status: 200, body: Data(#"{"path":"\#(path)"}"#.utf8))
            }
        }
    }

    func fetch(_ path: String, from server: LoopbackHTTPServer) async throws -> JSON {
        try await NetworkFetcher<JSON>(url: server.baseURL.appendingPathComponent(path)).fetch("unused")
    }

    @Test(arguments: [200, 201])
    func successStatusesGiveTheBody(status: Int) async throws {
        let server = try await Self.startServer()
        defer { Task { await server.shutdown() } }
        #expect(try await fetch("status/\(status)", from: server)["status"]?.int == status)
    }

    @Test(arguments: [204, 301, 401, 403, 404, 500, 503])
    func otherStatusesFailWithTheStatus(status: Int) async throws {
        let server = try await Self.startServer()
        defer { Task { await server.shutdown() } }
        let error = await #expect(throws: StoreError.self) { try await fetch("status/\(status)", from: server) }
        #expect(error?.code == .invalidStatusCode)
        #expect(error?.statusCode == status)
        #expect(error?.message.contains("\(status)") == true)
    }

    @Test func anEmptyBodyIsMissingData() async throws {
        let server = try await Self.startServer()
        defer { Task { await server.shutdown() } }
        let error = await #expect(throws: StoreError.self) { try await fetch("empty", from: server) }
        #expect(error?.code == .missingData)
    }

    @Test func aBodyShorterThanItsContentLengthIsMissingData() async throws {
        let server = try await Self.startServer()
        defer { Task { await server.shutdown() } }
        let error = await #expect(throws: StoreError.self) { try await fetch("short", from: server) }
        #expect(error?.code == .missingData, "\(String(describing: error))")
    }

    @Test func aBodyThatDoesNotDecodeIsADecodingError() async throws {
        let server = try await Self.startServer()
        defer { Task { await server.shutdown() } }
        let error = await #expect(throws: StoreError.self) { try await fetch("text", from: server) }
        #expect(error?.code == .decoding)
        #expect(error?.message.contains("JSON") == true)
    }

    @Test func aKeyThatIsNotAnHTTPURLIsRefused() async throws {
        let error = await #expect(throws: StoreError.self) { try await NetworkFetcher<Data>().fetch("file:///etc/passwd") }
        #expect(error?.code == .invalidKey)
    }

    @Test func withoutAURLTheKeyIsTheURL() async throws {
        let server = try await Self.startServer()
        defer { Task { await server.shutdown() } }
        let url = server.baseURL.appendingPathComponent("keyed").absoluteString
        let fetched = try await NetworkFetcher<JSON>().fetch(url)
        #expect(fetched["path"]?.string == "/keyed")
    }

    @Test func cancellingTheTaskCancelsTheRequest() async throws {
        let server = try await Self.startServer()
        defer { Task { await server.shutdown() } }
        let start = ContinuousClock.now
        let task = Task { try await fetch("slow", from: server) }
        while server.requestsReceived == 0 { await Task.yield() }   // the request has reached the server
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(ContinuousClock.now - start < .seconds(10))
    }

    @Test func fetchByURLCachesAndASecondFetchDoesNotReachTheServer() async throws {
        let server = try await Self.startServer()
        defer { Task { await server.shutdown() } }
        let directory = try TemporaryDirectory()
        let cache = Cache<JSON>(name: "network", directory: directory.path)
        let url = server.baseURL.appendingPathComponent("documents/1")

        #expect(try await cache.fetch(url: url)["path"]?.string == "/documents/1")
        #expect(try await cache.fetch(url: url)["path"]?.string == "/documents/1")
        #expect(server.requestCount(path: "/documents/1") == 1)
        #expect(try await cache.fetch(key: url.absoluteString)["path"]?.string == "/documents/1")
    }

    @Test func aFailedResponseIsNotCached() async throws {
        let server = try await Self.startServer()
        defer { Task { await server.shutdown() } }
        let directory = try TemporaryDirectory()
        let cache = Cache<JSON>(name: "network", directory: directory.path)
        let url = server.baseURL.appendingPathComponent("status/404")

        for _ in 0..<2 {
            let error = await #expect(throws: StoreError.self) { try await cache.fetch(url: url) }
            #expect(error?.statusCode == 404)
        }
        #expect(server.requestCount(path: "/status/404") == 2)
        await #expect(throws: StoreError.self) { try await cache.fetch(key: url.absoluteString) }
        #expect(await cache.size == 0)
    }

    @Test func concurrentFetchesOfOneURLMakeOneRequest() async throws {
        let server = try await Self.startServer()
        defer { Task { await server.shutdown() } }
        let directory = try TemporaryDirectory()
        let cache = Cache<Data>(name: "network", directory: directory.path)
        let url = server.baseURL.appendingPathComponent("shared")
        try await withThrowingTaskGroup(of: Data.self) { group in
            for _ in 0..<50 { group.addTask { try await cache.fetch(url: url) } }
            for try await body in group { #expect(body == Data(#"{"path":"/shared"}"#.utf8)) }
        }
        #expect(server.requestCount(path: "/shared") == 1)
    }
}
