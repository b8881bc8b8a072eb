import Foundation
import Haneke
import HanekeTesting
import HTTPCaching
import LoopbackHTTPServer
import Testing
import TestSupport

/// RFC 9111 and RFC 5861 through `cache.fetch(url:)`: a real origin on loopback, a cache with
/// memory and disk layers in a temporary folder, and a test clock for every age.
@Suite(.timeLimit(.minutes(1)), .tags(.disk))
struct HTTPFetchTests {
    let directory: TemporaryDirectory
    let clock = TestClock()

    init() throws {
        directory = try TemporaryDirectory(prefix: "http-fetch")
    }

    /// An origin whose answer a test sets and changes, and which records every request it gets.
    final class Origin: Sendable {
        typealias Answer = @Sendable (LoopbackHTTPServer.Request) -> LoopbackHTTPServer.Response
        private let answer: Locked<Answer>
        private let received = Locked<[HTTPHeaderFields]>([])

        init(_ answer: @escaping Answer) {
            self.answer = Locked(answer)
        }

        func answer(with answer: @escaping Answer) {
            self.answer.withLock { $0 = answer }
        }

        func respond(to request: LoopbackHTTPServer.Request) -> LoopbackHTTPServer.Response {
            received.withLock { $0.append(HTTPHeaderFields(request.headers)) }
            return answer.withLock { $0 }(request)
        }

        /// The header fields of each request received, in order.
        var requests: [HTTPHeaderFields] { received.withLock { $0 } }
    }

    /// A `200` with `body` and `headers`, its `Date` the test clock's.
    func ok(_ body: String, _ headers: [(String, String)] = []) -> LoopbackHTTPServer.Response {
        .init(status: 200, body: Data(body.utf8), headers: [("Date", HTTPDate.format(clock.now()))] + headers)
    }

    func notModified(_ headers: [(String, String)] = []) -> LoopbackHTTPServer.Response {
        .init(status: 304, headers: [("Date", HTTPDate.format(clock.now()))] + headers)
    }

    func makeCache() -> Cache<String> {
        Cache<String>(name: "http", directory: directory.appending("http"), clock: clock)
    }

    /// Runs `body` with an origin answering `answer`, a cache, and the URL `/page` of the origin.
    func withOrigin(
        _ answer: @escaping Origin.Answer,
        _ body: (Origin, Cache<String>, URL, LoopbackHTTPServer) async throws -> Void
    ) async throws {
        let origin = Origin(answer)
        let server = try await LoopbackHTTPServer.start { origin.respond(to: $0) }
        try await withServer(server, shutdown: { await $0.shutdown() }) { server in
            try await body(origin, makeCache(), server.baseURL.appendingPathComponent("page"), server)
        }
    }

    /// A response varying on `Accept-Language`, whose body is the request's language (or `none`).
    func answerInTheRequestsLanguage(_ request: LoopbackHTTPServer.Request) -> LoopbackHTTPServer.Response {
        ok(HTTPHeaderFields(request.headers)["Accept-Language"] ?? "none", [("Cache-Control", "max-age=60"), ("Vary", "Accept-Language")])
    }

    // MARK: - Freshness

    @Test func aFreshResponseIsServedWithoutARequestUntilItsMaxAgeRunsOut() async throws {
        try await withOrigin({ _ in self.ok("v1", [("Cache-Control", "private, max-age=60"), ("ETag", "\"1\"")]) }) { origin, cache, url, _ async throws in
            #expect(try await cache.fetch(url: url) == "v1")
            clock.advance(by: .seconds(59))
            #expect(try await cache.fetch(url: url) == "v1")
            #expect(origin.requests.count == 1)
            clock.advance(by: .seconds(2))
            origin.answer { _ in self.ok("v2", [("Cache-Control", "max-age=60")]) }
            #expect(try await cache.fetch(url: url) == "v2")
            #expect(origin.requests.count == 2)
            #expect(origin.requests[1]["If-None-Match"] == "\"1\"")
        }
    }

