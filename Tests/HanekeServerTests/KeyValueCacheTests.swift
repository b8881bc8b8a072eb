import Foundation
import Haneke
import HanekeProtocols
import HanekeServer
import HanekeTesting
import Testing
import TestSupport

struct Session: Codable, Sendable, Equatable {
    var user: String
    var visits: Int
}

@Suite(.timeLimit(.minutes(1)), .tags(.disk))
struct KeyValueCacheTests {
    let directory: TemporaryDirectory
    let clock = TestClock()

    init() throws {
        directory = try TemporaryDirectory(prefix: "key-value")
    }

    func makeCache(_ configuration: KeyValueCache.Configuration = .init()) -> KeyValueCache {
        KeyValueCache(name: "kv", directory: directory.appending("kv"), configuration: configuration, clock: clock)
    }

    @Test func valuesOfAnyCodableTypeRoundTrip() async throws {
        let cache = makeCache()
        try await cache.set("session", to: Session(user: "ada", visits: 3))
        try await cache.set("count", to: 42)
        try await cache.set("name", to: "Ada")
        #expect(try await cache.get("session", as: Session.self) == Session(user: "ada", visits: 3))
        #expect(try await cache.get("count", as: Int.self) == 42)
        #expect(try await cache.get("name", as: String.self) == "Ada")
        #expect(try await cache.get("missing", as: Int.self) == nil)
    }

    @Test func aLifetimeHoldsToTheMillisecondInMemoryAndOnDisk() async throws {
        let cache = makeCache()
        try await cache.set("token", to: "t", timeToLive: .milliseconds(1_500))
        clock.advance(by: .milliseconds(1_499))
        #expect(try await cache.getWithTimeToLive("token", as: String.self)?.timeToLive == .milliseconds(1))
        cache.cache.removeAllFromMemory()
        #expect(try await cache.get("token", as: String.self) == "t")
        clock.advance(by: .milliseconds(2))
        #expect(try await cache.get("token", as: String.self) == nil)
        #expect(try await cache.getWithTimeToLive("token", as: String.self) == nil)
    }

    @Test func anOverwriteWithoutALifetimeDropsOrKeepsTheOldOneAsAsked() async throws {
        let cache = makeCache()
        try await cache.set("dropped", to: 1, timeToLive: .seconds(10))
        try await cache.set("dropped", to: 2)
        try await cache.set("kept", to: 1, timeToLive: .seconds(10))
        clock.advance(by: .seconds(4))
        try await cache.set("kept", to: 2, overwrite: .keep)
        #expect(try await cache.getWithTimeToLive("kept", as: Int.self)?.timeToLive == .seconds(6))
        clock.advance(by: .seconds(7))
        #expect(try await cache.get("dropped", as: Int.self) == 2)
        #expect(try await cache.get("kept", as: Int.self) == nil)
        // A lifetime given replaces the old one either way.
        try await cache.set("kept", to: 3, timeToLive: .seconds(1))
        try await cache.set("kept", to: 4, timeToLive: .seconds(100), overwrite: .keep)
        #expect(try await cache.getWithTimeToLive("kept", as: Int.self)?.timeToLive == .seconds(100))
    }

    @Test func createAddsOnlyWhenTheKeyHasNoUnexpiredValue() async throws {
        let cache = makeCache()
        #expect(try await cache.create("lock", value: "first", timeToLive: .seconds(5)))
        #expect(try await cache.create("lock", value: "second") == false)
        cache.cache.removeAllFromMemory()
        #expect(try await cache.create("lock", value: "third") == false)
        #expect(try await cache.get("lock", as: String.self) == "first")
        clock.advance(by: .seconds(6))
        #expect(try await cache.create("lock", value: "fourth"))
        #expect(try await cache.get("lock", as: String.self) == "fourth")
    }

