/// W-TinyLFU as in Caffeine: new entries enter an LRU "window"; entries leaving the window are
/// candidates for the main space, a segmented LRU (probation 20% / protected 80%). When the cache
/// is over capacity a candidate is admitted only if its estimated frequency (a 4-bit count-min
/// sketch of every request) is strictly higher than that of the main space's victim (the LRU
/// entry of probation, or of protected when probation is empty); otherwise the candidate is
/// evicted. A hit in probation promotes to protected, whose overflow is demoted to probation.
///
/// Static: the window keeps its initial share (1%). Adaptive (`.hillClimber`, as in Caffeine): a
/// `HillClimber` moves the window share within [0, 1] every sample period. Ghost-balanced
/// (`.ghosts`): a `GhostBalancer` grows the window when a rejected candidate returns and shrinks it
/// when an evicted main victim returns. Shrinking moves window entries to probation; growing lets
/// the window fill while main entries are evicted.
struct WTinyLFUSimulator: CachePolicySimulator {
    /// How the window's size is chosen.
    enum WindowAdaptation: Sendable {
        /// The initial share, forever.
        case fixed
        /// Caffeine's hill climber on the window share.
        case hillClimber
        /// The ARC-style ghost rule (see `GhostBalancer`).
        case ghosts
    }

    let name: String
    let capacity: Int
    private let unit: CapacityUnit
    private let protectedFraction: Double
    private var windowFraction: Double
    private var lists: DenseLinkedLists
    private var sketch: FrequencySketch
    private var climber: HillClimber?
    private var balancer: GhostBalancer?
    /// Where each key is (see `Region`).
    private var regions: [Region]
    private var weights: [Int]
    private var regionWeights = [Int](repeating: 0, count: Region.allCases.count)
    /// Window entries that overflowed and await admission, oldest first.
    private var candidates: [Int32] = []
    private var maximumWindow = 0
    private var maximumProtected = 0

    /// The region holding a key; the raw value doubles as its list number.
    private enum Region: Int, CaseIterable, Sendable {
        case window = 0, probation = 1, protected = 2, candidate = 3, absent = 4
    }

    /// Creates an empty cache.
    /// - Parameters:
    ///   - configuration: Capacity, unit, key count and parameters.
    ///   - adaptation: How the window share is tuned.
    init(_ configuration: PolicyConfiguration, adaptation: WindowAdaptation) {
        let parameters = configuration.parameters
        switch adaptation {
        case .fixed: name = PolicyKind.tinyLFU.rawValue
        case .hillClimber: name = PolicyKind.adaptiveTinyLFU.rawValue
        case .ghosts: name = PolicyKind.ghostTinyLFU.rawValue
        }
        capacity = configuration.capacity
        unit = configuration.unit
        protectedFraction = parameters.tinyLFUProtectedFraction
        windowFraction = parameters.tinyLFUWindowFraction
        lists = DenseLinkedLists(keyCount: configuration.keyCount, listCount: 3)
        sketch = FrequencySketch(expectedEntries: configuration.expectedEntries,
                                 resetMultiplier: parameters.sketchResetMultiplier,
                                 conservative: parameters.sketchConservativeUpdate != 0)
        balancer = adaptation == .ghosts ? configuration.ghostBalancer() : nil
        climber = adaptation == .hillClimber ? configuration.hillClimber() : nil
        regions = [Region](repeating: .absent, count: configuration.keyCount)
        weights = [Int](repeating: 0, count: configuration.keyCount)
        maximumWindow = Int(Double(capacity) * windowFraction)
        applyWindowLimit()
    }

    var usedCapacity: Int {
        regionWeights[Region.window.rawValue] + regionWeights[Region.probation.rawValue]
            + regionWeights[Region.protected.rawValue] + regionWeights[Region.candidate.rawValue]
    }

    mutating func access(key: Int32, size: Int) -> Bool {
        sketch.increment(key)
        let hit = touch(key, size: size)
        if let adjustment = climber?.record(hit: hit) {
            windowFraction = min(max(windowFraction + adjustment, 0), 1)
            maximumWindow = Int(Double(capacity) * windowFraction)
            applyWindowLimit()
            evictIfNeeded()
            demoteProtectedOverflow()
        }
        return hit
    }

