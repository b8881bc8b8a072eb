import Foundation
import HanekeProtocols
import HanekeTesting
@testable import Images
import MemoryStore
import Testing
import TestSupport

/// Reading images from their headers: what an `Image` says without decoding, what it refuses and
/// how, and images in stores.
@Suite(.timeLimit(.minutes(1)), .offThePool)
struct ImageTests {
    @Test func theHeaderGivesFormatSizeAndAlpha() throws {
        let png = try Image(data: TestImages.halfTransparent(width: 64, height: 32))
        #expect(png.format == .png)
        #expect(png.size == ImageSize(width: 64, height: 32))
        #expect(png.hasAlpha)
        #expect(png.orientation == 1)
        #expect(png.description == "png 64×32, \(png.data.count) bytes")

        let rgb = try Image(data: TestImages.solid(width: 5, height: 7, TestImages.blue))
        #expect(!rgb.hasAlpha)
        #expect(rgb.width == 5 && rgb.height == 7)
    }

    @Test func otherFormatsAreNamedAfterTheirLoader() throws {
        let gif = try Image(data: TestImages.transparentGIF)
        #expect(gif.format == .gif)
        #expect(gif.format.name == "gif")
        #expect(gif.size == ImageSize(width: 1, height: 1))
        #expect(gif.hasAlpha)
        #expect(ImageFormat(loader: "jpegload_buffer") == .jpeg)
        #expect(ImageFormat(loader: "heifload_source") == .heif)
        #expect(ImageFormat(loader: "") == ImageFormat("unknown"))
    }

    @Test func theSizeIsAsShownAfterTheExifOrientation() async throws {
        let stored = try await TestImages.jpeg(from: TestImages.solid(width: 60, height: 40, TestImages.red))
        let turned = try Image(data: TestImages.addingOrientation(6, to: stored))
        #expect(turned.orientation == 6)
        #expect(turned.size == ImageSize(width: 40, height: 60))
        #expect(try Image(data: stored).size == ImageSize(width: 60, height: 40))
    }

    // MARK: - Refused input

    @Test func bytesThatAreNotAnImageAreADecodingError() throws {
        let error = try #require(throws: StoreError.self) { try Image(data: Data("hello, not an image".utf8)) }
        #expect(error.code == .decoding)
        #expect(error.message.contains("19-byte image that starts with 68 65 6C 6C 6F 2C 20 6E"))
        #expect("\(error)".contains("libvips: VipsForeignLoad: buffer is not in a known format"))

        let empty = try #require(throws: StoreError.self) { try Image(data: Data()) }
        #expect(empty.code == .decoding)
    }

