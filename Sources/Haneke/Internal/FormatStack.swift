import Foundation
import HanekeProtocols
import CompressedStore
import FileStore
import Logging
import MemoryStore
import SQLiteStore
import StoreFolders

/// One format of a cache and its layers, with typed handles on the default layers (for sizes,
/// statistics, preloading). The disk layer opens in the background (``OpeningStore``).
struct FormatStack<Value: DataConvertible & DataRepresentable & Sendable>: Sendable {
    var format: Format<Value>
    /// The format's layers behind the read-through path (single flights, write turns,
    /// write-backs). `Cache` passes the fetcher with each call; the path's own is never asked.
    var path: FetchingStore<AnyStore<String, Value>, ClosureFetcher<String, Value>>
    /// The memory layer, whose entries are stale once another process sharing the folder changed
    /// their key (``StampedMemory``).
    var memory: StampedMemory<Value>?
    var disk: OpeningStore<FileStore>?
    /// The database of small values, when the format routes them there (``Format/smallValueThreshold``).
    var small: OpeningStore<SQLiteStore>?
    /// The disk layer's LZ4 counters, when it compresses.
    var compressionStatistics: (@Sendable () -> CompressionStatistics)?
    /// Makes a stored LZ4 frame the value's bytes again, when the disk layer compresses.
    var decompress: (@Sendable (Data) throws -> Data)?
    var preload: Task<Void, Never>?

    /// The format's layers.
    var store: AnyStore<String, Value> { path.base }

    /// The format's disk layers that are open: the database of small values first, then the files.
    var openDiskEngines: [any DiskEngine] {
        get async { await Self.openDiskEngines(small: small, disk: disk) }
    }

    /// Those of `small` and `disk` that are open, once they have opened: `small` first.
    static func openDiskEngines(small: OpeningStore<SQLiteStore>?, disk: OpeningStore<FileStore>?) async -> [any DiskEngine] {
        var engines: [any DiskEngine] = []
        if let small = await small?.base { engines.append(small) }
        if let disk = await disk?.base { engines.append(disk) }
        return engines
    }

    init(format: Format<Value>, store: AnyStore<String, Value>, clock: any StoreClock, logger: Logger, fetcherCounter: StatisticsCounter) {
        self.format = format
        let name = format.name
        let noFetcher = ClosureFetcher<String, Value> { key in
            throw StoreError(.notFound, "No fetcher was given to fetch key \(Logger.describe(key)) in format '\(name)'")
        }
        self.path = FetchingStore(
            base: store, fetcher: noFetcher, freshness: format.freshness, clock: clock, logger: logger, fetcherCounter: fetcherCounter
        )
    }

