import Foundation
import Haneke

/// Workload 14: what one heavy or careless user of the library costs the rest of the process.
/// - 1,000 caches made, each used once (a value set and read back) and released, one after the
///   other: the process's threads and open descriptors before, at their peak, and how long after
///   the last release they are back to where they started (goal: within 2 s).
enum IsolationBenchmarks {
    static func run(_ scale: Scale) async throws -> [Row] {
        [try await cachesMadeAndReleased(scale)]
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
            if done() { return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18 }
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
