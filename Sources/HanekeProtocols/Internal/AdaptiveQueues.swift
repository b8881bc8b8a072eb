/// The state `LRUList` keeps for `EvictionPolicy.adaptive` (S3-FIFO with a ghost-balanced small
/// queue): which of the two FIFO queues each slot is in and its read counter, the small queue's
/// ends, count and cost, its target share of the limits, and the ghost of recently evicted keys.
///
/// The main queue is the list's own `head`/`tail`; the small queue is threaded through the same
/// `links` array between `smallHead` and `smallTail`, so a slot is in exactly one of them. The
/// queues split whichever limit binds: the small queue is over its target when its count reaches
/// its share of the count limit or its cost its share of the cost limit, and the ghost rule weighs
/// a key by the limit that is fuller (entries by count, or by cost). Not generic: the ghost keeps
/// keys' hash values, never the keys.
@usableFromInline
struct AdaptiveQueues: Sendable {
    /// Per slot: `smallBit` when the slot is in the small queue; the low two bits count reads
    /// (saturating at 3).
    @usableFromInline var marks: ContiguousArray<UInt8> = []
    @usableFromInline var smallHead: Int32 = -1
    @usableFromInline var smallTail: Int32 = -1
    /// The small queue's entries and the sum of their costs.
    @usableFromInline var smallCount = 0
    @usableFromInline var smallCost = 0
    /// The store's limits; both `nil` for an unbounded store (trimmed by hand).
    @usableFromInline let countLimit: Int?
    @usableFromInline let costLimit: Int?
    /// The small queue's target share of the limits, moved by the ghost rule.
    private(set) var smallShare = Self.initialSmallShare
    private var ghost = GhostKeys()

    @inlinable static var smallBit: UInt8 { 0x80 }
    @inlinable static var counterMask: UInt8 { 0x03 }
    /// The small queue's share before any evidence: S3-FIFO's 10 %.
    static let initialSmallShare = 0.10
    /// The bounds of the small queue's share.
    static let smallShareRange = 0.01...0.90
    /// How far back, as a share of the limit, an eviction still moves the small queue's target.
    static let balancingReach = 0.25

    /// Creates the state for a list with these limits.
    @usableFromInline
    init(countLimit: Int?, costLimit: Int?) {
        self.countLimit = countLimit.map { max(0, $0) }
        self.costLimit = costLimit.map { max(0, $0) }
    }

    /// Whether `slot` is in the small queue.
    @inlinable
    func isSmall(_ slot: Int32) -> Bool {
        marks[Int(slot)] & Self.smallBit != 0
    }

    /// The read counter of `slot`.
    @inlinable
    func counter(_ slot: Int32) -> UInt8 {
        marks[Int(slot)] & Self.counterMask
    }

    /// Counts a read of `slot`: the whole of a hit's work under this policy.
    @inlinable
    mutating func recordRead(_ slot: Int32) {
        let mark = marks[Int(slot)]
        if mark & Self.counterMask != Self.counterMask { marks[Int(slot)] = mark &+ 1 }
    }

    /// Counts a rewrite of `slot` (a write to a key already there) as a read, and keeps the small
    /// queue's cost in step with the new cost.
    @inlinable
    mutating func recordRewrite(_ slot: Int32, oldCost: Int, newCost: Int) {
        recordRead(slot)
        if isSmall(slot) { smallCost += newCost - oldCost }
    }

    /// Books `slot`, just linked into the queue `mark` names, with `mark`.
    @inlinable
    mutating func enter(_ slot: Int32, mark: UInt8, cost: Int) {
        marks[Int(slot)] = mark
        if mark & Self.smallBit != 0 {
            smallCount += 1
            smallCost += cost
        }
    }

    /// Moves `slot`, just unlinked from the small queue, to the main queue's books (its counter kept).
    @inlinable
    mutating func promote(_ slot: Int32, cost: Int) {
        marks[Int(slot)] &= ~Self.smallBit
        smallCount -= 1
        smallCost -= cost
    }

    /// Clears the books of `slot`, just unlinked, whose entry costs `cost`.
    @inlinable
    mutating func forget(_ slot: Int32, cost: Int) {
        if isSmall(slot) {
            smallCount -= 1
            smallCost -= cost
        }
        marks[Int(slot)] = 0
    }

    /// Whether the small queue holds at least its target share of a limit (of the entries there
    /// are, `count`, in a store with no limit).
    @usableFromInline
    func smallQueueIsFull(count: Int) -> Bool {
        if countLimit == nil && costLimit == nil { return smallCount >= Self.share(smallShare, of: count) }
        if let countLimit, smallCount >= Self.share(smallShare, of: countLimit) { return true }
        if let costLimit, smallCost >= Self.share(smallShare, of: costLimit) { return true }
        return false
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
    mutating func admitsToMain(hash: Int, cost: Int, count: Int, totalCost: Int) -> Bool {
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
    mutating func recordEviction(hash: Int, cost: Int, fromMain: Bool, liveCount: Int) {
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
