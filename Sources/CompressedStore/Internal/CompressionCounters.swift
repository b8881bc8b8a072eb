import HanekeProtocols
import Synchronization

/// The counters of a `CompressedStore`, shared by its copies: bytes written before and after
/// compression, bytes read, frames refused, and the store's own view of hits and errors.
final class CompressionCounters: Sendable {
    let view = StatisticsCounter()
    private let before = Atomic<Int>(0)
    private let after = Atomic<Int>(0)
    private let compressedRead = Atomic<Int>(0)
    private let decompressedRead = Atomic<Int>(0)
    private let rejected = Atomic<Int>(0)

    init() {}

    /// A frame read and decompressed.
    func recordRead(compressed: Int, decompressed: Int) {
        compressedRead.add(compressed, ordering: .relaxed)
        decompressedRead.add(decompressed, ordering: .relaxed)
    }

    /// A frame read and refused: a rejection, and a miss and an error of the store's view (the
    /// caller got no value).
    func recordRejected() {
        rejected.add(1, ordering: .relaxed)
        view.recordMiss()
        view.recordError()
    }

    /// A value that could not be written.
    func recordWriteFailure() {
        view.recordError()
    }

    /// A value written: its size before and after compression.
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