    @Test func concurrentCreatesOfOneKeyLetExactlyOneIn() async throws {
        let cache = makeCache()
        let winners = try await withThrowingTaskGroup(of: Bool.self) { group in
            for index in 0..<50 { group.addTask { try await cache.create("once", value: index) } }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(winners == 1)
    }

    @Test func removalRemovesFromEveryLayer() async throws {
        let cache = makeCache()
        try await cache.set("k", to: 1)
        try await cache.remove("k")
        try await cache.remove("never-there")
        #expect(try await cache.get("k", as: Int.self) == nil)
        let restarted = makeCache()
        #expect(try await restarted.get("k", as: Int.self) == nil)
    }

    @Test func aValueReadAsAnotherTypeIsADecodingErrorNamingTheKey() async throws {
        let cache = makeCache()
        try await cache.set("count", to: 42)
        let error = await #expect(throws: StoreError.self) { try await cache.get("count", as: Session.self) }
        #expect(error?.code == .decoding)
        #expect(error?.message.contains("count") == true)
        #expect(error?.message.contains("Session") == true)
    }

    @Test func valuesAndLifetimesSurviveARestart() async throws {
        let cache = makeCache()
        for index in 0..<200 { try await cache.set("key-\(index)", to: index, timeToLive: index.isMultiple(of: 2) ? .seconds(60) : nil) }
        try await cache.shutdown()
        let restarted = makeCache()
        for index in 0..<200 { #expect(try await restarted.get("key-\(index)", as: Int.self) == index) }
        clock.advance(by: .seconds(61))
        #expect(try await restarted.get("key-0", as: Int.self) == nil)
        #expect(try await restarted.get("key-1", as: Int.self) == 1)
    }

    @Test func theDiskOfABoundedCacheEvictsAndOneThatNeverEvictsKeepsEverything() async throws {
        // 150 values of 1 KiB of JSON each, through a memory layer of 16 KiB and a disk of 64 KiB.
        // Eight at a time: one after another, each operation's hops wait in line for Swift's
        // two cooperative threads behind every other suite's jobs (30 ms on average, up to a
        // second, beside a CPU hog), and 600 such operations in a row once took past the time
        // limit (the first 25 writes 21 s, with no job waiting for the I/O executor).
        let big = String(repeating: "x", count: 1_000)
        let count = 150
        for eviction in [KeyValueCache.Eviction.bounded, .never] {
            let cache = KeyValueCache(
                name: "kv-\(eviction)", directory: directory.appending("kv-\(eviction)"),
                configuration: .init(memoryCostLimit: 16 << 10, diskCapacity: 64 << 10, eviction: eviction, smallValueThreshold: 0),
                clock: clock
            )
            try await forEach(0..<count, atOnce: 8) { try await cache.set("key-\($0)", to: big) }
            let kept = Locked(0)
            try await forEach(0..<count, atOnce: 8) { index in
                if try await cache.get("key-\(index)", as: String.self) == big { kept.withLock { $0 += 1 } }
            }
            let keptCount = kept.withLock { $0 }
            if eviction == .never {
                #expect(keptCount == count)
            } else {
                #expect(keptCount < count)
                #expect(keptCount > 0)
            }
        }
    }

    @Test func storeErrorsMapToTheStatusesAGatewayAnswersWith() {
        #expect(StoreError(.notFound, "no key k").httpStatus == 404)
        #expect(StoreError(.invalidStatusCode, "GET /x answered 404", statusCode: 404).httpStatus == 404)
        #expect(StoreError(.invalidStatusCode, "GET /x answered 410", statusCode: 410).httpStatus == 410)
        #expect(StoreError(.invalidStatusCode, "GET /x answered 500", statusCode: 500).httpStatus == 502)
        #expect(StoreError(.invalidStatusCode, "GET /x answered 401", statusCode: 401).httpStatus == 502)
        #expect(StoreError(.timeout, "GET /x took too long").httpStatus == 504)
        #expect(StoreError(.unavailable, "the disk cannot be used").httpStatus == 503)
        #expect(StoreError(.io, "Could not read /srv/cache/x").httpStatus == 500)
        #expect(StoreError(.io, "Could not read /srv/cache/x").httpMessage.contains("/srv") == false)
        #expect(StoreError(.notFound, "no key k").httpMessage == "no key k")
    }
}
