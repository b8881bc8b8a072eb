public import Foundation
public import HanekeProtocols
public import HTTPCaching
public import Logging

/// A cache of values in named formats, each a stack of layers: memory, then LZ4-compressed files on
/// disk, filled on a miss by a fetcher (HanekeSwift's `Cache<T>`, for Linux and async/await).
///
/// ```swift
/// let cache = Cache<JSON>(name: "github")
/// let user = try await cache.fetch(url: URL(string: "https://api.github.com/users/haneke")!)
/// print(user["bio"]?.string ?? "")
/// ```
///
/// `Cache(name:)` keeps each format's files under `$XDG_CACHE_HOME/haneke/<name>/<format>` (or
/// `~/.cache/haneke/...`, with the home folder from `HOME` or the password database). If a format's
/// folder cannot be used (not a store's, another user's, a database another process keeps
/// locked), its disk layer is *unavailable*: reads there are misses, so the format works from
/// memory, but `set`, `remove` and `removeAll` throw `unavailable` naming the cause, after the
/// memory layer took them. The layer tries to open again every 5 seconds, and once open it first
/// removes every key written or removed meanwhile, so a value removed while it could not be used
/// is never served from it again. With no home folder at all the cache works from memory alone
/// and says so in the log. Each format's folder is private to the user (`0700`, files `0600`).
/// Creating a cache never waits for the disk: each format's folder opens in the background on the
/// shared `IOExecutor`, and the first operation that needs it waits for it (suspending, without
/// blocking a thread). Make a cache once and share it (it is `Sendable`): each one opens its formats'
/// folders and holds their descriptors until it is released and its journals are closed on the
/// I/O executor, so a cache made per request costs an opening per request. Concurrent fetches of
/// one key in one format share one fetcher call; writes of
/// one key take turns, so a value set while a fetch is under way is not overwritten by it, and a
/// layer that fails to read is a miss (logged), not a failure.
///
/// Several processes may share a cache's folders (a server's workers): a value set or removed in
/// one is what the others read next. Each change on disk counts in the folder's shared change
/// counters (`.haneke-changes`, mapped by every process), and a memory hit whose key's counter
/// moved since it was read is dropped and read from disk: one shared-memory load per memory hit.
public final class Cache<Value: DataConvertible & DataRepresentable & Sendable>: Sendable {
    /// The name of the format every cache has, used when no format is named (HanekeSwift's).
    public static var originalFormatName: String { "original" }

    /// The cache's name.
    public let name: String
    /// The folder of the formats' files, or `nil` for a cache built on a custom stack or one with
    /// no folder to use (no `XDG_CACHE_HOME`, no `HOME` and no home folder for the user), which
    /// keeps its values in memory only.
    public let directory: String?
    /// The clock that decides every layer's expiry and every value's age.
    public let clock: any StoreClock
    private let logger: Logger
    private let formats = Locked<[String: FormatStack<Value>]>([:])
    /// The fetcher calls of every format.
    private let fetchCounter = StatisticsCounter()

    /// Creates a cache with the default stack (memory, then LZ4-compressed files) for its original
    /// format.
    /// - Parameters:
    ///   - name: The cache's name, also its folder's name (made safe for a path).
    ///   - directory: The folder for the formats' files; `$XDG_CACHE_HOME/haneke/<name>` by default
    ///     (see ``directory`` for when there is none).
    ///   - originalFormat: The original format's settings; `Format(name: "original")` by default
    ///     (its name is always `"original"`).
    ///   - clock: The clock that decides every layer's expiry and every value's age; the system
    ///     clock by default (tests pass a `TestClock`).
    ///   - logger: Where disk failures are logged.
    public convenience init(
        name: String,
        directory: String? = nil,
        originalFormat: Format<Value>? = nil,
        clock: any StoreClock = SystemClock(),
        logger: Logger = Logger(label: "haneke.cache")
    ) {
        self.init(
            name: name, folder: directory ?? CacheDirectory.root(forCacheNamed: name), originalFormat: originalFormat,
            clock: clock, logger: logger
        )
    }

    /// A cache with the default stack in `folder`, or in memory only when there is none.
    init(
        name: String, folder: String?, originalFormat: Format<Value>? = nil, clock: any StoreClock = SystemClock(),
        logger: Logger = Logger(label: "haneke.cache")
    ) {
        self.name = name
        self.directory = folder
        self.clock = clock
        self.logger = logger
        if folder == nil {
            logger.warning(
                "No folder for the cache: neither XDG_CACHE_HOME nor HOME is set and the user has no home folder; its values are kept in memory only",
                metadata: ["cache": "\(name)"]
            )
        }
        var format = originalFormat ?? Format(name: Self.originalFormatName)
        format.name = Self.originalFormatName
        addFormat(format)
    }

