import Foundation

/// The outcome of one self-check.
struct SelfCheckOutcome: Sendable {
    /// What was checked.
    let name: String
    /// Whether it passed.
    let passed: Bool
    /// Figures behind the verdict.
    let detail: String
}

/// Verifies the toolkit itself: the Zipf sampler against theory, next uses against a naive scan,
/// the trace format, LRU against a naive reference, and on every synthetic trace that every policy
/// stays within its capacity and below Bélády's bound.
struct SelfCheck: Sendable {
    /// Size of the synthetic traces used by the policy checks (smaller than the defaults for speed).
    var traceOptions = SyntheticTraceOptions(requests: 300_000, keys: 30_000, seed: 7)
    /// Samples per exponent in the Zipf check.
    var zipfSamples = 2_000_000
    /// Ranks of the Zipf check's universe.
    var zipfKeys = 200_000
    /// Parameters of the policies under check.
    var parameters = PolicyParameters()

    /// Runs every check, calling `report` as each completes.
    func runAll(report: (SelfCheckOutcome) -> Void) -> Bool {
        var allPassed = true
        let checks: [() -> [SelfCheckOutcome]] = [
            checkZipfFrequencies, checkNextUses, checkTraceFormat, checkLRUAgainstReference, checkPolicies,
            checkStoresAgainstSimulators,
        ]
        for check in checks {
            for outcome in check() {
                report(outcome)
                allPassed = allPassed && outcome.passed
            }
        }
        return allPassed
    }

    /// Empirical frequencies of ranks 1...5 must be within 5 standard deviations of n·p.
    func checkZipfFrequencies() -> [SelfCheckOutcome] {
        [0.6, 0.8, 1.0, 1.2].map { exponent in
            let sampler = ZipfSampler(count: zipfKeys, exponent: exponent)
            var random = SimulationRandom(seed: 99)
            var counts = [Int](repeating: 0, count: 6)
            for _ in 0..<zipfSamples {
                let rank = sampler.sample(using: &random)
                if rank <= 5 {
                    counts[rank] += 1
                }
            }
            let probabilities = sampler.exactProbabilities(ofFirst: 5)
            var worstZ = 0.0
            var cells = [String]()
            for rank in 1...5 {
                let p = probabilities[rank - 1]
                let expected = p * Double(zipfSamples)
                let z = (Double(counts[rank]) - expected) / (expected * (1 - p)).squareRoot()
                worstZ = max(worstZ, abs(z))
                cells.append(String(format: "r%d %.5f/%.5f", rank, Double(counts[rank]) / Double(zipfSamples), p))
            }
            return SelfCheckOutcome(name: "zipf-\(exponent) ranks 1-5 (observed/theory)", passed: worstZ < 5,
                                    detail: cells.joined(separator: ", ") + String(format: ", max |z| %.2f", worstZ))
        }
    }

    /// `nextUses` must agree with a forward scan using a dictionary.
    func checkNextUses() -> [SelfCheckOutcome] {
        let trace = SyntheticTrace.zipf10.generate(SyntheticTraceOptions(requests: 20_000, keys: 2_000, seed: 3))
        let fast = trace.nextUses()
        var pending = [Int32: Int]()
        var naive = [Int](repeating: Int.max, count: trace.requestCount)
        for (index, key) in trace.keys.enumerated() {
            if let previous = pending[key] {
                naive[previous] = index
            }
            pending[key] = index
        }
        return [SelfCheckOutcome(name: "nextUses matches a forward scan", passed: fast == naive,
                                 detail: "\(trace.requestCount) requests")]
    }

