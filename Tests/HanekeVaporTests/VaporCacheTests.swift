#if Vapor
import Foundation
import Haneke
import HanekeProtocols
import HanekeServer
import HanekeTesting
import HanekeVapor
import Testing
import TestSupport
import VaporTesting

struct Item: Content, Equatable {
    var name: String
}

/// Routes over `request.cache`, the application's cache: Vapor's protocol, and what Haneke adds to it.
func configure(_ app: Application, cache: KeyValueCache) {
    app.logger.logLevel = .warning
    app.caches.use(.haneke(cache))
    app.middleware.use(StoreErrorMiddleware())
    app.put("kv", ":key") { request async throws -> HTTPStatus in
        let key = try request.parameters.require("key")
        let item = try request.content.decode(Item.self)
        if let seconds = request.query[Int.self, at: "s"] {
            try await request.cache.set(key, to: item, expiresIn: .seconds(seconds))
        } else if let milliseconds = request.query[Int64.self, at: "ms"] {
            try await haneke(request).set(key, to: item, timeToLive: .milliseconds(milliseconds))
        } else {
            try await request.cache.set(key, to: item)
        }
        return .ok
    }
    app.post("kv", ":key") { request async throws -> HTTPStatus in
        let key = try request.parameters.require("key")
        let item = try request.content.decode(Item.self)
        let lifetime = request.query[Int64.self, at: "ms"].map { Duration.milliseconds($0) }
        return try await haneke(request).create(key, value: item, timeToLive: lifetime) ? .created : .conflict
    }
    app.get("kv", ":key") { request async throws -> Item in
        guard let item = try await request.cache.get(try request.parameters.require("key"), as: Item.self) else { throw Abort(.notFound) }
        return item
    }
    app.delete("kv", ":key") { request async throws -> HTTPStatus in
        try await request.cache.delete(try request.parameters.require("key"))
        return .noContent
    }
    app.get("fails", ":code") { request async throws -> String in
        let code = try request.parameters.require("code")
        throw StoreError(.invalidStatusCode, "GET http://upstream/x answered \(code)", statusCode: Int(code))
    }
}

func haneke(_ request: Request) throws -> HanekeVaporCache {
    guard let cache = request.cache as? HanekeVaporCache else { throw Abort(.internalServerError, reason: "not a Haneke cache") }
    return cache
}

func body(_ name: String) -> ByteBuffer { ByteBuffer(string: #"{"name":"\#(name)"}"#) }
let json: HTTPHeaders = ["Content-Type": "application/json"]

@Suite(.timeLimit(.minutes(1)), .tags(.disk))
struct VaporCacheTests {
    let directory: TemporaryDirectory
    let clock = TestClock()

    init() async throws {
        try await startNIOSingletons()
        directory = try TemporaryDirectory(prefix: "vapor")
    }

    func makeCache() -> KeyValueCache {
        KeyValueCache(name: "vapor", directory: directory.appending("vapor"), clock: clock)
    }

    @Test func setGetAndDeleteThroughRequestCache() async throws {
        try await withApp(configure: { configure($0, cache: makeCache()) }) { app in
            let tester = try app.testing()
            try await tester.test(.PUT, "kv/a", headers: json, body: body("first")) { #expect($0.status == .ok) }
            try await tester.test(.GET, "kv/a") { response in
                #expect(response.status == .ok)
                let item = try response.content.decode(Item.self)
                #expect(item == Item(name: "first"))
            }
            try await tester.test(.DELETE, "kv/a") { #expect($0.status == .noContent) }
            try await tester.test(.GET, "kv/a") { #expect($0.status == .notFound) }
        }
    }

    @Test func lifetimesInSecondsAndMillisecondsAndAnOverwriteDropsTheOldOne() async throws {
        try await withApp(configure: { configure($0, cache: makeCache()) }) { app in
            let tester = try app.testing()
            try await tester.test(.PUT, "kv/s?s=2", headers: json, body: body("s")) { #expect($0.status == .ok) }
            try await tester.test(.PUT, "kv/ms?ms=1500", headers: json, body: body("ms")) { #expect($0.status == .ok) }
            try await tester.test(.PUT, "kv/over?s=1", headers: json, body: body("v1")) { #expect($0.status == .ok) }
            // Vapor's rule: a set without a lifetime replaces the value and its lifetime.
            try await tester.test(.PUT, "kv/over", headers: json, body: body("v2")) { #expect($0.status == .ok) }
            clock.advance(by: .milliseconds(1_499))
            try await tester.test(.GET, "kv/ms") { #expect($0.status == .ok) }
            clock.advance(by: .milliseconds(2))
            try await tester.test(.GET, "kv/ms") { #expect($0.status == .notFound) }
            try await tester.test(.GET, "kv/s") { #expect($0.status == .ok) }
            clock.advance(by: .milliseconds(500))
            try await tester.test(.GET, "kv/s") { #expect($0.status == .notFound) }
            try await tester.test(.GET, "kv/over") { response in let item = try response.content.decode(Item.self); #expect(item == Item(name: "v2")) }
        }
    }

    @Test func createFailsOnAnExistingKeyUntilItExpires() async throws {
        try await withApp(configure: { configure($0, cache: makeCache()) }) { app in
            let tester = try app.testing()
            try await tester.test(.POST, "kv/lock?ms=250", headers: json, body: body("one")) { #expect($0.status == .created) }
            try await tester.test(.POST, "kv/lock", headers: json, body: body("two")) { #expect($0.status == .conflict) }
            clock.advance(by: .milliseconds(251))
            try await tester.test(.POST, "kv/lock", headers: json, body: body("three")) { #expect($0.status == .created) }
            try await tester.test(.GET, "kv/lock") { response in let item = try response.content.decode(Item.self); #expect(item == Item(name: "three")) }
        }
    }

    @Test func storeErrorsBecomeTheStatusAGatewayAnswersWith() async throws {
        try await withApp(configure: { configure($0, cache: makeCache()) }) { app in
            let tester = try app.testing()
            try await tester.test(.GET, "fails/404") { #expect($0.status == .notFound) }
            try await tester.test(.GET, "fails/500") { #expect($0.status == .badGateway) }
        }
    }

    @Test func aValueOfAnotherTypeFailsWithADecodingError() async throws {
        let cache = makeCache()
        try await withApp(configure: { configure($0, cache: cache) }) { app in
            try await app.cache.set("n", to: 7)
            let error = await #expect(throws: StoreError.self) { try await app.cache.get("n", as: Item.self) }
            #expect(error?.code == .decoding)
            #expect(try await app.cache.get("n", as: Int.self) == 7)
        }
    }

    @Test func valuesSurviveAShutdownAndARestart() async throws {
        // 50 requests through the app: this runs beside every other suite, and in the first minute
        // of make test-under-load each request waited about half a second for its turns (1,000
        // took past the time limit). The million-key run with a restart is
        // scripts/bench-server-memory's, and ServerExampleTests runs its probe at 2,000 keys.
        let keys = 50
        try await withApp(configure: { configure($0, cache: makeCache()) }) { app in
            let tester = try app.testing()
            for index in 0..<keys {
                try await tester.test(.PUT, "kv/key-\(index)", headers: json, body: body("value-\(index)")) { #expect($0.status == .ok) }
            }
        }
        try await withApp(configure: { configure($0, cache: makeCache()) }) { app in
            var readable = 0
            for index in 0..<keys where try await app.cache.get("key-\(index)", as: Item.self) == Item(name: "value-\(index)") {
                readable += 1
            }
            #expect(readable * 100 >= keys * 99)
        }
    }
}
#endif
