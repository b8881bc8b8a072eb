public import Haneke

extension Shared {
    /// A cache of images shared by the whole program, under `$XDG_CACHE_HOME/haneke/shared-images`.
    ///
    /// Its original format keeps images as they came
    /// (``Haneke/Format/images(name:diskCapacity:)``: not LZ4-compressed on disk, since JPEG, PNG
    /// and WebP do not shrink). Add a format per size with
    /// ``Haneke/Format/resizing(name:resizer:diskCapacity:)``; a fetch in such a format takes the
    /// original from the original format — one request for concurrent misses in every format — and
    /// resizes it once, on `IOExecutor.compute`.
    ///
    /// Making it starts libvips in the background on the shared `IOExecutor` (its original format,
    /// ``Haneke/Format/images(name:diskCapacity:)``, does; see ``Image/startLibrary()``).
    public static let imageCache = Cache<Image>(name: "shared-images", originalFormat: .images(name: Cache<Image>.originalFormatName))
}

extension Format where Value == Image {
    /// A format that keeps images as they are — no transform — and does not LZ4-compress them on
    /// disk: JPEG, PNG and WebP files are compressed already, and LZ4 made them 0.01–0.2 % larger
    /// while costing about 0.7 ms per megabyte to compress and 0.5 ms to decompress (see the
    /// Images article, "An image cache"). Making one starts libvips in the background on the shared
    /// `IOExecutor`.
    /// - Parameters:
    ///   - name: The format's name, unique in its cache.
    ///   - diskCapacity: The most bytes on disk; `0` for memory only. `100 MiB` by default.
    /// - Returns: The format.
    public static func images(name: String, diskCapacity: Int = 100 << 20) -> Format<Image> {
        Vips.startInBackground(on: .shared)
        var format = Format<Image>(name: name, diskCapacity: diskCapacity)
        format.compressesOnDisk = false
        return format
    }

    /// A format that keeps images resized by `resizer`, not LZ4-compressed on disk (as
    /// ``images(name:diskCapacity:)``). It `Format.derivesFromOriginal`: a miss takes the
    /// original from the cache's original format (which fetches it once for concurrent misses in
    /// every format, and keeps it), and the resize runs once per key, on `IOExecutor.compute`.
    /// Making one starts libvips in the background on the shared `IOExecutor`.
    /// - Parameters:
    ///   - name: The format's name, unique in its cache.
    ///   - resizer: What the format's images become.
    ///   - diskCapacity: The most bytes on disk; `0` for memory only. `100 MiB` by default.
    /// - Returns: The format.
    public static func resizing(name: String, resizer: ImageResizer, diskCapacity: Int = 100 << 20) -> Format<Image> {
        var format = images(name: name, diskCapacity: diskCapacity)
        format.transform = resizer.transform
        format.version = resizer.identity
        format.derivesFromOriginal = true
        return format
    }
}

extension Image {
    /// Starts libvips, if it has not started, as a job of the shared `IOExecutor`; the calling
    /// task suspends meanwhile. Later calls return at once (after a hop to the executor).
    ///
    /// libvips starts on first use and takes 50–80 ms, blocking the thread that uses it first —
    /// and any other that uses it meanwhile. Reading an image that is not a JPEG, PNG or WebP
    /// (``init(data:pixelLimit:)``, and so a store's `coded(as: Image.self)` read) uses it on the
    /// caller's thread, which may be one of Swift's cooperative threads (a `Cache` and a
    /// `NetworkFetcher<Image>` decode on `IOExecutor.compute`). Await this once, before the
    /// first image is read, to keep that wait off them. `Shared.imageCache` and the formats of
    /// ``Haneke/Format/images(name:diskCapacity:)`` and
    /// ``Haneke/Format/resizing(name:resizer:diskCapacity:)`` start it in the background when they
    /// are made, without waiting.
    /// - Throws: `StoreError` with code `unavailable` when libvips could not start.
    public static func startLibrary() async throws {
        do {
            try await IOExecutor.shared.run { try Vips.start() }
        } catch let failure as Vips.Failure {
            throw StoreError(.unavailable, "libvips could not start", cause: failure)
        }
    }
}
