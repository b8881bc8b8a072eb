#if Metrics
public import CoreMetrics
public import Haneke
public import HanekeServer
import HanekeProtocols

/// Publishes the counters of caches' layers through swift-metrics, under Micrometer's names:
///
/// | metric | kind | dimensions |
/// |---|---|---|
/// | `cache_gets_total` | counter | `cache`, `format`, `layer`, `result` (`hit` or `miss`) |
/// | `cache_puts_total` | counter | `cache`, `format`, `layer` |
/// | `cache_removals_total` | counter | `cache`, `format`, `layer` |
/// | `cache_evictions_total` | counter | `cache`, `format`, `layer` (expired entries included) |
/// | `cache_errors_total` | counter | `cache`, `format`, `layer` |
/// | `cache_size` | gauge | `cache`, `format`, `layer`: its entries |
/// | `cache_stale_hits_total` | counter | `cache`, `format` |
/// | `cache_refreshes_total` | counter | `cache`, `format`, `result` (`success` or `failure`) |
///
/// The layers count on their own, as they always do (`Cache.layerStatistics(formatName:)`);
/// ``update()`` reads those counts and adds what changed since the last update to the metrics, so
/// a read costs nothing more with metrics on. Call it before a scrape, or run the object as a
/// service (the `ServiceLifecycle` trait) to update every ``interval``.
///
/// It takes the factory to use and never bootstraps one; the default, `MetricsSystem.factory`, is
/// the one the application bootstrapped, or swift-metrics' no-op factory, with which nothing is
/// measured.
///
/// ```swift
/// import Haneke
/// import HanekeMetrics
///
/// let users = Cache<String>(name: "users")
/// let metrics = CacheMetrics()
/// metrics.register(users)
/// await metrics.update()
/// ```
public final class CacheMetrics: Sendable {
    /// The factory the metrics are made by.
    public let factory: any MetricsFactory
    /// How often the service updates the metrics.
    public let interval: Duration

    private let sources = Locked<[Source]>([])
    /// The handlers made so far, and the counts last published, by metric and dimensions.
    private let published = Locked<[Series: Published]>([:])

    /// Creates a publisher.
    /// - Parameters:
    ///   - factory: The factory to make the metrics by; `MetricsSystem.factory` (what the
    ///     application bootstrapped, else a no-op) by default.
    ///   - interval: How often the service updates them; 10 seconds by default.
    public init(factory: any MetricsFactory = MetricsSystem.factory, interval: Duration = .seconds(10)) {
        self.factory = factory
        self.interval = interval
    }

    /// Publishes the counters of every format of `cache`.
    /// - Parameter cache: The cache; its name is the `cache` dimension.
    public func register<Value>(_ cache: Cache<Value>) {
        sources.withLock {
            $0.append(
                Source(
                    cache: cache.name,
                    formats: { cache.formatNames },
                    statistics: { try cache.layerStatistics(formatName: $0) },
                    freshness: { try cache.freshnessStatistics(formatName: $0) },
                    counts: { try await cache.layerCounts(formatName: $0) }
                )
            )
        }
    }

    /// Publishes the counters of a key-value cache (what the Hummingbird and Vapor drivers keep
    /// their values in).
    /// - Parameter cache: The cache.
    public func register(_ cache: KeyValueCache) {
        register(cache.cache)
    }

    /// Reads every registered cache's counters and publishes what changed since the last update.
    public func update() async {
        for source in sources.withLock({ $0 }) {
            for format in source.formats() {
                let base = [("cache", source.cache), ("format", format)]
                // A format removed meanwhile has nothing to publish.
                if let layers = try? source.statistics(format) {
                    for layer in layers {
                        let dimensions = base + [("layer", layer.name)]
                        let counts = layer.statistics
                        publish("cache_gets_total", dimensions + [("result", "hit")], total: counts.hits)
                        publish("cache_gets_total", dimensions + [("result", "miss")], total: counts.misses)
                        publish("cache_puts_total", dimensions, total: counts.writes)
                        publish("cache_removals_total", dimensions, total: counts.removals)
                        publish("cache_evictions_total", dimensions, total: counts.evictions)
                        publish("cache_errors_total", dimensions, total: counts.errors)
                    }
                }
                if let freshness = try? source.freshness(format) {
                    publish("cache_stale_hits_total", base, total: freshness.staleHits)
                    publish("cache_refreshes_total", base + [("result", "success")], total: freshness.refreshes - freshness.refreshFailures)
                    publish("cache_refreshes_total", base + [("result", "failure")], total: freshness.refreshFailures)
                }
                for (layer, entries) in (try? await source.counts(format)) ?? [] {
                    gauge("cache_size", base + [("layer", layer)], value: entries)
                }
            }
        }
    }

    // MARK: - Handlers

    /// A metric's label and dimensions.
    private struct Series: Hashable {
        let label: String
        let dimensions: [String]

        init(_ label: String, _ dimensions: [(String, String)]) {
            self.label = label
            self.dimensions = dimensions.flatMap { [$0.0, $0.1] }
        }
    }

    private enum Published {
        case counter(any CounterHandler, total: Int)
        case gauge(any MeterHandler)
    }

    /// Adds to the counter what `total` has grown by since the last update (a count that went down —
    /// a format replaced — starts the counter's count again from there).
    private func publish(_ label: String, _ dimensions: [(String, String)], total: Int) {
        let series = Series(label, dimensions)
        let (handler, growth): ((any CounterHandler)?, Int) = published.withLock { published in
            let handler: any CounterHandler
            let last: Int
            if case .counter(let existing, let total)? = published[series] {
                (handler, last) = (existing, total)
            } else {
                (handler, last) = (factory.makeCounter(label: label, dimensions: dimensions), 0)
            }
            published[series] = .counter(handler, total: total)
            return (handler, total >= last ? total - last : total)
        }
        if let handler, growth > 0 { handler.increment(by: Int64(growth)) }
    }

    private func gauge(_ label: String, _ dimensions: [(String, String)], value: Int) {
        let series = Series(label, dimensions)
        let handler = published.withLock { published -> any MeterHandler in
            if case .gauge(let existing)? = published[series] { return existing }
            let handler = factory.makeMeter(label: label, dimensions: dimensions)
            published[series] = .gauge(handler)
            return handler
        }
        handler.set(Int64(value))
    }

    /// What to read of one registered cache.
    private struct Source: Sendable {
        let cache: String
        let formats: @Sendable () -> [String]
        let statistics: @Sendable (String) throws -> [LayerStatistics]
        let freshness: @Sendable (String) throws -> FreshnessStatistics
        let counts: @Sendable (String) async throws -> [(layer: String, entries: Int)]
    }
}
#endif
