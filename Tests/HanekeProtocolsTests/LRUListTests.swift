@testable import HanekeProtocols
import Testing

/// The recency index's slots: a write hashes its key once by taking a slot before it knows whether
/// the key is new, and gives the slot back when it is not.
struct LRUListTests {
    @Test(arguments: [EvictionPolicy.leastRecentlyUsed, .adaptive])
    func rewritingKeysKeepsTheirSlotsAndTheBooks(policy: EvictionPolicy) {
        var list = LRUList<String, Int>(policy: policy, countLimit: nil, costLimit: nil)
        for index in 0..<10 { list.setValue(index, forKey: "k\(index)", cost: 1, expiry: .infinity) }
        for round in 1...100 {
            for index in 0..<10 { list.setValue(index * round, forKey: "k\(index)", cost: round, expiry: .infinity) }
        }
        #expect(list.count == 10)
        #expect(list.totalCost == 1_000)
        #expect(list.peekValue(forKey: "k7") == 700)
        // One spare slot at most: the one each rewrite takes and gives back.
        #expect(list.keys.count <= 11)
        #expect(list.keys.compactMap { $0 }.count == 10)
    }

    @Test func aRewriteMakesItsKeyTheMostRecentlyUsed() {
        var list = LRUList<String, Int>()
        for key in ["a", "b", "c"] { list.setValue(0, forKey: key, cost: 1, expiry: .infinity) }
        list.setValue(1, forKey: "a", cost: 1, expiry: .infinity)
        #expect(list.removeLeastRecentlyUsed()?.key == "b")
        #expect(list.removeLeastRecentlyUsed()?.key == "c")
        #expect(list.removeLeastRecentlyUsed()?.key == "a")
        #expect(list.count == 0 && list.totalCost == 0)
    }

    @Test func aNewKeyTakesAFreedSlot() {
        var list = LRUList<String, Int>()
        for index in 0..<5 { list.setValue(index, forKey: "k\(index)", cost: 1, expiry: .infinity) }
        list.removeValue(forKey: "k2")
        let slots = list.keys.count
        list.setValue(9, forKey: "new", cost: 1, expiry: .infinity)
        #expect(list.keys.count == slots)
        #expect(list.peekValue(forKey: "new") == 9)
        #expect(list.count == 5)
    }
}
