import Foundation

/// What the header of an encoded image says: its format, its size as stored, alpha, EXIF
/// orientation, an embedded colour profile.
///
/// ``read(_:)`` reads the headers of JPEG, PNG and WebP files in Swift, in well under a
/// microsecond: a disk hit of a cached thumbnail is one file read and this, with no call into
/// libvips (whose header read, through its loaders and its metadata, took 40 µs here). It answers
/// only when it understands every byte it reads the way libvips's loaders do, and `nil` otherwise:
/// another format, an animated WebP, anything unusual or damaged — and libvips decides then
/// (``Vips/header(of:)``). A test holds the two to the same answers on generated images and on
/// thousands of damaged copies of them.
struct ImageHeader: Equatable {
    var format: ImageFormat
    /// The size as stored, before the EXIF orientation is applied.
    var width: Int
    var height: Int
    var hasAlpha: Bool
    /// The EXIF orientation as the file says it; 1 when it says nothing.
    var orientation: Int
    var hasColorProfile: Bool
    /// The bytes each pixel takes decoded, as libvips decodes it: its bands times the bytes of a
    /// sample (8 for 16-bit RGBA, 3 for 8-bit RGB, 1 for 8-bit grey).
    var bytesPerPixel: Int

    /// The largest width or height libvips accepts (`VIPS_MAX_COORD`); a header that declares more
    /// is left to libvips, which refuses it.
    static let largestSide = 10_000_000

