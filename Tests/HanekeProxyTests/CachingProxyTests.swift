import Foundation
import HTTPCaching
@testable import HanekeProxy
import HanekeTesting
import LoopbackHTTPServer
import MemoryStore
import NIOCore
import Testing
import TestSupport

/// Each rule through the proxy, against a real origin on loopback, on a test clock.
struct CachingProxyTests {
    @Test func aFreshResponseIsServedFromTheCacheWithItsAge() async throws {
        try await ProxyFixture.run { fixture in
            fixture.origin.answer(origin(200, [("Cache-Control", "max-age=60")], body: "one"))
            let miss = await fixture.get()
            #expect(miss.status == 200)
            #expect(miss.cacheStatus == "haneke; fwd=uri-miss; fwd-status=200; stored")
            fixture.clock.advance(by: .seconds(10))
            let hit = await fixture.get()
            #expect(hit.text == "one")
            #expect(hit.headers["Age"] == "10")
            #expect(hit.cacheStatus == "haneke; hit; ttl=50")
            #expect(fixture.origin.requests.count == 1)
        }
    }

    @Test func differentQueriesAreDifferentEntries() async throws {
        try await ProxyFixture.run { fixture in
            fixture.origin.answer(origin(200, [("Cache-Control", "max-age=60")]))
            _ = await fixture.get("/resource?a=1")
            _ = await fixture.get("/resource?a=2")
            #expect(fixture.origin.requests.map(\.uri) == ["/resource?a=1", "/resource?a=2"])
        }
    }

    @Test func aStaleResponseIsRevalidatedAndA304UpdatesIt() async throws {
        try await ProxyFixture.run { fixture in
            fixture.origin.answer(
                origin(200, [("Cache-Control", "max-age=1"), ("ETag", "\"v1\""), ("Test-Header", "old")], body: "kept"),
                origin(304, [("Cache-Control", "max-age=3600"), ("ETag", "\"v1\""), ("Test-Header", "new")], body: "")
            )
            _ = await fixture.get()
            fixture.clock.advance(by: .seconds(5))
            let revalidated = await fixture.get()
            #expect(revalidated.status == 200)
            #expect(revalidated.text == "kept")
            #expect(revalidated.headers["Test-Header"] == "new")
            #expect(revalidated.cacheStatus?.hasPrefix("haneke; fwd=stale; fwd-status=304") == true)
            let sent = try #require(fixture.origin.requests.last)
            #expect(sent.headers.contains { $0.0.lowercased() == "if-none-match" && $0.1 == "\"v1\"" })
            let hit = await fixture.get()
            #expect(hit.cacheStatus?.hasPrefix("haneke; hit") == true)
            #expect(fixture.origin.requests.count == 2)
        }
    }

    @Test func staleWhileRevalidateServesAtOnceAndRefreshesInTheBackground() async throws {
        try await ProxyFixture.run { fixture in
            fixture.origin.answer(
                origin(200, [("Cache-Control", "max-age=1, stale-while-revalidate=60")], body: "old"),
                origin(200, [("Cache-Control", "max-age=100")], body: "new")
            )
            _ = await fixture.get()
            fixture.clock.advance(by: .seconds(5))
            let stale = await fixture.get()
            #expect(stale.text == "old")
            #expect(stale.cacheStatus == "haneke; hit; ttl=-4; detail=stale-while-revalidate")
            await fixture.proxy.waitForRevalidations()
            #expect(fixture.origin.requests.count == 2)
            let fresh = await fixture.get()
            #expect(fresh.text == "new")
            #expect(fresh.cacheStatus?.hasPrefix("haneke; hit") == true)
        }
    }

    @Test func staleIfErrorServesTheStoredResponseWhenTheOriginFails() async throws {
        try await ProxyFixture.run { fixture in
            fixture.origin.answer(
                origin(200, [("Cache-Control", "max-age=1, stale-if-error=60")], body: "kept"),
                origin(503, [], body: "down")
            )
            _ = await fixture.get()
            fixture.clock.advance(by: .seconds(5))
            let served = await fixture.get()
            #expect(served.status == 200)
            #expect(served.text == "kept")
            #expect(served.cacheStatus?.contains("detail=stale-if-error") == true)
            fixture.clock.advance(by: .seconds(100))   // past the window: the error goes through
            let failed = await fixture.get()
            #expect(failed.status == 503)
        }
    }

    @Test func aStaleResponseIsServedWhenTheOriginCannotBeReachedUnlessItMustBeRevalidated() async throws {
        // A shared cache does so only where its operator allows it (a private cache by default).
        try await ProxyFixture.run(policy: HTTPCachePolicy(kind: .shared, servesStaleWhenDisconnected: true)) { fixture in
            fixture.origin.answer(origin(200, [("Cache-Control", "max-age=1")], body: "kept"))
            _ = await fixture.get("/plain")
            fixture.origin.answer(origin(200, [("Cache-Control", "max-age=1, must-revalidate"), ("ETag", "\"s\"")], body: "strict"))
            _ = await fixture.get("/strict")
            await fixture.server.shutdown()
            fixture.clock.advance(by: .seconds(5))
            let plain = await fixture.get("/plain")
            #expect(plain.text == "kept")
            #expect(plain.cacheStatus?.contains("detail=disconnected") == true)
            #expect(await fixture.get("/strict").status == 504)
        }
    }

