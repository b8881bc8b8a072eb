/// Bélády's clairvoyant replacement, the upper bound of every policy.
///
/// Object counts: on a miss with a full cache, the resident key whose next use
/// is furthest is evicted, unless the missed key's own next use is further still, in which case it
/// is not admitted (bypass). With unit sizes and bypass allowed this is optimal (MIN).
///
/// Bytes: the same furthest-next-use-first rule under a byte capacity: residents
/// used later than the missed key are evicted, furthest first, until the key fits; if it cannot
/// fit that way it bypasses. This is a greedy heuristic bound, not the exact optimum: caching
/// variable-size objects optimally is NP-hard, and a policy can occasionally beat this heuristic.
///
/// Residents sit in a max-heap keyed by next use with lazy deletion: a hit pushes a fresh entry
/// and the superseded one is skipped when it surfaces; the heap is rebuilt when stale entries
/// outnumber live ones. O(log n) per request.
enum BeladyOptimal {
    /// Simulates Bélády's rule under `capacity`: on a miss, residents used later than the missed
    /// key are evicted, furthest first, until it fits; if it cannot fit that way it bypasses.
    /// Each object weighs 1 for `.objects` (MIN with bypass: at most one eviction a miss) and its
    /// size for `.bytes` (the greedy heuristic).
    /// - Parameters:
    ///   - trace: The requests, with sizes for `.bytes`.
    ///   - nextUses: `trace.nextUses()`.
    ///   - capacity: Number of objects or bytes.
    ///   - unit: What `capacity` counts.
    static func simulate(_ trace: SimulationTrace, nextUses: [Int], capacity: Int, unit: CapacityUnit) -> SimulationCounts {
        var state = BeladyState(keyCount: trace.keyCount)
        var counts = SimulationCounts()
        for index in 0..<trace.requestCount {
            let key = trace.keys[index]
            let size = trace.sizes?[index] ?? 0
            let nextUse = nextUses[index]
            if state.isResident(key) {
                state.renew(key, nextUse: nextUse)
                counts.record(hit: true, size: size)
                continue
            }
            counts.record(hit: false, size: size)
            let weight = unit == .objects ? 1 : max(1, size)
            guard weight <= capacity else { continue }
            while state.used + weight > capacity, let furthest = state.furthest(), furthest.nextUse > nextUse {
                state.evictFurthest()
            }
            if state.used + weight <= capacity {
                state.admit(key, nextUse: nextUse, weight: weight)
            }
        }
        return counts
    }
}

/// The resident set of a Bélády simulation: per-key next use (or -1 when absent) and a max-heap
/// of (next use, key) entries, some of them stale.
private struct BeladyState {
    private var residentNextUse: [Int]
    private var weights: [Int]
    private var heapNextUses: [Int] = []
    private var heapKeys: [Int32] = []
    private var residents = 0
    /// Total weight resident.
    private(set) var used = 0

    init(keyCount: Int) {
        residentNextUse = [Int](repeating: -1, count: keyCount)
        weights = [Int](repeating: 0, count: keyCount)
    }

    func isResident(_ key: Int32) -> Bool {
        residentNextUse[Int(key)] >= 0
    }

    /// Records a hit: the key's next use moves on.
    mutating func renew(_ key: Int32, nextUse: Int) {
        residentNextUse[Int(key)] = nextUse
        push(nextUse, key)
    }

    mutating func admit(_ key: Int32, nextUse: Int, weight: Int) {
        residentNextUse[Int(key)] = nextUse
        weights[Int(key)] = weight
        residents += 1
        used += weight
        push(nextUse, key)
    }

    /// The live resident with the furthest next use (stale heap tops are discarded).
    mutating func furthest() -> (nextUse: Int, key: Int32)? {
        while let top = heapKeys.first {
            if residentNextUse[Int(top)] == heapNextUses[0] {
                return (heapNextUses[0], top)
            }
            popTop()
        }
        return nil
    }

    /// Evicts the live resident with the furthest next use.
    mutating func evictFurthest() {
        guard let (_, key) = furthest() else { return }
        popTop()
        residentNextUse[Int(key)] = -1
        residents -= 1
        used -= weights[Int(key)]
        weights[Int(key)] = 0
    }

    private mutating func push(_ nextUse: Int, _ key: Int32) {
        if heapKeys.count > 2 * residents + 1024 {
            rebuild()
        }
        heapNextUses.append(nextUse)
        heapKeys.append(key)
        siftUp(from: heapKeys.count - 1)
    }

    /// Drops stale entries and re-heapifies (Floyd), bounding the heap at O(residents).
    private mutating func rebuild() {
        var liveNextUses = [Int]()
        var liveKeys = [Int32]()
        liveNextUses.reserveCapacity(residents + 1)
        liveKeys.reserveCapacity(residents + 1)
        for (position, key) in heapKeys.enumerated() where residentNextUse[Int(key)] == heapNextUses[position] {
            liveNextUses.append(heapNextUses[position])
            liveKeys.append(key)
        }
        heapNextUses = liveNextUses
        heapKeys = liveKeys
        var start = heapKeys.count / 2 - 1
        while start >= 0 {
            siftDown(from: start)
            start -= 1
        }
    }

    private mutating func popTop() {
        let lastIndex = heapKeys.count - 1
        heapKeys.swapAt(0, lastIndex)
        heapNextUses.swapAt(0, lastIndex)
        heapKeys.removeLast()
        heapNextUses.removeLast()
        if !heapKeys.isEmpty {
            siftDown(from: 0)
        }
    }

    private mutating func siftUp(from start: Int) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard heapNextUses[child] > heapNextUses[parent] else { return }
            swapEntries(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(from start: Int) {
        var parent = start
        let count = heapKeys.count
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var largest = parent
            if left < count && heapNextUses[left] > heapNextUses[largest] { largest = left }
            if right < count && heapNextUses[right] > heapNextUses[largest] { largest = right }
            if largest == parent { return }
            swapEntries(parent, largest)
            parent = largest
        }
    }

    private mutating func swapEntries(_ a: Int, _ b: Int) {
        heapNextUses.swapAt(a, b)
        heapKeys.swapAt(a, b)
    }
}
