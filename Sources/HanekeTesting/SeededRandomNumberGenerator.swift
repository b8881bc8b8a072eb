// Re-exported, so that a file importing HanekeTesting sees the generator's members (`next()`)
// under MemberImportVisibility; the typealias below keeps the name HanekeTesting's own, for its
// documentation.
@_exported public import SeededRandom

/// A small, fast random number generator with a seed (SplitMix64), so that stress tests make the
/// same choices on every run and a failure can be replayed.
///
/// ```swift
/// var random = SeededRandomNumberGenerator(seed: 42)
/// let key = Int.random(in: 0..<1_000, using: &random)
/// ```
///
/// The generator lives in a small module of its own, which the `haneke` tool also uses (for the
/// demo's corpus) without depending on this testing library.
public typealias SeededRandomNumberGenerator = SeededRandom.SeededRandomNumberGenerator
