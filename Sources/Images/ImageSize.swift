/// A size in pixels: the size of an ``Image``, or the target of an ``ImageResizer``.
public struct ImageSize: Hashable, Sendable, CustomStringConvertible {
    /// The width in pixels.
    public var width: Int
    /// The height in pixels.
    public var height: Int

    /// Creates a size.
    /// - Parameters:
    ///   - width: The width in pixels.
    ///   - height: The height in pixels.
    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }

    /// `width × height`, the number of pixels; `Int.max` if the product overflows.
    public var pixelCount: Int {
        let (product, overflow) = width.multipliedReportingOverflow(by: height)
        return overflow ? .max : product
    }

    /// `"<width>×<height>"`, such as `"96×96"`.
    public var description: String { "\(width)×\(height)" }
}
