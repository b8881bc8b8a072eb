import Dispatch
import Foundation
import FileStore
import HanekeProtocols
import HanekeTesting
import Testing
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// An async read whose file the kernel has cached — its name in the lookup cache, its pages in the
/// page cache — runs on the caller's thread, without a hop to the I/O executor; one whose pages
/// are not cached goes to the executor, as every read did before. Each test holds the executor's
/// only worker, so a read that hops cannot finish until it is let go.
@Suite(.timeLimit(.minutes(1)), .tags(.disk))
struct WarmReadTests {
    let directory: TemporaryDirectory
    let executor = IOExecutor(width: 1)

    init() throws {
        directory = try TemporaryDirectory(prefix: "warm-reads")
    }

    /// Holds the executor's one worker until the returned semaphore is signalled.
    func holdTheExecutor() async throws -> DispatchSemaphore {
        let held = DispatchSemaphore(value: 0)
        let started = Locked(false)
        executor.submit {
            started.withLock { $0 = true }
            held.wait()
        }
        try await waitUntil(timeout: .seconds(30), "the executor held") { started.withLock { $0 } }
        return held
    }

    @Test func aCachedReadNeedsNoHop() async throws {
        let store = try FileStore(directory: directory.path, executor: executor)
        let value = Data(repeating: 7, count: 4_096)
        try await store.setValue(value, forKey: "warm")
        await store.waitUntilIndexed()
        let before = store.statistics.hits
        let held = try await holdTheExecutor()
        // Served while the executor's only worker is held: the read never went there.
        #expect(try await store.value(forKey: "warm") == value)
        #expect(try await store.entry(forKey: "warm")?.value == value)
        #expect(store.statistics.hits == before + 2, "counted as hits")
        held.signal()
    }

    @Test func aReadWhosePagesAreNotCachedGoesToTheExecutor() async throws {
        let store = try FileStore(directory: directory.path, executor: executor)
        let value = Data(repeating: 9, count: 64 << 10)
        try await store.setValue(value, forKey: "cold")
        await store.waitUntilIndexed()
        try dropFromThePageCache(key: "cold")
        let held = try await holdTheExecutor()
        let read = Task { try await store.value(forKey: "cold") }
        // The read waits for the executor (a job queued behind the one that holds it).
        try await waitUntil(timeout: .seconds(30), "the read queued on the executor") { executor.pendingCount == 1 }
        held.signal()
        #expect(try await read.value == value)
    }

    /// Writes the entry's pages to the disk and asks the kernel to drop them (clean pages go).
    func dropFromThePageCache(key: String) throws {
        let files = try FileManager.default.subpathsOfDirectory(atPath: directory.path).filter { $0.count == 35 && $0.hasPrefix($0.prefix(2) + "/") }
        try #require(files.count == 1, "\(files)")
        let fd = open(directory.path + "/" + files[0], O_RDONLY)
        try #require(fd >= 0)
        defer { close(fd) }
        fsync(fd)
        #expect(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0)
    }
}
