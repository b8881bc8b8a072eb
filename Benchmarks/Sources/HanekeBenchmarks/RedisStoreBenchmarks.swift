import Foundation
import HanekeTesting
import RedisStore

/// Workload R: RedisStore `setValue` and `value(forKey:)` with 4 KiB values at 1 and 16 requests in
/// flight, against `redis-benchmark` (the C client shipped with Redis) with the same payload,
/// keyspace and concurrency, on the same private server, interleaved in one run: over plain TCP,
/// then over TLS (certificates made for the run; `redis-benchmark --tls`), then against a private
/// Redis Cluster of 3 masters and 3 replicas (`redis-benchmark --cluster`).
///
/// `redis-benchmark -c N` opens N connections with one request in flight each; the store keeps its
/// default pool of 4 connections and pipelines the N requests over them.
enum RedisStoreBenchmarks {
    static let keyspace = 10_000

    static func run(_ scale: Scale) async throws -> [Row] {
        // Stopped at the end; on an error, the server's release kills it.
        let certificates = try await TLSTestCertificates()
        let server = try await RedisTestServer(tls: certificates)
        let benchmark = try RedisTestServer.executable(named: "redis-benchmark")
        var secure = try RedisStore.Configuration(url: server.tlsURL ?? "", keyPrefix: "bench:")
        secure.tls?.certificateAuthorityFile = certificates.authority
        let cluster = try await RedisTestCluster()
        let transports: [(name: String, store: RedisStore, port: Int, options: [String])] = [
            ("", try RedisStore(url: server.url, keyPrefix: "bench:"), server.port, []),
            (" over TLS", RedisStore(configuration: secure), server.tlsPort ?? 0, ["--tls", "--cacert", certificates.authority]),
            (" on a cluster", RedisStore(configuration: try RedisStore.Configuration(clusterURLs: cluster.urls, keyPrefix: "bench:")),
             cluster.nodes[0].port, ["--cluster"]),
        ]
        var random = SystemRandomNumberGenerator()
        let value = Data((0..<4096).map { _ in UInt8.random(in: 0...255, using: &random) })
        for store in [transports[0].store, transports[2].store] {
            for key in 0..<keyspace { try await store.setValue(value, forKey: "key:\(key)") }
        }

        var rows: [Row] = []
        for transport in transports {
            for inFlight in [1, 16] {
                let requests = scale.pick(inFlight == 1 ? 20_000 : 50_000, smoke: 500)
                for command in ["set", "get"] {
                    let result = try await Measure.interleaved(rounds: scale.rounds) {
                        try await storeRate(transport.store, command: command, value: value, requests: requests, inFlight: inFlight)
                    } baseline: {
                        try redisBenchmarkRate(
                            benchmark, port: transport.port, options: transport.options, command: command, requests: requests, inFlight: inFlight
                        )
                    }
                    let options = transport.options.isEmpty ? "" : transport.options == ["--cluster"] ? " --cluster" : " --tls --cacert CA"
                    rows.append(Row(
                        workload: "R", name: "RedisStore \(command)\(transport.name)", variant: "4 KiB, \(inFlight) in flight",
                        subject: Figure(label: command == "set" ? "setValue" : "value(forKey:)", value: result.subject, unit: "ops/s"),
                        baseline: Figure(label: "redis-benchmark -c \(inFlight)", value: result.baseline, unit: "ops/s"),
                        ratio: result.subject / result.baseline, goal: "figure", met: nil,
                        note: "redis-benchmark -p PORT\(options) -t \(command) -d 4096 -r \(keyspace) -c \(inFlight) -n \(requests) --csv"
                    ))
                }
            }
        }
        await server.stop()
        for node in cluster.nodes { await node.stop() }
        return rows
    }

    /// Operations per second of the store, `inFlight` tasks sharing `requests` operations.
    static func storeRate(_ store: RedisStore, command: String, value: Data, requests: Int, inFlight: Int) async throws -> Double {
        let seconds = try await Measure.seconds {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for task in 0..<inFlight {
                    group.addTask {
                        var random = SystemRandomNumberGenerator()
                        for _ in stride(from: task, to: requests, by: inFlight) {
                            let key = "key:\(Int.random(in: 0..<keyspace, using: &random))"
                            if command == "set" {
                                try await store.setValue(value, forKey: key)
                            } else {
                                guard try await store.value(forKey: key)?.count == value.count else {
                                    throw BenchmarkFailure(message: "GET \(key) missed")
                                }
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
        return Double(requests) / seconds
    }

    /// The requests per second `redis-benchmark` reports for the same test.
    static func redisBenchmarkRate(_ path: String, port: Int, options: [String] = [], command: String, requests: Int, inFlight: Int) throws -> Double {
        let (status, data) = try Tools.output(path, [
            "-h", "127.0.0.1", "-p", String(port)] + options + ["-t", command, "-d", "4096", "-r", String(keyspace),
            "-c", String(inFlight), "-n", String(requests), "--csv",
        ])
        // "test","rps",… then "SET","45045.04",… (with --cluster, after lines about the nodes)
        let line = String(decoding: data, as: UTF8.self).split(separator: "\n").first { $0.hasPrefix("\"\(command.uppercased())\",") }
        let fields = line?.split(separator: ",") ?? []
        guard status == 0, fields.count >= 2,
              let rps = Double(fields[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))) else {
            throw BenchmarkFailure(message: "redis-benchmark failed: \(String(decoding: data, as: UTF8.self))")
        }
        return rps
    }

    struct BenchmarkFailure: Error, CustomStringConvertible {
        var message: String
        var description: String { message }
    }
}
