import CompressedStore
import FileStore
import Foundation
import HanekeProtocols
import HanekeTesting
import Logging
import MemoryStore
import NIOCore
@testable import RedisStore
import Testing
import TestSupport

/// Local layers kept coherent with a Redis tier, against a real redis-server: each "machine" is a
/// `CoherentStore` with its own layers and its own connections (to the server, as many clients as
/// machines in a fleet would be).
///
/// Waits are for events (a notice counted, coherence back), never for a time: a wait that never
/// ends fails by the suite's time limit.
@Suite(.timeLimit(.minutes(2)), .tags(.redis))
struct CoherentStoreTests {
    typealias Local = AnyStore<String, Data>

    /// One machine: its memory layer (and disk layer, when asked), in front of its own store of
    /// the shared server.
    struct Machine {
        let redis: RedisStore
        let memory: MemoryStore<String, Data>
        let disk: CompressedStore<FileStore>?
        let directory: TemporaryDirectory?
        let store: CoherentStore<Local, RedisStore>

        init(
            url: String, prefix: String, disk withDisk: Bool = false, clock: TestClock? = nil,
            maximumLocalLifetime: Duration = .seconds(60), sweepInterval: Duration = .milliseconds(100)
        ) throws {
            try self.init(
                configuration: try RedisStore.Configuration(url: url, keyPrefix: prefix), disk: withDisk, clock: clock,
                maximumLocalLifetime: maximumLocalLifetime, sweepInterval: sweepInterval
            )
        }

        /// A machine whose Redis tier has `configuration` (a cluster's, say), reconnecting soon
        /// after a connection closes; `pingInterval` also paces a cluster's asking for its map
        /// while a node's notices are lost.
        init(
            configuration: RedisStore.Configuration, disk withDisk: Bool = false, clock: TestClock? = nil,
            maximumLocalLifetime: Duration = .seconds(60), sweepInterval: Duration = .milliseconds(100),
            pingInterval: Duration = .seconds(30)
        ) throws {
            var configuration = configuration
            configuration.minimumReconnectDelay = .milliseconds(10)
            configuration.maximumReconnectDelay = .milliseconds(100)
            redis = RedisStore(configuration: configuration, logger: .quiet)
            let memory = MemoryStore<String, Data>(countLimit: 1_000, clock: clock ?? TestClock())
            self.memory = memory
            let local: Local
            if withDisk {
                let directory = try TemporaryDirectory()
                let disk = try FileStore(directory: directory.appending("disk"), logger: .quiet).compressed()
                self.directory = directory
                self.disk = disk
                local = memory.chained(to: disk, logger: .quiet).eraseToAnyStore()
            } else {
                directory = nil
                disk = nil
                local = memory.eraseToAnyStore()
            }
            store = CoherentStore(
                local: local, shared: redis, redis: redis, maximumLocalLifetime: maximumLocalLifetime,
                sweepInterval: sweepInterval, pingInterval: pingInterval, clock: clock ?? SystemClock(), logger: .quiet
            )
        }

        /// Whether any local layer holds `key`.
        func holdsLocally(_ key: String) async throws -> Bool {
            if memory.value(forKey: key) != nil { return true }
            return try await disk?.value(forKey: key) != nil
        }

        /// Suspends until notices arrive and the local layers have been emptied since `flushes`
        /// resets at least.
        func untilCoherent(afterFlushes flushes: Int = 1) async throws {
            while !(store.coherence.isCoherent && store.coherence.flushes >= flushes) {
                try await Task.sleep(for: .milliseconds(1))
            }
        }

        /// Suspends until at least `count` keys have been noticed.
        func untilNoticed(_ count: Int) async throws {
            while store.coherence.invalidations < count {
                try await Task.sleep(for: .milliseconds(1))
            }
        }
    }

    static func value(_ text: String) -> Data { Data(text.utf8) }

