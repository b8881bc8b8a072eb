import Foundation
import HanekeProtocols
import Logging
import Synchronization
internal import CVips

/// libvips, the image library under this module: the only Swift file that imports `CVips`, and no
/// C type leaves it.
///
/// libvips is started once per process, on first use (50–80 ms here: it loads its modules, and
/// blocks the thread that asked, and any other that asks meanwhile) — or before, on the shared
/// `IOExecutor`, by ``Image/startLibrary()`` and by `Shared.imageCache` when it is made — with
/// these settings:
///
/// - **One worker thread per image** (`vips_concurrency_set(1)`), unless `VIPS_CONCURRENCY` is set.
///   A thumbnail is a chain of a loader and a resampler that more threads barely speed up: on a
///   2-core machine 3-megapixel JPEG and PNG thumbnails took as long with 2 workers as with 1, and
///   with 8 resizes at once 1 worker made 218–233 JPEG thumbnails a second against 209 with 2.
///   Images in parallel come from requests in parallel.
/// - **No operation cache** (`vips_cache_set_max(0)`, and no memory or files kept for it): a cache
///   of images should not hold a second, hidden one of decoded pixels, and a cached operation would
///   keep the caller's buffer in use after the call returned.
/// - **No untrusted loaders** (`vips_block_untrusted_set(TRUE)`): the loaders libvips itself marks
///   as not fit for hostile input (SVG, PDF, JPEG 2000, JPEG XL, ImageMagick, …) are refused.
///
/// libvips's error messages are kept in one buffer for the whole process (libvips 8.14): a failure
/// takes the messages there, so two failing at once may each see some of the other's. Its warnings
/// go to ``logger`` at level `debug`, not to standard error.
enum Vips {
    /// What libvips said when an operation failed.
    struct Failure: Error, CustomStringConvertible {
        var message: String
        var description: String { "libvips: \(message)" }
    }

    /// What a resize should produce.
    struct Request {
        var width: Int
        var height: Int
        /// Scale to cover the size and keep its centre, rather than scale to exactly the size.
        var crop: Bool
        var convertsToSRGB: Bool
        var format: ImageFormat
        /// 1 to 100.
        var quality: Int
        /// The longest the resize may take; `nil` for no limit.
        var timeLimit: Duration?
        /// Whether the input's format decodes shrunk (JPEG, WebP): libvips then opens it, so
        /// that it decodes no more pixels than the output needs.
        var shrinksOnLoad: Bool
    }

    /// A resize stopped because it took longer than its time limit.
    struct TimedOut: Error {}

    /// A resized image, encoded.
    struct Output {
        var data: Data
        var width: Int
        var height: Int
        var hasAlpha: Bool
    }

    /// Reads the header of `data` without decoding its pixels: the format from the loader libvips
    /// chose (`jpegload_buffer` → `jpeg`).
    /// The corresponding C function is `vips_image_new_from_buffer`.
    static func header(of data: Data) throws(Failure) -> ImageHeader {
        try start()
        var header = cvips_header()
        let status = data.withUnsafeBytes { bytes -> Int32 in
            guard let base = bytes.baseAddress, !bytes.isEmpty else { return -1 }
            return cvips_read_header(base, bytes.count, &header)
        }
        guard status == 0 else { throw takeFailure(or: "no image in \(data.count) bytes") }
        let loader = withUnsafeBytes(of: header.loader) { bytes in
            String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
        }
        return ImageHeader(
            format: ImageFormat(loader: loader),
            width: Int(header.width),
            height: Int(header.height),
            hasAlpha: header.has_alpha != 0,
            orientation: Int(header.orientation),
            hasColorProfile: header.has_icc_profile != 0,
            bytesPerPixel: Int(header.bytes_per_pixel)
        )
    }

