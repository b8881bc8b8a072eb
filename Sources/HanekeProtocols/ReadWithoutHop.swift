// Public, not package: the inlinable `transform` below names `Data` in code compiled into the
// modules that inline it.
public import Foundation

/// What a read served on the calling thread (``BlockingEngine/entryWithoutWaiting(forKey:withAttributes:)``)
/// does there.
@usableFromInline
package enum ReadWithoutHop {
    /// The most bytes such a read also decompresses and decodes on the calling thread; a larger
    /// value is transformed on the engine's executor, as a read from the disk is, so that a
    /// cooperative thread never decodes a large value.
    @usableFromInline
    package static let largestTransformed = 64 << 10

    /// `entry`, read on the calling thread, with `transform` applied to its value: there, or on
    /// `executor` when the value is larger than ``largestTransformed``.
    /// - Throws: What `transform` throws; `CancellationError` if cancelled before the executor ran it.
    @inlinable
    package static func transform<Transformed: Sendable>(
        _ entry: StoreEntry<Data>,
        on executor: IOExecutor,
        _ transform: @escaping @Sendable (Data) throws -> Transformed
    ) async throws -> StoreEntry<Transformed> {
        guard entry.value.count <= largestTransformed else { return try await executor.run { try entry.map(transform) } }
        return try entry.map(transform)
    }
}