    /// Creates a cache whose original format is a stack you built (any store of values keyed by
    /// strings: a chain, a Redis tier, a test double). Formats added later without a stack get no
    /// disk layer, since this cache has no folder.
    /// - Parameters:
    ///   - name: The cache's name.
    ///   - stack: The layers of the original format.
    ///   - clock: The clock that decides values' ages (give your layers the same one); the system
    ///     clock by default.
    ///   - logger: Where failures are logged.
    public init(
        name: String, stack: some Store<String, Value>, clock: any StoreClock = SystemClock(),
        logger: Logger = Logger(label: "haneke.cache")
    ) {
        self.name = name
        self.directory = nil
        self.clock = clock
        self.logger = logger
        addFormat(Format(name: Self.originalFormatName, diskCapacity: 0), stack: stack)
    }

    // MARK: - Formats

    /// Adds a format with the default stack: memory, then (unless its disk capacity is 0)
    /// LZ4-compressed files in its own folder. Replaces a format of the same name.
    /// - Parameter format: The format.
    public func addFormat(_ format: Format<Value>) {
        install(FormatStack.make(format, cacheDirectory: directory, clock: clock, logger: logger, fetcherCounter: fetchCounter))
    }

    /// Adds a format whose layers you built. Replaces a format of the same name.
    /// - Parameters:
    ///   - format: The format (its transform still applies; its capacities are the stack's business).
    ///   - stack: The format's layers.
    public func addFormat(_ format: Format<Value>, stack: some Store<String, Value>) {
        install(FormatStack(format: format, store: stack.eraseToAnyStore(), clock: clock, logger: logger, fetcherCounter: fetchCounter))
    }

    /// The names of the cache's formats, sorted.
    public var formatNames: [String] {
        formats.withLock { $0.keys.sorted() }
    }

    private func install(_ stack: FormatStack<Value>) {
        var stack = stack
        stack.startPreloading(logger: logger)
        let replaced = formats.withLock { $0.updateValue(stack, forKey: stack.format.name) }
        replaced?.preload?.cancel()
    }

    func stack(for formatName: String) throws -> FormatStack<Value> {
        guard let stack = formats.withLock({ $0[formatName] }) else {
            throw StoreError(
                .formatNotFound,
                "Cache '\(name)' has no format '\(formatName)'; its formats are \(formatNames.map { "'\($0)'" }.joined(separator: ", "))"
            )
        }
        return stack
    }

    // MARK: - Fetching

    /// The cached value for `key`, from memory or disk.
    /// - Parameters:
    ///   - key: The key.
    ///   - formatName: The format; the original by default.
    /// - Returns: The value.
    /// - Throws: `StoreError` with code `notFound` when no layer has it, `formatNotFound` for an
    ///   unknown format.
    public func fetch(key: String, formatName: String = Cache.originalFormatName) async throws -> Value {
        let stack = try stack(for: formatName)
        guard let value = try await stack.path.readFreshAsLayer(key) else {
            throw StoreError(.notFound, "Cache '\(name)' has no value for key \(Logger.describe(key)) in format '\(formatName)'")
        }
        return value
    }

    /// The value for `key`, from memory or disk, or else from `fetcher`: its value is transformed by
    /// the format (once, on `IOExecutor.compute`), cached in every layer and returned. Concurrent
    /// fetches of one key in one format share one fetcher call; a failure is not cached. A format
    /// that ``Format/derivesFromOriginal`` takes the original from the original format instead
    /// (which fetches it on a miss, once for concurrent misses in any format, and keeps it).
    /// - Parameters:
    ///   - key: The key.
    ///   - formatName: The format; the original by default.
    ///   - fetcher: Produces the original value on a miss.
    /// - Returns: The value.
    /// - Throws: The fetcher's error, a transform's error, `formatNotFound`, or `CancellationError`.
    public func fetch(
        key: String,
        formatName: String = Cache.originalFormatName,
        fetcher: some Fetcher<String, Value>
    ) async throws -> Value {
        let stack = try stack(for: formatName)
        let format = stack.format
        if format.derivesFromOriginal, format.name != Self.originalFormatName {
            // One flight in this format, whose original comes through the original format's own
            // flight: however many formats miss at once, the fetcher is called once.
            // A fetcher that judges its entries (HTTP) judges the derived ones too: they carry the
            // original's attributes, and are made again when it says so.
            let original = try self.stack(for: Self.originalFormatName).path
            return try await stack.path.fetch(key, from: DerivingFetcher(base: fetcher, transform: format.apply(to:)) { [self] key in
                let value = try await fetch(key: key, formatName: Self.originalFormatName, fetcher: fetcher)
                return (value, fetcher.judgesStoredEntries ? try await original.attributes(forKey: key) : EntryAttributes())
            })
        }
        guard format.transform != nil else {
            return try await stack.path.fetch(key, from: fetcher)
        }
        // The format's transform runs once, in the flight, on what the fetcher produced.
        return try await stack.path.fetch(key, from: TransformingFetcher(base: fetcher, transform: format.apply(to:)))
    }

