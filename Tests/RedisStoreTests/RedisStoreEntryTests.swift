import Foundation
import HanekeProtocols
import HanekeTesting
import NIOCore
@testable import RedisStore
import Testing
import TestSupport

/// Entries with their own expiry, time stored and metadata (issue 26) against a real
/// redis-server, on a test clock; and the plain values 0.3.0 stored.
@Suite(.tags(.redis))
struct RedisStoreEntryTests {
    /// 2026-01-01T00:00:00Z, where `TestClock` starts.
    static let start = Date(timeIntervalSince1970: 1_767_225_600)

    func store(
        _ label: String = "entries", clock: any StoreClock = TestClock(), prefix: String? = nil,
        configure: (inout RedisStore.Configuration) -> Void = { _ in }
    ) async throws -> RedisStore {
        var configuration = try RedisStore.Configuration(url: try await SharedRedis.url(), keyPrefix: prefix ?? SharedRedis.uniquePrefix(label))
        configure(&configuration)
        return RedisStore(configuration: configuration, clock: clock)
    }

    /// The milliseconds Redis will keep `key` (`PTTL`): -1 for no expiry, -2 for no key.
    func timeLeft(_ key: String, in store: RedisStore) async throws -> Int64 {
        guard case .integer(let left) = try await store.command("PTTL", store.redisKey(for: key)) else {
            throw StoreError(.io, "PTTL did not answer an integer")
        }
        return left
    }

    /// Stores `bytes` under `key` as 0.3.0 did: the value itself, with a raw `SET`.
    func setRaw(_ bytes: String, forKey key: String, in store: RedisStore) async throws {
        #expect(try await store.command("SET", store.redisKey(for: key), bytes) == .simpleString("OK"))
    }

    // MARK: - Attributes

    @Test func anEntryKeepsItsExpiryTimeStoredAndMetadata() async throws {
        let clock = TestClock()
        let store = try await store(clock: clock)
        let attributes = EntryAttributes(expiresAt: Self.start + 60, storedAt: Self.start - 3_600, metadata: Data("etag: \"v1\"\r\n$5\r\n".utf8))
        try await store.setEntry(StoreEntry(value: Data("body".utf8), attributes: attributes), forKey: "k")
        #expect(try await store.entry(forKey: "k") == StoreEntry(value: Data("body".utf8), attributes: attributes))
        #expect(try await store.attributes(forKey: "k") == attributes)
        #expect(try await store.value(forKey: "k") == Data("body".utf8))
        #expect(try await store.entry(forKey: "k", transformedBy: { $0.count }) == StoreEntry(value: 4, attributes: attributes))

        // Without storedAt, the time of the write; a plain value has no expiry and no metadata.
        try await store.setEntry(StoreEntry(value: Data(), expiresAt: nil, metadata: Data([0, 1])), forKey: "stamped")
        #expect(try await store.entry(forKey: "stamped") == StoreEntry(value: Data(), attributes: EntryAttributes(storedAt: Self.start, metadata: Data([0, 1]))))
        clock.advance(by: .seconds(5))
        try await store.setValue(Data("plain".utf8), forKey: "plain")
        #expect(try await store.attributes(forKey: "plain") == EntryAttributes(storedAt: Self.start + 5))
        #expect(try await timeLeft("plain", in: store) == -1)
        #expect(try await store.attributes(forKey: "missing") == nil)
        #expect(try await store.entry(forKey: "missing") == nil)
        #expect(store.statistics.errors == 0)
    }

    @Test func pxIsTheTimeLeftOnTheStoresClockBoundedByItsLifetime() async throws {
        let clock = TestClock()
        let store = try await store(clock: clock) { $0.timeToLive = .seconds(100) }
        clock.advance(by: .milliseconds(500))
        try await store.setValue(Data("a".utf8), forKey: "short", expiresAt: Self.start + 10)
        try await store.setValue(Data("b".utf8), forKey: "long", expiresAt: Self.start + 1_000)
        try await store.setValue(Data("c".utf8), forKey: "plain")
        let short = try await timeLeft("short", in: store)
        // Redis counts down in real time meanwhile, so only the bound is exact: at most the 9.5 s
        // left on the store's clock, and not yet gone (a loaded machine may take seconds here).
        #expect(short > 0 && short <= 9_500, "\(short)")
        for key in ["long", "plain"] {
            let left = try await timeLeft(key, in: store)
            #expect(left > 60_000 && left <= 100_000, "\(key): \(left)")
        }
        #expect(try await store.attributes(forKey: "long")?.expiresAt == Self.start + 100.5)

        // No lifetime of the store's own: an entry far away still gets its PX, "never" none.
        let unbounded = try await self.store(clock: clock)
        try await unbounded.setValue(Data("d".utf8), forKey: "day", expiresAt: clock.now() + 86_400)
        #expect(try await timeLeft("day", in: unbounded) > 86_000_000)
        try await unbounded.setValue(Data("e".utf8), forKey: "forever", expiresAt: .distantFuture)
        #expect(try await timeLeft("forever", in: unbounded) == -1)
        #expect(try await unbounded.attributes(forKey: "forever")?.expiresAt == Date(timeIntervalSince1970: (Date.distantFuture.timeIntervalSince1970 * 1_000).rounded(.down) / 1_000))
    }

