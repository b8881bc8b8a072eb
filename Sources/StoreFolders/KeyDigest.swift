import Crypto

/// The MD5 of a key's UTF-8 bytes: the name of its file (ISDiskCache's scheme).
///
/// MD5 is used as a name, not for security: the file's header holds the original key and every read
/// compares it, so a collision, however unlikely, is a miss and never a wrong value.
package struct KeyDigest: Hashable, Sendable {
    /// The first eight bytes, big-endian.
    package var high: UInt64
    /// The last eight bytes, big-endian.
    package var low: UInt64

    package init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// The MD5 of `key.utf8`, hashed in place (no `Data` is built: about 1.5× faster).
    package init(key: String) {
        var md5 = Insecure.MD5()
        var key = key
        key.withUTF8 { md5.update(bufferPointer: UnsafeRawBufferPointer($0)) }
        self = md5.finalize().withUnsafeBytes { KeyDigest(bytes: $0) }
    }

    /// Parses 32 upper-case hexadecimal digits; `nil` for anything else (lower case included, so
    /// that a name maps to exactly one digest).
    init?(hex: some StringProtocol) {
        self.init(hex: hex.utf8)
    }

    /// Parses 32 upper-case hexadecimal digits given as bytes (a file name as `readdir` gives it).
    init?(hex: some Sequence<UInt8>) {
        var high: UInt64 = 0
        var low: UInt64 = 0
        var count = 0
        for byte in hex {
            let nibble: UInt64
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = UInt64(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "A")...UInt8(ascii: "F"): nibble = UInt64(byte - UInt8(ascii: "A") + 10)
            default: return nil
            }
            if count < 16 { high = high << 4 | nibble } else if count < 32 { low = low << 4 | nibble }
            count += 1
        }
        guard count == 32 else { return nil }
        self.init(high: high, low: low)
    }

    /// The 32 upper-case hexadecimal digits.
    package var hex: String {
        String(unsafeUninitializedCapacity: 32) { buffer in
            Self.writeHex(high, into: buffer, at: 0)
            Self.writeHex(low, into: buffer, at: 16)
            return 32
        }
    }

    /// `<directory>/<shard>/<hex>`, built in one allocation (this is on every read and write).
    package func path(in directory: String) -> String {
        var directory = directory
        return directory.withUTF8 { prefix in
            String(unsafeUninitializedCapacity: prefix.count + 36) { buffer in
                _ = buffer.initialize(from: prefix)
                var offset = prefix.count
                buffer[offset] = UInt8(ascii: "/")
                Self.writeHex(high, into: buffer, at: offset + 4)
                buffer[offset + 1] = buffer[offset + 4]
                buffer[offset + 2] = buffer[offset + 5]
                buffer[offset + 3] = UInt8(ascii: "/")
                Self.writeHex(low, into: buffer, at: offset + 20)
                offset += 36
                return offset
            }
        }
    }

    /// Calls `body` with `<shard>/<hex>` (the entry's path relative to the store's folder) as a C
    /// string in a stack buffer: no allocation on the read path.
    func withRelativePath<T>(_ body: (UnsafePointer<CChar>) throws -> T) rethrows -> T {
        try withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 36) { buffer in
            Self.writeHex(high, into: buffer, at: 3)
            Self.writeHex(low, into: buffer, at: 19)
            buffer[0] = buffer[3]
            buffer[1] = buffer[4]
            buffer[2] = UInt8(ascii: "/")
            buffer[35] = 0
            return try buffer.withMemoryRebound(to: CChar.self) { try body($0.baseAddress!) }
        }
    }

    /// The shard folder: the first two hexadecimal digits.
    package var shard: String {
        String(unsafeUninitializedCapacity: 2) { buffer in
            let byte = firstByte
            buffer[0] = Self.digit(byte >> 4)
            buffer[1] = Self.digit(byte & 0x0F)
            return 2
        }
    }

    /// The first byte, which also selects the shard.
    package var firstByte: UInt8 { UInt8(truncatingIfNeeded: high >> 56) }

    /// Reads sixteen bytes written by `bytes`.
    package init(bytes: UnsafeRawBufferPointer) {
        precondition(bytes.count >= 16)
        var high: UInt64 = 0
        var low: UInt64 = 0
        for i in 0..<8 { high = high << 8 | UInt64(bytes[i]) }
        for i in 8..<16 { low = low << 8 | UInt64(bytes[i]) }
        self.init(high: high, low: low)
    }

    /// The upper-case hexadecimal digit of `nibble` (0...15), computed rather than looked up: a
    /// table in a global array cost a check of its one-time initialization and of its bounds for
    /// each digit, 450 instructions a name (`callgrind`), on every read and write.
    @inline(__always)
    private static func digit(_ nibble: UInt8) -> UInt8 {
        // "0"..."9" are 0x30...0x39, "A"..."F" 0x41...0x46.
        nibble &+ (nibble < 10 ? 0x30 : 0x37)
    }

    private static func writeHex(_ value: UInt64, into buffer: UnsafeMutableBufferPointer<UInt8>, at offset: Int) {
        for i in 0..<16 {
            buffer[offset + i] = digit(UInt8(truncatingIfNeeded: value >> (60 - 4 * UInt64(i))) & 0x0F)
        }
    }
}
