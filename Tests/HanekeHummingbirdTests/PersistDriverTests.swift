#if Hummingbird
import Foundation
import Haneke
import HanekeHummingbird
import HanekeProtocols
import HanekeServer
import HanekeTesting
import Hummingbird
import HummingbirdTesting
import NIOCore
import ServiceLifecycle
import Testing
import TestSupport

struct Item: ResponseCodable, Equatable {
    var name: String
}

/// A real application: the persist routes Hummingbird's own tests use, over a Haneke driver, and
/// a route that fails the way a cache read does.
func makeApplication(
    persist: HanekePersistDriver, onServerRunning: @escaping @Sendable (any Channel) async -> Void = { _ in }
) -> some ApplicationProtocol {
    let router = Router()
    router.add(middleware: StoreErrorMiddleware())
    router.put("kv/:key") { request, context -> HTTPResponse.Status in
        let key = try context.parameters.require("key")
        let item = try await request.decode(as: Item.self, context: context)
        let lifetime = request.uri.queryParameters.get("ms", as: Int64.self).map { Duration.milliseconds($0) }
        try await persist.set(key: key, value: item, expires: lifetime)
        return .ok
    }
    router.post("kv/:key") { request, context -> HTTPResponse.Status in
        let key = try context.parameters.require("key")
        let item = try await request.decode(as: Item.self, context: context)
        let lifetime = request.uri.queryParameters.get("ms", as: Int64.self).map { Duration.milliseconds($0) }
        do {
            try await persist.create(key: key, value: item, expires: lifetime)
        } catch let error as PersistError where error == .duplicate {
            throw HTTPError(.conflict)
        }
        return .created
    }
    router.get("kv/:key") { _, context -> Item in
        let key = try context.parameters.require("key")
        guard let item = try await persist.get(key: key, as: Item.self) else { throw HTTPError(.notFound) }
        return item
    }
    router.get("ttl/:key") { _, context -> String in
        let key = try context.parameters.require("key")
        guard let (_, ttl) = try await persist.getWithTTL(key: key, as: Item.self) else { throw HTTPError(.notFound) }
        return ttl.map { "\(Int(($0 / .milliseconds(1)).rounded()))" } ?? "none"
    }
    router.delete("kv/:key") { _, context -> HTTPResponse.Status in
        try await persist.remove(key: try context.parameters.require("key"))
        return .noContent
    }
    router.get("fails/:code") { _, context -> String in
        let code = try context.parameters.require("code")
        throw StoreError(.invalidStatusCode, "GET http://upstream/x answered \(code)", statusCode: Int(code))
    }
    var app = Application(
        router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)), onServerRunning: onServerRunning
    )
    app.addServices(persist)
    return app
}

/// Runs the application of `persist` on a port of 127.0.0.1 in a service group, runs `requests`
/// with a client connected to it, then shuts the group down gracefully and returns once it has
/// ended (the driver's cache closed).
///
/// Not Hummingbird's `.live` test framework: it binds its server to "localhost", which NIO
/// resolves with a blocking `getaddrinfo` on the task that starts the server, a cooperative thread
/// (the first one in a process reads the resolver's files: 7.9 ms beside the CPU hog in CI, which
/// the blocking watchdog failed). `getaddrinfo` parses an address such as 127.0.0.1 without
/// reading those files.
func runLive(persist: HanekePersistDriver, _ requests: @Sendable (TestClient) async throws -> Void) async throws {
    let (ports, port) = AsyncStream.makeStream(of: Int.self)
    let app = makeApplication(persist: persist) { channel in
        port.yield(channel.localAddress?.port ?? 0)
        port.finish()
    }
    let group = ServiceGroup(configuration: .init(services: [app], logger: app.logger))
    try await withThrowingTaskGroup(of: Void.self) { tasks in
        tasks.addTask {
            // A group that ends before its server runs (a bind that failed) ends the wait for a port.
            defer { port.finish() }
            try await group.run()
        }
        do {
            var running = ports.makeAsyncIterator()
            let number = try #require(await running.next())
            try #require(number > 0, "the server was bound to no port")
            let client = TestClient(host: "127.0.0.1", port: number, configuration: .init(timeout: .seconds(20)))
            client.connect()
            do {
                try await requests(client)
            } catch {
                try? await client.shutdown()
                throw error
            }
            try await client.shutdown()
        } catch {
            await group.triggerGracefulShutdown()
            throw error
        }
        await group.triggerGracefulShutdown()
        try await tasks.waitForAll()
    }
}

