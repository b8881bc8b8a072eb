/// A value that says how much memory it takes, roughly, in bytes: what a memory store counts
/// against its cost limit.
///
/// `MemoryStore` counts `Data`, `String` and `[UInt8]` by their bytes without help, and any value
/// that conforms to this protocol by ``cacheCost``; a `Cache`'s memory layer counts any other
/// value by its encoded size (one `asData()` per write), so conforming saves that encoding.
///
/// ```swift
/// struct Thumbnail: CostMeasurable {
///     var pixels: [UInt8]
///     var cacheCost: Int { pixels.count + 64 }
/// }
/// ```
public protocol CostMeasurable {
    /// The bytes the value takes in memory, roughly; never negative. Called on every write of the
    /// value into a memory store, so it should be cheap.
    var cacheCost: Int { get }
}
