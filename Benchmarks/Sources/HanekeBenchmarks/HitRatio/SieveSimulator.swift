/// SIEVE (Zhang et al., NSDI 2024), a reference: a FIFO queue with one "visited" bit per entry and
/// a hand that moves from the oldest entry towards the newest, clearing visited bits and evicting
/// the first unvisited entry; hits only set the bit, and new entries go to the front.
struct SieveSimulator: CachePolicySimulator {
    let name = PolicyKind.sieve.rawValue
    let capacity: Int
    private(set) var usedCapacity = 0
    private let unit: CapacityUnit
    private var lists: DenseLinkedLists
    private var weights: [Int]
    private var visited: [Bool]
    /// The next eviction candidate, nil meaning "start again from the back".
    private var hand: Int32?

    /// Creates an empty cache.
    init(_ configuration: PolicyConfiguration) {
        capacity = configuration.capacity
        unit = configuration.unit
        lists = DenseLinkedLists(keyCount: configuration.keyCount, listCount: 1)
        weights = [Int](repeating: 0, count: configuration.keyCount)
        visited = [Bool](repeating: false, count: configuration.keyCount)
    }

    mutating func access(key: Int32, size: Int) -> Bool {
        if weights[Int(key)] > 0 {
            visited[Int(key)] = true
            return true
        }
        let weight = max(1, unit.weight(ofSize: size))
        guard weight <= capacity else { return false }
        while usedCapacity + weight > capacity && usedCapacity > 0 {
            evictOne()
        }
        lists.pushFront(key, list: 0)
        weights[Int(key)] = weight
        visited[Int(key)] = false
        usedCapacity += weight
        return false
    }

    /// Advances the hand past visited entries (clearing them) and evicts the first unvisited one.
    private mutating func evictOne() {
        guard var node = hand ?? lists.back(0) else { return }
        while visited[Int(node)] {
            visited[Int(node)] = false
            node = lists.towardsFront(of: node) ?? lists.back(0) ?? node
        }
        hand = lists.towardsFront(of: node)
        lists.remove(node)
        usedCapacity -= weights[Int(node)]
        weights[Int(node)] = 0
    }

    func recomputedUsage() -> Int {
        lists.keys(in: 0).reduce(0) { $0 + weights[Int($1)] }
    }
}