func body(_ name: String) -> ByteBuffer { ByteBuffer(string: #"{"name":"\#(name)"}"#) }

@Suite(.timeLimit(.minutes(1)), .tags(.disk))
struct PersistDriverTests {
    let directory: TemporaryDirectory
    let clock = TestClock()

    init() async throws {
        try await startNIOSingletons()
        directory = try TemporaryDirectory(prefix: "hummingbird")
    }

    func makeDriver() -> HanekePersistDriver {
        HanekePersistDriver(cache: KeyValueCache(name: "persist", directory: directory.appending("persist"), clock: clock))
    }

    @Test func setGetAndRemoveThroughARouter() async throws {
        let app = makeApplication(persist: makeDriver())
        try await app.test(.router) { client in
            try await client.execute(uri: "/kv/a", method: .put, body: body("first")) { #expect($0.status == .ok) }
            try await client.execute(uri: "/kv/a", method: .get) { response in
                #expect(response.status == .ok)
                #expect(String(buffer: response.body) == #"{"name":"first"}"#)
            }
            try await client.execute(uri: "/kv/a", method: .delete) { #expect($0.status == .noContent) }
            try await client.execute(uri: "/kv/a", method: .get) { #expect($0.status == .notFound) }
        }
    }

    @Test func createFailsOnAnExistingKeyUntilItExpires() async throws {
        let app = makeApplication(persist: makeDriver())
        try await app.test(.router) { client in
            try await client.execute(uri: "/kv/lock?ms=250", method: .post, body: body("one")) { #expect($0.status == .created) }
            try await client.execute(uri: "/kv/lock", method: .post, body: body("two")) { #expect($0.status == .conflict) }
            clock.advance(by: .milliseconds(251))
            try await client.execute(uri: "/kv/lock", method: .post, body: body("three")) { #expect($0.status == .created) }
            try await client.execute(uri: "/kv/lock", method: .get) { #expect(String(buffer: $0.body) == #"{"name":"three"}"#) }
        }
    }

    @Test func aLifetimeHoldsToTheMillisecondAndAnOverwriteWithoutOneKeepsIt() async throws {
        let app = makeApplication(persist: makeDriver())
        try await app.test(.router) { client in
            try await client.execute(uri: "/kv/s?ms=1500", method: .put, body: body("v1")) { #expect($0.status == .ok) }
            clock.advance(by: .milliseconds(500))
            // Hummingbird's rule: a set without a lifetime keeps the value's expiry.
            try await client.execute(uri: "/kv/s", method: .put, body: body("v2")) { #expect($0.status == .ok) }
            try await client.execute(uri: "/ttl/s", method: .get) { #expect(String(buffer: $0.body) == "1000") }
            clock.advance(by: .milliseconds(999))
            try await client.execute(uri: "/kv/s", method: .get) { #expect(String(buffer: $0.body) == #"{"name":"v2"}"#) }
            clock.advance(by: .milliseconds(2))
            try await client.execute(uri: "/kv/s", method: .get) { #expect($0.status == .notFound) }
            // A set with a lifetime replaces it; one with none on a key without any has none.
            try await client.execute(uri: "/kv/p", method: .put, body: body("p")) { #expect($0.status == .ok) }
            try await client.execute(uri: "/ttl/p", method: .get) { #expect(String(buffer: $0.body) == "none") }
        }
    }

    @Test func aValueOfAnotherTypeIsAnInvalidConversion() async throws {
        let persist = makeDriver()
        try await persist.set(key: "n", value: 7, expires: nil)
        await #expect(throws: PersistError.invalidConversion) { try await persist.get(key: "n", as: Item.self) }
        #expect(try await persist.get(key: "n", as: Int.self) == 7)
    }

    @Test func storeErrorsBecomeTheStatusAGatewayAnswersWith() async throws {
        let app = makeApplication(persist: makeDriver())
        try await app.test(.router) { client in
            try await client.execute(uri: "/fails/404", method: .get) { #expect($0.status == .notFound) }
            try await client.execute(uri: "/fails/503", method: .get) { #expect($0.status == .badGateway) }
        }
    }

    @Test func valuesSurviveAGracefulShutdownAndARestart() async throws {
        // 50 requests through the app: this runs beside every other suite, and in the first minute
        // of make test-under-load each request waited about half a second for its turns (1,000
        // took past the time limit). The million-key run with a restart is
        // scripts/bench-server-memory's, and ServerExampleTests runs its probe at 2,000 keys.
        let keys = 50
        try await runLive(persist: makeDriver()) { client in
            for index in 0..<keys {
                let response = try await client.put("/kv/key-\(index)", body: body("value-\(index)"))
                #expect(response.status == .ok)
            }
        }
        // A new process: a new driver on the same folder.
        let restarted = makeDriver()
        var readable = 0
        for index in 0..<keys where try await restarted.get(key: "key-\(index)", as: Item.self) == Item(name: "value-\(index)") {
            readable += 1
        }
        #expect(readable * 100 >= keys * 99)
    }
}
#endif
