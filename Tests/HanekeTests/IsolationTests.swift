import Dispatch
import Foundation
@testable import Haneke
import HanekeProtocols
import HanekeTesting
import Testing
import TestSupport

/// CPU work does not hold the disk: transforms run on `IOExecutor.compute`, disk reads on
/// `IOExecutor.shared`, so a read completes while every transform in flight is stuck.
@Suite(.timeLimit(.minutes(1)), .tags(.disk))
struct IsolationTests {
    @Test func aDiskReadCompletesWhileTransformsHoldEveryWorker() async throws {
        let directory = try TemporaryDirectory(prefix: "isolation")
        let cache = Cache<String>(name: "iso", directory: directory.appending("iso"))
        try await cache.set("small", forKey: "one")
        cache.removeAllFromMemory()

        // As many stuck transforms as the disk's executor has workers: on one shared executor,
        // they would take every worker and the read below would wait for them.
        let count = IOExecutor.shared.width
        let started = Locked(0)
        let release = DispatchSemaphore(value: 0)
        cache.addFormat(Format<String>(name: "slow", diskCapacity: 0) { value in
            started.withLock { $0 += 1 }
            release.wait()   // a job of an executor: a Dispatch thread, never a cooperative one
            return value.uppercased()
        })
        let transforms = (0..<count).map { index in
            Task { try await cache.fetch(key: "k\(index)", formatName: "slow") { _ in "v" } }
        }
        // Every transform is running or queued where transforms run.
        while started.withLock({ $0 }) + IOExecutor.compute.pendingCount < count {
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(try await cache.fetch(key: "one") == "small")
        #expect(try cache.layerStatistics().first { $0.name == "disk" }?.statistics.hits == 1)
        for _ in 0..<count { release.signal() }
        for transform in transforms { #expect(try await transform.value == "V") }
    }
}
