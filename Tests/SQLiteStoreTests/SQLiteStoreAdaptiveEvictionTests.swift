import CSQLite
import Foundation
import HanekeProtocols
import HanekeTesting
import SeededRandom
@testable import SQLiteStore
import Testing
import TestSupport

/// `EvictionPolicy.adaptive` in `SQLiteStore`: the queue and read counter each row keeps, what the
/// policy keeps that LRU gives up (over samples of thousands of rows), a restart that is not a
/// cold start, and databases written before the policy's columns.
@Suite(.timeLimit(.minutes(2)), .offThePool, .tags(.disk))
struct SQLiteStoreAdaptiveEvictionTests {
    let directory: TemporaryDirectory
    let clock = TestClock()

    init() throws {
        directory = try TemporaryDirectory(prefix: "sqlite-adaptive")
    }

    var folder: String { directory.appending("store") }

    func open(capacity: Int? = 1 << 20, policy: EvictionPolicy = .adaptive) throws -> SQLiteStore {
        try SQLiteStore(directory: folder, configuration: .init(capacity: capacity, clock: clock, evictionPolicy: policy))
    }

    /// The policy's columns of `key`'s row: its mark (128 for the small queue, plus the read
    /// counter) and its queue time; `nil` without a row.
    func policyState(of store: SQLiteStore, _ key: String) throws -> (mark: Int, queued: Int64)? {
        let id = SQLiteStore.id(for: key)
        return try store.state.withLock { state in
            guard let mark = try state.database.text("SELECT mark FROM entries WHERE id = \(id)"),
                  let queued = try state.database.text("SELECT queued FROM entries WHERE id = \(id)") else { return nil }
            return (Int(mark) ?? -1, Int64(queued) ?? -1)
        }
    }

    /// 512 random bytes: values that do not compress and fill about an eighth of a page.
    func values(seed: UInt64) -> () -> Data {
        var random = SeededRandomNumberGenerator(seed: seed)
        return { Data((0..<512).map { _ in UInt8.random(in: 0...255, using: &random) }) }
    }

    @Test func conformsToStore() async throws {
        try await StoreConformanceSuite {
            try TemporaryStore { try SQLiteStore(directory: $0.path, configuration: .init(evictionPolicy: .adaptive)) }
        }.run()
    }

    @Test func theDefaultIsLeastRecentlyUsed() {
        #expect(SQLiteStore.Configuration().evictionPolicy == .leastRecentlyUsed)
    }

    /// A write enters the small queue unread, and reads count up to 3 once written. A rewrite of
    /// the key enters its queue again, as a new entry; reads not yet written when it came count
    /// for it.
    @Test func eachRowKeepsItsQueueAndReadCounter() throws {
        let store = try open()
        try store.setValue(Data("a".utf8), forKey: "a")
        let written = try #require(try policyState(of: store, "a"))
        #expect(written.mark == 0x80)
        for _ in 0..<5 { _ = try store.value(forKey: "a") }
        try store.flush()
        #expect(try policyState(of: store, "a")?.mark == 0x83, "saturates at 3")

        clock.advance(by: .seconds(1))
        try store.setValue(Data("a2".utf8), forKey: "a")
        let rewritten = try #require(try policyState(of: store, "a"))
        #expect(rewritten.mark == 0x80)
        #expect(rewritten.queued > written.queued)

        _ = try store.value(forKey: "a")
        try store.setValue(Data("a3".utf8), forKey: "a")
        try store.flush()
        #expect(try policyState(of: store, "a")?.mark == 0x81, "the read before the rewrite")
    }