    @Test func aWriteOrRemovalOnOneMachineEmptiesTheOthersLocalLayers() async throws {
        let url = try await SharedRedis.url()
        let prefix = SharedRedis.uniquePrefix("coherent")
        let a = try Machine(url: url, prefix: prefix, disk: true)
        let b = try Machine(url: url, prefix: prefix)
        try await a.untilCoherent()
        try await b.untilCoherent()

        // A read that starts before the notice of a write arrives keeps nothing locally (the
        // notice could be of a later write): read once it has.
        try await b.store.setValue(Self.value("v1"), forKey: "k")
        try await a.untilNoticed(1)
        #expect(try await a.store.value(forKey: "k") == Self.value("v1"))
        #expect(try await a.holdsLocally("k"), "a read from Redis is kept locally")

        try await b.store.setValue(Self.value("v2"), forKey: "k")
        try await a.untilNoticed(2)
        #expect(try await !a.holdsLocally("k"), "memory and disk alike")
        #expect(try await a.store.value(forKey: "k") == Self.value("v2"))

        try await b.store.removeValue(forKey: "k")
        try await a.untilNoticed(3)
        #expect(try await !a.holdsLocally("k"))
        #expect(try await a.store.value(forKey: "k") == nil)
        #expect(b.store.coherence.invalidations == 0, "b's own writes are not noticed to b")
    }

    @Test func thisMachinesOwnWritesKeepItsLocalCopies() async throws {
        let url = try await SharedRedis.url()
        let prefix = SharedRedis.uniquePrefix("coherent")
        let a = try Machine(url: url, prefix: prefix)
        let b = try Machine(url: url, prefix: prefix)
        try await a.untilCoherent()
        try await b.untilCoherent()

        try await a.store.setValue(Self.value("mine"), forKey: "own")
        try await a.store.setEntry(StoreEntry(value: Self.value("mine too"), expiresAt: nil), forKey: "own entry")
        // Notices come in order: once b's write is noticed, a notice of a's own writes would
        // have come before it.
        try await b.store.setValue(Self.value("theirs"), forKey: "other")
        try await a.untilNoticed(1)
        #expect(a.store.coherence.invalidations == 1)
        #expect(a.memory.value(forKey: "own") == Self.value("mine"))
        #expect(a.memory.value(forKey: "own entry") == Self.value("mine too"))
    }

    /// A read whose reply from Redis is overtaken by a notice of the key keeps nothing locally:
    /// the reply is old.
    @Test func aReadOvertakenByANoticeKeepsNothingLocally() async throws {
        let url = try await SharedRedis.url()
        let prefix = SharedRedis.uniquePrefix("coherent")
        let writer = try Machine(url: url, prefix: prefix)
        let redis = RedisStore(configuration: try RedisStore.Configuration(url: url, keyPrefix: prefix), logger: .quiet)
        let held = HeldReads(redis)
        let memory = MemoryStore<String, Data>(countLimit: 100)
        let reader = CoherentStore(local: memory, shared: held, redis: redis, logger: .quiet)
        while !reader.coherence.isCoherent { try await Task.sleep(for: .milliseconds(1)) }

        try await writer.store.setValue(Self.value("old"), forKey: "k")
        while reader.coherence.invalidations < 1 { try await Task.sleep(for: .milliseconds(1)) }
        let read = Task { try await reader.value(forKey: "k") }
        try await held.untilHeld()
        try await writer.store.setValue(Self.value("new"), forKey: "k")
        while reader.coherence.invalidations < 2 { try await Task.sleep(for: .milliseconds(1)) }
        held.release()
        #expect(try await read.value == Self.value("old"), "the read returns what Redis answered")
        #expect(memory.value(forKey: "k") == nil, "but keeps nothing")
        #expect(try await reader.value(forKey: "k") == Self.value("new"))
        #expect(memory.value(forKey: "k") == Self.value("new"))
    }

