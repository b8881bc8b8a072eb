import HanekeProtocols
import MemoryStore

/// Replays a trace through a real store, as an application would use it: a get for every request,
/// and a set after every miss. The counts are the store's hits, so they show what the shipped
/// eviction code does (the simulators only show what the algorithm would do).
enum StoreReplay {
    /// The real stores the replay drives, by their name in the JSON lines.
    enum Kind: String, CaseIterable, Sendable {
        /// `MemoryStore` bounded by count (object capacities).
        case memory
        /// `MemoryStore` bounded by cost, a value's cost being its size (byte capacities).
        case memoryCost = "memory-cost"

        /// The store for a capacity unit.
        static func forUnit(_ unit: CapacityUnit) -> Kind {
            unit == .bytes ? .memoryCost : .memory
        }
    }

    /// The policies replayed through each store, by their `EvictionPolicy` raw value.
    static let policies: [EvictionPolicy] = [.leastRecentlyUsed, .adaptive]

    /// The label a store's result carries in the gain tables: `STORE/POLICY`.
    static func label(_ kind: Kind, _ policy: EvictionPolicy) -> String {
        "\(kind.rawValue)/\(policy.rawValue)"
    }

    /// Replays `trace` through a new store of `kind` with `capacity` and `policy`.
    static func replay(_ trace: SimulationTrace, kind: Kind, capacity: Int, policy: EvictionPolicy) -> SimulationCounts {
        let store: MemoryStore<Int32, Int>
        switch kind {
        case .memory: store = MemoryStore(countLimit: capacity, evictionPolicy: policy)
        case .memoryCost: store = MemoryStore(costLimit: capacity, evictionPolicy: policy, cost: { $0 })
        }
        var counts = SimulationCounts()
        let sizes = trace.sizes
        for index in 0..<trace.requestCount {
            let key = trace.keys[index]
            let size = sizes?[index] ?? 0
            let hit = store.value(forKey: key) != nil
            if !hit { store.setValue(max(1, size), forKey: key) }
            counts.record(hit: hit, size: size)
        }
        return counts
    }
}
