public import Foundation
import HanekeProtocols

/// The LZ4 frames of `CompressedStore`, for tools that read a store's files directly (`haneke get`,
/// `haneke verify`) and for tests.
public enum LZ4Frame {
    /// The four bytes every LZ4 frame starts with (`0x184D2204`, little-endian).
    public static let magic: [UInt8] = [0x04, 0x22, 0x4D, 0x18]

    /// Whether `data` starts like an LZ4 frame (the magic number only; decoding may still fail).
    /// - Parameter data: Any bytes.
    /// - Returns: `true` when the first four bytes are the LZ4 frame magic.
    public static func looksLikeFrame(_ data: Data) -> Bool {
        data.count >= 4 && data.prefix(4).elementsEqual(magic)
    }

    /// The content size a frame's header records, or `nil` when it records none, or the header is
    /// not a valid LZ4 frame header (its checksum is checked).
    /// - Parameter frame: The start of a frame (the header, at most 19 bytes, suffices).
    /// - Returns: The announced size of the decompressed bytes.
    public static func recordedContentSize(of frame: Data) -> Int? {
        guard looksLikeFrame(frame), let size = LZ4.recordedContentSize(of: frame.prefix(19)) else { return nil }
        return size <= UInt64(Int.max) ? Int(size) : nil
    }

    /// Decompresses one frame, checking it whole (header, blocks, content checksum).
    /// - Parameters:
    ///   - frame: One LZ4 frame.
    ///   - limit: The most bytes it may decompress to; 64 MiB by default.
    /// - Returns: The bytes it holds.
    /// - Throws: `StoreError` with code `corrupted` or `decompressionLimitExceeded`.
    public static func decompress(_ frame: Data, limit: Int = 64 << 20) throws -> Data {
        do {
            return try LZ4.decompress(frame, limit: limit)
        } catch {
            throw error.storeError(subject: "The \(frame.count)-byte LZ4 frame")
        }
    }

    /// Compresses bytes into one frame, with its content size and checksum, as a `CompressedStore`
    /// with the same configuration writes it.
    /// - Parameters:
    ///   - data: The bytes to compress.
    ///   - configuration: Level, block size and linking; the store's defaults by default (its
    ///     decompression limit plays no part here).
    /// - Returns: One LZ4 frame.
    /// - Throws: `StoreError` with code `encoding` if liblz4 fails.
    public static func compress(_ data: Data, configuration: CompressionConfiguration = .init()) throws -> Data {
        do {
            return try LZ4.compress(data, configuration: configuration)
        } catch {
            throw error.storeError(subject: "\(data.count) bytes")
        }
    }
}

extension LZ4.Failure {
    /// The `StoreError` users see: what, about which frame (`subject`), and why. The reason is
    /// ours (liblz4's error name at most), so it is in the message, and the failure — internal, and
    /// saying nothing more — is not kept as the cause, which would print the reason twice.
    func storeError(subject: String) -> StoreError {
        switch self {
        case .limitExceeded(let claimed?, let limit):
            return StoreError(.decompressionLimitExceeded, "\(subject) claims \(claimed) bytes, over the decompression limit of \(limit) bytes")
        case .limitExceeded(nil, let limit):
            return StoreError(.decompressionLimitExceeded, "\(subject) decompresses to more than the limit of \(limit) bytes")
        case .corrupted(let reason):
            return StoreError(.corrupted, "\(subject) is damaged: \(reason)")
        case .compression(let reason):
            return StoreError(.encoding, "\(subject) could not be compressed: \(reason)")
        case .outOfMemory(let reason):
            return StoreError(.outOfMemory, "\(subject) could not be processed: \(reason)")
        }
    }
}
