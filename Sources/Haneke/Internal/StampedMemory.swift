import Foundation
import HanekeProtocols
import MemoryStore
import StoreFolders

/// A value of a format's memory layer with the tag of its key's change counter, taken before the
/// value was read from disk or written (``ChangeCounters/tag(forKey:)``).
struct Stamped<Value: Sendable>: Sendable {
    var value: Value
    var tag: UInt64
}

/// The tag that writes of `key` into the memory layer keep, bound by ``CoherentChain`` around an
/// operation of its chain: the counter as it was before the disk was read or written.
struct PendingTag: Sendable {
    var key: String
    var tag: UInt64

    @TaskLocal static var current: PendingTag?
}

/// A format's memory layer: a `MemoryStore` whose entries keep a tag of their key's change counter,
/// and which serves an entry only while the counter has not moved (another process sharing the
/// folder set or removed a key of its bucket); a stale entry is removed and is a miss, which the
/// chain below reads from disk again. The check costs one atomic load of shared memory per hit.
/// The methods are synchronous, as `MemoryStore`'s, and thread-safe.
struct StampedMemory<Value: Sendable>: Store {
    typealias Key = String

    /// The entries and their tags.
    let base: MemoryStore<String, Stamped<Value>>
    /// The counters of the format's folder (never opened for a format without a folder).
    let counters: ChangeCounters

    /// The layer's name in statistics.
    var name: String { base.name }
    /// The number of entries, stale ones included.
    var count: Int { base.count }
    /// Their total cost.
    var totalCost: Int { base.totalCost }

    /// Whether `key` has an entry (stale or not).
    func containsValue(forKey key: String) -> Bool { base.containsValue(forKey: key) }

    /// The tag a write of `key` keeps: the pending one of this task's operation on `key`, or the
    /// counter now.
    private func tag(forKey key: String) -> UInt64 {
        if let pending = PendingTag.current, pending.key == key { return pending.tag }
        return counters.tag(forKey: key)
    }

    /// The value for `key` while its tag is current; a stale entry is removed (synchronous: an
    /// async caller would otherwise pick the protocol's requirement). Written out rather than
    /// through key paths or closures: this is the hit path.
    @inline(__always)
    func currentValue(forKey key: String) -> Value? {
        guard let stamped = base.value(forKey: key) else { return nil }
        if counters.isCurrent(stamped.tag) { return stamped.value }
        base.removeValue(forKey: key)
        return nil
    }

    /// The entry for `key` while its tag is current; a stale entry is removed.
    @inline(__always)
    func currentEntry(forKey key: String) -> StoreEntry<Value>? {
        guard let stamped = base.entry(forKey: key) else { return nil }
        if counters.isCurrent(stamped.value.tag) { return StoreEntry(value: stamped.value.value, attributes: stamped.attributes) }
        base.removeValue(forKey: key)
        return nil
    }

    func value(forKey key: String) -> Value? {
        currentValue(forKey: key)
    }

    func entry(forKey key: String) -> StoreEntry<Value>? {
        currentEntry(forKey: key)
    }

    func entry<Transformed: Sendable>(
        forKey key: String, transformedBy transform: @escaping @Sendable (Value) throws -> Transformed
    ) throws -> StoreEntry<Transformed>? {
        try currentEntry(forKey: key)?.map(transform)
    }

    func attributes(forKey key: String) -> EntryAttributes? {
        currentEntry(forKey: key)?.attributes
    }

    func setValue(_ value: Value, forKey key: String) {
        base.setValue(Stamped(value: value, tag: tag(forKey: key)), forKey: key)
    }

    func setEntry(_ entry: StoreEntry<Value>, forKey key: String) throws {
        try setEntry(entry, forKey: key, tag: tag(forKey: key))
    }

    /// Writes `entry` with `tag` (the preloader's, taken before it read the entry from disk).
    func setEntry(_ entry: StoreEntry<Value>, forKey key: String, tag: UInt64) throws {
        try base.setEntry(entry.map { Stamped(value: $0, tag: tag) }, forKey: key)
    }

    func setAttributes(_ attributes: EntryAttributes, forKey key: String) throws -> Bool {
        try base.setAttributes(attributes, forKey: key)
    }

    func addEntry(_ entry: StoreEntry<Value>, forKey key: String) throws -> AddResult<Value> {
        // A stale entry is no entry: removed first, so that the add decides on the rest.
        _ = currentEntry(forKey: key)
        return try base.addEntry(entry.map { Stamped(value: $0, tag: tag(forKey: key)) }, forKey: key).map(\.value)
    }

    /// Gives the entry of `key` `newTag` if it still keeps `tag` (the entry of a change this
    /// process made, current again once the change was counted).
    func retag(_ key: String, from tag: UInt64, to newTag: UInt64) {
        base.updateValue(forKey: key) { stamped in
            if stamped.tag == tag { stamped.tag = newTag }
        }
    }

    /// The keys from the most recently used (for tests).
    var keysByRecency: [String] { base.keysByRecency }

    func removeValue(forKey key: String) {
        base.removeValue(forKey: key)
    }

    func removeAll() {
        base.removeAll()
    }

    var layerStatistics: [LayerStatistics] { base.layerStatistics }
}
