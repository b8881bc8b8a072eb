/// `EvictionPolicy.adaptive` on the list: admission of a new key to one of the two queues, and the
/// choice of a victim. See `AdaptiveQueues` for the state.
extension LRUList {
    /// Links the new entry in `slot` into the queue the ghost rule picks for it.
    @inlinable
    mutating func admit(_ slot: Int32, key: Key, cost: Int) {
        let toMain = adaptive!.balance.admitsToMain(hash: key.hashValue, cost: cost, count: count, totalCost: totalCost)
        linkAtFront(slot, mark: toMain ? 0 : AdaptiveQueues.smallBit, cost: cost)
        if toMain { adaptiveMoves?.append(key) }
    }

    /// Makes the list remember the keys its adaptive queues move (see ``takeAdaptiveMoves()``).
    package mutating func tracksAdaptiveMoves() {
        if adaptive != nil, adaptiveMoves == nil { adaptiveMoves = [] }
    }

    /// The keys the adaptive queues moved since the last call, in the order of their last move,
    /// each with its mark now (see ``adaptiveMark(forKey:)``): replayed in this order through
    /// ``restoreAdaptiveMark(_:forKey:)`` after the writes, they put each key where it is.
    package mutating func takeAdaptiveMoves() -> [(key: Key, mark: UInt8)] {
        guard let moves = adaptiveMoves, !moves.isEmpty else { return [] }
        adaptiveMoves = []
        var seen = Set<Key>()
        var result: [(key: Key, mark: UInt8)] = []
        for key in moves.reversed() where seen.insert(key).inserted {
            if let mark = adaptiveMark(forKey: key) { result.append((key, mark)) }
        }
        return result.reversed()
    }

    /// Links the unlinked `slot` at the front of the queue `mark` names, with `mark`'s counter.
    @inlinable
    mutating func linkAtFront(_ slot: Int32, mark: UInt8, cost: Int) {
        adaptive!.enter(slot, mark: mark, cost: cost)
        guard mark & AdaptiveQueues.smallBit != 0 else {
            linkAtHead(slot)
            return
        }
        let oldFront = adaptive!.smallHead
        links[Int(slot)] = Link(previous: Self.none, next: oldFront)
        if oldFront != Self.none { links[Int(oldFront)].previous = slot } else { adaptive!.smallTail = slot }
        adaptive!.smallHead = slot
    }

    /// The queue and read counter of `key`'s entry under the adaptive policy, as one byte for a
    /// journal (`0x80` set for the small queue, the counter in the low two bits); `nil` under LRU
    /// or when there is no such entry.
    package func adaptiveMark(forKey key: Key) -> UInt8? {
        guard let adaptive, let slot = entries[key]?.slot else { return nil }
        return adaptive.marks[Int(slot)]
    }

    /// Moves `key`'s entry to the front of the queue `mark` names (see ``adaptiveMark(forKey:)``),
    /// with `mark`'s counter: how a store restores the queues it journaled, replaying the marks
    /// from each queue's oldest entry to its newest. Does nothing under LRU or for a missing key.
    package mutating func restoreAdaptiveMark(_ mark: UInt8, forKey key: Key) {
        guard adaptive != nil, let entry = entries[key] else { return }
        unlink(entry.slot)
        adaptive!.forget(entry.slot, cost: entry.cost)
        linkAtFront(entry.slot, mark: mark & (AdaptiveQueues.smallBit | AdaptiveQueues.counterMask), cost: entry.cost)
    }

    /// Removes the adaptive policy's next victim and returns its key and value, or `nil` when empty.
    ///
    /// When the small queue holds at least its target (or the main queue is empty), its oldest
    /// entries move to the main queue if they were read while in it, until one that was not is
    /// evicted; otherwise, or when the small queue empties, the main queue's oldest entries go round
    /// again with their counter decremented while it is positive, until one at zero is evicted.
    /// Amortised O(1): a counter is at most 3, and a promoted entry leaves the small queue for good.
    @inlinable
    mutating func removeAdaptiveVictim() -> (key: Key, value: Value)? {
        guard !entries.isEmpty else { return nil }
        if adaptive!.smallTail != Self.none, adaptive!.smallQueueIsFull(count: count) || tail == Self.none {
            while case let slot = adaptive!.smallTail, slot != Self.none, let key = keys[Int(slot)] {
                guard adaptive!.counter(slot) > 0 else { return evictAdaptive(key, fromMain: false) }
                let cost = entries[key]?.cost ?? 0
                unlink(slot)
                adaptive!.promote(slot, cost: cost)
                linkAtHead(slot)
                adaptiveMoves?.append(key)
            }
        }
        while case let slot = tail, slot != Self.none, let key = keys[Int(slot)] {
            guard adaptive!.counter(slot) > 0 else { return evictAdaptive(key, fromMain: true) }
            adaptive!.marks[Int(slot)] &-= 1
            moveToHead(slot)
            adaptiveMoves?.append(key)
        }
        return nil
    }

    /// Removes `key`'s entry and remembers it in the ghost.
    @inlinable
    mutating func evictAdaptive(_ key: Key, fromMain: Bool) -> (key: Key, value: Value)? {
        guard let entry = removeEntry(key) else { return nil }
        adaptive!.balance.recordEviction(hash: key.hashValue, cost: entry.cost, fromMain: fromMain, liveCount: count)
        return (key, entry.value)
    }
}