    /// Memory, then LZ4-compressed files in `<cacheDirectory>/<format>` (no disk layer for a capacity
    /// of 0 or a cache with no folder; a folder that cannot be used keeps nothing — logged). The
    /// files' store opens on `executor`, so making the stack never waits for the disk.
    static func make(
        _ format: Format<Value>,
        cacheDirectory: String?,
        clock: any StoreClock,
        logger: Logger,
        fetcherCounter: StatisticsCounter,
        executor: IOExecutor = .shared
    ) -> FormatStack {
        let valueCost = format.memoryCost ?? memoryCost() ?? plainCost()
        // The counters of changes that the processes sharing the folder make: opened with the
        // folder, by whichever disk store opens first.
        let counters = ChangeCounters()
        let memory = StampedMemory(
            base: MemoryStore<String, Stamped<Value>>(
                countLimit: format.memoryCountLimit,
                costLimit: format.memoryCostLimit,
                name: "memory",
                clock: clock,
                cost: { valueCost($0.value) }
            ),
            counters: counters
        )
        func stack(over store: AnyStore<String, Value>) -> FormatStack {
            var stack = FormatStack(format: format, store: store, clock: clock, logger: logger, fetcherCounter: fetcherCounter)
            stack.memory = memory
            return stack
        }
        guard format.diskCapacity > 0, let cacheDirectory else { return stack(over: memory.eraseToAnyStore()) }
        let folder = cacheDirectory + "/" + FormatIdentity.folderName(of: format)
        FormatIdentity.emptyOtherVersions(of: format, in: cacheDirectory, keeping: folder, executor: executor, logger: logger)
        // With small values routed to a database, it and the files each have half the capacity.
        let smallCapacity = format.smallValueThreshold == nil ? 0 : format.diskCapacity / 2
        let fileCapacity = format.diskCapacity - smallCapacity
        let disk = OpeningStore(name: "disk", executor: executor, logger: logger, what: folder) {
            let store = try FileStore(directory: folder, configuration: .init(capacity: fileCapacity, clock: clock), name: "disk", logger: logger, executor: executor)
            try counters.open(in: SharedStoreFolder(path: folder, access: .owner))
            return store
        }
        let small = format.smallValueThreshold == nil ? nil : OpeningStore(name: "disk-small", executor: executor, logger: logger, what: folder) {
            let store = try SQLiteStore(
                directory: folder, configuration: .init(capacity: smallCapacity, clock: clock, pageCacheSize: format.databasePageCacheSize),
                name: "disk-small", logger: logger, executor: executor
            )
            try counters.open(in: SharedStoreFolder(path: folder, access: .owner))
            return store
        }
        // Generic, so each chain keeps its concrete type until it is erased.
        func chainMemory(over lower: some Store<String, Value>) -> AnyStore<String, Value> {
            CoherentChain(memory: memory, bottom: lower, logger: logger) {
                // The first attempts to open the disk stores, either of which opens the counters.
                _ = await small?.base
                _ = await disk.base
            }.eraseToAnyStore()
        }
        func over(_ bytes: some Store<String, Data>) -> FormatStack {
            guard format.compressesOnDisk else { return stack(over: chainMemory(over: bytes.coded(as: Value.self))) }
            let compressed = bytes.compressed()
            var result = stack(over: chainMemory(over: compressed.coded(as: Value.self)))
            result.compressionStatistics = { compressed.compressionStatistics }
            result.decompress = { try compressed.decompress($0) }
            return result
        }
        var result: FormatStack
        if let threshold = format.smallValueThreshold, let small {
            result = over(small.routingLargeValues(over: threshold, to: disk))
            result.small = small
        } else {
            result = over(disk)
        }
        result.disk = disk
        return result
    }

    /// What a value costs in the memory layer: its bytes for `Data` and `String`, its
    /// ``CostMeasurable/cacheCost`` when it declares one (`JSON`), and otherwise the size of its
    /// encoding — so that the format's cost limit bounds memory whatever the values are.
    static func memoryCost() -> (@Sendable (Value) -> Int)? {
        if Value.self == Data.self || Value.self == String.self || Value.self is any CostMeasurable.Type {
            return nil   // MemoryStore's own default
        }
        return { value in (try? value.asData().count) ?? 1 }
    }

    /// `MemoryStore`'s default cost of a value: its bytes for `Data`, `String` and `[UInt8]`, its
    /// ``CostMeasurable/cacheCost`` when it declares one, 1 otherwise (the memory layer keeps
    /// values with their tags, which that default does not know).
    static func plainCost() -> @Sendable (Value) -> Int {
        if Value.self == Data.self { return { unsafeBitCast($0, to: Data.self).count } }
        if Value.self == String.self { return { unsafeBitCast($0, to: String.self).utf8.count } }
        if Value.self == [UInt8].self { return { unsafeBitCast($0, to: [UInt8].self).count } }
        if Value.self is any CostMeasurable.Type { return { ($0 as? any CostMeasurable)?.cacheCost ?? 1 } }
        return { _ in 1 }
    }

    /// Starts loading values from disk into memory, as the format's preload policy says, once the
    /// disk layers are open: from each of them (``openDiskEngines``), most recently used first.
    mutating func startPreloading(logger: Logger) {
        guard format.preloadPolicy != .none, let memory, let disk else { return }
        let policy = format.preloadPolicy
        let format = self.format
        let decode: @Sendable (Data) throws -> Value
        if let decompress {
            decode = { frame in try Value.convertFromData(decompress(frame)) }
        } else {
            decode = { try Value.convertFromData($0) }
        }
        let writes = path.writes
        let small = self.small
        preload = Task(priority: .background) {
            let engines = await Self.openDiskEngines(small: small, disk: disk)
            guard !engines.isEmpty else { return }
            await Preloader.run(policy: policy, format: format, engines: engines, memory: memory, decode: decode, writes: writes, logger: logger)
        }
    }
}
