import Dispatch
import Foundation
import HanekeTesting
import LoopbackHTTPServer
@testable import RedisStorePeer
import Testing
import TestSupport

/// Two processes — two "machines", each with its own memory and disk tiers — share one Redis: what
/// one fetched is a Redis hit for the other, and the origin is asked once.
@Suite(.tags(.redis, .process, .disk, .slow))
struct SharedTierTests {
    @Test func aValueFetchedByOneProcessIsARedisHitForTheOther() async throws {
        let redisURL = try await SharedRedis.url()
        let prefix = SharedRedis.uniquePrefix("fleet")
        let origin = try await LoopbackHTTPServer.start { request in
            LoopbackHTTPServer.Response(body: Data("the document at \(request.uri)".utf8))
        }
        try await withServer(origin, shutdown: { await $0.shutdown() }) { origin in
            let urls = (0..<20).map { "\(origin.baseURL.absoluteString)/documents/\($0)" }
            let firstMachine = try TemporaryDirectory()
            let secondMachine = try TemporaryDirectory()

            let first = try await Self.runPeer(redisURL, prefix, firstMachine.path, urls)
            let second = try await Self.runPeer(redisURL, prefix, secondMachine.path, urls)

            // The origin was asked once per document, by the first machine.
            #expect(origin.requestCount == urls.count)
            for index in 0..<urls.count { #expect(origin.requestCount(path: "/documents/\(index)") == 1) }
            for report in [first, second] {
                for url in urls { #expect(report.values[url] == "the document at \(URL(string: url)!.path)") }
            }
            #expect(first.layer("fetcher")?.hits == urls.count)
            #expect(first.layer("redis")?.misses == urls.count)
            #expect(first.layer("redis")?.writes == urls.count)
            // The second machine's own tiers were empty: every value came from Redis.
            #expect(second.layer("memory")?.hits == 0)
            #expect(second.layer("file")?.hits == 0)
            #expect(second.layer("redis")?.hits == urls.count)
            #expect(second.layer("fetcher")?.hits == 0)
            #expect(second.layer("redis")?.errors == 0)
        }
    }

    /// Runs the peer executable and decodes its report (the wait suspends; no thread is held,
    /// and the origin server needs Swift's threads meanwhile).
    static func runPeer(_ redisURL: String, _ prefix: String, _ directory: String, _ urls: [String]) async throws -> Report {
        let outcome = try await ChildProcess.run(ChildProcess.binary("RedisStorePeer"), [redisURL, prefix, directory] + urls)
        guard outcome.status == 0 else { throw PeerFailure(status: outcome.status, stderr: outcome.stderr) }
        return try JSONDecoder().decode(Report.self, from: outcome.stdout)
    }

    struct PeerFailure: Error, CustomStringConvertible {
        var status: Int32
        var stderr: String
        var description: String { "RedisStorePeer exited with status \(status): \(stderr)" }
    }
}
