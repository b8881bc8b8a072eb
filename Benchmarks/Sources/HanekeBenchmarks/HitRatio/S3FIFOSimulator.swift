/// S3-FIFO (Yang et al., SOSP 2023): a small FIFO queue (10% of the capacity) for new entries, a
/// main FIFO queue with a 2-bit access counter per entry (CLOCK-style reinsertion), and a ghost
/// FIFO of keys (no data) evicted from the small queue, as large as the main queue.
///
/// - A hit only increments the entry's counter (saturating at 3).
/// - A miss whose key is in the ghost goes straight to main; any other miss enters small.
/// - When room is needed: if small holds at least its target share, its oldest entry is promoted
///   to main when it was accessed at least `s3PromotionThreshold` times while resident (keeping its
///   counter), or else evicted into the ghost; otherwise main's oldest entry is reinserted at the
///   front with its counter decremented while the counter is positive, or else evicted.
///
/// Adaptive variants tune the small queue's share within [`s3MinimumSmallFraction`,
/// `s3MaximumSmallFraction`] (the ghost follows the main queue's share). A larger small queue gives
/// new keys longer to prove themselves (recency workloads); a smaller one protects the main
/// queue's frequent keys (skewed workloads).
/// - `.ghosts` (`s3-fifo-adaptive`): the ARC-style `GhostBalancer`. A miss on a key evicted from
///   small within the last Δ = `ghostAdaptFraction` × capacity grows the small target by the key's
///   weight (a larger small queue would have hit); a miss on a key evicted from main within the
///   last Δ shrinks it by the key's weight (a larger main queue would have hit).
/// - `.hillClimber` (`s3-fifo-climber`): the same `HillClimber` as adaptive W-TinyLFU.
struct S3FIFOSimulator: CachePolicySimulator {
    /// How the small queue's size is chosen.
    enum SmallQueueAdaptation: Sendable {
        /// The initial share, forever.
        case fixed
        /// A hill climber on the small share.
        case hillClimber
        /// The ARC-style ghost rule.
        case ghosts
    }

    let name: String
    let capacity: Int
    private(set) var usedCapacity = 0
    private let unit: CapacityUnit
    private let promotionThreshold: UInt8
    private let smallQueueLRU: Bool
    private let minimumSmallFraction: Double
    private let maximumSmallFraction: Double
    private var smallFraction: Double
    private var smallTarget = 0
    private var lists: DenseLinkedLists
    private var climber: HillClimber?
    private var balancer: GhostBalancer?
    private var queues: [Queue]
    private var weights: [Int]
    private var counters: [UInt8]
    private var smallWeight = 0
    /// Keys evicted from small, as much weight as the main queue's share.
    private var ghost: GhostFIFO

    /// Which queue holds a key; the raw value doubles as its list number.
    private enum Queue: UInt8, Sendable {
        case small = 0, main = 1, absent = 2
    }

    /// Creates an empty cache.
    /// - Parameters:
    ///   - configuration: Capacity, unit, key count and parameters.
    ///   - adaptation: How the small queue's share is tuned.
    init(_ configuration: PolicyConfiguration, adaptation: SmallQueueAdaptation) {
        let parameters = configuration.parameters
        switch adaptation {
        case .fixed: name = PolicyKind.s3FIFO.rawValue
        case .hillClimber: name = PolicyKind.climberS3FIFO.rawValue
        case .ghosts: name = PolicyKind.adaptiveS3FIFO.rawValue
        }
        capacity = configuration.capacity
        unit = configuration.unit
        promotionThreshold = UInt8(min(max(parameters.s3PromotionThreshold, 1), 3))
        smallQueueLRU = parameters.s3SmallQueueLRU != 0
        minimumSmallFraction = parameters.s3MinimumSmallFraction
        maximumSmallFraction = parameters.s3MaximumSmallFraction
        smallFraction = parameters.s3SmallFraction
        lists = DenseLinkedLists(keyCount: configuration.keyCount, listCount: 2)
        balancer = adaptation == .ghosts ? configuration.ghostBalancer() : nil
        climber = adaptation == .hillClimber ? configuration.hillClimber() : nil
        queues = [Queue](repeating: .absent, count: configuration.keyCount)
        weights = [Int](repeating: 0, count: configuration.keyCount)
        counters = [UInt8](repeating: 0, count: configuration.keyCount)
        ghost = GhostFIFO(keyCount: configuration.keyCount)
        applySmallFraction()
    }

