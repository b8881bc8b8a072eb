import Foundation
import Haneke
import HanekeMetrics
import Prometheus

/// Workload 15: a memory hit through a `Cache` whose counters are published through swift-metrics
/// (a `CacheMetrics` on a Prometheus registry, updated every millisecond meanwhile, as a scrape
/// loop would) beside the same hit through a cache with no metrics, interleaved round by round.
enum MetricsBenchmarks {
    static func run(_ scale: Scale) async throws -> [Row] {
        let root = RawFiles.scratchDirectory("metrics")
        defer { RawFiles.removeDirectory(root) }
        let keyCount = scale.pick(2_000, smoke: 100)
        let keys = (0..<keyCount).map { "https://api.example.com/users/\($0)" }
        let plain = Cache<String>(name: "plain", directory: root + "/plain")
        let metered = Cache<String>(name: "metered", directory: root + "/metered")
        for key in keys {
            try await plain.set("value of \(key)", forKey: key)
            try await metered.set("value of \(key)", forKey: key)
        }
        let registry = PrometheusCollectorRegistry()
        let metrics = CacheMetrics(factory: PrometheusMetricsFactory(registry: registry))
        metrics.register(metered)
        let publishing = Task {
            while !Task.isCancelled {
                await metrics.update()
                try? await Task.sleep(for: .milliseconds(1))
            }
        }
        defer { publishing.cancel() }

        var without: [Double] = []
        var with: [Double] = []
        for round in 0..<scale.rounds {
            if round % 2 == 0 {
                without += try await latencies(keys, plain)
                with += try await latencies(keys, metered)
            } else {
                with += try await latencies(keys, metered)
                without += try await latencies(keys, plain)
            }
        }
        publishing.cancel()
        await metrics.update()
        let withP50 = Measure.percentile(with, 50)
        let withoutP50 = Measure.percentile(without, 50)
        let published = registry.emitToString().contains("cache_gets_total")
        return [
            Row(
                workload: "15", name: "memory hit", variant: "metrics on",
                subject: Figure(label: "p50", value: withP50, unit: "µs"),
                baseline: Figure(label: "metrics off", value: withoutP50, unit: "µs"),
                ratio: withoutP50 / withP50, goal: "≤ 1.05× metrics off", met: published && withP50 <= 1.05 * withoutP50,
                note: String(
                    format: "p99 %.2f µs (off: %.2f µs); the counters published every 1 ms meanwhile%@",
                    Measure.percentile(with, 99), Measure.percentile(without, 99), published ? "" : "; NOTHING WAS PUBLISHED"
                )
            )
        ]
    }

    static func latencies(_ keys: [String], _ cache: Cache<String>) async throws -> [Double] {
        var samples: [Double] = []
        samples.reserveCapacity(keys.count)
        for key in keys {
            let start = ContinuousClock.now
            _ = try await cache.fetch(key: key)
            samples.append(ChainBenchmarks.microseconds(ContinuousClock.now - start))
        }
        return samples
    }
}