    /// The envelope's expiry is checked on every read, on the store's clock: the entry is a miss
    /// while Redis, on its own clock, still keeps it.
    @Test func anEntryExpiresOnTheStoresClock() async throws {
        let clock = TestClock()
        let store = try await store(clock: clock)
        try await store.setValue(Data("a".utf8), forKey: "k", expiresAt: Self.start + 10)
        clock.advance(by: .seconds(9))
        #expect(try await store.value(forKey: "k") == Data("a".utf8))
        clock.advance(by: .seconds(1))
        #expect(try await store.value(forKey: "k") == nil)
        #expect(try await store.entry(forKey: "k") == nil)
        #expect(try await store.attributes(forKey: "k") == nil)
        #expect(try await store.setAttributes(EntryAttributes(), forKey: "k") == false)
        #expect(try await timeLeft("k", in: store) > 0, "Redis still keeps it")
    }

    @Test func anEntryExpiredAlreadyIsNotStoredAndRemovesTheKey() async throws {
        let store = try await store()
        try await store.setValue(Data("old".utf8), forKey: "k")
        try await store.setEntry(StoreEntry(value: Data("new".utf8), expiresAt: Self.start), forKey: "k")
        #expect(try await timeLeft("k", in: store) == -2)
        #expect(try await store.addEntry(StoreEntry(value: Data("new".utf8), expiresAt: Self.start - 1), forKey: "k") == .inserted)
        #expect(try await timeLeft("k", in: store) == -2)
    }

    @Test func metadataOverTheLimitIsRefused() async throws {
        let store = try await store()
        let large = Data(count: EntryAttributes.metadataLimit + 1)
        try await store.setValue(Data("v".utf8), forKey: "k")
        let attempts: [@Sendable () async throws -> Void] = [
            { try await store.setEntry(StoreEntry(value: Data(), expiresAt: nil, metadata: large), forKey: "k") },
            { _ = try await store.setAttributes(EntryAttributes(metadata: large), forKey: "k") },
            { _ = try await store.addEntry(StoreEntry(value: Data(), expiresAt: nil, metadata: large), forKey: "new") },
        ]
        for attempt in attempts {
            let error = await #expect(throws: StoreError.self) { try await attempt() }
            #expect(error?.code == .valueTooLarge)
        }
        #expect(try await store.value(forKey: "k") == Data("v".utf8))
        let full = Data(repeating: 0xAB, count: EntryAttributes.metadataLimit)
        try await store.setEntry(StoreEntry(value: Data("v".utf8), expiresAt: nil, metadata: full), forKey: "k")
        #expect(try await store.attributes(forKey: "k")?.metadata == full)
        #expect(try await store.value(forKey: "k") == Data("v".utf8))
    }

    // MARK: - setAttributes

