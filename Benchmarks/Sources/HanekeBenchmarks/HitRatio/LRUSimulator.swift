/// Least-recently-used replacement, the baseline: one intrusive list in recency order; a hit moves
/// the key to the front, a miss inserts at the front and evicts from the back until it fits.
struct LRUSimulator: CachePolicySimulator {
    let name = PolicyKind.lru.rawValue
    let capacity: Int
    private(set) var usedCapacity = 0
    private let unit: CapacityUnit
    private var lists: DenseLinkedLists
    /// Weight of each resident key, 0 when absent (weights are at least 1 when resident).
    private var weights: [Int]

    /// Creates an empty cache.
    init(_ configuration: PolicyConfiguration) {
        capacity = configuration.capacity
        unit = configuration.unit
        lists = DenseLinkedLists(keyCount: configuration.keyCount, listCount: 1)
        weights = [Int](repeating: 0, count: configuration.keyCount)
    }

    mutating func access(key: Int32, size: Int) -> Bool {
        if weights[Int(key)] > 0 {
            lists.moveToFront(key, list: 0)
            return true
        }
        let weight = max(1, unit.weight(ofSize: size))
        guard weight <= capacity else { return false }
        while usedCapacity + weight > capacity, let victim = lists.back(0) {
            evict(victim)
        }
        lists.pushFront(key, list: 0)
        weights[Int(key)] = weight
        usedCapacity += weight
        return false
    }

    private mutating func evict(_ key: Int32) {
        lists.remove(key)
        usedCapacity -= weights[Int(key)]
        weights[Int(key)] = 0
    }

    func recomputedUsage() -> Int {
        lists.keys(in: 0).reduce(0) { $0 + weights[Int($1)] }
    }

    /// The resident keys from most to least recently used (for the reference check).
    func keysByRecency() -> [Int32] {
        lists.keys(in: 0)
    }
}
