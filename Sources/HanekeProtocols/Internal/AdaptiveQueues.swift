/// The state `LRUList` keeps for `EvictionPolicy.adaptive` (S3-FIFO with a ghost-balanced small
/// queue): which of the two FIFO queues each slot is in and its read counter, the small queue's
/// ends and weight, its target share of the capacity, and the ghost of recently evicted keys.
///
/// The main queue is the list's own `head`/`tail`; the small queue is threaded through the same
/// `links` array between `smallHead` and `smallTail`, so a slot is in exactly one of them. Weights
/// are costs when the store is bounded by cost and 1 otherwise, so the queues split the limit that
/// binds. Not generic: the ghost keeps keys' hash values, never the keys.
@usableFromInline
struct AdaptiveQueues: Sendable {
    /// Per slot: `smallBit` when the slot is in the small queue; the low two bits count reads
    /// (saturating at 3).
    @usableFromInline var marks: ContiguousArray<UInt8> = []
    @usableFromInline var smallHead: Int32 = -1
    @usableFromInline var smallTail: Int32 = -1
    /// The sum of the small queue's weights.
    @usableFromInline var smallWeight = 0
    /// The limit the queues share, in weight units; `nil` for an unbounded store (trimmed by hand).
    @usableFromInline let capacity: Int?
    /// Whether an entry weighs its cost (a cost-bounded store) or 1.
    @usableFromInline let weighsByCost: Bool
    /// The small queue's target share of the capacity, moved by the ghost rule.
    private(set) var smallShare = Self.initialSmallShare
    private var ghost = GhostKeys()

    @inlinable static var smallBit: UInt8 { 0x80 }
    @inlinable static var counterMask: UInt8 { 0x03 }
    /// The small queue's share before any evidence: S3-FIFO's 10 %.
    static let initialSmallShare = 0.10
    /// The bounds of the small queue's share.
    static let smallShareRange = 0.01...0.90
    /// How far back, as a share of the capacity, an eviction still moves the small queue's target.
    static let balancingReach = 0.25

    /// Creates the state for a list bounded by `capacity` weight units.
    @usableFromInline
    init(capacity: Int?, weighsByCost: Bool) {
        self.capacity = capacity
        self.weighsByCost = weighsByCost
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
    /// queue's weight in step with the new cost.
    @inlinable
    mutating func recordRewrite(_ slot: Int32, oldCost: Int, newCost: Int) {
        recordRead(slot)
        if weighsByCost, isSmall(slot) { smallWeight += newCost - oldCost }
    }

    /// Moves `slot`, just unlinked from the small queue, to the main queue's books (its counter kept).
    @inlinable
    mutating func promote(_ slot: Int32, cost: Int) {
        marks[Int(slot)] &= ~Self.smallBit
        smallWeight -= weight(ofCost: cost)
    }

    /// Clears the books of `slot`, just unlinked and freed, whose entry cost `cost`.
    @inlinable
    mutating func forget(_ slot: Int32, cost: Int) {
        if isSmall(slot) { smallWeight -= weight(ofCost: cost) }
        marks[Int(slot)] = 0
    }

    /// What an entry of `cost` weighs.
    @inlinable
    func weight(ofCost cost: Int) -> Int {
        weighsByCost ? cost : 1
    }

    /// The small queue's target weight, for a list whose entries weigh `total` in all.
    @usableFromInline
    func smallTarget(total: Int) -> Int {
        max(1, Int(Double(capacity ?? total) * smallShare))
    }

    /// Decides the queue of a new key (whose hash is `hash`): the main queue when the small queue
    /// gave it up recently enough that the key has proved itself, the small queue otherwise. First
    /// applies the ghost rule: a key the small queue gave up within the reach grows its share by
    /// the key's weight; one the main queue gave up shrinks it.
    /// - Returns: Whether the key goes to the main queue.
    @usableFromInline
    mutating func admitsToMain(hash: Int, weight: Int) -> Bool {
        guard let capacity, capacity > 0, let found = ghost.take(hash) else { return false }
        let reach = Self.reach(of: capacity)
        if found.age <= reach {
            let step = Double(weight) / Double(capacity)
            let share = found.fromMain ? smallShare - step : smallShare + step
            smallShare = min(max(share, Self.smallShareRange.lowerBound), Self.smallShareRange.upperBound)
        }
        return !found.fromMain && found.age <= capacity - smallTarget(total: capacity)
    }

    /// Remembers that the key whose hash is `hash` was evicted from the small or the main queue.
    /// - Parameter liveCount: The entries left, to bound the ghost's size in a cost-bounded store.
    @usableFromInline
    mutating func recordEviction(hash: Int, weight: Int, fromMain: Bool, liveCount: Int) {
        guard let capacity, capacity > 0 else { return }
        let balancing = Self.reach(of: capacity)
        let reach = fromMain ? balancing : max(balancing, capacity - smallTarget(total: capacity))
        ghost.add(hash, weight: weight, fromMain: fromMain, reach: reach, mostKept: 2 * liveCount + 64)
    }

    private static func reach(of capacity: Int) -> Int {
        max(1, Int(Double(capacity) * balancingReach))
    }
}

/// The keys (by hash value) the queues evicted recently, without their values: for each of the two
/// queues, a clock of the weight it has evicted and a FIFO ring of (hash, clock) that forgets a key
/// once more than its reach was evicted after it. A key is in at most one of them.
private struct GhostKeys: Sendable {
    private var stamps: [Int: GhostStamp] = [:]
    private var small = GhostRing()
    private var main = GhostRing()