    /// The value for `key`, from memory or disk, or else from a closure.
    /// - Parameters:
    ///   - key: The key.
    ///   - formatName: The format; the original by default.
    ///   - body: Produces the original value on a miss.
    /// - Returns: The value.
    /// - Throws: What `body` throws, `formatNotFound`, or `CancellationError`.
    public func fetch(
        key: String,
        formatName: String = Cache.originalFormatName,
        _ body: @escaping @Sendable (String) async throws -> Value
    ) async throws -> Value {
        try await fetch(key: key, formatName: formatName, fetcher: ClosureFetcher(body))
    }

    /// The value at `url`, by HTTP's caching rules (`NetworkFetcher`, a private cache): a fresh
    /// stored response is served without a request, a stale one is revalidated, `no-store` is
    /// never kept, and a response without caching headers is kept until evicted. It is cached under
    /// `url`'s absolute string, or with `headers` under ``NetworkFetcher/cacheKey(for:headers:)``,
    /// so that requests with other headers (another `Authorization`, another `Accept-Language`)
    /// never share a stored response. `fetch(key:)` with that key reads what the layers hold
    /// without these rules, a response kept to be revalidated included.
    /// - Parameters:
    ///   - url: An `http` or `https` URL.
    ///   - headers: The request's header fields (`Cache-Control: max-age=0` asks for a
    ///     revalidation, `Cache-Control: max-stale` accepts a stale response); none by default.
    ///     A redirect to another origin takes only the harmless ones along
    ///     (`NetworkFetcher.Configuration.redirectSafelistedHeaders`).
    ///   - formatName: The format; the original by default.
    /// - Returns: The value.
    /// - Throws: `invalidStatusCode` (with the status; a redirect the fetcher does not follow, such
    ///   as `https` to `http`, too), `missingData`, `decoding`, `unavailable`, `timeout`;
    ///   `invalidKey` for a header field that cannot be sent (a name that is not a token, a value
    ///   with `CR`, `LF`, `NUL` or another control character but a tab), before any request;
    ///   `notFound` for `only-if-cached` when nothing stored may answer.
    public func fetch(url: URL, headers: HTTPHeaderFields = HTTPHeaderFields(), formatName: String = Cache.originalFormatName) async throws -> Value {
        let fetcher = NetworkFetcher<Value>(url: url, headers: headers, clock: clock)
        let key = NetworkFetcher<Value>.cacheKey(for: url, headers: headers)
        if !headers.isEmpty, CacheControl(headers).onlyIfCached {
            // Decided here, before any flight: a request that may not reach the origin never
            // joins (or starts) one that does.
            guard let value = try await stack(for: formatName).path.storedValue(key, judgedBy: fetcher) else {
                throw StoreError(.notFound, "GET \(fetcher.redacted(url.absoluteString)) says only-if-cached, and no stored response may answer it")
            }
            return value
        }
        return try await fetch(key: key, formatName: formatName, fetcher: fetcher)
    }

    /// The value in the file at `path`, cached under the path (`DiskFetcher`).
    /// - Parameters:
    ///   - path: A file's path.
    ///   - formatName: The format; the original by default.
    /// - Returns: The value.
    /// - Throws: `notFound` when there is no such file, `decoding` when it does not decode, `io`.
    public func fetch(path: String, formatName: String = Cache.originalFormatName) async throws -> Value {
        try await fetch(key: path, formatName: formatName, fetcher: DiskFetcher<Value>(path: path))
    }

