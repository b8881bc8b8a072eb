import Foundation
import HanekeServer
import HanekeTesting
import Testing
import TestSupport

/// Two processes on one `KeyValueCache` folder, as a server's workers keep their sessions: a worker
/// (a child process) sets a session and reads it, so its memory layer holds it; this process then
/// removes it, overwrites it, or removes every session, and the worker's next read must see that
/// rather than what its memory layer held.
///
/// Before the memory layers checked the folder's change counters, the worker still read a removed
/// session 0.2 s and 3 s later: a logout in one worker left the session valid in the others.
@Suite(.serialized, .timeLimit(.minutes(2)), .offThePool, .tags(.disk, .process))
struct KeyValueCoherenceTests {
    struct Session: Codable, Sendable, Equatable {
        var user: String
    }

    /// The worker with a session `key` of `user` set and read (held in its memory layer).
    static func worker(in folder: String, holding key: String, of user: String) async throws -> ChildProcess.Running {
        let worker = try await ChildProcess.start(ChildProcess.binary("HanekeSessionWorker"), [folder])
        let first = try await worker.readLine()
        if first != "ready" {
            await worker.kill()
            Issue.record("the worker did not start: \(first ?? "(no output)") \(await worker.errorOutput())")
        }
        #expect(try await worker.ask("set \(key) \(user) 1800") == "ok")
        // The first read after its own write reads the disk; the second is a memory hit.
        #expect(try await worker.ask("get \(key)") == user)
        #expect(try await worker.ask("get \(key)") == user)
        return worker
    }

    @Test func aRemovalInOneProcessIsAMissInTheOther() async throws {
        let directory = try TemporaryDirectory(prefix: "kv-coherence")
        let folder = directory.appending("sessions")
        let worker = try await Self.worker(in: folder, holding: "s-1", of: "ada")
        let here = KeyValueCache(name: "sessions", directory: folder, configuration: .init(eviction: .never))
        #expect(try await here.get("s-1", as: Session.self) == Session(user: "ada"))

        try await here.remove("s-1")
        #expect(try await here.get("s-1", as: Session.self) == nil)
        #expect(try await worker.ask("get s-1") == "nil", "the worker still serves a session removed in another process")
        // And the worker's own writes still reach this process.
        #expect(try await worker.ask("set s-1 grace 1800") == "ok")
        #expect(try await here.get("s-1", as: Session.self) == Session(user: "grace"))
        #expect(try await worker.ask("get s-1") == "grace")
        await worker.kill()
    }

    @Test func anOverwriteInOneProcessIsReadInTheOther() async throws {
        let directory = try TemporaryDirectory(prefix: "kv-coherence")
        let folder = directory.appending("sessions")
        let worker = try await Self.worker(in: folder, holding: "s-2", of: "ada")
        let here = KeyValueCache(name: "sessions", directory: folder, configuration: .init(eviction: .never))

        try await here.set("s-2", to: Session(user: "grace"), timeToLive: .seconds(1_800))
        #expect(try await worker.ask("get s-2") == "grace", "the worker still serves the value another process replaced")
        // A value larger than the database's threshold: a file of its own.
        let large = String(repeating: "x", count: 40 << 10)
        #expect(try await worker.ask("set s-3 \(large) 1800") == "ok")
        #expect(try await worker.ask("get s-3") == large)
        try await here.set("s-3", to: Session(user: "edsger"), timeToLive: .seconds(1_800))
        #expect(try await worker.ask("get s-3") == "edsger")
        await worker.kill()
    }

    @Test func removingEveryValueInOneProcessEmptiesTheOther() async throws {
        let directory = try TemporaryDirectory(prefix: "kv-coherence")
        let folder = directory.appending("sessions")
        let worker = try await Self.worker(in: folder, holding: "s-4", of: "ada")
        let here = KeyValueCache(name: "sessions", directory: folder, configuration: .init(eviction: .never))

        try await here.removeAll()
        #expect(try await worker.ask("get s-4") == "nil", "the worker still serves a session after every one was removed")
        await worker.kill()
    }
}
