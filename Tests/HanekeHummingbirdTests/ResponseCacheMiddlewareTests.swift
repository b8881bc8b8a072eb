#if Hummingbird
import Foundation
import HanekeHummingbird
import HanekeProtocols
import HanekeTesting
import HTTPCaching
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import MemoryStore
import Synchronization
import Testing
import TestSupport

/// How many times each route ran.
final class Runs: Sendable {
    private let counts = Mutex<[String: Int]>([:])
    func count(_ route: String) -> Int { counts.withLock { $0[route, default: 0] } }
    func record(_ route: String) -> Int { counts.withLock { $0[route, default: 0] += 1; return $0[route]! } }
}

/// Whether a route fails.
final class Switch: Sendable {
    private let state = Mutex(false)
    var isOn: Bool {
        get { state.withLock { $0 } }
        set { state.withLock { $0 = newValue } }
    }
}

@Suite(.timeLimit(.minutes(1)))
struct ResponseCacheMiddlewareTests {
    let clock = TestClock()
    let runs = Runs()

    init() async throws {
        try await startNIOSingletons()
    }

    /// Routes whose responses say how they may be cached, behind the middleware.
    func makeApplication(failing: Switch = Switch()) -> some ApplicationProtocol {
        let router = Router()
        router.add(middleware: ResponseCacheMiddleware(storage: MemoryStore<String, Data>(clock: clock), clock: clock))
        let runs = runs
        @Sendable func respond(_ route: String, cacheControl: String?, extra: [(String, String)] = []) -> Response {
            let run = runs.record(route)
            var response = Response(status: .ok, body: ResponseBody(byteBuffer: ByteBuffer(string: "\(route) run \(run)")))
            if let cacheControl { response.headers[.cacheControl] = cacheControl }
            for (name, value) in extra { response.headers[HTTPField.Name(name)!] = value }
            return response
        }
        router.get("public") { _, _ in respond("public", cacheControl: "public, max-age=60") }
        router.get("private") { _, _ in respond("private", cacheControl: "private, max-age=60") }
        router.get("plain") { _, _ in respond("plain", cacheControl: nil) }
        router.get("session") { _, _ in
            respond("session", cacheControl: nil, extra: [("Set-Cookie", "sid=alice-secret"), ("Last-Modified", "Mon, 01 Jan 2024 00:00:00 GMT")])
        }
        router.get("dashboard") { _, _ in respond("dashboard", cacheControl: nil, extra: [("Last-Modified", "Mon, 01 Jan 2024 00:00:00 GMT")]) }
        router.get("tagged") { _, _ in respond("tagged", cacheControl: "max-age=60", extra: [("ETag", "\"v1\"")]) }
        router.get("varies") { request, _ in
            respond("varies", cacheControl: "max-age=60", extra: [("Vary", "Accept-Language"), ("Content-Language", request.headers[.acceptLanguage] ?? "en")])
        }
        router.get("fragile") { _, _ -> Response in
            if failing.isOn { throw HTTPError(.serviceUnavailable) }
            return respond("fragile", cacheControl: "max-age=10, stale-if-error=600")
        }
        router.post("public") { _, _ in Response(status: .noContent) }
        return Application(router: router)
    }

    func text(_ response: TestResponse) -> String { String(buffer: response.body) }

