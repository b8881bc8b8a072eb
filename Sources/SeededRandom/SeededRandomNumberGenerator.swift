/// A small, fast random number generator with a seed (SplitMix64), so that stress tests make the
/// same choices on every run and a failure can be replayed.
///
/// ```swift
/// var random = SeededRandomNumberGenerator(seed: 42)
/// let key = Int.random(in: 0..<1_000, using: &random)
/// ```
public struct SeededRandomNumberGenerator: RandomNumberGenerator, Sendable {
    private var state: UInt64

    /// Creates a generator; equal seeds give equal sequences.
    /// - Parameter seed: Any number.
    public init(seed: UInt64) {
        state = seed &+ 0x9E37_79B9_7F4A_7C15
    }

    /// The next 64 random bits.
    /// - Returns: A pseudo-random number.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
