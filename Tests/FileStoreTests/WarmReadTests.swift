import Foundation
import FileStore
import HanekeProtocols
import HanekeTesting
import Testing
import TestSupport

/// An async read whose file the kernel has cached — its name in the lookup cache, its pages in the
/// page cache — runs on the caller's thread, without a hop to the I/O executor; one whose pages
/// are not cached goes to the executor, as every read did before. The store's clock
/// (`WhereClock`) notes where each of its readings was made: a read reads it once where it reads
/// the file.
@Suite(.timeLimit(.minutes(1)), .offThePool, .tags(.disk))
struct WarmReadTests {
    let directory: TemporaryDirectory
    let executor = IOExecutor(width: 1, label: "test.warm-reads")

    init() throws {
        directory = try TemporaryDirectory(prefix: "warm-reads")
    }

    @Test func aCachedReadNeedsNoHop() async throws {
        let clock = WhereClock(executor: executor)
        let store = try FileStore(directory: directory.path, configuration: .init(clock: clock), executor: executor)
        let value = Data(repeating: 7, count: 4_096)
        try await store.setValue(value, forKey: "warm")
        await store.waitUntilIndexed()
        let hits = store.statistics.hits
        let readings = try await clock.readings(during: {
            let read = try await store.value(forKey: "warm")
            let entry = try await store.entry(forKey: "warm")
            #expect(read == value && entry?.value == value)
        })
        #expect(readings == [false, false], "both reads on the caller's thread, none on the executor")
        #expect(store.statistics.hits == hits + 2, "counted as hits")
    }

    @Test func aReadWhosePagesAreNotCachedGoesToTheExecutor() async throws {
        let clock = WhereClock(executor: executor)
        let store = try FileStore(directory: directory.path, configuration: .init(clock: clock), executor: executor)
        let value = Data(repeating: 9, count: 64 << 10)
        try await store.setValue(value, forKey: "cold")
        await store.waitUntilIndexed()
        try PageCache.dropEntryFiles(in: directory.path)
        let readings = try await clock.readings(during: {
            let read = try await store.value(forKey: "cold")
            #expect(read == value)
        })
        // The first try, on the caller's thread, finds a page not cached; the read is made on the
        // executor.
        #expect(readings == [false, true])
        // Now its pages are cached again: no hop.
        let again = try await clock.readings(during: {
            let read = try await store.value(forKey: "cold")
            #expect(read == value)
        })
        #expect(again == [false])
    }
}
