import Foundation

/// The goal a policy must meet against LRU (object counts, synthetic traces).
struct HitRatioGoal: Sendable {
    /// No trace and size may be more than this many points below LRU.
    var worstAllowed = -1.0
    /// The mean gain over the Zipf family must reach this.
    var zipfMeanRequired = 7.5
    /// The median gain over the other synthetic traces must reach this.
    var othersMedianRequired = 2.4
}

/// One policy's aggregate gains over LRU (in points of hit ratio) on the synthetic traces.
struct PolicyVerdict: Sendable {
    /// Policy name.
    let policy: String
    /// Lowest gain over every synthetic trace and size.
    let worstGain: Double
    /// Mean gain over the Zipf family's traces and sizes.
    let zipfMeanGain: Double
    /// Median gain over the other synthetic traces and sizes (every trace × size cell counts).
    let othersMedianGain: Double
    /// Median over the other synthetic traces of each trace's mean gain across sizes (a looser
    /// reading of "median gain on the other traces").
    let othersMedianOfTraceMeans: Double
    /// Whether all three requirements hold (cell median).
    let meetsGoal: Bool
    /// Whether they hold with the median of per-trace means instead.
    let meetsGoalWithTraceMeans: Bool
}

/// Builds the gain tables, the aggregates and the Bélády sanity check from driver results.
struct GainSummary: Sendable {
    /// Every result, as returned by the driver (any number of traces).
    let results: [SimulationRunResult]
    /// The requirements.
    var goal = HitRatioGoal()

    /// The policies in first-seen order, excluding LRU.
    private var comparedPolicies: [String] {
        var seen = [String]()
        for result in results where result.policy != PolicyKind.lru.rawValue && !seen.contains(result.policy) {
            seen.append(result.policy)
        }
        return seen
    }

    /// (trace, size) pairs in first-seen order.
    private var rows: [(trace: String, size: Double)] {
        var seen = [(trace: String, size: Double)]()
        for result in results where !seen.contains(where: { $0.trace == result.trace && $0.size == result.sizeFraction }) {
            seen.append((result.trace, result.sizeFraction))
        }
        return seen
    }

    private func lookup(_ trace: String, _ size: Double, _ policy: String) -> SimulationRunResult? {
        results.first { $0.trace == trace && $0.sizeFraction == size && $0.policy == policy }
    }

    /// The gain in points of `policy` over LRU at one trace and size.
    func gain(_ trace: String, _ size: Double, _ policy: String) -> Double? {
        guard let candidate = lookup(trace, size, policy),
              let baseline = lookup(trace, size, PolicyKind.lru.rawValue) else { return nil }
        return 100 * (candidate.counts.hitRatio - baseline.counts.hitRatio)
    }

    /// A markdown table: LRU's hit ratio, then every other policy's gain in points.
    func gainTable() -> String {
        let policies = comparedPolicies
        var lines = ["| trace | size | LRU % | " + policies.joined(separator: " | ") + " |",
                     "|---|---:|---:|" + String(repeating: "---:|", count: policies.count)]
        for row in rows {
            let lruRatio = lookup(row.trace, row.size, PolicyKind.lru.rawValue).map { String(format: "%.2f", 100 * $0.counts.hitRatio) } ?? "–"
            let cells = policies.map { policy in
                gain(row.trace, row.size, policy).map { String(format: "%+.2f", $0) } ?? "–"
            }
            lines.append("| \(row.trace) | \(row.size) | \(lruRatio) | " + cells.joined(separator: " | ") + " |")
        }
        return lines.joined(separator: "\n")
    }

    /// The aggregate gains of every policy on the synthetic traces present.
    func verdicts() -> [PolicyVerdict] {
        comparedPolicies.filter { $0 != HitRatioDriver.beladyName }.map(verdict(for:))
    }

    private func verdict(for policy: String) -> PolicyVerdict {
        var zipfGains = [Double]()
        var otherGains = [Double]()
        var otherGainsByTrace = [String: [Double]]()
        for row in rows {
            guard let kind = SyntheticTrace(rawValue: row.trace), let value = gain(row.trace, row.size, policy) else { continue }
            if kind.isZipfFamily {
                zipfGains.append(value)
            } else {
                otherGains.append(value)
                otherGainsByTrace[row.trace, default: []].append(value)
            }
        }
        let worst = (zipfGains + otherGains).min() ?? .nan
        let mean = zipfGains.isEmpty ? .nan : zipfGains.reduce(0, +) / Double(zipfGains.count)
        let median = Self.median(otherGains)
        let traceMeans = otherGainsByTrace.values.map { $0.reduce(0, +) / Double($0.count) }
        let medianOfMeans = Self.median(traceMeans)
        let floorsHold = worst >= goal.worstAllowed && mean >= goal.zipfMeanRequired
        return PolicyVerdict(policy: policy, worstGain: worst, zipfMeanGain: mean, othersMedianGain: median,
                             othersMedianOfTraceMeans: medianOfMeans,
                             meetsGoal: floorsHold && median >= goal.othersMedianRequired,
                             meetsGoalWithTraceMeans: floorsHold && medianOfMeans >= goal.othersMedianRequired)
    }

    /// The median (mean of the two middle values for an even count; NaN when empty).
    static func median(_ values: [Double]) -> Double {
        guard !values.isEmpty else { return .nan }
        let sorted = values.sorted()
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }

    /// A markdown table of the verdicts, with how many synthetic traces they cover.
    func verdictTable() -> String {
        let syntheticTraces = Set(results.map(\.trace)).filter { SyntheticTrace(rawValue: $0) != nil }
        var lines = [
            "Goal (\(syntheticTraces.count) of \(SyntheticTrace.allCases.count) synthetic traces present): "
                + "worst ≥ \(goal.worstAllowed), Zipf mean ≥ +\(goal.zipfMeanRequired), others median ≥ +\(goal.othersMedianRequired)",
            "",
            "Others median: over every (trace, size) cell; alt: over the traces' mean gains across sizes.",
            "",
            "| policy | worst | Zipf mean | others median | meets goal | others median (alt) | meets goal (alt) |",
            "|---|---:|---:|---:|---|---:|---|",
        ]
        for verdict in verdicts() {
            let figures = [verdict.worstGain, verdict.zipfMeanGain, verdict.othersMedianGain]
                .map { String(format: "%+.2f", $0) }
            let alternative = String(format: "%+.2f", verdict.othersMedianOfTraceMeans)
            lines.append("| \(verdict.policy) | " + figures.joined(separator: " | ") + " | \(verdict.meetsGoal ? "yes" : "no")"
                         + " | \(alternative) | \(verdict.meetsGoalWithTraceMeans ? "yes" : "no") |")
        }
        return lines.joined(separator: "\n")
    }

    /// Runs where a policy scored more hits than the Bélády bound (expected never for object
    /// counts; possible for bytes, where the bound is a heuristic).
    func beladyViolations() -> [String] {
        var violations = [String]()
        for row in rows {
            guard let bound = lookup(row.trace, row.size, HitRatioDriver.beladyName) else { continue }
            for result in results where result.trace == row.trace && result.sizeFraction == row.size
                && result.policy != HitRatioDriver.beladyName && result.counts.hits > bound.counts.hits {
                violations.append("\(row.trace) size \(row.size): \(result.policy) \(result.counts.hits) hits > belady \(bound.counts.hits)")
            }
        }
        return violations
    }
}