    @Test func mustRevalidateNeverServesStaleOnError() async throws {
        try await ProxyFixture.run { fixture in
            fixture.origin.answer(
                origin(200, [("Cache-Control", "max-age=1, stale-if-error=60, must-revalidate")]),
                origin(503, [], body: "down")
            )
            _ = await fixture.get()
            fixture.clock.advance(by: .seconds(5))
            #expect(await fixture.get().status == 503)
        }
    }

    @Test(arguments: ["no-store", "private, max-age=60", "no-store, max-age=60"])
    func responsesASharedCacheMustNotStoreAreFetchedEachTime(cacheControl: String) async throws {
        try await ProxyFixture.run { fixture in
            fixture.origin.answer(origin(200, [("Cache-Control", cacheControl)]))
            _ = await fixture.get()
            let second = await fixture.get()
            #expect(second.cacheStatus == "haneke; fwd=uri-miss; fwd-status=200")
            #expect(fixture.origin.requests.count == 2)
        }
    }

    @Test func aPrivateCacheKeepsPrivateResponses() async throws {
        try await ProxyFixture.run(kind: .private) { fixture in
            fixture.origin.answer(origin(200, [("Cache-Control", "private, max-age=60")]))
            _ = await fixture.get()
            _ = await fixture.get()
            #expect(fixture.origin.requests.count == 1)
        }
    }

    @Test func eachVariantIsCachedByTheFieldsVaryNames() async throws {
        try await ProxyFixture.run { fixture in
            fixture.origin.answer(
                origin(200, [("Cache-Control", "max-age=60"), ("Vary", "Accept-Language")], body: "Hallo"),
                origin(200, [("Cache-Control", "max-age=60"), ("Vary", "Accept-Language")], body: "Hello")
            )
            #expect(await fixture.get("/resource", [("Accept-Language", "de")]).text == "Hallo")
            let english = await fixture.get("/resource", [("Accept-Language", "en")])
            #expect(english.text == "Hello")
            #expect(english.cacheStatus?.hasPrefix("haneke; fwd=") == true)
            #expect(await fixture.get("/resource", [("Accept-Language", "de")]).text == "Hallo")
            #expect(await fixture.get("/resource", [("Accept-Language", "en")]).text == "Hello")
            #expect(fixture.origin.requests.count == 2)
        }
    }

    @Test func aSuccessfulUnsafeRequestInvalidatesItsTarget() async throws {
        try await ProxyFixture.run { fixture in
            fixture.origin.answer(origin(200, [("Cache-Control", "max-age=60")]))
            _ = await fixture.get()
            let posted = await fixture.get("/resource", method: "POST")
            #expect(posted.cacheStatus == "haneke; fwd=method; fwd-status=200")
            _ = await fixture.get()
            #expect(fixture.origin.requests.map(\.method) == ["GET", "POST", "GET"])
        }
    }

    @Test func aClientsOwnValidatorIsAnsweredNotModifiedFromTheCache() async throws {
        try await ProxyFixture.run { fixture in
            fixture.origin.answer(origin(200, [("Cache-Control", "max-age=60"), ("ETag", "\"abc\""), ("Content-Type", "text/plain")]))
            _ = await fixture.get()
            let notModified = await fixture.get("/resource", [("If-None-Match", "W/\"abc\"")])
            #expect(notModified.status == 304)
            #expect(notModified.headers["ETag"] == "\"abc\"")
            #expect(notModified.headers["Content-Type"] == nil)
            #expect(notModified.body.readableBytes == 0)
            #expect(fixture.origin.requests.count == 1)
        }
    }

    @Test func aHEADAndARangeAreAnsweredFromTheStoredGET() async throws {
        try await ProxyFixture.run { fixture in
            fixture.origin.answer(origin(200, [("Cache-Control", "max-age=60")], body: "01234567890"))
            _ = await fixture.get()
            let head = await fixture.get("/resource", method: "HEAD")
            #expect(head.status == 200)
            #expect(head.body.readableBytes == 0)
            #expect(head.headers["Content-Length"] == "11")
            let range = await fixture.get("/resource", [("Range", "bytes=-1")])
            #expect(range.status == 206)
            #expect(range.text == "0")
            #expect(range.headers["Content-Range"] == "bytes 10-10/11")
            #expect(fixture.origin.requests.count == 1)
        }
    }

