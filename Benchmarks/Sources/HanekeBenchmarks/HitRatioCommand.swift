import Foundation

/// The hit-ratio part of the benchmarks (`--hit-ratio`, `--generate`): replays traces through the
/// policy simulators in `HitRatio/`, with LRU and Bélády's optimal as the bounds, and prints one
/// JSON line per store, policy and size on standard output; the tables of gains over LRU and the
/// verdict against the hit-ratio goals go to standard error.
struct HitRatioCommand {
    /// What to do.
    enum Mode {
        /// Write one synthetic trace to a file.
        case generate(name: String, out: String)
        /// Replay a trace file.
        case trace(path: String)
        /// Generate every synthetic trace listed, in memory, and replay each.
        case synthetic(names: [String])
        /// The simulators' self-checks.
        case check
    }

    var mode: Mode
    var options = SyntheticTraceOptions()
    var driver = HitRatioDriver()
    /// Synthetic traces get deterministic sizes (for byte-weighted runs).
    var withSizes = false

    /// Why the command line was refused.
    struct UsageError: Error, CustomStringConvertible {
        let description: String
    }

    /// Builds the command from the benchmark's flags; throws a `UsageError` naming a bad flag.
    init(
        generate: String?, out: String?, trace: String?, check: Bool, traces: String?, sizes: String?,
        policies: String?, stores: String? = nil, requests: Int?, keys: Int?, seed: Int?, bytes: Bool, withSizes: Bool,
        parameters: [String]
    ) throws {
        if let generate {
            guard SyntheticTrace(rawValue: generate) != nil else {
                throw UsageError(description: "--generate needs one of \(Self.traceNames)")
            }
            guard let out else { throw UsageError(description: "--generate needs --out FILE") }
            mode = .generate(name: generate, out: out)
        } else if check {
            mode = .check
        } else if let trace {
            mode = .trace(path: trace)
        } else {
            let names = traces.map(Self.list) ?? SyntheticTrace.allCases.map(\.rawValue)
            if let unknown = names.first(where: { SyntheticTrace(rawValue: $0) == nil }) {
                throw UsageError(description: "--traces: no synthetic trace is called \(unknown); there are \(Self.traceNames)")
            }
            mode = .synthetic(names: names)
        }
        if let requests { options.requests = try Self.positive(requests, "--requests") }
        if let keys { options.keys = try Self.positive(keys, "--keys") }
        if let seed { options.seed = UInt64(try Self.positive(seed, "--seed")) }
        if let sizes {
            let texts = Self.list(sizes)
            let fractions = texts.compactMap(Double.init).filter { $0 > 0 && $0 <= 1 }
            guard fractions.count == texts.count, !fractions.isEmpty else {
                throw UsageError(description: "--sizes needs fractions in (0, 1], comma-separated, e.g. 0.01,0.1")
            }
            driver.sizeFractions = fractions
        }
        if let policies {
            let names = Self.list(policies)
            let kinds = names.compactMap(PolicyKind.init(rawValue:))
            guard kinds.count == names.count else {
                throw UsageError(description: "--policies: known policies are \(PolicyKind.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            driver.policies = kinds
        }
        if let stores {
            let names = Self.list(stores)
            let families = names.compactMap(StoreReplay.Family.init(rawValue:))
            guard families.count == names.count || names == ["none"] else {
                throw UsageError(description: "--stores: the real stores are \(StoreReplay.Family.allCases.map(\.rawValue).joined(separator: ", ")), or none")
            }
            driver.stores = families
        }
        for assignment in parameters {
            let parts = assignment.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, driver.parameters.set(parts[0], to: parts[1]) else {
                throw UsageError(description: "--parameter needs NAME=NUMBER with a known name, got \(assignment)")
            }
        }
        driver.unit = bytes ? .bytes : .objects
        if driver.stores.contains(.sqlite), driver.unit != .bytes {
            throw UsageError(description: "--stores sqlite: an SQLiteStore's capacity is bytes on disk; add --bytes")
        }
        self.withSizes = withSizes || bytes
    }

    /// Runs it; returns false when a self-check failed.
    func run() throws -> Bool {
        switch mode {
        case .generate(let name, let out):
            let trace = synthetic(SyntheticTrace(rawValue: name)!)
            try TraceFile.write(trace, to: out)
            Self.printError("wrote \(trace.requestCount) requests, \(trace.keyCount) distinct keys to \(out)")
        case .check:
            let passed = SelfCheck(parameters: driver.parameters).runAll { outcome in
                print("\(outcome.passed ? "PASS" : "FAIL")  \(outcome.name): \(outcome.detail)")
            }
            print(passed ? "All checks passed" : "Some checks FAILED")
            return passed
        case .trace(let path):
            // A trace written by --generate keeps its name when saved as NAME.txt, so that the
            // verdict against the goals knows it.
            let file = URL(fileURLWithPath: path).lastPathComponent
            let trace = try TraceFile.read(path: path, name: file.hasSuffix(".txt") ? String(file.dropLast(4)) : file)
            if driver.unit == .bytes && trace.sizes == nil {
                throw UsageError(description: "--bytes needs a trace whose lines carry a size: \(path) has none")
            }
            try replay([trace])
        case .synthetic(let names):
            try replay(names.compactMap(SyntheticTrace.init(rawValue:)).map(synthetic))
        }
        return true
    }

    private func synthetic(_ kind: SyntheticTrace) -> SimulationTrace {
        let trace = kind.generate(options)
        return withSizes ? trace.withSizes(ObjectSizeModel(seed: options.seed)) : trace
    }

    /// Replays each trace through every policy at every size: JSON lines out, tables to stderr.
    private func replay(_ traces: [SimulationTrace]) throws {
        let start = ContinuousClock.now
        var results = [SimulationRunResult]()
        for trace in traces {
            Self.printError("\(trace.name): \(trace.requestCount) requests, \(trace.keyCount) distinct keys")
            results += try driver.run(trace) { print($0.jsonLine) }
        }
        let summary = GainSummary(results: results)
        let violations = summary.beladyViolations()
        let bound = driver.unit == .bytes ? " (the byte-weighted bound is a heuristic)" : ""
        Self.printError("""

            Parameters: \(driver.parameters.summary)
            Unit: \(driver.unit.rawValue); gains are points of hit ratio over LRU

            \(summary.gainTable())

            \(results.contains { SyntheticTrace(rawValue: $0.trace) != nil } ? summary.verdictTable() : "(no synthetic trace: no verdict against the goals)")

            Bélády's bound exceeded\(bound): \(violations.isEmpty ? "never" : violations.joined(separator: "; "))
            """ + String(format: "\nTotal %.1f s", (ContinuousClock.now - start).seconds))
    }

    private static var traceNames: String { SyntheticTrace.allCases.map(\.rawValue).joined(separator: ", ") }

    private static func list(_ text: String) -> [String] {
        text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
    }

    private static func positive(_ value: Int, _ flag: String) throws -> Int {
        guard value > 0 else { throw UsageError(description: "\(flag) needs a positive number, got \(value)") }
        return value
    }

    private static func printError(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }
}
