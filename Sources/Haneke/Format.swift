import HanekeProtocols

/// A named way to keep values in a `Cache`: its own memory and disk layers, its own capacity, and an
/// optional transform applied once to every value before it is cached (HanekeSwift's formats, e.g.
/// "thumbnail" next to "original").
///
/// ```swift
/// let summaries = Format<JSON>(name: "summary", diskCapacity: 10 << 20) { json in
///     ["title": json["title"] ?? .null]
/// }
/// cache.addFormat(summaries)
/// ```
public struct Format<Value: Sendable>: Sendable {
    /// The format's name, unique in its cache; also its folder's name on disk.
    public var name: String
    /// The most bytes its files may take on disk. `100 MiB` by default; `0` keeps the format in
    /// memory only (nothing is persisted).
    public var diskCapacity: Int
    /// The most values kept in memory. `10,000` by default; `nil` for no limit.
    public var memoryCountLimit: Int?
    /// The most total cost kept in memory, in bytes: `Data` and `String` by their size, a
    /// `CostMeasurable` value (`JSON`) by its `cacheCost`, any other value by the size of its
    /// encoding. `64 MiB` by default; `nil` for no limit.
    public var memoryCostLimit: Int?
    /// Whether the disk layer compresses values with LZ4. `true` by default; turn it off for values
    /// that are already compressed (images, archives).
    public var compressesOnDisk: Bool
    /// What is loaded from disk into memory when the cache is created. `.none` by default.
    public var preloadPolicy: PreloadPolicy
    /// Values of up to this many bytes on disk (after compression) are kept as rows of an
    /// `SQLiteStore` in the format's folder, larger ones as files; `nil` (the default) keeps a file
    /// per value, the layout `haneke` and other tools read. The database and the files then have
    /// half of ``diskCapacity`` each. Worth it for many small values: a 512-byte value takes about
    /// 1.4× its size on disk in the database against 8× as a file of its own, and the database
    /// opens at once whatever it holds; `16 KiB` is where a file per value starts to read faster
    /// (BENCHMARKS.md, workload 9). Preloading (``preloadPolicy``) reads only the files.
    public var smallValueThreshold: Int?
    /// The most memory the database of small values (``smallValueThreshold``) keeps of its recently
    /// read pages, in bytes: memory on top of the memory layer's, taken as pages are read. `32 MiB`
    /// by default; count it in the process's memory budget.
    public var databasePageCacheSize: Int
    /// What a value costs against ``memoryCostLimit``; `nil` (the default) for its size: its bytes
    /// for `Data` and `String`, its `cacheCost` for a `CostMeasurable` value, the size of its
    /// encoding otherwise. Give one that adds what each entry costs beyond its value (its key, the
    /// layer's bookkeeping) when the values are small, so that the limit bounds the process's memory.
    public var memoryCost: (@Sendable (Value) -> Int)?
    /// Whether a miss in this format takes its value from the cache's original format — which
    /// fetches it (one fetcher call for concurrent misses of a key, in every format) and keeps it —
    /// and transforms that, rather than calling the fetcher itself. `false` by default, as in
    /// HanekeSwift, where each format calls the fetcher on its own misses. Turn it on when the
    /// fetch is the expensive part and the original is worth keeping: an image fetched once and
    /// resized for every format. The original format ignores it.
    public var derivesFromOriginal: Bool
    /// Applied once to every value before it is cached (fetched or set), on `IOExecutor.compute`
    /// (as wide as the cores, apart from the disk's executor), never on one of Swift's cooperative
    /// threads (so it may be slow CPU work or call a blocking C library); `nil` keeps values as
    /// they are.
    public var transform: (@Sendable (Value) throws -> Value)?
    /// How long values live in this format, when a read refreshes one in the background, and how
    /// long past its expiry one is served when the fetcher fails; nothing expires by default.
    public var freshness: Freshness
    /// What shapes this format's values, as text: a transform's settings (a resizer's size, mode,
    /// quality and output format) and any version you give it. It is part of the format's identity on
    /// disk: when it changes, the values made under the old one are never served, and their folder
    /// is emptied when the cache opens. `nil` (only the name) by default.
    /// The Images module's `Format.resizing(name:resizer:diskCapacity:)` sets it from its resizer.
    public var version: String?

    /// How long a value lives in this format, in memory and on disk alike: a value set without a
    /// lifetime of its own lives this long (``Cache/set(_:forKey:formatName:timeToLive:)`` gives
    /// one, which it keeps), and a fetched value at most this long (a fetcher's shorter lifetime,
    /// such as an HTTP response's freshness, wins). `nil` (until evicted) by default. The same as
    /// `freshness.timeToLive`.
    public var timeToLive: Duration? {
        get { freshness.timeToLive }
        set { freshness.timeToLive = newValue }
    }

    /// Creates a format.
    /// - Parameters:
    ///   - name: The format's name, unique in its cache.
    ///   - diskCapacity: The most bytes on disk; `0` for memory only. `100 MiB` by default.
    ///   - transform: Applied once to every value before it is cached; `nil` by default.
    public init(name: String, diskCapacity: Int = 100 << 20, transform: (@Sendable (Value) throws -> Value)? = nil) {
        self.name = name
        self.diskCapacity = diskCapacity
        self.memoryCountLimit = 10_000
        self.memoryCostLimit = 64 << 20
        self.compressesOnDisk = true
        self.preloadPolicy = .none
        self.smallValueThreshold = nil
        self.databasePageCacheSize = 32 << 20
        self.memoryCost = nil
        self.derivesFromOriginal = false
        self.transform = transform
        self.freshness = Freshness()
        self.version = nil
    }

    /// The value to cache for `original`: the transform's result, computed on
    /// `IOExecutor.compute` (a transform may be long CPU work, such as resizing an image, or block in a C
    /// library: it never runs on a cooperative thread, and at most the executor's width of them run
    /// at once), or `original` itself when there is no transform.
    func apply(to original: Value) async throws -> Value {
        guard let transform else { return original }
        return try await IOExecutor.compute.run { try transform(original) }
    }
}

/// What a format loads from disk into memory when its cache is created (Haneke for Objective-C's
/// preload policies). Preloading runs in the background at low priority and gives way to real
/// requests; it stops when the memory layer is full and never replaces a value already in memory.
public enum PreloadPolicy: Sendable, Hashable {
    /// Nothing is preloaded.
    case none
    /// The values read or written during the previous run of the program: those the files'
    /// journal records, and — for a format with a ``Format/smallValueThreshold`` — the small
    /// values in its database last used since that run began (the database records no runs of
    /// its own; the journal's record of when the run began bounds it).
    case lastSession
    /// Every value on disk, most recently used first, until memory is full.
    case all
}
