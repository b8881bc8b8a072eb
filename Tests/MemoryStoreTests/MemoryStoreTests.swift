import Dispatch
import Foundation
import HanekeProtocols
import HanekeTesting
import MemoryStore
import Testing
import TestSupport

struct MemoryStoreTests {
    @Test func conformsToStore() async throws {
        try await StoreConformanceSuite { MemoryStore<String, Data>() }.run()
    }

    @Test func conformsWithLimitsAndATimeToLive() async throws {
        try await StoreConformanceSuite {
            MemoryStore<String, Data>(countLimit: 10_000, costLimit: 64 << 20, timeToLive: .seconds(3600))
        }.run()
    }

    @Test func conformsWithTheLongestLifetime() async throws {
        try await StoreConformanceSuite { MemoryStore<String, Data>(timeToLive: .seconds(Int64.max)) }.run()
    }

    @Test func conformsAsAStoreOfStrings() async throws {
        try await StoreConformanceSuite { MemoryStore<String, String>() }.run()
    }

    /// With the system clock a read checks expiry on the kernel's coarse clock rounded up by one
    /// tick: an entry is never served once its expiry has passed, and goes at most one tick early.
    /// Reads in a loop, as fast as they come, until the entry is gone (no sleep: the outcome of
    /// each read is checked against the precise clock around it).
    @Test func withTheSystemClockAnEntryIsNeverServedAfterItsExpiry() throws {
        let store = MemoryStore<String, Int>()
        var tick = timespec()
        clock_getres(CLOCK_REALTIME_COARSE, &tick)
        let tickSeconds = Double(tick.tv_sec) + Double(tick.tv_nsec) / 1e9
        let expiry = Date().addingTimeInterval(0.03)
        try store.setEntry(StoreEntry(value: 1, attributes: EntryAttributes(expiresAt: expiry)), forKey: "k")
        while true {
            let before = Date()
            let value = store.value(forKey: "k")
            let after = Date()
            guard value != nil else {
                #expect(after.timeIntervalSince(expiry) >= -tickSeconds, "gone more than one tick early")
                break
            }
            #expect(before < expiry, "served after its expiry")
        }
        #expect(store.statistics.evictions == 1)
    }

    @Test func theCountLimitEvictsTheLeastRecentlyUsed() {
        let store = MemoryStore<String, Int>(countLimit: 3)
        for (i, key) in ["a", "b", "c"].enumerated() { store.setValue(i, forKey: key) }
        #expect(store.keysByRecency == ["c", "b", "a"])

        _ = store.value(forKey: "a")                 // a becomes the most recent
        #expect(store.keysByRecency == ["a", "c", "b"])

        store.setValue(3, forKey: "d")               // b is the least recent
        #expect(store.keysByRecency == ["d", "a", "c"])
        #expect(store.value(forKey: "b") == nil)
        #expect(store.statistics.evictions == 1)
    }

    @Test func overwritingRefreshesRecencyWithoutGrowing() {
        let store = MemoryStore<String, Int>(countLimit: 2)
        store.setValue(1, forKey: "a")
        store.setValue(2, forKey: "b")
        store.setValue(10, forKey: "a")
        store.setValue(3, forKey: "c")
        #expect(store.keysByRecency == ["c", "a"])
        #expect(store.value(forKey: "a") == 10)
    }

    @Test func containsDoesNotRefreshRecency() {
        let store = MemoryStore<String, Int>(countLimit: 2)
        store.setValue(1, forKey: "a")
        store.setValue(2, forKey: "b")
        #expect(store.containsValue(forKey: "a"))
        store.setValue(3, forKey: "c")
        #expect(!store.containsValue(forKey: "a"))
    }

    @Test func theCostLimitEvictsTheLeastRecentlyUsedUntilTheTotalFits() {
        let store = MemoryStore<String, Data>(costLimit: 100)
        store.setValue(Data(count: 40), forKey: "a")
        store.setValue(Data(count: 40), forKey: "b")
        _ = store.value(forKey: "a")
        store.setValue(Data(count: 50), forKey: "c")   // 130 > 100: b goes, a stays
        #expect(store.keysByRecency == ["c", "a"])
        #expect(store.totalCost == 90)

        store.setValue(Data(count: 95), forKey: "d")   // both a and c must go
        #expect(store.keysByRecency == ["d"])
        #expect(store.totalCost == 95)
    }

