import Foundation
import Haneke
import HanekeProtocols
import Logging
@testable import Images
import Synchronization
import Testing
import TestSupport

/// Resizing real images with libvips: sizes and crops, orientation, alpha, colour, quality, damaged
/// input, the hooks, and the resizer as a format's transform.
@Suite(.timeLimit(.minutes(1)), .offThePool)
struct ImageResizerTests {
    /// The pixel at (x, y) of an encoded image: its bands, 0 to 255.
    private func pixel(_ image: Image, _ x: Int, _ y: Int) throws -> [Double] {
        try Vips.pixel(of: image.data, x: x, y: y)
    }

    private func expectColor(_ values: [Double], _ color: TestImages.Color, tolerance: Double = 12, sourceLocation: SourceLocation = #_sourceLocation) {
        let expected = [Double(color.red), Double(color.green), Double(color.blue)]
        let close = values.count >= 3 && zip(values.prefix(3), expected).allSatisfy { abs($0 - $1) <= tolerance }
        #expect(close, "\(values) is not \(expected)", sourceLocation: sourceLocation)
    }

    // MARK: - Sizes

    @Test(arguments: ScaleCase.table)
    func eachScaleModeGivesItsSize(_ row: ScaleCase) async throws {
        let input = try Image(data: TestImages.solid(width: row.input.width, height: row.input.height, TestImages.blue))
        let resizer = ImageResizer(size: row.target, scaleMode: row.mode, allowUpscaling: row.allowUpscaling, outputFormat: .jpeg)
        let output = try await resizer.resize(input)
        #expect(output.size == row.expected)
        // What libvips wrote says the same.
        #expect(try Image(data: output.data).size == row.expected)
    }

    @Test func aspectFillKeepsTheCentre() async throws {
        let resizer = ImageResizer(size: .init(width: 100, height: 100), scaleMode: .aspectFill, outputFormat: .png)
        // A landscape image red | green | blue, covered at 300×100 then cut: green from edge to edge.
        let landscape = try await resizer.resize(Image(data: TestImages.bands(width: 600, height: 200, TestImages.red, TestImages.green, TestImages.blue)))
        #expect(landscape.size == ImageSize(width: 100, height: 100))
        for x in [0, 50, 99] { expectColor(try pixel(landscape, x, 50), TestImages.green) }
        // A portrait one, in bands down it.
        let portrait = try await resizer.resize(Image(data: TestImages.bands(width: 200, height: 600, TestImages.red, TestImages.green, TestImages.blue)))
        for y in [0, 50, 99] { expectColor(try pixel(portrait, 50, y), TestImages.green) }
        // Fill squeezes all three bands in instead.
        var fill = resizer
        fill.scaleMode = .fill
        let squeezed = try await fill.resize(Image(data: TestImages.bands(width: 600, height: 200, TestImages.red, TestImages.green, TestImages.blue)))
        expectColor(try pixel(squeezed, 2, 50), TestImages.red)
        expectColor(try pixel(squeezed, 97, 50), TestImages.blue)
    }

    // MARK: - Orientation, alpha, colour

    /// A camera's landscape-stored JPEG marked "turn a quarter clockwise" (EXIF orientation 6)
    /// comes out portrait, its pixels upright, with no orientation left to apply.
    @Test func theExifOrientationIsApplied() async throws {
        let stored = try await TestImages.jpeg(from: TestImages.bands(width: 300, height: 200, TestImages.red, TestImages.green, TestImages.blue))
        let turned = try Image(data: TestImages.addingOrientation(6, to: stored))

        let upright = try await ImageResizer(size: .init(width: 1, height: 1), scaleMode: .none).resize(turned)
        #expect(upright.size == ImageSize(width: 200, height: 300))
        let reread = try Image(data: upright.data)
        #expect(reread.orientation == 1)
        #expect(reread.size == ImageSize(width: 200, height: 300))
        #expect(upright.data.firstRange(of: Data("Exif".utf8)) == nil)
        // What was on the left is now on top.
        expectColor(try pixel(upright, 100, 10), TestImages.red, tolerance: 20)
        expectColor(try pixel(upright, 100, 150), TestImages.green, tolerance: 20)
        expectColor(try pixel(upright, 100, 290), TestImages.blue, tolerance: 20)

        // Sizes are worked out on the image as shown: fitted into 100×100 it is 67×100.
        let fitted = try await ImageResizer(size: .init(width: 100, height: 100)).resize(turned)
        #expect(fitted.size == ImageSize(width: 67, height: 100))
    }