    /// Reads the header of a JPEG, PNG or WebP file; `nil` for other bytes, or when libvips should
    /// decide.
    static func read(_ data: Data) -> ImageHeader? {
        data.withUnsafeBytes { buffer in
            let bytes = Bytes(buffer)
            let header: ImageHeader?
            if bytes.starts(with: [0xFF, 0xD8, 0xFF]) {
                header = readJPEG(bytes)
            } else if bytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) {
                header = readPNG(bytes)
            } else if bytes.starts(with: Signature.riff), bytes.matches(Signature.webp, at: 8) {
                header = readWebP(bytes)
            } else {
                header = nil
            }
            guard let header, (1...largestSide).contains(header.width), (1...largestSide).contains(header.height) else {
                return nil
            }
            return header
        }
    }

    // MARK: - JPEG

    /// Walks the markers up to the start of the scan, as libjpeg's `jpeg_read_header` does: the
    /// frame header (SOF) gives the size, an `Exif` APP1 the orientation, an `ICC_PROFILE` APP2 the
    /// profile.
    private static func readJPEG(_ bytes: Bytes) -> ImageHeader? {
        var offset = 2
        var size: (width: Int, height: Int)?
        var components: [UInt8] = []
        var orientation = 1
        var exifSegments = 0
        var hasColorProfile = false
        while true {
            guard bytes.byte(at: offset) == 0xFF, var marker = bytes.byte(at: offset + 1) else { return nil }
            offset += 2
            // Fill bytes: any number of 0xFF before a marker.
            while marker == 0xFF {
                guard let next = bytes.byte(at: offset) else { return nil }
                marker = next
                offset += 1
            }
            // The markers libjpeg-turbo reads before a scan: frame headers of the processes it
            // decodes (baseline, extended, progressive; Huffman or arithmetic), tables, restart
            // interval, application segments, comments. Anything else is libvips's to judge.
            switch marker {
            case 0xC0...0xC2, 0xC9, 0xCA, 0xC4, 0xDA, 0xDB, 0xDD, 0xE0...0xEF, 0xFE:
                break
            default:
                return nil
            }
            guard let length = bytes.bigEndian16(at: offset), length >= 2, bytes.count >= offset + length else { return nil }
            let body = offset + 2
            let bodyLength = length - 2
            switch marker {
            case 0xDA:
                // Start of scan: the header is complete once the scan's components are the frame's.
                guard let size, let count = bytes.byte(at: body), (1...4).contains(count), bodyLength == 4 + 2 * Int(count),
                      (0..<Int(count)).allSatisfy({ bytes.byte(at: body + 1 + 2 * $0).map(components.contains) == true })
                else { return nil }
                return ImageHeader(
                    format: .jpeg, width: size.width, height: size.height, hasAlpha: false,
                    orientation: orientation, hasColorProfile: hasColorProfile, bytesPerPixel: components.count
                )
            case 0xC0...0xC2, 0xC9, 0xCA:
                // A frame header: 8-bit precision, height, width (65,500 at most), then each
                // component's identifier, sampling factors (1 to 4 each way) and table.
                guard size == nil, bodyLength >= 6, bytes.byte(at: body) == 8,
                      let height = bytes.bigEndian16(at: body + 1), let width = bytes.bigEndian16(at: body + 3),
                      let count = bytes.byte(at: body + 5), [1, 3, 4].contains(count),
                      bodyLength == 6 + 3 * Int(count), (1...65_500).contains(height), (1...65_500).contains(width),
                      (0..<Int(count)).allSatisfy({ index in
                          bytes.byte(at: body + 7 + 3 * index).map { (1...4).contains($0 >> 4) && (1...4).contains($0 & 0x0F) } == true
                      })
                else { return nil }
                size = (width, height)
                components = (0..<Int(count)).compactMap { bytes.byte(at: body + 6 + 3 * $0) }
            case 0xC4:
                guard validHuffmanTables(bytes, at: body, length: bodyLength) else { return nil }
            case 0xDB:
                guard validQuantizationTables(bytes, at: body, length: bodyLength) else { return nil }
            case 0xDD:
                // The restart interval: two bytes.
                guard bodyLength == 2 else { return nil }
            case 0xE1 where bytes.matches(Signature.exif, at: body) && bodyLength >= 6:
                exifSegments += 1
                guard exifSegments == 1, let value = exifOrientation(bytes, tiff: body + 6, end: body + bodyLength) else { return nil }
                orientation = value
            case 0xE2 where bytes.matches(Signature.iccProfile, at: body) && bodyLength > 14:
                // libvips assembles a profile from the segments named so (the name's first 11
                // letters) that hold more than the name and two counters, from the first on: it
                // has one when the first segment is there.
                if bytes.byte(at: body + 12) == 1 { hasColorProfile = true }
            default:
                break
            }
            offset = body + bodyLength
        }
    }

    /// Whether a DHT segment holds whole Huffman tables, as libjpeg checks them when it reads the
    /// segment: a class-and-index byte (index 0 to 3), 16 code counts that add up to at most 256
    /// and to no more than the bytes left, the symbols; nothing after the last table.
    private static func validHuffmanTables(_ bytes: Bytes, at start: Int, length: Int) -> Bool {
        var offset = start, left = length
        while left > 16 {
            guard let index = bytes.byte(at: offset), index & 0xEF < 4 else { return false }
            var symbols = 0
            for position in 1...16 {
                guard let count = bytes.byte(at: offset + position) else { return false }
                symbols += Int(count)
            }
            left -= 17
            guard symbols <= 256, symbols <= left else { return false }
            offset += 17 + symbols
            left -= symbols
        }
        return left == 0
    }

    /// Whether a DQT segment holds whole quantization tables, as libjpeg-turbo checks them: each
    /// a precision-and-index byte (index 0 to 3), then 64 values of one byte (precision 0) or two
    /// (any other); nothing after the last table.
    private static func validQuantizationTables(_ bytes: Bytes, at start: Int, length: Int) -> Bool {
        var offset = start, left = length
        while left > 0 {
            guard let byte = bytes.byte(at: offset), byte & 0x0F < 4 else { return false }
            let tableSize = 1 + (byte >> 4 == 0 ? 64 : 128)
            offset += tableSize
            left -= tableSize
        }
        return left == 0
    }

    // MARK: - PNG

    /// Reads the IHDR chunk, then the chunks before the image data for transparency (`tRNS`), a
    /// colour profile (`iCCP`) and EXIF (`eXIf`), checking each one's CRC as the PNG decoder does.
    private static func readPNG(_ bytes: Bytes) -> ImageHeader? {
        guard bytes.bigEndian32(at: 8) == 13, bytes.matches(Signature.ihdr, at: 12),
              let width = bytes.bigEndian32(at: 16), let height = bytes.bigEndian32(at: 20),
              let depth = bytes.byte(at: 24), let colorType = bytes.byte(at: 25),
              bytes.byte(at: 26) == 0, bytes.byte(at: 27) == 0, let interlace = bytes.byte(at: 28), interlace <= 1,
              validPNGDepth(depth, colorType: colorType),
              bytes.crcMatches(from: 12, count: 17)
        else { return nil }
        var hasAlpha = colorType == 4 || colorType == 6
        var hasColorProfile = false
        var orientation = 1
        var offset = 33
        while true {
            guard let length = bytes.bigEndian32(at: offset), length < 1 << 31, let type = bytes.ascii4(at: offset + 4),
                  type.utf8.allSatisfy({ (0x41...0x5A).contains($0 & 0xDF) }), bytes.count >= offset + 12 + length
            else { return nil }
            if type == "IDAT" { break }
            guard bytes.crcMatches(from: offset + 4, count: 4 + length) else { return nil }
            let body = offset + 8
            switch type {
            case "IHDR", "IEND":
                return nil
            case "tRNS":
                // A palette, grey or RGB image with a transparent colour decodes with alpha.
                hasAlpha = true
            case "iCCP":
                hasColorProfile = true
            case "eXIf":
                guard let value = exifOrientation(bytes, tiff: tiffStart(bytes, at: body), end: body + length) else { return nil }
                orientation = value
            default:
                // Ancillary chunks (a lower-case first letter) are skipped; a critical one other
                // than the palette is not ours to judge.
                guard type == "PLTE" || type.first?.isLowercase == true else { return nil }
            }
            offset = body + length + 4
        }
        // Grey, grey and alpha, RGB (also a palette's), RGB and alpha; a transparent colour adds
        // alpha; 16-bit samples take two bytes.
        let colors = colorType == 0 || colorType == 4 ? 1 : 3
        return ImageHeader(
            format: .png, width: width, height: height, hasAlpha: hasAlpha,
            orientation: orientation, hasColorProfile: hasColorProfile,
            bytesPerPixel: (colors + (hasAlpha ? 1 : 0)) * (depth == 16 ? 2 : 1)
        )
    }

    /// The bit depths the PNG specification allows for each colour type.
    private static func validPNGDepth(_ depth: UInt8, colorType: UInt8) -> Bool {
        switch colorType {
        case 0: [1, 2, 4, 8, 16].contains(depth)
        case 3: [1, 2, 4, 8].contains(depth)
        case 2, 4, 6: depth == 8 || depth == 16
        default: false
        }
    }

    // MARK: - WebP

    /// The largest width or height libvips reads from a WebP (libwebp's `WEBP_MAX_DIMENSION`).
    private static let webPLargestSide = 16_383

    /// Reads a still WebP: a lossy (`VP8 `) or lossless (`VP8L`) bitstream alone, or an extended
    /// file (`VP8X`) whose flags say alpha, profile and EXIF, whose chunks hold them. Animations
    /// are libvips's to read.
    private static func readWebP(_ bytes: Bytes) -> ImageHeader? {
        // libwebp reads the whole RIFF container: it must be there, in an even number of bytes.
        guard let riffSize = bytes.littleEndian32(at: 4), riffSize >= 12, riffSize % 2 == 0, bytes.count >= 8 + riffSize,
              let first = bytes.ascii4(at: 12), let firstSize = bytes.littleEndian32(at: 16)
        else { return nil }
        let end = 8 + riffSize
        let body = 20
        // A simple file is its one bitstream chunk, which fills the container.
        let fillsTheContainer = body + firstSize + firstSize % 2 == end
        switch first {
        case "VP8 ":
            guard fillsTheContainer, let (width, height) = vp8Size(bytes, at: body, size: firstSize) else { return nil }
            return ImageHeader(format: .webp, width: width, height: height, hasAlpha: false, orientation: 1, hasColorProfile: false, bytesPerPixel: 3)
        case "VP8L":
            guard fillsTheContainer, let (width, height, alpha) = vp8lSize(bytes, at: body, size: firstSize),
                  width <= webPLargestSide, height <= webPLargestSide
            else { return nil }
            return ImageHeader(format: .webp, width: width, height: height, hasAlpha: alpha, orientation: 1, hasColorProfile: false, bytesPerPixel: alpha ? 4 : 3)
        case "VP8X":
            guard firstSize == 10, let flags = bytes.byte(at: body),
                  let width = bytes.littleEndian24(at: body + 4), let height = bytes.littleEndian24(at: body + 7)
            else { return nil }
            let animated = flags & 0x02 != 0, hasICCFlag = flags & 0x20 != 0, hasEXIF = flags & 0x08 != 0
            // libwebp refuses a canvas of 2³² pixels or more.
            guard !animated, flags & 0xC1 == 0, width < webPLargestSide, height < webPLargestSide else { return nil }
            var orientation = 1
            var hasColorProfile = false
            var sawImage = false
            var offset = body + 10
            // The chunks after the header: one image, and the profile and EXIF the flags announce.
            while offset < end {
                guard let type = bytes.ascii4(at: offset), let size = bytes.littleEndian32(at: offset + 4),
                      offset + 8 + size <= end
                else { return nil }
                let chunk = offset + 8
                switch type {
                case "VP8 ", "VP8L":
                    // One image, the canvas's size (libwebp's demuxer checks both).
                    let imageSize = type == "VP8 " ? vp8Size(bytes, at: chunk, size: size) : vp8lSize(bytes, at: chunk, size: size).map { ($0.0, $0.1) }
                    guard !sawImage, let imageSize, imageSize.0 == width + 1, imageSize.1 == height + 1 else { return nil }
                    sawImage = true
                case "ICCP" where hasICCFlag:
                    // libvips reads the profile when the flag says there is one and the chunk is there.
                    hasColorProfile = true
                case "ANIM", "ANMF", "VP8X":
                    return nil
                case "EXIF" where hasEXIF:
                    guard let value = exifOrientation(bytes, tiff: tiffStart(bytes, at: chunk), end: chunk + size) else { return nil }
                    orientation = value
                default:
                    break
                }
                offset = chunk + size + size % 2
            }
            guard sawImage else { return nil }
            return ImageHeader(
                format: .webp, width: width + 1, height: height + 1, hasAlpha: flags & 0x10 != 0,
                orientation: orientation, hasColorProfile: hasColorProfile, bytesPerPixel: flags & 0x10 != 0 ? 4 : 3
            )
        default:
            return nil
        }
    }

    /// A lossy frame's size, as libwebp's `VP8GetInfo` checks it: a shown key frame of a known
    /// profile whose first partition fits the chunk, the start code, then 14-bit width and height.
    private static func vp8Size(_ bytes: Bytes, at offset: Int, size: Int) -> (Int, Int)? {
        guard size >= 10, let tag = bytes.littleEndian24(at: offset), tag & 0x01 == 0, (tag >> 1) & 0x07 <= 3,
              tag & 0x10 != 0, tag >> 5 < size,
              bytes.matches([0x9D, 0x01, 0x2A], at: offset + 3),
              let width = bytes.littleEndian16(at: offset + 6), let height = bytes.littleEndian16(at: offset + 8),
              width & 0x3FFF > 0, height & 0x3FFF > 0
        else { return nil }
        return (width & 0x3FFF, height & 0x3FFF)
    }

    /// A lossless image's size and alpha hint: a signature byte, then 14 bits of width − 1, 14 of
    /// height − 1, one for alpha and three of version (0).
    private static func vp8lSize(_ bytes: Bytes, at offset: Int, size: Int) -> (Int, Int, Bool)? {
        guard size >= 5, bytes.byte(at: offset) == 0x2F, let bits = bytes.littleEndian32(at: offset + 1), bits >> 29 == 0 else {
            return nil
        }
        return ((bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1, (bits >> 28) & 1 == 1)
    }

    // MARK: - EXIF

    /// Where the TIFF structure of an EXIF chunk (PNG's `eXIf`, WebP's `EXIF`) starts: at `offset`,
    /// or after an `Exif\0\0` prefix that some writers put there and libvips accepts too.
    private static func tiffStart(_ bytes: Bytes, at offset: Int) -> Int {
        bytes.matches(Signature.exif, at: offset) ? offset + Signature.exif.count : offset
    }

    /// The orientation in the first IFD of the TIFF structure at `tiff` (1 when it has none), or
    /// `nil` when the structure is not one to read without libexif's judgement.
    private static func exifOrientation(_ bytes: Bytes, tiff: Int, end: Int) -> Int? {
        let little: Bool
        if bytes.matches([0x49, 0x49, 0x2A, 0x00], at: tiff) {
            little = true
        } else if bytes.matches([0x4D, 0x4D, 0x00, 0x2A], at: tiff) {
            little = false
        } else {
            return nil
        }
        func read16(_ at: Int) -> Int? { at + 2 <= end ? (little ? bytes.littleEndian16(at: at) : bytes.bigEndian16(at: at)) : nil }
        func read32(_ at: Int) -> Int? { at + 4 <= end ? (little ? bytes.littleEndian32(at: at) : bytes.bigEndian32(at: at)) : nil }
        guard let ifd = read32(tiff + 4), ifd >= 8, let count = read16(tiff + ifd), count > 0, count < 1000,
              tiff + ifd + 2 + 12 * count <= end
        else { return nil }
        var orientation: Int?
        for index in 0..<count {
            let entry = tiff + ifd + 2 + 12 * index
            guard read16(entry) == 0x0112 else { continue }
            guard orientation == nil, read16(entry + 2) == 3, read32(entry + 4) == 1, let value = read16(entry + 8),
                  (1...8).contains(value)
            else { return nil }
            orientation = value
        }
        return orientation ?? 1
    }
}

