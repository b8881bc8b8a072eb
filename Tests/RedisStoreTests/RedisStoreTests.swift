import Foundation
import HanekeProtocols
import HanekeTesting
import NIOCore
@testable import RedisStore
import MemoryStore
import Testing
import TestSupport

/// RedisStore against a real redis-server.
@Suite(.tags(.redis))
struct RedisStoreTests {
    @Test func conformsToStore() async throws {
        let url = try await SharedRedis.url()
        try await StoreConformanceSuite {
            try RedisStore(url: url, keyPrefix: SharedRedis.uniquePrefix("conformance"))
        }.run()
    }

    /// A memory tier in front of Redis, both on one moving clock: lifetimes, metadata and
    /// add-if-absent through the chain, Redis deciding the adds.
    @Test func aMemoryTierInFrontOfRedisConformsWithLifetimes() async throws {
        let url = try await SharedRedis.url()
        let clock = TestClock()
        var suite = StoreConformanceSuite {
            let configuration = try RedisStore.Configuration(url: url, keyPrefix: SharedRedis.uniquePrefix("conformance-chain"))
            return MemoryStore<String, Data>(clock: clock).chained(to: RedisStore(configuration: configuration, clock: clock))
        }
        suite.clock = clock
        try await suite.run()
    }

    @Test func conformsToStoreWithOneConnectionAndSmallScanBatches() async throws {
        let url = try await SharedRedis.url()
        try await StoreConformanceSuite {
            var configuration = try RedisStore.Configuration(url: url, keyPrefix: SharedRedis.uniquePrefix("conformance1"))
            configuration.connectionCount = 1
            configuration.scanCount = 3
            return RedisStore(configuration: configuration)
        }.run()
    }

    /// The longest durations a configuration can hold are clamped, never a trap: a lifetime of
    /// `Int64.max` seconds keeps values without `PX`, timeouts that long are no limit.
    @Test func conformsWithTheLongestLifetimeAndTimeouts() async throws {
        let url = try await SharedRedis.url()
        try await StoreConformanceSuite {
            var configuration = try RedisStore.Configuration(url: url, keyPrefix: SharedRedis.uniquePrefix("conformance-long"))
            configuration.timeToLive = .seconds(Int64.max)
            configuration.connectTimeout = .seconds(Int64.max)
            configuration.commandTimeout = .seconds(Int64.max)
            configuration.maximumReconnectDelay = .seconds(Int64.max)
            return RedisStore(configuration: configuration)
        }.run()
    }