    /// A format's `timeToLive` is the longest a fetched value lives: a response fresh for an hour
    /// is fetched again once the format's 3 seconds are over (it was served from disk for a day).
    @Test func aFormatsTimeToLiveEndsAResponseFresherThanIt() async throws {
        try await withOrigin({ _ in self.ok("v1", [("Cache-Control", "max-age=3600")]) }) { origin, cache, url, _ async throws in
            var short = Format<String>(name: "short")
            short.timeToLive = .seconds(3)
            cache.addFormat(short)
            #expect(try await cache.fetch(url: url, formatName: "short") == "v1")
            clock.advance(by: .seconds(2))
            #expect(try await cache.fetch(url: url, formatName: "short") == "v1")
            #expect(origin.requests.count == 1)
            clock.advance(by: .seconds(2))
            #expect(try await cache.fetch(url: url, formatName: "short") == "v1")
            #expect(origin.requests.count == 2)
            // The original format has no lifetime of its own: the response's hour stands.
            #expect(try await cache.fetch(url: url) == "v1")
            clock.advance(by: .seconds(3_000))
            #expect(try await cache.fetch(url: url) == "v1")
            #expect(origin.requests.count == 3)
        }
    }

    @Test func expiresCountsFromDateAndAgeShortensTheLifetime() async throws {
        try await withOrigin({ _ in
            self.ok("expires", [("Expires", HTTPDate.format(self.clock.now().addingTimeInterval(120)))])
        }) { origin, cache, url, _ async throws in
            #expect(try await cache.fetch(url: url) == "expires")
            clock.advance(by: .seconds(119))
            #expect(try await cache.fetch(url: url) == "expires")
            #expect(origin.requests.count == 1)
            clock.advance(by: .seconds(2))
            _ = try await cache.fetch(url: url)
            #expect(origin.requests.count == 2)

            // A response 50 seconds old on arrival with max-age=60 has 10 seconds left.
            let aged = url.appendingPathComponent("aged")
            origin.answer { _ in self.ok("aged", [("Cache-Control", "max-age=60"), ("Age", "50")]) }
            _ = try await cache.fetch(url: aged)
            clock.advance(by: .seconds(9))
            _ = try await cache.fetch(url: aged)
            #expect(origin.requests.count == 3)
            clock.advance(by: .seconds(2))
            _ = try await cache.fetch(url: aged)
            #expect(origin.requests.count == 4)
        }
    }

    @Test func lastModifiedGivesAHeuristicLifetimeAndIsRevalidatedWithIfModifiedSince() async throws {
        let lastModified = HTTPDate.format(clock.now().addingTimeInterval(-20 * 86_400))
        try await withOrigin({ _ in self.ok("page", [("Last-Modified", lastModified)]) }) { origin, cache, url, _ async throws in
            _ = try await cache.fetch(url: url)
            // 10 % of 20 days, at most one day.
            clock.advance(by: .seconds(86_399))
            _ = try await cache.fetch(url: url)
            #expect(origin.requests.count == 1)
            clock.advance(by: .seconds(2))
            origin.answer { _ in self.notModified() }
            #expect(try await cache.fetch(url: url) == "page")
            #expect(origin.requests.count == 2)
            #expect(origin.requests[1]["If-Modified-Since"] == lastModified)
        }
    }

    @Test func aResponseWithoutCachingHeadersIsKeptUntilEvictedAsHanekeAlwaysDid() async throws {
        try await withOrigin({ _ in self.ok("plain") }) { origin, cache, url, _ async throws in
            _ = try await cache.fetch(url: url)
            clock.advance(by: .seconds(365 * 86_400))
            #expect(try await cache.fetch(url: url) == "plain")
            #expect(origin.requests.count == 1)
        }
    }

    // MARK: - Storing