/// The fixed byte strings the reader compares, made once rather than on every read.
private enum Signature {
    static let riff = Array("RIFF".utf8)
    static let webp = Array("WEBP".utf8)
    static let ihdr = Array("IHDR".utf8)
    static let exif = Array("Exif\0\0".utf8)
    static let iccProfile = Array("ICC_PROFILE".utf8)
}

/// Bounds-checked reads from an image's bytes: every read past the end is `nil`.
private struct Bytes {
    let buffer: UnsafeRawBufferPointer

    init(_ buffer: UnsafeRawBufferPointer) { self.buffer = buffer }

    var count: Int { buffer.count }

    func byte(at offset: Int) -> UInt8? {
        offset >= 0 && offset < buffer.count ? buffer[offset] : nil
    }

    func starts(with prefix: [UInt8]) -> Bool { matches(prefix, at: 0) }

    func matches(_ expected: [UInt8], at offset: Int) -> Bool {
        guard offset >= 0, offset <= buffer.count - expected.count else { return false }
        for (index, byte) in expected.enumerated() where buffer[offset + index] != byte { return false }
        return true
    }

    func bigEndian16(at offset: Int) -> Int? {
        guard let high = byte(at: offset), let low = byte(at: offset + 1) else { return nil }
        return Int(high) << 8 | Int(low)
    }