    /// The ghost rule: a returning rejected candidate grows the window, a returning main victim
    /// shrinks it.
    private mutating func balanceWindow(onMiss key: Int32, weight: Int) {
        guard let change = balancer?.adjustment(onMiss: key, weight: weight), change != 0 else { return }
        maximumWindow = min(max(maximumWindow + change, 0), capacity)
        applyWindowLimit()
    }

    /// Handles one request for the cache structure; returns whether it hit.
    private mutating func touch(_ key: Int32, size: Int) -> Bool {
        switch regions[Int(key)] {
        case .window, .protected:
            lists.moveToFront(key, list: regions[Int(key)].rawValue)
            return true
        case .probation:
            lists.remove(key)
            place(key, in: .protected)
            demoteProtectedOverflow()
            return true
        case .candidate, .absent:
            let weight = max(1, unit.weight(ofSize: size))
            balanceWindow(onMiss: key, weight: weight)
            insert(key, weight: weight)
            return false
        }
    }

    /// Admits a missed key to the window, then restores the capacity.
    private mutating func insert(_ key: Int32, weight: Int) {
        guard weight <= capacity else { return }
        weights[Int(key)] = weight
        regions[Int(key)] = .absent
        place(key, in: .window)
        evictIfNeeded()
    }

    /// Sets the protected limit from the current window limit.
    private mutating func applyWindowLimit() {
        maximumProtected = Int(Double(capacity - maximumWindow) * protectedFraction)
    }

    /// Moves window overflow to the candidates, then evicts until the capacity holds: each
    /// candidate duels the main victim on frequency; without candidates the main victim (or, with
    /// an empty main space, the window's LRU entry) goes. Surviving candidates join probation.
    private mutating func evictIfNeeded() {
        while regionWeights[Region.window.rawValue] > maximumWindow, let oldest = lists.back(Region.window.rawValue) {
            lists.remove(oldest)
            move(oldest, to: .candidate)
            candidates.append(oldest)
        }
        var nextCandidate = 0
        while usedCapacity > capacity {
            let victim = lists.back(Region.probation.rawValue) ?? lists.back(Region.protected.rawValue)
            if nextCandidate < candidates.count {
                let candidate = candidates[nextCandidate]
                if let victim, sketch.frequency(candidate) > sketch.frequency(victim) {
                    balancer?.mainEvicted(victim, weight: weights[Int(victim)])
                    evict(victim)
                } else {
                    balancer?.recencyEvicted(candidate, weight: weights[Int(candidate)])
                    evict(candidate)
                    nextCandidate += 1
                }
            } else if let victim {
                balancer?.mainEvicted(victim, weight: weights[Int(victim)])
                evict(victim)
            } else if let oldest = lists.back(Region.window.rawValue) {
                balancer?.recencyEvicted(oldest, weight: weights[Int(oldest)])
                evict(oldest)
            } else {
                break
            }
        }
        for candidate in candidates[nextCandidate...] {
            move(candidate, to: .probation)
            lists.pushFront(candidate, list: Region.probation.rawValue)
        }
        candidates.removeAll(keepingCapacity: true)
    }

    /// Demotes protected LRU entries to probation while protected is over its limit.
    private mutating func demoteProtectedOverflow() {
        while regionWeights[Region.protected.rawValue] > maximumProtected,
              let oldest = lists.back(Region.protected.rawValue) {
            lists.remove(oldest)
            place(oldest, in: .probation)
        }
    }

    /// Puts an unlinked key at the front of a list region, updating the accounting.
    private mutating func place(_ key: Int32, in region: Region) {
        move(key, to: region)
        lists.pushFront(key, list: region.rawValue)
    }

    /// Updates the region accounting of a key (linking is the caller's business).
    private mutating func move(_ key: Int32, to region: Region) {
        let old = regions[Int(key)]
        if old != .absent {
            regionWeights[old.rawValue] -= weights[Int(key)]
        }
        if region != .absent {
            regionWeights[region.rawValue] += weights[Int(key)]
        }
        regions[Int(key)] = region
    }

    /// Removes a key from the cache entirely.
    private mutating func evict(_ key: Int32) {
        if regions[Int(key)] != .candidate {
            lists.remove(key)
        }
        move(key, to: .absent)
        weights[Int(key)] = 0
    }

    func recomputedUsage() -> Int {
        [Region.window, .probation, .protected].reduce(0) { total, region in
            lists.keys(in: region.rawValue).reduce(total) { $0 + weights[Int($1)] }
        }
    }
}
