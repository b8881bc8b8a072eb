import Foundation
@testable import Haneke
import HanekeProtocols
import HanekeTesting
import Testing
import TestSupport

@Suite(.timeLimit(.minutes(1)), .tags(.disk))
struct CacheTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory(prefix: "cache")
    }

    func makeCache(name: String = "test", originalFormat: Format<String>? = nil) -> Cache<String> {
        Cache<String>(name: name, directory: directory.appending(name), originalFormat: originalFormat)
    }

    func layer(_ name: String, of cache: Cache<String>, format: String = Cache<String>.originalFormatName) throws -> StoreStatistics {
        try #require(try cache.layerStatistics(formatName: format).first { $0.name == name }).statistics
    }

    @Test func aMemoryHitIsServedWithoutTheDisk() async throws {
        let cache = makeCache()
        try await cache.set("value", forKey: "k")
        let diskReads = try layer("disk", of: cache).hits + layer("disk", of: cache).misses
        #expect(try await cache.fetch(key: "k") == "value")
        #expect(try layer("memory", of: cache).hits == 1)
        #expect(try layer("disk", of: cache).hits + layer("disk", of: cache).misses == diskReads)
    }

    @Test func aDiskHitAfterTheMemoryIsCleared() async throws {
        let cache = makeCache()
        try await cache.set("value", forKey: "k")
        cache.removeAllFromMemory()
        #expect(try await cache.fetch(key: "k") == "value")
        #expect(try layer("disk", of: cache).hits == 1)
        #expect(try await cache.fetch(key: "k") == "value")   // promoted back into memory
        #expect(try layer("memory", of: cache).hits == 1)
    }

    @Test func valuesSurviveANewCacheOnTheSameFolder() async throws {
        try await makeCache(name: "persisted").set("kept", forKey: "k")
        #expect(try await makeCache(name: "persisted").fetch(key: "k") == "kept")
    }

    /// `smallValueThreshold` sends small values (as compressed) to the format folder's database and
    /// large ones to files; both read back through a new cache on the folder.
    @Test func aFormatRoutesSmallValuesToItsDatabase() async throws {
        func makeRoutedCache() -> Cache<String> {
            var format = Format<String>(name: "routed")
            format.smallValueThreshold = 1_024
            let cache = makeCache(name: "routing")
            cache.addFormat(format)
            return cache
        }
        var random = SeededRandomNumberGenerator(seed: 16)
        // Random letters: LZ4 cannot shrink 20,000 of them under the threshold.
        let large = String((0..<20_000).map { _ in Character(UnicodeScalar(UInt8.random(in: 97...122, using: &random))) })
        do {
            let cache = makeRoutedCache()
            try await cache.set("small", forKey: "s", formatName: "routed")
            try await cache.set(large, forKey: "l", formatName: "routed")
            #expect(try cache.layerStatistics(formatName: "routed").map(\.name) == ["memory", "disk-small", "disk", "fetcher"])
            let files = try #require(try await cache.diskStore(formatName: "routed"))
            #expect(try await offThePool { files.keys() } == ["l"])
            try await cache.flush()
        }
        let folder = directory.appending("routing/routed")
        // Opening a database is blocking I/O: off the cooperative pool.
        #expect(try await offThePool { try SQLiteStore(directory: folder).entries().map(\.key) } == ["s"])
        let cache = makeRoutedCache()
        #expect(try await cache.fetch(key: "s", formatName: "routed") == "small")
        #expect(try await cache.fetch(key: "l", formatName: "routed") == large)
        #expect(await cache.size > 0)
    }

    @Test func aFormatWithDiskCapacityZeroPersistsNothing() async throws {
        let cache = makeCache()
        cache.addFormat(Format(name: "volatile", diskCapacity: 0))
        try await cache.set("in memory", forKey: "k", formatName: "volatile")
        #expect(try await cache.fetch(key: "k", formatName: "volatile") == "in memory")
        #expect(try await cache.diskStore(formatName: "volatile") == nil)
        #expect(!FileManager.default.fileExists(atPath: directory.appending("test/volatile")))
        #expect(try cache.layerStatistics(formatName: "volatile").map(\.name) == ["memory", "fetcher"])
    }

    @Test func removingFromOneFormatLeavesAnother() async throws {
        let cache = makeCache()
        cache.addFormat(Format(name: "other"))
        try await cache.set("a", forKey: "k")
        try await cache.set("b", forKey: "k", formatName: "other")
        try await cache.remove(key: "k")
        await #expect(throws: StoreError.self) { try await cache.fetch(key: "k") }
        #expect(try await cache.fetch(key: "k", formatName: "other") == "b")
    }

    @Test func anUnknownFormatIsFormatNotFound() async throws {
        let cache = makeCache()
        let error = await #expect(throws: StoreError.self) { try await cache.fetch(key: "k", formatName: "nope") }
        #expect(error?.code == .formatNotFound)
        #expect(error?.message.contains("'nope'") == true)
        #expect(error?.message.contains("'original'") == true)
        await #expect(throws: StoreError.self) { try await cache.set("v", forKey: "k", formatName: "nope") }
        await #expect(throws: StoreError.self) { try await cache.remove(key: "k", formatName: "nope") }
    }

    @Test func aMissWithoutAFetcherIsNotFound() async throws {
        let error = await #expect(throws: StoreError.self) { try await makeCache().fetch(key: "absent") }
        #expect(error?.code == .notFound)
    }

    @Test func removeAllThenSetThenFetchWorks() async throws {
        let cache = makeCache()
        cache.addFormat(Format(name: "other"))
        try await cache.set("a", forKey: "k")
        try await cache.set("b", forKey: "k", formatName: "other")
        try await cache.removeAll()
        await #expect(throws: StoreError.self) { try await cache.fetch(key: "k") }
        await #expect(throws: StoreError.self) { try await cache.fetch(key: "k", formatName: "other") }
        #expect(await cache.size == 0)
        try await cache.set("again", forKey: "k")
        #expect(try await cache.fetch(key: "k") == "again")
        #expect(await cache.size > 0)
    }

    @Test func aFetcherFillsEveryLayerAndIsNotAskedTwice() async throws {
        let cache = makeCache()
        let calls = Locked(0)
        let fetcher = ClosureFetcher<String, String> { key in
            calls.withLock { $0 += 1 }
            return "fetched \(key)"
        }
        #expect(try await cache.fetch(key: "k", fetcher: fetcher) == "fetched k")
        #expect(try await cache.fetch(key: "k", fetcher: fetcher) == "fetched k")
        cache.removeAllFromMemory()
        #expect(try await cache.fetch(key: "k", fetcher: fetcher) == "fetched k")
        #expect(calls.withLock { $0 } == 1)
        #expect(try layer("fetcher", of: cache).hits == 1)
    }

    @Test func theFormatTransformRunsOnceBeforeCachingAndOffTheCallersTask() async throws {
        let runs = Locked(0)
        let cache = makeCache()
        cache.addFormat(Format(name: "upper") { value in
            runs.withLock { $0 += 1 }
            return value.uppercased()
        })
        #expect(try await cache.fetch(key: "k", formatName: "upper") { _ in "shout" } == "SHOUT")
        #expect(try await cache.fetch(key: "k", formatName: "upper") { _ in "unused" } == "SHOUT")
        try await cache.set("quiet", forKey: "j", formatName: "upper")
        #expect(try await cache.fetch(key: "j", formatName: "upper") == "QUIET")
        #expect(runs.withLock { $0 } == 2)
        #expect(try await cache.fetch(key: "k") { _ in "plain" } == "plain")   // the original format is untouched
    }

    /// A transform may be long CPU work or block in a C library (an image resize): it runs on the
    /// compute executor's queue (not the disk's), never on a cooperative thread, for fetches and
    /// sets alike.
    @Test func theTransformRunsOnTheComputeExecutor() async throws {
        let onExecutor = Locked<[Bool]>([])
        let cache = makeCache()
        cache.addFormat(Format(name: "upper") { value in
            onExecutor.withLock { $0.append(IOExecutor.compute.isCurrent && !IOExecutor.shared.isCurrent) }
            return value.uppercased()
        })
        #expect(try await cache.fetch(key: "k", formatName: "upper") { _ in "fetched" } == "FETCHED")
        try await cache.set("set", forKey: "j", formatName: "upper")
        #expect(onExecutor.withLock { $0 } == [true, true])
        #expect(!IOExecutor.shared.isCurrent)
    }

    /// A warm read (in the cache's files, not in memory) of a small value whose file the kernel
    /// has cached is read, decompressed and decoded on the caller's thread, without a hop; a large
    /// one (over 64 KiB compressed) is decompressed and decoded in a job of the I/O executor. The
    /// fetch resumes once, with the value.
    @Test func aWarmReadDecodesALargeValueOnTheIOExecutor() async throws {
        let cache = Cache<ThreadNotingValue>(name: "noting", directory: directory.appending("noting"))
        // Incompressible, eight bytes a draw: a byte at a time from the system's generator (a
        // system call each) held a cooperative thread 310 ms in a run of .ci/run.
        var random = SeededRandomNumberGenerator(seed: 150)
        let large = Data((0..<150_000 / 8).flatMap { _ in withUnsafeBytes(of: random.next()) { Array($0) } }).base64EncodedString()
        try await cache.set(ThreadNotingValue(text: "warm"), forKey: "small")
        try await cache.set(ThreadNotingValue(text: large), forKey: "large")
        try await cache.flush()
        cache.removeAllFromMemory()
        ThreadNotingValue.decodedOnExecutor.withLock { $0.removeAll() }
        #expect(try await cache.fetch(key: "large").text == large)
        #expect(ThreadNotingValue.decodedOnExecutor.withLock { $0 } == [true])
        #expect(try await cache.fetch(key: "large").text == large, "from memory now")
        #expect(ThreadNotingValue.decodedOnExecutor.withLock { $0 } == [true])
        #expect(try await cache.fetch(key: "small").text == "warm")
        #expect(ThreadNotingValue.decodedOnExecutor.withLock { $0 } == [true, false], "read from the page cache, on the caller's thread")
    }

    @Test func theTransformRunsOnceForConcurrentFetchesOfOneKey() async throws {
        let runs = Locked(0)
        let cache = makeCache()
        cache.addFormat(Format(name: "upper") { value in
            runs.withLock { $0 += 1 }
            return value.uppercased()
        })
        try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<100 {
                group.addTask {
                    try await cache.fetch(key: "k", formatName: "upper") { _ in
                        try await Task.sleep(for: .milliseconds(20))
                        return "shout"
                    }
                }
            }
            for try await value in group { #expect(value == "SHOUT") }
        }
        #expect(runs.withLock { $0 } == 1)
    }

    /// A format that derives from the original takes its value from the original format, which
    /// calls the fetcher and keeps what it gave: formats that miss at once, or one after another,
    /// cost one fetcher call in all, and each transforms once.
    @Test func formatsThatDeriveFromTheOriginalShareOneFetcherCall() async throws {
        let fetches = Locked(0), transforms = Locked([String: Int]())
        let cache = makeCache()
        for name in ["upper", "suffixed"] {
            var format = Format<String>(name: name) { value in
                transforms.withLock { $0[name, default: 0] += 1 }
                return name == "upper" ? value.uppercased() : value + "!"
            }
            format.derivesFromOriginal = true
            cache.addFormat(format)
        }
        let fetcher = ClosureFetcher<String, String> { _ in
            fetches.withLock { $0 += 1 }
            return "shout"
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<20 {
                group.addTask { _ = try await cache.fetch(key: "k", formatName: index % 2 == 0 ? "upper" : "suffixed", fetcher: fetcher) }
            }
            try await group.waitForAll()
        }
        #expect(try await cache.fetch(key: "k", formatName: "upper", fetcher: fetcher) == "SHOUT")
        #expect(try await cache.fetch(key: "k", formatName: "suffixed", fetcher: fetcher) == "shout!")
        #expect(try await cache.fetch(key: "k") == "shout")   // the original is kept
        #expect(fetches.withLock { $0 } == 1)
        #expect(transforms.withLock { $0 } == ["upper": 1, "suffixed": 1])
    }

    @Test func aValueSetDuringAFetchWinsInEveryLayer() async throws {
        for round in 0..<30 {
            let cache = makeCache(name: "race\(round)")
            let fetched = Task {
                try await cache.fetch(key: "k") { _ in
                    await Task.yield()
                    return "fetched"
                }
            }
            await Task.yield()
            try await cache.set("set", forKey: "k")
            _ = try await fetched.value
            // Whatever the interleaving, memory and disk agree, and the last write (the set) is kept
            // unless the fetch's write-back came first (then the set replaced it).
            #expect(try await cache.fetch(key: "k") == "set", "round \(round)")
            cache.removeAllFromMemory()
            #expect(try await cache.fetch(key: "k") == "set", "round \(round): memory and disk disagree")
        }
    }

    @Test func aFailingTransformFailsTheFetchAndCachesNothing() async throws {
        let cache = makeCache()
        cache.addFormat(Format(name: "strict") { _ in throw StoreError(.encoding, "refused") })
        await #expect(throws: StoreError.self) { try await cache.fetch(key: "k", formatName: "strict") { _ in "v" } }
        await #expect(throws: StoreError.self) { try await cache.fetch(key: "k", formatName: "strict") }
        // The format's fetcher produced nothing it could cache: one error, no hit.
        #expect(try layer("fetcher", of: cache).errors == 1)
        #expect(try layer("fetcher", of: cache).hits == 0)
    }

    @Test func concurrentFetchesShareOneFetcherCall() async throws {
        let cache = makeCache()
        let calls = Locked(0)
        try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<200 {
                group.addTask {
                    try await cache.fetch(key: "k") { key in
                        calls.withLock { $0 += 1 }
                        try await Task.sleep(for: .milliseconds(50))
                        return "v"
                    }
                }
            }
            for try await value in group { #expect(value == "v") }
        }
        #expect(calls.withLock { $0 } == 1)
    }

    @Test func aCustomStackIsUsedAsIs() async throws {
        let recording = RecordingStore(wrapping: MemoryStore<String, String>())
        let cache = Cache<String>(name: "custom", stack: recording)
        try await cache.set("v", forKey: "k")
        #expect(try await cache.fetch(key: "k") == "v")
        #expect(recording.calls.map(\.key) == ["k", "k"])
        #expect(cache.directory == nil)
        #expect(await cache.size == 0)
    }

    @Test func aBrokenDiskIsAMissNotAFailure() async throws {
        let disk = FailingStore(wrapping: MemoryStore<String, String>(), failing: .read, name: "disk")
        let cache = Cache<String>(name: "degraded", stack: MemoryStore<String, String>().chained(to: disk))
        #expect(try await cache.fetch(key: "k") { _ in "from the source" } == "from the source")
    }

    /// The memory layer keeps working; the write the disk layer could not make is reported.
    @Test func anUnusableFolderLeavesAMemoryOnlyCacheThatSaysSo() async throws {
        let file = directory.appending("a file")
        _ = try await offThePool { FileManager.default.createFile(atPath: file, contents: Data()) }
        let cache = Cache<String>(name: "x", directory: file)   // a file, not a folder
        let error = await #expect(throws: StoreError.self) { try await cache.set("still works", forKey: "k") }
        #expect(error?.code == .unavailable)
        #expect(try await cache.fetch(key: "k") == "still works")
        #expect(try await cache.diskStore() == nil)
    }

    @Test func theCompressedDiskLayerReportsItsRatio() async throws {
        let cache = Cache<JSON>(name: "json", directory: directory.appending("json"))
        let document: JSON = ["items": .array((0..<200).map { ["id": .number(Double($0)), "name": "item", "tags": ["a", "b"]] })]
        try await cache.set(document, forKey: "doc")
        cache.removeAllFromMemory()
        #expect(try await cache.fetch(key: "doc") == document)
        let ratio = try #require(try cache.compressionStatistics()?.ratio)
        #expect(ratio > 3)
    }

    @Test func dataStringAndJSONCachesRoundTrip() async throws {
        let data = Cache<Data>(name: "data", directory: directory.appending("data"))
        let json = Cache<JSON>(name: "json", directory: directory.appending("json"))
        try await data.set(Data([0, 1, 2, 255]), forKey: "k")
        try await json.set(["nested": ["list": [1, 2, 3]]], forKey: "k")
        data.removeAllFromMemory()
        json.removeAllFromMemory()
        #expect(try await data.fetch(key: "k") == Data([0, 1, 2, 255]))
        #expect(try await json.fetch(key: "k")["nested"]?["list"]?.array?.count == 3)
    }

    @Test func sharedCachesAreReachable() async throws {
        let key = "haneke-test-\(UUID().uuidString)"
        try await Shared.dataCache.set(Data("d".utf8), forKey: key)
        try await Shared.stringCache.set("s", forKey: key)
        try await Shared.jsonCache.set(["j": true], forKey: key)
        #expect(try await Shared.dataCache.fetch(key: key) == Data("d".utf8))
        #expect(try await Shared.stringCache.fetch(key: key) == "s")
        #expect(try await Shared.jsonCache.fetch(key: key)["j"]?.bool == true)
        // In this process's own cache home: the tests never write to the real ~/.cache.
        #expect(Shared.jsonCache.directory == privateCacheHome + "/haneke/shared-json")
        #expect(ProcessInfo.processInfo.environment["XDG_CACHE_HOME"] == privateCacheHome)
        try await Shared.dataCache.remove(key: key)
        try await Shared.stringCache.remove(key: key)
        try await Shared.jsonCache.remove(key: key)
    }

    // MARK: - Folders

    @Test func theFolderFollowsXDGThenHome() {
        #expect(CacheDirectory.root(forCacheNamed: "c", environment: ["XDG_CACHE_HOME": "/x", "HOME": "/h"]) == "/x/haneke/c")
        #expect(CacheDirectory.root(forCacheNamed: "c", environment: ["HOME": "/h"]) == "/h/.cache/haneke/c")
        #expect(CacheDirectory.root(forCacheNamed: "c", environment: ["XDG_CACHE_HOME": "relative", "HOME": "/h"]) == "/h/.cache/haneke/c")
        #expect(CacheDirectory.root(forCacheNamed: "c", environment: ["HOME": "relative"], homeFromPasswordDatabase: { "/p" }) == "/p/.cache/haneke/c")
        #expect(CacheDirectory.root(forCacheNamed: "c", environment: [:], homeFromPasswordDatabase: { "/p" }) == "/p/.cache/haneke/c")
        // No home at all: no folder, and never a fixed name in a shared folder such as /tmp.
        #expect(CacheDirectory.root(forCacheNamed: "c", environment: [:], homeFromPasswordDatabase: { nil }) == nil)
        #expect(CacheDirectory.homeFolderOfEffectiveUser()?.hasPrefix("/") ?? true)
    }

    @Test func aCacheWithNoFolderKeepsItsValuesInMemoryOnly() async throws {
        let cache = Cache<String>(name: "homeless", folder: nil)
        #expect(cache.directory == nil)
        #expect(try await cache.diskStore() == nil)
        try await cache.set("kept", forKey: "k")
        #expect(try await cache.fetch(key: "k") == "kept")
        #expect(try cache.layerStatistics().map(\.name) == ["memory", "fetcher"])
    }

    @Test(arguments: [("", "%"), (".", "%2E"), ("..", "%2E%2E"), ("../etc", "..%2Fetc"), ("a b", "a%20b"), ("ok-name_1.x", "ok-name_1.x"), ("ü", "%C3%BC")])
    func namesBecomeSafePathComponents(name: String, component: String) {
        #expect(CacheDirectory.pathComponent(name) == component)
        #expect(!CacheDirectory.pathComponent(name).contains("/"))
    }

    @Test func formatsLiveInTheirOwnFolders() async throws {
        let cache = makeCache(name: "folders")
        cache.addFormat(Format(name: "../escape"))
        try await cache.set("v", forKey: "k", formatName: "../escape")
        #expect(FileManager.default.fileExists(atPath: directory.appending("folders/..%2Fescape")))
        #expect(cache.formatNames == ["../escape", "original"])
    }

    // MARK: - Preloading

    /// Writes `keys` into a cache named `name`, in order unless `width` lets several run at once.
    func fill(_ name: String, format: Format<String>, keys: [String], atOnce width: Int = 1) async throws {
        let cache = makeCache(name: name, originalFormat: format)
        try await forEach(keys, atOnce: width) { try await cache.set("value of \($0)", forKey: $0) }
    }

    @Test func preloadingAllFillsMemoryFromDisk() async throws {
        var format = Format<String>(name: "original")
        try await fill("all", format: format, keys: ["a", "b", "c"])
        format.preloadPolicy = .all
        let cache = makeCache(name: "all", originalFormat: format)
        await cache.waitForPreloading()
        let memory = try #require(try cache.stack(for: "original").memory)
        #expect(Set(memory.keysByRecency) == ["a", "b", "c"])
        #expect(try await cache.fetch(key: "b") == "value of b")
        #expect(try layer("memory", of: cache).hits == 1)
    }

    @Test func preloadingStopsWhenMemoryIsFull() async throws {
        var format = Format<String>(name: "original")
        try await fill("full", format: format, keys: (0..<10).map { "k\($0)" })
        format.preloadPolicy = .all
        format.memoryCountLimit = 4
        let cache = makeCache(name: "full", originalFormat: format)
        await cache.waitForPreloading()
        let memory = try #require(try cache.stack(for: "original").memory)
        #expect(memory.count == 4)
        #expect(Set(memory.keysByRecency) == ["k9", "k8", "k7", "k6"])   // the most recently used
    }

    @Test func preloadingTheLastSessionLoadsOnlyWhatItUsed() async throws {
        let clock = "lastSession"
        var format = Format<String>(name: "original")
        try await fill(clock, format: format, keys: ["old1", "old2"])          // session 1
        do {
            let session2 = makeCache(name: clock, originalFormat: format)       // session 2 uses "old2" and "new"
            _ = try await session2.fetch(key: "old2")
            try await session2.set("value of new", forKey: "new")
            // A session ends with its journal on disk: at exit, or here. Without this, session 3
            // could open the folder before session 2's last flush ran on the I/O executor (seen
            // once in six runs beside other suites).
            try await session2.flush()
        }
        format.preloadPolicy = .lastSession
        let session3 = makeCache(name: clock, originalFormat: format)
        await session3.waitForPreloading()
        let memory = try #require(try session3.stack(for: "original").memory)
        #expect(Set(memory.keysByRecency) == ["old2", "new"])
    }

    @Test func preloadingNeverBringsBackARemovedKey() async throws {
        var format = Format<String>(name: "original")
        let keys = (0..<300).map { "k\($0)" }
        try await fill("racing", format: format, keys: keys, atOnce: 8)
        format.preloadPolicy = .all
        format.memoryCountLimit = nil
        format.memoryCostLimit = nil
        let cache = makeCache(name: "racing", originalFormat: format)
        // Eight at a time (TestSupport's forEach): 900 operations in a row outlasted the time
        // limit beside a CPU hog, each hop waiting in line for the cooperative threads.
        try await forEach(keys.shuffled(), atOnce: 8) { try await cache.remove(key: $0) }
        await cache.waitForPreloading()
        try await forEach(keys, atOnce: 8) { key in
            await #expect(throws: StoreError.self, "\(key) came back") { try await cache.fetch(key: key) }
        }
    }

    @Test func noPreloadingLeavesMemoryEmpty() async throws {
        let format = Format<String>(name: "original")
        try await fill("none", format: format, keys: ["a"])
        let cache = makeCache(name: "none", originalFormat: format)
        await cache.waitForPreloading()
        #expect(try cache.stack(for: "original").memory?.count == 0)
    }

    // MARK: - Memory costs

    struct Article: Codable, Hashable, Sendable, DataConvertible, DataRepresentable {
        var title: String
        var body: String
    }

    /// A format's memory cost limit bounds the memory its values take, JSON and Codable values
    /// included (they used to cost 1 each: 200 values of 1 MiB "cost" 200 under a 64 MiB limit).
    @Test func theMemoryCostLimitBoundsJSONAndCodableValues() async throws {
        // Not String(repeating:count:) a million times: that is 0.2 s of CPU in a debug build.
        let megabyte = String(decoding: [UInt8](repeating: UInt8(ascii: "x"), count: 1 << 20), as: UTF8.self)

        var jsonFormat = Format<JSON>(name: Cache<JSON>.originalFormatName, diskCapacity: 0)
        jsonFormat.memoryCostLimit = 8 << 20
        let documents = Cache<JSON>(name: "costs-json", directory: directory.appending("costs-json"), originalFormat: jsonFormat)
        for i in 0..<40 { try await documents.set(["body": .string(megabyte), "n": .number(Double(i))], forKey: "\(i)") }
        let jsonMemory = try #require(try documents.layerStatistics().first { $0.name == "memory" })
        #expect(jsonMemory.statistics.evictions >= 32)

        var articleFormat = Format<Article>(name: Cache<Article>.originalFormatName, diskCapacity: 0)
        articleFormat.memoryCostLimit = 8 << 20
        let articles = Cache<Article>(name: "costs-codable", directory: directory.appending("costs-codable"), originalFormat: articleFormat)
        for i in 0..<40 {
            // A memory-only cache's set does not suspend, and each one encodes its megabyte to
            // count its cost: without a turn given back, the loop held a thread 275 ms in a run of .ci/run.
            await Task.yield()
            try await articles.set(Article(title: "\(i)", body: megabyte), forKey: "\(i)")
        }
        let articleMemory = try #require(try articles.layerStatistics().first { $0.name == "memory" })
        #expect(articleMemory.statistics.evictions >= 32)
        // What is left in memory fits the limit: at most 8 of the 1 MiB values answer from it.
        var found = 0
        for i in 0..<40 where (try? await articles.fetch(key: "\(i)")) != nil { found += 1 }
        #expect(found <= 8)
        #expect(found >= 6)
        print("limits: 40 values of 1 MiB under a memory cost limit of 8 MiB: JSON \(jsonMemory.statistics.evictions) evictions, Codable \(articleMemory.statistics.evictions) evictions, \(found) left in memory")
    }
}

/// A value that notes, each time it is decoded, whether that ran on the shared I/O executor.
struct ThreadNotingValue: DataConvertible, DataRepresentable, Sendable {
    static let decodedOnExecutor = Locked<[Bool]>([])
    var text: String

    static func convertFromData(_ data: Data) throws -> ThreadNotingValue {
        decodedOnExecutor.withLock { $0.append(IOExecutor.shared.isCurrent) }
        return ThreadNotingValue(text: String(decoding: data, as: UTF8.self))
    }

    func asData() throws -> Data { Data(text.utf8) }
}
