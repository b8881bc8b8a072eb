import Foundation
import HanekeProtocols
import Logging
import StoreFolders

/// A format's memory layer chained to its disk, kept coherent with the other processes that share
/// the folder through the folder's ``ChangeCounters``: every write, removal and `removeAll` counts
/// a change once the chain has made it (the disk included), and every value the memory layer
/// keeps carries the counter as it was before the disk was read or written, so that a change
/// another process makes meanwhile or later makes it stale (``StampedMemory``). Reads and writes
/// are otherwise the chain's.
///
/// A value written through this process stays current after its own write's count when no other
/// change of its bucket was counted since its tag was taken (``ChangeCounters/changed(forKey:since:)``):
/// a write followed by a read of the same key stays a memory hit.
struct CoherentChain<Value: Sendable, Bottom: Store<String, Value>>: Store {
    typealias Key = String

    let chain: ChainedStore<StampedMemory<Value>, Bottom>
    /// The chain's top, kept apart so that a hit does not copy the chain.
    private let memory: StampedMemory<Value>
    /// Waits for the first attempt to open the folder (which opens the counters), so that the tag
    /// of a change or a read from disk is taken from them.
    private let untilOpened: @Sendable () async -> Void

    private var counters: ChangeCounters { memory.counters }

    /// Chains `memory` to `bottom`.
    /// - Parameters:
    ///   - memory: The memory layer.
    ///   - bottom: The disk layers.
    ///   - logger: Where the chain logs failures.
    ///   - untilOpened: Waits for the first attempt to open the folder.
    init(memory: StampedMemory<Value>, bottom: Bottom, logger: Logger, untilOpened: @escaping @Sendable () async -> Void) {
        chain = memory.chained(to: bottom, logger: logger)
        self.memory = memory
        self.untilOpened = untilOpened
    }

    /// The tag of `key` now, once the counters are open (or the folder could not be opened).
    private func tag(forKey key: String) async -> UInt64 {
        if !counters.isOpen { await untilOpened() }
        return counters.tag(forKey: key)
    }

    /// Runs `operation` of the chain with the tag of `key` taken now, for what it writes into
    /// memory.
    private func tagging<T>(_ key: String, _ operation: () async throws -> T) async throws -> T {
        try await PendingTag.$current.withValue(PendingTag(key: key, tag: await tag(forKey: key))) {
            try await operation()
        }
    }

    /// Runs `operation`, a change of `key`, and counts it once made (or failed: part of it may
    /// have been made); the memory entry it wrote is current again when no other change was
    /// counted meanwhile.
    private func changing<T>(_ key: String, _ operation: () async throws -> T) async throws -> T {
        let tag = await tag(forKey: key)
        defer {
            if let current = counters.changed(forKey: key, since: tag) { memory.retag(key, from: tag, to: current) }
        }
        return try await PendingTag.$current.withValue(PendingTag(key: key, tag: tag)) { try await operation() }
    }

    func value(forKey key: String) async throws -> Value? {
        if let value = memory.currentValue(forKey: key) { return value }
        return try await tagging(key) { try await chain.readBottomEntryAndPromote(key)?.value }
    }

    func entry(forKey key: String) async throws -> StoreEntry<Value>? {
        if let entry = memory.currentEntry(forKey: key) { return entry }
        return try await tagging(key) { try await chain.readBottomEntryAndPromote(key) }
    }

    func entry<Transformed: Sendable>(
        forKey key: String, transformedBy transform: @escaping @Sendable (Value) throws -> Transformed
    ) async throws -> StoreEntry<Transformed>? {
        if let entry = memory.currentEntry(forKey: key) { return try entry.map(transform) }
        return try await tagging(key) { try await chain.readBottomEntryAndPromote(key)?.map(transform) }
    }

    func attributes(forKey key: String) async throws -> EntryAttributes? {
        try await chain.attributes(forKey: key)
    }

    func setValue(_ value: Value, forKey key: String) async throws {
        try await changing(key) { try await chain.setValue(value, forKey: key) }
    }

    func setEntry(_ entry: StoreEntry<Value>, forKey key: String) async throws {
        try await changing(key) { try await chain.setEntry(entry, forKey: key) }
    }

    func setAttributes(_ attributes: EntryAttributes, forKey key: String) async throws -> Bool {
        try await changing(key) { try await chain.setAttributes(attributes, forKey: key) }
    }

    func addEntry(_ entry: StoreEntry<Value>, forKey key: String) async throws -> AddResult<Value> {
        try await changing(key) { try await chain.addEntry(entry, forKey: key) }
    }

    func removeValue(forKey key: String) async throws {
        try await changing(key) { try await chain.removeValue(forKey: key) }
    }

    func removeAll() async throws {
        defer { counters.changedEverything() }
        try await chain.removeAll()
    }

    var layerStatistics: [LayerStatistics] { chain.layerStatistics }
}
