import Foundation
import Formats
import HanekeProtocols
import HanekeTesting
import Logging
import MemoryStore
import Testing
import TestSupport

struct ChainedStoreTests {
    @Test func aHitInTheTopLayerDoesNotReachTheBottom() async throws {
        let top = MemoryStore<String, String>(name: "top")
        let bottom = RecordingStore(wrapping: MemoryStore<String, String>(name: "bottom"))
        top.setValue("hot", forKey: "k")
        let chain = top.chained(to: bottom)

        #expect(try await chain.value(forKey: "k") == "hot")
        #expect(bottom.calls.isEmpty)
    }

    @Test func aHitInTheBottomLayerIsPromotedIntoTheTop() async throws {
        let top = RecordingStore(wrapping: MemoryStore<String, String>(name: "top"))
        let bottom = MemoryStore<String, String>(name: "bottom")
        bottom.setValue("warm", forKey: "k")
        let chain = top.chained(to: bottom)

        #expect(try await chain.value(forKey: "k") == "warm")
        #expect(top.calls == [.value("k"), .setValue("warm", "k")])
        #expect(top.base.value(forKey: "k") == "warm")

        top.resetCalls()
        #expect(try await chain.value(forKey: "k") == "warm")
        #expect(top.calls == [.value("k")])
        #expect(bottom.statistics.hits == 1)
    }

    @Test func aMissInEveryLayerIsNil() async throws {
        let chain = MemoryStore<String, String>().chained(to: MemoryStore()).chained(to: MemoryStore())
        #expect(try await chain.value(forKey: "absent") == nil)
        #expect(chain.layerStatistics.map(\.statistics.misses) == [1, 1, 1])
    }

