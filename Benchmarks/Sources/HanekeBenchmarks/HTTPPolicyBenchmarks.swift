import Foundation
import Haneke
import HanekeTesting
import HTTPCaching

/// Workload 13: what HTTP's caching rules cost a memory hit of `cache.fetch(url:)`, against the
/// same hit through a `NetworkFetcher` without a cache policy (an entry served while it lives), in
/// the same cache, interleaved. Two stored responses: `max-age` with an `ETag` (decided from the
/// entry's prefix), and GitHub's API's fields with its seven-name `Vary` (the record decoded).
enum HTTPPolicyBenchmarks {
    static func run(_ scale: Scale) async throws -> [Row] {
        // Many short rounds, interleaved: the machine's speed swings by half between seconds.
        let calls = scale.pick(30_000, smoke: 1_000)
        let rounds = scale.pick(21, smoke: 1)
        var rows: [Row] = []
        let responses: [(variant: String, fields: HTTPHeaderFields)] = [
            ("max-age, ETag", ["Cache-Control": "max-age=3600", "ETag": "\"v1\"", "Content-Type": "application/json"]),
            ("GitHub's fields, Vary of 7 names", [
                "Cache-Control": "private, max-age=60, s-maxage=60",
                "ETag": "W/\"a1b2c3d4e5f60718293a4b5c6d7e8f90\"",
                "Last-Modified": "Tue, 24 Nov 2026 10:00:00 GMT",
                "Content-Type": "application/json; charset=utf-8",
                "Vary": "Accept, Authorization, Cookie, X-GitHub-OTP, Accept-Encoding, Accept, X-Requested-With",
                "X-GitHub-Media-Type": "github.v3; format=json",
                "X-RateLimit-Limit": "60",
            ]),
        ]
        for (variant, fields) in responses {
            let clock = TestClock()
            let policy = HTTPCachePolicy.fetcherDefault
            let url = URL(string: "https://api.github.com/users/haneke")!
            let request = HTTPCacheRequest(uri: url.absoluteString)
            let response = HTTPResponse(status: 200, headers: fields)
            let stored = policy.storedResponse(response, for: request, requestTime: clock.now(), responseTime: clock.now())
            guard let attributes = policy.entryAttributes(of: stored, retention: .seconds(86_400)) else {
                throw Tools.Failure(message: "workload 13: the stored response got no attributes")
            }
            // The default stack (memory, then LZ4 files) in a temporary folder, the response stored
            // in both layers as a fetch stores it; every read below is a memory hit.
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("haneke-bench-13-\(UUID().uuidString)").path
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let cache = Cache<Data>(name: "policy", directory: folder, clock: clock)
            let body = Data(repeating: 0x7B, count: 1_024)
            _ = try await cache.fetch(key: url.absoluteString, fetcher: StoredEntryFetcher(entry: StoreEntry(value: body, attributes: attributes)))
            let unjudged = NetworkFetcher<Data>.Configuration(cachePolicy: nil)

            let withPolicy: () async throws -> Double = {
                let seconds = try await Measure.seconds {
                    for _ in 0..<calls { _ = try await cache.fetch(url: url) }
                }
                return seconds / Double(calls) * 1e9
            }
            let without: () async throws -> Double = {
                let seconds = try await Measure.seconds {
                    for _ in 0..<calls {
                        _ = try await cache.fetch(
                            key: url.absoluteString, fetcher: NetworkFetcher<Data>(url: url, configuration: unjudged, clock: clock)
                        )
                    }
                }
                return seconds / Double(calls) * 1e9
            }
            // Slower per call is worse: measured as nanoseconds, compared as a difference. The
            // fastest round of each side is its CPU cost (timeit's rule: slower rounds measure the
            // machine's other work); the medians are reported beside it.
            var policyRounds: [Double] = []
            var plainRounds: [Double] = []
            _ = try await Measure.interleaved(
                rounds: rounds,
                subject: { let nanos = try await withPolicy(); policyRounds.append(nanos); return nanos },
                baseline: { let nanos = try await without(); plainRounds.append(nanos); return nanos }
            )
            let policyNanos = policyRounds.min() ?? .nan
            let plainNanos = plainRounds.min() ?? .nan
            let medianCost = (Measure.median(policyRounds) - Measure.median(plainRounds)) / 1_000
            let layers = try cache.layerStatistics()
            let fetcherStatistics = layers.last?.statistics
            let diskHits = layers.first { $0.name == "disk" }?.statistics.hits ?? 0
            let cost = (policyNanos - plainNanos) / 1_000
            print(String(format: "#13 HTTP policy on a memory hit (%@): %.0f ns against %.0f ns without a policy (fastest rounds); cost %.3f µs (medians: %.3f µs)", variant, policyNanos, plainNanos, cost, medianCost))
            rows.append(Row(
                workload: "13", name: "HTTP policy: memory hit", variant: variant,
                subject: Figure(label: "with policy", value: policyNanos / 1_000, unit: "µs"),
                baseline: Figure(label: "no policy", value: plainNanos / 1_000, unit: "µs"),
                ratio: plainNanos / policyNanos, goal: "cost ≤ 1 µs", met: cost <= 1 && fetcherStatistics?.hits == 1 && diskHits == 0,
                note: String(format: "cost %.3f µs per hit (fastest rounds; the medians differ by %.3f µs); %d sequential hits per round, %d interleaved rounds; the default stack (memory, then LZ4 files), every read a memory hit (fetcher calls: %d, the one that stored it)", cost, medianCost, calls, rounds, fetcherStatistics?.hits ?? -1)
            ))
        }
        return rows
    }
}

/// Hands the cache one prepared entry: the response as `NetworkFetcher` would have stored it.
private struct StoredEntryFetcher: Fetcher {
    let entry: StoreEntry<Data>

    func fetch(_ key: String) async throws -> Data { entry.value }

    func fetchEntry(_ key: String) async throws -> StoreEntry<Data> { entry }
}