    @Test func keepsBinaryEmptyAndLargeValuesAndAnyKey() async throws {
        let store = try await SharedRedis.store()
        // 3 MiB of seeded noise costs a second of CPU in a debug build: made off the cooperative pool.
        let large = try await offThePool {
            var random = SeededRandomNumberGenerator(seed: 8)
            return Data((0..<(3 << 20)).map { _ in UInt8.random(in: 0...255, using: &random) })
        }
        let samples: [(String, Data)] = [
            ("empty", Data()),
            ("crlf", Data("a\r\nb\r\n$5\r\n*1\r\n".utf8)),
            ("zeros", Data(repeating: 0, count: 4096)),
            ("large", large),
            ("clé avec espaces et ünïcödé 🗝", Data("unicode".utf8)),
            ("glob*?[chars]\\", Data("glob".utf8)),
            ("", Data("the empty key".utf8)),
        ]
        for (key, value) in samples { try await store.setValue(value, forKey: key) }
        for (key, value) in samples { #expect(try await store.value(forKey: key) == value, "\(key)") }
        #expect(store.statistics.writes == samples.count)
        #expect(store.statistics.hits == samples.count)
    }

    @Test func storesKeysUnderThePrefix() async throws {
        let store = try await SharedRedis.store()
        try await store.setValue(Data("v".utf8), forKey: "k")
        let reply = try await store.command("GET", store.redisKey(for: "k"))
        // The value in its envelope: a 28-byte header, no metadata, then the value.
        guard case .bulkString(let bytes?) = reply else {
            Issue.record("GET did not answer a bulk string: \(reply)")
            return
        }
        #expect(bytes.readableBytes == 29 && bytes.readableBytesView.last == UInt8(ascii: "v"))
        #expect(try Envelope.decode(bytes).valueOffset == 28)
        #expect(store.redisKey(for: "k") == store.configuration.keyPrefix + "k")
    }

    @Test func aTimeToLiveBecomesSetPX() async throws {
        let store = try await SharedRedis.store { $0.timeToLive = .seconds(90) }
        try await store.setValue(Data("v".utf8), forKey: "k")
        guard case .integer(let remaining) = try await store.command("PTTL", store.redisKey(for: "k")) else {
            Issue.record("PTTL did not answer an integer")
            return
        }
        #expect(remaining > 80_000 && remaining <= 90_000)

        let forever = try await SharedRedis.store()
        try await forever.setValue(Data("v".utf8), forKey: "k")
        #expect(try await forever.command("PTTL", forever.redisKey(for: "k")) == .integer(-1))
    }

    @Test func aTimeToLiveThatIsNotPositiveIsAClearErrorAndACenturyIsForever() async throws {
        for ttl: Duration in [.zero, .seconds(-5)] {
            let store = try await SharedRedis.store { $0.timeToLive = ttl }
            await #expect {
                try await store.setValue(Data("v".utf8), forKey: "k")
            } throws: { error in
                guard let error = error as? StoreError else { return false }
                return error.code == .invalidConfiguration && error.message.contains("must be positive")
            }
            #expect(try await store.value(forKey: "k") == nil)
        }
        // Durations too long for Redis's expiry arithmetic mean "never expires", not a crash.
        let forever = try await SharedRedis.store { $0.timeToLive = .seconds(Int64.max) }
        try await forever.setValue(Data("v".utf8), forKey: "k")
        #expect(try await forever.command("PTTL", forever.redisKey(for: "k")) == .integer(-1))
    }

    /// Redis deletes the value after a millisecond: the test waits for Redis to say so (`PTTL` -2),
    /// not for a fixed time, then the store misses; a value that never expires fails it by the
    /// time limit.
    @Test(.timeLimit(.minutes(2))) func anExpiredValueIsAMiss() async throws {
        let store = try await SharedRedis.store { $0.timeToLive = .milliseconds(1) }
        try await store.setValue(Data("v".utf8), forKey: "k")
        // Redis's clock decides when the key is gone, not this process's: wait for its answer (a
        // fresh machine's first run compared the two and failed), then the store must miss.
        while try await store.command("PTTL", store.redisKey(for: "k")) != .integer(-2) {
            try await Task.sleep(for: .milliseconds(1))
        }
        #expect(try await store.value(forKey: "k") == nil)
    }