    @Test func alphaSurvivesInPNGAndWebP() async throws {
        let input = try Image(data: TestImages.halfTransparent(width: 64, height: 32))
        for format in [ImageFormat.png, .webp] {
            let output = try await ImageResizer(size: .init(width: 32, height: 16), outputFormat: format).resize(input)
            #expect(output.format == format)
            #expect(output.hasAlpha)
            #expect(try Image(data: output.data).hasAlpha)
            let opaque = try pixel(output, 4, 8), clear = try pixel(output, 28, 8)
            #expect(opaque.count == 4 && clear.count == 4)
            expectColor(opaque, TestImages.red)
            #expect(opaque[3] > 250, "\(format) opaque alpha \(opaque)")
            #expect(clear[3] < 5, "\(format) transparent alpha \(clear)")
        }
    }

    @Test func jpegHasNoAlphaAndTransparencyBecomesWhite() async throws {
        let output = try await ImageResizer(size: .init(width: 32, height: 16), outputFormat: .jpeg)
            .resize(Image(data: TestImages.halfTransparent(width: 64, height: 32)))
        #expect(output.format == .jpeg)
        #expect(!output.hasAlpha)
        #expect(try !Image(data: output.data).hasAlpha)
        #expect(try pixel(output, 28, 8).count == 3)
        expectColor(try pixel(output, 28, 8), (255, 255, 255))
        expectColor(try pixel(output, 4, 8), TestImages.red)
    }

    @Test func theOutputKeepsTheInputsFormatOrElsePNGForAlphaAndJPEGWithout() async throws {
        let resizer = ImageResizer(size: .init(width: 8, height: 8))
        let jpeg = try await TestImages.jpeg(from: await TestImages.photo(width: 40, height: 30))
        #expect(try await resizer.resize(Image(data: jpeg)).format == .jpeg)
        #expect(try await resizer.resize(Image(data: TestImages.solid(width: 4, height: 4, TestImages.red))).format == .png)
        // A GIF (not written here) with a transparent pixel becomes a PNG.
        let gif = try await resizer.resize(Image(data: TestImages.transparentGIF))
        #expect(gif.format == .png)
        #expect(gif.hasAlpha)
    }

    /// A PNG whose embedded profile swaps red and green: its red pixels are green in sRGB, and the
    /// output carries no profile.
    @Test func anEmbeddedColorProfileIsConvertedToSRGB() async throws {
        let red = TestImages.solid(width: 8, height: 8, TestImages.red)
        let tagged = PNGWriter.png(
            width: 8, height: 8, colorType: .rgb,
            pixels: Array(repeating: [255, 0, 0] as [UInt8], count: 64).flatMap { $0 },
            iccProfile: ICCProfile.swappedRedAndGreen
        )
        let input = try Image(data: tagged)
        #expect(input.hasColorProfile)

        let resizer = ImageResizer(size: .init(width: 4, height: 4), scaleMode: .none)
        let converted = try await resizer.resize(input)
        expectColor(try pixel(converted, 2, 2), TestImages.green, tolerance: 30)
        #expect(try !Image(data: converted.data).hasColorProfile)
        // Without the profile, red stays red.
        expectColor(try pixel(try await resizer.resize(Image(data: red)), 2, 2), TestImages.red)
    }

    @Test func higherJPEGQualityMeansMoreBytes() async throws {
        let photo = try await Image(data: TestImages.photo(width: 480, height: 360, seed: 7))
        var sizes: [Int] = []
        for quality in [0.3, 0.6, 0.9] {
            let resizer = ImageResizer(size: .init(width: 1, height: 1), scaleMode: .none, outputFormat: .jpeg, compressionQuality: quality)
            sizes.append(try await resizer.resize(photo).data.count)
        }
        #expect(sizes[0] < sizes[1] && sizes[1] < sizes[2], "\(sizes)")
    }