    @Test func noStoreIsNeverKeptAndReplacesWhatWasStored() async throws {
        try await withOrigin({ _ in self.ok("one", [("Cache-Control", "max-age=10")]) }) { origin, cache, url, _ async throws in
            _ = try await cache.fetch(url: url)
            clock.advance(by: .seconds(11))
            origin.answer { _ in self.ok("secret", [("Cache-Control", "no-store")]) }
            #expect(try await cache.fetch(url: url) == "secret")
            #expect(try await cache.fetch(url: url) == "secret")
            #expect(origin.requests.count == 3)
            await #expect(throws: StoreError.self) { try await cache.fetch(key: url.absoluteString) }
            cache.removeAllFromMemory()
            await #expect(throws: StoreError.self) { try await cache.fetch(key: url.absoluteString) }
        }
    }

    @Test func aRequestThatSaysNoStoreIsAnsweredButNotKept() async throws {
        try await withOrigin({ _ in self.ok("v", [("Cache-Control", "max-age=60")]) }) { origin, cache, url, _ async throws in
            #expect(try await cache.fetch(url: url, headers: ["Cache-Control": "no-store"]) == "v")
            _ = try await cache.fetch(url: url)
            #expect(origin.requests.count == 2)
        }
    }

    // MARK: - Validation

    @Test func aStaleResponseIsRevalidatedAndA304RenewsItsLifetimeAndFields() async throws {
        try await withOrigin({ _ in self.ok("body", [("Cache-Control", "max-age=60"), ("ETag", "W/\"a\"")]) }) { origin, cache, url, _ async throws in
            _ = try await cache.fetch(url: url)
            clock.advance(by: .seconds(61))
            origin.answer { _ in self.notModified([("Cache-Control", "max-age=600"), ("ETag", "W/\"a\"")]) }
            #expect(try await cache.fetch(url: url) == "body")
            #expect(origin.requests[1]["If-None-Match"] == "W/\"a\"")
            // The 304's max-age now governs: fresh for 600 seconds, in memory and on disk.
            clock.advance(by: .seconds(599))
            cache.removeAllFromMemory()
            #expect(try await cache.fetch(url: url) == "body")
            #expect(origin.requests.count == 2)
            clock.advance(by: .seconds(2))
            _ = try await cache.fetch(url: url)
            #expect(origin.requests.count == 3)
        }
    }

    @Test func aRestartedCacheRevalidatesWhatItKeptOnDisk() async throws {
        try await withOrigin({ _ in self.ok("kept", [("Cache-Control", "max-age=60"), ("ETag", "\"k\"")]) }) { origin, cache, url, _ async throws in
            _ = try await cache.fetch(url: url)
            try await cache.flush()
            let restarted = makeCache()
            #expect(try await restarted.fetch(url: url) == "kept")
            #expect(origin.requests.count == 1)
            clock.advance(by: .seconds(61))
            origin.answer { _ in self.notModified() }
            #expect(try await makeCache().fetch(url: url) == "kept")
            #expect(origin.requests.last?["If-None-Match"] == "\"k\"")
        }
    }

    @Test func noCacheRevalidatesOnEveryFetch() async throws {
        try await withOrigin({ _ in self.ok("nc", [("Cache-Control", "no-cache"), ("ETag", "\"n\"")]) }) { origin, cache, url, _ async throws in
            _ = try await cache.fetch(url: url)
            origin.answer { _ in self.notModified() }
            #expect(try await cache.fetch(url: url) == "nc")
            #expect(try await cache.fetch(url: url) == "nc")
            #expect(origin.requests.count == 3)
            #expect(origin.requests.dropFirst().allSatisfy { $0["If-None-Match"] == "\"n\"" })
        }
    }

    @Test func a304ForAnotherRepresentationFetchesItWhole() async throws {
        try await withOrigin({ _ in self.ok("old", [("Cache-Control", "max-age=1"), ("ETag", "\"old\"")]) }) { origin, cache, url, _ async throws in
            _ = try await cache.fetch(url: url)
            clock.advance(by: .seconds(2))
            origin.answer { request in
                HTTPHeaderFields(request.headers).contains("If-None-Match")
                    ? self.notModified([("ETag", "\"other\"")]) : self.ok("new", [("ETag", "\"new\"")])
            }
            #expect(try await cache.fetch(url: url) == "new")
            #expect(origin.requests.count == 3)
        }
    }

