import ArgumentParser
import Foundation

/// Runs every benchmark, prints one table, and writes the same figures as JSON.
@main
struct HanekeBenchmarks: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "haneke-benchmarks",
        abstract: "Measures every layer of Haneke against a baseline run in the same process, interleaved."
    )

    @Flag(help: "Run every benchmark for a few iterations only, to prove they still run.")
    var smoke = false

    @Option(help: "Where to write the figures as JSON.")
    var json = "bench-results.json"

    @Option(help: "Run only the workloads whose number is listed (comma-separated), e.g. 2,5.")
    var only: String?

    func run() async throws {
        let scale = Scale(smoke: smoke)
        let selected = only.map { Set($0.split(separator: ",").map(String.init)) }
        var rows: [Row] = []
        let suites: [(workloads: Set<String>, run: (Scale) async throws -> [Row])] = [
            (["1"], MemoryStoreBenchmarks.run),
            (["2", "5"], FileStoreBenchmarks.run),
            (["3"], CompressedStoreBenchmarks.run),
            (["4", "6", "7"], ChainBenchmarks.run),
            (["8"], ThumbnailBenchmarks.run),
            (["9"], PeerBenchmarks.run),
            (["10"], SharedFolderBenchmarks.run),
            (["11"], RefreshBenchmarks.run),
            (["12"], ProxyBenchmarks.run),
            (["13"], HTTPPolicyBenchmarks.run),
            (["14"], IsolationBenchmarks.run),
            (["R"], RedisStoreBenchmarks.run),
        ]
        for suite in suites where selected.map({ !$0.isDisjoint(with: suite.workloads) }) ?? true {
            rows += try await suite.run(scale).filter { selected?.contains($0.workload) ?? true }
        }
        print(Report.table(rows))
        try Report.json(rows, smoke: smoke).write(to: URL(fileURLWithPath: json))
        print("\nwrote \(json)")
    }
}