    @Test func aRangeWhoseIfRangeNamesAnotherVersionGetsTheWholeResponse() async throws {
        try await ProxyFixture.run { fixture in
            fixture.origin.answer(origin(200, [("Cache-Control", "max-age=60"), ("ETag", "\"v2\"")], body: "0123456789"))
            _ = await fixture.get()
            let other = await fixture.get("/resource", [("Range", "bytes=5-"), ("If-Range", "\"v1\"")])
            #expect(other.status == 200)
            #expect(other.text == "0123456789")
            let same = await fixture.get("/resource", [("Range", "bytes=5-"), ("If-Range", "\"v2\"")])
            #expect(same.status == 206)
            #expect(same.text == "56789")
        }
    }

    @Test func aRevalidationCarriesNoBodyFramingAndEveryForwardedRequestAVia() async throws {
        try await ProxyFixture.run { fixture in
            fixture.origin.answer(
                origin(200, [("Cache-Control", "max-age=1"), ("ETag", "\"v1\"")]),
                origin(304, [("ETag", "\"v1\""), ("Cache-Control", "max-age=60")], body: "")
            )
            _ = await fixture.get()
            fixture.clock.advance(by: .seconds(5))
            var request = ProxyRequest(target: "/resource", headers: ["Content-Length": "5"])
            request.body = .buffer(ByteBuffer(string: "hello"))
            let response = await fixture.proxy.respond(to: request)
            #expect(response.status == 200)
            let sent = try #require(fixture.origin.requests.last)
            #expect(!sent.headers.contains { $0.0.lowercased() == "content-length" })
            #expect(sent.headers.contains { $0.0.lowercased() == "via" && $0.1 == "1.1 haneke" })
        }
    }

    @Test func aStaleHEADIsRevalidatedWithAGETAndAnsweredWithoutABody() async throws {
        try await ProxyFixture.run { fixture in
            fixture.origin.answer(
                origin(200, [("Cache-Control", "max-age=1"), ("ETag", "\"v1\"")], body: "old"),
                origin(304, [("ETag", "\"v1\""), ("Cache-Control", "max-age=60")], body: "")
            )
            _ = await fixture.get()
            fixture.clock.advance(by: .seconds(5))
            let head = await fixture.get("/resource", method: "HEAD")
            #expect(head.status == 200)
            #expect(head.body.readableBytes == 0)
            #expect(fixture.origin.requests.map(\.method) == ["GET", "GET"])
            #expect(fixture.origin.requests.last?.values("If-None-Match") == ["\"v1\""])
            let get = await fixture.get()
            #expect(get.text == "old")
            #expect(get.cacheStatus?.hasPrefix("haneke; hit") == true)
        }
    }

    @Test func anUpstreamPastItsDeadlineAnswers504AndNothingPartIsStored() async throws {
        try await ProxyFixture.run { fixture in
            fixture.origin.answer(LoopbackHTTPServer.Response(body: Data(repeating: 0x41, count: 200), headers: [("Cache-Control", "max-age=3600")], dripInterval: .milliseconds(50)))
            var configuration = CachingProxy<MemoryStore<String, Data>>.Configuration()
            configuration.upstreamTimeout = .milliseconds(300)
            let proxy = try CachingProxy(upstream: fixture.server.baseURL, cache: fixture.proxy.cache, group: try await sharedEventLoops(), configuration: configuration)
            let response = await proxy.respond(to: ProxyRequest(target: "/slow"))
            #expect(response.status == 504)
            #expect(try await fixture.proxy.cache.lookup(HTTPCacheRequest(uri: proxy.upstreamOrigin + "/slow")) == nil)
            await proxy.shutdown()
        }
    }

    @Test func onlyIfCachedAnswers504OnAMiss() async throws {
        try await ProxyFixture.run { fixture in
            let response = await fixture.get("/resource", [("Cache-Control", "only-if-cached")])
            #expect(response.status == 504)
            #expect(fixture.origin.requests.isEmpty)
        }
    }

    @Test func theUpstreamReceivesItsOwnHostAndNoHopByHopFields() async throws {
        try await ProxyFixture.run { fixture in
            fixture.origin.answer(origin(200, [("Cache-Control", "no-store")]))
            _ = await fixture.get("/resource", [("Host", "public.example"), ("Connection", "close, X-Hop"), ("X-Hop", "1"), ("X-End", "2")])
            let sent = try #require(fixture.origin.requests.first)
            #expect(sent.headers.first { $0.0.lowercased() == "host" }?.1 == "127.0.0.1:\(fixture.server.port)")
            #expect(!sent.headers.contains { $0.0.lowercased() == "x-hop" })
            #expect(sent.headers.contains { $0.0.lowercased() == "x-end" })
        }
    }

    @Test func anUnreachableUpstreamAnswers502() async throws {
        try await ProxyFixture.run { fixture in
            let cache = HTTPCache(storage: fixture.proxy.cache.storage, policy: HTTPCachePolicy(kind: .shared), clock: fixture.clock)
            let unreachable = try CachingProxy(upstream: URL(string: "http://127.0.0.1:1")!, cache: cache, group: try await sharedEventLoops())
            let response = await unreachable.respond(to: ProxyRequest(target: "/x"))
            #expect(response.status == 502)
            await unreachable.shutdown()
        }
    }
}
