import Foundation
import HanekeTesting
import NIOCore
@testable import RedisStore
import SeededRandom
import Testing
import TestSupport

/// Redis Cluster, against a local cluster of 3 masters and 3 replicas started by the test.
@Suite(.timeLimit(.minutes(2)), .tags(.redis, .process))
struct ClusterTests {
    /// The slot each key hashes to is the one the cluster computes (`CLUSTER KEYSLOT`), hash tags
    /// included: plain keys, keys with a tag, an empty tag (the whole key counts), a second tag
    /// (only the first counts), braces inside a tag, and bytes beyond ASCII.
    @Test func slotsAreTheClustersOwn() async throws {
        let cluster = try await RedisTestCluster()
        let store = RedisStore(configuration: try RedisStore.Configuration(url: cluster.urls[0], keyPrefix: "slots:"), logger: .quiet)
        var random = SeededRandomNumberGenerator(seed: 31)
        let alphabet = Array("ab{}x:é0")
        var keys = ["", "{", "}", "{}", "{}a", "a{}", "{a}", "x{a}y", "{a}{b}", "{{a}}", "a{b{c}d}", "{user1000}.following", "foo{}{bar}", "été{ß}", "🗝️"]
        for index in 0..<500 {
            let length = Int.random(in: 0..<24, using: &random)
            keys.append(String((0..<length).map { _ in alphabet.randomElement(using: &random)! }) + ":\(index)")
        }
        for key in keys {
            let reply = try await store.pool.send(.command("CLUSTER", "KEYSLOT", key))
            guard case .integer(let slot) = reply else {
                Issue.record("CLUSTER KEYSLOT \(key) answered \(reply.summary)")
                continue
            }
            #expect(ClusterSlot.of(key) == Int(slot), "key \(key)")
        }
        store.shutdown()
    }

    /// The test cluster itself: three masters share the slots; after a master is killed, a replica
    /// takes its slots over and the cluster is ready again.
    @Test func aKilledMastersReplicaTakesOver() async throws {
        let cluster = try await RedisTestCluster()
        let nodes = try await cluster.command(["CLUSTER", "NODES"], node: 1)
        #expect(nodes.split(separator: "\n").count(where: { $0.contains("master") && !$0.contains("fail") }) == 3, "\(nodes)")
        await cluster.nodes[0].kill()
        try await cluster.waitUntilReady()
        let after = try await cluster.command(["CLUSTER", "NODES"], node: 1)
        let masters = after.split(separator: "\n").filter { $0.contains("master") && !$0.contains("fail") }
        #expect(masters.count == 3, "\(after)")
        #expect(!masters.contains { $0.contains("127.0.0.1:\(cluster.nodes[0].port)@") }, "\(after)")
    }
}
