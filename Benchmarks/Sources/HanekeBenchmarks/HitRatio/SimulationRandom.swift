/// A deterministic pseudo-random generator for trace generation: xoshiro256** seeded through
/// SplitMix64, so that equal seeds give equal traces on every platform and every run.
struct SimulationRandom: RandomNumberGenerator, Sendable {
    private var s0: UInt64
    private var s1: UInt64
    private var s2: UInt64
    private var s3: UInt64

    /// Creates a generator whose whole state is derived from `seed` with SplitMix64.
    /// - Parameter seed: Any number; equal seeds give equal sequences.
    init(seed: UInt64) {
        var mixer = seed
        s0 = SimulationRandom.splitMix64(&mixer)
        s1 = SimulationRandom.splitMix64(&mixer)
        s2 = SimulationRandom.splitMix64(&mixer)
        s3 = SimulationRandom.splitMix64(&mixer)
    }

    /// One SplitMix64 step: advances `state` and returns a well-mixed 64-bit value.
    static func splitMix64(_ state: inout UInt64) -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        return mix64(state)
    }

    /// The SplitMix64 finalizer: a bijective 64-bit mixing function, also used as a hash.
    static func mix64(_ value: UInt64) -> UInt64 {
        var z = value
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// The next 64 random bits (xoshiro256**).
    mutating func next() -> UInt64 {
        let result = rotateLeft(s1 &* 5, by: 7) &* 9
        let t = s1 << 17
        s2 ^= s0
        s3 ^= s1
        s1 ^= s2
        s0 ^= s3
        s2 ^= t
        s3 = rotateLeft(s3, by: 45)
        return result
    }

    /// A uniform double in [0, 1) with 53 random bits.
    mutating func nextUnitDouble() -> Double {
        Double(next() >> 11) * 0x1.0p-53
    }

    /// A uniform integer in `0..<bound` (Lemire's multiply-shift; the tiny bias of skipping the
    /// rejection step is far below anything a hit-ratio simulation can observe).
    /// - Parameter bound: The exclusive upper bound; must be positive.
    mutating func nextInt(below bound: Int) -> Int {
        precondition(bound > 0, "bound must be positive")
        return Int(next().multipliedFullWidth(by: UInt64(bound)).high)
    }

    /// A uniform integer in the closed range.
    mutating func nextInt(in range: ClosedRange<Int>) -> Int {
        range.lowerBound + nextInt(below: range.upperBound - range.lowerBound + 1)
    }

    private func rotateLeft(_ value: UInt64, by amount: UInt64) -> UInt64 {
        (value << amount) | (value >> (64 - amount))
    }
}
