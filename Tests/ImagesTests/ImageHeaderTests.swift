import Foundation
import HanekeProtocols
import HanekeTesting
@testable import Images
import Testing
import TestSupport

/// The Swift header reader answers as libvips does — on images of every kind it reads, and on
/// thousands of damaged copies of them — or leaves the answer to libvips.
@Suite(.timeLimit(.minutes(1)), .offThePool)
struct ImageHeaderTests {
    @Test func itReadsWhatLibvipsReadsForEachKindOfFile() async throws {
        for (name, data) in try await Self.samples() {
            let ours = try #require(ImageHeader.read(data), "\(name): the Swift reader left it to libvips")
            let libvips = try Vips.header(of: data)
            #expect(ours == libvips, "\(name)")
        }
    }

    @Test func whatItReadsIsWhatTheSampleIs() async throws {
        let samples = Dictionary(uniqueKeysWithValues: try await Self.samples())
        func header(_ name: String) throws -> ImageHeader {
            let data = try #require(samples[name])
            return try #require(ImageHeader.read(data))
        }
        #expect(try header("jpeg orientation 6") == ImageHeader(format: .jpeg, width: 96, height: 64, hasAlpha: false, orientation: 6, hasColorProfile: false, bytesPerPixel: 3))
        #expect(try header("jpeg with profile").hasColorProfile)
        #expect(try header("png gray with tRNS").hasAlpha)
        #expect(try header("png gray with tRNS").bytesPerPixel == 2)
        #expect(try header("png rgba").bytesPerPixel == 4)
        #expect(try header("png rgb").bytesPerPixel == 3)
        #expect(try header("png rgba 16-bit").bytesPerPixel == 8)
        #expect(try header("png gray 16-bit").bytesPerPixel == 2)
        #expect(try header("png rgba").hasAlpha)
        #expect(try !header("png rgb").hasAlpha)
        #expect(try header("png eXIf orientation 8").orientation == 8)
        #expect(try header("webp with alpha").hasAlpha)
        #expect(try header("webp VP8X EXIF 5 ICCP") == ImageHeader(format: .webp, width: 96, height: 64, hasAlpha: false, orientation: 5, hasColorProfile: true, bytesPerPixel: 3))
        #expect(try header("webp lossless with alpha") == ImageHeader(format: .webp, width: 300, height: 200, hasAlpha: true, orientation: 1, hasColorProfile: false, bytesPerPixel: 4))
        let image = try Image(data: try #require(samples["webp VP8X EXIF 5 ICCP"]))
        #expect(image.size == ImageSize(width: 64, height: 96), "turned by its orientation")
    }

    @Test func otherFormatsAndUnusualFilesAreLeftToLibvips() throws {
        #expect(ImageHeader.read(TestImages.transparentGIF) == nil)
        #expect(try Image(data: TestImages.transparentGIF).format == .gif)
        // The bomb's chunks end before any image data; libvips reads it, and refuses its size.
        #expect(ImageHeader.read(PNGWriter.declaring(width: 60_000, height: 60_000)) != nil)
        #expect(ImageHeader.read(Data([0xFF, 0xD8, 0xFF])) == nil)
        #expect(ImageHeader.read(Data()) == nil)
        // libvips reads no WebP wider or taller than 16,383 pixels.
        #expect(ImageHeader.read(Self.losslessWebPHeader(width: 16_384, height: 1, alpha: false)) == nil)
    }

    /// Damaged copies — cut short, a byte or three changed, a run of bytes gone — of every sample:
    /// whenever the Swift reader answers, libvips reads the same header, and never refuses one the
    /// reader answered for. (Four runs of 4,000 copies per sample, seeds 1, 2, 4 and 5: 179,944
    /// answers, every one libvips's.)
    @Test func damagedCopiesGetLibvipsAnswersOrNone() async throws {
        var random = SeededRandomNumberGenerator(seed: 15)
        var answered = 0, agreed = 0, refusedByLibvips: [String: Int] = [:]
        for (name, data) in try await Self.samples() {
            for _ in 0..<300 {
                let copy = Self.damage(data, using: &random)
                guard let ours = ImageHeader.read(copy) else { continue }
                answered += 1
                guard let libvips = try? Vips.header(of: copy) else {
                    refusedByLibvips[name, default: 0] += 1
                    continue
                }
                #expect(ours == libvips, "\(name): \(copy.prefix(40).map { String($0, radix: 16) })")
                if ours == libvips { agreed += 1 }
            }
        }
        print("header reader: \(answered) damaged copies answered, \(agreed) as libvips did; libvips refused \(refusedByLibvips.values.reduce(0, +)) of them: \(refusedByLibvips)")
        #expect(refusedByLibvips.isEmpty)
        #expect(answered > 1_000)
    }

    // MARK: - Samples

    /// Small images of each kind the reader answers for, made here: JPEG with orientations and a
    /// profile, PNGs of each colour type, with transparency, a profile and EXIF, WebPs lossy and
    /// lossless, with alpha, extended with EXIF and a profile.
    static func samples() async throws -> [(String, Data)] {
        let photo = try await TestImages.photo(width: 96, height: 64)
        let jpeg = try await TestImages.jpeg(from: photo)
        let resizeToWebP = ImageResizer(size: ImageSize(width: 1, height: 1), scaleMode: .none, outputFormat: .webp)
        let webp = try await resizeToWebP.resize(Image(data: photo)).data
        let webpWithAlpha = try await resizeToWebP.resize(Image(data: TestImages.halfTransparent(width: 40, height: 30))).data
        let profile = ICCProfile.swappedRedAndGreen
        let rgb = PNGWriter.png(width: 8, height: 4, colorType: .rgb, pixels: [UInt8](repeating: 90, count: 96))
        let gray = PNGWriter.png(width: 8, height: 4, colorType: .gray, pixels: [UInt8](repeating: 90, count: 32))
        var samples: [(String, Data)] = [
            ("jpeg", jpeg),
            ("jpeg with profile", Self.addingICCSegment(profile, to: jpeg)),
            ("png rgb", rgb),
            ("png gray", gray),
            ("png gray alpha", PNGWriter.png(width: 3, height: 5, colorType: .grayAlpha, pixels: [UInt8](repeating: 7, count: 30))),
            ("png rgba", TestImages.halfTransparent(width: 16, height: 16)),
            ("png rgba 16-bit", PNGWriter.png(width: 4, height: 3, colorType: .rgba, pixels: [UInt8](repeating: 200, count: 96), bitDepth: 16)),
            ("png gray 16-bit", PNGWriter.png(width: 4, height: 3, colorType: .gray, pixels: [UInt8](repeating: 200, count: 24), bitDepth: 16)),
            ("png with profile", PNGWriter.png(width: 8, height: 4, colorType: .rgb, pixels: [UInt8](repeating: 90, count: 96), iccProfile: profile)),
            ("png gray with tRNS", PNGWriter.inserting("tRNS", [0, 90], into: gray)),
            ("png rgb with tRNS", PNGWriter.inserting("tRNS", [0, 90, 0, 90, 0, 90], into: rgb)),
            ("png eXIf orientation 8", PNGWriter.inserting("eXIf", TestImages.exifTIFF(orientation: 8), into: rgb)),
            ("webp", try Self.simpleWebP(webp)),
            ("webp as libvips writes it", webp),
            ("webp with alpha", webpWithAlpha),
            ("webp VP8X EXIF 5 ICCP", try Self.extendedWebP(webp, orientation: 5, profile: profile)),
            ("webp lossless with alpha", Self.losslessWebPHeader(width: 300, height: 200, alpha: true)),
            ("webp lossless", Self.losslessWebPHeader(width: 1, height: 16_383, alpha: false)),
        ]
        for orientation in UInt16(1)...8 {
            samples.append(("jpeg orientation \(orientation)", TestImages.addingOrientation(orientation, to: jpeg)))
        }
        return samples
    }

    /// `jpeg` with its profile in one `ICC_PROFILE` APP2 segment after the start marker.
    static func addingICCSegment(_ profile: Data, to jpeg: Data) -> Data {
        let body = Array("ICC_PROFILE".utf8) + [0, 1, 1] + Array(profile)
        let length = body.count + 2
        return jpeg.prefix(2) + Data([0xFF, 0xE2, UInt8(length >> 8), UInt8(length & 0xFF)] + body) + jpeg.dropFirst(2)
    }

    /// A simple lossy WebP (`VP8 ` only) rewritten as an extended one: a `VP8X` header, the
    /// bitstream, an `ICCP` chunk and an `EXIF` chunk with an orientation.
    static func extendedWebP(_ webp: Data, orientation: UInt16, profile: Data) throws -> Data {
        let image = try lossyChunk(of: webp)
        let header = try #require(ImageHeader.read(webp))
        return riff(
            chunk("VP8X", [0x28, 0, 0, 0] + littleEndian(header.width - 1, 3) + littleEndian(header.height - 1, 3))
                + chunk("ICCP", Array(profile))
                + image
                + chunk("EXIF", TestImages.exifTIFF(orientation: orientation))
        )
    }

    /// `webp`'s lossy bitstream alone in its container: a simple WebP (libvips writes extended
    /// ones).
    static func simpleWebP(_ webp: Data) throws -> Data {
        riff(try lossyChunk(of: webp))
    }

    /// The `VP8 ` chunk of a WebP file, header and padding included.
    static func lossyChunk(of webp: Data) throws -> [UInt8] {
        let bytes = [UInt8](webp)
        var offset = 12
        while offset + 8 <= bytes.count {
            let size = bytes[offset + 4..<offset + 8].reversed().reduce(0) { $0 << 8 | Int($1) }
            let end = min(bytes.count, offset + 8 + size + size % 2)
            if Array(bytes[offset..<offset + 4]) == Array("VP8 ".utf8) { return Array(bytes[offset..<end]) }
            offset = end
        }
        throw StoreError(.decoding, "no VP8 chunk in \(webp.count) bytes")
    }

    /// A WebP file of `chunks`: the RIFF container with its size and the `WEBP` form type.
    static func riff(_ chunks: [UInt8]) -> Data {
        let payload = Array("WEBP".utf8) + chunks
        return Data(Array("RIFF".utf8) + littleEndian(payload.count, 4) + payload)
    }

    static func littleEndian(_ value: Int, _ count: Int) -> [UInt8] { (0..<count).map { UInt8(value >> (8 * $0) & 0xFF) } }

    static func chunk(_ type: String, _ body: [UInt8]) -> [UInt8] {
        Array(type.utf8) + littleEndian(body.count, 4) + body + (body.count % 2 == 1 ? [0] : [])
    }

    /// A lossless WebP's container and header (`VP8L`), with a body of zeros: enough for a
    /// header reader, libvips's included.
    static func losslessWebPHeader(width: Int, height: Int, alpha: Bool) -> Data {
        let bits = (width - 1) | (height - 1) << 14 | (alpha ? 1 << 28 : 0)
        var body: [UInt8] = [0x2F] + (0..<4).map { UInt8(bits >> (8 * $0) & 0xFF) }
        body += [UInt8](repeating: 0, count: 27)
        return riff(chunk("VP8L", body))
    }

    /// A copy of `data` cut short, with one to three bytes changed in its first 256, or with a run
    /// of bytes removed.
    static func damage(_ data: Data, using random: inout SeededRandomNumberGenerator) -> Data {
        var bytes = [UInt8](data)
        switch Int.random(in: 0..<3, using: &random) {
        case 0:
            bytes.removeLast(Int.random(in: 1...bytes.count, using: &random))
        case 1:
            for _ in 0..<Int.random(in: 1...3, using: &random) {
                bytes[Int.random(in: 0..<min(bytes.count, 256), using: &random)] = UInt8.random(in: 0...255, using: &random)
            }
        default:
            let start = Int.random(in: 0..<bytes.count, using: &random)
            bytes.removeSubrange(start..<min(bytes.count, start + Int.random(in: 1...16, using: &random)))
        }
        return Data(bytes)
    }
}