    @Test func setAttributesReplacesTheAttributesAndKeepsTheValue() async throws {
        let clock = TestClock()
        let store = try await store(clock: clock) { $0.timeToLive = .seconds(3_600) }
        let body = Data((0..<100_000).map { UInt8(truncatingIfNeeded: $0) })
        try await store.setEntry(StoreEntry(value: body, expiresAt: Self.start + 60, metadata: Data("v1".utf8)), forKey: "k")
        clock.advance(by: .seconds(30))

        // The same length of metadata: the header is overwritten in place.
        let same = EntryAttributes(expiresAt: Self.start + 120, storedAt: Self.start + 30, metadata: Data("v2".utf8))
        #expect(try await store.setAttributes(same, forKey: "k"))
        #expect(try await store.entry(forKey: "k") == StoreEntry(value: body, attributes: same))
        let left = try await timeLeft("k", in: store)
        #expect(left > 50_000 && left <= 90_000, "\(left)")

        // Longer metadata, no storedAt (now), an expiry bounded by the store's lifetime.
        #expect(try await store.setAttributes(EntryAttributes(expiresAt: Self.start + 10_000, metadata: Data("longer metadata".utf8)), forKey: "k"))
        #expect(try await store.entry(forKey: "k") == StoreEntry(value: body, attributes: EntryAttributes(expiresAt: Self.start + 30 + 3_600, storedAt: Self.start + 30, metadata: Data("longer metadata".utf8))))
        // Shorter, and never expiring (but for the store's lifetime).
        #expect(try await store.setAttributes(EntryAttributes(storedAt: Self.start), forKey: "k"))
        #expect(try await store.entry(forKey: "k") == StoreEntry(value: body, attributes: EntryAttributes(expiresAt: Self.start + 30 + 3_600, storedAt: Self.start)))

        // An expiry that has passed: the entry is gone.
        #expect(try await store.setAttributes(EntryAttributes(expiresAt: Self.start), forKey: "k"))
        #expect(try await timeLeft("k", in: store) == -2)
        #expect(try await store.setAttributes(same, forKey: "k") == false)
        #expect(try await timeLeft("k", in: store) == -2, "nothing written")
    }

    @Test func setAttributesWithoutALifetimeMakesTheKeyPersist() async throws {
        let store = try await store()
        try await store.setEntry(StoreEntry(value: Data("v".utf8), expiresAt: Self.start + 60), forKey: "k")
        #expect(try await timeLeft("k", in: store) > 0)
        #expect(try await store.setAttributes(EntryAttributes(metadata: Data("m".utf8)), forKey: "k"))
        #expect(try await timeLeft("k", in: store) == -1)
        #expect(try await store.entry(forKey: "k")?.metadata == Data("m".utf8))
    }

    // MARK: - addEntry

    @Test func addEntryInsertsOnlyIntoAnAbsentOrExpiredKey() async throws {
        let clock = TestClock()
        let store = try await store(clock: clock)
        let first = StoreEntry(value: Data("first".utf8), expiresAt: Self.start + 10, metadata: Data("1".utf8))
        #expect(try await store.addEntry(first, forKey: "k") == .inserted)
        var expected = first
        expected.attributes.storedAt = Self.start
        let second = StoreEntry(value: Data("second".utf8), expiresAt: nil)
        #expect(try await store.addEntry(second, forKey: "k") == .existing(expected))
        // Expired on the store's clock, though Redis keeps it: replaced.
        clock.advance(by: .seconds(10))
        #expect(try await timeLeft("k", in: store) > 0)
        #expect(try await store.addEntry(second, forKey: "k") == .inserted)
        #expect(try await store.entry(forKey: "k")?.value == Data("second".utf8))
        #expect(try await timeLeft("k", in: store) == -1)
        #expect(store.statistics.writes == 2)
    }

