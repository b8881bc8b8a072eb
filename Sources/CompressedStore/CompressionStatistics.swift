import Foundation

/// What a `CompressedStore` has compressed and decompressed, so users see their ratio.
public struct CompressionStatistics: Sendable, Hashable, CustomStringConvertible {
    /// Bytes of values written, before compression.
    public var bytesBeforeCompression: Int
    /// Bytes of the frames written for them.
    public var bytesAfterCompression: Int
    /// Bytes of frames read.
    public var compressedBytesRead: Int
    /// Bytes those frames decompressed to.
    public var decompressedBytesRead: Int
    /// Frames refused: damaged, failing their checksum, or over the decompression limit.
    public var framesRejected: Int

    /// Creates a snapshot; every counter is `0` by default.
    public init(
        bytesBeforeCompression: Int = 0,
        bytesAfterCompression: Int = 0,
        compressedBytesRead: Int = 0,
        decompressedBytesRead: Int = 0,
        framesRejected: Int = 0
    ) {
        self.bytesBeforeCompression = bytesBeforeCompression
        self.bytesAfterCompression = bytesAfterCompression
        self.compressedBytesRead = compressedBytesRead
        self.decompressedBytesRead = decompressedBytesRead
        self.framesRejected = framesRejected
    }

    /// Bytes before compression divided by bytes after (3.0 means a third of the size), or `nil`
    /// before the first write.
    public var ratio: Double? {
        bytesAfterCompression == 0 ? nil : Double(bytesBeforeCompression) / Double(bytesAfterCompression)
    }

    /// The counters on one line.
    public var description: String {
        let ratio = self.ratio.map { String(format: "%.2f", $0) } ?? "—"
        return "written \(bytesBeforeCompression) → \(bytesAfterCompression) bytes (ratio \(ratio)), read \(compressedBytesRead) → \(decompressedBytesRead) bytes, rejected \(framesRejected)"
    }
}