    // MARK: - Writing

    /// Caches `value` for `key` in a format, after the format's transform (run on the shared
    /// `IOExecutor`).
    /// - Parameters:
    ///   - value: The value.
    ///   - key: The key.
    ///   - formatName: The format; the original by default.
    ///   - timeToLive: How long this value lives, in memory and on disk alike; `nil` (the default)
    ///     for the format's own ``Format/timeToLive``.
    /// - Throws: `formatNotFound`, a transform's error, or the first layer's error (after every
    ///   layer was attempted): `unavailable` when the format's disk layer cannot be used.
    public func set(
        _ value: Value, forKey key: String, formatName: String = Cache.originalFormatName, timeToLive: Duration? = nil
    ) async throws {
        let stack = try stack(for: formatName)
        let transformed = try await stack.format.apply(to: value)
        guard let timeToLive else {
            try await stack.path.setValue(transformed, forKey: key)
            return
        }
        try await stack.path.setEntry(StoreEntry(value: transformed, expiresAt: expiry(after: timeToLive)), forKey: key)
    }

    /// Caches `value` for `key` only if the format has no unexpired value for it, atomically in each
    /// layer (the memory layer and the disk layer take the key's turn; processes sharing the folder
    /// agree through the disk layer, machines sharing a Redis tier through Redis).
    /// - Parameters:
    ///   - value: The value.
    ///   - key: The key.
    ///   - formatName: The format; the original by default.
    ///   - timeToLive: How long this value lives; `nil` (the default) for the format's own
    ///     ``Format/timeToLive``.
    /// - Returns: `.inserted`, or `.existing` with the entry already there (nothing was written).
    /// - Throws: `formatNotFound`, a transform's error, or a layer's error.
    @discardableResult
    public func add(
        _ value: Value, forKey key: String, formatName: String = Cache.originalFormatName, timeToLive: Duration? = nil
    ) async throws -> AddResult<Value> {
        let stack = try stack(for: formatName)
        let transformed = try await stack.format.apply(to: value)
        return try await stack.path.addEntry(StoreEntry(value: transformed, expiresAt: timeToLive.map(expiry(after:))), forKey: key)
    }

    /// When a value given `timeToLive` now expires, on the cache's clock.
    private func expiry(after timeToLive: Duration) -> Date {
        clock.now().addingTimeInterval(timeToLive.timeInterval)
    }

    /// The entry cached for `key` in a format — its value with its expiry and the time it was
    /// stored — or `nil` when no layer has an unexpired one. No fetcher is asked.
    /// - Parameters:
    ///   - key: The key.
    ///   - formatName: The format; the original by default.
    /// - Returns: The entry, or `nil`.
    /// - Throws: `formatNotFound`, or a layer's error.
    public func entry(forKey key: String, formatName: String = Cache.originalFormatName) async throws -> StoreEntry<Value>? {
        try await stack(for: formatName).path.entry(forKey: key)
    }

    /// Removes `key` from a format (other formats keep theirs).
    /// - Parameters:
    ///   - key: The key.
    ///   - formatName: The format; the original by default.
    /// - Throws: `formatNotFound`, or the first layer's error (after every layer was attempted):
    ///   `unavailable` when the format's disk layer cannot be used — the key is then gone from
    ///   memory, and the disk layer removes it before it serves anything once it opens.
    public func remove(key: String, formatName: String = Cache.originalFormatName) async throws {
        let stack = try stack(for: formatName)
        try await stack.path.removeValue(forKey: key)
    }

    /// Empties every format. The cache stays usable.
    /// - Throws: The first layer's error, after every format was emptied.
    public func removeAll() async throws {
        var firstError: (any Error)?
        for stack in formats.withLock({ Array($0.values) }) {
            do { try await stack.path.removeAll() } catch { firstError = firstError ?? error }
        }
        if let firstError { throw firstError }
    }

    /// Empties the memory layers only (the next reads come from disk): how a server sheds memory.
    public func removeAllFromMemory() {
        for stack in formats.withLock({ Array($0.values) }) { stack.memory?.removeAll() }
    }

    // MARK: - Sizes and statistics

    /// The bytes the formats' entry files take on disk (blocks, as `du` counts them), once their
    /// folders are open.
    public var size: Int {
        get async {
            var total = 0
            for stack in formats.withLock({ Array($0.values) }) {
                // Once each has indexed its files, on its executor: sizes may be system calls.
                for engine in await stack.openDiskEngines { total += await engine.totalSizeOnExecutor() }
            }
            return total
        }
    }