    // MARK: - The request's directives

    @Test func theRequestsDirectivesApplyToTheEntryOfTheSameURL() async throws {
        try await withOrigin({ _ in self.ok("v", [("Cache-Control", "max-age=100"), ("ETag", "\"v\"")]) }) { origin, cache, url, _ async throws in
            _ = try await cache.fetch(url: url)
            origin.answer { _ in self.notModified() }
            // max-age=0 and Pragma: no-cache ask for a revalidation of a fresh response.
            _ = try await cache.fetch(url: url, headers: ["Cache-Control": "max-age=0"])
            #expect(origin.requests.count == 2)
            _ = try await cache.fetch(url: url, headers: ["Pragma": "no-cache"])
            #expect(origin.requests.count == 3)
            // 30 seconds left: min-fresh=50 wants more.
            clock.advance(by: .seconds(70))
            _ = try await cache.fetch(url: url, headers: ["Cache-Control": "min-fresh=50"])
            #expect(origin.requests.count == 4)
            // Stale by 20 seconds: max-stale=30 accepts it, a plain fetch does not.
            clock.advance(by: .seconds(120))
            _ = try await cache.fetch(url: url, headers: ["Cache-Control": "max-stale=30"])
            #expect(origin.requests.count == 4)
            _ = try await cache.fetch(url: url)
            #expect(origin.requests.count == 5)
        }
    }

    @Test func theRequestsNoCacheRevalidatesAFreshResponse() async throws {
        try await withOrigin({ _ in self.ok("v", [("Cache-Control", "max-age=100"), ("ETag", "\"v\"")]) }) { origin, cache, url, _ async throws in
            _ = try await cache.fetch(url: url)
            origin.answer { _ in self.notModified() }
            #expect(try await cache.fetch(url: url, headers: ["Cache-Control": "no-cache"]) == "v")
            #expect(origin.requests.count == 2)
            #expect(origin.requests[1]["If-None-Match"] == "\"v\"")
        }
    }

    @Test func partialContentIsNeverKept() async throws {
        try await withOrigin({ _ in
            .init(status: 206, body: Data("par".utf8), headers: [("Cache-Control", "max-age=60"), ("Content-Range", "bytes 0-2/10")])
        }) { origin, _, url, _ async throws in
            let cache = Cache<HTTPResponse>(name: "ranges", directory: directory.appending("ranges"), clock: clock)
            for _ in 0..<2 {
                let error = await #expect(throws: StoreError.self) { try await cache.fetch(url: url, headers: ["Range": "bytes=0-2"]) }
                #expect(error?.statusCode == 206)
            }
            #expect(origin.requests.count == 2)
        }
    }

