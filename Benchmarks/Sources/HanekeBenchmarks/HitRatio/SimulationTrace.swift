import Foundation

/// A request trace ready for simulation: every key is interned to a dense id in
/// `0..<keyCount` (in order of first appearance) and sizes, when present, are per request.
struct SimulationTrace: Sendable {
    /// A label for reports (a synthetic generator's name or a file name).
    let name: String
    /// The key id of every request, in order.
    let keys: [Int32]
    /// The size in bytes of every request, or nil when the trace carries no sizes.
    let sizes: [Int]?
    /// Number of distinct keys; every id in `keys` is below it.
    let keyCount: Int

    /// Creates a trace from ids that are already dense.
    /// - Parameters:
    ///   - name: A label for reports.
    ///   - keys: Key ids, each in `0..<keyCount`.
    ///   - sizes: Per-request sizes (same count as `keys`), or nil.
    ///   - keyCount: Number of distinct keys.
    init(name: String, keys: [Int32], sizes: [Int]?, keyCount: Int) {
        precondition(sizes == nil || sizes?.count == keys.count, "one size per request")
        self.name = name
        self.keys = keys
        self.sizes = sizes
        self.keyCount = keyCount
    }

    /// Creates a trace from arbitrary non-negative raw keys (as generators produce them),
    /// renumbering them densely in order of first appearance so that unused raw keys cost nothing.
    /// - Parameters:
    ///   - name: A label for reports.
    ///   - rawKeys: Non-negative keys; the largest must be small enough for a lookup array.
    init(name: String, rawKeys: [Int]) {
        let universe = (rawKeys.max() ?? -1) + 1
        var denseId = [Int32](repeating: -1, count: universe)
        var next: Int32 = 0
        var keys = [Int32]()
        keys.reserveCapacity(rawKeys.count)
        for raw in rawKeys {
            if denseId[raw] < 0 {
                denseId[raw] = next
                next += 1
            }
            keys.append(denseId[raw])
        }
        self.init(name: name, keys: keys, sizes: nil, keyCount: Int(next))
    }

    /// Number of requests.
    var requestCount: Int { keys.count }

    /// For each request index, the index of the next request for the same key, or `Int.max`
    /// when the key is never requested again; one backward pass.
    func nextUses() -> [Int] {
        var nextSeen = [Int](repeating: Int.max, count: keyCount)
        var result = [Int](repeating: Int.max, count: keys.count)
        var index = keys.count - 1
        while index >= 0 {
            let key = Int(keys[index])
            result[index] = nextSeen[key]
            nextSeen[key] = index
            index -= 1
        }
        return result
    }

    /// The size of each distinct key at its first request (nil without sizes).
    func firstSizes() -> [Int]? {
        guard let sizes else { return nil }
        var result = [Int](repeating: -1, count: keyCount)
        for (index, key) in keys.enumerated() where result[Int(key)] < 0 {
            result[Int(key)] = sizes[index]
        }
        return result
    }

    /// The total of every distinct key's size (at its first request), the base of byte capacities;
    /// nil without sizes.
    func distinctBytes() -> Int? {
        firstSizes()?.reduce(0, +)
    }

    /// The same requests with a deterministic size per key drawn by `ObjectSizeModel`.
    /// - Parameter model: The size distribution and its seed.
    func withSizes(_ model: ObjectSizeModel) -> SimulationTrace {
        let perKey = (0..<keyCount).map { model.size(ofKey: $0) }
        let sizes = keys.map { perKey[Int($0)] }
        return SimulationTrace(name: name, keys: keys, sizes: sizes, keyCount: keyCount)
    }

    /// The first `count` requests (renumbered densely), for quick checks on a prefix.
    func prefix(_ count: Int) -> SimulationTrace {
        let rawKeys = keys.prefix(count).map { Int($0) }
        let compacted = SimulationTrace(name: name, rawKeys: rawKeys)
        let prefixSizes = sizes.map { Array($0.prefix(count)) }
        return SimulationTrace(name: name, keys: compacted.keys, sizes: prefixSizes, keyCount: compacted.keyCount)
    }
}

/// A deterministic "log-normal-ish" object size per key, clamped to [100 B, 1 MiB]: the median is
/// 8 KiB and the log-space standard deviation 1.5, so most objects are a few KiB with a long tail
/// of large ones. The size depends only on the key id and the seed.
struct ObjectSizeModel: Sendable {
    /// Seed mixed into every key's hash.
    let seed: UInt64
    /// Smallest size produced.
    let minimumBytes = 100
    /// Largest size produced.
    let maximumBytes = 1 << 20
    /// Median size before clamping.
    let medianBytes = 8192.0
    /// Standard deviation of the natural log of the size.
    let logSigma = 1.5

    /// The size of one key: a Box–Muller normal variate from two hashes of (seed, key), exponentiated.
    func size(ofKey key: Int) -> Int {
        let first = SimulationRandom.mix64(seed ^ SimulationRandom.mix64(UInt64(key) &* 2 &+ 1))
        let second = SimulationRandom.mix64(first ^ 0xA076_1D64_78BD_642F)
        let u1 = (Double(first >> 11) + 0.5) * 0x1.0p-53
        let u2 = Double(second >> 11) * 0x1.0p-53
        let normal = (-2 * log(u1)).squareRoot() * cos(2 * Double.pi * u2)
        let raw = medianBytes * exp(logSigma * normal)
        return min(max(Int(raw.rounded()), minimumBytes), maximumBytes)
    }
}
