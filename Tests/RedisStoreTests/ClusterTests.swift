import Foundation
import HanekeProtocols
import HanekeTesting
import MemoryStore
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

    /// A store on `cluster` (every node's URL as a seed) in a namespace of its own.
    static func store(_ cluster: RedisTestCluster, _ label: String, scanCount: Int = 1000) throws -> RedisStore {
        var configuration = try RedisStore.Configuration(clusterURLs: cluster.urls, keyPrefix: SharedRedis.uniquePrefix(label))
        configuration.scanCount = scanCount
        // Reconnecting to a master that was killed waits little, so that the test sees a replica
        // take over soon after the cluster does.
        configuration.minimumReconnectDelay = .milliseconds(10)
        configuration.maximumReconnectDelay = .milliseconds(100)
        return RedisStore(configuration: configuration, logger: .quiet)
    }

    /// How many keys of `store`'s namespace each master holds, by port.
    static func keysPerMaster(_ cluster: RedisTestCluster, _ store: RedisStore) async throws -> [Int: Int] {
        var counts: [Int: Int] = [:]
        for (index, node) in cluster.nodes.enumerated() where node.isRunning {
            let role = try await cluster.command(["ROLE"], node: index)
            guard role.hasPrefix("1) \"master\"") else { continue }
            let keys = try await cluster.command(["--scan", "--pattern", store.configuration.keyPrefix + "*"], node: index)
            counts[node.port] = keys.split(separator: "\n").count
        }
        return counts
    }

    /// The suite every store passes, against the cluster: from seeds to the map, each key to its
    /// master, `removeAll` across them all.
    @Test func theStoreConformsAgainstACluster() async throws {
        let cluster = try await RedisTestCluster()
        try await StoreConformanceSuite { try Self.store(cluster, "cluster-conformance", scanCount: 7) }.run()
    }

    /// Keys spread over every master; each reads back as written; `removeAll` empties the
    /// namespace on every master, and only it.
    @Test func keysSpreadOverTheMastersAndRemoveAllReachesEvery() async throws {
        let cluster = try await RedisTestCluster()
        let store = try Self.store(cluster, "spread", scanCount: 50)
        let other = try Self.store(cluster, "other")
        try await other.setValue(Data("stays".utf8), forKey: "k")
        for index in 0..<300 { try await store.setValue(Data("value \(index)".utf8), forKey: "key \(index)") }
        let counts = try await Self.keysPerMaster(cluster, store)
        #expect(counts.count == 3 && counts.values.allSatisfy { $0 > 50 } && counts.values.reduce(0, +) == 300, "\(counts)")
        for index in 0..<300 {
            #expect(try await store.value(forKey: "key \(index)") == Data("value \(index)".utf8))
        }
        try await store.removeAll()
        #expect(try await Self.keysPerMaster(cluster, store).values.reduce(0, +) == 0)
        #expect(try await other.value(forKey: "k") == Data("stays".utf8))
    }

    /// Slots moved from one master to another while tasks read and write: every read returns the
    /// value last written to its key (the store follows `ASK` while a slot moves and `MOVED`
    /// after), and no operation fails.
    @Test func aReshardingUnderLoadServesNoWrongValue() async throws {
        let cluster = try await RedisTestCluster()
        let store = try Self.store(cluster, "reshard")
        let keys = 400
        for index in 0..<keys { try await store.setValue(Data("0".utf8), forKey: "key \(index)") }
        let from = try await cluster.id(of: cluster.nodes[0])
        let to = try await cluster.id(of: cluster.nodes[1])
        let before = try await Self.keysPerMaster(cluster, store)
        let done = Locked(false)
        let resharding = Task {
            defer { done.withLock { $0 = true } }
            _ = try await cluster.command(
                ["--cluster", "reshard", "127.0.0.1:\(cluster.nodes[0].port)", "--cluster-from", from, "--cluster-to", to,
                 "--cluster-slots", "1500", "--cluster-yes", "--cluster-pipeline", "10"], node: 0)
        }
        // Four tasks, each owning a quarter of the keys: it writes the next version of one of its
        // keys, then reads every key it owns in turn, each of which must be at its last version.
        let wrong = try await withThrowingTaskGroup(of: (wrong: Int, operations: Int).self) { group in
            for worker in 0..<4 {
                group.addTask {
                    var versions = [Int](repeating: 0, count: keys)
                    var wrong = 0
                    var operations = 0
                    var round = 0
                    while !done.withLock({ $0 }) || round < 2 {
                        for index in stride(from: worker, to: keys, by: 4) {
                            if index % 40 == round % 40 {
                                versions[index] += 1
                                try await store.setValue(Data("\(versions[index])".utf8), forKey: "key \(index)")
                            }
                            if try await store.value(forKey: "key \(index)") != Data("\(versions[index])".utf8) { wrong += 1 }
                            operations += 1
                        }
                        round += 1
                    }
                    return (wrong, operations)
                }
            }
            return try await group.reduce(into: (wrong: 0, operations: 0)) { $0.wrong += $1.wrong; $0.operations += $1.operations }
        }
        try await resharding.value
        let after = try await Self.keysPerMaster(cluster, store)
        #expect(wrong.wrong == 0, "\(wrong.wrong) wrong values in \(wrong.operations) reads")
        #expect(after[cluster.nodes[0].port, default: 0] < before[cluster.nodes[0].port, default: 0], "keys moved: \(before) → \(after)")
        #expect(store.statistics.errors == 0)
        let counts = try #require(store.cluster).counts
        #expect(counts.moved > 0, "the store followed MOVED redirects: \(counts)")
    }

    typealias Master = (index: Int, id: String, keys: Int)

    /// The cluster's masters, each with how many keys of `slot` it holds.
    static func masters(of slot: String, in cluster: RedisTestCluster) async throws -> [Master] {
        var masters: [Master] = []
        for index in cluster.nodes.indices where try await cluster.command(["ROLE"], node: index).hasPrefix("1) \"master\"") {
            let id = try await cluster.id(of: cluster.nodes[index])
            let count = Int(try await cluster.command(["CLUSTER", "COUNTKEYSINSLOT", slot], node: index).replacingOccurrences(of: "(integer) ", with: "")) ?? 0
            masters.append((index, id, count))
        }
        return masters
    }

    /// Starts moving `slot`, which holds `keyCount` keys, from its master to another
    /// (`IMPORTING` on the target, `MIGRATING` on the source): the masters, the source, the target.
    static func startMoving(_ slot: String, holding keyCount: Int, in cluster: RedisTestCluster) async throws -> ([Master], Master, Master) {
        let masters = try await Self.masters(of: slot, in: cluster)
        let source = try #require(masters.first { $0.keys == keyCount }, "\(masters)")
        let target = try #require(masters.first { $0.index != source.index })
        _ = try await cluster.command(["CLUSTER", "SETSLOT", slot, "IMPORTING", source.id], node: target.index)
        _ = try await cluster.command(["CLUSTER", "SETSLOT", slot, "MIGRATING", target.id], node: source.index)
        return (masters, source, target)
    }

    /// One slot moved by hand, step by step: while it is half moved, the keys already moved are
    /// read through `ASK` (with `ASKING`, on the importing node), the others on the old node, and
    /// a new key is written on the importing node; once moved, `MOVED` takes every key there.
    @Test func aSlotHalfMovedIsReadAndWrittenThroughAsk() async throws {
        let cluster = try await RedisTestCluster()
        let store = try Self.store(cluster, "ask")
        let keys = (0..<20).map { "{moving}\($0)" }
        for key in keys { try await store.setValue(Data(key.utf8), forKey: key) }
        let slot = String(ClusterSlot.of(store.redisKey(for: keys[0])))
        let (masters, source, target) = try await Self.startMoving(slot, holding: keys.count, in: cluster)
        let port = String(cluster.nodes[target.index].port)
        let firstHalf = keys.prefix(10).map { store.redisKey(for: $0) }
        _ = try await cluster.command(["MIGRATE", "127.0.0.1", port, "", "0", "5000", "KEYS"] + firstHalf, node: source.index)

        for key in keys { #expect(try await store.value(forKey: key) == Data(key.utf8), "\(key), half moved") }
        try await store.setValue(Data("new".utf8), forKey: "{moving}new")
        #expect(try await store.value(forKey: "{moving}new") == Data("new".utf8))
        let asked = try #require(store.cluster).counts.asked
        #expect(asked >= 12, "the moved keys and the new one went through ASK: \(asked)")
        #expect(try await cluster.command(["CLUSTER", "COUNTKEYSINSLOT", slot], node: target.index) == "(integer) 11")

        let secondHalf = keys.dropFirst(10).map { store.redisKey(for: $0) }
        _ = try await cluster.command(["MIGRATE", "127.0.0.1", port, "", "0", "5000", "KEYS"] + secondHalf, node: source.index)
        for master in masters { _ = try await cluster.command(["CLUSTER", "SETSLOT", slot, "NODE", target.id], node: master.index) }
        for key in keys { #expect(try await store.value(forKey: key) == Data(key.utf8), "\(key), moved") }
        #expect(try #require(store.cluster).counts.moved > 0)
        #expect(store.statistics.errors == 0)
    }

    typealias Machine = CoherentStoreTests.Machine

    static func value(_ text: String) -> Data { Data(text.utf8) }

    /// Two machines in front of `cluster` (keys prefixed by `label`), returned once both use their
    /// local layers: `a` with a disk layer too if `disk`, its notices pinged every `pingInterval`;
    /// `b` memory only, pinged as a ``Machine`` is by default.
    static func machines(
        in cluster: RedisTestCluster, _ label: String, disk: Bool = false, pingInterval: Duration = .seconds(30)
    ) async throws -> (Machine, Machine) {
        let configuration = try Self.store(cluster, label).configuration
        let a = try Machine(configuration: configuration, disk: disk, pingInterval: pingInterval)
        let b = try Machine(configuration: configuration)
        try await a.untilCoherent()
        try await b.untilCoherent()
        return (a, b)
    }

    /// Two machines, each memory and disk in front of the cluster: a write or removal on one
    /// leaves the other's local layers, whichever master holds the key; this machine's own
    /// writes, sent through each master's tracking connection, are noticed to none of its own.
    @Test func localLayersInFrontOfAClusterAreKeptCoherent() async throws {
        let cluster = try await RedisTestCluster()
        let (a, b) = try await Self.machines(in: cluster, "coherent", disk: true)
        // Twenty hash tags, spread over the masters; each tag's keys are on one node, whose
        // notices come in order.
        let tags = (0..<20).map { "{\($0)}" }
        for tag in tags { try await a.store.setValue(Self.value("mine"), forKey: tag + "own") }
        #expect(try await Self.keysPerMaster(cluster, a.redis).count == 3)
        for tag in tags { try await b.store.setValue(Self.value("theirs"), forKey: tag + "other") }
        // A notice of a's own write of a tag would have come before the notice of b's.
        try await a.untilNoticed(tags.count)
        #expect(a.store.coherence.invalidations == tags.count)
        for tag in tags { #expect(a.memory.value(forKey: tag + "own") == Self.value("mine"), "\(tag)") }

        for tag in tags { #expect(try await a.store.value(forKey: tag + "other") == Self.value("theirs")) }
        for tag in tags { #expect(try await a.holdsLocally(tag + "other"), "a read from the cluster is kept locally") }
        for tag in tags { try await b.store.setValue(Self.value("changed"), forKey: tag + "other") }
        try await a.untilNoticed(2 * tags.count)
        for tag in tags {
            #expect(try await !a.holdsLocally(tag + "other"), "memory and disk alike")
            #expect(try await a.store.value(forKey: tag + "other") == Self.value("changed"))
        }
        for tag in tags { try await b.store.removeValue(forKey: tag + "other") }
        try await a.untilNoticed(3 * tags.count)
        for tag in tags { #expect(try await a.store.value(forKey: tag + "other") == nil) }
        // b noticed a's first writes; a notice of b's own writes and removals of a tag would come
        // before the notice of a's last write of it.
        for tag in tags { try await a.store.setValue(Self.value("last"), forKey: tag + "own") }
        try await b.untilNoticed(2 * tags.count)
        #expect(b.store.coherence.invalidations == 2 * tags.count, "b's own writes are not noticed to b")
    }

    /// A slot moved from one master to another under coherent layers: moving a key away is
    /// noticed (the old master deletes it), and once moved, another machine's write of it is
    /// noticed by the new master.
    @Test func aSlotMovedUnderCoherentLayersServesNothingStale() async throws {
        let cluster = try await RedisTestCluster()
        let (a, b) = try await Self.machines(in: cluster, "coherent-move")
        let keys = (0..<10).map { "{moving}\($0)" }
        for key in keys { try await a.store.setValue(Self.value("1"), forKey: key) }
        let slot = String(ClusterSlot.of(a.redis.redisKey(for: keys[0])))
        let (masters, source, target) = try await Self.startMoving(slot, holding: keys.count, in: cluster)
        _ = try await cluster.command(
            ["MIGRATE", "127.0.0.1", String(cluster.nodes[target.index].port), "", "0", "5000", "KEYS"] + keys.map { a.redis.redisKey(for: $0) },
            node: source.index
        )
        for master in masters { _ = try await cluster.command(["CLUSTER", "SETSLOT", slot, "NODE", target.id], node: master.index) }
        try await a.untilNoticed(keys.count)
        for key in keys { #expect(!(try await a.holdsLocally(key)), "moving \(key) away was noticed") }

        for key in keys { #expect(try await a.store.value(forKey: key) == Self.value("1")) }
        for key in keys { #expect(try await a.holdsLocally(key)) }
        for key in keys { try await b.store.setValue(Self.value("2"), forKey: key) }
        try await a.untilNoticed(2 * keys.count)
        for key in keys { #expect(try await a.store.value(forKey: key) == Self.value("2"), "\(key)") }
    }

    /// A slot moving to a node that joined the cluster after the stores loaded its map (a cluster
    /// growing): the `ASK` redirect names a node the map does not, which is followed before
    /// anything is sent there — the local layers are not used until its notices arrive, then
    /// emptied — and another machine's writes of keys it holds are noticed, while the slot moves
    /// and once it has moved.
    @Test func aSlotMovingToANewNodeIsFollowedBeforeItIsRead() async throws {
        let cluster = try await RedisTestCluster()
        let (a, b) = try await Self.machines(in: cluster, "coherent-grow")
        let keys = (0..<10).map { "{growing}\($0)" }
        for key in keys { try await a.store.setValue(Self.value("1"), forKey: key) }
        for key in keys { #expect(try await a.holdsLocally(key)) }
        let spare = try await cluster.startSpareNode()
        let spareID = try await cluster.id(of: spare)
        let slot = String(ClusterSlot.of(a.redis.redisKey(for: keys[0])))
        let masters = try await Self.masters(of: slot, in: cluster)
        let source = try #require(masters.first { $0.keys == keys.count }, "\(masters)")
        #expect(try await cluster.command(["CLUSTER", "SETSLOT", slot, "IMPORTING", source.id], on: spare) == "OK")
        #expect(try await cluster.command(["CLUSTER", "SETSLOT", slot, "MIGRATING", spareID], node: source.index) == "OK")
        let migrated = try await cluster.command(
            ["MIGRATE", "127.0.0.1", String(spare.port), "", "0", "5000", "KEYS"] + keys.map { a.redis.redisKey(for: $0) },
            node: source.index
        )
        #expect(migrated == "OK", "\(migrated)")
        try await a.untilNoticed(keys.count)
        let flushes = a.store.coherence.flushes
        let map = try #require(a.redis.cluster)
        #expect(!map.nodesHoldingKeys.contains { $0.port == spare.port }, "a's map is from before the node joined")

        // Half moved: the keys are on the new node, reached through ASK (which loads no map).
        #expect(try await a.store.value(forKey: keys[0]) == Self.value("1"))
        let afterRead = a.store.coherence
        #expect(!afterRead.isCoherent || afterRead.flushes > flushes, "the new node was followed before it was read: \(afterRead)")
        #expect(map.counts.asked > 0 && map.nodesHoldingKeys.contains { $0.port == spare.port })
        try await a.untilCoherent(afterFlushes: flushes + 1)
        for key in keys { #expect(try await a.store.value(forKey: key) == Self.value("1")) }
        for key in keys { #expect(try await a.holdsLocally(key), "kept once the new node's notices arrive") }
        for key in keys { try await b.store.setValue(Self.value("2"), forKey: key) }
        try await a.untilNoticed(2 * keys.count)
        for key in keys { #expect(try await a.store.value(forKey: key) == Self.value("2"), "\(key)") }

        // Moved: MOVED, and a map that names the new node.
        #expect(try await cluster.command(["CLUSTER", "SETSLOT", slot, "NODE", spareID], on: spare) == "OK")
        for master in masters { _ = try await cluster.command(["CLUSTER", "SETSLOT", slot, "NODE", spareID], node: master.index) }
        for key in keys { try await b.store.setValue(Self.value("3"), forKey: key) }
        try await a.untilNoticed(3 * keys.count)
        for key in keys { #expect(try await a.store.value(forKey: key) == Self.value("3"), "\(key)") }
        #expect(a.store.coherence.isCoherent)
        await spare.stop()
    }

    /// A master killed: its notices are lost, so the local layers are emptied and unused; once
    /// the cluster has put a replica in its place, the replica is followed instead (the map is
    /// asked for while a node's notices are lost), the layers are in use again, and a write of
    /// a key the replica now holds is noticed.
    @Test func aKilledMastersReplicaIsFollowedOnceItTakesOver() async throws {
        let cluster = try await RedisTestCluster()
        let (a, b) = try await Self.machines(in: cluster, "coherent-failover", pingInterval: .milliseconds(100))
        let keys = (0..<30).map { "{\($0)}k" }
        for key in keys { try await b.store.setValue(Self.value("1"), forKey: key) }
        try await cluster.waitUntilReplicated()
        for key in keys { #expect(try await a.store.value(forKey: key) == Self.value("1")) }
        let flushes = a.store.coherence.flushes

        await cluster.nodes[0].kill()
        try await waitUntil("a's layers stop being used") { !a.store.coherence.isCoherent }
        try await cluster.waitUntilReady()
        try await a.untilCoherent(afterFlushes: flushes + 2)
        #expect(a.memory.count == 0)

        for key in keys { #expect(try await a.store.value(forKey: key) == Self.value("1")) }
        #expect(a.memory.count == keys.count)
        for key in keys { try await b.store.setValue(Self.value("2"), forKey: key) }
        try await waitUntil("a serves every new value") {
            for key in keys where try await a.store.value(forKey: key) != Self.value("2") { return false }
            return true
        }
    }

    /// A "cluster" that is a single server, or whose nodes are all down: operations throw a
    /// clear error naming the key and what the nodes answered.
    @Test func aServerThatIsNoClusterOrNoNodeAtAllIsAClearError() async throws {
        let single = RedisStore(configuration: try RedisStore.Configuration(clusterURLs: [try await SharedRedis.url()]), logger: .quiet)
        let error = try await #require(throws: StoreError.self) { try await single.value(forKey: "k") }
        #expect(error.code == .io && "\(error)".contains("key k") && "\(error)".contains("cluster support disabled"), "\(error)")

        let server = try await RedisTestServer()
        let url = server.url
        await server.stop()
        let none = RedisStore(configuration: try RedisStore.Configuration(clusterURLs: [url]), logger: .quiet)
        let down = try await #require(throws: StoreError.self) { try await none.setValue(Data(), forKey: "k") }
        #expect(down.code == .unavailable && "\(down)".contains("key k"), "\(down)")
    }

    /// A master killed: once the cluster has put its replica in its place, the store's reads of
    /// that master's keys succeed again, with the values written before — the first read after
    /// the cluster is ready included (a failed node makes the store ask for a new map at once).
    @Test func readsComeBackOnceAReplicaTakesOverAKilledMaster() async throws {
        let cluster = try await RedisTestCluster()
        let store = try Self.store(cluster, "failover")
        for index in 0..<200 { try await store.setValue(Data("value \(index)".utf8), forKey: "key \(index)") }
        try await cluster.waitUntilReplicated()
        await cluster.nodes[0].kill()
        try await cluster.waitUntilReady()
        let maps = try #require(store.cluster).counts.maps
        for index in 0..<200 {
            #expect(try await store.value(forKey: "key \(index)") == Data("value \(index)".utf8), "key \(index)")
        }
        #expect(try #require(store.cluster).counts.maps > maps, "the failed master made the store load a new map")
    }
}
