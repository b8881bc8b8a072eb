public import HanekeProtocols

/// Makes the image a cache should keep: resized to a target size with one of HanekeSwift's scale
/// modes, upright, in sRGB, without metadata, and encoded as JPEG, PNG or WebP.
///
/// ```swift
/// import Images
///
/// let avatars = ImageResizer(size: ImageSize(width: 96, height: 96), scaleMode: .aspectFill)
///
/// func avatar(from original: Image) async throws -> Image {
///     try await avatars.resize(original)   // a 96×96 centre crop, in the original's format
/// }
/// ```
///
/// Every output is decoded and encoded again by libvips, in one pass:
///
/// - the EXIF orientation is applied, so the pixels are stored upright and the output's
///   ``Image/orientation`` is 1;
/// - an embedded ICC profile is converted to sRGB; the output has no profile, no EXIF, no XMP
///   (a photo's location does not reach the cache);
/// - alpha is kept in PNG and WebP, and flattened onto white in JPEG;
/// - JPEG shrinks on load (libvips decodes it at 1/2, 1/4 or 1/8 of its size when the target is
///   at least 4, 8 or 16 times smaller, and resamples the rest), and WebP too, so a thumbnail of a
///   large photo decodes a fraction of it;
/// - a truncated or damaged image throws `StoreError` with code `decoding` rather than giving a
///   half-grey thumbnail, and so does one with more pixels than ``pixelLimit``, refused from its
///   header before a pixel is decoded.
///
/// It resizes synchronously on the calling thread with `resize(_:)` (a `Format`'s ``transform``
/// does that), or on an `IOExecutor` with `try await resize(_:)`. A resize is CPU work — about
/// 11 ms for a 256-pixel thumbnail of a 3-megapixel JPEG on one core here, twice that from a PNG —
/// and libvips's worker thread does it while the caller waits: keep it off Swift's cooperative
/// threads.
public struct ImageResizer: Sendable {
    /// How the image is fitted to ``ImageResizer/size`` (HanekeSwift's scale modes; the raw values
    /// are HanekeSwift's too).
    public enum ScaleMode: String, Sendable, Hashable, CaseIterable {
        /// Stretched to exactly the size, whatever its aspect.
        case fill = "fill"
        /// Scaled to fit inside the size, keeping its aspect; one side equals the size's, the other
        /// is at most the size's (rounded up).
        case aspectFit = "aspectfit"
        /// Scaled to cover the size, keeping its aspect, then the centre cut out: exactly the size.
        /// (HanekeSwift's aspect fill scaled without cutting.)
        case aspectFill = "aspectfill"
        /// Kept at its own size (upright, converted and encoded all the same).
        case none = "none"
    }

    /// The target size, as the image is shown (after its EXIF orientation). Each side 1 to
    /// 10,000,000 pixels; with ``ScaleMode/none`` it is not used.
    public var size: ImageSize
    /// How the image is fitted to ``size``. ``ScaleMode/aspectFit`` by default.
    public var scaleMode: ScaleMode
    /// Whether an image smaller than the target is made larger. `true` by default (as in
    /// HanekeSwift). When `false`, an image that would grow in either direction keeps its own size
    /// (HanekeSwift's rule: it is not cropped either).
    public var allowUpscaling: Bool
    /// The format of the output. `nil` by default: the input's when it is JPEG, PNG or WebP,
    /// otherwise PNG for an image with alpha and JPEG for one without (as HanekeSwift chose). One
    /// of ``ImageFormat/writable``.
    public var outputFormat: ImageFormat?
    /// The quality of JPEG and WebP output, from 0 (smallest) to 1 (best); libvips's `Q` is this
    /// times 100, at least 1. `0.85` by default. HanekeSwift's default was 1 (`Q` 100), which
    /// costs many bytes: a 256 × 192 JPEG thumbnail of the tests' generated photo takes 35,939
    /// bytes at 1 and 3,003 at 0.85. PNG ignores it.
    public var compressionQuality: Double
    /// The most pixels the input may have, and the output. ``Image/defaultPixelLimit``
    /// (100 megapixels) by default; `nil` for no limit. Checked from the header, before decoding,
    /// and counting bytes per pixel as ``Image/init(data:pixelLimit:)`` does: a pixel that decodes
    /// to more than 3 bytes (alpha, 16-bit samples) counts for more than one.
    public var pixelLimit: Int?
    /// The longest one resize may take, decoding included: `10 seconds` by default; `nil` for no
    /// limit. Past it libvips stops the resize and it throws `StoreError` code `timeout`: a
    /// hostile image cannot keep a thread of the compute executor for long. A PNG (or any format
    /// but JPEG and WebP) stops within a strip of its decoding; a JPEG or WebP, which libvips
    /// decodes shrunk to the output's size, at the next strip of the output. A thread of libvips's
    /// own waits for the deadline while a resize with a limit runs; a resize that ends after its
    /// deadline before that thread could stop it (a busy machine) throws `timeout` all the same.
    public var timeLimit: Duration?
    /// Called with the input before it is resized (Haneke for Objective-C's `preResizeBlock`);
    /// what it returns is resized. `nil` by default. Its errors reach the caller as they are.
    public var preResize: (@Sendable (Image) throws -> Image)?
    /// Called with the resized image (Haneke for Objective-C's `postResizeBlock`); what it returns
    /// is the result. `nil` by default. Its errors reach the caller as they are.
    public var postResize: (@Sendable (Image) throws -> Image)?
    /// What shapes the output, as text: size, scale mode, upscaling, output format and quality
    /// (`"resize 96x96 aspectfit up jpeg q0.85"`). A resizing format's `version`: change any of them
    /// and the images made under the old settings are not served again. `preResize` and
    /// `postResize` are closures and cannot be described: give the format a `version` of your own
    /// when you change them.
    public var identity: String {
        let output = outputFormat?.name ?? "same"
        return "resize \(size.width)x\(size.height) \(scaleMode.rawValue) \(allowUpscaling ? "up" : "noup") \(output) q\(compressionQuality)"
    }

