import Foundation
import HanekeTesting
import Haneke
@testable import SwapBackendsInTests
import Synchronization
import Testing

/// The service under test gets HanekeTesting's doubles instead of a disk: no files, no sleeping,
/// and faults on demand.
struct GreetingServiceTests {
    @Test func aGreetingIsComposedOnceThenServedFromTheCache() async throws {
        let disk = RecordingStore(wrapping: MemoryStore<String, Data>())
        let composed = Counter()
        let service = GreetingService(disk: disk) { name in
            composed.increment()
            return "Hi \(name)"
        }
        #expect(try await service.greeting(for: "Ada") == "Hi Ada")
        #expect(try await service.greeting(for: "Ada") == "Hi Ada")
        #expect(composed.value == 1)
        // The disk tier was read once (a miss: a chain reads a lower layer's whole entry, to promote
        // a hit with its lifetime) and written once.
        #expect(disk.calls == [.entry("Ada"), .setValue(Data("Hi Ada".utf8), "Ada")])
    }

    @Test func aBrokenDiskDoesNotBreakTheService() async throws {
        let disk = FailingStore(wrapping: MemoryStore<String, Data>(), failing: .all)
        let service = GreetingService(disk: disk) { "Hi \($0)" }
        #expect(try await service.greeting(for: "Grace") == "Hi Grace")
        #expect(disk.layerStatistics[0].statistics.errors >= 1)
    }

    @Test func theServiceRecoversWhenTheDiskDoes() async throws {
        let disk = FailingStore(wrapping: MemoryStore<String, Data>(), failing: [.read, .write])
        let service = GreetingService(disk: disk) { "Hi \($0)" }
        _ = try await service.greeting(for: "Linus")
        disk.failingOperations = []
        try await service.forget("Linus")
        _ = try await service.greeting(for: "Linus")
        #expect(disk.base.value(forKey: "Linus") == Data("Hi Linus".utf8))
    }

    @Test func theDiskTierConformsToStore() async throws {
        try await StoreConformanceSuite { FailingStore(wrapping: MemoryStore<String, Data>(), failing: []) }.run()
    }
}

final class Counter: Sendable {
    private let count = Mutex(0)
    var value: Int { count.withLock { $0 } }
    func increment() { count.withLock { $0 += 1 } }
}
