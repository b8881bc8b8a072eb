import Foundation
import HanekeProtocols
import HanekeTesting
import MemoryStore
import Testing

/// `EvictionPolicy.adaptive` in `MemoryStore`: what it keeps that LRU gives up, where a returning
/// key goes, byte weights, and the list's books under random operations.
struct AdaptiveEvictionTests {
    @Test func conformsToStore() async throws {
        try await StoreConformanceSuite {
            MemoryStore<String, Data>(countLimit: 10_000, costLimit: 64 << 20, evictionPolicy: .adaptive)
        }.run()
    }

    @Test func theDefaultIsLeastRecentlyUsed() {
        #expect(MemoryStore<String, Int>.Configuration().evictionPolicy == .leastRecentlyUsed)
    }

    /// A scan of keys read once passes through the small queue: the keys read often stay, where LRU
    /// loses every one of them.
    @Test(arguments: [EvictionPolicy.adaptive, .leastRecentlyUsed])
    func aScanDoesNotFlushWhatIsReadOften(policy: EvictionPolicy) {
        let store = MemoryStore<String, Int>(countLimit: 100, evictionPolicy: policy)
        let hot = (0..<50).map { "hot-\($0)" }
        for (index, key) in hot.enumerated() { store.setValue(index, forKey: key) }
        for _ in 0..<3 {
            for key in hot { #expect(store.value(forKey: key) != nil) }
        }
        for index in 0..<1_000 { store.setValue(index, forKey: "scan-\(index)") }

        let kept = hot.filter { store.containsValue(forKey: $0) }.count
        #expect(store.count == 100)
        if policy == .adaptive {
            #expect(kept == hot.count)
        } else {
            #expect(kept == 0)
        }
    }

    /// A key the small queue gave up, written again soon after, has proved itself: it goes straight
    /// to the main queue (listed first by `keysByRecency`).
    @Test func aKeyBackFromTheGhostGoesToTheMainQueue() {
        let store = MemoryStore<String, Int>(countLimit: 10, evictionPolicy: .adaptive)
        for index in 0..<11 { store.setValue(index, forKey: "k\(index)") }
        #expect(!store.containsValue(forKey: "k0"))
        #expect(store.keysByRecency == (1..<11).reversed().map { "k\($0)" })

        store.setValue(0, forKey: "k0")
        #expect(store.keysByRecency.first == "k0")
        #expect(!store.containsValue(forKey: "k1"))   // the small queue's oldest, never read
        #expect(store.count == 10)
        #expect(store.statistics.evictions == 2)
    }

    /// A key read while in the small queue moves to the main queue when its turn comes, instead of
    /// leaving.
    @Test func aKeyReadInTheSmallQueueIsPromoted() {
        let store = MemoryStore<String, Int>(countLimit: 4, evictionPolicy: .adaptive)
        for index in 0..<4 { store.setValue(index, forKey: "k\(index)") }
        #expect(store.value(forKey: "k0") == 0)
        store.setValue(4, forKey: "k4")
        #expect(store.containsValue(forKey: "k0"))
        #expect(!store.containsValue(forKey: "k1"))
        #expect(store.keysByRecency.first == "k0")
    }

    /// Bounded by cost, the queues split bytes: one large value written once does not push out the
    /// small values read often, and a large value read often stays too.
    @Test func aCostLimitedStoreWeighsEntriesByTheirCost() {
        let store = MemoryStore<String, Data>(costLimit: 10_000, evictionPolicy: .adaptive)
        for index in 0..<40 { store.setValue(Data(count: 100), forKey: "small-\(index)") }
        store.setValue(Data(count: 2_000), forKey: "large-hot")
        for _ in 0..<2 {
            for index in 0..<40 { _ = store.value(forKey: "small-\(index)") }
            _ = store.value(forKey: "large-hot")
        }
        for index in 0..<20 { store.setValue(Data(count: 3_000), forKey: "large-once-\(index)") }

        #expect((0..<40).allSatisfy { store.containsValue(forKey: "small-\($0)") })
        #expect(store.containsValue(forKey: "large-hot"))
        #expect(store.totalCost <= 10_000)
    }

    @Test func removeAllKeepsThePolicy() {
        let store = MemoryStore<String, Int>(countLimit: 100, evictionPolicy: .adaptive)
        for index in 0..<50 { store.setValue(index, forKey: "hot-\(index)"); _ = store.value(forKey: "hot-\(index)") }
        store.removeAll()
        for index in 0..<50 { store.setValue(index, forKey: "hot-\(index)"); _ = store.value(forKey: "hot-\(index)") }
        for index in 0..<1_000 { store.setValue(index, forKey: "scan-\(index)") }
        #expect((0..<50).allSatisfy { store.containsValue(forKey: "hot-\($0)") })
    }

    /// Expired entries go from both queues; trimming follows the policy's order.
    @Test func expiryAndTrimmingReachBothQueues() {
        let clock = TestClock()
        let store = MemoryStore<String, Int>(countLimit: 10, timeToLive: .seconds(60), evictionPolicy: .adaptive, clock: clock)
        for index in 0..<11 { store.setValue(index, forKey: "k\(index)") }
        store.setValue(0, forKey: "k0")                      // back from the ghost: main queue
        #expect(store.value(forKey: "k5") == 5)
        clock.advance(by: .seconds(61))
        store.removeExpired()
        #expect(store.count == 0)
        #expect(store.keysByRecency.isEmpty)

        for index in 0..<10 { store.setValue(index, forKey: "t\(index)") }
        for index in 0..<5 { _ = store.value(forKey: "t\(index)") }
        store.trim(toCount: 6)                               // the unread go first, oldest first
        #expect(Set(store.keysByRecency) == Set([0, 1, 2, 3, 4, 9].map { "t\($0)" }))
        store.trim(toCount: 0)
        #expect(store.count == 0)
    }

    /// Random writes, reads, removals and trims, checked after every step against a dictionary of
    /// what may be there: the limits hold, every listed key is readable and counted once, and the
    /// total cost is the sum of the kept values' costs.
    @Test(arguments: [false, true])
    func theBooksStayRightUnderRandomOperations(byCost: Bool) async {
        let store = byCost
            ? MemoryStore<Int, Data>(costLimit: 5_000, evictionPolicy: .adaptive)
            : MemoryStore<Int, Data>(countLimit: 50, evictionPolicy: .adaptive)
        var random = SeededRandomNumberGenerator(seed: byCost ? 2 : 1)
        var written: [Int: Int] = [:]
        for step in 0..<3_000 {
            // A turn given back now and then: the 3,000 steps and their checks held a cooperative
            // thread 167 ms in one job of a debug build.
            if step % 250 == 0 { await Task.yield() }
            let key = Int(random.next() % 200)
            switch random.next() % 10 {
            case 0..<4:
                let size = Int(random.next() % 300)
                store.setValue(Data(count: size), forKey: key)
                written[key] = size
            case 4..<8:
                if let value = store.value(forKey: key) { #expect(value.count == written[key]) }
            case 8:
                store.removeValue(forKey: key)
                written[key] = nil
            default:
                if step % 97 == 0 { store.trim(toCount: Int(random.next() % 40)) }
            }
            let keys = store.keysByRecency
            guard keys.count == store.count, Set(keys).count == keys.count else {
                Issue.record("step \(step): \(keys.count) keys listed, \(Set(keys).count) distinct, count \(store.count)")
                return
            }
            let cost = keys.reduce(0) { $0 + (written[$1] ?? -1_000_000) }
            guard cost == store.totalCost, byCost ? cost <= 5_000 : keys.count <= 50 else {
                Issue.record("step \(step): listed cost \(cost), total cost \(store.totalCost), count \(keys.count)")
                return
            }
        }
    }
}