    @Test func overwritingAdjustsTheTotalCost() {
        let store = MemoryStore<String, String>()
        store.setValue("12345", forKey: "k")
        store.setValue("ü", forKey: "k")                // two UTF-8 bytes
        #expect(store.totalCost == 2)
        store.removeValue(forKey: "k")
        #expect(store.totalCost == 0)
    }

    @Test func aValueLargerThanTheCostLimitIsNotKeptAndReplacesNothing() {
        let store = MemoryStore<String, Data>(costLimit: 10)
        store.setValue(Data(count: 5), forKey: "small")
        store.setValue(Data(count: 4), forKey: "big")
        store.setValue(Data(count: 11), forKey: "big")
        #expect(store.value(forKey: "big") == nil)          // the stale 4-byte value is gone too
        #expect(store.value(forKey: "small") == Data(count: 5))
        #expect(store.totalCost == 5)
    }

    @Test func aCustomCostFunctionIsUsed() {
        struct Image: Sendable { var width: Int; var height: Int }
        let store = MemoryStore<String, Image>(costLimit: 1_000) { $0.width * $0.height }
        store.setValue(Image(width: 20, height: 20), forKey: "a")
        store.setValue(Image(width: 20, height: 20), forKey: "b")
        store.setValue(Image(width: 20, height: 20), forKey: "c")
        #expect(store.count == 2)
        #expect(store.totalCost == 800)
    }

    @Test func otherTypesCostOneEach() {
        let store = MemoryStore<Int, Int>(costLimit: 3)
        for i in 0..<5 { store.setValue(i, forKey: i) }
        #expect(store.count == 3)
    }

    @Test func entriesExpireAfterTheirTimeToLive() {
        let clock = TestClock()
        let store = MemoryStore<String, String>(timeToLive: .seconds(60), clock: clock)
        store.setValue("v", forKey: "k")

        clock.advance(by: .seconds(59))
        #expect(store.value(forKey: "k") == "v")          // reading does not extend the life
        clock.advance(by: .seconds(1))
        #expect(store.value(forKey: "k") == nil)
        #expect(store.count == 0)
        #expect(store.statistics.evictions == 1)
        #expect(store.statistics.misses == 1)
    }

    @Test func overwritingRestartsTheTimeToLive() {
        let clock = TestClock()
        let store = MemoryStore<String, String>(timeToLive: .seconds(10), clock: clock)
        store.setValue("old", forKey: "k")
        clock.advance(by: .seconds(8))
        store.setValue("new", forKey: "k")
        clock.advance(by: .seconds(8))
        #expect(store.value(forKey: "k") == "new")
    }

    @Test func removeExpiredDropsOnlyExpiredEntries() {
        let clock = TestClock()
        let store = MemoryStore<String, Int>(timeToLive: .milliseconds(1_500), clock: clock)
        store.setValue(1, forKey: "old")
        clock.advance(by: .seconds(1))
        store.setValue(2, forKey: "young")
        clock.advance(by: .seconds(1))
        #expect(store.count == 2)
        #expect(!store.containsValue(forKey: "old"))
        store.removeExpired()
        #expect(store.keysByRecency == ["young"])
    }

    @Test func trimToCostShedsTheLeastRecentlyUsed() {
        let store = MemoryStore<String, Data>()
        for key in ["a", "b", "c", "d"] { store.setValue(Data(count: 10), forKey: key) }
        _ = store.value(forKey: "a")
        store.trim(toCost: 25)
        #expect(store.keysByRecency == ["a", "d"])
        store.trim(toCost: 0)
        #expect(store.count == 0)
        #expect(store.statistics.evictions == 4)
    }

    @Test func trimToCountKeepsTheMostRecent() {
        let store = MemoryStore<Int, Int>()
        for i in 0..<10 { store.setValue(i, forKey: i) }
        store.trim(toCount: 3)
        #expect(store.keysByRecency == [9, 8, 7])
    }

    @Test func removeAllEmptiesAndTheStoreStaysUsable() {
        let store = MemoryStore<String, Data>(countLimit: 5)
        for i in 0..<5 { store.setValue(Data([UInt8(i)]), forKey: "\(i)") }
        store.removeAll()
        #expect(store.count == 0)
        #expect(store.totalCost == 0)
        #expect(store.keysByRecency.isEmpty)
        for i in 0..<7 { store.setValue(Data([UInt8(i)]), forKey: "\(i)") }
        #expect(store.count == 5)
        #expect(store.keysByRecency == ["6", "5", "4", "3", "2"])
    }