    /// `removeAll()` removes its namespace only — even when the prefix holds glob characters and
    /// another namespace is the same text without the escaping — and works in batches.
    @Test func removeAllRemovesOnlyTheNamespace() async throws {
        let url = try await SharedRedis.url()
        let base = SharedRedis.uniquePrefix("namespace")
        var configuration = try RedisStore.Configuration(url: url, keyPrefix: base + "a*[b]?\\:")
        configuration.scanCount = 7
        let tricky = RedisStore(configuration: configuration)
        let lookalike = try RedisStore(url: url, keyPrefix: base + "aX[b]Y\\:")   // what a*…? would match unescaped
        let neighbour = try RedisStore(url: url, keyPrefix: base + "b:")
        let outside = try RedisStore(url: url, keyPrefix: base)

        for i in 0..<100 { try await tricky.setValue(Data("\(i)".utf8), forKey: "key\(i)") }
        try await lookalike.setValue(Data("keep".utf8), forKey: "key1")
        try await neighbour.setValue(Data("keep".utf8), forKey: "key1")
        try await outside.setValue(Data("keep".utf8), forKey: "unrelated")

        try await tricky.removeAll()

        for i in 0..<100 { #expect(try await tricky.value(forKey: "key\(i)") == nil) }
        #expect(try await lookalike.value(forKey: "key1") == Data("keep".utf8))
        #expect(try await neighbour.value(forKey: "key1") == Data("keep".utf8))
        #expect(try await outside.value(forKey: "unrelated") == Data("keep".utf8))
        try await tricky.setValue(Data("again".utf8), forKey: "key1")
        #expect(try await tricky.value(forKey: "key1") == Data("again".utf8))

        for store in [lookalike, neighbour, outside] { try await store.removeAll() }
        #expect(try await outside.value(forKey: "unrelated") == nil)
    }

    /// Against a real server, `removeAll()` within the default round limit removes every key of
    /// its namespace; with a limit too low for the database it stops with an error, having
    /// removed only some.
    @Test func removeAllRemovesEveryKeyWithinTheRoundLimit() async throws {
        let url = try await SharedRedis.url()
        var configuration = try RedisStore.Configuration(url: url, keyPrefix: SharedRedis.uniquePrefix("rounds"))
        configuration.scanCount = 10
        let store = RedisStore(configuration: configuration)
        configuration.maximumScanRounds = 2
        let limited = RedisStore(configuration: configuration)
        let keys = (0..<1000).map { "key\($0)" }
        func stored() async throws -> Int {
            var count = 0
            for key in keys where try await store.value(forKey: key) != nil { count += 1 }
            return count
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    for key in keys[(task * 125)..<(task * 125 + 125)] { try await store.setValue(Data([1]), forKey: key) }
                }
            }
            try await group.waitForAll()
        }

