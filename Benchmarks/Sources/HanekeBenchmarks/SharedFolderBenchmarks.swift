import Foundation
import HanekeProtocols

#if canImport(Glibc)
import Glibc
#endif

/// Workload 10: several processes on one store folder, as a server's workers share a cache.
/// N writer processes (2 and 4) each run the same mix on 2,000 keys — 70 % sets of 2,000-byte
/// values, 30 % gets — in one folder of 4 MiB (2,000 values of 2,000 bytes do not fit: every set
/// evicts) and of 64 MiB (they fit): SQLiteStore and FileStore (`SharedWriter`, a child of this
/// package) against python-diskcache 5.6.3 with as many processes (`Peer/diskcache_writer.py`),
/// the three taking turns in each round, in an order that rotates. Every writer waits for a line on its input, so they start together; the
/// folder is sampled every 50 ms while they run.
///
/// - Operations per second: every writer's operations over the slowest writer's time.
/// - Set and get: the median over writers of each writer's p50 and p99.
/// - Disk: the largest `du` of the folder's files sampled (folders aside: a FileStore's 256 shard
///   folders take 1 MiB whatever it holds), over the capacity (the goal: at most 1.1).
enum SharedFolderBenchmarks {
    static let capacities = [4 << 20, 64 << 20]
    static let writerCounts = [2, 4]

    struct Outcome: Decodable {
        var seconds: Double
        var setP50: Double
        var setP99: Double
        var getP50: Double
        var getP99: Double
    }

    struct Run {
        var operationsPerSecond: Double
        var outcomes: [Outcome]
        var largestDiskUse: Int
    }

    static func run(_ scale: Scale) async throws -> [Row] {
        let python: String
        switch try await DiskcacheVenv.python(forWorkload: "10", name: "shared folder: python-diskcache") {
        case .failure(let skipped): return [skipped.row]
        case .success(let found): python = found
        }
        let scratch = RawFiles.scratchDirectory("shared")
        defer { RawFiles.removeDirectory(scratch) }
        let operations = scale.pick(20_000, smoke: 300)
        let rounds = min(scale.rounds, 3)
        let ours = Tools.sibling("SharedWriter")
        let peer = Tools.packageRoot + "/Peer/diskcache_writer.py"
        var rows: [Row] = []
        for capacity in capacities {
            for writers in writerCounts {
                let sides = ["sqlite", "files", "diskcache"]
                var runs: [String: [Run]] = [:]
                for round in 0..<rounds {
                    for turn in 0..<sides.count {
                        let side = sides[(turn + round) % sides.count]
                        let folder = scratch + "/\(capacity)-\(writers)-\(round)-\(side)"
                        let command = side == "diskcache" ? [python, peer] : [ours, side]
                        let run = try await IOExecutor.shared.run { try measure(command, folder: folder, capacity: capacity, writers: writers, operations: operations) }
                        runs[side, default: []].append(run)
                        RawFiles.removeDirectory(folder)
                    }
                }
                for engine in sides.dropLast() {
                    rows += self.rows(engine: engine, capacity: capacity, writers: writers, operations: operations, ours: runs[engine] ?? [], theirs: runs["diskcache"] ?? [])
                }
            }
        }
        return rows
    }