    @Test func statisticsCountEveryOperation() {
        let store = MemoryStore<String, Int>(countLimit: 1, name: "hot")
        store.setValue(1, forKey: "a")
        _ = store.value(forKey: "a")
        _ = store.value(forKey: "b")
        store.setValue(2, forKey: "b")
        store.removeValue(forKey: "b")
        #expect(store.statistics == StoreStatistics(hits: 1, misses: 1, writes: 2, removals: 1, evictions: 1))
        #expect(store.layerStatistics == [LayerStatistics(name: "hot", statistics: store.statistics)])
        #expect(store.statistics.hitRate == 0.5)
    }

    @Test func freedSlotsAreReusedInRecencyOrder() {
        let store = MemoryStore<Int, Int>(countLimit: 100)
        for round in 0..<20 {
            for i in 0..<100 { store.setValue(round, forKey: round * 1_000 + i) }
            for i in stride(from: 0, to: 100, by: 3) { store.removeValue(forKey: round * 1_000 + i) }
        }
        #expect(store.count <= 100)
        let keys = store.keysByRecency
        #expect(keys.count == store.count)
        #expect(Set(keys).count == keys.count)
        #expect(keys.first == 19_098)   // 19_099 was removed (99 is a multiple of 3)
    }

    @Test func staysConsistentUnderHeavyConcurrency() async throws {
        let store = MemoryStore<Int, [Int]>(countLimit: 500, costLimit: 20_000) { $0.count }
        let threads = 8
        let wrongReads = Locked(0)
        // Eight threads of Dispatch's, waited for on a thread of the test's own.
        try await offThePool { DispatchQueue.concurrentPerform(iterations: threads) { thread in
            var random = SeededRandomNumberGenerator(seed: UInt64(thread))
            for op in 0..<20_000 {
                let key = Int(random.next() % 2_000)
                switch random.next() % 10 {
                case 0..<5:
                    if let value = store.value(forKey: key), !value.allSatisfy({ $0 == key }) {
                        wrongReads.withLock { $0 += 1 }
                    }
                case 5..<9: store.setValue(Array(repeating: key, count: 1 + key % 64), forKey: key)
                default: store.removeValue(forKey: key)
                }
                if op % 5_000 == 0 { store.trim(toCost: 10_000) }
            }
        } }
        #expect(wrongReads.withLock { $0 } == 0)
        #expect(store.count <= 500)
        #expect(store.totalCost <= 20_000)
        #expect(store.keysByRecency.count == store.count)
        let statistics = store.statistics
        #expect(statistics.hits + statistics.misses + statistics.writes + statistics.removals == threads * 20_000)
    }

    // MARK: - Costs

    /// Costs a cost function makes up cannot overflow the total and trap: it saturates.
    @Test func hugeCostsSaturateInsteadOfTrapping() {
        let store = MemoryStore<String, Int>(cost: { $0 })
        store.setValue(Int.max / 2 + 1, forKey: "a")
        store.setValue(Int.max / 2 + 1, forKey: "b")
        store.setValue(Int.max, forKey: "c")
        store.setValue(-5, forKey: "negative")
        #expect(store.totalCost == Int.max)
        #expect(store.count == 4)
        store.removeValue(forKey: "c")
        store.setValue(1, forKey: "a")   // an update of a saturated total does not trap either
        store.removeAll()
        #expect(store.totalCost == 0)
        let limited = MemoryStore<String, Int>(costLimit: 100, cost: { $0 })
        limited.setValue(.max, forKey: "too big")
        #expect(limited.count == 0)
    }

    /// A value that declares its cost is counted by it.
    @Test func aValueThatDeclaresItsCostIsCountedByIt() {
        struct Blob: CostMeasurable, Sendable {
            var bytes: Int
            var cacheCost: Int { bytes }
        }
        let store = MemoryStore<String, Blob>(costLimit: 10_000)
        for i in 0..<10 { store.setValue(Blob(bytes: 3_000), forKey: "\(i)") }
        #expect(store.totalCost == 9_000)
        #expect(store.count == 3)
    }
}
