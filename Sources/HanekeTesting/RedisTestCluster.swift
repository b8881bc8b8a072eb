import Foundation
import HanekeProtocols

/// A private Redis Cluster for tests: masters and their replicas, each a ``RedisTestServer`` on
/// loopback with its own cluster bus port, joined by `redis-cli --cluster create`.
///
/// ```swift
/// let cluster = try await RedisTestCluster()          // 3 masters, 3 replicas
/// let reply = try await cluster.command(["CLUSTER", "KEYSLOT", "user:{42}:name"], node: 0)
/// ```
///
/// Each node runs with `--cluster-enabled yes`, a node timeout of ``nodeTimeout`` (a killed
/// master's replica takes over after it, however long it was apart from its master), and the
/// arguments of a ``RedisTestServer``. The cluster
/// is ready when every node reports `cluster_state:ok` and agrees on the slots' owners. `redis-cli` comes
/// from Debian's `redis-tools`.
public final class RedisTestCluster: Sendable {
    /// The nodes: the first `masters` were made masters, the rest replicas.
    public let nodes: [RedisTestServer]
    /// How long a node may go unanswered before the cluster counts it as failed.
    public let nodeTimeout: Duration
    private let cli: String
    /// The arguments every node starts with.
    private let nodeArguments: [String]

    /// The nodes' URLs, `redis://127.0.0.1:<port>`: seeds for a client.
    public var urls: [String] { nodes.map(\.url) }

    /// Starts `masters × (1 + replicasPerMaster)` nodes, makes them one cluster whose slots are
    /// spread evenly over the masters, and waits until every node agrees that it is ready.
    /// - Parameters:
    ///   - masters: How many masters; 3 by default (Redis's least for a cluster).
    ///   - replicasPerMaster: Replicas of each master; 1 by default.
    ///   - nodeTimeout: The cluster's node timeout; one second by default.
    /// - Throws: ``RedisTestServer/Failure`` when a node does not start or the cluster does not form.
    public init(masters: Int = 3, replicasPerMaster: Int = 1, nodeTimeout: Duration = .seconds(1)) async throws {
        cli = try RedisTestServer.executable(named: "redis-cli")
        self.nodeTimeout = nodeTimeout
        let milliseconds = String(nodeTimeout.components.seconds * 1_000 + nodeTimeout.components.attoseconds / 1_000_000_000_000_000)
        nodeArguments = ["--cluster-node-timeout", milliseconds, "--cluster-replica-validity-factor", "0"]
        var nodes: [RedisTestServer] = []
        for _ in 0..<(masters * (1 + replicasPerMaster)) {
            nodes.append(try await RedisTestServer(arguments: nodeArguments, tls: nil, requireClientCertificates: false, clusterNode: true))
        }
        self.nodes = nodes
        let addresses = nodes.map { "127.0.0.1:\($0.port)" }
        _ = try await redisCLI(["--cluster", "create"] + addresses + ["--cluster-replicas", String(replicasPerMaster), "--cluster-yes"], in: nodes[0])
        try await waitUntilReady()
    }

    /// Sends one command to node `node` with `redis-cli` and returns its reply as `redis-cli`
    /// prints it (one line per element of an array).
    /// - Throws: ``RedisTestServer/Failure`` when `redis-cli` fails.
    public func command(_ arguments: [String], node: Int) async throws -> String {
        try await command(arguments, on: nodes[node])
    }

