public import Foundation
public import HanekeProtocols

/// An encoded image — its bytes, as a file or a response holds them — with what a caller needs to
/// know without decoding it: its format, its size, whether it has alpha.
///
/// Making an `Image` reads the file's header only: no pixel is decoded. JPEG, PNG and WebP headers
/// are read in Swift, in under a microsecond (so a cached image's disk hit costs little more than
/// its file read); other formats, and any header out of the ordinary, through libvips, in tens of
/// microseconds — and the first such read starts libvips if nothing has (50–80 ms, on the calling
/// thread; ``startLibrary()`` at launch avoids that). Only the header is checked: damage further
/// in is found when the image is decoded (``ImageResizer`` throws then). An image whose header declares more pixels than a limit
/// (``defaultPixelLimit``, 100 megapixels, unless you pass another) is refused from that header,
/// before anything is allocated for its pixels, so a decompression bomb — a few bytes that declare
/// 60,000 × 60,000 pixels — costs nothing.
///
/// ```swift
/// import Foundation
/// import Images
///
/// func describe(_ data: Data) -> String {
///     do {
///         let image = try Image(data: data)
///         return "\(image.format) \(image.width)×\(image.height)\(image.hasAlpha ? " with alpha" : "")"
///     } catch {
///         return "not an image: \(error)"   // StoreError with code `decoding`
///     }
/// }
/// ```
///
/// An image is its bytes: two images are equal when their bytes are. It is `DataConvertible` and
/// `DataRepresentable`, so any store of `Data` keeps images with `coded(as: Image.self)` (or
/// ``ImageCodec`` for another pixel limit); ``ImageResizer`` makes the smaller images a cache
/// should keep.
public struct Image: Hashable, Sendable, CustomStringConvertible {
    /// The encoded bytes.
    public let data: Data
    /// The file format the bytes are in.
    public let format: ImageFormat
    /// The width in pixels, as the image is shown: with its EXIF ``orientation`` applied (a
    /// portrait photo that a camera stored sideways reports its portrait width).
    public let width: Int
    /// The height in pixels, as the image is shown: with its EXIF ``orientation`` applied.
    public let height: Int
    /// Whether the image has an alpha channel (transparency).
    public let hasAlpha: Bool
    /// The EXIF orientation, 1 to 8: 1 when the pixels are stored upright (or the file says
    /// nothing), 6 for a photo taken with the camera turned a quarter clockwise, and so on.
    /// ``ImageResizer`` applies it, so its images are always 1.
    public let orientation: Int
    /// Whether the file embeds an ICC colour profile (the resizer then converts to sRGB).
    let hasColorProfile: Bool
    /// The bytes a pixel takes decoded (bands times bytes per sample), from the header.
    let bytesPerPixel: Int

    /// The most pixels an image may declare unless you choose another limit: `100_000_000`
    /// (100 megapixels, 10,000 × 10,000; a 24-megapixel camera's photo is well under it). Decoding
    /// that many takes about 300 MB for 8-bit RGB; a limit counts pixels that take more than 3
    /// bytes decoded for more than one (see ``init(data:pixelLimit:)``), so that it bounds the
    /// memory decoding takes: 300 MB by default, whatever the pixels.
    public static let defaultPixelLimit = 100_000_000

