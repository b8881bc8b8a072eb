import Foundation
import FileStore
import HanekeProtocols
import HanekeTesting
import MemoryStore
import SQLiteStore

/// Replays a trace through a real store, as an application would use it: a get for every request,
/// and a set after every miss. The counts are the store's hits, so they show what the shipped
/// eviction code does (the simulators only show what the algorithm would do).
enum StoreReplay {
    /// The stores `--stores` names: `memory` (bounded by count, or by cost with `--bytes`), `file`
    /// (a `FileStore` in a temporary folder) and `sqlite` (an `SQLiteStore` in a temporary folder,
    /// with `--bytes` only: its capacity is bytes on disk).
    enum Family: String, CaseIterable, Sendable {
        case memory
        case file
        case sqlite
    }

    /// The real stores the replay drives, by their name in the JSON lines.
    enum Kind: String, CaseIterable, Sendable {
        /// `MemoryStore` bounded by count (object capacities).
        case memory
        /// `MemoryStore` bounded by cost, a value's cost being its size (byte capacities).
        case memoryCost = "memory-cost"
        /// `FileStore` bounded by count (object capacities) or by the disk space its files take
        /// (byte capacities: each value takes whole blocks, so fewer fit than in memory).
        case file
        /// `SQLiteStore` bounded by the disk space its database takes (byte capacities only).
        case sqlite

        /// The store of `family` for a capacity unit; `nil` for an `SQLiteStore` by count, which
        /// it has no limit for.
        static func of(_ family: Family, unit: CapacityUnit) -> Kind? {
            switch family {
            case .memory: unit == .bytes ? .memoryCost : .memory
            case .file: .file
            case .sqlite: unit == .bytes ? .sqlite : nil
            }
        }
    }

    /// The policies replayed through each store, by their `EvictionPolicy` raw value.
    static let policies: [EvictionPolicy] = [.leastRecentlyUsed, .adaptive]

    /// The label a store's result carries in the gain tables: `STORE/POLICY`.
    static func label(_ kind: Kind, _ policy: EvictionPolicy) -> String {
        "\(kind.rawValue)/\(policy.rawValue)"
    }

    /// Replays `trace` through a new store of `kind` with `capacity` (in `unit`) and `policy`.
    static func replay(
        _ trace: SimulationTrace, kind: Kind, capacity: Int, unit: CapacityUnit, policy: EvictionPolicy
    ) throws -> SimulationCounts {
        switch kind {
        case .memory, .memoryCost:
            let store = kind == .memory
                ? MemoryStore<Int32, Int>(countLimit: capacity, evictionPolicy: policy)
                : MemoryStore<Int32, Int>(costLimit: capacity, evictionPolicy: policy, cost: { $0 })
            return countHits(trace, read: { store.value(forKey: $0) != nil }, write: { store.setValue($1, forKey: $0) })
        case .file:
            let folder = try TemporaryDirectory(prefix: "hit-ratio")
            // By bytes, the capacity leaves some room for the store's marker and journal (which
            // count against it: the store keeps a little less than the simulators).
            let configuration = FileStore.Configuration(
                capacity: unit == .bytes ? capacity + fileStoreOverhead : nil,
                countLimit: unit == .objects ? capacity : nil,
                evictionPolicy: policy
            )
            let store = try FileStore(directory: folder.path, configuration: configuration)
            store.waitUntilIndexed()
            return try countHits(trace, read: { try store.value(forKey: String($0)) != nil }) { key, size in
                try setIfItFits(size, forKey: key) { try store.setValue($0, forKey: $1) }
            }
        case .sqlite:
            let folder = try TemporaryDirectory(prefix: "hit-ratio")
            let store = try SQLiteStore(
                directory: folder.path,
                configuration: SQLiteStore.Configuration(capacity: sqliteCapacity(forEntries: capacity), evictionPolicy: policy)
            )
            return try countHits(trace, read: { try store.value(forKey: String($0)) != nil }) { key, size in
                try setIfItFits(size, forKey: key) { try store.setValue($0, forKey: $1) }
            }
        }
    }

    /// Stores `size` bytes for `key` through `set`, unless they are larger than the store's whole
    /// capacity: then nothing is kept, as the simulators bypass such an object.
    private static func setIfItFits(_ size: Int, forKey key: Int32, _ set: (Data, String) throws -> Void) throws {
        do {
            try set(Data(count: size), String(key))
        } catch let error as StoreError where error.code == .valueTooLarge {
        }
    }

    /// The capacity of an `SQLiteStore` whose rows may take `bytes`: that plus the room it keeps
    /// for its log within its capacity (`SQLiteStore.logRoom(forCapacity:)`, which grows with the
    /// capacity), found by fixed point. Its pages hold rows less densely than bytes count, so it
    /// keeps a little less than the simulators.
    static func sqliteCapacity(forEntries bytes: Int) -> Int {
        var capacity = bytes
        for _ in 0..<4 { capacity = bytes + SQLiteStore.logRoom(forCapacity: capacity) }
        return capacity
    }

    /// What a `FileStore`'s capacity holds besides its entries: the marker, the journal, and the
    /// two blocks kept free for the journal (64 KiB is ample for a replay's journal).
    static let fileStoreOverhead = 64 << 10

    /// The replay loop: `read` says whether a request's key hits; after a miss, `write` stores the
    /// key with its size (at least 1).
    private static func countHits(
        _ trace: SimulationTrace, read: (Int32) throws -> Bool, write: (Int32, Int) throws -> Void
    ) rethrows -> SimulationCounts {
        var counts = SimulationCounts()
        let sizes = trace.sizes
        for index in 0..<trace.requestCount {
            let key = trace.keys[index]
            let size = sizes?[index] ?? 0
            let hit = try read(key)
            if !hit { try write(key, max(1, size)) }
            counts.record(hit: hit, size: size)
        }
        return counts
    }
}