    @Test func aFreshResponseIsServedWithoutRunningTheRouteUntilItsLifetimeEnds() async throws {
        try await makeApplication().test(.router) { client in
            try await client.execute(uri: "/public", method: .get) { response in
                #expect(text(response) == "public run 1")
                #expect(response.headers[HTTPField.Name("Cache-Status")!] == "haneke; fwd=uri-miss; fwd-status=200; stored")
            }
            clock.advance(by: .seconds(30))
            try await client.execute(uri: "/public", method: .get) { response in
                #expect(text(response) == "public run 1")
                #expect(response.headers[.age] == "30")
                #expect(response.headers[HTTPField.Name("Cache-Status")!] == "haneke; hit; ttl=30")
            }
            clock.advance(by: .seconds(31))
            try await client.execute(uri: "/public", method: .get) { #expect(text($0) == "public run 2") }
        }
        #expect(runs.count("public") == 2)
    }

    @Test func privateResponsesAndAuthorizedRequestsAreNotKeptInASharedCache() async throws {
        try await makeApplication().test(.router) { client in
            for _ in 0..<2 { try await client.execute(uri: "/private", method: .get) { _ in } }
            // max-age alone does not let a response to an authorized request be shared.
            for _ in 0..<2 { try await client.execute(uri: "/tagged", method: .get, headers: [.authorization: "Bearer x"]) { _ in } }
            // `public` does.
            for _ in 0..<2 { try await client.execute(uri: "/public", method: .get, headers: [.authorization: "Bearer x"]) { _ in } }
        }
        #expect(runs.count("private") == 2)
        #expect(runs.count("tagged") == 2)
        #expect(runs.count("public") == 1)
    }

    @Test func aResponseWithoutCachingHeadersIsNotReused() async throws {
        try await makeApplication().test(.router) { client in
            for _ in 0..<2 { try await client.execute(uri: "/plain", method: .get) { _ in } }
        }
        #expect(runs.count("plain") == 2)
    }

    /// A route that sets no `Cache-Control`, for a user with a session: neither its page nor its
    /// cookie reaches the next client, who asks for anything stale.
    @Test func aPageForASessionIsNeverServedToAnotherClient() async throws {
        try await makeApplication().test(.router) { client in
            for route in ["/session", "/dashboard"] {
                try await client.execute(uri: route, method: .get, headers: [.cookie: "sid=alice-secret"]) { _ in }
                try await client.execute(uri: route, method: .get, headers: [.cacheControl: "max-stale"]) { response in
                    #expect(response.headers[HTTPField.Name("Cache-Status")!]?.hasPrefix("haneke; fwd=uri-miss") == true)
                    #expect(text(response).hasSuffix("run 2"))
                }
            }
        }
        #expect(runs.count("session") == 2)
        #expect(runs.count("dashboard") == 2)
    }

    /// What the proxy does, the middleware does: one front end answers for both.
    @Test func onlyIfCachedARangeAndARefreshAreAnsweredAsByTheProxy() async throws {
        try await makeApplication().test(.router) { client in
            try await client.execute(uri: "/public", method: .get, headers: [.cacheControl: "only-if-cached"]) { response in
                #expect(response.status == .gatewayTimeout)
                #expect(response.headers[HTTPField.Name("Cache-Status")!] == "haneke; fwd=uri-miss; detail=only-if-cached")
            }
            try await client.execute(uri: "/public", method: .get) { _ in }
            try await client.execute(uri: "/public", method: .get, headers: [.range: "bytes=0-5"]) { response in
                #expect(response.status == .partialContent)
                #expect(text(response) == "public")
                #expect(response.headers[HTTPField.Name("Cache-Status")!] == "haneke; hit; ttl=60")
            }
            // A client's no-cache revalidates, and says so.
            try await client.execute(uri: "/public", method: .get, headers: [.cacheControl: "no-cache"]) { response in
                #expect(response.headers[HTTPField.Name("Cache-Status")!] == "haneke; fwd=request; fwd-status=200")
            }
        }
        #expect(runs.count("public") == 2)
    }

    @Test func aConditionalRequestThatHoldsGetsA304() async throws {
        try await makeApplication().test(.router) { client in
            try await client.execute(uri: "/tagged", method: .get) { #expect($0.status == .ok) }
            try await client.execute(uri: "/tagged", method: .get, headers: [.ifNoneMatch: "\"v1\""]) { response in
                #expect(response.status == .notModified)
                #expect(response.body.readableBytes == 0)
                #expect(response.headers[.eTag] == "\"v1\"")
            }
            try await client.execute(uri: "/tagged", method: .get, headers: [.ifNoneMatch: "\"v0\""]) { #expect($0.status == .ok) }
        }
        #expect(runs.count("tagged") == 1)
    }

    @Test func eachVariantIsKeptOnItsOwn() async throws {
        try await makeApplication().test(.router) { client in
            try await client.execute(uri: "/varies", method: .get, headers: [.acceptLanguage: "fr"]) { #expect(text($0) == "varies run 1") }
            try await client.execute(uri: "/varies", method: .get, headers: [.acceptLanguage: "de"]) { #expect(text($0) == "varies run 2") }
            try await client.execute(uri: "/varies", method: .get, headers: [.acceptLanguage: "fr"]) { response in
                #expect(text(response) == "varies run 1")
                #expect(response.headers[.contentLanguage] == "fr")
            }
        }
    }

    @Test func anUnsafeRequestRemovesWhatIsStoredForItsPath() async throws {
        try await makeApplication().test(.router) { client in
            try await client.execute(uri: "/public", method: .get) { _ in }
            try await client.execute(uri: "/public", method: .post) { #expect($0.status == .noContent) }
            try await client.execute(uri: "/public", method: .get) { #expect(text($0) == "public run 2") }
        }
    }

    @Test func aStaleResponseIsServedWhenTheRouteFailsAndStaleIfErrorAllowsIt() async throws {
        let failing = Switch()
        try await makeApplication(failing: failing).test(.router) { client in
            try await client.execute(uri: "/fragile", method: .get) { #expect(text($0) == "fragile run 1") }
            clock.advance(by: .seconds(20))
            failing.isOn = true
            try await client.execute(uri: "/fragile", method: .get) { response in
                #expect(response.status == .ok)
                #expect(text(response) == "fragile run 1")
                #expect(response.headers[HTTPField.Name("Cache-Status")!] == "haneke; hit; ttl=-10; detail=stale-if-error")
            }
            // Past the stale window, the failure is the answer.
            clock.advance(by: .seconds(600))
            try await client.execute(uri: "/fragile", method: .get) { #expect($0.status == .serviceUnavailable) }
            failing.isOn = false
            try await client.execute(uri: "/fragile", method: .get) { #expect(text($0) == "fragile run 2") }
        }
    }
}
#endif