    /// Starts `writers` processes of `command` on `folder`, starts them together, samples the
    /// folder until they are done, and reads what each measured.
    static func measure(_ command: [String], folder: String, capacity: Int, writers: Int, operations: Int) throws -> Run {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        var children: [(process: Process, input: Pipe, output: Pipe)] = []
        for index in 0..<writers {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: command[0])
            process.arguments = Array(command.dropFirst()) + [folder, String(capacity), String(operations), String(index + 1)]
            let input = Pipe()
            let output = Pipe()
            process.standardInput = input
            process.standardOutput = output
            try process.run()
            children.append((process, input, output))
        }
        for child in children {
            guard let ready = readLine(child.output), ready == "ready" else {
                throw Tools.Failure(message: "\(command.last!) did not start in \(folder)")
            }
        }
        for child in children { try child.input.fileHandleForWriting.write(contentsOf: Data("go\n".utf8)) }
        var largest = 0
        while children.contains(where: { $0.process.isRunning }) {
            largest = max(largest, DiskUsage.bytes(folder, filesOnly: true))
            usleep(50_000)
        }
        largest = max(largest, DiskUsage.bytes(folder, filesOnly: true))
        var outcomes: [Outcome] = []
        for child in children {
            child.process.waitUntilExit()
            guard child.process.terminationStatus == 0, let line = readLine(child.output),
                  let outcome = try? JSONDecoder().decode(Outcome.self, from: Data(line.utf8)) else {
                throw Tools.Failure(message: "\(command.last!) failed in \(folder) (status \(child.process.terminationStatus))")
            }
            outcomes.append(outcome)
        }
        let slowest = outcomes.map(\.seconds).max() ?? 1
        return Run(operationsPerSecond: Double(writers * operations) / slowest, outcomes: outcomes, largestDiskUse: largest)
    }

    /// One line from a child's output, read byte by byte so that nothing after it is consumed.
    static func readLine(_ pipe: Pipe) -> String? {
        var bytes: [UInt8] = []
        var byte: UInt8 = 0
        while read(pipe.fileHandleForReading.fileDescriptor, &byte, 1) == 1 {
            if byte == UInt8(ascii: "\n") { return String(decoding: bytes, as: UTF8.self) }
            bytes.append(byte)
        }
        return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self)
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted.isEmpty ? .nan : sorted[sorted.count / 2]
    }

    static func rows(engine: String, capacity: Int, writers: Int, operations: Int, ours: [Run], theirs: [Run]) -> [Row] {
        let variant = "\(writers) processes, \(capacity >> 20) MiB, 2,000 B values"
        let note = "\(writers) × \(operations) operations per round (70 % sets), \(ours.count) rounds each, alternating"
        var rows: [Row] = []
        let mineRate = median(ours.map(\.operationsPerSecond))
        let theirRate = median(theirs.map(\.operationsPerSecond))
        rows.append(Row(
            workload: "10", name: "\(engine) shared folder: operations", variant: variant,
            subject: Figure(label: engine, value: mineRate, unit: "ops/s"),
            baseline: Figure(label: "diskcache", value: theirRate, unit: "ops/s"),
            ratio: mineRate / theirRate, goal: "report", met: nil, note: note
        ))
        let kinds: [(String, KeyPath<Outcome, Double>)] = [("set p50", \.setP50), ("set p99", \.setP99), ("get p50", \.getP50), ("get p99", \.getP99)]
        for (name, path) in kinds {
            let mine = median(ours.flatMap { $0.outcomes.map { $0[keyPath: path] } })
            let their = median(theirs.flatMap { $0.outcomes.map { $0[keyPath: path] } })
            rows.append(Row(
                workload: "10", name: "\(engine) shared folder: \(name)", variant: variant,
                subject: Figure(label: engine, value: mine, unit: "µs"),
                baseline: Figure(label: "diskcache", value: their, unit: "µs"),
                ratio: their / mine, goal: "report", met: nil, note: "median over writers and rounds of each writer's \(name)"
            ))
        }
        let mineDisk = Double(ours.map(\.largestDiskUse).max() ?? 0) / Double(capacity)
        let theirDisk = Double(theirs.map(\.largestDiskUse).max() ?? 0) / Double(capacity)
        rows.append(Row(
            workload: "10", name: "\(engine) shared folder: largest du / capacity", variant: variant,
            subject: Figure(label: engine, value: mineDisk, unit: "× capacity"),
            baseline: Figure(label: "diskcache", value: theirDisk, unit: "× capacity"),
            ratio: nil, goal: "≤ 1.1", met: mineDisk <= 1.1, note: "st_blocks × 512 of the folder's files (folders aside), sampled every 50 ms while the writers ran"
        ))
        return rows
    }
}
