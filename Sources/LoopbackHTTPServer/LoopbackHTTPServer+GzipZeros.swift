import Foundation

extension LoopbackHTTPServer.Response {
    /// A 200 response whose body is `count` zero bytes compressed with gzip and sent with
    /// `Content-Encoding: gzip`, so that the client decodes it: about 13 bits on the wire for every
    /// 258 bytes decoded, a gzip bomb when `count` is large (512 MiB take 3.4 MB).
    ///
    /// The stream is written by hand (one deflate block with the fixed Huffman codes: a zero byte,
    /// then copies of 258 bytes at distance 1), so no compressor runs and building it is quick.
    /// - Parameter count: The number of zero bytes the body decodes to.
    /// - Returns: The response.
    public static func gzipEncodedZeros(count: Int) -> Self {
        Self(body: GzipZeros.stream(count: count), headers: [("Content-Encoding", "gzip")])
    }
}

extension LoopbackHTTPServer.Response {
    /// A 200 response whose gzip body never ends while `sending` returns `true`: zero bytes, about
    /// 10 MiB of them decoded from each 65 KB chunk on the wire, sent chunk after chunk until
    /// `sending` says to stop or the client goes away (then the connection closes, the stream
    /// unfinished). The bomb that a client cannot stop by closing early if it keeps reading.
    /// - Parameter sending: Asked before each chunk.
    /// - Returns: The response.
    public static func endlessGzipZeros(while sending: @escaping @Sendable () -> Bool) -> Self {
        var response = Self(body: GzipZeros.endlessStart(), headers: [("Content-Encoding", "gzip")])
        response.endless = Endless(chunk: GzipZeros.endlessChunk(copies: 8 * 5_000), sending: sending)
        return response
    }
}

/// Builds a gzip stream of zero bytes (RFC 1951 and RFC 1952).
private enum GzipZeros {
    /// The start of a stream that does not end: the header, and a block that is not the last one,
    /// with a literal zero and one copy of 258 bytes — 24 bits, so the block's copies that follow
    /// start on a byte.
    static func endlessStart() -> Data {
        var bits = BitWriter()
        bits.bytes = [0x1F, 0x8B, 0x08, 0x00, 0, 0, 0, 0, 0x00, 0xFF]
        bits.write(0, count: 1)   // BFINAL: not the last block
        bits.write(1, count: 2)   // BTYPE 01: fixed Huffman codes
        bits.write(literalZero, count: 8)
        bits.write(copy, count: 13)
        return Data(bits.bytes)
    }

    /// `copies` copies of 258 bytes at distance 1 (a multiple of 8: 13 whole bytes each 8).
    static func endlessChunk(copies: Int) -> Data {
        precondition(copies % 8 == 0)
        var bits = BitWriter()
        for _ in 0..<copies { bits.write(copy, count: 13) }
        return Data(bits.bytes)
    }

    /// A zero byte, as the fixed Huffman codes write it.
    static let literalZero = BitWriter.reversed(0b0011_0000, length: 8)
    /// Length code 285 (258 bytes), then distance code 0 (distance 1).
    static let copy = BitWriter.reversed(0b1100_0101, length: 8) | BitWriter.reversed(0b00000, length: 5) << 8

    static func stream(count: Int) -> Data {
        precondition(count >= 0)
        var bits = BitWriter()
        // The gzip header: magic, deflate, no flags, no time, no extra flags, an unknown system.
        bits.bytes = [0x1F, 0x8B, 0x08, 0x00, 0, 0, 0, 0, 0x00, 0xFF]
        bits.write(1, count: 1)   // BFINAL: the only block
        bits.write(1, count: 2)   // BTYPE 01: fixed Huffman codes
        if count > 0 {
            bits.write(literalZero, count: 8)
            for _ in 0..<(count - 1) / 258 { bits.write(copy, count: 13) }
            for _ in 0..<(count - 1) % 258 { bits.write(literalZero, count: 8) }
        }
        bits.write(0, count: 7)   // end of block (code 256: seven zero bits)
        bits.flush()
        bits.appendLittleEndian(crc32OfZeros(count: count))
        bits.appendLittleEndian(UInt32(truncatingIfNeeded: count))
        return Data(bits.bytes)
    }

    /// The CRC-32 of `count` zero bytes, without reading them: each zero byte multiplies the CRC
    /// register by x⁸ modulo the polynomial, so the register ends at x^(8·count) times its start
    /// (the method of zlib's `crc32_combine`).
    static func crc32OfZeros(count: Int) -> UInt32 {
        var power: UInt32 = 1 << 31          // x⁰ (bit-reflected)
        var square: UInt32 = 1 << 30         // x¹
        for _ in 0..<3 { square = multiply(square, square) }   // x⁸
        var remaining = count
        while remaining > 0 {
            if remaining & 1 == 1 { power = multiply(power, square) }
            square = multiply(square, square)
            remaining >>= 1
        }
        return multiply(power, 0xFFFF_FFFF) ^ 0xFFFF_FFFF
    }

    /// `a` times `b` modulo the CRC-32 polynomial, both bit-reflected.
    private static func multiply(_ a: UInt32, _ b: UInt32) -> UInt32 {
        var product: UInt32 = 0
        var b = b
        var mask: UInt32 = 1 << 31
        while mask != 0 {
            if a & mask != 0 { product ^= b }
            b = b & 1 == 1 ? (b >> 1) ^ 0xEDB8_8320 : b >> 1
            mask >>= 1
        }
        return product
    }
}

/// Packs bits least significant first, as deflate does.
private struct BitWriter {
    var bytes: [UInt8] = []
    private var pending: UInt64 = 0
    private var pendingCount = 0

    /// Writes the low `count` bits of `value`, least significant first (Huffman codes go through
    /// `reversed(_:length:)` first).
    mutating func write(_ value: UInt32, count: Int) {
        pending |= UInt64(value) << UInt64(pendingCount)
        pendingCount += count
        while pendingCount >= 8 {
            bytes.append(UInt8(truncatingIfNeeded: pending))
            pending >>= 8
            pendingCount -= 8
        }
    }

    /// A Huffman code with its bits in the order deflate sends them: most significant first.
    static func reversed(_ code: UInt32, length: Int) -> UInt32 {
        var reversed: UInt32 = 0
        for bit in 0..<length where code & (1 << UInt32(length - 1 - bit)) != 0 {
            reversed |= 1 << UInt32(bit)
        }
        return reversed
    }

    /// Pads the last byte with zero bits.
    mutating func flush() {
        if pendingCount > 0 { write(0, count: 8 - pendingCount) }
    }

    mutating func appendLittleEndian(_ value: UInt32) {
        for shift in stride(from: 0, to: 32, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt32(shift))) }
    }
}