    /// Write/read round trip with sizes, and the mixed-sizes and bad-size errors.
    func checkTraceFormat() -> [SelfCheckOutcome] {
        let original = SyntheticTrace.zipfOneHit.generate(SyntheticTraceOptions(requests: 50_000, keys: 5_000, seed: 5))
            .withSizes(ObjectSizeModel(seed: 5))
        let path = NSTemporaryDirectory() + "hitratio-check-\(ProcessInfo.processInfo.processIdentifier).txt"
        defer { try? FileManager.default.removeItem(atPath: path) }
        var outcomes = [SelfCheckOutcome]()
        do {
            try TraceFile.write(original, to: path)
            let reread = try TraceFile.read(path: path)
            let same = reread.keys == original.keys && reread.sizes == original.sizes && reread.keyCount == original.keyCount
            outcomes.append(SelfCheckOutcome(name: "trace file round trip", passed: same,
                                             detail: "\(reread.requestCount) requests, \(reread.keyCount) keys"))
        } catch {
            outcomes.append(SelfCheckOutcome(name: "trace file round trip", passed: false, detail: "\(error)"))
        }
        outcomes.append(expectParseError("a 10\n\nb 20\r\nc\n", expected: "line 4", name: "mixed sizes rejected with line number"))
        outcomes.append(expectParseError("a 1\nb 1x\n", expected: "line 2", name: "bad size rejected with line number"))
        outcomes.append(expectParseError("a 1 2\n", expected: "line 1", name: "extra field rejected with line number"))
        return outcomes
    }

    private func expectParseError(_ text: String, expected: String, name: String) -> SelfCheckOutcome {
        let bytes = Array(text.utf8)
        do {
            _ = try bytes.withUnsafeBytes { try TraceFile.parse($0, name: "inline") }
            return SelfCheckOutcome(name: name, passed: false, detail: "no error")
        } catch {
            let message = "\(error)"
            return SelfCheckOutcome(name: name, passed: message.hasPrefix(expected), detail: message)
        }
    }

    /// LRU must produce exactly the hits of a naive reference (dictionary + array) on a random
    /// trace, for an object and a byte capacity.
    func checkLRUAgainstReference() -> [SelfCheckOutcome] {
        var random = SimulationRandom(seed: 11)
        let keyCount = 600
        let keys = (0..<40_000).map { _ in Int32(random.nextInt(below: keyCount)) }
        let sizes = (0..<keyCount).map { _ in random.nextInt(in: 1...1_000) }
        let trace = SimulationTrace(name: "random", keys: keys, sizes: keys.map { sizes[Int($0)] }, keyCount: keyCount)
        return [(CapacityUnit.objects, 150), (CapacityUnit.bytes, 60_000)].map { unit, capacity in
            let configuration = PolicyConfiguration(capacity: capacity, unit: unit, keyCount: keyCount,
                                                    expectedEntries: 150, parameters: parameters)
            var lru = LRUSimulator(configuration)
            var reference = ReferenceLRU(capacity: capacity, unit: unit)
            var mismatches = 0
            for (index, key) in trace.keys.enumerated() {
                let size = trace.sizes?[index] ?? 0
                if lru.access(key: key, size: size) != reference.access(key: key, size: size) {
                    mismatches += 1
                }
            }
            let sameOrder = lru.keysByRecency() == reference.keysByRecency()
            return SelfCheckOutcome(name: "LRU equals reference LRU (\(unit.rawValue))",
                                    passed: mismatches == 0 && sameOrder,
                                    detail: "\(mismatches) differing hits, final order \(sameOrder ? "equal" : "differs")")
        }
    }

    /// Every policy on every synthetic trace (objects and bytes): capacity never exceeded and
    /// accounting consistent; object hits never above Bélády's (byte runs: reported only).
    func checkPolicies() -> [SelfCheckOutcome] {
        var outcomes = [SelfCheckOutcome]()
        for kind in SyntheticTrace.allCases {
            let trace = kind.generate(traceOptions).withSizes(ObjectSizeModel(seed: traceOptions.seed))
            for unit in [CapacityUnit.objects, .bytes] {
                var driver = HitRatioDriver(unit: unit, parameters: parameters, verify: true)
                driver.stores = []
                guard let results = run(driver, on: trace, named: "\(kind.rawValue) \(unit.rawValue): replay", into: &outcomes) else {
                    continue
                }
                let violations = results.reduce(0) { $0 + $1.counts.capacityViolations }
                outcomes.append(SelfCheckOutcome(name: "\(kind.rawValue) \(unit.rawValue): capacity held", passed: violations == 0,
                                                 detail: "\(results.count - 3) policy runs, \(violations) violations"))
                let beyond = GainSummary(results: results).beladyViolations()
                outcomes.append(SelfCheckOutcome(
                    name: "\(kind.rawValue) \(unit.rawValue): belady ≥ every policy" + (unit == .bytes ? " (informational)" : ""),
                    passed: unit == .bytes || beyond.isEmpty,
                    detail: beyond.isEmpty ? "ok" : beyond.joined(separator: "; ")))
            }
        }
        return outcomes
    }
}