    /// Where `try await resize(_:)` runs. `IOExecutor.compute` by default (as wide as the cores,
    /// apart from the disk's `IOExecutor.shared`, so image work never queues ahead of disk reads).
    public var executor: IOExecutor

    /// Creates a resizer.
    /// - Parameters:
    ///   - size: The target size, as the image is shown.
    ///   - scaleMode: How the image is fitted to `size`; ``ScaleMode/aspectFit`` by default.
    ///   - allowUpscaling: Whether a smaller image is made larger; `true` by default.
    ///   - outputFormat: JPEG, PNG or WebP; `nil` (the input's, see ``outputFormat``) by default.
    ///   - compressionQuality: JPEG and WebP quality from 0 to 1; `0.85` by default.
    ///   - pixelLimit: The most pixels of the input and the output; ``Image/defaultPixelLimit``
    ///     by default, `nil` for no limit.
    ///   - timeLimit: The longest one resize may take; `10 seconds` by default, `nil` for no limit.
    ///   - preResize: Called with the input before it is resized; `nil` by default.
    ///   - postResize: Called with the resized image; `nil` by default.
    public init(
        size: ImageSize,
        scaleMode: ScaleMode = .aspectFit,
        allowUpscaling: Bool = true,
        outputFormat: ImageFormat? = nil,
        compressionQuality: Double = 0.85,
        pixelLimit: Int? = Image.defaultPixelLimit,
        timeLimit: Duration? = .seconds(10),
        preResize: (@Sendable (Image) throws -> Image)? = nil,
        postResize: (@Sendable (Image) throws -> Image)? = nil
    ) {
        self.size = size
        self.scaleMode = scaleMode
        self.allowUpscaling = allowUpscaling
        self.outputFormat = outputFormat
        self.compressionQuality = compressionQuality
        self.pixelLimit = pixelLimit
        self.timeLimit = timeLimit
        self.preResize = preResize
        self.postResize = postResize
        self.executor = .compute
    }

    // MARK: - Resizing

    /// Resizes `image` on the calling thread, which waits while libvips works: call it from a
    /// thread of your own or from an executor's job, not from a task on Swift's cooperative pool
    /// (use `try await resize(_:)` there).
    /// - Parameter image: The original image.
    /// - Returns: The resized image, after ``postResize``.
    /// - Throws: `StoreError` with code `decoding` when the image is damaged or truncated, or has
    ///   more pixels than ``pixelLimit``; code `encoding` when the resizer's settings cannot be
    ///   met (a size of 0, a format it does not write, an output over the limit); what the hooks
    ///   throw.
    public func resize(_ image: Image) throws -> Image {
        let input = try preResize?(image) ?? image
        let output = try resizeWithoutHooks(input)
        return try postResize?(output) ?? output
    }

    /// Resizes `image` on ``executor``; the calling task suspends meanwhile.
    /// - Parameter image: The original image.
    /// - Returns: The resized image, after ``postResize``.
    /// - Throws: As the synchronous `resize(_:)`; `CancellationError` when the task was cancelled
    ///   before the resize started.
    public func resize(_ image: Image) async throws -> Image {
        try await executor.run { [self] in try resize(image) }
    }

