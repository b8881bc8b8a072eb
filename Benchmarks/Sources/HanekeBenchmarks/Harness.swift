import Foundation

/// One line of the results table: a figure of the library beside a baseline measured in the same
/// run, interleaved with it, and their ratio.
struct Row: Codable, Sendable {
    var workload: String
    var name: String
    var variant: String
    var subject: Figure
    var baseline: Figure?
    /// `subject / baseline` for rates, `baseline / subject` for times: above 1 means faster.
    var ratio: Double?
    var goal: String
    var met: Bool?
    var note: String?
}

/// A measured quantity.
struct Figure: Codable, Sendable {
    var label: String
    var value: Double
    var unit: String

    var formatted: String {
        switch unit {
        case "ops/s": Self.compact(value) + " ops/s"
        case "MB/s": String(format: "%.0f MB/s", value)
        case "µs": value < 10 ? String(format: "%.2f µs", value) : String(format: "%.0f µs", value)
        case "ms": String(format: "%.1f ms", value)
        case "s": String(format: "%.3f s", value)
        case "calls": String(format: "%.0f calls", value)
        default: String(format: "%.3g %@", value, unit)
        }
    }

    static func compact(_ value: Double) -> String {
        switch value {
        case 1e6...: String(format: "%.2fM", value / 1e6)
        case 1e3...: String(format: "%.1fk", value / 1e3)
        default: String(format: "%.0f", value)
        }
    }
}

/// How much work a run does: `--smoke` proves every benchmark still runs, in seconds.
struct Scale: Sendable {
    var smoke: Bool
    /// `full` normally, `smoke` in a smoke run.
    func pick(_ full: Int, smoke small: Int) -> Int { smoke ? small : full }
    var rounds: Int { smoke ? 1 : 7 }
}

enum Measure {
    /// Seconds taken by `body`.
    static func seconds(_ body: () throws -> Void) rethrows -> Double {
        let start = ContinuousClock.now
        try body()
        return (ContinuousClock.now - start).seconds
    }

    static func seconds(_ body: () async throws -> Void) async rethrows -> Double {
        let start = ContinuousClock.now
        try await body()
        return (ContinuousClock.now - start).seconds
    }

    /// Runs `subject` and `baseline` in alternating order for `rounds` rounds and returns the median
    /// of each one's per-round result (both are "bigger is better" rates, e.g. operations per
    /// second). Interleaving is what makes the ratio meaningful on machines whose speed swings.
    static func interleaved(
        rounds: Int,
        subject: () throws -> Double,
        baseline: () throws -> Double
    ) rethrows -> (subject: Double, baseline: Double) {
        var subjects: [Double] = []
        var baselines: [Double] = []
        for round in 0..<rounds {
            if round % 2 == 0 {
                subjects.append(try subject())
                baselines.append(try baseline())
            } else {
                baselines.append(try baseline())
                subjects.append(try subject())
            }
        }
        return (median(subjects), median(baselines))
    }

    static func interleaved(
        rounds: Int,
        subject: () async throws -> Double,
        baseline: () async throws -> Double
    ) async rethrows -> (subject: Double, baseline: Double) {
        var subjects: [Double] = []
        var baselines: [Double] = []
        for round in 0..<rounds {
            if round % 2 == 0 {
                subjects.append(try await subject())
                baselines.append(try await baseline())
            } else {
                baselines.append(try await baseline())
                subjects.append(try await subject())
            }
        }
        return (median(subjects), median(baselines))
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return .nan }
        return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }

    /// The `p`th percentile (0–100) of `values`.
    static func percentile(_ values: [Double], _ p: Double) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return .nan }
        let index = min(sorted.count - 1, max(0, Int((p / 100 * Double(sorted.count)).rounded(.up)) - 1))
        return sorted[index]
    }
}

enum Report {
    static func table(_ rows: [Row]) -> String {
        let header = ["#", "workload", "variant", "haneke", "baseline", "ratio", "goal", "met"]
        let body = rows.map { row in
            [
                row.workload,
                row.name,
                row.variant,
                row.subject.formatted,
                row.baseline.map { "\($0.formatted) (\($0.label))" } ?? "—",
                row.ratio.map { String(format: "%.2f×", $0) } ?? "—",
                row.goal,
                row.met.map { $0 ? "yes" : "NO" } ?? "—",
            ]
        }
        let widths = header.indices.map { column in
            ([header[column]] + body.map { $0[column] }).map(\.count).max() ?? 0
        }
        func line(_ cells: [String]) -> String {
            "| " + cells.enumerated().map { $1.padding(toLength: widths[$0], withPad: " ", startingAt: 0) }.joined(separator: " | ") + " |"
        }
        let rule = "|" + widths.map { String(repeating: "-", count: $0 + 2) }.joined(separator: "|") + "|"
        var lines = [line(header), rule] + body.map(line)
        let notes = rows.compactMap { row in row.note.map { "- #\(row.workload) \(row.name) (\(row.variant)): \($0)" } }
        let sorted = rows.sorted { Int($0.workload) ?? 99 < Int($1.workload) ?? 99 }
        _ = sorted
        if !notes.isEmpty { lines += [""] + notes }
        return lines.joined(separator: "\n")
    }

    static func json(_ rows: [Row], smoke: Bool) throws -> Data {
        struct Document: Codable {
            var generated: String
            var smoke: Bool
            var machine: String
            var rows: [Row]
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let machine = "\(ProcessInfo.processInfo.activeProcessorCount) cores, \(ProcessInfo.processInfo.physicalMemory >> 30) GiB"
        return try encoder.encode(Document(generated: ISO8601DateFormatter().string(from: Date()), smoke: smoke, machine: machine, rows: rows))
    }
}

extension Duration {
    /// The duration in seconds.
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