/// A deliberately naive LRU (dictionary of weights + array in recency order, O(n) per hit) used
/// only to validate `LRUSimulator`.
private struct ReferenceLRU {
    let capacity: Int
    let unit: CapacityUnit
    private var weights: [Int32: Int] = [:]
    /// Least recently used first.
    private var order: [Int32] = []
    private var used = 0

    init(capacity: Int, unit: CapacityUnit) {
        self.capacity = capacity
        self.unit = unit
    }

    mutating func access(key: Int32, size: Int) -> Bool {
        if weights[key] != nil {
            order.removeAll { $0 == key }
            order.append(key)
            return true
        }
        let weight = max(1, unit.weight(ofSize: size))
        guard weight <= capacity else { return false }
        while used + weight > capacity, !order.isEmpty {
            let victim = order.removeFirst()
            used -= weights.removeValue(forKey: victim) ?? 0
        }
        order.append(key)
        weights[key] = weight
        used += weight
        return false
    }

    /// Most recently used first, like `LRUSimulator.keysByRecency`.
    func keysByRecency() -> [Int32] {
        order.reversed()
    }
}

extension SelfCheck {
    /// Runs `driver` on `trace`; a replay that throws becomes a failed outcome called `name`.
    func run(
        _ driver: HitRatioDriver, on trace: SimulationTrace, named name: String, into outcomes: inout [SelfCheckOutcome]
    ) -> [SimulationRunResult]? {
        do {
            return try driver.run(trace) { _ in }
        } catch {
            outcomes.append(SelfCheckOutcome(name: name, passed: false, detail: "\(error)"))
            return nil
        }
    }

    /// The real `MemoryStore` against the simulators, on three synthetic traces at 1 % and 10 %, by
    /// count and by bytes: its LRU must hit exactly as often as the LRU simulator, and its adaptive
    /// policy within half a point of `s3-fifo-adaptive` (the same algorithm; the store keeps the
    /// small queue's share as a fraction and its ghost by key hash, so rounding may differ).
    func checkStoresAgainstSimulators() -> [SelfCheckOutcome] {
        var outcomes = [SelfCheckOutcome]()
        for kind in [SyntheticTrace.zipf10, .recencyLoop, .zipfScan] {
            for unit in [CapacityUnit.objects, .bytes] {
                var trace = kind.generate(traceOptions)
                if unit == .bytes { trace = trace.withSizes(ObjectSizeModel(seed: traceOptions.seed)) }
                var driver = HitRatioDriver()
                driver.sizeFractions = [0.01, 0.1]
                driver.policies = [.adaptiveS3FIFO]
                driver.unit = unit
                driver.parameters = parameters
                guard let results = run(driver, on: trace, named: "\(trace.name) \(unit.rawValue): replay", into: &outcomes) else {
                    continue
                }
                let store: StoreReplay.Kind = unit == .bytes ? .memoryCost : .memory
                for fraction in driver.sizeFractions {
                    func ratio(_ policy: String) -> Double {
                        results.first { $0.sizeFraction == fraction && $0.policy == policy }.map { $0.counts.hitRatio * 100 } ?? .nan
                    }
                    let simulatedLRU: Double = ratio(PolicyKind.lru.rawValue)
                    let storedLRU: Double = ratio(StoreReplay.label(store, .leastRecentlyUsed))
                    let simulatedAdaptive: Double = ratio(PolicyKind.adaptiveS3FIFO.rawValue)
                    let storedAdaptive: Double = ratio(StoreReplay.label(store, .adaptive))
                    let passed = simulatedLRU == storedLRU && abs(simulatedAdaptive - storedAdaptive) <= 0.5
                    let detail = String(
                        format: "LRU %.3f%% simulated, %.3f%% stored; adaptive %.3f%% simulated, %.3f%% stored",
                        simulatedLRU, storedLRU, simulatedAdaptive, storedAdaptive
                    )
                    outcomes.append(SelfCheckOutcome(
                        name: "\(store.rawValue) against the simulators, \(trace.name) at \(fraction)",
                        passed: passed, detail: detail
                    ))
                }
            }
        }
        return outcomes
    }
}
