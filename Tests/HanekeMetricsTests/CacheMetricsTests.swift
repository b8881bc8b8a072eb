#if Metrics
import CoreMetrics
import Foundation
import Haneke
import HanekeMetrics
import HanekeProtocols
import HanekeServer
import HanekeTesting
import Prometheus
import Testing
import TestSupport

/// The value of the sample of `name` whose labels include every one of `labels`, in a scrape.
func sample(_ name: String, _ labels: [String: String], in scrape: String) -> Double? {
    for line in scrape.split(separator: "\n") where line.hasPrefix(name + "{") {
        guard let close = line.lastIndex(of: "}") else { continue }
        let text = line[line.index(line.startIndex, offsetBy: name.count + 1)..<close]
        let pairs = Dictionary(
            text.split(separator: ",").map { pair -> (String, String) in
                let parts = pair.split(separator: "=", maxSplits: 1)
                return (String(parts[0]), String(parts[1].dropFirst().dropLast()))
            },
            uniquingKeysWith: { first, _ in first }
        )
        if labels.allSatisfy({ pairs[$0.key] == $0.value }) {
            return Double(line[line.index(after: close)...].trimmingCharacters(in: .whitespaces))
        }
    }
    return nil
}

@Suite(.timeLimit(.minutes(1)), .tags(.disk))
struct CacheMetricsTests {
    let directory: TemporaryDirectory
    let clock = TestClock()
    let registry = PrometheusCollectorRegistry()

    init() throws {
        directory = try TemporaryDirectory(prefix: "metrics")
    }

    @Test func aPrometheusScrapeShowsEveryLayersCounters() async throws {
        let cache = Cache<String>(name: "users", directory: directory.appending("users"), clock: clock)
        let metrics = CacheMetrics(factory: PrometheusMetricsFactory(registry: registry))
        metrics.register(cache)
        try await cache.set("Ada", forKey: "1")
        try await cache.set("Grace", forKey: "2")
        for _ in 0..<3 { _ = try await cache.fetch(key: "1") }
        _ = try? await cache.fetch(key: "missing")
        try await cache.remove(key: "2")
        await metrics.update()
        // A second update publishes only what changed since the first: nothing.
        await metrics.update()
        let scrape = registry.emitToString()
        let memory = ["cache": "users", "format": "original", "layer": "memory"]
        #expect(sample("cache_gets_total", memory.merging(["result": "hit"]) { $1 }, in: scrape) == 3)
        #expect(sample("cache_gets_total", memory.merging(["result": "miss"]) { $1 }, in: scrape) == 1)
        #expect(sample("cache_puts_total", memory, in: scrape) == 2)
        #expect(sample("cache_removals_total", memory, in: scrape) == 1)
        #expect(sample("cache_size", memory, in: scrape) == 1)
        let disk = ["cache": "users", "format": "original", "layer": "disk"]
        #expect(sample("cache_gets_total", disk.merging(["result": "miss"]) { $1 }, in: scrape) == 1)
        #expect(sample("cache_puts_total", disk, in: scrape) == 2)
        #expect(sample("cache_size", disk, in: scrape) == 1)
        #expect(sample("cache_evictions_total", disk, in: scrape) == 0)

        // Counts made after an update appear at the next one.
        _ = try await cache.fetch(key: "1")
        await metrics.update()
        #expect(sample("cache_gets_total", memory.merging(["result": "hit"]) { $1 }, in: registry.emitToString()) == 4)
    }

    @Test func staleHitsAndRefreshesAreCounted() async throws {
        var format = Format<String>(name: "original")
        format.freshness = Freshness(timeToLive: .seconds(60), refreshAfter: .seconds(10))
        let cache = Cache<String>(name: "pages", directory: directory.appending("pages"), originalFormat: format, clock: clock)
        let metrics = CacheMetrics(factory: PrometheusMetricsFactory(registry: registry))
        metrics.register(cache)
        _ = try await cache.fetch(key: "home") { _ in "v1" }
        clock.advance(by: .seconds(11))
        _ = try await cache.fetch(key: "home") { _ in "v2" }
        try await cache.waitForRefreshes()
        await metrics.update()
        let scrape = registry.emitToString()
        let freshness = try cache.freshnessStatistics()
        #expect(freshness.refreshes == 1)
        let base = ["cache": "pages", "format": "original"]
        #expect(sample("cache_refreshes_total", base.merging(["result": "success"]) { $1 }, in: scrape) == 1)
        #expect(sample("cache_refreshes_total", base.merging(["result": "failure"]) { $1 }, in: scrape) == 0)
        #expect(sample("cache_stale_hits_total", base, in: scrape) == Double(freshness.staleHits))
    }

    @Test func aKeyValueCacheIsPublishedUnderItsName() async throws {
        let sessions = KeyValueCache(name: "sessions", directory: directory.appending("sessions"), clock: clock)
        let metrics = CacheMetrics(factory: PrometheusMetricsFactory(registry: registry))
        metrics.register(sessions)
        try await sessions.set("s", to: 1)
        _ = try await sessions.get("s", as: Int.self)
        await metrics.update()
        let labels = ["cache": "sessions", "layer": "memory", "result": "hit"]
        #expect(sample("cache_gets_total", labels, in: registry.emitToString()) == 1)
    }

    @Test func theLibraryNeverBootstrapsAFactory() async throws {
        let cache = Cache<String>(name: "quiet", directory: directory.appending("quiet"), clock: clock)
        let metrics = CacheMetrics()
        metrics.register(cache)
        try await cache.set("v", forKey: "k")
        await metrics.update()
        #expect(metrics.factory is NOOPMetricsHandler)
        #expect(MetricsSystem.factory is NOOPMetricsHandler)
    }
}
#endif
