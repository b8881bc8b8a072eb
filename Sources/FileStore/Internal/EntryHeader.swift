import Foundation
import HanekeProtocols

/// The header at the start of every FileStore entry file, little-endian. Two versions exist:
/// version 1 (0.3.0, and what a store still writes for an entry without metadata, so that a 0.3.0
/// process sharing the folder reads it) and version 2, which carries the entry's metadata.
///
/// | offset | size | field |
/// |---|---|---|
/// | 0  | 4 | magic `HNKF` |
/// | 4  | 1 | format version (1 or 2) |
/// | 5  | 3 | reserved, zero |
/// | 8  | 4 | key length in bytes |
/// | 12 | 4 | FNV-1a checksum of the fixed fields: bytes 0–11 and 16–39 (version 1), 16–47 (version 2) |
/// | 16 | 8 | creation time (the entry's `storedAt`), milliseconds since 1970 |
/// | 24 | 8 | expiry, milliseconds since 1970; 0 for never |
/// | 32 | 8 | payload length in bytes |
/// | 40 | 4 | version 2 only: metadata length in bytes, at most 16 KiB |
/// | 44 | 4 | version 2 only: FNV-1a checksum of the metadata |
/// | 40 or 48 | key length | the key, UTF-8 |
/// | then | metadata length | version 2 only: the metadata |
///
/// The payload follows (at ``length``), and the file ends with it: a file of any other size is
/// damaged. The key is compared on every read, so a hash collision or a file renamed to another
/// key's name is a miss, never a wrong value.
struct EntryHeader: Sendable, Hashable {
    static let magic: [UInt8] = Array("HNKF".utf8)
    /// The newest version: 2, written for entries with metadata.
    static let version: UInt8 = 2
    /// The fixed part of a version 1 header, and the least a reader reads before it knows the version.
    static let fixedSize = 40
    /// The fixed part of a version 2 header.
    static let fixedSizeWithMetadata = 48
    /// The largest key accepted: 16 MiB.
    static let maximumKeyLength = 16 << 20
    /// The largest metadata block accepted: ``EntryAttributes/metadataLimit`` (16 KiB).
    static let maximumMetadataLength = EntryAttributes.metadataLimit

    /// The format version of the file: 1 (no metadata) or 2.
    var version: UInt8 = 1
    /// Milliseconds since 1970 when the entry was stored (its `storedAt`).
    var created: Int64
    /// Milliseconds since 1970 after which the entry is stale; `nil` for never.
    var expires: Int64?
    /// The length of the key, in bytes.
    var keyLength: Int
    /// The length of the payload, in bytes.
    var payloadLength: Int
    /// The length of the metadata, in bytes (0 in version 1).
    var metadataLength = 0
    /// The checksum of the metadata (version 2).
    var metadataChecksum: UInt32 = 0

    /// The length of the fixed part: where the key starts.
    var fixedLength: Int { version == 1 ? Self.fixedSize : Self.fixedSizeWithMetadata }
    /// Where the key is in the file.
    var keyRange: Range<Int> { fixedLength..<(fixedLength + keyLength) }
    /// Where the metadata is in the file.
    var metadataRange: Range<Int> { keyRange.upperBound..<(keyRange.upperBound + metadataLength) }
    /// The header's length, key and metadata included: the payload's offset in the file.
    var length: Int { fixedLength + keyLength + metadataLength }
    /// The length of the whole file.
    var fileLength: Int { length + payloadLength }

    /// The length of a header, key and metadata included, for the sizes of files about to be written.
    static func length(keyLength: Int, metadataLength: Int) -> Int {
        (metadataLength == 0 ? fixedSize : fixedSizeWithMetadata) + keyLength + metadataLength
    }

    /// The header's bytes, key and metadata included: version 1 when there is no metadata, else
    /// version 2.
    static func encode(key: String, created: Int64, expires: Int64?, payloadLength: Int, metadata: Data = Data()) -> [UInt8] {
        var key = key
        let version: UInt8 = metadata.isEmpty ? 1 : 2
        let fixed = version == 1 ? fixedSize : fixedSizeWithMetadata
        let metadataChecksum: UInt32 = metadata.withUnsafeBytes { checksum(of: $0) }
        return key.withUTF8 { (keyBytes: UnsafeBufferPointer<UInt8>) -> [UInt8] in
            var bytes = [UInt8](repeating: 0, count: fixed + keyBytes.count + metadata.count)
            bytes.replaceSubrange(0..<4, with: magic)
            bytes[4] = version
            store(UInt32(keyBytes.count), in: &bytes, at: 8)
            store(UInt64(bitPattern: created), in: &bytes, at: 16)
            store(UInt64(bitPattern: expires ?? 0), in: &bytes, at: 24)
            store(UInt64(payloadLength), in: &bytes, at: 32)
            if version == 2 {
                store(UInt32(metadata.count), in: &bytes, at: 40)
                store(metadataChecksum, in: &bytes, at: 44)
            }
            let checksum = bytes.withUnsafeBytes { checksumOfFixedFields(UnsafeRawBufferPointer(rebasing: $0[0..<fixed])) }
            store(checksum, in: &bytes, at: 12)
            bytes.withUnsafeMutableBytes { buffer in
                UnsafeMutableRawBufferPointer(rebasing: buffer[fixed...]).copyMemory(from: UnsafeRawBufferPointer(keyBytes))
                metadata.withUnsafeBytes { (metadataBytes: UnsafeRawBufferPointer) in
                    UnsafeMutableRawBufferPointer(rebasing: buffer[(fixed + keyBytes.count)...]).copyMemory(from: metadataBytes)
                }
            }
            return bytes
        }
    }