    @Test func onlyIfCachedNeverReachesTheOrigin() async throws {
        try await withOrigin({ _ in self.ok("v", [("Cache-Control", "max-age=10")]) }) { origin, cache, url, _ async throws in
            let error = await #expect(throws: StoreError.self) {
                try await cache.fetch(url: url, headers: ["Cache-Control": "only-if-cached"])
            }
            #expect(error?.code == .notFound)
            _ = try await cache.fetch(url: url)
            #expect(try await cache.fetch(url: url, headers: ["Cache-Control": "only-if-cached"]) == "v")
            clock.advance(by: .seconds(11))
            await #expect(throws: StoreError.self) { try await cache.fetch(url: url, headers: ["Cache-Control": "only-if-cached"]) }
            #expect(origin.requests.count == 1)
        }
    }

    // MARK: - Vary

    @Test func eachVariantIsStoredOnItsOwn() async throws {
        try await withOrigin(answerInTheRequestsLanguage) { origin, cache, url, _ async throws in
            #expect(try await cache.fetch(url: url, headers: ["Accept-Language": "de"]) == "de")
            #expect(try await cache.fetch(url: url, headers: ["Accept-Language": "en"]) == "en")
            #expect(try await cache.fetch(url: url, headers: ["Accept-Language": "de"]) == "de")
            #expect(try await cache.fetch(url: url, headers: ["Accept-Language": "en"]) == "en")
            // Without a field of its own, FoundationNetworking sends the locale's Accept-Language:
            // a third variant, whatever it is.
            let plain = try await cache.fetch(url: url)
            #expect(origin.requests.count == 3)
            #expect(plain == origin.requests[2]["Accept-Language"] ?? "none")
            #expect(try await cache.fetch(url: url) == plain)
            #expect(origin.requests.count == 3)
        }
    }

    @Test func varyStarIsNeverReused() async throws {
        try await withOrigin({ _ in self.ok("any", [("Cache-Control", "max-age=60"), ("Vary", "*")]) }) { origin, cache, url, _ async throws in
            _ = try await cache.fetch(url: url)
            _ = try await cache.fetch(url: url)
            #expect(origin.requests.count == 2)
        }
    }

    @Test func aStoredResponseWhoseVaryDoesNotMatchTheFetchersHeadersIsFetchedAgain() async throws {
        try await withOrigin(answerInTheRequestsLanguage) { origin, _, url, _ async throws in
            // Two fetchers with different headers sharing one key: the second's request does not
            // match the stored response's secondary key.
            let store = MemoryStore<String, String>(clock: clock)
            let german = store.fetching(from: NetworkFetcher<String>(url: url, headers: ["Accept-Language": "de"], clock: clock), clock: clock)
            let english = store.fetching(from: NetworkFetcher<String>(url: url, headers: ["Accept-Language": "en"], clock: clock), clock: clock)
            #expect(try await german.fetch("page") == "de")
            #expect(try await english.fetch("page") == "en")
            #expect(try await english.fetch("page") == "en")
            #expect(origin.requests.count == 2)
        }
    }

    // MARK: - Serving stale

    @Test func staleWhileRevalidateServesAtOnceAndRevalidatesOnceInTheBackground() async throws {
        try await withOrigin({ _ in
            self.ok("old", [("Cache-Control", "max-age=60, stale-while-revalidate=30"), ("ETag", "\"o\"")])
        }) { origin, cache, url, _ async throws in
            _ = try await cache.fetch(url: url)
            clock.advance(by: .seconds(70))
            origin.answer { _ in self.ok("new", [("Cache-Control", "max-age=60")]) }
            #expect(try await cache.fetch(url: url) == "old")
            try await cache.waitForRefreshes()
            #expect(origin.requests.count == 2)
            #expect(origin.requests[1]["If-None-Match"] == "\"o\"")
            #expect(try await cache.fetch(url: url) == "new")
            #expect(origin.requests.count == 2)
            // Past the window, a fetch waits for the origin.
            clock.advance(by: .seconds(100))
            #expect(try await cache.fetch(url: url) == "new")
            #expect(origin.requests.count == 3)
        }
    }

    @Test func staleIfErrorServesTheStoredResponseWhenTheOriginFails() async throws {
        try await withOrigin({ _ in
            self.ok("kept", [("Cache-Control", "max-age=60, stale-if-error=600")])
        }) { origin, cache, url, _ async throws in
            _ = try await cache.fetch(url: url)
            clock.advance(by: .seconds(70))
            origin.answer { _ in .init(status: 503, body: Data("down".utf8)) }
            #expect(try await cache.fetch(url: url) == "kept")
            #expect(try cache.freshnessStatistics().staleServedOnError == 1)
            // Past the stale-if-error window the error is the answer.
            clock.advance(by: .seconds(600))
            let error = await #expect(throws: StoreError.self) { try await cache.fetch(url: url) }
            #expect(error?.statusCode == 503)
        }
    }

    @Test func mustRevalidateIsNeverServedStaleOnAnError() async throws {
        try await withOrigin({ _ in
            self.ok("strict", [("Cache-Control", "max-age=60, must-revalidate"), ("ETag", "\"s\"")])
        }) { origin, cache, url, _ async throws in
            _ = try await cache.fetch(url: url)
            clock.advance(by: .seconds(61))
            origin.answer { _ in .init(status: 500, body: Data("boom".utf8)) }
            let error = await #expect(throws: StoreError.self) { try await cache.fetch(url: url) }
            #expect(error?.statusCode == 500)
        }
    }

    @Test func anOriginThatCannotBeReachedLetsAStaleResponseBeServedUnlessForbidden() async throws {
        // An origin that refuses every connection: a port held, bound and never listening (no
        // other test's server can take it meanwhile).
        let refusing = try RefusingPort()
        let cache = makeCache()
        let url = URL(string: "http://127.0.0.1:\(refusing.port)/page")!
        let strict = URL(string: "http://127.0.0.1:\(refusing.port)/strict")!
        // What a fetch stored a minute ago, with a validator so that it is kept to be revalidated.
        try await store("ok", ["Cache-Control": "max-age=60", "ETag": "\"d\""], for: url, in: cache)
        try await store("ok", ["Cache-Control": "max-age=60, must-revalidate", "ETag": "\"s\""], for: strict, in: cache)
        clock.advance(by: .seconds(61))
        #expect(try await cache.fetch(url: url) == "ok")
        #expect(try cache.freshnessStatistics().staleServedOnError == 1)
        let error = await #expect(throws: StoreError.self) { try await cache.fetch(url: strict) }
        #expect(error?.code == .unavailable || error?.code == .missingData)
        withExtendedLifetime(refusing) {}
    }

    /// Stores `body` for `url` as `NetworkFetcher` would have stored its response, now.
    func store(_ body: String, _ headers: HTTPHeaderFields, for url: URL, in cache: Cache<String>) async throws {
        let policy = HTTPCachePolicy.fetcherDefault
        let request = HTTPCacheRequest(uri: url.absoluteString)
        var fields = headers
        fields.add(name: "Date", value: HTTPDate.format(clock.now()))
        let stored = policy.storedResponse(HTTPResponse(status: 200, headers: fields), for: request, requestTime: clock.now(), responseTime: clock.now())
        let attributes = try #require(policy.entryAttributes(of: stored, retention: .seconds(86_400)))
        _ = try await cache.fetch(key: url.absoluteString, fetcher: EntryFetcher(entry: StoreEntry(value: body, attributes: attributes)))
    }

    /// Hands over one prepared entry.
    struct EntryFetcher: Fetcher {
        let entry: StoreEntry<String>
        func fetch(_ key: String) async throws -> String { entry.value }
        func fetchEntry(_ key: String) async throws -> StoreEntry<String> { entry }
    }

    @Test func aFailedBackgroundRevalidationIsNotRetriedOnEveryRead() async throws {
        try await withOrigin({ _ in
            self.ok("kept", [("Cache-Control", "max-age=60, stale-while-revalidate=600, stale-if-error=600"), ("ETag", "\"k\"")])
        }) { origin, cache, url, _ async throws in
            _ = try await cache.fetch(url: url)
            clock.advance(by: .seconds(70))
            origin.answer { _ in .init(status: 503, body: Data("down".utf8)) }
            #expect(try await cache.fetch(url: url) == "kept")
            try await cache.waitForRefreshes()
            #expect(origin.requests.count == 2)
            // Within the backoff, reads are served and ask nothing.
            for _ in 0..<5 { #expect(try await cache.fetch(url: url) == "kept") }
            try await cache.waitForRefreshes()
            #expect(origin.requests.count == 2)
            #expect(try cache.freshnessStatistics().refreshFailures == 1)
            clock.advance(by: .seconds(2))
            _ = try await cache.fetch(url: url)
            try await cache.waitForRefreshes()
            #expect(origin.requests.count == 3)
        }
    }

    // MARK: - Formats

    /// A format derived from the original keeps its rules: made again once the original changed,
    /// never kept when the original was not.
    @Test func aDerivedFormatFollowsTheOriginalsRules() async throws {
        try await withOrigin({ _ in self.ok("v1", [("Cache-Control", "max-age=60"), ("ETag", "\"1\"")]) }) { origin, cache, url, _ async throws in
            var upper = Format<String>(name: "upper") { $0.uppercased() }
            upper.derivesFromOriginal = true
            cache.addFormat(upper)
            #expect(try await cache.fetch(url: url, formatName: "upper") == "V1")
            #expect(try await cache.fetch(url: url, formatName: "upper") == "V1")
            #expect(origin.requests.count == 1)
            clock.advance(by: .seconds(61))
            origin.answer { _ in self.ok("v2", [("Cache-Control", "max-age=60"), ("ETag", "\"2\"")]) }
            #expect(try await cache.fetch(url: url, formatName: "upper") == "V2")
            #expect(try await cache.fetch(url: url) == "v2")
            #expect(origin.requests.count == 2)

            let secret = url.appendingPathComponent("secret")
            origin.answer { _ in self.ok("s", [("Cache-Control", "no-store")]) }
            _ = try await cache.fetch(url: secret, formatName: "upper")
            _ = try await cache.fetch(url: secret, formatName: "upper")
            #expect(origin.requests.count == 4)
        }
    }

    // MARK: - Whole responses

    @Test func anHTTPResponseValueHasTheStatusAndFieldsAndIsCachedByTheSameRules() async throws {
        try await withOrigin({ request in
            request.uri.hasSuffix("/empty")
                ? .init(status: 204, headers: [("Cache-Control", "max-age=60")])
                : self.ok("whole", [("Cache-Control", "max-age=60"), ("X-Trace", "t1")])
        }) { origin, _, url, server async throws in
            let cache = Cache<HTTPResponse>(name: "whole", directory: directory.appending("whole"), clock: clock)
            let response = try await cache.fetch(url: url)
            #expect(response.status == 200)
            #expect(response.headers["x-trace"] == "t1")
            #expect(String(decoding: response.body, as: UTF8.self) == "whole")
            #expect(try await cache.fetch(url: url) == response)
            let empty = try await cache.fetch(url: server.baseURL.appendingPathComponent("empty"))
            #expect(empty.status == 204 && empty.body.isEmpty)
            _ = try await cache.fetch(url: server.baseURL.appendingPathComponent("empty"))
            #expect(origin.requests.count == 2)
        }
    }

    @Test func requestHeadersAreSentAndSeparateTheEntries() async throws {
        try await withOrigin({ request in
            self.ok(HTTPHeaderFields(request.headers)["Authorization"] ?? "anonymous", [("Cache-Control", "private, max-age=60")])
        }) { origin, cache, url, _ async throws in
            #expect(try await cache.fetch(url: url, headers: ["Authorization": "Bearer alice"]) == "Bearer alice")
            #expect(try await cache.fetch(url: url, headers: ["Authorization": "Bearer bob"]) == "Bearer bob")
            #expect(try await cache.fetch(url: url, headers: ["Authorization": "Bearer alice"]) == "Bearer alice")
            #expect(origin.requests.count == 2)
            let key = NetworkFetcher<String>.cacheKey(for: url, headers: ["Authorization": "Bearer alice"])
            #expect(!key.contains("alice"))
            #expect(key.hasPrefix(url.absoluteString + " #headers="))
        }
    }

    @Test func withoutACachePolicyEveryResponseIsKeptTheStacksWay() async throws {
        try await withOrigin({ _ in self.ok("v", [("Cache-Control", "no-store")]) }) { origin, _, url, _ async throws in
            let fetcher = NetworkFetcher<String>(url: url, configuration: .init(cachePolicy: nil), clock: clock)
            let store = MemoryStore<String, String>(clock: clock).fetching(from: fetcher, clock: clock)
            _ = try await store.fetch("k")
            _ = try await store.fetch("k")
            #expect(origin.requests.count == 1)
        }
    }
}
