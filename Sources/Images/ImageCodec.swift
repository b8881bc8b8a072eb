public import Foundation
public import HanekeProtocols

/// The codec of images with a pixel limit of your choosing, for `coded(with:)`
/// (`coded(as:)` uses ``Image/defaultPixelLimit``).
///
/// ```swift
/// import Foundation
/// import Images
/// import MemoryStore
///
/// let thumbnails = MemoryStore<String, Data>(costLimit: 64 << 20)
///     .coded(with: ImageCodec(pixelLimit: 25_000_000))
/// ```
public struct ImageCodec: DataCodec {
    /// The most pixels a stored image may declare. ``Image/defaultPixelLimit`` (100 megapixels) by
    /// default; `nil` for no limit.
    public var pixelLimit: Int?

    /// Creates the codec.
    /// - Parameter pixelLimit: The most pixels a stored image may declare;
    ///   ``Image/defaultPixelLimit`` by default, `nil` for no limit.
    public init(pixelLimit: Int? = Image.defaultPixelLimit) {
        self.pixelLimit = pixelLimit
    }

    /// The image's bytes.
    /// - Parameter value: The image.
    /// - Returns: Its encoded bytes, as they are.
    public func encode(_ value: Image) -> Data { value.data }

    /// The image in `data`, from its header.
    /// - Parameter data: The stored bytes.
    /// - Returns: The image.
    /// - Throws: `StoreError` with code `decoding`, as ``Image/init(data:pixelLimit:)``.
    public func decode(_ data: Data) throws -> Image {
        try Image(data: data, pixelLimit: pixelLimit)
    }
}