    /// Reads the header of an encoded image, without decoding its pixels.
    /// - Parameters:
    ///   - data: The encoded bytes: a JPEG, PNG, WebP, GIF, TIFF, HEIF… file.
    ///   - pixelLimit: The most pixels (width × height) the header may declare;
    ///     ``defaultPixelLimit`` (100 megapixels) by default, `nil` for no limit. A pixel that
    ///     decodes to more than 3 bytes counts for its bytes over 3: 16-bit RGBA (8 bytes) for 8/3,
    ///     8-bit RGBA for 4/3. So the limit bounds what decoding takes, `3 × pixelLimit` bytes: a
    ///     100-megapixel 16-bit PNG with alpha (800 MB decoded) passes 100 megapixels.
    /// - Throws: `StoreError` with code `decoding` when the bytes are not an image libvips reads,
    ///   when its header is damaged or cut short, or when it declares more than `pixelLimit` pixels
    ///   so counted.
    public init(data: Data, pixelLimit: Int? = Image.defaultPixelLimit) throws {
        guard !data.isEmpty else {
            throw StoreError(.decoding, "Could not read an image from 0 bytes")
        }
        let header: ImageHeader
        do {
            header = try ImageHeader.read(data) ?? Vips.header(of: data)
        } catch {
            throw StoreError(
                .decoding,
                "Could not read the header of the \(data.count)-byte image that starts with \(Self.hexPrefix(of: data)): it is not an image libvips reads, or it is damaged",
                cause: error
            )
        }
        let format = header.format
        let stored = ImageSize(width: header.width, height: header.height)
        if let pixelLimit, let refusal = Self.refusal(of: stored, bytesPerPixel: header.bytesPerPixel, limit: pixelLimit) {
            throw StoreError(.decoding, "Refused the \(data.count)-byte \(format) image: its header declares \(refusal); no pixel was decoded")
        }
        let turned = (5...8).contains(header.orientation)
        self.data = data
        self.format = format
        self.width = turned ? header.height : header.width
        self.height = turned ? header.width : header.height
        self.hasAlpha = header.hasAlpha
        self.orientation = (1...8).contains(header.orientation) ? header.orientation : 1
        self.hasColorProfile = header.hasColorProfile
        self.bytesPerPixel = header.bytesPerPixel
    }

    /// Why an image of `size` with pixels of `bytesPerPixel` passes `limit`, or `nil` when it does
    /// not: a pixel of more than 3 bytes counts for `bytesPerPixel / 3` pixels.
    static func refusal(of size: ImageSize, bytesPerPixel: Int, limit: Int) -> String? {
        let pixels = size.pixelCount
        let decoded = pixels.multipliedReportingOverflow(by: max(3, bytesPerPixel))
        guard pixels > limit || decoded.overflow || decoded.partialValue > limit.saturatingTimesThree else { return nil }
        guard bytesPerPixel > 3 else {
            return "\(size) pixels (\(pixels)), more than the limit of \(limit)"
        }
        return "\(size) pixels (\(pixels)) of \(bytesPerPixel) bytes each, \(decoded.overflow ? "more than \(Int.max)" : "\(decoded.partialValue)") bytes decoded: more than the limit of \(limit) pixels of 3 bytes (\(limit.saturatingTimesThree) bytes)"
    }

    /// An image that libvips just wrote: upright, in sRGB, without metadata.
    init(resized data: Data, format: ImageFormat, size: ImageSize, hasAlpha: Bool) {
        self.data = data
        self.format = format
        self.width = size.width
        self.height = size.height
        self.hasAlpha = hasAlpha
        self.orientation = 1
        self.hasColorProfile = false
        self.bytesPerPixel = hasAlpha ? 4 : 3
    }

    /// The size as shown: ``width`` × ``height``.
    public var size: ImageSize { ImageSize(width: width, height: height) }

    /// `"<format> <width>×<height>, <count> bytes"`, such as `"jpeg 2048×1536, 136160 bytes"`.
    public var description: String { "\(format) \(size), \(data.count) bytes" }

    /// How errors name this image: `the 136160-byte jpeg image (2048×1536)`.
    var name: String { "the \(data.count)-byte \(format) image (\(size))" }

    /// The first bytes of `data` in hex, for a message about bytes that are not an image.
    private static func hexPrefix(of data: Data) -> String {
        data.prefix(8).map { byte in
            let digits = String(byte, radix: 16, uppercase: true)
            return byte < 16 ? "0" + digits : digits
        }.joined(separator: " ")
    }
}

extension Image: DataConvertible, DataRepresentable {
    /// Reads an image's header from stored bytes, with the default pixel limit.
    /// - Parameter data: The encoded bytes.
    /// - Returns: The image.
    /// - Throws: `StoreError` with code `decoding`, as ``init(data:pixelLimit:)``.
    public static func convertFromData(_ data: Data) throws -> Image {
        try Image(data: data)
    }

    /// The image's encoded bytes, as they are.
    /// - Returns: ``data``.
    public func asData() -> Data { data }
}

extension Image: CostMeasurable {
    /// The bytes the image takes in a memory store: its encoded size plus a little for its fields
    /// (an image is kept encoded, never as pixels).
    public var cacheCost: Int { data.count + 64 }
}

extension Int {
    /// Three times this, or `Int.max` when that does not fit.
    fileprivate var saturatingTimesThree: Int {
        let (product, overflow) = multipliedReportingOverflow(by: 3)
        return overflow ? .max : product
    }
}