    /// Over thousands of rows (eviction samples them): entries read while a scan of new keys goes
    /// by all stay under the adaptive policy, where LRU gives up nearly all of them.
    @Test(arguments: [EvictionPolicy.adaptive, .leastRecentlyUsed])
    func aScanDoesNotFlushWhatIsReadOften(policy: EvictionPolicy) throws {
        let store = try open(policy: policy)
        let value = values(seed: 7)
        let hot = (0..<200).map { "hot-\($0)" }
        for key in hot {
            clock.advance(by: .milliseconds(1))
            try store.setValue(value(), forKey: key)
        }
        for _ in 0..<2 {
            for key in hot { #expect(try store.value(forKey: key) != nil) }
        }
        try store.flush()
        for index in 0..<3_000 {
            clock.advance(by: .milliseconds(1))
            try store.setValue(value(), forKey: "scan-\(index)")
        }
        #expect(store.statistics.evictions > 1_500)
        #expect(store.usedSize <= 1 << 20)
        let kept = hot.filter { store.containsValue(forKey: $0) }.count
        if policy == .adaptive {
            #expect(kept == hot.count)
        } else {
            #expect(kept < hot.count / 10)
        }
    }

    /// A restart is not a cold start: a second store on the database (a new process, with no ghost
    /// and the initial share) finds the counters the first one wrote, and keeps the entries read
    /// often through a scan. Under LRU the reads count too, so a store that switches policy has
    /// them.
    @Test(arguments: [EvictionPolicy.adaptive, .leastRecentlyUsed])
    func whatThePolicyLearnedSurvivesARestart(firstPolicy: EvictionPolicy) throws {
        let value = values(seed: 8)
        let hot = (0..<200).map { "hot-\($0)" }
        do {
            let first = try open(policy: firstPolicy)
            for key in hot {
                clock.advance(by: .milliseconds(1))
                try first.setValue(value(), forKey: key)
                _ = try first.value(forKey: key)
            }
            try first.flush()
        }
        let second = try open(policy: .adaptive)
        for index in 0..<3_000 {
            clock.advance(by: .milliseconds(1))
            try second.setValue(value(), forKey: "scan-\(index)")
        }
        #expect(second.statistics.evictions > 1_500)
        #expect(hot.filter { second.containsValue(forKey: $0) }.count == hot.count)
    }

    /// Eviction's moves are written to the rows: an entry read in the small queue is in the main
    /// queue once its turn came (its counter kept), and one the small queue gave up unread, written
    /// again soon after, goes straight to the main queue.
    @Test func promotionsAndReturnsFromTheGhostAreWrittenToTheRows() throws {
        // A store of fewer rows than a sampling window evicts in exact order.
        let store = try open(capacity: 64 << 10 + 131_072)
        let value = values(seed: 9)
        try store.setValue(value(), forKey: "read")
        _ = try store.value(forKey: "read")
        var index = 0
        while store.statistics.evictions == 0 {
            clock.advance(by: .milliseconds(1))
            try store.setValue(value(), forKey: "k\(index)")
            index += 1
        }
        #expect(try policyState(of: store, "read")?.mark == 0x01, "promoted with its counter")
        #expect(try policyState(of: store, "k0") == nil, "the small queue's oldest unread entry")
        try store.setValue(value(), forKey: "k0")
        #expect(try policyState(of: store, "k0")?.mark == 0x00, "back from the ghost: the main queue")
    }

    /// A database written before the policy's columns (as the previous version left it) gets them
    /// when a store opens it: its rows are kept, read as in the small queue unread; and a write
    /// naming only the earlier columns (what a process of that version still running sends) works
    /// and gets the defaults.
    @Test func aDatabaseWithoutThePolicyColumnsGetsThem() throws {
        do {
            let store = try open()
            try store.setValue(Data("old".utf8), forKey: "old")
            try store.state.withLock { state in
                try state.database.run("ALTER TABLE entries DROP COLUMN mark")
                try state.database.run("ALTER TABLE entries DROP COLUMN queued")
            }
            #expect(try store.state.withLock { try $0.database.text(Database.policyColumnCount) } == "0")
        }
        let store = try open()
        #expect(try store.value(forKey: "old") == Data("old".utf8))
        #expect(try policyState(of: store, "old")?.mark == 0x80)
        try store.state.withLock { state in
            try state.database.run("""
                INSERT OR REPLACE INTO entries(id, checksum, created, expires, used, key, value, metadata_checksum, metadata)
                VALUES(1, 0, 0, NULL, 0, X'00', X'00', NULL, NULL)
                """)
        }
        #expect(try store.state.withLock { try $0.database.text("SELECT mark || ',' || queued FROM entries WHERE id = 1") } == "128,0")
        try store.setValue(Data("new".utf8), forKey: "new")
        #expect(try store.value(forKey: "new") == Data("new".utf8))
    }
}