    /// Sends one command to `server` (a node started by ``startSpareNode()``), as
    /// ``command(_:node:)`` does.
    /// - Throws: ``RedisTestServer/Failure`` when `redis-cli` fails.
    public func command(_ arguments: [String], on server: RedisTestServer) async throws -> String {
        try await redisCLI(["-p", String(server.port), "--no-raw"] + arguments, in: server).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The cluster's name for `server`, one of its nodes (`CLUSTER MYID`).
    /// - Throws: ``RedisTestServer/Failure`` when `redis-cli` fails.
    public func id(of server: RedisTestServer) async throws -> String {
        try await command(["CLUSTER", "MYID"], on: server).replacingOccurrences(of: "\"", with: "")
    }

    /// Starts one more node, a master holding no slot (not one of ``nodes``), and joins it to the
    /// cluster (`CLUSTER MEET`): a node for slots to move to, as when a cluster grows. Returns once
    /// it and every running node count each other as connected and it counts the cluster as up;
    /// gives up after a minute. The caller stops it (it stops when released).
    /// - Throws: ``RedisTestServer/Failure`` when it does not start or does not join.
    public func startSpareNode() async throws -> RedisTestServer {
        let spare = try await RedisTestServer(arguments: nodeArguments, tls: nil, requireClientCertificates: false, clusterNode: true)
        let id = try await id(of: spare)
        guard let first = nodes.indices.first(where: { nodes[$0].isRunning }) else {
            throw RedisTestServer.Failure(message: "No node of the test cluster runs")
        }
        // Its cluster bus listens on a port of its own, not the default (its port + 10,000).
        guard let bus = spare.arguments.firstIndex(of: "--cluster-port").map({ spare.arguments[$0 + 1] }) else {
            throw RedisTestServer.Failure(message: "The spare node has no cluster bus port")
        }
        _ = try await command(["CLUSTER", "MEET", "127.0.0.1", String(spare.port), bus], node: first)
        let deadline = ContinuousClock.now + .seconds(60)
        var last = ""
        while ContinuousClock.now < deadline {
            // Every running node knows it, and it knows every running node.
            var joined = true
            let known = try await command(["CLUSTER", "NODES"], on: spare)
            for index in nodes.indices where nodes[index].isRunning && joined {
                let line = try await command(["CLUSTER", "NODES"], node: index).split(whereSeparator: \.isNewline).first { $0.contains(id) } ?? ""
                let itsLine = known.split(whereSeparator: \.isNewline).first { $0.contains("127.0.0.1:\(nodes[index].port)@") } ?? ""
                if !line.contains(" connected") || line.contains("handshake") {
                    joined = false
                    last = "node \(index) sees it as: \(line.isEmpty ? "unknown" : String(line))"
                } else if !itsLine.contains(" connected") || itsLine.contains("handshake") {
                    joined = false
                    last = "it sees node \(index) as: \(itsLine.isEmpty ? "unknown" : String(itsLine))"
                }
            }
            if joined, !(try await command(["CLUSTER", "INFO"], on: spare)).contains("cluster_state:ok") {
                joined = false
                last = "it does not count the cluster as up yet"
            }
            if joined { return spare }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw RedisTestServer.Failure(message: "The spare node did not join the test cluster: \(last)")
    }

    /// Runs `redis-cli` with `arguments` in the folder of `server`, on the I/O executor (it
    /// waits for the process), and returns what it printed.
    private func redisCLI(_ arguments: [String], in server: RedisTestServer) async throws -> String {
        let cli = cli
        let folder = server.directory.path
        return try await IOExecutor.shared.run { try runTool(cli, arguments, in: folder) }
    }

    /// Waits until every running master's replicas have received all it has written (their
    /// offsets in `INFO replication` reach the master's), so that a replica taking over has every
    /// write made before. Gives up after a minute.
    /// - Throws: ``RedisTestServer/Failure`` naming the master behind.
    public func waitUntilReplicated() async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        var last = ""
        while ContinuousClock.now < deadline {
            var behind = false
            for index in nodes.indices where nodes[index].isRunning {
                let info = try await command(["INFO", "replication"], node: index)
                guard info.contains("role:master") else { continue }
                let lines = info.split(whereSeparator: \.isNewline)
                let offset = lines.first { $0.hasPrefix("master_repl_offset:") }.flatMap { Int($0.split(separator: ":")[1]) } ?? 0
                let replicas = lines.filter { $0.hasPrefix("slave") && $0.contains("offset=") }.map { line in
                    line.split(separator: ",").first { $0.hasPrefix("offset=") }.flatMap { Int($0.dropFirst("offset=".count)) } ?? -1
                }
                if replicas.contains(where: { $0 < offset }) {
                    behind = true
                    last = "node \(index) at offset \(offset), its replicas at \(replicas)"
                }
            }
            if !behind { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw RedisTestServer.Failure(message: "The test cluster's replicas did not catch up: \(last)")
    }

    /// Waits until every running node reports `cluster_state:ok`, every replica is synchronized
    /// with its master, and `redis-cli --cluster check` finds the nodes agreeing on the slots, all
    /// covered. Gives up after a minute.
    /// - Throws: ``RedisTestServer/Failure`` naming what the nodes said last.
    public func waitUntilReady() async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        var last = ""
        while ContinuousClock.now < deadline {
            let running = nodes.indices.filter { nodes[$0].isRunning }
            var ready = !running.isEmpty
            for index in running where ready {
                let info = (try? await command(["CLUSTER", "INFO"], node: index)) ?? ""
                if !info.contains("cluster_state:ok") {
                    ready = false
                    last = "node \(index): \(info.split(separator: "\n").first ?? "no answer")"
                    continue
                }
                // A replica that has not synchronized yet would not take over from its master.
                let replication = (try? await command(["INFO", "replication"], node: index)) ?? ""
                if replication.contains("role:slave"), !replication.contains("master_link_status:up") {
                    ready = false
                    last = "node \(index): a replica not yet synchronized with its master"
                }
            }
            if ready, let first = running.first {
                do {
                    _ = try await redisCLI(["--cluster", "check", "127.0.0.1:\(nodes[first].port)"], in: nodes[first])
                    return
                } catch {
                    last = "\(error)"
                }
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw RedisTestServer.Failure(message: "The test cluster did not become ready: \(last)")
    }
}
