/// The file format of an encoded image: JPEG, PNG, WebP, or another that libvips reads.
///
/// An open set of named values rather than an enum, so that a format libvips learns to read (AVIF
/// through `heif`, JPEG XL, …) is a new value, not a broken `switch`. Compare with `==`:
///
/// ```swift
/// import Foundation
/// import Images
///
/// func isPhoto(_ data: Data) throws -> Bool {
///     try Image(data: data).format == .jpeg
/// }
/// ```
///
/// ``ImageResizer`` writes ``jpeg``, ``png`` and ``webp`` (``writable``); it reads every format
/// libvips reads, named after libvips's loader (`gif`, `tiff`, `heif`, …).
public struct ImageFormat: Hashable, Sendable, CustomStringConvertible {
    /// The format's short name, in lower case: `jpeg`, `png`, `webp`, `gif`, `tiff`, `heif`, …
    public let name: String

    /// Names a format.
    /// - Parameter name: The format's short name, in lower case (libvips's loader name without
    ///   `load`, such as `gif` for `gifload`).
    public init(_ name: String) { self.name = name }

    /// The format's name.
    public var description: String { name }

    /// JPEG (JFIF/Exif): photographs, no alpha.
    public static let jpeg = ImageFormat("jpeg")
    /// PNG: lossless, with alpha.
    public static let png = ImageFormat("png")
    /// WebP: lossy here, with alpha.
    public static let webp = ImageFormat("webp")
    /// GIF (the first frame of an animation).
    public static let gif = ImageFormat("gif")
    /// TIFF (the first page).
    public static let tiff = ImageFormat("tiff")
    /// HEIF and AVIF, through libheif where libvips has it.
    public static let heif = ImageFormat("heif")

    /// The formats ``ImageResizer`` writes: JPEG, PNG and WebP.
    public static let writable: [ImageFormat] = [.jpeg, .png, .webp]

    /// The format libvips's loader reads, from the loader's name (`jpegload_buffer` → `jpeg`).
    init(loader: String) {
        var name = Substring(loader)
        for suffix in ["_buffer", "_source", "load"] where name.hasSuffix(suffix) {
            name = name.dropLast(suffix.count)
        }
        self.init(name.isEmpty ? "unknown" : String(name))
    }
}
