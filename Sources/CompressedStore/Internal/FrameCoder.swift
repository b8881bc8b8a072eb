public import Foundation
import HanekeProtocols
import Logging

/// What a `CompressedStore` does to each value, with its configuration and its counters: compress
/// a value into a frame on write, decompress a frame on read, and turn liblz4's failures into the
/// `StoreError`s users see.
///
/// Not generic, so that the store's `@inlinable` methods (specialised in your code for your base
/// store) call into compiled code without looking up type metadata.
@usableFromInline
final class FrameCoder: Sendable {
    let configuration: CompressionConfiguration
    let counters = CompressionCounters()

    init(_ configuration: CompressionConfiguration) {
        self.configuration = configuration
    }

    /// Decompresses a frame read for `key`, counting it; a refused frame is counted as a rejection.
    @usableFromInline
    func decode(_ frame: Data, key: some Hashable) throws -> Data {
        do {
            let value = try LZ4.decompress(frame, limit: configuration.decompressionLimit)
            counters.recordRead(compressed: frame.count, decompressed: value.count)
            return value
        } catch {
            counters.recordRejected()
            throw error.storeError(subject: "The \(frame.count)-byte LZ4 frame stored for key \(Logger.describe(key))")
        }
    }

    /// Compresses a value to be written for `key` (``recordWrite(uncompressed:compressed:)`` counts
    /// it once it is stored); refuses one larger than the
    /// decompression limit (it could never be read back: in a chain it would be a miss, and be
    /// refetched, forever).
    @usableFromInline
    func encode(_ value: Data, key: some Hashable) throws -> Data {
        guard value.count <= configuration.decompressionLimit else {
            counters.recordWriteFailure()
            throw StoreError(
                .valueTooLarge,
                "The value for key \(Logger.describe(key)) is \(value.count) bytes, more than the decompression limit of \(configuration.decompressionLimit) bytes: it could never be read back"
            )
        }
        do {
            return try LZ4.compress(value, configuration: configuration)
        } catch {
            counters.recordWriteFailure()
            throw error.storeError(subject: "The \(value.count)-byte value for key \(Logger.describe(key))")
        }
    }

    /// A value stored: its size before and after compression.
    @usableFromInline
    func recordWrite(uncompressed: Int, compressed: Int) {
        counters.recordWrite(uncompressed: uncompressed, compressed: compressed)
    }
}
