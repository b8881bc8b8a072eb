public import Foundation
@_spi(HanekeInternals) import HanekeProtocols
import Logging
import Synchronization

/// The counters of a `CompressedStore`, shared by its copies, and its compress and decompress steps.
///
/// Not generic, so that the store's `@inlinable` methods (specialised in your code for your base
/// store) call into compiled code without looking up type metadata.
@usableFromInline
final class CompressionCounters: Sendable {
    let view = StatisticsCounter()
    private let before = Atomic<Int>(0)
    private let after = Atomic<Int>(0)
    private let compressedRead = Atomic<Int>(0)
    private let decompressedRead = Atomic<Int>(0)
    private let rejected = Atomic<Int>(0)

    @usableFromInline
    init() {}

    /// Decompresses a frame read for `key`, counting it; a refused frame is counted as a rejection
    /// and a miss of the view, and becomes the `StoreError` users see.
    @usableFromInline
    func decompress(_ frame: Data, limit: Int, key: some Hashable) throws -> Data {
        do {
            let value = try LZ4.decompress(frame, limit: limit)
            compressedRead.add(frame.count, ordering: .relaxed)
            decompressedRead.add(value.count, ordering: .relaxed)
            return value
        } catch {
            rejected.add(1, ordering: .relaxed)
            view.recordMiss()
            view.recordError()
            throw error.storeError(subject: "The \(frame.count)-byte LZ4 frame stored for key \(Logger.describe(key))")
        }
    }

    /// Compresses a value to be written for `key`; refuses one larger than `limit`, the most a
    /// read decompresses (it could never be read back: in a chain it would be a miss, and be
    /// refetched, forever).
    @usableFromInline
    func compress(_ value: Data, limit: Int, level: Int32, blockSizeID: Int32, linkedBlocks: Bool, key: some Hashable) throws -> Data {
        guard value.count <= limit else {
            view.recordError()
            throw StoreError(
                .valueTooLarge,
                "The value for key \(Logger.describe(key)) is \(value.count) bytes, more than the decompression limit of \(limit) bytes: it could never be read back"
            )
        }
        do {
            return try LZ4.compress(value, settings: LZ4.Settings(level: level, blockSizeID: blockSizeID, linkedBlocks: linkedBlocks))
        } catch {
            view.recordError()
            throw error.storeError(subject: "The \(value.count)-byte value for key \(Logger.describe(key))")
        }
    }

    @usableFromInline
    func recordWrite(uncompressed: Int, compressed: Int) {
        before.add(uncompressed, ordering: .relaxed)
        after.add(compressed, ordering: .relaxed)
    }

    var snapshot: CompressionStatistics {
        CompressionStatistics(
            bytesBeforeCompression: before.load(ordering: .relaxed),
            bytesAfterCompression: after.load(ordering: .relaxed),
            compressedBytesRead: compressedRead.load(ordering: .relaxed),
            decompressedBytesRead: decompressedRead.load(ordering: .relaxed),
            framesRejected: rejected.load(ordering: .relaxed)
        )
    }
}
