import Foundation
import HanekeTesting
import Logging
import NIOCore
@testable import RedisStore
import Testing
import TestSupport

/// The connection that receives Redis's invalidation notices, against a real redis-server: it
/// subscribes, receives the notices a tracking connection redirects to it (not those of that
/// connection's own writes, with `NOLOOP`), says when it is lost, and subscribes again by itself.
@Suite(.timeLimit(.minutes(2)), .tags(.redis))
struct InvalidationListenerTests {
    typealias Event = InvalidationListener.Event

    /// A listener on the server of `store`, its events in a stream. Without an event the stream
    /// waits until the time limit cancels the test: then it ends, and the test fails.
    static func listen(on store: RedisStore) -> (InvalidationListener, AsyncStream<Event>.AsyncIterator) {
        let (events, continuation) = AsyncStream.makeStream(of: Event.self)
        let listener = InvalidationListener(pool: store.pool, pingInterval: .seconds(30), logger: .quiet) { continuation.yield($0) }
        listener.start()
        return (listener, events.makeAsyncIterator())
    }

    /// The client ID of the next event, which must be a subscription.
    static func subscription(from events: inout AsyncStream<Event>.AsyncIterator) async throws -> Int64 {
        let event = try #require(await events.next())
        let clientID: Int64? = if case .subscribed(let clientID) = event { clientID } else { nil }
        return try #require(clientID, "a subscription was expected, not \(event)")
    }

    /// A store on the shared server whose connections reconnect after 10 ms.
    static func store(_ label: String) async throws -> RedisStore {
        try await SharedRedis.store(label) { configuration in
            configuration.minimumReconnectDelay = .milliseconds(10)
            configuration.maximumReconnectDelay = .milliseconds(100)
        }
    }

    /// Sends `arguments` as one command on the store's own connections and returns the reply.
    @discardableResult
    static func send(_ arguments: [String], on store: RedisStore) async throws -> RESPValue {
        try await store.pool.send(.command(arguments[0], arguments.dropFirst().map { ByteBuffer(string: $0) }))
    }

    /// Turns tracking on for the keys of `store`'s prefix on `tracker`'s one connection, with the
    /// notices redirected to `clientID`.
    static func track(_ store: RedisStore, on tracker: RedisStore, redirectingTo clientID: Int64) async throws {
        let reply = try await send(
            ["CLIENT", "TRACKING", "ON", "REDIRECT", String(clientID), "BCAST", "PREFIX", store.configuration.keyPrefix, "NOLOOP"], on: tracker
        )
        #expect(reply.text == "OK", "\(reply)")
    }

    static func key(_ key: String, of store: RedisStore) -> ByteBuffer {
        ByteBuffer(string: store.redisKey(for: key))
    }

    @Test func writesRemovalsAndExpiriesOfOthersAreNoticedButNotTheTrackersOwn() async throws {
        let store = try await Self.store("listener")
        let tracker = try await SharedRedis.store("tracker") { $0.connectionCount = 1 }
        var (listener, events) = Self.listen(on: store)
        defer { listener.stop() }
        let clientID = try await Self.subscription(from: &events)
        try await Self.track(store, on: tracker, redirectingTo: clientID)

        try await store.setValue(Data("a".utf8), forKey: "a")
        #expect(await events.next() == .invalidated([Self.key("a", of: store)]))
        try await store.removeValue(forKey: "a")
        #expect(await events.next() == .invalidated([Self.key("a", of: store)]))

        // The tracking connection's own write is not noticed (`NOLOOP`): the next notice is the
        // store's write after it.
        try await Self.send(["SET", store.redisKey(for: "own"), "x"], on: tracker)
        try await store.setValue(Data("b".utf8), forKey: "b")
        #expect(await events.next() == .invalidated([Self.key("b", of: store)]))

        // Keys of other prefixes are not noticed; an expiry is.
        let other = try await SharedRedis.store("other")
        try await other.setValue(Data("c".utf8), forKey: "c")
        try await Self.send(["SET", store.redisKey(for: "expiring"), "x", "PX", "1"], on: tracker)
        #expect(await events.next() == .invalidated([Self.key("expiring", of: store)]))
    }

    @Test func aLostConnectionIsToldAndSubscribedAgain() async throws {
        let store = try await Self.store("listener")
        let tracker = try await SharedRedis.store("tracker") { $0.connectionCount = 1 }
        var (listener, events) = Self.listen(on: store)
        defer { listener.stop() }
        let first = try await Self.subscription(from: &events)
        try await Self.send(["CLIENT", "KILL", "ID", String(first)], on: tracker)
        #expect(await events.next() == .lost)
        let second = try await Self.subscription(from: &events)
        #expect(second != first, "a new connection")

        // Notices redirected to the new connection arrive.
        try await Self.track(store, on: tracker, redirectingTo: second)
        try await store.setValue(Data("a".utf8), forKey: "a")
        #expect(await events.next() == .invalidated([Self.key("a", of: store)]))

        listener.stop()
        #expect(await events.next() == .lost, "stopping ends the subscription")
    }

    @Test(.tags(.process)) func aFlushedDatabaseIsNoticedAsEveryKey() async throws {
        let server = try await RedisTestServer()
        try await withServer(server, shutdown: { await $0.stop() }) { server in
            let store = RedisStore(configuration: try RedisStore.Configuration(url: server.url, keyPrefix: "flush:"), logger: .quiet)
            let tracker = RedisStore(configuration: try RedisStore.Configuration(url: server.url, keyPrefix: "tracker:"), logger: .quiet)
            var (listener, events) = Self.listen(on: store)
            defer { listener.stop() }
            let clientID = try await Self.subscription(from: &events)
            try await Self.track(store, on: tracker, redirectingTo: clientID)
            try await Self.send(["FLUSHDB"], on: store)
            #expect(await events.next() == .flushed)
        }
    }
}
