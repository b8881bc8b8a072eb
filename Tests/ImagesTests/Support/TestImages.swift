import Foundation
import TestSupport
import HanekeTesting
import Images

/// The images the tests use, made here: no image file is committed.
enum TestImages {
    typealias Color = (red: UInt8, green: UInt8, blue: UInt8)

    static let red: Color = (255, 0, 0)
    static let green: Color = (0, 255, 0)
    static let blue: Color = (0, 0, 255)

    /// A PNG of one colour.
    static func solid(width: Int, height: Int, _ color: Color) -> Data {
        PNGWriter.png(width: width, height: height, colorType: .rgb, pixels: pixels(width: width, height: height) { _, _ in color })
    }

    /// A PNG cut in three bands — across for a landscape image, down for a portrait one — the
    /// middle one wider (`middle` of the length), so that a centre crop falls inside it.
    static func bands(width: Int, height: Int, _ first: Color, _ middle: Color, _ last: Color, middleShare: Double = 0.6) -> Data {
        let across = width >= height
        let length = across ? width : height
        let middleStart = Int(Double(length) * (1 - middleShare) / 2)
        let middleEnd = length - middleStart
        return PNGWriter.png(width: width, height: height, colorType: .rgb, pixels: pixels(width: width, height: height) { x, y in
            let position = across ? x : y
            return position < middleStart ? first : position < middleEnd ? middle : last
        })
    }

    /// A photo-like RGB PNG: smooth gradients, soft discs and a little seeded noise, so that JPEG
    /// quality has detail to spend bytes on.
    ///
    /// Made on a thread of its own: a 640×480 photo costs 0.3 s of CPU in a debug build, which on a
    /// cooperative thread would hold back every other test's jobs.
    static func photo(width: Int, height: Int, seed: UInt64 = 1) async throws -> Data {
        try await offThePool { paintPhoto(width: width, height: height, seed: seed) }
    }

    private static func paintPhoto(width: Int, height: Int, seed: UInt64) -> Data {
        var random = SeededRandomNumberGenerator(seed: seed)
        let discs = (0..<6).map { _ in
            (x: Double.random(in: 0..<Double(width), using: &random), y: Double.random(in: 0..<Double(height), using: &random),
             radius: Double.random(in: 0.1...0.35, using: &random) * Double(min(width, height)),
             color: (Double.random(in: 0...255, using: &random), Double.random(in: 0...255, using: &random), Double.random(in: 0...255, using: &random)))
        }
        var bytes = [UInt8](repeating: 0, count: width * height * 3)
        for y in 0..<height {
            for x in 0..<width {
                let u = Double(x) / Double(width), v = Double(y) / Double(height)
                var pixel = (200 * u + 30, 160 * v + 40, 120 * (1 - u) * v + 60)
                for disc in discs {
                    let distance = ((Double(x) - disc.x) * (Double(x) - disc.x) + (Double(y) - disc.y) * (Double(y) - disc.y)).squareRoot()
                    let weight = max(0, 1 - distance / disc.radius)
                    pixel.0 += (disc.color.0 - pixel.0) * weight
                    pixel.1 += (disc.color.1 - pixel.1) * weight
                    pixel.2 += (disc.color.2 - pixel.2) * weight
                }
                let noise = Double(Int(random.next() % 25) - 12)
                let offset = (y * width + x) * 3
                bytes[offset] = clamp(pixel.0 + noise)
                bytes[offset + 1] = clamp(pixel.1 + noise)
                bytes[offset + 2] = clamp(pixel.2 + noise)
            }
        }
        return PNGWriter.png(width: width, height: height, colorType: .rgb, pixels: bytes)
    }

    /// An RGBA PNG: opaque red on the left half, fully transparent on the right.
    static func halfTransparent(width: Int, height: Int) -> Data {
        var bytes: [UInt8] = []
        for _ in 0..<height {
            for x in 0..<width {
                bytes += x < width / 2 ? [255, 0, 0, 255] : [0, 0, 0, 0]
            }
        }
        return PNGWriter.png(width: width, height: height, colorType: .rgba, pixels: bytes)
    }

    /// A 1×1 PNG whose colour is `index` (up to 2²⁴ distinct values): the conformance suite's
    /// values.
    static func tiny(_ index: Int) -> Data {
        PNGWriter.png(width: 1, height: 1, colorType: .rgb, pixels: [UInt8(index >> 16 & 0xFF), UInt8(index >> 8 & 0xFF), UInt8(index & 0xFF)])
    }

    /// A JPEG of `png`'s pixels, made by the resizer at its own size.
    static func jpeg(from png: Data, quality: Double = 0.9) async throws -> Data {
        let resizer = ImageResizer(size: ImageSize(width: 1, height: 1), scaleMode: .none, outputFormat: .jpeg, compressionQuality: quality)
        return try await resizer.resize(Image(data: png)).data
    }

    /// `jpeg` with an Exif segment (APP1) right after its start marker, whose only entry is the
    /// orientation: 6 means "turn a quarter clockwise to show".
    static func addingOrientation(_ orientation: UInt16, to jpeg: Data) -> Data {
        precondition(jpeg.starts(with: [0xFF, 0xD8]), "not a JPEG")
        let body = Array("Exif".utf8) + [0, 0] + exifTIFF(orientation: orientation)
        let length = UInt16(body.count + 2)
        let segment: [UInt8] = [0xFF, 0xE1, UInt8(length >> 8), UInt8(length & 0xFF)] + body
        return jpeg.prefix(2) + Data(segment) + jpeg.dropFirst(2)
    }

    /// Exif's TIFF structure with one entry, the orientation, in big-endian byte order.
    static func exifTIFF(orientation: UInt16) -> [UInt8] {
        var tiff: [UInt8] = Array("MM".utf8) + [0x00, 0x2A] + PNGWriter.bigEndian(8)   // big-endian, IFD0 at 8
        tiff += [0x00, 0x01]                                                           // one entry
        tiff += [0x01, 0x12, 0x00, 0x03] + PNGWriter.bigEndian(1)                     // Orientation, SHORT, 1 value
        tiff += [UInt8(orientation >> 8), UInt8(orientation & 0xFF), 0x00, 0x00]
        tiff += PNGWriter.bigEndian(0)                                                  // no next IFD
        return tiff
    }

    /// A 1×1 GIF with one transparent pixel (the classic 43-byte spacer).
    static let transparentGIF = Data([
        0x47, 0x49, 0x46, 0x38, 0x39, 0x61, 0x01, 0x00, 0x01, 0x00, 0x80, 0x00, 0x00, 0xFF, 0xFF, 0xFF,
        0x00, 0x00, 0x00, 0x21, 0xF9, 0x04, 0x01, 0x00, 0x00, 0x00, 0x00, 0x2C, 0x00, 0x00, 0x00, 0x00,
        0x01, 0x00, 0x01, 0x00, 0x00, 0x02, 0x02, 0x44, 0x01, 0x00, 0x3B,
    ])

    private static func pixels(width: Int, height: Int, _ color: (Int, Int) -> Color) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(width * height * 3)
        for y in 0..<height {
            for x in 0..<width {
                let pixel = color(x, y)
                bytes += [pixel.red, pixel.green, pixel.blue]
            }
        }
        return bytes
    }

    private static func clamp(_ value: Double) -> UInt8 {
        UInt8(min(255, max(0, value.rounded())))
    }
}