    /// The resizer as a `Format`'s transform, for a cache that keeps the resized image — not the
    /// original — in memory and on disk:
    ///
    /// ```swift
    /// import Haneke
    /// import Images
    ///
    /// let avatar = Format<Image>(
    ///     name: "avatar-96",
    ///     transform: ImageResizer(size: ImageSize(width: 96, height: 96), scaleMode: .aspectFill).transform
    /// )
    /// ```
    ///
    /// It runs the synchronous `resize(_:)` on the thread that calls it.
    public var transform: @Sendable (Image) throws -> Image {
        { [self] image in try resize(image) }
    }

    /// The size an image of `size` pixels (as shown) comes out at.
    /// - Parameter size: The input's size, after its EXIF orientation.
    /// - Returns: The output's size.
    public func outputSize(for size: ImageSize) -> ImageSize {
        ResizePlan(source: size, target: self.size, scaleMode: scaleMode, allowUpscaling: allowUpscaling).size
    }

    // MARK: - Internal

    /// The largest side libvips handles.
    static let maximumSide = 10_000_000

    /// The resize itself, between the hooks.
    func resizeWithoutHooks(_ image: Image) throws -> Image {
        let format = try chosenFormat(for: image)
        let quality = try libvipsQuality()
        if scaleMode != .none {
            guard (1...Self.maximumSide).contains(size.width), (1...Self.maximumSide).contains(size.height) else {
                throw StoreError(.encoding, "ImageResizer cannot make \(image.name) \(size): each side must be 1 to \(Self.maximumSide) pixels")
            }
        }
        if let pixelLimit, let refusal = Image.refusal(of: image.size, bytesPerPixel: image.bytesPerPixel, limit: pixelLimit) {
            throw StoreError(.decoding, "Refused to resize \(image.name): it has \(refusal); no pixel was decoded")
        }
        let plan = ResizePlan(source: image.size, target: size, scaleMode: scaleMode, allowUpscaling: allowUpscaling)
        try check(plan.size, of: image, as: format)

        let output: Vips.Output
        do {
            output = try Vips.resize(
                image.data,
                Vips.Request(
                    width: plan.size.width,
                    height: plan.size.height,
                    crop: plan.crops,
                    convertsToSRGB: image.hasColorProfile,
                    format: format,
                    quality: quality,
                    timeLimit: timeLimit,
                    shrinksOnLoad: image.format == .jpeg || image.format == .webp
                )
            )
        } catch is Vips.TimedOut {
            throw StoreError(
                .timeout,
                "Gave up resizing \(image.name) to a \(plan.size) \(format): it took longer than its timeLimit of \(timeLimit.map { "\($0)" } ?? "none")"
            )
        } catch {
            // Damaged or truncated input is what fails here in practice (the settings were checked
            // above); libvips's message, the cause, says which step stopped.
            throw StoreError(.decoding, "Could not resize \(image.name) to a \(plan.size) \(format)", cause: error)
        }
        return Image(
            resized: output.data,
            format: format,
            size: ImageSize(width: output.width, height: output.height),
            hasAlpha: output.hasAlpha
        )
    }

    /// ``outputFormat``, or the one chosen for `image`.
    private func chosenFormat(for image: Image) throws -> ImageFormat {
        if let outputFormat {
            guard ImageFormat.writable.contains(outputFormat) else {
                throw StoreError(.encoding, "ImageResizer cannot write \(image.name) as \(outputFormat): it writes jpeg, png and webp")
            }
            return outputFormat
        }
        if ImageFormat.writable.contains(image.format) { return image.format }
        return image.hasAlpha ? .png : .jpeg
    }

    /// ``compressionQuality`` as libvips's `Q`, 1 to 100.
    private func libvipsQuality() throws -> Int {
        guard compressionQuality.isFinite else {
            throw StoreError(.encoding, "ImageResizer's compressionQuality is \(compressionQuality): it must be a number from 0 to 1")
        }
        return Int((min(max(compressionQuality, 0), 1) * 100).rounded()).clamped(to: 1...100)
    }

    /// Refuses an output larger than the pixel limit or than its format allows.
    private func check(_ output: ImageSize, of image: Image, as format: ImageFormat) throws {
        if let pixelLimit, output.pixelCount > pixelLimit {
            throw StoreError(
                .encoding,
                "ImageResizer cannot make \(image.name) \(output): \(output.pixelCount) pixels is more than the limit of \(pixelLimit)"
            )
        }
        let largestSide = switch format {
        case .webp: 16_383
        case .jpeg: 65_535
        default: Self.maximumSide
        }
        if output.width > largestSide || output.height > largestSide {
            throw StoreError(
                .encoding,
                "ImageResizer cannot write \(image.name) as a \(output) \(format): \(format) images are at most \(largestSide) pixels a side"
            )
        }
    }
}

extension Comparable {
    fileprivate func clamped(to range: ClosedRange<Self>) -> Self {
        min(max(self, range.lowerBound), range.upperBound)
    }
}
