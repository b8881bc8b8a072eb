import Foundation
import HTTPCaching
import HanekeProtocols
import HanekeTesting
import MemoryStore
import Testing

/// Responses kept in a real MemoryStore by the policy, on a test clock.
struct HTTPCacheTests {
    let clock = TestClock()
    let uri = "http://127.0.0.1:8080/page"

    func makeCache(kind: HTTPCachePolicy.Kind = .private) -> HTTPCache<MemoryStore<String, Data>> {
        HTTPCache(storage: MemoryStore<String, Data>(clock: clock), policy: HTTPCachePolicy(kind: kind), clock: clock, validationRetention: .seconds(600))
    }

    func request(_ fields: [(String, String)] = [], method: String = "GET") -> HTTPCacheRequest {
        HTTPCacheRequest(method: method, uri: uri, headers: HTTPHeaderFields(fields))
    }

    @discardableResult
    func store(_ cache: HTTPCache<MemoryStore<String, Data>>, _ fields: [(String, String)], body: String, request: HTTPCacheRequest? = nil) async throws -> StoredHTTPResponse? {
        let now = clock.now()
        return try await cache.store(HTTPResponse(headers: HTTPHeaderFields(fields), body: Data(body.utf8)), for: request ?? self.request(), requestTime: now, responseTime: now)
    }

    @Test func aStoredResponseIsFoundFreshThenStaleThenGone() async throws {
        let cache = makeCache()
        try await store(cache, [("Cache-Control", "max-age=60"), ("ETag", "\"v1\"")], body: "one")
        let fresh = try #require(try await cache.lookup(request()))
        #expect(fresh.reuse == .fresh)
        #expect(String(decoding: fresh.body, as: UTF8.self) == "one")
        clock.advance(by: .seconds(61))
        #expect(try await cache.lookup(request())?.reuse == .validate(servableOnError: false))
        clock.advance(by: .seconds(600))   // past the retention for validation
        #expect(try await cache.lookup(request()) == nil)
    }

    @Test func aHEADIsAnsweredByTheStoredGETAndOtherMethodsNever() async throws {
        let cache = makeCache()
        try await store(cache, [("Cache-Control", "max-age=60")], body: "one")
        #expect(try await cache.lookup(request(method: "HEAD"))?.reuse == .fresh)
        #expect(try await cache.lookup(request(method: "POST")) == nil)
    }

    @Test func responsesThatCanNeverBeUsedAreNotKept() async throws {
        let cache = makeCache()
        #expect(try await store(cache, [("Cache-Control", "max-age=0, must-revalidate")], body: "x") == nil)
        #expect(try await cache.lookup(request()) == nil)
        #expect(try await store(cache, [("Cache-Control", "no-store, max-age=60")], body: "x") == nil)
        // A response stale on arrival is kept to be revalidated, or served while the origin is down.
        #expect(try await store(cache, [("Cache-Control", "max-age=0")], body: "x") != nil)
        // With a validator, even one that must be revalidated.
        #expect(try await store(cache, [("Cache-Control", "no-cache"), ("ETag", "\"v\"")], body: "x") != nil)
        #expect(try await cache.lookup(request())?.reuse == .validate(servableOnError: false))
    }

    @Test func eachVariantIsKeptAndFoundByItsRequestFields() async throws {
        let cache = makeCache()
        let german = request([("Accept-Language", "de")])
        let english = request([("Accept-Language", "en")])
        try await store(cache, [("Cache-Control", "max-age=60"), ("Vary", "Accept-Language")], body: "Hallo", request: german)
        try await store(cache, [("Cache-Control", "max-age=60"), ("Vary", "Accept-Language")], body: "Hello", request: english)
        #expect(try await cache.lookup(german).map { String(decoding: $0.body, as: UTF8.self) } == "Hallo")
        #expect(try await cache.lookup(english).map { String(decoding: $0.body, as: UTF8.self) } == "Hello")
        #expect(try await cache.lookup(request([("Accept-Language", "fr")])) == nil)
        #expect(try await cache.lookup(request()) == nil)
    }

    @Test func invalidationRemovesEveryVariantForGood() async throws {
        let cache = makeCache()
        let german = request([("Accept-Language", "de")])
        let english = request([("Accept-Language", "en")])
        try await store(cache, [("Cache-Control", "max-age=600"), ("Vary", "Accept-Language")], body: "Hallo", request: german)
        try await cache.invalidate(after: request(method: "POST"), status: 200, headers: HTTPHeaderFields())
        #expect(try await cache.lookup(german) == nil)
        // A new variant with the same Vary does not bring the old one back.
        try await store(cache, [("Cache-Control", "max-age=600"), ("Vary", "Accept-Language")], body: "Hello", request: english)
        #expect(try await cache.lookup(german) == nil)
        #expect(try await cache.lookup(english) != nil)
        // An error answer invalidates nothing.
        try await cache.invalidate(after: request(method: "DELETE"), status: 503, headers: HTTPHeaderFields())
        #expect(try await cache.lookup(english) != nil)
    }

    @Test func aNotModifiedRefreshesTheStoredResponseAndKeepsItsBody() async throws {
        let cache = makeCache()
        try await store(cache, [("Cache-Control", "max-age=2"), ("ETag", "\"a\""), ("Test-Header", "old")], body: "body")
        clock.advance(by: .seconds(5))
        let stale = try #require(try await cache.lookup(request()))
        #expect(stale.reuse == .validate(servableOnError: false))
        let now = clock.now()
        #expect(try await cache.update(stale, with: ["ETag": "\"b\""], requestTime: now, responseTime: now) == nil)
        let updated = try #require(try await cache.update(stale, with: ["ETag": "\"a\"", "Test-Header": "new", "Cache-Control": "max-age=3600"], requestTime: now, responseTime: now))
        #expect(updated.headers["Test-Header"] == "new")
        let hit = try #require(try await cache.lookup(request()))
        #expect(hit.reuse == .fresh)
        #expect(hit.stored.headers["Test-Header"] == "new")
        #expect(String(decoding: hit.body, as: UTF8.self) == "body")
        clock.advance(by: .seconds(3_000))
        #expect(try await cache.lookup(request())?.reuse == .fresh)   // the entry's expiry moved with its lifetime
    }

    @Test func aRecordThatDoesNotDecodeIsAMissAndIsRemoved() async throws {
        let storage = MemoryStore<String, Data>(clock: clock)
        let cache = HTTPCache(storage: storage, clock: clock)
        try await storage.setValue(Data("x".utf8), forKey: uri, expiresAt: nil, metadata: Data("not a record".utf8))
        #expect(try await cache.lookup(request()) == nil)
        #expect(storage.value(forKey: uri) == nil)
    }

    @Test func responsesRoundTripAsBytes() throws {
        let response = HTTPResponse(status: 203, headers: ["A": "1", "a": "2", "Ü": "ÿ"], body: Data([0, 1, 2, 255]))
        #expect(try HTTPResponse.convertFromData(response.asData()) == response)
        #expect(throws: (any Error).self) { try HTTPResponse.convertFromData(Data("hnkR".utf8)) }
        let stored = StoredHTTPResponse(status: 200, headers: ["ETag": "\"x\""], requestTime: clock.now(), responseTime: clock.now(), variantRequestHeaders: ["Accept": "a"])
        #expect(try StoredHTTPResponse(decoding: stored.encoded()) == stored)
    }
}