    /// 100 callers add one key at once through two stores (two pools of connections, as two
    /// machines would have): exactly one inserts, the others get its entry. Then the entry
    /// expires on the stores' clock and 100 callers race to replace it: again exactly one does.
    @Test func exactlyOneOfAHundredConcurrentAddsInserts() async throws {
        let clock = TestClock()
        let prefix = SharedRedis.uniquePrefix("add")
        let stores = [try await self.store(clock: clock, prefix: prefix), try await self.store(clock: clock, prefix: prefix)]
        for round in 0..<2 {
            let results = try await withThrowingTaskGroup(of: (Int, AddResult<Data>).self) { group in
                for caller in 0..<100 {
                    group.addTask {
                        let entry = StoreEntry(value: Data("caller \(caller)".utf8), expiresAt: clock.now() + 60, metadata: Data([UInt8(caller)]))
                        return (caller, try await stores[caller % 2].addEntry(entry, forKey: "contended"))
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let winners = results.filter { $0.1.inserted }
            try #require(winners.count == 1, "round \(round)")
            let winner = winners[0].0
            for (_, result) in results where !result.inserted {
                #expect(result.existing?.value == Data("caller \(winner)".utf8))
                #expect(result.existing?.metadata == Data([UInt8(winner)]))
            }
            #expect(try await stores[1].value(forKey: "contended") == Data("caller \(winner)".utf8))
            clock.advance(by: .seconds(60))
        }
    }

    // MARK: - Plain values of 0.3.0, and damage

    /// A value 0.3.0 stored — the bytes themselves, written here with a raw `SET` — reads as a
    /// plain value: no expiry, no storedAt, no metadata; its attributes can be set, which wraps
    /// it in an envelope on the server; an add finds it.
    @Test func aPlainValueOf030ReadsAsAnEntryWithoutAttributes() async throws {
        let store = try await store()
        try await setRaw("a value of 0.3.0", forKey: "old", in: store)
        try await setRaw("", forKey: "empty", in: store)
        let plain = EntryAttributes()
        #expect(try await store.value(forKey: "old") == Data("a value of 0.3.0".utf8))
        #expect(try await store.entry(forKey: "old") == StoreEntry(value: Data("a value of 0.3.0".utf8), attributes: plain))
        #expect(try await store.attributes(forKey: "old") == plain)
        #expect(try await store.attributes(forKey: "empty") == plain)
        #expect(try await store.value(forKey: "empty") == Data())
        #expect(try await store.addEntry(StoreEntry(value: Data("new".utf8)), forKey: "old") == .existing(StoreEntry(value: Data("a value of 0.3.0".utf8), attributes: plain)))

        let attributes = EntryAttributes(expiresAt: Self.start + 60, storedAt: Self.start - 60, metadata: Data("m".utf8))
        for key in ["old", "empty"] {
            #expect(try await store.setAttributes(attributes, forKey: key), "\(key)")
            #expect(try await store.attributes(forKey: key) == attributes, "\(key)")
        }
        #expect(try await store.entry(forKey: "old") == StoreEntry(value: Data("a value of 0.3.0".utf8), attributes: attributes))
        #expect(try await store.entry(forKey: "empty") == StoreEntry(value: Data(), attributes: attributes))
    }

    /// Bytes that start as an envelope but are not one — a metadata length of 4 GiB, one past
    /// the end, another version, unknown flags, a header cut short — are `corrupted` when read
    /// (never a crash or a large allocation), and an add replaces them.
    @Test(arguments: ["4 GiB of metadata", "metadata past the end", "version 7", "flags", "short header"])
    func aDamagedEnvelopeIsCorruptedAndAnAddReplacesIt(damage: String) async throws {
        let magic: [UInt8] = [0x89, 0x48, 0x4E, 0x4B, 0x45, 0x0A]
        let times = [UInt8](repeating: 0, count: 16)
        let bytes: [UInt8] = switch damage {
        case "4 GiB of metadata": magic + [1, 0] + times + [0xFF, 0xFF, 0xFF, 0xFF] + Array("value".utf8)
        case "metadata past the end": magic + [1, 0] + times + [0, 0, 0, 9] + Array("abc".utf8)
        case "version 7": magic + [7, 0] + times + [0, 0, 0, 0]
        case "flags": magic + [1, 4] + times + [0, 0, 0, 0]
        default: magic + [1, 0] + [0, 0, 0]
        }
        let store = try await store()
        #expect(try await store.command("SET", [ByteBuffer(string: store.redisKey(for: "k")), ByteBuffer(bytes: bytes)]) == .simpleString("OK"))
        let reads: [@Sendable () async throws -> Void] = [{ _ = try await store.value(forKey: "k") }, { _ = try await store.attributes(forKey: "k") }]
        for read in reads {
            let error = await #expect(throws: StoreError.self) { try await read() }
            #expect(error?.code == .corrupted, "\(String(describing: error))")
            #expect(error?.message.contains("key k on Redis at") == true)
        }
        #expect(try await store.addEntry(StoreEntry(value: Data("new".utf8)), forKey: "k") == .inserted)
        #expect(try await store.value(forKey: "k") == Data("new".utf8))
    }

    /// The magic alone, without a version byte, is a plain value.
    @Test func theMagicAloneIsAPlainValue() async throws {
        let store = try await store()
        let bytes: [UInt8] = [0x89, 0x48, 0x4E, 0x4B, 0x45, 0x0A]
        #expect(try await store.command("SET", [ByteBuffer(string: store.redisKey(for: "k")), ByteBuffer(bytes: bytes)]) == .simpleString("OK"))
        #expect(try await store.entry(forKey: "k") == StoreEntry(value: Data(bytes)))
    }
}