    /// Records the eviction of `hash` (weighing `weight`) from the main or the small queue, and
    /// forgets what fell out of that queue's reach or beyond `mostKept` records.
    mutating func add(_ hash: Int, weight: Int, fromMain: Bool, reach: Int, mostKept: Int) {
        if fromMain {
            main.add(hash, weight: weight, fromMain: true, reach: reach, mostKept: mostKept, stamps: &stamps)
        } else {
            small.add(hash, weight: weight, fromMain: false, reach: reach, mostKept: mostKept, stamps: &stamps)
        }
    }

    /// Forgets `hash`, returning which queue evicted it and how much weight that queue evicted
    /// since; `nil` when it is not remembered.
    mutating func take(_ hash: Int) -> (fromMain: Bool, age: Int)? {
        guard let stamp = stamps.removeValue(forKey: hash) else { return nil }
        let clock = stamp.fromMain ? main.clock : small.clock
        return (stamp.fromMain, clock - stamp.clock)
    }
}

/// When a ghost key was evicted (its queue's clock then) and by which queue.
private struct GhostStamp: Sendable, Equatable {
    var clock: Int
    var fromMain: Bool
}

/// A FIFO of (hash, clock) records in an array with a moving start, compacted when half is spent.
private struct GhostRing: Sendable {
    private var records: ContiguousArray<(hash: Int, clock: Int)> = []
    private var start = 0
    /// The weight evicted so far.
    private(set) var clock = 0

    /// Appends `hash`, stamps it in `stamps`, and drops the records beyond `reach` or `mostKept`
    /// (and their stamps, unless the key was evicted again since).
    mutating func add(
        _ hash: Int, weight: Int, fromMain: Bool, reach: Int, mostKept: Int, stamps: inout [Int: GhostStamp]
    ) {
        stamps[hash] = GhostStamp(clock: clock, fromMain: fromMain)
        records.append((hash, clock))
        clock += max(1, weight)
        while start < records.count, clock - records[start].clock > reach || records.count - start > mostKept {
            let oldest = records[start]
            if stamps[oldest.hash] == GhostStamp(clock: oldest.clock, fromMain: fromMain) {
                stamps.removeValue(forKey: oldest.hash)
            }
            start += 1
        }
        if start >= 64, start * 2 >= records.count {
            records.removeFirst(start)
            start = 0
        }
    }
}
