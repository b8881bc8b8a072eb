public import Foundation

/// Writes PNG files byte by byte, for the tests (the Images tests and the tool's): pixels as given (8 or 16 bits a sample, no filtering,
/// deflate's stored blocks, so no compressor is needed), an optional ICC profile, or a header that
/// declares any size at all.
public enum PNGWriter {
    /// The PNG colour types the tests use.
    public enum ColorType: UInt8, Sendable {
        case gray = 0
        case rgb = 2
        case grayAlpha = 4
        case rgba = 6

        /// The bytes of one pixel.
        public var channels: Int {
            switch self {
            case .gray: 1
            case .rgb: 3
            case .grayAlpha: 2
            case .rgba: 4
            }
        }
    }

    /// A PNG of `width × height` pixels, `pixels` row by row (`channels` samples each, of one
    /// byte, or two big-endian bytes when `bitDepth` is 16), with an `iCCP` chunk holding
    /// `iccProfile` when there is one.
    public static func png(width: Int, height: Int, colorType: ColorType, pixels: [UInt8], iccProfile: Data? = nil, bitDepth: UInt8 = 8) -> Data {
        let rowLength = width * colorType.channels * (bitDepth == 16 ? 2 : 1)
        precondition(pixels.count == rowLength * height, "\(pixels.count) bytes for \(width)×\(height) \(colorType)")
        var scanlines: [UInt8] = []
        scanlines.reserveCapacity((rowLength + 1) * height)
        for row in 0..<height {
            scanlines.append(0)   // filter type None
            scanlines.append(contentsOf: pixels[row * rowLength..<(row + 1) * rowLength])
        }
        var file = signature
        file += chunk("IHDR", header(width: width, height: height, colorType: colorType, bitDepth: bitDepth))
        if let iccProfile {
            file += chunk("iCCP", Array("test profile".utf8) + [0, 0] + zlibStored(Array(iccProfile)))
        }
        file += chunk("IDAT", zlibStored(scanlines))
        file += chunk("IEND", [])
        return Data(file)
    }

    /// A PNG whose header declares `width × height` pixels (RGB, 8 bits a sample, unless said
    /// otherwise), with valid checksums, followed by the pixels of one row only: what a
    /// decompression bomb looks like to a header reader.
    public static func declaring(width: Int, height: Int, colorType: ColorType = .rgb, bitDepth: UInt8 = 8) -> Data {
        let oneRow = [UInt8](repeating: 0, count: 1 + colorType.channels * Int(bitDepth / 8) * min(width, 1_024))
        var file = signature
        file += chunk("IHDR", header(width: width, height: height, colorType: colorType, bitDepth: bitDepth))
        file += chunk("IDAT", zlibStored(oneRow))
        file += chunk("IEND", [])
        return Data(file)
    }

    /// `png` with a chunk of `type` holding `body` right after its header (IHDR), as `tRNS`,
    /// `iCCP` and `eXIf` chunks go.
    public static func inserting(_ type: String, _ body: [UInt8], into png: Data) -> Data {
        png.prefix(33) + Data(chunk(type, body)) + png.dropFirst(33)
    }

    private static let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

    private static func header(width: Int, height: Int, colorType: ColorType, bitDepth: UInt8) -> [UInt8] {
        bigEndian(UInt32(width)) + bigEndian(UInt32(height)) + [bitDepth, colorType.rawValue, 0, 0, 0]
    }

    /// A chunk: its length, its type, its data and the CRC-32 of type and data.
    public static func chunk(_ type: String, _ body: [UInt8]) -> [UInt8] {
        let typeAndBody = Array(type.utf8) + body
        return bigEndian(UInt32(body.count)) + typeAndBody + bigEndian(crc32(typeAndBody))
    }

    /// A zlib stream of `bytes` in stored (uncompressed) deflate blocks, with its Adler-32.
    public static func zlibStored(_ bytes: [UInt8]) -> [UInt8] {
        var stream: [UInt8] = [0x78, 0x01]
        var start = 0
        repeat {
            let end = min(start + 65_535, bytes.count)
            let length = UInt16(end - start)
            stream.append(end == bytes.count ? 1 : 0)   // BFINAL, BTYPE 00
            stream += [UInt8(length & 0xFF), UInt8(length >> 8), UInt8(~length & 0xFF), UInt8(~length >> 8)]
            stream += bytes[start..<end]
            start = end
        } while start < bytes.count
        return stream + bigEndian(adler32(bytes))
    }

    /// `value` as four big-endian bytes, as PNG and Exif (in big-endian files) store integers.
    public static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }

    private static let crcTable: [UInt32] = (0..<256).map { index in
        var value = UInt32(index)
        for _ in 0..<8 { value = value & 1 == 1 ? 0xEDB8_8320 ^ (value >> 1) : value >> 1 }
        return value
    }

    /// The CRC-32 that closes every PNG chunk (over its type and data).
    public static func crc32(_ bytes: [UInt8]) -> UInt32 {
        ~bytes.reduce(~UInt32(0)) { crc, byte in crcTable[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
    }

    private static func adler32(_ bytes: [UInt8]) -> UInt32 {
        var a: UInt32 = 1
        var b: UInt32 = 0
        for byte in bytes {
            a = (a + UInt32(byte)) % 65_521
            b = (b + a) % 65_521
        }
        return b << 16 | a
    }
}
