import NIOCore

/// Redis Cluster's hash slot of a key: CRC16 (XMODEM) of the key's bytes, or of its hash tag,
/// modulo 16,384.
///
/// A hash tag is what lies between the first `{` and the first `}` after it, when that is not
/// empty: keys with the same tag are in the same slot, whatever else they hold.
enum ClusterSlot {
    /// How many slots a cluster has.
    static let count = 16_384

    /// The slot of `key`, hashed as its UTF-8 bytes.
    static func of(_ key: String) -> Int {
        var key = key
        return key.withUTF8 { Self.of(bytes: $0) }
    }

    /// The slot of a key given as a buffer's readable bytes.
    static func of(_ key: ByteBuffer) -> Int {
        key.withUnsafeReadableBytes { raw in raw.withMemoryRebound(to: UInt8.self) { Self.of(bytes: $0) } }
    }

    /// The slot of a key given as bytes.
    static func of(bytes key: UnsafeBufferPointer<UInt8>) -> Int {
        var hashed = key[...]
        if let open = key.firstIndex(of: UInt8(ascii: "{")),
            let close = key[(open + 1)...].firstIndex(of: UInt8(ascii: "}")), close > open + 1
        {
            hashed = key[(open + 1)..<close]
        }
        var crc: UInt16 = 0
        for byte in hashed {
            crc = (crc << 8) ^ table[Int((crc >> 8) ^ UInt16(byte))]
        }
        return Int(crc) & (count - 1)
    }

    /// CRC16-CCITT (polynomial 0x1021, no reflection) of each byte value.
    private static let table: [UInt16] = (0..<256).map { byte in
        var crc = UInt16(byte) << 8
        for _ in 0..<8 {
            crc = crc & 0x8000 != 0 ? (crc << 1) ^ 0x1021 : crc << 1
        }
        return crc
    }
}
