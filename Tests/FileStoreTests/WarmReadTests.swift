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

    /// A read whose pages were dropped from the page cache tries on the caller's thread, finds a
    /// page missing, and is made on the executor. The kernel does not always let it find one: a
    /// read with `RWF_NOWAIT` starts the readahead it refuses to wait for, and on a fast disk and a
    /// busy machine that may finish before the kernel looks again (a C loop here saw 28 reads of
    /// 200 served so). Such a read was served without waiting, which is right; so the test drops
    /// and reads until one hops, and checks that every read was one of the two. Beside busy loops
    /// the reader is preempted in between nearly every time, so it runs alone, among the heavy
    /// suites (scripts/run-tests).
    @Test func aReadWhosePagesAreNotCachedGoesToTheExecutor() async throws {
        let clock = WhereClock(executor: executor)
        let store = try FileStore(directory: directory.path, configuration: .init(clock: clock), executor: executor)
        let value = Data(repeating: 9, count: 64 << 10)
        try await store.setValue(value, forKey: "cold")
        await store.waitUntilIndexed()
        var outcomes: [[Bool]] = []
        while outcomes.count < 50, outcomes.last != [false, true] {
            try PageCache.dropEntryFiles(in: directory.path)
            outcomes.append(try await clock.readings(during: {
                let read = try await store.value(forKey: "cold")
                #expect(read == value)
            }))
        }
        // The first try, on the caller's thread, finds a page not cached; the read is made on the
        // executor. Before that, any read was served on the caller's thread whole.
        #expect(outcomes.last == [false, true], "a read of pages not cached hopped: \(outcomes)")
        #expect(outcomes.dropLast().allSatisfy { $0 == [false] }, "the others were served without waiting: \(outcomes)")
        // Now its pages are cached again: no hop.
        let again = try await clock.readings(during: {
            let read = try await store.value(forKey: "cold")
            #expect(read == value)
        })
        #expect(again == [false])
    }

    /// The store keeps recency in its journal, so a read opens the entry with `O_NOATIME`: under
    /// `relatime` (the usual mount option) the first read after a write would otherwise update the
    /// file's access time, dirtying its inode — a slower read and a later write to the disk.
    @Test func aReadLeavesTheEntrysAccessTimeAlone() async throws {
        let store = try FileStore(directory: directory.path, configuration: .init(), executor: executor)
        try await store.setValue(Data(repeating: 3, count: 4_096), forKey: "noatime")
        await store.waitUntilIndexed()
        let entries = try FileManager.default.subpathsOfDirectory(atPath: directory.path)
            .filter { $0.split(separator: "/").count == 2 && $0.split(separator: "/")[0].count == 2 }
        let entry = try #require(entries.count == 1 ? directory.path + "/" + entries[0] : nil, "one entry file: \(entries)")
        // A file beside the store, read plainly, shows whether this file system updates access
        // times at all (it does not when mounted `noatime`, and then there is nothing to check).
        let control = try TemporaryDirectory(prefix: "atime-control")
        let plain = control.path + "/plain"
        try Data(repeating: 1, count: 16).write(to: URL(fileURLWithPath: plain))
        try Self.setAccessTimeToThePast(plain)
        _ = try Data(contentsOf: URL(fileURLWithPath: plain))
        let updatesAccessTimes = try Self.accessTime(plain) != Self.past

        try Self.setAccessTimeToThePast(entry)
        #expect(try await store.value(forKey: "noatime")?.count == 4_096, "the async read, on the caller's thread")
        #expect(try Self.accessTime(entry) == Self.past || !updatesAccessTimes, "the async read left the access time")
        try Self.setAccessTimeToThePast(entry)
        let synchronousRead: () throws -> Data? = { try store.value(forKey: "noatime") }
        #expect(try synchronousRead()?.count == 4_096, "the synchronous read")
        #expect(try Self.accessTime(entry) == Self.past || !updatesAccessTimes, "the synchronous read left the access time")
    }

    /// A day after the epoch: older than any file's modification time, so `relatime` updates it.
    static let past = 86_400

    /// `UTIME_OMIT`, which Swift does not import: leave that time as it is.
    static let utimeOmit = (1 << 30) - 2

    static func setAccessTimeToThePast(_ path: String) throws {
        var times = [timespec(tv_sec: past, tv_nsec: 0), timespec(tv_sec: 0, tv_nsec: utimeOmit)]
        guard utimensat(AT_FDCWD, path, &times, 0) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    }

    static func accessTime(_ path: String) throws -> Int {
        var info = stat()
        guard stat(path, &info) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        return info.st_atim.tv_sec
    }
}