    /// A coherent machine on the shared server whose local bound is 10 s of a test clock, once
    /// its notices arrive.
    func boundedMachine(sweepInterval: Duration) async throws -> (Machine, TestClock) {
        let clock = TestClock()
        let machine = try Machine(
            url: try await SharedRedis.url(), prefix: SharedRedis.uniquePrefix("coherent"), clock: clock,
            maximumLocalLifetime: .seconds(10), sweepInterval: sweepInterval
        )
        try await machine.untilCoherent()
        return (machine, clock)
    }

    /// A value leaves the local layers once kept as long as the bound: the sweep removes it, and
    /// `entry(forKey:)` and `attributes(forKey:)` never serve it past the bound (they report the
    /// bound as its expiry until then). A stale local copy stands for a notice that was lost.
    @Test func aValueIsKeptLocallyNoLongerThanTheBound() async throws {
        // The sweep runs when the test asks: its timer's interval is an hour.
        let (a, clock) = try await boundedMachine(sweepInterval: .seconds(3_600))
        for key in ["k", "j"] {
            try await a.redis.setValue(Self.value("\(key) in Redis"), forKey: key)
            #expect(try await a.store.value(forKey: key) == Self.value("\(key) in Redis"))
            a.memory.setValue(Self.value("stale \(key)"), forKey: key)
        }
        let bound = clock.now().addingTimeInterval(10)
        #expect(try await a.store.entry(forKey: "k")?.value == Self.value("stale k"), "within the bound, served locally")
        #expect(try await a.store.entry(forKey: "k")?.attributes.expiresAt == bound)
        #expect(try await a.store.attributes(forKey: "k")?.expiresAt == bound)

        clock.advance(by: .seconds(9))
        await a.store.removeExpiredLocalValues()
        #expect(a.memory.value(forKey: "k") == Self.value("stale k"), "still within the bound")
        #expect(a.store.coherence.expirations == 0)

        clock.advance(by: .seconds(2))
        #expect(try await a.store.attributes(forKey: "k")?.expiresAt == nil, "past the bound: Redis's attributes")
        #expect(try await a.store.entry(forKey: "j")?.value == Self.value("j in Redis"), "past the bound: Redis's value")
        await a.store.removeExpiredLocalValues()
        #expect(a.memory.value(forKey: "k") == nil, "removed by the sweep")
        #expect(a.memory.value(forKey: "j") == Self.value("j in Redis"), "kept again when read from Redis")
        #expect(a.store.coherence.expirations == 1)
        #expect(try await a.store.value(forKey: "k") == Self.value("k in Redis"), "and read from Redis again")
        #expect(a.memory.value(forKey: "k") == Self.value("k in Redis"))
    }

    /// A key kept again (written through the store) gets a new bound: the earlier one removes
    /// nothing.
    @Test func aValueKeptAgainHasANewBound() async throws {
        let (a, clock) = try await boundedMachine(sweepInterval: .seconds(3_600))
        try await a.store.setValue(Self.value("first"), forKey: "k")
        clock.advance(by: .seconds(6))
        try await a.store.setValue(Self.value("second"), forKey: "k")
        clock.advance(by: .seconds(5))
        await a.store.removeExpiredLocalValues()
        #expect(a.memory.value(forKey: "k") == Self.value("second"), "the first bound has passed, the second has not")
        clock.advance(by: .seconds(5))
        await a.store.removeExpiredLocalValues()
        #expect(a.memory.value(forKey: "k") == nil)
        #expect(a.store.coherence.expirations == 1)
    }

    /// The sweep runs by itself, every `sweepInterval`.
    @Test func theSweepRunsByItself() async throws {
        let (a, clock) = try await boundedMachine(sweepInterval: .milliseconds(10))
        try await a.store.setValue(Self.value("v"), forKey: "k")
        #expect(a.memory.value(forKey: "k") == Self.value("v"))
        clock.advance(by: .seconds(11))
        try await waitUntil("the sweep removed the value") { a.memory.value(forKey: "k") == nil }
        #expect(a.store.coherence.expirations == 1)
    }

