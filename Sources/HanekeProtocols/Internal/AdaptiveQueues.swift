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
    /// The small queue's target share of the limits and the ghost that moves it.
    @usableFromInline var balance: SmallQueueBalance
    /// The store's limits; both `nil` for an unbounded store (trimmed by hand).
    @usableFromInline var countLimit: Int? { balance.countLimit }
    @usableFromInline var costLimit: Int? { balance.costLimit }

    @inlinable static var smallBit: UInt8 { SmallQueueBalance.smallQueueBit }
    @inlinable static var counterMask: UInt8 { SmallQueueBalance.counterMask }

    /// Creates the state for a list with these limits.
    @usableFromInline
    init(countLimit: Int?, costLimit: Int?) {
        balance = SmallQueueBalance(countLimit: countLimit, costLimit: costLimit)
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
        if countLimit == nil && costLimit == nil { return smallCount >= balance.smallTarget(of: count) }
        if let countLimit, smallCount >= balance.smallTarget(of: countLimit) { return true }
        if let costLimit, smallCost >= balance.smallTarget(of: costLimit) { return true }
        return false
    }
}