        // 1000 keys and more in the database, about 10 a round: two rounds cannot reach them all.
        await #expect {
            try await limited.removeAll()
        } throws: { error in
            (error as? StoreError)?.code == .io && "\(error)".contains("has not ended after 2 SCAN rounds")
        }
        #expect(try await stored() > 0)

        try await store.removeAll()
        #expect(try await stored() == 0)
    }

    /// Many commands in flight on few connections: each connection pipelines, and every task reads
    /// its own writes.
    @Test func manyConcurrentCommandsShareTheConnections() async throws {
        let store = try await SharedRedis.store { $0.connectionCount = 2 }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<32 {
                group.addTask {
                    for round in 0..<25 {
                        let key = "t\(task)-\(round % 5)"
                        let value = Data("\(task):\(round)".utf8)
                        try await store.setValue(value, forKey: key)
                        #expect(try await store.value(forKey: key) == value)
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(store.pool.connectionsOpened == 2)
        #expect(store.statistics.writes == 800)
        #expect(store.statistics.hits == 800)
        #expect(store.statistics.errors == 0)
    }

    /// One request at a time still opens every connection of the pool, in the background. The
    /// test waits for the fourth connection however long the machine takes (it once took 7–10.6 s
    /// under load), request after request; a pool that never grows fails it by the time limit.
    @Test(.timeLimit(.minutes(2))) func thePoolGrowsToItsSize() async throws {
        let store = try await SharedRedis.store()
        var requests = 0
        while store.pool.openConnections < 4 {
            _ = try await store.value(forKey: "k")
            requests += 1
            try Task.checkCancellation()   // the time limit ends the loop
            await Task.yield()
        }
        #expect(store.pool.openConnections == 4)
        #expect(store.pool.connectionsOpened == 4, "no connection opened beyond the pool's size after \(requests) requests")
    }

    @Test func countsHitsMissesWritesAndRemovals() async throws {
        let store = try await SharedRedis.store()
        try await store.setValue(Data([1]), forKey: "a")
        _ = try await store.value(forKey: "a")
        _ = try await store.value(forKey: "b")
        try await store.removeValue(forKey: "a")
        try await store.removeValue(forKey: "a")
        #expect(store.layerStatistics == [LayerStatistics(name: "redis", statistics: StoreStatistics(hits: 1, misses: 1, writes: 1, removals: 2))])
    }

    @Test func anErrorReplyIsAnIOErrorNamingTheKey() async throws {
        let store = try await SharedRedis.store()
        _ = try await store.command("RPUSH", store.redisKey(for: "list"), "x")
        await #expect {
            _ = try await store.value(forKey: "list")
        } throws: { error in
            guard let error = error as? StoreError else { return false }
            return error.code == .io && error.message.contains("key list on Redis at") && "\(error)".contains("WRONGTYPE")
        }
        #expect(store.statistics.errors == 1)
        try await store.removeAll()
    }

    @Test func pingAnswersAndShutdownMakesTheStoreUnavailable() async throws {
        let store = try await SharedRedis.store()
        try await store.ping()
        store.shutdown()
        await #expect {
            try await store.setValue(Data(), forKey: "k")
        } throws: { error in
            (error as? StoreError)?.code == .unavailable && "\(error)".contains("shut down")
        }
    }

    // MARK: - Logging in and choosing a database (servers of their own)

    @Test(.tags(.process)) func logsInWithAPassword() async throws {
        let server = try await RedisTestServer(arguments: ["--requirepass", "s3cret pass"])
        try await withServer(server, shutdown: { await $0.stop() }) { server in
            let store = try RedisStore(url: "redis://:s3cret%20pass@127.0.0.1:\(server.port)", keyPrefix: "p:")
            try await store.setValue(Data("v".utf8), forKey: "k")
            #expect(try await store.value(forKey: "k") == Data("v".utf8))

            let wrong = try RedisStore(url: "redis://:nope@127.0.0.1:\(server.port)", keyPrefix: "p:")
            await #expect {
                _ = try await wrong.value(forKey: "k")
            } throws: { error in
                guard let error = error as? StoreError else { return false }
                return error.code == .authentication && "\(error)".contains("refused AUTH") && !"\(error)".contains("nope")
            }
            let anonymous = try RedisStore(url: "redis://127.0.0.1:\(server.port)", keyPrefix: "p:")
            await #expect {
                _ = try await anonymous.value(forKey: "k")
            } throws: { error in
                (error as? StoreError)?.code == .authentication && "\(error)".contains("NOAUTH")
            }
        }
    }

    @Test(.tags(.process)) func logsInAsAnACLUserAndSelectsTheDatabase() async throws {
        let server = try await RedisTestServer(arguments: [
            "--user", "default", "off",
            "--user", "cache", "on", ">wonder@land", "~haneke:*", "+@all",
        ])
        try await withServer(server, shutdown: { await $0.stop() }) { server in
            let inTwo = try RedisStore(url: "redis://cache:wonder%40land@127.0.0.1:\(server.port)/2")
            let inZero = try RedisStore(url: "redis://cache:wonder%40land@127.0.0.1:\(server.port)/0")
            try await inTwo.setValue(Data("two".utf8), forKey: "k")
            #expect(try await inTwo.value(forKey: "k") == Data("two".utf8))
            #expect(try await inZero.value(forKey: "k") == nil)
            #expect(try await inTwo.command("CLIENT", "INFO").text?.contains("db=2") == true)
            #expect(try await inTwo.command("ACL", "WHOAMI").text == "cache")

            // The user may only touch keys under haneke:, which Redis enforces.
            let elsewhere = try RedisStore(url: "redis://cache:wonder%40land@127.0.0.1:\(server.port)/2", keyPrefix: "other:")
            await #expect {
                try await elsewhere.setValue(Data(), forKey: "k")
            } throws: { error in
                (error as? StoreError)?.code == .io && "\(error)".contains("NOPERM")
            }
            let wrongUser = try RedisStore(url: "redis://mallory:wonder%40land@127.0.0.1:\(server.port)")
            await #expect {
                try await wrongUser.ping()
            } throws: { error in
                (error as? StoreError)?.code == .authentication && "\(error)".contains("WRONGPASS")
            }
        }
    }

    @Test func aDatabaseThatDoesNotExistIsReported() async throws {
        let url = try await SharedRedis.url()
        var configuration = try RedisStore.Configuration(url: url)
        configuration.database = 99
        let store = RedisStore(configuration: configuration)
        await #expect {
            try await store.ping()
        } throws: { error in
            (error as? StoreError)?.code == .unavailable && "\(error)".contains("refused SELECT")
        }
    }
}
