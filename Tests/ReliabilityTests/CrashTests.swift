import CompressedStore
import FileStore
import Foundation
import HanekeProtocols
import HanekeTesting
import SQLiteStore
@testable import HanekeFaultWorker
import Testing
import TestSupport

/// A child writes and overwrites keys as fast as it can and is killed with SIGKILL at random moments;
/// after each kill the store is opened again and checked: every value is whole and belongs to its
/// key, no acknowledged write is lost, the index agrees with the files, and no temporary file is left.
/// The checks use the stores' synchronous API and open databases (opening one may `fsync`), so the
/// bodies run off the cooperative pool.
@Suite(.serialized, .timeLimit(.minutes(5)), .offThePool, .tags(.disk, .process, .slow))
struct CrashTests {
    struct Tally: CustomStringConvertible {
        var kills = 0
        var valuesChecked = 0
        var acknowledgedWrites = 0
        var wrongValues = 0
        var lostWrites = 0
        var leftoverTemporaryFiles = 0
        var problems: [String] = []
        var description: String {
            "\(kills) kills, \(acknowledgedWrites) acknowledged writes, \(valuesChecked) values checked, \(wrongValues) wrong, \(lostWrites) lost, \(leftoverTemporaryFiles) temporary files left \(problems.prefix(3))"
        }
    }

    /// `sqlite`: an SQLiteStore; `routed`: an SQLiteStore and a FileStore in one folder, values up
    /// to 16 KiB in the first (the worker's values are 200 bytes to 30 KB, so keys move between them).
    @Test(arguments: ["plain", "compressed", "sqlite", "routed"])
    func killedWritersNeverLeaveAPartialOrWrongValue(mode: String) async throws {
        let directory = try TemporaryDirectory(prefix: "crash")
        let worker = ChildProcess.binary("HanekeFaultWorker")
        var random = SeededRandomNumberGenerator(seed: ["plain": 1, "compressed": 2, "sqlite": 3, "routed": 4][mode]!)
        var acknowledged: [String: Int] = [:]
        // Routed: keys whose replacement the kill may have interrupted after it removed the old
        // value from the other store — a miss until the next acknowledged write of the key.
        var interrupted: Set<String> = []
        var tally = Tally()
        for run in 0..<30 {
            // Each run numbers its writes above the previous runs', so a newer value never looks older.
            let first = String((run + 1) * 10_000_000)
            let child = try await ChildProcess.start(worker, ["write-forever", directory.path, first, mode])
            // Once it has acknowledged its first write (on a busy machine, opening the stores may
            // take longer than the whole while below), let it write for a random while (5–80 ms),
            // then kill it mid-flight.
            let early = try await Self.linesUntilTheFirstAcknowledgement(of: child)
            try await Task.sleep(for: .microseconds(5_000 + random.next() % 75_000))
            await child.kill()
            tally.kills += 1
            let printed = early + String(decoding: try await child.readOutput(), as: UTF8.self)
            var last = Int(first)!
            for line in printed.split(separator: "\n", omittingEmptySubsequences: false).dropLast() {   // the last may be cut
                let parts = line.split(separator: " ")
                guard parts.count == 3, parts[0] == "ack", let sequence = Int(parts[2]) else { continue }
                acknowledged[String(parts[1]), default: 0] = max(acknowledged[String(parts[1])] ?? 0, sequence)
                interrupted.remove(String(parts[1]))
                last = sequence
                tally.acknowledgedWrites += 1
            }
            // The write after the last acknowledgement read, and the one after it (its
            // acknowledgement may be the line the kill cut).
            if mode == "routed" { interrupted.formUnion([last + 1, last + 2].map { "key-\($0 % 40)" }) }
            if mode == "sqlite" || mode == "routed" {
                try await checkDatabase(directory.path, routed: mode == "routed", acknowledged: acknowledged, interrupted: interrupted, tally: &tally)
            } else {
                try await check(directory.path, compressed: mode == "compressed", acknowledged: acknowledged, tally: &tally)
            }
        }
        #expect(tally.kills >= 30)
        #expect(tally.acknowledgedWrites > 0)
        #expect(tally.wrongValues == 0, "\(tally)")
        #expect(tally.lostWrites == 0, "\(tally)")
        #expect(tally.leftoverTemporaryFiles == 0, "\(tally)")
        print("crash harness (\(mode)): \(tally)")
    }

