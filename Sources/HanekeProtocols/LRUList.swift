/// The recency index of `MemoryStore` and `FileStore`: a dictionary from each key to its entry (value,
/// cost, expiry and slot), and the slots threaded on a doubly linked list, most recently used at the
/// head. A read is one dictionary lookup, like a plain `Dictionary`'s, plus a move to the head that
/// touches only the links: 8 bytes a slot in an array of their own, mostly in the processor's cache
/// even when the values are not (BENCHMARKS.md, workload 1). The keys sit in a third array, by slot,
/// for eviction from the tail. Every operation is O(1) (amortised for the dictionary);
/// freed slots are reused through a free list, so a steady-state store does not grow its arrays.
///
/// Not thread-safe: each store keeps it behind its lock. Methods report what they dropped so the
/// store can count evictions (and, for files, delete them).
///
/// `@inlinable` throughout so that stores in other modules get code specialised for their key and
/// value types: this is the hot path of every memory read. `package` and `@usableFromInline`, not
/// public: `MemoryStore`'s public `@inlinable` methods still inline it into your code (a
/// `@usableFromInline` declaration is in the module's binary interface, not in its API), and it is
/// no part of the API (issue 14).
@usableFromInline
package struct LRUList<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    /// What the dictionary holds for a key.
    @usableFromInline
    struct Entry: Sendable {
        @usableFromInline var value: Value
        @usableFromInline var cost: Int
        /// Seconds since the reference date after which the entry is stale; `.infinity` for never.
        @usableFromInline var expiry: Double
        @usableFromInline var slot: Int32

        @inlinable
        init(value: Value, cost: Int, expiry: Double, slot: Int32) {
            self.value = value
            self.cost = cost
            self.expiry = expiry
            self.slot = slot
        }
    }

    /// A slot's neighbours in recency order (`next` also threads the free list).
    @usableFromInline
    struct Link: Sendable {
        @usableFromInline var previous: Int32
        @usableFromInline var next: Int32

        @inlinable
        init(previous: Int32, next: Int32) {
            self.previous = previous
            self.next = next
        }
    }

    @inlinable static var none: Int32 { -1 }

    @usableFromInline var entries: [Key: Entry] = [:]
    /// `keys[slot]` is the key whose entry has that slot; `nil` for a free slot.
    @usableFromInline var keys: ContiguousArray<Key?> = []
    /// `links[slot]` places the slot in recency order (or on the free list).
    @usableFromInline var links: ContiguousArray<Link> = []
    @usableFromInline var head: Int32 = Self.none
    @usableFromInline var tail: Int32 = Self.none
    @usableFromInline var freeHead: Int32 = Self.none
    /// The queues of `EvictionPolicy.adaptive`; `nil` for least recently used.
    @usableFromInline var adaptive: AdaptiveQueues?
    /// The keys the adaptive queues moved other than by a write (admitted to the main queue from
    /// the ghost, promoted, gone round the main queue) since ``takeAdaptiveMoves()`` last took
    /// them; `nil` unless ``tracksAdaptiveMoves()`` was called (a store that journals them).
    @usableFromInline var adaptiveMoves: [Key]?

    /// The number of entries.
    @inlinable package var count: Int { entries.count }
    /// The sum of the entries' costs. Saturating: a sum beyond `Int.max` (costs a cost function
    /// made up) stays at `Int.max` rather than trapping, and a negative cost counts as 0.
    @inlinable package var totalCost: Int { storedTotalCost }
    @usableFromInline var storedTotalCost = 0

    /// Creates an empty list that evicts least recently used entries first.
    @inlinable
    package init() {}

    /// Creates an empty list that evicts by `policy`.
    /// - Parameters:
    ///   - policy: What to evict first.
    ///   - countLimit: The store's count limit, if any.
    ///   - costLimit: The store's cost limit, if any. The adaptive queues split whichever limit
    ///     binds.
    package init(policy: EvictionPolicy, countLimit: Int?, costLimit: Int?) {
        if policy == .adaptive {
            adaptive = AdaptiveQueues(countLimit: countLimit, costLimit: costLimit)
        }
    }

    /// The policy this list evicts by.
    package var policy: EvictionPolicy { adaptive == nil ? .leastRecentlyUsed : .adaptive }

    /// The value for `key` when it has not expired at `now`, made most recently used. An expired
    /// entry is removed and reported in `expired`.
    @inlinable
    package mutating func value(forKey key: Key, now: Double, expired: inout Bool) -> Value? {
        guard let entry = entries[key] else { return nil }
        if entry.expiry <= now {
            removeEntry(key)
            expired = true
            return nil
        }
        recordRead(entry.slot)
        return entry.value
    }

    /// Whether an unexpired entry exists, without changing the order.
    /// Removes every entry expired at `now`, telling `removed` each key; how many.
    @inlinable
    package mutating func removeExpired(now: Double, _ removed: (Key) -> Void) -> Int {
        var count = 0
        for first in [head, adaptive?.smallHead ?? Self.none] {
            count += removeExpired(now: now, from: first, removed)
        }
        return count
    }

    /// ``removeExpired(now:_:)`` over the queue starting at `first`.
    @inlinable
    mutating func removeExpired(now: Double, from first: Int32, _ removed: (Key) -> Void) -> Int {
        var count = 0
        var slot = first
        while slot != Self.none {
            let next = links[Int(slot)].next
            if let key = keys[Int(slot)], let entry = entries[key], entry.expiry <= now {
                removeEntry(key)
                removed(key)
                count += 1
            }
            slot = next
        }
        return count
    }

    /// The value and expiry for `key`, made the most recently used; `nil` when there is none or it
    /// has expired at `now()` (then it is removed and `expired` set). The clock is read only for an
    /// entry that expires, so a store whose entries never expire never reads it.
    @inlinable
    package mutating func valueAndExpiry(
        forKey key: Key, now: () -> Double, expired: inout Bool
    ) -> (value: Value, expiry: Double)? {
        var expiry = Double.infinity
        guard let value = value(forKey: key, now: now, expired: &expired, expiry: &expiry) else { return nil }
        return (value, expiry)
    }

    /// ``valueAndExpiry(forKey:now:expired:)`` without a tuple (whose metadata an unspecialised
    /// caller looks up on every call): the expiry is written to `expiry`.
    @inlinable
    package mutating func value(forKey key: Key, now: () -> Double, expired: inout Bool, expiry: inout Double) -> Value? {
        guard let entry = entries[key] else { return nil }
        if entry.expiry != .infinity, entry.expiry <= now() {
            removeEntry(key)
            expired = true
            return nil
        }
        recordRead(entry.slot)
        expiry = entry.expiry
        return entry.value
    }

    /// The value and expiry for `key` if it has not expired at `now()`, without changing the order.
    @inlinable
    package func peekValueAndExpiry(forKey key: Key, now: () -> Double) -> (value: Value, expiry: Double)? {
        guard let entry = entries[key] else { return nil }
        if entry.expiry != .infinity, entry.expiry <= now() { return nil }
        return (entry.value, entry.expiry)
    }

    /// Changes the expiry of `key` and its value in place, without changing the order or the cost;
    /// returns `false` when there is no such key.
    @inlinable
    package mutating func update(_ key: Key, expiry: Double, value update: (inout Value) -> Void) -> Bool {
        guard let position = entries.index(forKey: key) else { return false }
        entries.values[position].expiry = expiry
        update(&entries.values[position].value)
        return true
    }

    @inlinable
    package func contains(_ key: Key, now: Double) -> Bool {
        guard let entry = entries[key] else { return false }
        return entry.expiry > now
    }

    /// Stores `value` as the most recently used entry, replacing any entry for `key`.
    ///
    /// The key is hashed once, new or not: a slot is taken first and given back when the key
    /// already has one (a write of a new key, as every promotion into memory is, hashed it twice).
    @inlinable
    package mutating func setValue(_ value: Value, forKey key: Key, cost: Int, expiry: Double) {
        let cost = max(0, cost)
        let fresh = takeSlot()
        let replaced = Self.replace(
            &entries[key, default: Entry(value: value, cost: cost, expiry: expiry, slot: fresh)],
            unlessItHas: fresh, with: value, cost: cost, expiry: expiry
        )
        if let replaced {
            // An existing key, replaced in place.
            giveBack(fresh)
            storedTotalCost = Self.adding(Self.subtracting(storedTotalCost, replaced.cost), cost)
            if adaptive == nil {
                moveToHead(replaced.slot)
            } else {
                adaptive!.recordRewrite(replaced.slot, oldCost: replaced.cost, newCost: cost)
            }
            return
        }
        keys[Int(fresh)] = key
        storedTotalCost = Self.adding(storedTotalCost, cost)
        if adaptive == nil {
            linkAtHead(fresh)
        } else {
            admit(fresh, key: key, cost: cost)
        }
    }

    /// Replaces `entry`'s value, cost and expiry unless it is the one just inserted with slot
    /// `fresh`; the slot and cost it had, or `nil` when it is new.
    @inlinable
    static func replace(
        _ entry: inout Entry, unlessItHas fresh: Int32, with value: Value, cost: Int, expiry: Double
    ) -> (slot: Int32, cost: Int)? {
        guard entry.slot != fresh else { return nil }
        let replaced = (entry.slot, entry.cost)
        entry.value = value
        entry.cost = cost
        entry.expiry = expiry
        return replaced
    }

    /// A free slot: the first of the free list, or a new one at the end.
    @inlinable
    mutating func takeSlot() -> Int32 {
        if freeHead != Self.none {
            let slot = freeHead
            freeHead = links[Int(slot)].next
            return slot
        }
        precondition(keys.count < Int(Int32.max), "MemoryStore holds at most \(Int32.max) entries")
        keys.append(nil)
        links.append(Link(previous: Self.none, next: Self.none))
        adaptive?.marks.append(0)
        return Int32(keys.count - 1)
    }

    /// Puts a slot no key holds back on the free list.
    @inlinable
    mutating func giveBack(_ slot: Int32) {
        links[Int(slot)] = Link(previous: Self.none, next: freeHead)
        freeHead = slot
    }

    /// Removes the entry for `key`; returns whether there was one.
    @inlinable @discardableResult
    package mutating func removeValue(forKey key: Key) -> Bool {
        removeEntry(key) != nil
    }

    /// Removes the entry the policy gives up first — the least recently used one, or the adaptive
    /// queues' victim — and returns its key and value, or `nil` when empty.
    @inlinable @discardableResult
    package mutating func removeLeastRecentlyUsed() -> (key: Key, value: Value)? {
        if adaptive != nil { return removeAdaptiveVictim() }
        guard tail != Self.none, let key = keys[Int(tail)], let entry = removeEntry(key) else { return nil }
        return (key, entry.value)
    }

    /// Removes entries in the policy's order until at most `countLimit` entries remain and their
    /// costs add up to at most `costLimit` (`nil`: no such limit), handing each to `evicted`.
    @inlinable
    package mutating func evict(toCount countLimit: Int?, toCost costLimit: Int?, _ evicted: (Key, Value) -> Void) {
        while let countLimit, count > countLimit, let (key, value) = removeLeastRecentlyUsed() {
            evicted(key, value)
        }
        while let costLimit, totalCost > costLimit, let (key, value) = removeLeastRecentlyUsed() {
            evicted(key, value)
        }
    }

    /// Makes the entry for `key` the most recently used and lets `update` change its value (not its
    /// cost); returns `false`, changing nothing, when there is no such entry.
    @inlinable
    package mutating func refresh(_ key: Key, update: (inout Value) -> Void) -> Bool {
        guard let slot = entries[key]?.slot else { return false }
        recordRead(slot)
        update(&entries[key]!.value)
        return true
    }

    /// The value for `key` without changing the order or checking expiry.
    @inlinable
    package func peekValue(forKey key: Key) -> Value? {
        entries[key]?.value
    }

    /// Removes everything and releases the storage.
    @inlinable
    package mutating func removeAll() {
        let policy = adaptive.map { AdaptiveQueues(countLimit: $0.countLimit, costLimit: $0.costLimit) }
        let tracksMoves = adaptiveMoves != nil
        self = LRUList()
        adaptive = policy
        if tracksMoves { adaptiveMoves = [] }
    }

    /// The keys from most to least recently used. Under the adaptive policy: the main queue from
    /// its newest entry to its oldest, then the small queue likewise (the small queue's oldest
    /// entries are usually the next to go, unless they were read).
    @inlinable
    package var keysByRecency: [Key] {
        var result: [Key] = []
        result.reserveCapacity(count)
        appendKeys(from: head, to: &result)
        if let adaptive { appendKeys(from: adaptive.smallHead, to: &result) }
        return result
    }

    /// Appends the keys of the queue starting at `first`, front to back.
    @inlinable
    func appendKeys(from first: Int32, to result: inout [Key]) {
        var slot = first
        while slot != Self.none {
            if let key = keys[Int(slot)] { result.append(key) }
            slot = links[Int(slot)].next
        }
    }

    // MARK: - Links

    /// Removes `key`'s entry, hashing the key once, and frees its slot; returns the entry.
    @inlinable @discardableResult
    mutating func removeEntry(_ key: Key) -> Entry? {
        guard let entry = entries.removeValue(forKey: key) else { return nil }
        storedTotalCost = Self.subtracting(storedTotalCost, entry.cost)
        unlink(entry.slot)
        adaptive?.forget(entry.slot, cost: entry.cost)
        keys[Int(entry.slot)] = nil
        giveBack(entry.slot)
        return entry
    }

    @inlinable
    mutating func linkAtHead(_ slot: Int32) {
        links[Int(slot)] = Link(previous: Self.none, next: head)
        if head != Self.none { links[Int(head)].previous = slot }
        head = slot
        if tail == Self.none { tail = slot }
    }

    /// Takes `slot` out of its queue (the recency list, or either adaptive queue).
    @inlinable
    mutating func unlink(_ slot: Int32) {
        let link = links[Int(slot)]
        if link.previous != Self.none {
            links[Int(link.previous)].next = link.next
        } else if adaptive?.isSmall(slot) == true {
            adaptive!.smallHead = link.next
        } else {
            head = link.next
        }
        if link.next != Self.none {
            links[Int(link.next)].previous = link.previous
        } else if adaptive?.isSmall(slot) == true {
            adaptive!.smallTail = link.previous
        } else {
            tail = link.previous
        }
    }

    /// Counts a read of `slot`: a move to the head of the recency list, or a bump of its counter.
    @inlinable
    mutating func recordRead(_ slot: Int32) {
        if adaptive == nil {
            moveToHead(slot)
        } else {
            adaptive!.recordRead(slot)
        }
    }

    @inlinable
    mutating func moveToHead(_ slot: Int32) {
        guard slot != head else { return }
        unlink(slot)
        linkAtHead(slot)
    }

    // MARK: - Saturating cost arithmetic

    /// `total + cost`, or `Int.max` when that does not fit.
    @inlinable
    static func adding(_ total: Int, _ cost: Int) -> Int {
        let (sum, overflow) = total.addingReportingOverflow(cost)
        return overflow ? .max : sum
    }

    /// `total - cost`, never below 0 (a total that saturated no longer holds every cost).
    @inlinable
    static func subtracting(_ total: Int, _ cost: Int) -> Int {
        total >= cost ? total - cost : 0
    }
}
