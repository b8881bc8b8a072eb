import Dispatch
import Foundation
@testable import FileStore
import HanekeProtocols
import HanekeTesting
import Testing
import TestSupport

/// What opening and releasing stores costs the process: opening one costs a job of the indexes'
/// executor, not a thread, and a released store gives its descriptors back at once. Heavy suite
/// (scripts/run-tests): it holds every worker of the indexes' executor and counts the process's
/// descriptors, so it runs alone.
@Suite(.serialized, .timeLimit(.minutes(2)), .offThePool, .tags(.disk))
struct StoreLifetimeTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory(prefix: "store-lifetime")
    }

    /// Stores opened three times as many as the indexes' executor is wide, each held as its walk
    /// starts: only as many walks run as the executor is wide, the others wait as jobs (before,
    /// every store started a thread of its own, and all of them were walking at once).
    @Test func openingManyStoresQueuesTheirIndexesOnABoundedExecutor() async throws {
        let width = FileStore.indexingExecutor.width
        let count = 3 * width
        let inside = Locked(0)
        let mostInside = Locked(0)
        let proceed = DispatchSemaphore(value: 0)
        var configuration = FileStore.Configuration(capacity: 1 << 20)
        configuration.indexingHook = { step in
            guard step == .walking else { return }
            let now = inside.withLock { $0 += 1; return $0 }
            mostInside.withLock { $0 = max($0, now) }
            proceed.wait()
            inside.withLock { $0 -= 1 }
        }
        // The held walks are let go however the test ends: held, they would stop every later
        // store's index in the process.
        var released = false
        defer { if !released { for _ in 0..<count { proceed.signal() } } }
        let stores = try (0..<count).map { index in
            try FileStore(directory: directory.path + "/store-\(index)", configuration: configuration)
        }
        try await waitUntil(timeout: .seconds(60), "\(width) walks held") { inside.withLock { $0 } == width }
        #expect(FileStore.indexingExecutor.pendingCount == count - width, "the other walks wait as jobs, not threads")
        released = true
        for _ in 0..<count { proceed.signal() }
        for store in stores { await store.waitUntilIndexed() }
        #expect(mostInside.withLock { $0 } == width)
        #expect(stores.allSatisfy { $0.isIndexed })
    }

    /// Stores used once and released give back every descriptor they opened (the folder, its
    /// marker, the journal) without waiting for their journal's flush interval: before, the flush
    /// timer held each released store's journal, and through it the folder's descriptor, for an
    /// interval — an hour here — so a loop of caches made and released ran out of descriptors.
    @Test func releasedStoresCloseTheirDescriptorsWithoutWaitingForTheFlushInterval() async throws {
        var configuration = FileStore.Configuration(capacity: 1 << 20)
        configuration.recencyFlushInterval = .seconds(3_600)
        let before = Self.openDescriptors(under: directory.path)
        for index in 0..<50 {
            let store = try FileStore(directory: directory.path + "/store-\(index)", configuration: configuration)
            try await store.setValue(Data("value".utf8), forKey: "key")
            #expect(try await store.value(forKey: "key") == Data("value".utf8))
            await store.waitUntilIndexed()
            // A read after the index: its record waits in the journal for the flush timer.
            #expect(try await store.value(forKey: "key") == Data("value".utf8))
        }
        try await waitUntil(timeout: .seconds(60), "the descriptors back to \(before)") { Self.openDescriptors(under: directory.path) <= before }
        // The records were written when each store closed its journal, not lost.
        let reopened = try FileStore(directory: directory.path + "/store-0", configuration: configuration)
        await reopened.waitUntilIndexed()
        #expect(reopened.entriesUsedInLastSession().map { $0.key } == ["key"])
    }

    /// The process's descriptors of files and folders under `path`. (Only those: the test framework
    /// and the runtime open descriptors of their own at times of their choosing, a pipe in the
    /// middle of a test run alone.)
    static func openDescriptors(under path: String) -> Int {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return names.count { name in
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + name) else { return false }
            return target == path || target.hasPrefix(path + "/")
        }
    }
}
