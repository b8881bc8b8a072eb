/// A count-min sketch of 4-bit counters (as in Caffeine's TinyLFU): 16 counters per 64-bit word,
/// 4 counters per key chosen by double hashing, estimates are the minimum of the 4. After
/// `sampleSize` increments every counter is halved (the "reset" that ages old popularity).
/// No doorkeeper: every increment goes to the counters.
struct FrequencySketch: Sendable {
    private var words: [UInt64]
    /// log2 of the number of counters (16 × words).
    private let counterBits: UInt64
    private let sampleSize: Int
    private var additions = 0
    private let conservative: Bool

    /// Creates a sketch for about `expectedEntries` keys: 16 counters per expected entry, rounded up
    /// to a power of two, and a reset every `resetMultiplier` × `expectedEntries` increments.
    /// - Parameter conservative: Whether to use conservative update.
    init(expectedEntries: Int, resetMultiplier: Double, conservative: Bool) {
        self.conservative = conservative
        let entries = max(expectedEntries, 16)
        var wordCount = 1
        while wordCount < entries {
            wordCount <<= 1
        }
        words = [UInt64](repeating: 0, count: wordCount)
        counterBits = UInt64((wordCount * 16).trailingZeroBitCount)
        sampleSize = max(16, Int(Double(entries) * resetMultiplier))
    }

    /// Counter index `i` (0...3) of `key`: the top bits of h1 + i·h2.
    @inline(__always)
    private func counterIndex(_ key: Int32, _ i: UInt64) -> Int {
        let h1 = SimulationRandom.mix64(UInt64(UInt32(bitPattern: key)) &+ 0x5851_F42D_4C95_7F2D)
        let h2 = SimulationRandom.mix64(h1) | 1
        return Int(truncatingIfNeeded: (h1 &+ i &* h2) >> (64 - counterBits))
    }

    /// The value of the counter at `index`.
    @inline(__always)
    private func counter(at index: Int) -> UInt64 {
        (words[index >> 4] >> UInt64((index & 15) << 2)) & 0xF
    }

    /// Adds one occurrence of `key`, saturating each counter at 15, and halves everything when the
    /// sample is complete. With conservative update only the counters equal to the key's current
    /// minimum are incremented (less over-estimation from collisions; still a count-min sketch).
    mutating func increment(_ key: Int32) {
        let indexes = (counterIndex(key, 0), counterIndex(key, 1), counterIndex(key, 2), counterIndex(key, 3))
        let values = (counter(at: indexes.0), counter(at: indexes.1), counter(at: indexes.2), counter(at: indexes.3))
        let minimum = min(min(values.0, values.1), min(values.2, values.3))
        guard minimum < 15 else { return }
        let threshold = conservative ? minimum : 14
        if values.0 <= threshold { bump(indexes.0) }
        if values.1 <= threshold { bump(indexes.1) }
        if values.2 <= threshold { bump(indexes.2) }
        if values.3 <= threshold { bump(indexes.3) }
        additions += 1
        if additions >= sampleSize {
            halve()
        }
    }

    /// Adds one to the counter at `index` unless it is saturated (two of a key's indexes may
    /// coincide, so the value is read again here).
    @inline(__always)
    private mutating func bump(_ index: Int) {
        if counter(at: index) < 15 {
            words[index >> 4] += 1 << UInt64((index & 15) << 2)
        }
    }

    /// The estimated frequency of `key` (0...15).
    func frequency(_ key: Int32) -> Int {
        var minimum: UInt64 = 15
        for i in UInt64(0)..<4 {
            minimum = min(minimum, counter(at: counterIndex(key, i)))
        }
        return Int(minimum)
    }

    /// Halves every counter (shift right, dropping the bit that crosses into the neighbour).
    private mutating func halve() {
        for index in words.indices {
            words[index] = (words[index] >> 1) & 0x7777_7777_7777_7777
        }
        additions /= 2
    }
}

/// The hill climber of Caffeine's adaptive W-TinyLFU, reused for S3-FIFO's small queue: it
/// measures the hit rate over a sample period; when the period ends it steps the tuned share in
/// the same direction if the hit rate did not fall, or reverses it if it fell. The step decays
/// (× `decay`) after each sample and restarts at full size when the hit rate moved by at least
/// `restartThreshold` (the workload changed).
struct HillClimber: Sendable {
    private let samplePeriod: Int
    private let initialStep: Double
    private let decay: Double
    private let restartThreshold: Double
    private var hits = 0
    private var requests = 0
    private var previousHitRate = 0.0
    /// Signed step for the next adjustment, as a share of the capacity.
    private var step: Double

    /// Creates a climber.
    /// - Parameters:
    ///   - samplePeriod: Requests per sample.
    ///   - initialStep: First step, signed (positive grows the tuned share first).
    ///   - decay: Step factor after an ordinary sample.
    ///   - restartThreshold: Absolute hit-rate change that restarts the step.
    init(samplePeriod: Int, initialStep: Double, decay: Double, restartThreshold: Double) {
        self.samplePeriod = max(1, samplePeriod)
        self.initialStep = abs(initialStep)
        self.decay = decay
        self.restartThreshold = restartThreshold
        step = initialStep
    }

    /// Records one request; at the end of a sample returns the signed change to apply to the
    /// tuned share, otherwise nil.
    @inline(__always)
    mutating func record(hit: Bool) -> Double? {
        requests += 1
        if hit {
            hits += 1
        }
        return requests >= samplePeriod ? climb() : nil
    }

    /// Ends a sample: chooses the adjustment and the next step.
    private mutating func climb() -> Double {
        let hitRate = Double(hits) / Double(requests)
        let change = hitRate - previousHitRate
        let amount = change >= 0 ? step : -step
        if abs(change) >= restartThreshold {
            step = amount >= 0 ? initialStep : -initialStep
        } else {
            step = amount * decay
        }
        previousHitRate = hitRate
        hits = 0
        requests = 0
        return amount
    }
}
