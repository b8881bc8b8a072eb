import Foundation
import HTTPCaching
@testable import HanekeProxy
import HanekeTesting
import LoopbackHTTPServer
import MemoryStore
import NIOCore
import NIOPosix
import Synchronization
import TestSupport

/// A real origin on loopback whose answers a test sets, and which records what it was asked.
final class Origin: Sendable {
    private let answers = Mutex<[LoopbackHTTPServer.Response]>([])
    private let received = Mutex<[LoopbackHTTPServer.Request]>([])

    /// Answers with `responses` in turn; the last one repeats.
    func answer(_ responses: LoopbackHTTPServer.Response...) {
        answers.withLock { $0 = responses }
    }

    /// The requests received so far.
    var requests: [LoopbackHTTPServer.Request] { received.withLock { $0 } }

    fileprivate func respond(to request: LoopbackHTTPServer.Request) -> LoopbackHTTPServer.Response {
        received.withLock { $0.append(request) }
        return answers.withLock { answers in
            guard let first = answers.first else { return LoopbackHTTPServer.Response(status: 500) }
            if answers.count > 1 { answers.removeFirst() }
            return first
        }
    }
}

/// A response with the given fields and body.
func origin(_ status: Int = 200, _ headers: [(String, String)], body: String = "body") -> LoopbackHTTPServer.Response {
    LoopbackHTTPServer.Response(status: status, body: Data(body.utf8), headers: headers)
}

/// A proxy (a shared cache in memory, on a test clock) in front of a real origin.
struct ProxyFixture: Sendable {
    let origin: Origin
    let server: LoopbackHTTPServer
    let clock: TestClock
    let proxy: CachingProxy<MemoryStore<String, Data>>

    /// Runs `body` with a new fixture (a cache of `kind`, or of `policy` when given), then shuts
    /// the origin down.
    static func run(
        kind: HTTPCachePolicy.Kind = .shared, policy: HTTPCachePolicy? = nil,
        configuration: CachingProxy<MemoryStore<String, Data>>.Configuration = .init(), _ body: (ProxyFixture) async throws -> Void
    ) async throws {
        let origin = Origin()
        let server = try await LoopbackHTTPServer.start { origin.respond(to: $0) }
        try await withServer(server, shutdown: { await $0.shutdown() }) { server in
            let clock = TestClock()
            let memory = MemoryStore<String, Data>(clock: clock)
            let cache = HTTPCache(storage: memory, policy: policy ?? HTTPCachePolicy(kind: kind), clock: clock)
            let proxy = try CachingProxy(
                upstream: server.baseURL, cache: cache, group: try await sharedEventLoops(), configuration: configuration, peek: { memory.entry(forKey: $0) }
            )
            let fixture = ProxyFixture(origin: origin, server: server, clock: clock, proxy: proxy)
            do {
                try await body(fixture)
            } catch {
                await proxy.shutdown()
                throw error
            }
            await proxy.shutdown()
        }
    }

    /// Asks the proxy for `target`, as a client at `peer`.
    func get(_ target: String = "/resource", method: String = "GET", _ headers: [(String, String)] = [], peer: String? = nil) async -> ProxyResponse {
        await proxy.respond(to: ProxyRequest(method: method, target: target, headers: HTTPHeaderFields(headers), peer: peer))
    }
}

extension LoopbackHTTPServer.Request {
    /// The values of the fields named `name`.
    func values(_ name: String) -> [String] {
        headers.filter { $0.0.lowercased() == name.lowercased() }.map(\.1)
    }
}

extension ProxyResponse {
    /// The body as text.
    var text: String { String(buffer: body) }
    /// The `Cache-Status` field.
    var cacheStatus: String? { headers["Cache-Status"] }
}