    func littleEndian16(at offset: Int) -> Int? {
        guard let low = byte(at: offset), let high = byte(at: offset + 1) else { return nil }
        return Int(high) << 8 | Int(low)
    }

    func littleEndian24(at offset: Int) -> Int? {
        guard let low = littleEndian16(at: offset), let high = byte(at: offset + 2) else { return nil }
        return Int(high) << 16 | low
    }

    func bigEndian32(at offset: Int) -> Int? {
        guard let high = bigEndian16(at: offset), let low = bigEndian16(at: offset + 2) else { return nil }
        return high << 16 | low
    }

    func littleEndian32(at offset: Int) -> Int? {
        guard let low = littleEndian16(at: offset), let high = littleEndian16(at: offset + 2) else { return nil }
        return high << 16 | low
    }

    /// Four bytes as ASCII letters (a chunk's type), or `nil` when they are not letters or spaces.
    func ascii4(at offset: Int) -> String? {
        guard offset >= 0, offset <= buffer.count - 4 else { return nil }
        var text = ""
        for index in offset..<offset + 4 {
            let byte = buffer[index]
            guard (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || byte == 0x20 || (0x30...0x39).contains(byte) else {
                return nil
            }
            text.unicodeScalars.append(Unicode.Scalar(byte))
        }
        return text
    }

    /// Whether the big-endian CRC-32 after `count` bytes from `offset` is theirs (PNG's chunks).
    func crcMatches(from offset: Int, count: Int) -> Bool {
        guard offset >= 0, count >= 0, offset + count <= buffer.count - 4, let stored = bigEndian32(at: offset + count) else {
            return false
        }
        var crc: UInt32 = 0xFFFF_FFFF
        for index in offset..<offset + count {
            crc = Self.crcTable[Int((crc ^ UInt32(buffer[index])) & 0xFF)] ^ (crc >> 8)
        }
        return Int(crc ^ 0xFFFF_FFFF) == stored
    }

    /// CRC-32 (the polynomial of PNG and zlib) for each byte value.
    private static let crcTable: [UInt32] = (0..<256).map { value in
        var crc = UInt32(value)
        for _ in 0..<8 { crc = crc & 1 == 1 ? 0xEDB8_8320 ^ (crc >> 1) : crc >> 1 }
        return crc
    }
}
