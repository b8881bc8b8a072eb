/// The part of `EvictionPolicy.adaptive` that does not depend on how a store keeps its queues: the
/// small queue's target share of the limits, and the ghost of recently evicted keys that moves it
/// and sends a returning key straight to the main queue. `LRUList` keeps one beside its queues;
/// `SQLiteStore`, whose queues are columns of its rows, keeps one per connection. Not generic: the
/// ghost keeps keys' hash values, never the keys.
@usableFromInline
package struct SmallQueueBalance: Sendable {
    /// The store's limits; both `nil` for an unbounded store (trimmed by hand).
    package let countLimit: Int?
    package let costLimit: Int?
    /// The small queue's target share of the limits, moved by the ghost rule.
    package private(set) var smallShare = Self.initialSmallShare
    private var ghost = GhostKeys()

    /// An entry's mark, as `LRUList` keeps it per slot and `SQLiteStore` per row: this bit set for
    /// the small queue, clear for the main queue.
    @inlinable package static var smallQueueBit: UInt8 { 0x80 }
    /// The bits of a mark that count reads (saturating at 3).
    @inlinable package static var counterMask: UInt8 { 0x03 }

    /// The small queue's share before any evidence: S3-FIFO's 10 %.
    static let initialSmallShare = 0.10
    /// The bounds of the small queue's share.
    static let smallShareRange = 0.01...0.90
    /// How far back, as a share of the limit, an eviction still moves the small queue's target.
    static let balancingReach = 0.25

    /// Creates the balance for a store with these limits, at the initial share and an empty ghost.
    package init(countLimit: Int?, costLimit: Int?) {
        self.countLimit = countLimit.map { max(0, $0) }
        self.costLimit = costLimit.map { max(0, $0) }
    }

    /// Decides the queue of a new key (whose hash is `hash`): the main queue when the small queue
    /// gave it up recently enough that the key has proved itself, the small queue otherwise. First
    /// applies the ghost rule: a key the small queue gave up within the reach grows its share by
    /// the key's weight; one the main queue gave up shrinks it.
    /// - Parameters:
    ///   - cost: The new entry's cost.
    ///   - count: The entries there are, and `totalCost` their costs: which limit is fuller decides
    ///     whether a key weighs 1 or its cost.
    /// - Returns: Whether the key goes to the main queue.
    @usableFromInline
    package mutating func admitsToMain(hash: Int, cost: Int, count: Int, totalCost: Int) -> Bool {
        guard let found = ghost.take(hash), let unit = bindingUnit(count: count, totalCost: totalCost) else { return false }
        let age = unit.byCost ? found.costAge : found.countAge
        let weight = unit.byCost ? cost : 1
        if age <= Self.reach(of: unit.limit) {
            let step = Double(weight) / Double(max(1, unit.limit))
            let share = found.fromMain ? smallShare - step : smallShare + step
            smallShare = min(max(share, Self.smallShareRange.lowerBound), Self.smallShareRange.upperBound)
        }
        return !found.fromMain && age <= unit.limit - Self.share(smallShare, of: unit.limit)
    }

    /// Remembers that the key whose hash is `hash` (its entry costing `cost`) was evicted from the
    /// small or the main queue.
    /// - Parameter liveCount: The entries left, to bound the ghost's size.
    @usableFromInline
    package mutating func recordEviction(hash: Int, cost: Int, fromMain: Bool, liveCount: Int) {
        guard countLimit != nil || costLimit != nil else { return }
        func reach(_ limit: Int?) -> Int? {
            limit.map { fromMain ? Self.reach(of: $0) : max(Self.reach(of: $0), $0 - Self.share(smallShare, of: $0)) }
        }
        ghost.add(
            hash, cost: cost, fromMain: fromMain,
            reach: (count: reach(countLimit), cost: reach(costLimit)), mostKept: 2 * liveCount + 64
        )
    }

    /// The limit that is fuller (by count or by cost) and its size; `nil` for an unbounded store.
    private func bindingUnit(count: Int, totalCost: Int) -> (byCost: Bool, limit: Int)? {
        switch (countLimit, costLimit) {
        case (nil, nil): return nil
        case (let countLimit?, nil): return (false, countLimit)
        case (nil, let costLimit?): return (true, costLimit)
        case (let countLimit?, let costLimit?):
            let costFill = Double(totalCost) / Double(max(1, costLimit))
            let countFill = Double(count) / Double(max(1, countLimit))
            return costFill >= countFill ? (true, costLimit) : (false, countLimit)
        }
    }

    /// The small queue's target in a limit's unit: its share of `limit` (at least 1).
    package func smallTarget(of limit: Int) -> Int {
        Self.share(smallShare, of: limit)
    }

    private static func share(_ share: Double, of limit: Int) -> Int {
        max(1, Int(Double(limit) * share))
    }

    private static func reach(of limit: Int) -> Int {
        max(1, Int(Double(limit) * balancingReach))
    }
}