    @Test func writesGoThroughEveryLayerTopFirst() async throws {
        let order = Locked<[String]>([])
        let top = OrderStore(name: "top", order: order)
        let middle = OrderStore(name: "middle", order: order)
        let bottom = OrderStore(name: "bottom", order: order)
        let chain = top.chained(to: middle).chained(to: bottom)

        try await chain.setValue("v", forKey: "k")
        #expect(order.withLock { $0 } == ["top", "middle", "bottom"])
        for layer in [top, middle, bottom] { #expect(layer.memory.value(forKey: "k") == "v") }
    }

    @Test func removalsReachEveryLayer() async throws {
        let top = MemoryStore<String, String>()
        let bottom = MemoryStore<String, String>()
        let chain = top.chained(to: bottom)
        try await chain.setValue("v", forKey: "k")
        try await chain.setValue("w", forKey: "other")

        try await chain.removeValue(forKey: "k")
        #expect(top.value(forKey: "k") == nil)
        #expect(bottom.value(forKey: "k") == nil)
        #expect(bottom.value(forKey: "other") == "w")

        try await chain.removeAll()
        #expect(top.count == 0)
        #expect(bottom.count == 0)
    }

    @Test func aLayerThatThrowsOnReadIsCountedAndTreatedAsAMiss() async throws {
        let broken = FailingStore(wrapping: MemoryStore<String, String>(), failing: .read, name: "broken")
        let bottom = MemoryStore<String, String>(name: "bottom")
        bottom.setValue("from bottom", forKey: "k")
        let chain = broken.chained(to: bottom)

        #expect(try await chain.value(forKey: "k") == "from bottom")
        #expect(try await chain.value(forKey: "absent") == nil)
        let layers = Dictionary(uniqueKeysWithValues: chain.layerStatistics.map { ($0.name, $0.statistics) })
        #expect(layers["broken"]?.errors == 2)
        #expect(layers["bottom"]?.hits == 1)
        #expect(layers["bottom"]?.misses == 1)
    }

    @Test func aReadFailureIsLogged() async throws {
        let logs = LogCapture()
        let broken = FailingStore(wrapping: MemoryStore<String, String>(), failing: .read, name: "broken")
        let chain = broken.chained(to: MemoryStore<String, String>(), logger: logs.logger)

        _ = try await chain.value(forKey: "k")
        let entry = try #require(logs.entries.first)
        #expect(entry.level == .warning)
        #expect(entry.metadata["layer"] == "broken")
        #expect(entry.metadata["key"] == "k")
    }

    @Test func aWriteErrorIsReportedAfterEveryLayerWasAttempted() async throws {
        let broken = FailingStore(
            wrapping: MemoryStore<String, String>(),
            failing: .write,
            error: StoreError(.io, "disk full")
        )
        let bottom = MemoryStore<String, String>()
        let chain = broken.chained(to: bottom)

        let error = await #expect(throws: StoreError.self) { try await chain.setValue("v", forKey: "k") }
        #expect(error?.code == .io)
        #expect(bottom.value(forKey: "k") == "v")
    }

    @Test func theFirstOfSeveralWriteErrorsIsReported() async throws {
        let first = FailingStore(wrapping: MemoryStore<String, String>(), error: StoreError(.io, "first"))
        let second = FailingStore(wrapping: MemoryStore<String, String>(), error: StoreError(.unavailable, "second"))
        let chain = first.chained(to: second)

        let error = await #expect(throws: StoreError.self) { try await chain.removeValue(forKey: "k") }
        #expect(error?.message == "first")
        #expect(second.layerStatistics[0].statistics.errors == 1)
    }

    @Test func aFailedPromotionStillReturnsTheValue() async throws {
        let top = FailingStore(wrapping: MemoryStore<String, String>(), failing: .write)
        let bottom = MemoryStore<String, String>()
        bottom.setValue("v", forKey: "k")
        #expect(try await top.chained(to: bottom).value(forKey: "k") == "v")
    }

    @Test func bytesThatDoNotDecodeAreAMissAndAreRemoved() async throws {
        let top = MemoryStore<String, Int>()
        let bytes = MemoryStore<String, Data>(name: "bytes")
        bytes.setValue(Data("not json".utf8), forKey: "k")
        let chain = top.chained(to: bytes.coded(with: JSONCodec<Int>()))

        #expect(try await chain.value(forKey: "k") == nil)
        #expect(bytes.value(forKey: "k") == nil)
        #expect(chain.layerStatistics.last?.statistics.errors == 1)
    }

    /// An allocation that failed says nothing about the stored bytes: the read is a miss, and
    /// the entry stays (only `decoding` and `corrupted` remove it).
    @Test func aLayerOutOfMemoryIsAMissAndKeepsItsEntry() async throws {
        let bottom = OutOfMemoryStore()
        bottom.memory.setValue("v", forKey: "k")
        let chain = MemoryStore<String, String>().chained(to: bottom)

        #expect(try await chain.value(forKey: "k") == nil)
        #expect(bottom.memory.value(forKey: "k") == "v")
    }

    @Test func aPromotionDoesNotBringBackAValueRemovedMeanwhile() async throws {
        let top = MemoryStore<String, String>()
        let bottom = GatedStore<String>()
        try await bottom.setValue("old", forKey: "k")
        let chain = top.chained(to: bottom)

        let read = Task { try await chain.value(forKey: "k") }
        try await waitUntil { bottom.isHoldingARead }
        try await chain.removeValue(forKey: "k")
        bottom.open()

        #expect(try await read.value == "old")          // the read began before the removal
        #expect(top.value(forKey: "k") == nil)           // but "old" was not promoted after it
        #expect(try await chain.value(forKey: "k") == nil)
    }

    @Test func aPromotionDoesNotHideAValueWrittenMeanwhile() async throws {
        let top = MemoryStore<String, String>()
        let bottom = GatedStore<String>()
        try await bottom.setValue("old", forKey: "k")
        let chain = top.chained(to: bottom)

        let read = Task { try await chain.value(forKey: "k") }
        try await waitUntil { bottom.isHoldingARead }
        try await chain.setValue("new", forKey: "k")
        bottom.open()

        _ = try await read.value
        #expect(try await chain.value(forKey: "k") == "new")
    }

    @Test func concurrentWritesOfOneKeyLeaveTheLayersAgreeing() async throws {
        let top = MemoryStore<String, Int>()
        let bottom = YieldingStore()
        let chain = top.chained(to: bottom)
        var disagreements = 0
        for round in 0..<300 {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<3 {
                    group.addTask {
                        if writer == 2, round % 2 == 0 {
                            try await chain.removeValue(forKey: "k")
                        } else {
                            try await chain.setValue(round * 10 + writer, forKey: "k")
                        }
                    }
                }
                try await group.waitForAll()
            }
            if top.value(forKey: "k") != bottom.memory.value(forKey: "k") { disagreements += 1 }
        }
        #expect(disagreements == 0)
    }

