import Foundation

/// The outcome of one policy at one cache size on one trace.
struct SimulationRunResult: Sendable {
    /// Trace label.
    let trace: String
    /// Policy name (`belady` for the bound); `STORE/POLICY` for a real store's replay.
    let policy: String
    /// `simulator`, or the real store replayed (`StoreReplay.Kind`).
    var store = "simulator"
    /// Cache size as a fraction of the distinct keys (or of the distinct bytes).
    let sizeFraction: Double
    /// Capacity in objects or bytes.
    let capacity: Int
    /// Whether the capacity counts objects or bytes.
    let unit: CapacityUnit
    /// Hit and byte counts.
    let counts: SimulationCounts
    /// Wall-clock seconds spent simulating.
    let seconds: Double

    /// One JSON object on one line, in the agreed field order.
    var jsonLine: String {
        let byteRatio = counts.byteHitRatio.map { String(format: "%.6f", $0) } ?? "null"
        let reported = store == "simulator" ? policy : String(policy.dropFirst(store.count + 1))
        return "{\"trace\":\(Self.jsonString(trace)),\"store\":\(Self.jsonString(store)),\"policy\":\(Self.jsonString(reported)),"
            + "\"size\":\(sizeFraction),\"capacity\":\(capacity),\"requests\":\(counts.requests),"
            + "\"hits\":\(counts.hits),\"hit_ratio\":\(String(format: "%.6f", counts.hitRatio)),"
            + "\"byte_hit_ratio\":\(byteRatio)}"
    }

    /// A JSON string literal with the mandatory escapes.
    static func jsonString(_ text: String) -> String {
        var result = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            default:
                if scalar.value < 0x20 {
                    result += String(format: "\\u%04x", scalar.value)
                } else {
                    result.unicodeScalars.append(scalar)
                }
            }
        }
        return result + "\""
    }
}

/// Runs Bélády and every requested policy over a trace at several cache sizes.
struct HitRatioDriver: Sendable {
    /// The Bélády bound's name in reports.
    static let beladyName = "belady"

    /// Cache sizes as fractions of the distinct keys (objects) or distinct bytes (bytes).
    var sizeFractions: [Double] = [0.001, 0.01, 0.1]
    /// Policies to simulate (LRU is always added: gains are measured against it).
    var policies: [PolicyKind] = PolicyKind.allCases
    /// Objects or bytes.
    var unit: CapacityUnit = .objects
    /// Tunable parameters, the same for every trace.
    var parameters = PolicyParameters()
    /// Whether to verify the capacity invariant after every request.
    var verify = false
    /// The real stores each trace is replayed through too (none: simulators only).
    var stores: [StoreReplay.Family] = [.memory]

    /// Simulates every size and policy, calling `report` after each run (for streaming output).
    /// - Returns: Every result, Bélády first at each size.
    func run(_ trace: SimulationTrace, report: (SimulationRunResult) -> Void) throws -> [SimulationRunResult] {
        let nextUses = trace.nextUses()
        let distinctBytes = trace.distinctBytes()
        var results = [SimulationRunResult]()
        for fraction in sizeFractions {
            let configuration = configuration(for: trace, fraction: fraction, distinctBytes: distinctBytes)
            let bound = timed { BeladyOptimal.simulate(trace, nextUses: nextUses, capacity: configuration.capacity, unit: unit) }
            let beladyResult = result(trace, Self.beladyName, fraction, configuration, bound)
            results.append(beladyResult)
            report(beladyResult)
            for policy in policiesIncludingLRU {
                let counts = timed { policy.simulate(trace, configuration: configuration, verify: verify) }
                let policyResult = result(trace, policy.rawValue, fraction, configuration, counts)
                results.append(policyResult)
                report(policyResult)
            }
            for kind in stores.compactMap({ StoreReplay.Kind.of($0, unit: unit) }) {
                for policy in StoreReplay.policies {
                    let counts = try timed {
                        try StoreReplay.replay(trace, kind: kind, capacity: configuration.capacity, unit: unit, policy: policy)
                    }
                    var storeResult = result(trace, StoreReplay.label(kind, policy), fraction, configuration, counts)
                    storeResult.store = kind.rawValue
                    results.append(storeResult)
                    report(storeResult)
                }
            }
        }
        return results
    }

    /// LRU first, then the other requested policies.
    private var policiesIncludingLRU: [PolicyKind] {
        [.lru] + policies.filter { $0 != .lru }
    }

    /// The configuration for one size: capacity from the fraction, at least one object (or the
    /// largest object's worth of bytes is not guaranteed: a too-small byte cache just misses).
    private func configuration(for trace: SimulationTrace, fraction: Double, distinctBytes: Int?) -> PolicyConfiguration {
        let capacity: Int
        let expectedEntries: Int
        if unit == .bytes, let distinctBytes, distinctBytes > 0 {
            capacity = max(1, Int((Double(distinctBytes) * fraction).rounded()))
            let meanSize = Double(distinctBytes) / Double(max(1, trace.keyCount))
            expectedEntries = max(1, Int((Double(capacity) / meanSize).rounded()))
        } else {
            capacity = max(1, Int((Double(trace.keyCount) * fraction).rounded()))
            expectedEntries = capacity
        }
        return PolicyConfiguration(capacity: capacity, unit: unit, keyCount: trace.keyCount,
                                   expectedEntries: expectedEntries, parameters: parameters)
    }

    private func result(_ trace: SimulationTrace, _ policy: String, _ fraction: Double,
                        _ configuration: PolicyConfiguration,
                        _ timedCounts: (SimulationCounts, Double)) -> SimulationRunResult {
        SimulationRunResult(trace: trace.name, policy: policy, sizeFraction: fraction,
                            capacity: configuration.capacity, unit: configuration.unit,
                            counts: timedCounts.0, seconds: timedCounts.1)
    }

    /// Runs `work` and measures its wall-clock time.
    private func timed(_ work: () throws -> SimulationCounts) rethrows -> (SimulationCounts, Double) {
        let start = DispatchTime.now().uptimeNanoseconds
        let counts = try work()
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        return (counts, seconds)
    }
}
