/// The header at the start of every FileStore entry file, little-endian:
///
/// | offset | size | field |
/// |---|---|---|
/// | 0  | 4 | magic `HNKF` |
/// | 4  | 1 | format version (1) |
/// | 5  | 3 | reserved, zero |
/// | 8  | 4 | key length in bytes |
/// | 12 | 4 | FNV-1a checksum of bytes 0–11 and 16–39 |
/// | 16 | 8 | creation time, milliseconds since 1970 |
/// | 24 | 8 | expiry, milliseconds since 1970; 0 for never |
/// | 32 | 8 | payload length in bytes |
/// | 40 | key length | the key, UTF-8 |
///
/// The payload follows at `40 + key length`, and the file ends with it: a file of any other size
/// is damaged. The key is compared on every read, so a hash collision or a file renamed to another
/// key's name is a miss, never a wrong value.
struct EntryHeader: Sendable, Hashable {
    static let magic: [UInt8] = Array("HNKF".utf8)
    static let version: UInt8 = 1
    static let fixedSize = 40
    /// The largest key accepted: 16 MiB.
    static let maximumKeyLength = 16 << 20

    /// Milliseconds since 1970 when the entry was written.
    var created: Int64
    /// Milliseconds since 1970 after which the entry is stale; `nil` for never.
    var expires: Int64?
    /// The length of the key, in bytes.
    var keyLength: Int
    /// The length of the payload, in bytes.
    var payloadLength: Int

    /// The header's length, key included: the payload's offset in the file.
    var length: Int { Self.fixedSize + keyLength }
    /// The length of the whole file.
    var fileLength: Int { length + payloadLength }

    /// The header's bytes, key included.
    static func encode(key: String, created: Int64, expires: Int64?, payloadLength: Int) -> [UInt8] {
        var key = key
        return key.withUTF8 { keyBytes in
            var bytes = [UInt8](repeating: 0, count: fixedSize + keyBytes.count)
            bytes.replaceSubrange(0..<4, with: magic)
            bytes[4] = version
            store(UInt32(keyBytes.count), in: &bytes, at: 8)
            store(UInt64(bitPattern: created), in: &bytes, at: 16)
            store(UInt64(bitPattern: expires ?? 0), in: &bytes, at: 24)
            store(UInt64(payloadLength), in: &bytes, at: 32)
            let checksum = bytes.withUnsafeBytes { checksumOfFixedFields(UnsafeRawBufferPointer(rebasing: $0[0..<fixedSize])) }
            store(checksum, in: &bytes, at: 12)
            bytes.withUnsafeMutableBytes { buffer in
                UnsafeMutableRawBufferPointer(rebasing: buffer[fixedSize...]).copyMemory(from: UnsafeRawBufferPointer(keyBytes))
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

        var description: String {
            switch self {
            case .tooShort(let count): "the file is too short for its header (\(count) bytes)"
            case .badMagic: "the file does not start with the FileStore magic 'HNKF'"
            case .unsupportedVersion(let version): "unsupported format version \(version)"
            case .badChecksum: "the header checksum does not match"
            case .keyTooLong(let length): "the header claims a \(length)-byte key"
            case .payloadTooLong(let length): "the header claims a \(length)-byte payload"
            }
        }
    }

    /// Reads the fixed part of a header from the start of `bytes` (the key is not needed).
    static func decode(_ bytes: UnsafeRawBufferPointer) throws(Problem) -> EntryHeader {
        guard bytes.count >= fixedSize else { throw .tooShort(bytes.count) }
        guard bytes[0] == magic[0], bytes[1] == magic[1], bytes[2] == magic[2], bytes[3] == magic[3] else {
            throw .badMagic
        }
        guard bytes[4] == version else { throw .unsupportedVersion(bytes[4]) }
        let stored = UInt32(load(bytes, at: 12, size: 4))
        guard stored == checksumOfFixedFields(UnsafeRawBufferPointer(rebasing: bytes[0..<fixedSize])) else {
            throw .badChecksum
        }
        let keyLength = Int(load(bytes, at: 8, size: 4))
        guard keyLength <= maximumKeyLength else { throw .keyTooLong(keyLength) }
        let payloadLength = load(bytes, at: 32, size: 8)
        guard payloadLength <= UInt64(Int.max - fixedSize - keyLength) else { throw .payloadTooLong(payloadLength) }
        let expires = Int64(bitPattern: load(bytes, at: 24, size: 8))
        return EntryHeader(
            created: Int64(bitPattern: load(bytes, at: 16, size: 8)),
            expires: expires == 0 ? nil : expires,
            keyLength: keyLength,
            payloadLength: Int(payloadLength)
        )
    }

    /// FNV-1a (32-bit) over the fixed fields, skipping the checksum field itself.
    private static func checksumOfFixedFields(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        var hash: UInt32 = 0x811C_9DC5
        for i in 0..<fixedSize where !(12..<16).contains(i) {
            hash = (hash ^ UInt32(bytes[i])) &* 0x0100_0193
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