    /// Deadlines come out in order, once each; a key kept again many times is one deadline (the
    /// superseded ones are dropped rather than kept in the queue).
    @Test func localDeadlinesComeOutInOrderOnceEach() {
        var deadlines = LocalDeadlines()
        for second in 0..<100 { deadlines.keep("key \(second)", until: Double(second)) }
        for round in 0..<5_000 { deadlines.keep("hot", until: 100 + Double(round) / 1_000) }
        #expect(deadlines.count == 101)
        #expect(deadlines.takeDue(at: 49.5) == (0..<50).map { "key \($0)" })
        #expect(deadlines.deadline(of: "key 49") == nil)
        #expect(deadlines.deadline(of: "key 50") == 50)
        #expect(deadlines.takeDue(at: 104) == (50..<100).map { "key \($0)" })
        #expect(deadlines.deadline(of: "hot") == 100 + Double(4_999) / 1_000)
        #expect(deadlines.takeDue(at: 105) == ["hot"])
        #expect(deadlines.count == 0)
        #expect(deadlines.takeDue(at: 1_000).isEmpty)
    }

    /// With the notices' connection or the tracking connection killed, the local layers are
    /// emptied; what another machine wrote meanwhile is what every later read returns.
    @Test(.tags(.process), arguments: [false, true])
    func nothingStaleIsServedAfterAConnectionIsKilledAndRestored(killingTheWriter: Bool) async throws {
        let server = try await RedisTestServer()
        try await withServer(server, shutdown: { await $0.stop() }) { server in
            let a = try Machine(url: server.url, prefix: "k:", disk: true)
            let b = RedisStore(configuration: try RedisStore.Configuration(url: server.url, keyPrefix: "k:"), logger: .quiet)
            try await a.untilCoherent()
            try await a.store.setValue(Self.value("v1"), forKey: "k")
            #expect(try await a.holdsLocally("k"))
            let flushes = a.store.coherence.flushes

            let victim: String
            if killingTheWriter {
                let writer = try #require(a.redis.tracking.withLock { $0 }?.writer(at: nil))
                let reply = try await RedisConnectionPool.value(of: writer.send(.command("CLIENT", "ID"), timeout: .seconds(30)))
                guard case .integer(let id) = reply else { throw StoreError(.io, "CLIENT ID answered \(reply)") }
                victim = String(id)
            } else {
                let reply = try await b.command("CLIENT", "LIST", "TYPE", "pubsub")
                let line = try #require(reply.text?.split(separator: "\n").first)
                victim = String(try #require(line.split(separator: " ").first { $0.hasPrefix("id=") }).dropFirst(3))
            }
            _ = try await b.command("CLIENT", "KILL", "ID", victim)
            // Written while a may not know yet that its notices stopped.
            try await b.setValue(Self.value("v2"), forKey: "k")
            try await a.untilCoherent(afterFlushes: flushes + 2)

            #expect(try await !a.holdsLocally("k") || a.memory.value(forKey: "k") == Self.value("v2"))
            var stale = 0
            for _ in 0..<10_000 where try await a.store.value(forKey: "k") != Self.value("v2") {
                stale += 1
            }
            #expect(stale == 0)
            #expect(a.memory.value(forKey: "k") == Self.value("v2"), "kept locally again")
        }
    }

    /// Two processes, each with memory and disk tiers kept coherent with the shared server: every
    /// write of one leaves the other's tiers, and after a removal the other reads nothing stale.
    @Test(.tags(.process, .disk)) func aWriteInOneProcessLeavesTheOthersTiers() async throws {
        let url = try await SharedRedis.url()
        let prefix = SharedRedis.uniquePrefix("processes")
        let a = try Machine(url: url, prefix: prefix)
        try await a.untilCoherent()
        try await a.store.setValue(Self.value("v0"), forKey: "k")
        let folder = try TemporaryDirectory()
        let rounds = 200
        let peer = try await ChildProcess.start(ChildProcess.binary("RedisStorePeer"), ["coherent", url, prefix, folder.appending("disk"), String(rounds)])
        func line() async throws -> [Substring] {
            guard let line = try await peer.readLine() else {
                throw StoreError(.io, "RedisStorePeer ended: \(await peer.errorOutput())")
            }
            return line.split(separator: " ")
        }
        #expect(try await line() == ["holding", "0"])
        var latencies: [Double] = []
        for round in 1...rounds {
            try await a.store.setValue(Self.value("v\(round)"), forKey: "k")
            let written = monotonicNanoseconds()
            let gone = try await line()
            try #require(gone.count == 3 && gone[0] == "gone" && gone[1] == "\(round)", "\(gone)")
            latencies.append(Double(Int64(UInt64(gone[2])!) - Int64(written)) / 1_000)
            #expect(try await line() == ["holding", "\(round)"])
        }
        try await a.store.removeValue(forKey: "k")
        #expect(try await line() == ["stale", "0"])
        #expect(try await line() == ["noticed", "\(rounds + 1)"])
        #expect(await peer.status() == 0)
        latencies.sort()
        // Not asserted (a test beside a CPU hog must pass); `make bench` (workload RC) has the goal.
        print("coherence between two processes: \(rounds) writes, the other's tiers emptied p50 \(latencies[rounds / 2]) µs, p99 \(latencies[rounds * 99 / 100]) µs after the write returned")
    }

    @Test(.tags(.process)) func aFlushedDatabaseEmptiesTheLocalLayers() async throws {
        let server = try await RedisTestServer()
        try await withServer(server, shutdown: { await $0.stop() }) { server in
            let a = try Machine(url: server.url, prefix: "k:", disk: true)
            try await a.untilCoherent()
            try await a.store.setValue(Self.value("v"), forKey: "k")
            let flushes = a.store.coherence.flushes
            _ = try await a.redis.command("FLUSHDB")
            try await a.untilCoherent(afterFlushes: flushes + 1)
            #expect(try await !a.holdsLocally("k"))
            #expect(try await a.store.value(forKey: "k") == nil)
        }
    }
}

/// The monotonic clock's time in nanoseconds, as RedisStorePeer reads it.
func monotonicNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}

