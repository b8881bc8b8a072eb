import Foundation
import HanekeProtocols
import HanekeTesting
import Logging
import NIOCore
@testable import RedisStore
import Synchronization
import Testing
import TestSupport

/// A cluster may only send the store to its own nodes: a scripted seed that owns every slot and
/// answers a read with a redirect (or a map) naming other addresses, and a fake node on loopback
/// that records whatever reaches it.
@Suite(.tags(.redis))
struct ClusterMembershipTests {
    /// A scripted cluster of one node, `seed`: it owns every slot (`CLUSTER SLOTS` answers
    /// `slots`, by default a map of itself), lists itself in `CLUSTER NODES`, and answers `GET`
    /// with `get`.
    static func seed(slots: (@Sendable (Int) -> String)? = nil, get: @escaping @Sendable (Int) -> String) async throws -> ScriptedRedisServer {
        let port = Mutex(0)
        let server = try await ScriptedRedisServer.start { name, arguments in
            let own = port.withLock { $0 }
            switch (name, arguments.first?.uppercased()) {
            case ("CLUSTER", "SLOTS"?):
                return .bytes(slots?(own) ?? "*1\r\n*3\r\n:0\r\n:16383\r\n*2\r\n$9\r\n127.0.0.1\r\n:\(own)\r\n")
            case ("CLUSTER", "NODES"?):
                let line = "0123456789abcdef 127.0.0.1:\(own)@1\(own) myself,master - 0 0 1 connected 0-16383\n"
                return .bytes("$\(line.utf8.count)\r\n\(line)\r\n")
            case ("GET", _):
                return .bytes(get(own))
            default:
                return .bytes("+OK\r\n")
            }
        }
        port.withLock { $0 = server.port }
        return server
    }

    static func store(_ seed: ScriptedRedisServer) throws -> RedisStore {
        var configuration = try RedisStore.Configuration(clusterURLs: ["redis://:cluster-secret@127.0.0.1:\(seed.port)"])
        configuration.connectionCount = 1
        configuration.connectTimeout = .seconds(30)
        return RedisStore(configuration: configuration, logger: .quiet)
    }

    @Test func aRedirectToAHostOutsideTheClusterIsRefusedAndNothingIsSentThere() async throws {
        let fake = try await ScriptedRedisServer.start { _, _ in .bytes("+OK\r\n") }
        let fakePort = fake.port
        let seed = try await Self.seed { _ in "-MOVED 1234 127.0.0.1:\(fakePort)\r\n" }
        try await withServer(seed, shutdown: { await $0.shutdown() }) { seed in
            try await withServer(fake, shutdown: { await $0.shutdown() }) { fake in
                let store = try Self.store(seed)
                let error = await #expect(throws: StoreError.self) { _ = try await store.value(forKey: "k") }
                #expect(error?.code == .unavailable)
                #expect("\(error.map { "\($0)" } ?? "")".contains("redirected to 127.0.0.1:\(fakePort), which is not a node of the configured cluster"))
                for _ in 0..<3 { _ = try? await store.value(forKey: "k") }
                #expect(fake.connectionsAccepted == 0, "no connection, so no AUTH, reached the fake node")
                #expect(fake.commandNames.isEmpty)
                #expect(seed.commandNames.contains("AUTH"))
            }
        }
    }

    /// Redirects to thousands of distinct addresses: each refused, none kept (the slot map's
    /// index of addresses was a `UInt16` that trapped at 65,536).
    @Test func redirectsToManyAddressesAreRefusedAndNoneIsKept() async throws {
        let count = Atomic<Int>(0)
        let seed = try await Self.seed { _ in
            let next = count.wrappingAdd(1, ordering: .relaxed).oldValue
            return "-MOVED 1234 127.0.\(2 + next / 60_000).\(1 + next % 250):\(1_024 + next % 60_000)\r\n"
        }
        try await withServer(seed, shutdown: { await $0.shutdown() }) { seed in
            let store = try Self.store(seed)
            for _ in 0..<200 {
                await #expect(throws: StoreError.self) { _ = try await store.value(forKey: "k") }
            }
            let cluster = try #require(store.cluster)
            #expect(cluster.memberCount == 1)
            #expect(cluster.nodesHoldingKeys.count == 1)
        }
    }

    /// A map that names more nodes than a cluster may have (16,384 masters, one a slot) is not
    /// used: a clear error, no trap, no pool made for them.
    @Test func aMapOfTooManyNodesIsRefused() async throws {
        let seed = try await Self.seed(slots: { _ in
            var reply = "*16384\r\n"
            for slot in 0..<16_384 {
                let host = "127.0.\(1 + slot / 250).\(1 + slot % 250)"
                reply += "*3\r\n:\(slot)\r\n:\(slot)\r\n*2\r\n$\(host.utf8.count)\r\n\(host)\r\n:\(7_000 + slot)\r\n"
            }
            return reply
        }, get: { _ in "$-1\r\n" })
        try await withServer(seed, shutdown: { await $0.shutdown() }) { seed in
            let store = try Self.store(seed)
            let error = await #expect(throws: StoreError.self) { _ = try await store.value(forKey: "k") }
            #expect(error.map { "\($0)" }?.contains("named 16384 nodes, more than the 1000 a cluster may have") == true, "\(String(describing: error))")
            #expect(try #require(store.cluster).memberCount == 1)
        }
    }
}
