import ArgumentParser
import Foundation
import Haneke
import SeededRandom
import LoopbackHTTPServer

struct Demo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the default stack against a real HTTP server on loopback and show what each layer did.",
        discussion: """
        Builds Cache<JSON> with the default stack (memory, then LZ4-compressed files), serves a corpus \
        of generated JSON documents from a SwiftNIO server on 127.0.0.1, and fetches every document \
        three times: cold (from the server), warm (memory cleared: from disk) and hot (from memory). \
        Prints, per pass and per layer, hits, misses and p50/p99 latency, the bytes before and after \
        LZ4, and a few files with their keys.

        Without --dir the cache goes in a new temporary folder, deleted at the end unless --keep \
        is given; a folder given with --dir is kept.
        """ + ExitStatus.help
    )

    @Option(help: ArgumentHelp("The cache's folder: a new or empty folder, or one an earlier demo made; kept at the end.", valueName: "dir"))
    var dir: String?

    @Flag(help: "Keep the temporary folder the demo makes (deleted at the end otherwise).")
    var keep = false

    @Option(parsing: .unconditional, help: ArgumentHelp("How many documents to serve and fetch (at least 1).", valueName: "n"))
    var documents = 2_000

    func validate() throws {
        guard documents >= 1 else { throw ValidationError("--documents must be at least 1 (got \(documents))") }
    }

    func run() async throws {
        let root = dir ?? NSTemporaryDirectory() + "haneke-demo-\(UUID().uuidString.prefix(8))"
        let deleting = dir == nil && !keep
        // The demo empties its cache first: it must be the demo's own.
        try await withClaimedFolder(root, deleting: deleting, what: "the demo's folder", claim: Self.claim) {
            try await show(root, deleting: deleting)
        }
    }

    /// Runs the demo with its cache in `root` and prints what it saw, ending with the commands to
    /// look closer (which say how to keep the cache when it is `deleting`).
    private func show(_ root: String, deleting: Bool) async throws {
        let server = try await LoopbackHTTPServer.start { request in
            let parts = request.uri.split(separator: "/")
            guard parts.count == 2, parts[0] == "documents", let number = Int(parts[1]) else {
                return .init(status: 404, body: Data(#"{"error":"not found"}"#.utf8))
            }
            return .init(status: 200, body: DemoCorpus.document(number), headers: [("Content-Type", "application/json")])
        }
        let cache = Cache<JSON>(name: "demo", directory: root)
        try await cache.removeAll()
        let urls = (0..<documents).map { server.baseURL.appendingPathComponent("documents/\($0)") }

        print("Haneke demo: \(documents) JSON documents from http://127.0.0.1:\(server.port), cache in \(shown(root))\(deleting ? " (deleted at the end)" : "")\n")
        var passes: [PassReport] = []
        passes.append(try await measure("cold", urls: urls, cache: cache))
        cache.removeAllFromMemory()
        passes.append(try await measure("warm (memory cleared)", urls: urls, cache: cache))
        passes.append(try await measure("hot", urls: urls, cache: cache))
        await server.shutdown()
        printTable(
            ["pass", "requests", "memory", "disk", "fetcher", "p50", "p99", "time"],
            passes.map { pass in
                [pass.name, "\(pass.latencies.count)", "\(pass.served["memory", default: 0])", "\(pass.served["disk", default: 0])",
                 "\(pass.served["fetcher", default: 0])", Self.format(Self.percentile(pass.latencies, 50)),
                 Self.format(Self.percentile(pass.latencies, 99)), String(format: "%.2f s", pass.seconds)]
            },
            rightAligned: [1, 2, 3, 4, 5, 6, 7]
        )

        print("")
        let layers = try cache.layerStatistics()
        var servedBy: [String: [Double]] = [:]
        for pass in passes { for (layer, latencies) in pass.latenciesByLayer { servedBy[layer, default: []] += latencies } }
        printTable(
            ["layer", "hits", "misses", "writes", "errors", "served p50", "served p99"],
            layers.map { layer in
                let served = servedBy[layer.name] ?? []
                return [layer.name, "\(layer.statistics.hits)", "\(layer.statistics.misses)", "\(layer.statistics.writes)",
                        "\(layer.statistics.errors)", served.isEmpty ? "—" : Self.format(Self.percentile(served, 50)),
                        served.isEmpty ? "—" : Self.format(Self.percentile(served, 99))]
            },
            rightAligned: [1, 2, 3, 4, 5, 6]
        )

        if let compression = try cache.compressionStatistics(), let disk = try await cache.diskStore() {
            try await cache.flush()
            // Reading every header is file-system work: on the store's executor, not a cooperative
            // thread, and once for both the sizes and the sample files.
            let entries = try await disk.executor.run { disk.entries() }
            let inFiles = entries.reduce(0) { $0 + $1.storedSize }
            print("\nbytes: \(ByteSize.format(compression.bytesBeforeCompression)) of JSON → \(ByteSize.format(compression.bytesAfterCompression)) of LZ4 frames (ratio \(String(format: "%.2f", compression.ratio ?? 0))) → \(ByteSize.format(inFiles)) in files with their headers, \(ByteSize.format(disk.totalSize + disk.metadataSize)) on disk in blocks, as du counts\n")
            print("a few files (each named by the MD5 of its key, in a shard folder of its first two digits):")
            for entry in entries.prefix(3) {
                print("  \(shownKey(entry.key))\n    → \(shown(entry.path))")
            }
            let tool = toolInvocation
            let folder = deleting ? "DIR/" + (disk.directory as NSString).lastPathComponent : Self.shellWord(disk.directory)
            print(deleting
                ? "\nlook closer: this run's cache is deleted as it ends; run `\(tool) demo --keep` to keep it, then (DIR being the folder it prints):"
                : "\nlook closer:")
            print("  \(tool) inspect \(folder)\n  \(tool) verify \(folder)\n  \(tool) get \(folder) \(urls[0].absoluteString)")
        }
    }

    /// `path` as one word for a POSIX shell: as it is when it holds only safe characters, else in
    /// single quotes.
    static func shellWord(_ path: String) -> String {
        let safe = path.unicodeScalars.allSatisfy { CharacterSet.alphanumerics.contains($0) || "/._-+:,=@%".unicodeScalars.contains($0) }
        return safe ? path : "'" + path.replacingOccurrences(of: "'", with: #"'\''"#) + "'"
    }

    /// The file that marks a folder as a demo cache.
    static let markerName = ".haneke-demo"

    /// Makes sure `folder` is the demo's to use (and to empty): a folder that does not exist yet, an
    /// empty one, or one an earlier demo marked. Anything else is refused, untouched.
    static func claim(_ folder: String) throws {
        try claimFolder(
            folder, marker: markerName, command: "haneke demo",
            refusal: " (the demo empties its cache)",
            markerText: "A cache made by `haneke demo`, which empties it on every run.\n"
        )
    }

    /// One pass over every URL, one request at a time, so that each request is attributed to the
    /// layer that served it (the layer whose hits went up).
    private func measure(_ name: String, urls: [URL], cache: Cache<JSON>) async throws -> PassReport {
        var report = PassReport(name: name)
        let start = ContinuousClock.now
        for url in urls {
            let before = try cache.layerStatistics()
            let requestStart = ContinuousClock.now
            _ = try await cache.fetch(url: url)
            let elapsed = Self.microseconds(ContinuousClock.now - requestStart)
            let after = try cache.layerStatistics()
            let layer = zip(before, after).first { $1.statistics.hits > $0.statistics.hits }?.1.name ?? "?"
            report.latencies.append(elapsed)
            report.served[layer, default: 0] += 1
            report.latenciesByLayer[layer, default: []].append(elapsed)
        }
        report.seconds = Self.microseconds(ContinuousClock.now - start) / 1e6
        return report
    }

    private struct PassReport {
        var name: String
        var latencies: [Double] = []
        var served: [String: Int] = [:]
        var latenciesByLayer: [String: [Double]] = [:]
        var seconds = 0.0
    }

    private static func microseconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) * 1e6 + Double(duration.components.attoseconds) / 1e12
    }

    private static func percentile(_ values: [Double], _ p: Double) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return 0 }
        return sorted[min(sorted.count - 1, max(0, Int((p / 100 * Double(sorted.count)).rounded(.up)) - 1))]
    }

    private static func format(_ microseconds: Double) -> String {
        microseconds >= 1000 ? String(format: "%.2f ms", microseconds / 1000) : String(format: "%.1f µs", microseconds)
    }
}

/// The demo's documents: JSON like an API's, a few KiB each, the same for the same number.
enum DemoCorpus {
    static func document(_ number: Int) -> Data {
        var random = SeededRandomNumberGenerator(seed: UInt64(number))
        let cities = ["Lisbon", "Oslo", "Quito", "Hanoi", "Perth", "Dakar", "Lima", "Riga"]
        let tags = ["swift", "cache", "linux", "lz4", "disk", "memory", "redis", "nio"]
        let items = (0..<(8 + number % 12)).map { item -> String in
            let city = cities[Int(random.next() % UInt64(cities.count))]
            let chosen = (0..<3).map { _ in "\"\(tags[Int(random.next() % UInt64(tags.count))])\"" }.joined(separator: ",")
            return #"{"id":\#(number * 100 + item),"name":"item \#(item) of document \#(number)","city":"\#(city)","tags":[\#(chosen)],"score":\#(random.next() % 10_000),"active":\#(random.next() % 2 == 0)}"#
        }
        return Data(#"{"document":\#(number),"title":"Document \#(number)","items":[\#(items.joined(separator: ","))]}"#.utf8)
    }
}