/// A store over a `RedisStore` whose first read, once Redis has answered, waits until the test
/// lets it go: a reply that a notice overtakes, which no real server can be made to send on cue.
/// Later reads pass.
final class HeldReads: Store, Sendable {
    typealias Key = String
    typealias Value = Data

    private let redis: RedisStore
    private let state = Locked<(held: CheckedContinuation<Void, Never>?, watcher: CheckedContinuation<Void, Never>?)>((nil, nil))
    private let holding = Locked(true)

    init(_ redis: RedisStore) { self.redis = redis }

    func entry(forKey key: String) async throws -> StoreEntry<Data>? {
        let entry = try await redis.entry(forKey: key)
        guard holding.withLock({ holding in defer { holding = false }; return holding }) else { return entry }
        await withCheckedContinuation { continuation in
            let watcher = state.withLock { state in
                state.held = continuation
                defer { state.watcher = nil }
                return state.watcher
            }
            watcher?.resume()
        }
        return entry
    }

    /// Suspends until a read has its reply and waits.
    func untilHeld() async throws {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state in
                if state.held != nil { return true }
                state.watcher = continuation
                return false
            }
            if ready { continuation.resume() }
        }
    }

    /// Lets the waiting read go.
    func release() {
        state.withLock { state in defer { state.held = nil }; return state.held }?.resume()
    }

    func value(forKey key: String) async throws -> Data? { try await entry(forKey: key)?.value }
    func setValue(_ value: Data, forKey key: String) async throws { try await redis.setValue(value, forKey: key) }
    func removeValue(forKey key: String) async throws { try await redis.removeValue(forKey: key) }
    func removeAll() async throws { try await redis.removeAll() }
}