    /// The counters of a format's layers, then of the fetchers this cache called (all formats).
    /// - Parameter formatName: The format; the original by default.
    /// - Returns: One entry per layer, top first.
    /// - Throws: `formatNotFound`.
    public func layerStatistics(formatName: String = Cache.originalFormatName) throws -> [LayerStatistics] {
        try stack(for: formatName).store.layerStatistics + [LayerStatistics(name: "fetcher", statistics: fetchCounter.snapshot)]
    }

    /// The number of entries in each default layer of a format, top first, named as in
    /// ``layerStatistics(formatName:)``: `memory`, then the disk layers once they are open
    /// (`disk-small`, `disk`). The layers of a stack you built are not counted.
    /// - Parameter formatName: The format; the original by default.
    /// - Returns: One count per layer.
    /// - Throws: `formatNotFound`.
    public func layerCounts(formatName: String = Cache.originalFormatName) async throws -> [(layer: String, entries: Int)] {
        let stack = try stack(for: formatName)
        var counts: [(layer: String, entries: Int)] = []
        if let memory = stack.memory { counts.append((memory.name, memory.count)) }
        if let small = await stack.small?.base { counts.append((small.name, await small.countOnExecutor())) }
        if let disk = await stack.disk?.base { counts.append((disk.name, await disk.countOnExecutor())) }
        return counts
    }

    /// Bytes before and after LZ4 compression in a format's disk layer, or `nil` when it has none.
    /// - Parameter formatName: The format; the original by default.
    /// - Returns: The compression counters.
    /// - Throws: `formatNotFound`.
    public func compressionStatistics(formatName: String = Cache.originalFormatName) throws -> CompressionStatistics? {
        try stack(for: formatName).compressionStatistics?()
    }

    /// The disk layer of a format (for inspection, `trim`, paths), once it is open; `nil` when the
    /// format has none or its folder could not be used.
    /// - Parameter formatName: The format; the original by default.
    /// - Returns: The format's `FileStore`.
    /// - Throws: `formatNotFound`.
    public func diskStore(formatName: String = Cache.originalFormatName) async throws -> FileStore? {
        await (try stack(for: formatName)).disk?.base
    }

    /// Writes the disk layers' buffered recency records to their journals now (they are written
    /// within a second anyway, and at `exit()`), so that the LRU order and `.lastSession` preloading
    /// see every read and write made so far.
    /// - Throws: `StoreError` with code `io` when a journal cannot be written, after trying every format.
    public func flush() async throws {
        var firstError: (any Error)?
        for stack in formats.withLock({ Array($0.values) }) {
            for engine in await stack.openDiskEngines {
                do { try await engine.flushOnExecutor() } catch { firstError = firstError ?? error }
            }
        }
        if let firstError { throw firstError }
    }

    /// Waits until the background refreshes under way in a format have ended (for tests and a
    /// graceful shutdown).
    /// - Parameter formatName: The format; the original by default.
    /// - Throws: `formatNotFound`.
    public func waitForRefreshes(formatName: String = Cache.originalFormatName) async throws {
        try await stack(for: formatName).path.waitForRefreshes()
    }

    /// The counts of fresh and stale reads, background refreshes and stale values served on error
    /// in a format.
    /// - Parameter formatName: The format; the original by default.
    /// - Returns: The counts.
    /// - Throws: `formatNotFound`.
    public func freshnessStatistics(formatName: String = Cache.originalFormatName) throws -> FreshnessStatistics {
        try stack(for: formatName).path.freshnessStatistics
    }

    /// Makes the cache ready for the process to end, as a server's graceful shutdown does: waits for
    /// the background refreshes and preloading under way in every format, then writes the disk
    /// layers' buffered recency records to their journals (``flush()``). Values are on disk once
    /// their writes return; this keeps the LRU order and `.lastSession` preloading of the next run
    /// whole. The cache stays usable.
    /// - Throws: `StoreError` with code `io` when a journal cannot be written, after trying every format.
    public func shutdown() async throws {
        for stack in formats.withLock({ Array($0.values) }) { await stack.path.waitForRefreshes() }
        await waitForPreloading()
        try await flush()
    }

    /// Waits until every format has finished preloading (immediately for formats that do not preload).
    public func waitForPreloading() async {
        for stack in formats.withLock({ Array($0.values) }) {
            await stack.preload?.value
        }
    }
}
