import Foundation
@testable import Haneke
import HanekeProtocols
import HanekeTesting
import HTTPCaching
import LoopbackHTTPServer
import Testing
import TestSupport

/// Redirects by `NetworkFetcher`'s rules, between two real origins on loopback (127.0.0.1 on two
/// ports: another port is another origin): to another origin only the fields that say nothing of
/// who asks follow, unless the configuration names more; to the same origin every field does.
@Suite(.timeLimit(.minutes(1)), .tags(.disk))
struct RedirectTests {
    /// Both origins: each request is recorded with the origin it reached (its `Host`), and answered
    /// with a `302` where a test set one, else with `landed at <path>`.
    final class Origins: Sendable {
        struct Received: Sendable {
            var host: String
            var path: String
            var headers: HTTPHeaderFields
        }

        private let redirects = Locked<[String: String]>([:])
        private let received = Locked<[Received]>([])

        /// Makes `url` answer `302` with `location`.
        func redirect(_ url: URL, to location: String) {
            redirects.withLock { $0[Self.place(host: "\(url.host!):\(url.port!)", path: url.path)] = location }
        }

        func respond(to request: LoopbackHTTPServer.Request) -> LoopbackHTTPServer.Response {
            let headers = HTTPHeaderFields(request.headers)
            let host = headers["Host"] ?? ""
            let path = String(request.uri.split(separator: "?", maxSplits: 1).first ?? "")
            received.withLock { $0.append(Received(host: host, path: path, headers: headers)) }
            if let location = redirects.withLock({ $0[Self.place(host: host, path: path)] }) {
                return .init(status: 302, body: Data("moved".utf8), headers: [("Location", location)])
            }
            return .init(status: 200, body: Data("landed at \(path)".utf8))
        }

        /// The fields of the requests that reached `url`, in order.
        func requests(to url: URL) -> [HTTPHeaderFields] {
            let place = Self.place(host: "\(url.host!):\(url.port!)", path: url.path)
            return received.withLock { $0.filter { Self.place(host: $0.host, path: $0.path) == place }.map(\.headers) }
        }

        private static func place(host: String, path: String) -> String { host + path }
    }

    /// Runs `body` with two origins: their recorder, and each one's root URL.
    func withOrigins(_ body: (Origins, URL, URL) async throws -> Void) async throws {
        let origins = Origins()
        let first = try await LoopbackHTTPServer.start { origins.respond(to: $0) }
        try await withServer(first, shutdown: { await $0.shutdown() }) { first in
            let second = try await LoopbackHTTPServer.start { origins.respond(to: $0) }
            try await withServer(second, shutdown: { await $0.shutdown() }) { second in
                try await body(origins, first.baseURL, second.baseURL)
            }
        }
    }

    /// The caller's fields: harmless ones, and secrets of every kind.
    static let fields: HTTPHeaderFields = [
        "Accept": "text/plain",
        "Accept-Language": "fr",
        "User-Agent": "RedirectTests",
        "X-Api-Key": "K3y",
        "Authorization": "Bearer T0k3n",
        "Cookie": "session=S3ss",
        "Private-Token": "P4t",
        "X-Custom": "mine",
    ]

    static let secretFields = ["X-Api-Key", "Authorization", "Cookie", "Private-Token", "X-Custom"]

    /// Whether `received` holds the harmless fields of ``fields`` and none of the secret ones.
    func expectOnlyTheHarmlessFields(_ received: HTTPHeaderFields?, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(received?["Accept"] == "text/plain", sourceLocation: sourceLocation)
        #expect(received?["Accept-Language"] == "fr", sourceLocation: sourceLocation)
        #expect(received?["User-Agent"] == "RedirectTests", sourceLocation: sourceLocation)
        for name in Self.secretFields {
            #expect(received?[name] == nil, "\(name) followed: \(String(describing: received))", sourceLocation: sourceLocation)
        }
    }