    mutating func access(key: Int32, size: Int) -> Bool {
        let hit = queues[Int(key)] != .absent
        if hit {
            counters[Int(key)] = min(counters[Int(key)] + 1, 3)
            if smallQueueLRU && queues[Int(key)] == .small {
                lists.moveToFront(key, list: Int(Queue.small.rawValue))
            }
        } else {
            insert(key, weight: max(1, unit.weight(ofSize: size)))
        }
        if let adjustment = climber?.record(hit: hit) {
            smallFraction = min(max(smallFraction + adjustment, minimumSmallFraction), maximumSmallFraction)
            applySmallFraction()
        }
        return hit
    }

    private mutating func applySmallFraction() {
        smallTarget = max(1, Int(Double(capacity) * smallFraction))
    }

    /// The ghost's capacity: the main queue's share.
    private var ghostCapacity: Int { capacity - smallTarget }

    /// The ghost rule: moves the small target by the returning key's weight, within the bounds.
    private mutating func balanceSmallQueue(onMiss key: Int32, weight: Int) {
        guard let change = balancer?.adjustment(onMiss: key, weight: weight), change != 0 else { return }
        let lowest = Int(Double(capacity) * minimumSmallFraction)
        let highest = Int(Double(capacity) * maximumSmallFraction)
        smallTarget = max(1, min(max(smallTarget + change, lowest), highest))
    }

    /// Admits a missed key to main (ghost hit) or small, then evicts to the capacity. The order is
    /// `MemoryStore`'s (a write, then eviction): the newcomer counts towards the small queue's
    /// target. Evicting first, to make room, hits up to a point less by bytes at 1 % (by count the
    /// two orders differ by hundredths).
    private mutating func insert(_ key: Int32, weight: Int) {
        guard weight <= capacity else { return }
        balanceSmallQueue(onMiss: key, weight: weight)
        let queue: Queue = ghost.contains(key, capacity: ghostCapacity) ? .main : .small
        ghost.remove(key)
        weights[Int(key)] = weight
        counters[Int(key)] = 0
        queues[Int(key)] = queue
        lists.pushFront(key, list: Int(queue.rawValue))
        usedCapacity += weight
        if queue == .small {
            smallWeight += weight
        }
        while usedCapacity > capacity {
            evictOne()
        }
    }

    /// Evicts one entry, from small when it holds at least its target (or main is empty).
    private mutating func evictOne() {
        if smallWeight >= smallTarget || lists.back(Int(Queue.main.rawValue)) == nil {
            evictFromSmall()
        } else {
            evictFromMain()
        }
    }

    /// Promotes small's oldest entries that were accessed enough, until one is evicted to the ghost
    /// (or small is empty, in which case main evicts).
    private mutating func evictFromSmall() {
        while let oldest = lists.back(Int(Queue.small.rawValue)) {
            lists.remove(oldest)
            smallWeight -= weights[Int(oldest)]
            if counters[Int(oldest)] >= promotionThreshold {
                queues[Int(oldest)] = .main
                lists.pushFront(oldest, list: Int(Queue.main.rawValue))
            } else {
                ghost.add(oldest, weight: weights[Int(oldest)])
                balancer?.recencyEvicted(oldest, weight: weights[Int(oldest)])
                remove(oldest)
                return
            }
        }
        evictFromMain()
    }

    /// CLOCK over main: reinserts entries with a positive counter (decrementing it) and evicts the
    /// first entry whose counter is zero.
    private mutating func evictFromMain() {
        while let oldest = lists.back(Int(Queue.main.rawValue)) {
            lists.remove(oldest)
            if counters[Int(oldest)] > 0 {
                counters[Int(oldest)] -= 1
                lists.pushFront(oldest, list: Int(Queue.main.rawValue))
            } else {
                balancer?.mainEvicted(oldest, weight: weights[Int(oldest)])
                remove(oldest)
                return
            }
        }
    }

    /// Forgets an unlinked entry.
    private mutating func remove(_ key: Int32) {
        usedCapacity -= weights[Int(key)]
        weights[Int(key)] = 0
        queues[Int(key)] = .absent
    }

    func recomputedUsage() -> Int {
        (0...1).reduce(0) { total, list in
            lists.keys(in: list).reduce(total) { $0 + weights[Int($1)] }
        }
    }
}
