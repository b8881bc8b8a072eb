import FileStore
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Haneke
import HanekeProtocols
import Images

/// Workload 14: what one heavy or careless user of the library costs the rest of the process.
/// - 1-byte `FileStore` reads while sixteen 100-megapixel 16-bit PNGs resize (the pixel limit
///   lifted, as an app that raised it would), against the same reads alone: p99 ≤ 5 ms.
/// - Small fetches from a loopback origin while a 4 GiB gzip bomb downloads from it again and
///   again, against the same fetches alone: p99 ≤ 50 ms. The same with a `URLSession` of the
///   caller's own, as every fetch went before, for comparison.
/// - 1,000 caches made, each used once (a value set and read back) and released, one after the
///   other: the process's threads and open descriptors before, at their peak, and how long after
///   the last release they are back to where they started (goal: within 2 s).
enum IsolationBenchmarks {
    static func run(_ scale: Scale) async throws -> [Row] {
        [
            try await diskReadsBesideResizes(scale),
            try await fetchesBesideABomb(scale),
            try await cachesMadeAndReleased(scale),
        ]
    }

    // MARK: - Disk reads beside resizes

    static func diskReadsBesideResizes(_ scale: Scale) async throws -> Row {
        let count = scale.pick(16, smoke: 2)
        let side = scale.pick(10_000, smoke: 1_000)
        let png = try Data(contentsOf: URL(fileURLWithPath: try hostilePNG(side: side)))
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("haneke-bench-14-reads-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let store = try FileStore(directory: folder)
        try await store.setValue(Data([1]), forKey: "one")
        await store.waitUntilIndexed()
        let image = try Image(data: png, pixelLimit: nil)
        let resizer = ImageResizer(size: ImageSize(width: 256, height: 256), pixelLimit: nil, timeLimit: nil)
        let alone = try await latencies(count: scale.pick(2_000, smoke: 100)) { _ = try await store.value(forKey: "one") }
        let start = ContinuousClock.now
        let resizes = Task {
            await withTaskGroup(of: Bool.self) { group in
                for _ in 0..<count { group.addTask { (try? await resizer.resize(image)) != nil } }
                return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
        }
        let during = Task { try await latenciesUntilCancelled { _ = try await store.value(forKey: "one") } }
        let resized = await resizes.value
        let resizeSeconds = (ContinuousClock.now - start).seconds
        during.cancel()
        let reads = try await during.value
        let p99 = Measure.percentile(reads, 99)
        let p99Alone = Measure.percentile(alone, 99)
        let p50 = Measure.percentile(reads, 50)
        print(String(format: "#14 1-byte FileStore reads beside %d resizes of %d×%d 16-bit PNGs (%.1f s, %d done): p50 %.3f ms, p99 %.3f ms, max %.1f ms over %d reads; alone p99 %.3f ms", count, side, side, resizeSeconds, resized, p50, p99, reads.max() ?? .nan, reads.count, p99Alone))
        return Row(
            workload: "14", name: "Isolation: disk reads beside resizes", variant: "\(count) PNGs of \(side)×\(side), 16-bit RGBA",
            subject: Figure(label: "p99 during", value: p99, unit: "ms"),
            baseline: Figure(label: "p99 alone", value: p99Alone, unit: "ms"),
            ratio: p99Alone / p99, goal: "p99 ≤ 5 ms", met: p99 <= 5 && resized == count,
            note: String(format: "%d reads of 1 byte, one every millisecond, while the resizes ran (%.1f s, on IOExecutor.compute, %d of %d done): p50 %.3f ms, max %.1f ms", reads.count, resizeSeconds, resized, count, p50, reads.max() ?? .nan)
        )
    }

    /// A PNG of `side` × `side` pixels of black, 16-bit RGBA, written once by the `vips` tool (778
    /// KB for 10,000 × 10,000) and kept in the package's build folder.
    static func hostilePNG(side: Int) throws -> String {
        let vips = try Tools.require("/usr/bin/vips", package: "libvips-tools")
        let folder = Tools.packageRoot + "/.build/isolation"
        let path = folder + "/black-\(side)-16bit.png"
        guard !FileManager.default.fileExists(atPath: path) else { return path }
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let black = folder + "/black.v", wide = folder + "/wide.v"
        defer { for file in [black, wide] { try? FileManager.default.removeItem(atPath: file) } }
        guard Tools.succeeds([vips, "black", black, "\(side)", "\(side)", "--bands", "4"]),
              Tools.succeeds([vips, "cast", black, wide, "ushort"]),
              Tools.succeeds([vips, "pngsave", wide, path + ".tmp", "--bitdepth", "16", "--compression", "9"])
        else { throw Tools.Failure(message: "vips could not write the \(side)×\(side) 16-bit PNG") }
        try FileManager.default.moveItem(atPath: path + ".tmp", toPath: path)
        return path
    }

    // MARK: - Fetches beside a gzip bomb

    static func fetchesBesideABomb(_ scale: Scale) async throws -> Row {
        let nginx = try Tools.require("/usr/sbin/nginx", package: "nginx-light")
        let bombSize = scale.pick(4 << 30, smoke: 64 << 20)
        let bomb = try gzipBomb(size: bombSize)
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("haneke-bench-14-bomb-\(getpid())").path
        let port = try ProxyBenchmarks.freePort()
        func cleanUp() async {
            _ = try? await IOExecutor.shared.run {
                ProxyBenchmarks.stopNginx(nginx, scratch: scratch)
                try? FileManager.default.removeItem(atPath: scratch)
            }
        }
        do {
            try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
            try origin(scratch: scratch, port: port, bomb: bomb).write(toFile: scratch + "/nginx.conf", atomically: true, encoding: .utf8)
            try await Spawn.run(nginx, ["-p", scratch + "/", "-c", scratch + "/nginx.conf"]).check("nginx")
            try await ProxyBenchmarks.waitForPort(port)
            let small = URL(string: "http://127.0.0.1:\(port)/small")!
            let bombURL = URL(string: "http://127.0.0.1:\(port)/bomb")!
            let count = scale.pick(300, smoke: 20)
            let alone = try await latencies(count: count) { _ = try await NetworkFetcher<Data>(url: small).fetch("unused") }
            let (during, bombs) = try await besideBombs(bombURL, session: nil) {
                try await latencies(count: count) { _ = try await NetworkFetcher<Data>(url: small).fetch("unused") }
            }
            // As before: a URLSession of the caller's own, whose one thread inflates the bomb.
            var before = ""
            if !scale.smoke {
                let session = URLSession(configuration: .ephemeral)
                let (slow, slowBombs) = try await besideBombs(bombURL, session: session) {
                    try await latencies(count: 3) { _ = try await NetworkFetcher<Data>(url: small, session: session).fetch("unused") }
                }
                before = String(format: "; through a URLSession of the caller's own (as every fetch before issue 28): 3 fetches, slowest %.0f ms, %d bombs", slow.max() ?? .nan, slowBombs)
            }
            await cleanUp()
            let p99 = Measure.percentile(during, 99)
            let p99Alone = Measure.percentile(alone, 99)
            print(String(format: "#14 small fetches beside a %d MiB gzip bomb (%d bombs fetched meanwhile, each failing at 64 MiB): p50 %.2f ms, p99 %.2f ms; alone p99 %.2f ms", bombSize >> 20, bombs, Measure.percentile(during, 50), p99, p99Alone) + before)
            return Row(
                workload: "14", name: "Isolation: fetches beside a gzip bomb", variant: "\(bombSize >> 20) MiB of zeros, gzip -1",
                subject: Figure(label: "p99 during", value: p99, unit: "ms"),
                baseline: Figure(label: "p99 alone", value: p99Alone, unit: "ms"),
                ratio: p99Alone / p99, goal: "p99 ≤ 50 ms", met: p99 <= 50 && bombs > 0,
                note: String(format: "%d small fetches one after the other, while bombs were fetched again and again (%d, each failing at the 64 MiB maximumBodySize): p50 %.2f ms, max %.1f ms", during.count, bombs, Measure.percentile(during, 50), during.max() ?? .nan) + before
            )
        } catch {
            await cleanUp()
            throw error
        }
    }

    /// Runs `body` while the bomb is fetched again and again; what `body` returned, and how many
    /// bomb fetches ended meanwhile.
    private static func besideBombs<T: Sendable>(
        _ bomb: URL, session: URLSession?, _ body: () async throws -> T
    ) async throws -> (T, Int) {
        let bombs = Task {
            var fetched = 0
            while !Task.isCancelled {
                _ = try? await NetworkFetcher<Data>(url: bomb, session: session).fetch("unused")
                fetched += 1
            }
            return fetched
        }
        // The first bomb under way first.
        try await Task.sleep(for: .milliseconds(50))
        let result = try await body()
        bombs.cancel()
        return (result, await bombs.value)
    }

    /// `size` zero bytes gzip-compressed by `gzip -1`, written once and kept in the package's
    /// build folder (4 GiB take 18 MB).
    static func gzipBomb(size: Int) throws -> String {
        let folder = Tools.packageRoot + "/.build/isolation"
        let path = folder + "/zeros-\(size >> 20)M.gz"
        guard !FileManager.default.fileExists(atPath: path) else { return path }
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        guard Tools.succeeds(["/bin/sh", "-c", "head -c \(size) /dev/zero | gzip -1 > '\(path).tmp'"]) else {
            throw Tools.Failure(message: "gzip could not write the bomb")
        }
        try FileManager.default.moveItem(atPath: path + ".tmp", toPath: path)
        return path
    }

    /// nginx as the origin: `/small` a few bytes, `/bomb` the gzip file with `Content-Encoding: gzip`.
    static func origin(scratch: String, port: Int, bomb: String) -> String {
        ProxyBenchmarks.nginxFile(scratch: scratch, workers: "1", connections: 1024, http: """
            server {
                listen 127.0.0.1:\(port);
                location = /small { default_type text/plain; return 200 "small"; }
                location = /bomb { default_type application/octet-stream; add_header Content-Encoding gzip; alias \(bomb); }
            }
            """)
    }

    /// The latency in milliseconds of each of `count` calls of `body`, one after the other.
    private static func latencies(count: Int, _ body: () async throws -> Void) async throws -> [Double] {
        var results: [Double] = []
        results.reserveCapacity(count)
        for _ in 0..<count { results.append(try await Measure.seconds(body) * 1_000) }
        return results
    }

    /// The latency in milliseconds of calls of `body`, one every millisecond, until the task is
    /// cancelled.
    private static func latenciesUntilCancelled(_ body: () async throws -> Void) async throws -> [Double] {
        var results: [Double] = []
        while !Task.isCancelled {
            results.append(try await Measure.seconds(body) * 1_000)
            try? await Task.sleep(for: .milliseconds(1))
        }
        return results
    }

    // MARK: - Caches made and released

    static func cachesMadeAndReleased(_ scale: Scale) async throws -> Row {
        let count = scale.pick(1_000, smoke: 50)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("haneke-bench-14-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        // One cache made and released first, so that what a process keeps once for all its caches
        // (the executors' first threads, shared sessions) is in the starting count.
        try await useOnce(Cache<Data>(name: "warm-up", directory: folder + "/warm-up"))
        _ = try await settle(until: .seconds(2)) { false }
        let start = ProcessCounts.now()
        var peak = start
        let value = Data(repeating: 0x61, count: 1_024)
        let madeIn = try await Measure.seconds {
            for index in 0..<count {
                try await useOnce(Cache<Data>(name: "cache-\(index)", directory: folder + "/cache-\(index)"), value: value)
                peak = peak.max(ProcessCounts.now())
            }
        }
        var after = ProcessCounts.now()
        peak = peak.max(after)
        let back = try await settle(until: .seconds(2)) {
            after = ProcessCounts.now()
            return after.threads <= start.threads && after.descriptors <= start.descriptors
        }
        let backIn = back.map { String(format: "%.2f s", $0) } ?? "not within 2 s"
        print(
            "#14 \(count) caches made and released in \(String(format: "%.1f", madeIn)) s: threads \(start.threads) → peak \(peak.threads) → \(after.threads), descriptors \(start.descriptors) → peak \(peak.descriptors) → \(after.descriptors); back to the start: \(backIn)"
        )
        return Row(
            workload: "14", name: "Isolation: caches made and released", variant: "\(count) caches, one after the other",
            subject: Figure(label: "peak descriptors", value: Double(peak.descriptors), unit: "fds"),
            baseline: Figure(label: "at the start", value: Double(start.descriptors), unit: "fds"),
            ratio: nil,
            goal: "threads and fds back to the start within 2 s",
            met: back != nil,
            note: "threads \(start.threads) → peak \(peak.threads) → \(after.threads); descriptors \(start.descriptors) → peak \(peak.descriptors) → \(after.descriptors); back to the start: \(backIn); each cache the default stack in a folder of its own, one value set and read back"
        )
    }

    private static func useOnce(_ cache: Cache<Data>, value: Data = Data("x".utf8)) async throws {
        try await cache.set(value, forKey: "key")
        _ = try await cache.fetch(key: "key")
    }

    /// Polls `done` every 20 ms for at most `limit`; the seconds it took, or `nil` if it never was.
    private static func settle(until limit: Duration, _ done: () -> Bool) async throws -> Double? {
        let start = ContinuousClock.now
        while true {
            let elapsed = ContinuousClock.now - start
            if done() { return elapsed.seconds }
            if elapsed >= limit { return nil }
            try await Task.sleep(for: .milliseconds(20))
        }
    }
}

/// The process's threads and open descriptors, read from `/proc/self`.
struct ProcessCounts: Sendable {
    var threads: Int
    var descriptors: Int

    static func now() -> ProcessCounts {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let threads = status.split(separator: "\n").first { $0.hasPrefix("Threads:") }
            .flatMap { Int($0.dropFirst("Threads:".count).trimmingCharacters(in: .whitespaces)) } ?? -1
        // The listing's own descriptor is open while it reads the folder.
        let descriptors = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd"))?.count ?? 0) - 1
        return ProcessCounts(threads: threads, descriptors: descriptors)
    }

    func max(_ other: ProcessCounts) -> ProcessCounts {
        ProcessCounts(threads: Swift.max(threads, other.threads), descriptors: Swift.max(descriptors, other.descriptors))
    }
}