    @Test func aRedirectToAnotherOriginTakesOnlyTheHarmlessFields() async throws {
        try await withOrigins { origins, first, second in
            let directory = try TemporaryDirectory(prefix: "redirects")
            let cache = Cache<String>(name: "redirects", directory: directory.appending("redirects"))
            let start = first.appendingPathComponent("start")
            let landing = second.appendingPathComponent("landing")
            origins.redirect(start, to: landing.absoluteString)

            #expect(try await cache.fetch(url: start, headers: Self.fields) == "landed at /landing")
            let sent = try #require(origins.requests(to: start).first)
            for field in Self.fields { #expect(sent[field.name] == field.value) }
            #expect(origins.requests(to: landing).count == 1)
            expectOnlyTheHarmlessFields(origins.requests(to: landing).first)
        }
    }

    @Test func aFieldTheConfigurationNamesFollowsToAnotherOrigin() async throws {
        try await withOrigins { origins, first, second in
            let start = first.appendingPathComponent("start")
            let landing = second.appendingPathComponent("landing")
            origins.redirect(start, to: landing.absoluteString)

            let fetcher = NetworkFetcher<String>(
                url: start, headers: Self.fields, configuration: .init(crossOriginRedirectHeaders: ["x-api-key"])
            )
            #expect(try await fetcher.fetch("unused") == "landed at /landing")
            let received = try #require(origins.requests(to: landing).first)
            #expect(received["X-Api-Key"] == "K3y")
            #expect(received["Accept-Language"] == "fr")
            for name in ["Authorization", "Cookie", "Private-Token", "X-Custom"] {
                #expect(received[name] == nil, "\(name) followed")
            }
        }
    }

    /// first `/start` → `/next` (relative, same origin) → second `/landing` → `/hop` (same origin)
    /// → first `/back`: the fields dropped on leaving the first origin stay dropped on coming back,
    /// since the other origin chose where the chain went.
    @Test func aSameOriginRedirectKeepsEveryFieldUntilTheChainLeavesTheOrigin() async throws {
        try await withOrigins { origins, first, second in
            let start = first.appendingPathComponent("start")
            let next = first.appendingPathComponent("next")
            let landing = second.appendingPathComponent("landing")
            let hop = second.appendingPathComponent("hop")
            let back = first.appendingPathComponent("back")
            origins.redirect(start, to: "/next")
            origins.redirect(next, to: landing.absoluteString)
            origins.redirect(landing, to: "hop")
            origins.redirect(hop, to: back.absoluteString)

            #expect(try await NetworkFetcher<String>(url: start, headers: Self.fields).fetch("unused") == "landed at /back")
            let sameOrigin = try #require(origins.requests(to: next).first)
            for field in Self.fields { #expect(sameOrigin[field.name] == field.value, "\(field.name) did not follow") }
            expectOnlyTheHarmlessFields(origins.requests(to: landing).first)
            expectOnlyTheHarmlessFields(origins.requests(to: hop).first)
            expectOnlyTheHarmlessFields(origins.requests(to: back).first)
        }
    }

    /// A `Location` that is not `http` or `https` is refused (its secrets hidden in the error), and
    /// a chain ends after ten redirects.
    @Test func onlyHTTPRedirectsAreFollowedAndAtMostTen() async throws {
        try await withOrigins { origins, first, _ in
            let start = first.appendingPathComponent("start")
            origins.redirect(start, to: "file://alice:S3cr3t@localhost/etc/passwd?token=T0k3n")
            let error = try #require(await #expect(throws: StoreError.self) {
                try await NetworkFetcher<String>(url: start).fetch("unused")
            })
            #expect(error.code == .invalidStatusCode, "\(error)")
            #expect(error.statusCode == 302)
            #expect(error.message == "GET \(start.absoluteString) answered 302 with a redirect to "
                + "file://alice:***@localhost/etc/passwd?token=***, which the fetcher does not follow: it is not an http or https URL")

            let loop = first.appendingPathComponent("loop")
            origins.redirect(loop, to: "/loop")
            let tooMany = try #require(await #expect(throws: StoreError.self) {
                try await NetworkFetcher<String>(url: loop).fetch("unused")
            })
            #expect(tooMany.code == .unavailable, "\(tooMany)")
            #expect(tooMany.message == "GET \(loop.absoluteString) was redirected more than 10 times")
            #expect(origins.requests(to: loop).count == 11)
        }
    }

    // MARK: - The decisions

    /// `https` to `http` cannot be tried on loopback without a TLS server libcurl trusts, so the
    /// decision `CurlTransfer` asks before each hop is checked directly, from the configurations
    /// that set it.
    @Test func httpsToHTTPIsRefusedUnlessTheConfigurationAllowsIt() throws {
        let secure = try #require(URL(string: "https://api.example.com/v1/items"))
        let insecure = try #require(URL(string: "http://api.example.com/v1/items"))
        let headers: HTTPHeaderFields = ["Accept-Language": "fr", "X-Api-Key": "K3y"]

        let byDefault = RedirectRules(NetworkFetcher<Data>.Configuration())
        #expect(byDefault.decision(from: secure, to: insecure, headers: headers) == .refuse("it leads from https to http (allowsInsecureRedirects is off)"))
        // The other way, and https to another https origin, are followed.
        #expect(byDefault.decision(from: insecure, to: secure, headers: headers) == .follow(secure, ["Accept-Language": "fr"]))
        let cdn = try #require(URL(string: "https://cdn.example.com/items"))
        #expect(byDefault.decision(from: secure, to: cdn, headers: headers) == .follow(cdn, ["Accept-Language": "fr"]))

        // Allowed, http is another origin: the key stays behind unless named.
        let allowing = RedirectRules(NetworkFetcher<Data>.Configuration(allowsInsecureRedirects: true))
        #expect(allowing.decision(from: secure, to: insecure, headers: headers) == .follow(insecure, ["Accept-Language": "fr"]))
        let naming = RedirectRules(NetworkFetcher<Data>.Configuration(crossOriginRedirectHeaders: ["X-API-KEY"], allowsInsecureRedirects: true))
        #expect(naming.decision(from: secure, to: insecure, headers: headers) == .follow(insecure, headers))
    }

    /// Same origin means the same scheme, host and port, a default port written or not, in any case.
    @Test(arguments: [
        ("https://api.example.com/a", "https://API.example.com:443/b", true),
        ("http://127.0.0.1:8080/a", "http://127.0.0.1:8080/b?c=d", true),
        ("http://127.0.0.1:8080/a", "http://127.0.0.1:8081/a", false),
        ("http://127.0.0.1/a", "http://localhost/a", false),
        ("http://api.example.com/a", "https://api.example.com/a", false),
        ("https://api.example.com/a", "https://api.example.com.evil.test/a", false),
    ])
    func theOriginIsTheSchemeHostAndPort(from: String, to: String, same: Bool) throws {
        let current = try #require(URL(string: from))
        let target = try #require(URL(string: to))
        let headers: HTTPHeaderFields = ["Authorization": "Bearer T0k3n", "Accept": "*/*"]
        let kept: HTTPHeaderFields = same ? headers : ["Accept": "*/*"]
        #expect(RedirectRules().decision(from: current, to: target, headers: headers) == .follow(target, kept))
    }

    /// Credentials in the URL are dropped on the way to another origin; libcurl would send them.
    @Test func userInfoDoesNotFollowToAnotherOrigin() throws {
        let current = try #require(URL(string: "https://alice:S3cr3t@api.example.com/a"))
        let target = try #require(URL(string: "https://alice:S3cr3t@cdn.example.com/b"))
        let decision = RedirectRules().decision(from: current, to: target, headers: [:])
        #expect(decision == .follow(try #require(URL(string: "https://cdn.example.com/b")), [:]))
    }
}
