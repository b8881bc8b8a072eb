/// A FIFO "ghost" of recently evicted keys (no data), kept without a queue: every key sent to it
/// gets a stamp from a running clock of the total weight ever sent, and it is still in the ghost
/// while less than the ghost's capacity was sent after it. O(1) per operation, one Int per key.
struct GhostFIFO: Sendable {
    private var stamps: [Int]
    private var clock = 0

    /// Creates an empty ghost for keys `0..<keyCount`.
    init(keyCount: Int) {
        stamps = [Int](repeating: -1, count: keyCount)
    }

    /// Records the eviction of `key` (weighing `weight`).
    @inline(__always)
    mutating func add(_ key: Int32, weight: Int) {
        stamps[Int(key)] = clock
        clock += weight
    }

    /// Whether `key` is among the last `capacity` weight of keys added.
    @inline(__always)
    func contains(_ key: Int32, capacity: Int) -> Bool {
        let stamp = stamps[Int(key)]
        return stamp >= 0 && clock - stamp <= capacity
    }

    /// Forgets `key` (it was requested again).
    @inline(__always)
    mutating func remove(_ key: Int32) {
        stamps[Int(key)] = -1
    }
}

/// An ARC-style marginal-utility rule for the boundary between a cache's "recency" region (the
/// W-TinyLFU window, the S3-FIFO small queue) and its "frequency" region (the main space).
///
/// Two ghosts of equal reach Δ (`ghostAdaptFraction` × capacity) remember the keys the recency
/// region gave up (W-TinyLFU: candidates that lost admission; S3-FIFO: entries evicted from small)
/// and the keys the main region evicted. A miss on a key found in the recency ghost would have hit
/// had the recency region been up to Δ larger, so the recency target grows by the key's weight; a
/// miss found in the main ghost would have hit with a main region up to Δ larger, so the target
/// shrinks by the key's weight. The boundary settles where both regions' marginal hit densities are
/// equal; it moves only on evidence (no sampling noise) and immediately when the workload changes.
struct GhostBalancer: Sendable {
    private var recencyGhost: GhostFIFO
    private var mainGhost: GhostFIFO
    /// The ghosts' reach Δ in capacity units.
    let reach: Int

    /// Creates a balancer.
    /// - Parameters:
    ///   - keyCount: Number of key ids.
    ///   - reach: Δ, in the capacity's units.
    init(keyCount: Int, reach: Int) {
        recencyGhost = GhostFIFO(keyCount: keyCount)
        mainGhost = GhostFIFO(keyCount: keyCount)
        self.reach = max(1, reach)
    }

    /// Records that the recency region gave up `key`.
    mutating func recencyEvicted(_ key: Int32, weight: Int) {
        recencyGhost.add(key, weight: weight)
        mainGhost.remove(key)
    }

    /// Records that the main region evicted `key`.
    mutating func mainEvicted(_ key: Int32, weight: Int) {
        mainGhost.add(key, weight: weight)
        recencyGhost.remove(key)
    }

    /// On a miss: the signed change of the recency region's target (+weight, −weight or 0), and
    /// the key is forgotten by both ghosts.
    mutating func adjustment(onMiss key: Int32, weight: Int) -> Int {
        defer {
            recencyGhost.remove(key)
            mainGhost.remove(key)
        }
        if recencyGhost.contains(key, capacity: reach) {
            return weight
        }
        if mainGhost.contains(key, capacity: reach) {
            return -weight
        }
        return 0
    }
}