/// The keys (by hash value) the queues evicted recently, without their values: for each of the two
/// queues, clocks of the count and the cost it has evicted and a FIFO ring of (hash, stamps) that
/// forgets a key once more than its reach was evicted after it, in every limit's unit. A key is in
/// at most one of them.
private struct GhostKeys: Sendable {
    private var stamps: [Int: GhostStamp] = [:]
    private var small = GhostRing()
    private var main = GhostRing()

    /// Records the eviction of `hash` (costing `cost`) from the main or the small queue, and
    /// forgets what fell out of that queue's reach or beyond `mostKept` records.
    mutating func add(_ hash: Int, cost: Int, fromMain: Bool, reach: (count: Int?, cost: Int?), mostKept: Int) {
        if fromMain {
            main.add(hash, cost: cost, fromMain: true, reach: reach, mostKept: mostKept, stamps: &stamps)
        } else {
            small.add(hash, cost: cost, fromMain: false, reach: reach, mostKept: mostKept, stamps: &stamps)
        }
    }

    /// Forgets `hash`, returning which queue evicted it and how many entries and how much cost
    /// that queue evicted since; `nil` when it is not remembered.
    mutating func take(_ hash: Int) -> (fromMain: Bool, countAge: Int, costAge: Int)? {
        guard let stamp = stamps.removeValue(forKey: hash) else { return nil }
        let ring = stamp.fromMain ? main : small
        return (stamp.fromMain, ring.countClock - stamp.count, ring.costClock - stamp.cost)
    }
}

/// When a ghost key was evicted (its queue's clocks then) and by which queue.
private struct GhostStamp: Sendable, Equatable {
    var count: Int
    var cost: Int
    var fromMain: Bool
}

/// A FIFO of (hash, stamp) records in an array with a moving start, compacted when half is spent.
private struct GhostRing: Sendable {
    private var records: ContiguousArray<(hash: Int, stamp: GhostStamp)> = []
    private var start = 0
    /// The entries and the cost evicted so far.
    private(set) var countClock = 0
    private(set) var costClock = 0

    /// Appends `hash`, stamps it in `stamps`, and drops the records beyond `reach` in every unit
    /// that has one, or beyond `mostKept` (and their stamps, unless the key was evicted again since).
    mutating func add(
        _ hash: Int, cost: Int, fromMain: Bool, reach: (count: Int?, cost: Int?), mostKept: Int,
        stamps: inout [Int: GhostStamp]
    ) {
        let stamp = GhostStamp(count: countClock, cost: costClock, fromMain: fromMain)
        stamps[hash] = stamp
        records.append((hash, stamp))
        countClock += 1
        costClock += max(0, cost)
        while start < records.count, records.count - start > mostKept || isBeyond(records[start].stamp, reach) {
            let oldest = records[start]
            if stamps[oldest.hash] == oldest.stamp { stamps.removeValue(forKey: oldest.hash) }
            start += 1
        }
        if start >= 64, start * 2 >= records.count {
            records.removeFirst(start)
            start = 0
        }
    }

    /// Whether `stamp` is further back than every reach given.
    private func isBeyond(_ stamp: GhostStamp, _ reach: (count: Int?, cost: Int?)) -> Bool {
        let beyondCount = reach.count.map { countClock - stamp.count > $0 } ?? true
        let beyondCost = reach.cost.map { costClock - stamp.cost > $0 } ?? true
        return beyondCount && beyondCost
    }
}
