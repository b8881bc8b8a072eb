// The examples of the DocC articles (once the README's tour), run against temporary folders and a private redis-server, so that they
// keep working. That every block compiles exactly as written is checked by scripts/check-snippets
// (make test), which builds each one in a scratch package.

import Foundation
import Haneke
import HanekeTesting
import RedisStore
import Testing
import TestSupport

struct Greeting: Codable, Hashable, Sendable, DataConvertible, DataRepresentable {
    var text: String
    var language: String
}

@Sendable func loadArticle(_ key: String) async throws -> JSON {
    ["title": .string("Article \(key)"), "body": "A long text."]
}

// Off the pool, as every suite that calls the synchronous FileStore API: the README's examples open
// stores with `try FileStore(directory:)`, which scans its folder and rewrites its journal (the
// blocking watchdog caught testDoubles asleep 6 ms in that on a cooperative thread).
@Suite(.offThePool)
struct ReadmeExamplesTests {
    @Test func customStacks() async throws {
        let hot = MemoryStore<String, Greeting>(countLimit: 2, name: "hot")
        let warm = MemoryStore<String, Data>(costLimit: 1 << 20, name: "warm")
        let greetings = hot
            .chained(to: warm.coded(as: Greeting.self))
            .fetching { name in
                try await Task.sleep(for: .milliseconds(20))   // a slow source: the network, a database
                return Greeting(text: "Hello, \(name)!", language: "en")
            }

        let greeting = try await greetings.fetch("alice")   // hot → warm → fetcher, then back-filled
        for layer in greetings.layerStatistics { print(layer) }

        #expect(greeting.text == "Hello, alice!")
        #expect(greetings.layerStatistics.map(\.name) == ["hot", "warm", "fetcher"])
    }

    @Test(.tags(.disk)) func aStackOnDisk() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path   // "/var/cache/greetings" in the README
        let disk = try FileStore(directory: path, capacity: 200 << 20)
        let greetingsOnDisk = MemoryStore<String, Greeting>(countLimit: 1_000)
            .chained(to: disk.compressed().coded(as: Greeting.self))

        try await greetingsOnDisk.setValue(Greeting(text: "Hi", language: "en"), forKey: "bob")
        #expect(disk.keys() == ["bob"])
        #expect(try await greetingsOnDisk.value(forKey: "bob")?.text == "Hi")
    }

    @Test(.tags(.disk)) func formatsRun() async throws {
        let directory = try TemporaryDirectory()
        let articles = Cache<JSON>(name: "articles", directory: directory.path)
        var summaries = Format<JSON>(name: "summary", diskCapacity: 10 << 20) { article in
            ["title": article["title"] ?? .null]
        }
        summaries.preloadPolicy = .lastSession
        articles.addFormat(summaries)
        let summary = try await articles.fetch(key: "42", formatName: "summary") { key in
            try await loadArticle(key)
        }
        #expect(summary == ["title": "Article 42"])
    }

    @Test(.tags(.disk)) func aCompressedDisk() async throws {
        let directory = try TemporaryDirectory()
        let compressedDisk = try FileStore(directory: directory.path, capacity: 500 << 20)
            .compressed(.init(level: .fast, decompressionLimit: 16 << 20))
        try await compressedDisk.setValue(Data("hello".utf8), forKey: "k")
        #expect(try await compressedDisk.value(forKey: "k") == Data("hello".utf8))
    }

    @Test(.tags(.redis, .process, .disk)) func aSharedTierOnRedisRuns() async throws {
        let server = try await RedisTestServer()
        try await withServer(server, shutdown: { await $0.stop() }) { server in
            let directory = try TemporaryDirectory()
            var configuration = try RedisStore.Configuration(url: server.url, keyPrefix: "images:")   // the README's URL
            configuration.timeToLive = .seconds(7 * 24 * 3600)
            let images = MemoryStore<String, Data>(costLimit: 64 << 20)
                .chained(to: try FileStore(directory: directory.path, capacity: 1 << 30).compressed())
                .chained(to: RedisStore(configuration: configuration))
                .fetching { url in Data("the image at \(url)".utf8) }   // NetworkFetcher<Data>() in the README

            #expect(try await images.fetch("https://example.com/a.png") == Data("the image at https://example.com/a.png".utf8))
            let redis = images.layerStatistics[2]
            #expect(redis.name == "redis")
            #expect(redis.statistics.misses == 1 && redis.statistics.writes == 1)
        }
    }

    @Test(.tags(.redis, .process), .timeLimit(.minutes(2))) func aRedisTestServer() async throws {
        let server = try await RedisTestServer()      // a free loopback port, no persistence, a temporary folder
        try await withServer(server, shutdown: { await $0.stop() }) { server in
            let redis = try RedisStore(url: server.url, keyPrefix: "test:")
            try await redis.setValue(Data("v".utf8), forKey: "k")
            await server.kill()                            // a crash: operations throw `unavailable` at once
            await #expect {
                _ = try await redis.value(forKey: "k")
            } throws: { error in
                (error as? StoreError)?.code == .unavailable
            }
            try await server.start()                       // back, empty, on the same port
            while (try? await redis.ping()) == nil {           // the store reconnects by itself (the time
                try await Task.sleep(for: .milliseconds(20))   // limit ends a wait that never ends)
            }
            #expect(try await redis.value(forKey: "k") == nil)
        }
    }

    @Test func myStoreBehavesLikeAStore() async throws {
        // Put your own store here; each check gets a new, empty one.
        try await StoreConformanceSuite { MemoryStore<String, Data>(countLimit: 10_000) }.run()
    }

    @Test(.tags(.disk)) func testDoubles() throws {
        let disk = FailingStore(wrapping: MemoryStore<String, Data>(), failing: [.read])   // a broken disk
        let spy = RecordingStore(wrapping: MemoryStore<String, Data>())                      // logs every call
        let clock = TestClock()                                                              // TTL without sleeping
        let scratch = try TemporaryStore { try FileStore(directory: $0.path) }             // files, removed after
        #expect(scratch.base.count == 0)
        #expect(disk.failingOperations == [.read])
        #expect(spy.calls.isEmpty)
        let start = clock.now()
        clock.advance(by: .seconds(61))
        #expect(clock.now() == start.addingTimeInterval(61))
    }
}