    /// Reads the worker's output until its first acknowledged write and returns the lines read,
    /// each with its newline. A worker that ends before it (it crashed) fails the test with its
    /// standard error; a test cancelled meanwhile (its time limit) kills the worker, which ends
    /// the read.
    static func linesUntilTheFirstAcknowledgement(of child: ChildProcess.Running) async throws -> String {
        var lines = ""
        try await withTaskCancellationHandler {
            while true {
                guard let line = try await child.readLine() else {
                    let status = await child.status()
                    let message = "the worker ended (status \(status)) before its first acknowledged write; it printed \(lines.debugDescription) and on standard error:\n\(await child.errorOutput())"
                    throw WorkerEndedEarly(description: message)
                }
                lines += line + "\n"
                if line.hasPrefix("ack ") { return }
            }
        } onCancel: {
            _ = kill(child.process.processIdentifier, SIGKILL)
        }
        return lines
    }

    struct WorkerEndedEarly: Error, CustomStringConvertible {
        var description: String
    }

    func readSynchronously(_ store: FileStore, _ key: String) throws -> Data? {
        try store.value(forKey: key)
    }

    func check(_ directory: String, compressed: Bool, acknowledged: [String: Int], tally: inout Tally) async throws {
        let store = try FileStore(directory: directory, configuration: .init(capacity: nil))
        // Indexing the folder, in the background after opening, removed the killed writer's
        // temporary files.
        await store.waitUntilIndexed()
        let temporaries = try FileManager.default.subpathsOfDirectory(atPath: directory).filter { $0.contains(".haneke-tmp.") }
        tally.leftoverTemporaryFiles += temporaries.count
        let view = store.compressed()
        for key in store.keys() {
            let value: Data? = compressed ? try await view.value(forKey: key) : try readSynchronously(store, key)
            tally.valuesChecked += 1
            guard let value, let parsed = WorkerValue.parse(value), parsed.key == key else {
                tally.wrongValues += 1
                tally.problems.append("\(key): not a whole value of its own")
                continue
            }
            if parsed.sequence < acknowledged[key] ?? 0 {
                tally.lostWrites += 1
                tally.problems.append("\(key): holds \(parsed.sequence), but \(acknowledged[key]!) was acknowledged")
            }
        }
        for key in acknowledged.keys where store.containsValue(forKey: key) == false {
            tally.lostWrites += 1
            tally.problems.append("\(key): acknowledged, then gone")
        }
        let files = try FileManager.default.subpathsOfDirectory(atPath: directory).filter {
            let parts = $0.split(separator: "/")
            return parts.count == 2 && parts[1].count == 32
        }
        if files.count != store.count { tally.problems.append("index \(store.count) entries, \(files.count) files") ; tally.wrongValues += 1 }
    }

    /// The check for the database: every row whole and its key's, no acknowledged write lost; for
    /// the routed pair also no key in both stores and no value in the wrong one for its size. A
    /// routed write removes the key from the other store before it writes (so a kill never leaves
    /// the key in both, or an older value to be read): a key whose write the kill interrupted may
    /// be missing — never older than acknowledged, never wrong.
    func checkDatabase(_ directory: String, routed: Bool, acknowledged: [String: Int], interrupted: Set<String>, tally: inout Tally) async throws {
        let small = try SQLiteStore(directory: directory, configuration: .init(capacity: nil))
        let files = routed ? try FileStore(directory: directory, configuration: .init(capacity: nil)) : nil
        await files?.waitUntilIndexed()
        let temporaries = try FileManager.default.subpathsOfDirectory(atPath: directory).filter { $0.contains(".haneke-tmp.") }
        tally.leftoverTemporaryFiles += temporaries.count
        let inDatabase = Set(try small.entries().map(\.key))
        let inFiles = Set(files?.keys() ?? [])
        for key in inDatabase.intersection(inFiles) {
            tally.wrongValues += 1
            tally.problems.append("\(key): in both stores")
        }
        for key in acknowledged.keys {
            var value = try await small.value(forKey: key)
            if value == nil { value = try await files?.value(forKey: key) }
            tally.valuesChecked += 1
            guard let value else {
                if interrupted.contains(key) { continue }
                tally.lostWrites += 1
                tally.problems.append("\(key): acknowledged, then gone")
                continue
            }
            guard let parsed = WorkerValue.parse(value), parsed.key == key else {
                tally.wrongValues += 1
                tally.problems.append("\(key): not a whole value of its own")
                continue
            }
            if parsed.sequence < acknowledged[key]! {
                tally.lostWrites += 1
                tally.problems.append("\(key): holds \(parsed.sequence), but \(acknowledged[key]!) was acknowledged")
            }
            if routed, (value.count <= 16 << 10) != inDatabase.contains(key) {
                tally.wrongValues += 1
                tally.problems.append("\(key): \(value.count) bytes in the wrong store")
            }
        }
    }
}
