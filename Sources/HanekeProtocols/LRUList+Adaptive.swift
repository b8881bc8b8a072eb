/// `EvictionPolicy.adaptive` on the list: admission of a new key to one of the two queues, and the
/// choice of a victim. See `AdaptiveQueues` for the state.
extension LRUList {
    /// Links the new entry in `slot` into the queue the ghost rule picks for it.
    @inlinable
    mutating func admit(_ slot: Int32, key: Key, cost: Int) {
        let weight = adaptive!.weight(ofCost: cost)
        if adaptive!.admitsToMain(hash: key.hashValue, weight: weight) {
            adaptive!.marks[Int(slot)] = 0
            linkAtHead(slot)
        } else {
            adaptive!.marks[Int(slot)] = AdaptiveQueues.smallBit
            let oldFront = adaptive!.smallHead
            links[Int(slot)] = Link(previous: Self.none, next: oldFront)
            if oldFront != Self.none { links[Int(oldFront)].previous = slot } else { adaptive!.smallTail = slot }
            adaptive!.smallHead = slot
            adaptive!.smallWeight += weight
        }
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
        let total = adaptive!.weighsByCost ? totalCost : count
        if adaptive!.smallTail != Self.none, adaptive!.smallWeight >= adaptive!.smallTarget(total: total) || tail == Self.none {
            while case let slot = adaptive!.smallTail, slot != Self.none, let key = keys[Int(slot)] {
                guard adaptive!.counter(slot) > 0 else { return evictAdaptive(key, fromMain: false) }
                let cost = adaptive!.weighsByCost ? entries[key]?.cost ?? 0 : 1
                unlink(slot)
                adaptive!.promote(slot, cost: cost)
                linkAtHead(slot)
            }
        }
        while case let slot = tail, slot != Self.none, let key = keys[Int(slot)] {
            guard adaptive!.counter(slot) > 0 else { return evictAdaptive(key, fromMain: true) }
            adaptive!.marks[Int(slot)] &-= 1
            moveToHead(slot)
        }
        return nil
    }

    /// Removes `key`'s entry and remembers it in the ghost.
    @inlinable
    mutating func evictAdaptive(_ key: Key, fromMain: Bool) -> (key: Key, value: Value)? {
        guard let entry = removeEntry(key) else { return nil }
        adaptive!.recordEviction(hash: key.hashValue, weight: adaptive!.weight(ofCost: entry.cost), fromMain: fromMain, liveCount: count)
        return (key, entry.value)
    }
}