    /// SVG goes through librsvg, which libvips marks as untrusted: the loader is blocked.
    @Test func formatsLibvipsDoesNotTrustAreRefused() throws {
        let svg = Data(#"<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>"#.utf8)
        let error = try #require(throws: StoreError.self) { try Image(data: svg) }
        #expect(error.code == .decoding)
        #expect("\(error)".contains("libvips: svgload_buffer: operation is blocked"))
    }

    @Test func aJPEGCutInItsHeaderIsADecodingError() async throws {
        let jpeg = try await TestImages.jpeg(from: await TestImages.photo(width: 160, height: 120))
        let error = try #require(throws: StoreError.self) { try Image(data: jpeg.prefix(200)) }
        #expect(error.code == .decoding)
        #expect(error.message.contains("200-byte image"))
    }

    /// A 60,000 × 60,000 PNG would take 10.8 GB to decode. Its header is refused; with no limit the
    /// header is still read — in microseconds, with nothing allocated for the pixels — which is the
    /// proof that reading an image never decodes it.
    @Test func aDecompressionBombIsRefusedFromItsHeader() throws {
        let bomb = PNGWriter.declaring(width: 60_000, height: 60_000)
        #expect(bomb.count < 4_000)
        let error = try #require(throws: StoreError.self) { try Image(data: bomb) }
        #expect(error.code == .decoding)
        #expect(error.message.contains("declares 60000×60000 pixels (3600000000), more than the limit of 100000000; no pixel was decoded"))

        let unlimited = try Image(data: bomb, pixelLimit: nil)
        #expect(unlimited.size == ImageSize(width: 60_000, height: 60_000))
        let refused = try #require(throws: StoreError.self) { try ImageResizer(size: .init(width: 256, height: 256)).resize(unlimited) }
        #expect(refused.code == .decoding)
        #expect(refused.message.contains("Refused to resize the \(bomb.count)-byte png image (60000×60000)"))
    }

    /// Refusing a bomb or a truncated photo costs little memory: the process's peak grows by far
    /// less than decoding would take (10.8 GB for the bomb). With no limit anywhere, libvips reads
    /// the bomb's PNG a few rows at a time and stops where its data ends.
    @Test func refusalsTakeBoundedMemory() async throws {
        let bomb = PNGWriter.declaring(width: 60_000, height: 60_000)
        let photo = try await TestImages.jpeg(from: await TestImages.photo(width: 1_600, height: 1_200))
        let truncated = try Image(data: photo.prefix(photo.count / 2))
        let unlimited = try Image(data: bomb, pixelLimit: nil)
        let before = peakMemory()
        #expect(throws: StoreError.self) { try Image(data: bomb) }
        await #expect(throws: StoreError.self) { try await ImageResizer(size: .init(width: 256, height: 256)).resize(unlimited) }
        await #expect(throws: StoreError.self) {
            try await ImageResizer(size: .init(width: 256, height: 256), pixelLimit: nil).resize(unlimited)
        }
        await #expect(throws: StoreError.self) { try await ImageResizer(size: .init(width: 256, height: 256)).resize(truncated) }
        // The margin leaves room for the tests running beside this one (the peak is the process's).
        let growth = peakMemory() - before
        #expect(growth < 256 << 20, "the peak memory grew by \(growth) bytes")
        print("images: refusing a 60,000×60,000 PNG (with and without a pixel limit) and a truncated 1600×1200 JPEG grew the process's peak memory by \(growth >> 20) MiB")
    }

