import FileStore
import Foundation
import HanekeProtocols
import HanekeTesting
import SQLiteStore
import Testing
import TestSupport

/// The async API of the disk stores runs their blocking work on their executor, whichever way it is
/// called: on the concrete type, or through `Store` (the requirement's witness). Each store also
/// has a synchronous method of the same name, which Swift could have chosen instead; the clock
/// each operation reads tells where it ran.
@Suite(.timeLimit(.minutes(1)), .offThePool, .tags(.disk))
struct BlockingEngineTests {
    /// A system clock that notes, while recording, whether each reading was made by a job of
    /// `executor`.
    final class WhereClock: StoreClock {
        let executor: IOExecutor
        private let readings = Locked<[Bool]?>(nil)

        init(executor: IOExecutor) { self.executor = executor }

        func now() -> Date {
            let onExecutor = executor.isCurrent
            readings.withLock { $0?.append(onExecutor) }
            return Date()
        }

        /// Whether each reading made while `body` ran was on the executor.
        func readings(during body: () async throws -> Void) async throws -> [Bool] {
            readings.withLock { $0 = [] }
            try await body()
            return readings.withLock { readings in
                defer { readings = nil }
                return readings ?? []
            }
        }
    }

    /// Reads and writes through `Store`'s requirements, as a chain or a `Cache` does.
    func writeAndRead<S: Store<String, Data>>(_ store: S) async throws -> Data? {
        try await store.setValue(Data("generic".utf8), forKey: "g")
        return try await store.value(forKey: "g")
    }

    func check(_ clock: WhereClock, _ what: Comment, _ body: () async throws -> Void) async throws {
        let readings = try await clock.readings(during: body)
        #expect(!readings.isEmpty, "\(what) read the clock")
        #expect(readings.allSatisfy { $0 }, "\(what) ran on the executor: \(readings)")
    }

    @Test func fileStoreRunsItsAsyncAPIOnItsExecutor() async throws {
        let directory = try TemporaryDirectory(prefix: "blocking-engine")
        let executor = IOExecutor(width: 2, label: "test.file")
        let clock = WhereClock(executor: executor)
        let store = try FileStore(directory: directory.appending("store"), configuration: .init(clock: clock), executor: executor)
        await store.waitUntilIndexed()
        try await check(clock, "setValue") { try await store.setValue(Data("a".utf8), forKey: "a") }
        try await check(clock, "value") {
            let value = try await store.value(forKey: "a")
            #expect(value == Data("a".utf8))
        }
        try await check(clock, "value(transformedBy:)") {
            let count = try await store.value(forKey: "a", transformedBy: { $0.count })
            #expect(count == 1)
        }
        try await check(clock, "Store's setValue and value") {
            let value = try await writeAndRead(store)
            #expect(value == Data("generic".utf8))
        }
    }

    @Test func sqliteStoreRunsItsAsyncAPIOnItsExecutor() async throws {
        let directory = try TemporaryDirectory(prefix: "blocking-engine")
        let executor = IOExecutor(width: 2, label: "test.sqlite")
        let clock = WhereClock(executor: executor)
        let store = try SQLiteStore(directory: directory.appending("store"), configuration: .init(clock: clock), executor: executor)
        try await check(clock, "setValue") { try await store.setValue(Data("a".utf8), forKey: "a") }
        try await check(clock, "value") {
            let value = try await store.value(forKey: "a")
            #expect(value == Data("a".utf8))
        }
        try await check(clock, "value(transformedBy:)") {
            let count = try await store.value(forKey: "a", transformedBy: { $0.count })
            #expect(count == 1)
        }
        try await check(clock, "Store's setValue and value") {
            let value = try await writeAndRead(store)
            #expect(value == Data("generic".utf8))
        }
    }
}