    /// Why a header could not be read.
    enum Problem: Error, Equatable, CustomStringConvertible {
        /// Fewer bytes than the fixed header, or than the key it announces.
        case tooShort(Int)
        case badMagic
        case unsupportedVersion(UInt8)
        case badChecksum
        case keyTooLong(Int)
        case payloadTooLong(UInt64)
        case metadataTooLong(UInt64)
        case badMetadataChecksum

        var description: String {
            switch self {
            case .tooShort(let count): "the file is too short for its header (\(count) bytes)"
            case .badMagic: "the file does not start with the FileStore magic 'HNKF'"
            case .unsupportedVersion(let version): "unsupported format version \(version)"
            case .badChecksum: "the header checksum does not match"
            case .keyTooLong(let length): "the header claims a \(length)-byte key"
            case .payloadTooLong(let length): "the header claims a \(length)-byte payload"
            case .metadataTooLong(let length): "the header claims \(length) bytes of metadata, more than the limit of \(maximumMetadataLength)"
            case .badMetadataChecksum: "the metadata checksum does not match"
            }
        }
    }

    /// How many bytes the fixed part of the header starting `bytes` (at least ``fixedSize`` of
    /// them) takes, by its version byte: what to read before ``decode(_:)``.
    static func fixedLength(declaredBy bytes: UnsafeRawBufferPointer) -> Int {
        bytes.count > 4 && bytes[4] == 2 ? fixedSizeWithMetadata : fixedSize
    }

    /// Reads the fixed part of a header from the start of `bytes` (the key and the metadata are not
    /// needed; ``metadataMatches(_:)`` checks the metadata once it is read).
    static func decode(_ bytes: UnsafeRawBufferPointer) throws(Problem) -> EntryHeader {
        guard bytes.count >= fixedSize else { throw .tooShort(bytes.count) }
        guard bytes[0] == magic[0], bytes[1] == magic[1], bytes[2] == magic[2], bytes[3] == magic[3] else {
            throw .badMagic
        }
        let version = bytes[4]
        guard version == 1 || version == 2 else { throw .unsupportedVersion(version) }
        let fixed = version == 1 ? fixedSize : fixedSizeWithMetadata
        guard bytes.count >= fixed else { throw .tooShort(bytes.count) }
        let stored = UInt32(load(bytes, at: 12, size: 4))
        guard stored == checksumOfFixedFields(UnsafeRawBufferPointer(rebasing: bytes[0..<fixed])) else {
            throw .badChecksum
        }
        let keyLength = Int(load(bytes, at: 8, size: 4))
        guard keyLength <= maximumKeyLength else { throw .keyTooLong(keyLength) }
        var metadataLength = 0
        var metadataChecksum: UInt32 = 0
        if version == 2 {
            let claimed = load(bytes, at: 40, size: 4)
            guard claimed <= UInt64(maximumMetadataLength) else { throw .metadataTooLong(claimed) }
            metadataLength = Int(claimed)
            metadataChecksum = UInt32(load(bytes, at: 44, size: 4))
        }
        let payloadLength = load(bytes, at: 32, size: 8)
        guard payloadLength <= UInt64(Int.max - fixed - keyLength - metadataLength) else { throw .payloadTooLong(payloadLength) }
        let expires = Int64(bitPattern: load(bytes, at: 24, size: 8))
        return EntryHeader(
            version: version,
            created: Int64(bitPattern: load(bytes, at: 16, size: 8)),
            expires: expires == 0 ? nil : expires,
            keyLength: keyLength,
            payloadLength: Int(payloadLength),
            metadataLength: metadataLength,
            metadataChecksum: metadataChecksum
        )
    }

    /// Whether `metadata` (the bytes at ``metadataRange``) is what the header's checksum says.
    func metadataMatches(_ metadata: UnsafeRawBufferPointer) -> Bool {
        version == 1 || Self.checksum(of: metadata) == metadataChecksum
    }

    /// FNV-1a (32-bit) over the fixed fields, skipping the checksum field itself.
    private static func checksumOfFixedFields(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        var hash: UInt32 = 0x811C_9DC5
        for i in 0..<bytes.count where !(12..<16).contains(i) {
            hash = (hash ^ UInt32(bytes[i])) &* 0x0100_0193
        }
        return hash
    }

    /// FNV-1a (32-bit) of `bytes`.
    private static func checksum(of bytes: UnsafeRawBufferPointer) -> UInt32 {
        var hash: UInt32 = 0x811C_9DC5
        for byte in bytes {
            hash = (hash ^ UInt32(byte)) &* 0x0100_0193
        }
        return hash
    }

    private static func store<T: FixedWidthInteger>(_ value: T, in bytes: inout [UInt8], at offset: Int) {
        for i in 0..<MemoryLayout<T>.size {
            bytes[offset + i] = UInt8(truncatingIfNeeded: value >> (8 * i))
        }
    }

    private static func load(_ bytes: UnsafeRawBufferPointer, at offset: Int, size: Int) -> UInt64 {
        var value: UInt64 = 0
        for i in (0..<size).reversed() {
            value = value << 8 | UInt64(bytes[offset + i])
        }
        return value
    }
}