    /// The limit counts what decoding takes, not only pixels: a 100-megapixel 16-bit PNG with
    /// alpha (8 bytes a pixel, 800 MB decoded) passes the default 100 megapixels, as does one of
    /// 8-bit RGBA (400 MB); one of 8-bit RGB (300 MB) and one of 8-bit grey do not. Before, all four
    /// were accepted, exactly at the limit — and eight 16-bit ones resizing at once took 1.17 GB.
    @Test func thePixelLimitCountsBytesPerPixel() throws {
        let side = 10_000
        let sixteenBit = PNGWriter.declaring(width: side, height: side, colorType: .rgba, bitDepth: 16)
        let error = try #require(throws: StoreError.self) { try Image(data: sixteenBit) }
        #expect(error.code == .decoding)
        #expect(error.message.contains(
            "declares 10000×10000 pixels (100000000) of 8 bytes each, 800000000 bytes decoded: more than the limit of 100000000 pixels of 3 bytes (300000000 bytes); no pixel was decoded"
        ), "\(error.message)")
        #expect(throws: StoreError.self) { try Image(data: PNGWriter.declaring(width: side, height: side, colorType: .rgba)) }
        #expect(try Image(data: PNGWriter.declaring(width: side, height: side)).size == ImageSize(width: side, height: side))
        #expect(try Image(data: PNGWriter.declaring(width: side, height: side, colorType: .gray)).size == ImageSize(width: side, height: side))
        // A limit of 3/8 the pixels lets the 16-bit one through: its bytes are what counts.
        #expect(try Image(data: sixteenBit, pixelLimit: 100_000_000 * 8 / 3 + 1).size == ImageSize(width: side, height: side))
        // And the resizer counts the same way.
        let unlimited = try Image(data: sixteenBit, pixelLimit: nil)
        let refused = try #require(throws: StoreError.self) { try ImageResizer(size: .init(width: 64, height: 64)).resize(unlimited) }
        #expect(refused.message.contains("of 8 bytes each"), "\(refused.message)")
    }

    /// A resize that takes longer than its time limit is stopped, with a clear error: a limit
    /// shorter than opening the image is caught before the pixels are computed, and a longer one
    /// kills the image being decoded, which stops libvips at its next strip. Before, no resize had
    /// a limit: sixteen hostile PNGs held the executor's threads for as long as they took. Neither
    /// case depends on the watch thread being scheduled in time: under a CPU hog it may not run
    /// before the resize ends, and the resizing thread reads the clock itself.
    @Test(arguments: [Duration.nanoseconds(1), .milliseconds(5)])
    func aResizePastItsTimeLimitIsStopped(limit: Duration) async throws {
        let side = 3_000
        let png = PNGWriter.png(width: side, height: side, colorType: .rgb, pixels: [UInt8](repeating: 120, count: side * side * 3))
        let image = try Image(data: png)
        let resizer = ImageResizer(size: .init(width: 64, height: 64), timeLimit: limit)
        let error = try #require(await #expect(throws: StoreError.self) { try await resizer.resize(image) })
        #expect(error.code == .timeout)
        #expect(error.message.contains("took longer than its timeLimit of \(limit)"), "\(error.message)")
        #expect(ImageResizer(size: .init(width: 64, height: 64)).timeLimit == .seconds(10))
        // Without the limit the same resize completes.
        let unlimited = ImageResizer(size: .init(width: 64, height: 64), timeLimit: nil)
        #expect(try await unlimited.resize(image).size == ImageSize(width: 64, height: 64))
    }

    @Test func thePixelLimitIsYours() throws {
        let png = TestImages.solid(width: 40, height: 30, TestImages.green)
        #expect(throws: StoreError.self) { try Image(data: png, pixelLimit: 1_000) }
        #expect(try Image(data: png, pixelLimit: 1_200).size == ImageSize(width: 40, height: 30))
        #expect(throws: StoreError.self) { try ImageCodec(pixelLimit: 1_000).decode(png) }
        #expect(Image.defaultPixelLimit == 100_000_000)
    }

    // MARK: - Stores

    @Test func anImageRoundTripsThroughItsBytes() throws {
        let image = try Image(data: TestImages.halfTransparent(width: 8, height: 4))
        let copy = try Image.convertFromData(image.asData())
        #expect(copy == image)
        #expect(copy.hashValue == image.hashValue)
        #expect(try ImageCodec().decode(ImageCodec().encode(image)) == image)
        #expect(image.cacheCost == image.data.count + 64)
    }

    @Test func aCodedStoreOfImagesConforms() async throws {
        try await StoreConformanceSuite(
            makeKey: ConformanceSamples.key,
            makeValue: TestImages.tinyImage,
            makeStore: { MemoryStore<String, Data>().coded(as: Image.self) }
        ).run()
    }

    @Test func aStoreCodedWithAnImageCodecConforms() async throws {
        try await StoreConformanceSuite(
            makeKey: ConformanceSamples.key,
            makeValue: TestImages.tinyImage,
            makeStore: { MemoryStore<String, Data>().coded(with: ImageCodec(pixelLimit: 1)) }
        ).run()
    }

    @Test func aStoredImageThatIsNotOneIsADecodingErrorNamingTheKey() async throws {
        let bytes = MemoryStore<String, Data>()
        bytes.setValue(PNGWriter.declaring(width: 60_000, height: 60_000), forKey: "bomb")
        let error = try await #require(throws: StoreError.self) { try await bytes.coded(as: Image.self).value(forKey: "bomb") }
        #expect(error.code == .decoding)
        #expect(error.message.contains("bomb"))
    }
}

extension TestImages {
    /// The conformance suite's value for an index: a 1×1 image of its own colour.
    @Sendable static func tinyImage(_ index: Int) -> Image {
        do {
            return try Image(data: tiny(index))
        } catch {
            fatalError("the test image \(index) did not read: \(error)")
        }
    }
}
