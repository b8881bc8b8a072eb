import ArgumentParser
import Foundation
import HanekeProtocols

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

    @OptionGroup(title: "Hit ratio (instead of the workloads)")
    var hitRatio: HitRatioOptions

    func run() async throws {
        if hitRatio.requested {
            // Off the cooperative pool: it reads and writes trace files, and `--stores file` drives
            // a FileStore's synchronous API.
            let command = try hitRatio.command()
            guard try await IOExecutor.shared.run({ try command.run() }) else { throw ExitCode.failure }
            return
        }
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
            (["15"], MetricsBenchmarks.run),
            (["16"], KeyValueCoherenceBenchmarks.run),
            (["R"], RedisStoreBenchmarks.run),
            (["RC"], CoherenceBenchmarks.run),
        ]
        for suite in suites where selected.map({ !$0.isDisjoint(with: suite.workloads) }) ?? true {
            rows += try await suite.run(scale).filter { selected?.contains($0.workload) ?? true }
        }
        print(Report.table(rows))
        try Report.json(rows, smoke: smoke).write(to: URL(fileURLWithPath: json))
        print("\nwrote \(json)")
    }
}

/// The flags of the hit-ratio replay (`HitRatioCommand`).
struct HitRatioOptions: ParsableArguments {
    @Flag(name: .customLong("hit-ratio"), help: "Replay traces through the eviction policies (every synthetic trace unless --trace is given) and print one JSON line per store, policy and size.")
    var enabled = false

    @Option(help: "A trace: one key per line, optionally followed by its size in bytes.")
    var trace: String?

    @Option(help: "Cache sizes as fractions of the distinct keys (of the distinct bytes with --bytes).")
    var sizes: String?

    @Option(help: "Write the synthetic trace of this name to --out and stop (names: \(SyntheticTrace.allCases.map(\.rawValue).joined(separator: ", "))).")
    var generate: String?

    @Option(help: "Where --generate writes its trace.")
    var out: String?

    @Option(help: "Synthetic traces to replay (comma-separated; default all).")
    var traces: String?

    @Option(help: "Policies to replay (comma-separated; default all; LRU and Bélády always).")
    var policies: String?

    @Option(help: "Requests in each synthetic trace (default 2000000).")
    var requests: Int?

    @Option(help: "Keys each synthetic trace draws from (default 200000).")
    var keys: Int?

    @Option(help: "Seed of the synthetic traces (default 1).")
    var seed: Int?

    @Flag(help: "Capacities in bytes: synthetic traces get sizes, a trace file must carry them.")
    var bytes = false

    @Flag(name: .customLong("with-sizes"), help: "Give synthetic traces deterministic sizes (100 B to 1 MiB).")
    var withSizes = false

    @Flag(name: .customLong("hit-ratio-check"), help: "Run the simulators' self-checks (Zipf sampler, LRU against a reference, capacities, Bélády's bound) and stop.")
    var check = false

    @Option(help: "Real stores to replay each trace through besides the simulators (comma-separated: memory, file, sqlite; or none). memory by default; a FileStore writes a file per miss and an SQLiteStore a transaction, so give them a short trace; sqlite needs --bytes.")
    var stores: String?

    @Option(name: .customLong("parameter"), help: "Override a policy parameter, NAME=VALUE (repeatable).")
    var parameters: [String] = []

    /// Whether any hit-ratio work was asked for.
    var requested: Bool { enabled || generate != nil || check }

    func command() throws -> HitRatioCommand {
        do {
            return try HitRatioCommand(
                generate: generate, out: out, trace: trace, check: check, traces: traces, sizes: sizes, policies: policies,
                stores: stores, requests: requests, keys: keys, seed: seed, bytes: bytes, withSizes: withSizes, parameters: parameters
            )
        } catch let error as HitRatioCommand.UsageError {
            throw ValidationError(error.description)
        }
    }
}