    @Test func cancellationIsNotAMiss() async throws {
        let chain = CancellingStore().chained(to: MemoryStore<String, String>())
        await #expect(throws: CancellationError.self) { try await chain.value(forKey: "k") }
    }

    @Test func layersAreReportedTopFirst() {
        let chain = MemoryStore<String, String>(name: "a")
            .chained(to: MemoryStore(name: "b"))
            .chained(to: MemoryStore<String, String>(name: "c").chained(to: MemoryStore(name: "d")))
        #expect(chain.layerStatistics.map(\.name) == ["a", "b", "c", "d"])
    }

    @Test func twoMemoryStoresConformAsAChain() async throws {
        try await StoreConformanceSuite {
            MemoryStore<String, Data>().chained(to: MemoryStore<String, Data>())
        }.run()
    }

    @Test func aSmallTopLayerStillConforms() async throws {
        try await StoreConformanceSuite {
            MemoryStore<String, Data>(countLimit: 3).chained(to: MemoryStore<String, Data>())
        }.run()
    }
}

/// A store that records the order in which layers are written.
final class OrderStore: Store {
    let name: String
    let order: Locked<[String]>
    let memory = MemoryStore<String, String>()

    init(name: String, order: Locked<[String]>) {
        self.name = name
        self.order = order
    }

    func value(forKey key: String) async throws -> String? { memory.value(forKey: key) }
    func setValue(_ value: String, forKey key: String) async throws {
        order.withLock { $0.append(name) }
        memory.setValue(value, forKey: key)
    }
    func removeValue(forKey key: String) async throws { memory.removeValue(forKey: key) }
    func removeAll() async throws { memory.removeAll() }
}

/// A store whose reads fail for want of memory, over values it keeps.
final class OutOfMemoryStore: Store {
    let memory = MemoryStore<String, String>()
    func value(forKey key: String) async throws -> String? {
        throw StoreError(.outOfMemory, "could not allocate for key \(key)")
    }
    func setValue(_ value: String, forKey key: String) async throws { memory.setValue(value, forKey: key) }
    func removeValue(forKey key: String) async throws { memory.removeValue(forKey: key) }
    func removeAll() async throws { memory.removeAll() }
}

/// A store whose reads are cancelled.
struct CancellingStore: Store {
    func value(forKey key: String) async throws -> String? { throw CancellationError() }
    func setValue(_ value: String, forKey key: String) async throws {}
    func removeValue(forKey key: String) async throws {}
    func removeAll() async throws {}
}

/// A store that yields inside every write, so that concurrent writers interleave.
final class YieldingStore: Store {
    let memory = MemoryStore<String, Int>()
    func value(forKey key: String) async throws -> Int? { memory.value(forKey: key) }
    func setValue(_ value: Int, forKey key: String) async throws {
        await Task.yield()
        memory.setValue(value, forKey: key)
    }
    func removeValue(forKey key: String) async throws {
        await Task.yield()
        memory.removeValue(forKey: key)
    }
    func removeAll() async throws { memory.removeAll() }
}