    /// Decodes, orients, converts, resizes and encodes `data` as `request` says. Blocks the calling
    /// thread while libvips's worker thread runs the pipeline.
    /// The corresponding C functions are `vips_thumbnail_buffer` and the `…save_buffer` functions.
    /// - Throws: ``TimedOut`` when the resize took longer than `request.timeLimit`, otherwise
    ///   libvips's ``Failure``.
    static func resize(_ data: Data, _ request: Request) throws -> Output {
        try start()
        let format: Int32 = switch request.format {
        case .png: Int32(CVIPS_PNG)
        case .webp: Int32(CVIPS_WEBP)
        default: Int32(CVIPS_JPEG)
        }
        var parameters = cvips_resize_request(
            width: Int32(request.width),
            height: Int32(request.height),
            crop: request.crop ? 1 : 0,
            to_srgb: request.convertsToSRGB ? 1 : 0,
            format: format,
            quality: Int32(request.quality),
            time_limit_us: request.timeLimit.map(Self.microseconds) ?? 0,
            shrinks_on_load: request.shrinksOnLoad ? 1 : 0
        )
        var result = cvips_resize_result()
        // libvips reads `data` until the output is encoded, all inside this closure.
        let status = data.withUnsafeBytes { bytes -> Int32 in
            guard let base = bytes.baseAddress, !bytes.isEmpty else { return -1 }
            return cvips_resize(base, bytes.count, &parameters, &result)
        }
        guard status == 0, let encoded = result.data else {
            let failure = takeFailure(or: "could not resize \(data.count) bytes")
            if result.timed_out != 0 { throw TimedOut() }
            throw failure
        }
        let output = Data(bytesNoCopy: encoded, count: result.length, deallocator: .custom { pointer, _ in cvips_free(pointer) })
        return Output(data: output, width: Int(result.width), height: Int(result.height), hasAlpha: result.has_alpha != 0)
    }

    /// `duration` in microseconds, at least 1 (a limit of 0 would be none), at most a century.
    private static func microseconds(_ duration: Duration) -> Int {
        let microseconds = Double(duration.components.seconds) * 1e6 + Double(duration.components.attoseconds) / 1e12
        return Int(min(max(1, microseconds), 100 * 365 * 86_400 * 1e6))
    }

    /// The value of each band of the pixel at (`x`, `y`) of the encoded image in `data`, decoding
    /// the whole image: for tests, which check what the pixels became.
    /// The corresponding C function is `vips_getpoint`.
    static func pixel(of data: Data, x: Int, y: Int) throws(Failure) -> [Double] {
        try start()
        var values = [Double](repeating: 0, count: 8)
        let count = data.withUnsafeBytes { bytes -> Int32 in
            guard let base = bytes.baseAddress, !bytes.isEmpty else { return -1 }
            return values.withUnsafeMutableBufferPointer { buffer in
                cvips_pixel(base, bytes.count, Int32(x), Int32(y), buffer.baseAddress, Int32(buffer.count))
            }
        }
        guard count >= 0 else { throw takeFailure(or: "could not read the pixel at \(x), \(y)") }
        return Array(values.prefix(Int(count)))
    }

    // MARK: - Starting

    /// The worker threads per image: 1, unless `VIPS_CONCURRENCY` says otherwise (0 leaves libvips
    /// to read it).
    private static var concurrency: Int32 {
        ProcessInfo.processInfo.environment["VIPS_CONCURRENCY"] == nil ? 1 : 0
    }

    /// Whether libvips started: a static `let` is initialised once, thread-safely, on first use.
    private static let started: Failure? = {
        // Called on whichever thread libvips warns from; logs with no lock held.
        let log: cvips_log_func = { _, level, message, _ in
            guard let message else { return }
            let text = String(cString: message)
            let kind = Int(level) & CVIPS_LOG_LEVEL_WARNING != 0 ? "warning" : "message"
            Vips.logger.withLock { $0 }.debug("libvips: \(text)", metadata: ["level": "\(kind)"])
        }
        guard cvips_start("haneke", concurrency, log) == 0 else {
            return takeFailure(or: "vips_init failed")
        }
        return nil
    }()

    /// Where libvips's warnings go — a damaged file's "Premature end of JPEG file", "error in tile
    /// 0 x 10" — at level `debug`, rather than to standard error: the failure they explain is
    /// thrown with libvips's error message already. The label is `haneke.images`; tests swap in
    /// a logger of their own.
    static let logger = Mutex(Logger(label: "haneke.images"))

    /// Starts libvips if it has not started, blocking the calling thread for 50–80 ms the first
    /// time (and any thread that calls meanwhile, until it has); at once afterwards.
    static func start() throws(Failure) {
        if let failure = started { throw failure }
    }

    /// Starts libvips as a job of `executor`, without waiting for it.
    static func startInBackground(on executor: IOExecutor) {
        executor.submit { _ = started }
    }

    /// libvips's messages since the last failure, on one line (its error buffer is shared by the
    /// process), or `fallback` when it has none.
    private static func takeFailure(or fallback: String) -> Failure {
        guard let text = cvips_take_error() else { return Failure(message: fallback) }
        defer { cvips_free(text) }
        let lines = String(cString: text).split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        return Failure(message: lines.isEmpty ? fallback : lines.joined(separator: "; "))
    }
}
