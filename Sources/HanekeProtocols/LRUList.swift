/// The recency index of `MemoryStore` and `FileStore`: a hash index into an array of nodes threaded on
/// a doubly linked list, most recently used at the head. Every operation is O(1) (amortised for the dictionary);
/// freed nodes are reused through a free list, so a steady-state store does not allocate per write.
///
/// Not thread-safe: each store keeps it behind its lock. Methods report what they dropped so the
/// store can count evictions (and, for files, delete them).
///
/// `@inlinable` throughout so that stores in other modules get code specialised for their key and
/// value types: this is the hot path of every memory read. Public (like `Locked`) so that
/// `MemoryStore` can inline it into your code, and so that stores you write can use it.
@frozen
public struct LRUList<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    @usableFromInline
    struct Node: Sendable {
        @usableFromInline var key: Key?
        @usableFromInline var value: Value?
        @usableFromInline var cost: Int
        /// Seconds since the reference date after which the entry is stale; `.infinity` for never.
        @usableFromInline var expiry: Double
        @usableFromInline var previous: Int32
        @usableFromInline var next: Int32

        @inlinable
        init(key: Key?, value: Value?, cost: Int, expiry: Double, previous: Int32, next: Int32) {
            self.key = key
            self.value = value
            self.cost = cost
            self.expiry = expiry
            self.previous = previous
            self.next = next
        }
    }

    @inlinable static var none: Int32 { -1 }

    @usableFromInline var index: [Key: Int32] = [:]
    @usableFromInline var nodes: ContiguousArray<Node> = []
    @usableFromInline var head: Int32 = Self.none
    @usableFromInline var tail: Int32 = Self.none
    @usableFromInline var freeHead: Int32 = Self.none

    /// The number of entries.
    public var count: Int { storedCount }
    @usableFromInline var storedCount = 0
    /// The sum of the entries' costs.
    public var totalCost: Int { storedTotalCost }
    @usableFromInline var storedTotalCost = 0

    /// Creates an empty list.
    @inlinable
    public init() {}

    /// The value for `key` when it has not expired at `now`, made most recently used. An expired
    /// entry is removed and reported in `expired`.
    @inlinable
    public mutating func value(forKey key: Key, now: Double, expired: inout Bool) -> Value? {
        guard let slot = index[key] else { return nil }
        let i = Int(slot)
        if nodes[i].expiry <= now {
            unlink(slot)
            free(slot)
            expired = true
            return nil
        }
        moveToHead(slot)
        return nodes[i].value
    }

    /// Whether an unexpired entry exists, without changing the order.
    @inlinable
    public func contains(_ key: Key, now: Double) -> Bool {
        guard let slot = index[key] else { return false }
        return nodes[Int(slot)].expiry > now
    }

    /// Stores `value` as the most recently used entry, replacing any entry for `key`.
    @inlinable
    public mutating func setValue(_ value: Value, forKey key: Key, cost: Int, expiry: Double) {
        if let slot = index[key] {
            let i = Int(slot)
            storedTotalCost += cost - nodes[i].cost
            nodes[i].value = value
            nodes[i].cost = cost
            nodes[i].expiry = expiry
            moveToHead(slot)
            return
        }
        let node = Node(key: key, value: value, cost: cost, expiry: expiry, previous: Self.none, next: Self.none)
        let slot: Int32
        if freeHead != Self.none {
            slot = freeHead
            freeHead = nodes[Int(slot)].next
            nodes[Int(slot)] = node
        } else {
            precondition(nodes.count < Int(Int32.max), "MemoryStore holds at most \(Int32.max) entries")
            slot = Int32(nodes.count)
            nodes.append(node)
        }
        index[key] = slot
        storedCount += 1
        storedTotalCost += cost
        linkAtHead(slot)
    }

    /// Removes the entry for `key`; returns whether there was one.
    @inlinable @discardableResult
    public mutating func removeValue(forKey key: Key) -> Bool {
        guard let slot = index[key] else { return false }
        unlink(slot)
        free(slot)
        return true
    }

    /// Removes the least recently used entry and returns its key and value, or `nil` when empty.
    @inlinable @discardableResult
    public mutating func removeLeastRecentlyUsed() -> (key: Key, value: Value)? {
        guard tail != Self.none else { return nil }
        let slot = tail
        let node = nodes[Int(slot)]
        unlink(slot)
        free(slot)
        guard let key = node.key, let value = node.value else { return nil }
        return (key, value)
    }

    /// Makes the entry for `key` the most recently used and lets `update` change its value (not its
    /// cost); returns `false`, changing nothing, when there is no such entry.
    @inlinable
    public mutating func refresh(_ key: Key, update: (inout Value) -> Void) -> Bool {
        guard let slot = index[key] else { return false }
        moveToHead(slot)
        if var value = nodes[Int(slot)].value {
            update(&value)
            nodes[Int(slot)].value = value
        }
        return true
    }

    /// The value for `key` without changing the order or checking expiry.
    @inlinable
    public func peekValue(forKey key: Key) -> Value? {
        guard let slot = index[key] else { return nil }
        return nodes[Int(slot)].value
    }

    /// Removes every entry whose expiry is at or before `now`; returns how many.
    @inlinable
    public mutating func removeExpired(now: Double) -> Int {
        var removed = 0
        var slot = head
        while slot != Self.none {
            let next = nodes[Int(slot)].next
            if nodes[Int(slot)].expiry <= now {
                unlink(slot)
                free(slot)
                removed += 1
            }
            slot = next
        }
        return removed
    }

    /// Removes everything and releases the storage.
    @inlinable
    public mutating func removeAll() {
        self = LRUList()
    }

    /// The keys from most to least recently used.
    @inlinable
    public var keysByRecency: [Key] {
        var keys: [Key] = []
        keys.reserveCapacity(count)
        var slot = head
        while slot != Self.none {
            let node = nodes[Int(slot)]
            if let key = node.key { keys.append(key) }
            slot = node.next
        }
        return keys
    }

    // MARK: - Links

    @inlinable
    mutating func linkAtHead(_ slot: Int32) {
        nodes[Int(slot)].previous = Self.none
        nodes[Int(slot)].next = head
        if head != Self.none { nodes[Int(head)].previous = slot }
        head = slot
        if tail == Self.none { tail = slot }
    }

    @inlinable
    mutating func unlink(_ slot: Int32) {
        let previous = nodes[Int(slot)].previous
        let next = nodes[Int(slot)].next
        if previous != Self.none { nodes[Int(previous)].next = next } else { head = next }
        if next != Self.none { nodes[Int(next)].previous = previous } else { tail = previous }
    }

    @inlinable
    mutating func moveToHead(_ slot: Int32) {
        guard slot != head else { return }
        unlink(slot)
        linkAtHead(slot)
    }

    /// Returns an unlinked node to the free list, dropping its key and value.
    @inlinable
    mutating func free(_ slot: Int32) {
        let i = Int(slot)
        if let key = nodes[i].key { index.removeValue(forKey: key) }
        storedCount -= 1
        storedTotalCost -= nodes[i].cost
        nodes[i].key = nil
        nodes[i].value = nil
        nodes[i].cost = 0
        nodes[i].next = freeHead
        nodes[i].previous = Self.none
        freeHead = slot
    }
}