    // MARK: - Refused input and settings

    /// A JPEG cut in half still has its header, so it reads as an image; resizing it needs its
    /// pixels, and stops with a decoding error instead of a half-grey thumbnail.
    @Test func aTruncatedJPEGIsADecodingError() async throws {
        let jpeg = try await TestImages.jpeg(from: await TestImages.photo(width: 320, height: 240))
        let truncated = try Image(data: jpeg.prefix(jpeg.count / 2))
        #expect(truncated.size == ImageSize(width: 320, height: 240))
        let capture = LogCapture()
        let previous = Vips.logger.withLock { logger in
            defer { logger = capture.logger }
            return logger
        }
        defer { Vips.logger.withLock { $0 = previous } }
        let error = try await #require(throws: StoreError.self) {
            try await ImageResizer(size: .init(width: 64, height: 64)).resize(truncated)
        }
        // libvips's warnings on the way went to the logger, at debug level, not to standard error.
        let warnings = capture.entries.filter { $0.message.hasPrefix("libvips: ") }
        #expect(!warnings.isEmpty)
        #expect(warnings.allSatisfy { $0.level == .debug })
        #expect(error.code == .decoding)
        #expect(error.message.contains("Could not resize the \(jpeg.count / 2)-byte jpeg image (320×240) to a 64×48 jpeg"))
        #expect("\(error)".contains("(cause: libvips: "))
    }

    @Test func settingsThatCannotBeMetAreEncodingErrors() throws {
        let image = try Image(data: TestImages.solid(width: 20, height: 10, TestImages.red))
        let cases: [(ImageResizer, String)] = [
            (ImageResizer(size: .init(width: 0, height: 96)), "each side must be 1 to 10000000 pixels"),
            (ImageResizer(size: .init(width: 10, height: 10), outputFormat: .gif), "it writes jpeg, png and webp"),
            (ImageResizer(size: .init(width: 10, height: 10), compressionQuality: .nan), "must be a number from 0 to 1"),
            (ImageResizer(size: .init(width: 20_000, height: 20_000), scaleMode: .fill, pixelLimit: 1_000_000), "more than the limit of 1000000"),
            (ImageResizer(size: .init(width: 20_000, height: 100), scaleMode: .fill, outputFormat: .webp), "at most 16383 pixels a side"),
        ]
        for (resizer, reason) in cases {
            let error = try #require(throws: StoreError.self) { try resizer.resize(image) }
            #expect(error.code == .encoding)
            #expect(error.message.contains(reason), "\(error)")
        }
    }

    // MARK: - Hooks and formats

    @Test func theHooksRunBeforeAndAfterTheResize() async throws {
        let seen = Mutex<[String]>([])
        let replacement = try Image(data: TestImages.solid(width: 200, height: 100, TestImages.green))
        let resizer = ImageResizer(
            size: .init(width: 50, height: 50),
            preResize: { original in
                seen.withLock { $0.append("pre \(original.size)") }
                return replacement   // what is resized
            },
            postResize: { resized in
                seen.withLock { $0.append("post \(resized.size)") }
                return resized
            }
        )
        let output = try await resizer.resize(Image(data: TestImages.solid(width: 30, height: 30, TestImages.red)))
        #expect(seen.withLock { $0 } == ["pre 30×30", "post 50×25"])
        #expect(output.size == ImageSize(width: 50, height: 25))

        struct Rejected: Error {}
        var rejecting = resizer
        rejecting.postResize = { _ in throw Rejected() }
        await #expect(throws: Rejected.self) { try await rejecting.resize(replacement) }
    }

    @Test func aResizerIsAFormatsTransform() async throws {
        let avatar = Format<Image>(
            name: "avatar-96",
            transform: ImageResizer(size: ImageSize(width: 96, height: 96), scaleMode: .aspectFill).transform
        )
        let original = try await Image(data: TestImages.photo(width: 320, height: 200))
        let transformed = try #require(try avatar.transform?(original))
        #expect(transformed.size == ImageSize(width: 96, height: 96))
        #expect(transformed.format == .png)
    }
}
