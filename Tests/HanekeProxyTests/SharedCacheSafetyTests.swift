import Foundation
import HTTPCaching
import HanekeProtocols
@testable import HanekeProxy
import HanekeTesting
import LoopbackHTTPServer
import MemoryStore
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization
import Testing
import TestSupport

/// A shared cache never gives one client's response to another: each case a hostile client (or a
/// careless origin) tried against the proxy, with a victim after it, over a real origin on
/// loopback. Each failed before the shared cache's safe defaults.
struct SharedCacheSafetyTests {
    static let alice = ("Cookie", "sid=alice-secret")

    // MARK: - Cookies

    @Test(arguments: [[("Cache-Control", "max-age=600")], [("Cache-Control", "public, max-age=0"), ("ETag", "\"a\"")], [("ETag", "\"a\"")]])
    func aResponseWithSetCookieIsNeverServedToAnotherClient(fields: [(String, String)]) async throws {
        try await ProxyFixture.run { fixture in
            fixture.origin.answer(origin(200, fields + [("Set-Cookie", "sid=alice-secret")], body: "alice's page"), origin(200, fields, body: "a page"))
            _ = await fixture.get("/account", [Self.alice])
            let bob = await fixture.get("/account", [("Cache-Control", "max-stale")])
            #expect(bob.headers["Set-Cookie"] == nil)
            #expect(bob.cacheStatus?.hasPrefix("haneke; fwd=uri-miss") == true)
            #expect(fixture.origin.requests.count == 2)
        }
    }

    /// What Express, Go's net/http and most handlers send: no caching headers (a validator, or a
    /// `Last-Modified` at most).
    @Test(arguments: [[("ETag", "W/\"1f-abc\"")], [("Last-Modified", "Mon, 01 Jan 2024 00:00:00 GMT")], [("Cache-Control", "public")]])
    func aPageForARequestWithCookieIsStoredOnlyWithAnExplicitLifetime(fields: [(String, String)]) async throws {
        try await ProxyFixture.run { fixture in
            fixture.origin.answer(origin(200, fields, body: "alice's page"))
            let first = await fixture.get("/account", [Self.alice])
            #expect(first.cacheStatus == "haneke; fwd=uri-miss; fwd-status=200")
            let bob = await fixture.get("/account")
            #expect(bob.cacheStatus?.hasPrefix("haneke; fwd=uri-miss") == true)
            #expect(fixture.origin.requests.count == 2)
        }
    }

    @Test func aCookieRequestsResponseWithAnExplicitLifetimeIsShared() async throws {
        try await ProxyFixture.run { fixture in
            fixture.origin.answer(origin(200, [("Cache-Control", "s-maxage=60")], body: "the same for all"))
            _ = await fixture.get("/news", [Self.alice])
            #expect(await fixture.get("/news").cacheStatus?.hasPrefix("haneke; hit") == true)
        }
    }

    @Test func setCookieIsStoredWhenTheOperatorAllowsIt() async throws {
        let policy = HTTPCachePolicy(kind: .shared, relaxations: .storeSetCookie)
        try await ProxyFixture.run(policy: policy) { fixture in
            fixture.origin.answer(origin(200, [("Cache-Control", "max-age=600"), ("Set-Cookie", "theme=dark")]))
            _ = await fixture.get()
            let second = await fixture.get()
            #expect(second.headers["Set-Cookie"] == "theme=dark")
            #expect(fixture.origin.requests.count == 1)
        }
    }

    @Test func a304NeverBringsOneClientsSetCookieIntoTheSharedEntryNorDoesARevalidationCarryCredentials() async throws {
        try await ProxyFixture.run { fixture in
            fixture.origin.answer(
                origin(200, [("Cache-Control", "max-age=1"), ("ETag", "\"v1\"")], body: "page"),
                origin(304, [("Cache-Control", "max-age=600"), ("ETag", "\"v1\""), ("Set-Cookie", "sid=ATTACKER-FIXED")], body: "")
            )
            _ = await fixture.get()
            fixture.clock.advance(by: .seconds(5))
            _ = await fixture.get("/resource", [("Cookie", "sid=ATTACKER-FIXED"), ("Authorization", "Bearer mallory")])
            let revalidation = try #require(fixture.origin.requests.last)
            #expect(revalidation.values("Cookie").isEmpty)
            #expect(revalidation.values("Authorization").isEmpty)
            let victim = await fixture.get()
            #expect(victim.cacheStatus?.hasPrefix("haneke; hit") == true)
            #expect(victim.headers["Set-Cookie"] == nil)
        }
    }

    @Test func a304ThatMakesTheResponsePrivateRemovesTheSharedEntry() async throws {
        try await ProxyFixture.run { fixture in
            fixture.origin.answer(
                origin(200, [("Cache-Control", "max-age=1"), ("ETag", "\"v1\"")], body: "page"),
                origin(304, [("Cache-Control", "private, max-age=600"), ("ETag", "\"v1\""), ("X-User", "mallory")], body: ""),
                origin(200, [("Cache-Control", "max-age=60"), ("ETag", "\"v1\"")], body: "page")
            )
            _ = await fixture.get()
            fixture.clock.advance(by: .seconds(5))
            let mallory = await fixture.get()
            #expect(mallory.headers["X-User"] == "mallory")
            let victim = await fixture.get()
            #expect(victim.headers["X-User"] == nil)
            #expect(victim.cacheStatus?.hasPrefix("haneke; fwd=uri-miss") == true)
            #expect(fixture.origin.requests.count == 3)
        }
    }

    // MARK: - Staleness on a client's say-so

    @Test func aClientsMaxStaleAndStaleIfErrorAreIgnoredByASharedCache() async throws {
        try await ProxyFixture.run { fixture in
            fixture.origin.answer(origin(200, [("Cache-Control", "max-age=1"), ("ETag", "\"v1\"")], body: "page"), origin(503, [], body: "down"))
            _ = await fixture.get()
            fixture.clock.advance(by: .seconds(10))
            let stale = await fixture.get("/resource", [("Cache-Control", "max-stale")])
            #expect(stale.cacheStatus?.contains("detail=max-stale") != true)
            #expect(stale.status == 503)
            let onError = await fixture.get("/resource", [("Cache-Control", "stale-if-error=3600")])
            #expect(onError.status == 503)
            #expect(fixture.origin.requests.count == 3)
        }
    }

    @Test func aClientsMaxStaleIsHonouredWhenTheOperatorAllowsIt() async throws {
        try await ProxyFixture.run(policy: HTTPCachePolicy(kind: .shared, relaxations: .clientStaleness)) { fixture in
            fixture.origin.answer(origin(200, [("Cache-Control", "max-age=1"), ("ETag", "\"v1\"")], body: "page"))
            _ = await fixture.get()
            fixture.clock.advance(by: .seconds(10))
            #expect(await fixture.get("/resource", [("Cache-Control", "max-stale")]).cacheStatus == "haneke; hit; ttl=-9; detail=max-stale")
        }
    }

    @Test func aStaleResponseIsServedWhileTheUpstreamIsDownOnlyWhereItSaysStaleIfError() async throws {
        try await ProxyFixture.run { fixture in
            fixture.origin.answer(origin(200, [("Cache-Control", "max-age=1"), ("ETag", "\"p\"")], body: "plain"))
            _ = await fixture.get("/plain")
            fixture.origin.answer(origin(200, [("Cache-Control", "max-age=1, stale-if-error=600")], body: "allowed"))
            _ = await fixture.get("/allowed")
            await fixture.server.shutdown()
            fixture.clock.advance(by: .seconds(5))
            let plain = await fixture.get("/plain")
            #expect(plain.status == 504)
            #expect(plain.text == "The upstream server did not answer in time.\n")
            let allowed = await fixture.get("/allowed")
            #expect(allowed.text == "allowed")
            #expect(allowed.cacheStatus?.contains("detail=stale-if-error") == true)
        }
    }

    // MARK: - Replacing a fresh entry

    @Test(arguments: [("Cache-Control", "no-cache"), ("Cache-Control", "max-age=0"), ("Pragma", "no-cache")])
    func aClientsRefreshNeverReplacesAFreshSharedEntry(field: (String, String)) async throws {
        try await ProxyFixture.run { fixture in
            fixture.origin.answer(
                origin(200, [("Cache-Control", "max-age=600"), ("ETag", "\"good\"")], body: "good"),
                origin(200, [("Cache-Control", "max-age=600"), ("ETag", "\"evil\"")], body: "<script src=\"https://evil.example/app.js\">")
            )
            _ = await fixture.get()
            let attacker = await fixture.get("/resource", [field])
            #expect(attacker.cacheStatus == "haneke; fwd=request; fwd-status=200")
            let sent = try #require(fixture.origin.requests.last)
            #expect(sent.values("If-None-Match") == ["\"good\""])
            let victim = await fixture.get()
            #expect(victim.text == "good")
            #expect(victim.cacheStatus?.hasPrefix("haneke; hit") == true)
        }
    }

    @Test func aClientsRefreshAnswered304UpdatesTheEntry() async throws {
        try await ProxyFixture.run { fixture in
            fixture.origin.answer(
                origin(200, [("Cache-Control", "max-age=60"), ("ETag", "\"v1\"")], body: "page"),
                origin(304, [("Cache-Control", "max-age=600"), ("ETag", "\"v1\"")], body: "")
            )
            _ = await fixture.get()
            let refreshed = await fixture.get("/resource", [("Cache-Control", "no-cache")])
            #expect(refreshed.cacheStatus == "haneke; fwd=request; fwd-status=304; ttl=600")
            #expect(await fixture.get().cacheStatus == "haneke; hit; ttl=600")
        }
    }

    // MARK: - The key is what reaches the upstream

    @Test func fieldsThatRewriteARequestUpstreamAreDroppedAndTheProxyNamesTheClient() async throws {
        try await ProxyFixture.run { fixture in
            fixture.origin.answer(origin(200, [("Cache-Control", "max-age=600")]))
            _ = await fixture.get("/resource", [
                ("X-Forwarded-Host", "evil.example"), ("X-Forwarded-Proto", "https"), ("X-Original-URL", "/admin"),
                ("X-Rewrite-URL", "/admin"), ("X-HTTP-Method-Override", "DELETE"), ("X-Forwarded-For", "6.6.6.6"),
                ("Forwarded", "for=6.6.6.6;host=evil.example"),
            ], peer: "127.0.0.1")
            let sent = try #require(fixture.origin.requests.first)
            for name in ["X-Forwarded-Host", "X-Forwarded-Proto", "X-Original-URL", "X-Rewrite-URL", "X-HTTP-Method-Override"] {
                #expect(sent.values(name).isEmpty, "\(name) reached the upstream")
            }
            #expect(sent.values("X-Forwarded-For") == ["127.0.0.1"])
            #expect(sent.values("Forwarded") == ["for=127.0.0.1"])
        }
    }

    @Test func aTrustedFieldPassesAndAKeyedOneSelectsTheResponse() async throws {
        var configuration = CachingProxy<MemoryStore<String, Data>>.Configuration()
        configuration.trustedFields = ["x-forwarded-for"]
        configuration.keyedFields = ["x-forwarded-host"]
        try await ProxyFixture.run(configuration: configuration) { fixture in
            fixture.origin.answer(
                origin(200, [("Cache-Control", "max-age=600")], body: "for a.example"),
                origin(200, [("Cache-Control", "max-age=600")], body: "for b.example")
            )
            _ = await fixture.get("/resource", [("X-Forwarded-Host", "a.example"), ("X-Forwarded-For", "6.6.6.6")], peer: "::1")
            let sent = try #require(fixture.origin.requests.first)
            #expect(sent.values("X-Forwarded-Host") == ["a.example"])
            #expect(sent.values("X-Forwarded-For") == ["6.6.6.6, ::1"])
            #expect(sent.values("Forwarded") == ["for=\"[::1]\""])
            #expect(await fixture.get("/resource", [("X-Forwarded-Host", "b.example")]).text == "for b.example")
            #expect(await fixture.get("/resource", [("X-Forwarded-Host", "a.example")]).text == "for a.example")
            #expect(fixture.origin.requests.count == 2)
            // An invalidation removes every keyed response.
            _ = await fixture.get("/resource", method: "POST")
            #expect(await fixture.get("/resource", [("X-Forwarded-Host", "a.example")]).cacheStatus?.hasPrefix("haneke; fwd=uri-miss") == true)
        }
    }

    @Test func aGETBodyNeverReachesTheUpstream() async throws {
        try await ProxyFixture.run { fixture in
            fixture.origin.answer(origin(200, [("Cache-Control", "max-age=600")]))
            var request = ProxyRequest(target: "/resource", headers: ["Content-Length": "4"])
            request.body = .buffer(ByteBuffer(string: "EVIL"))
            _ = await fixture.proxy.respond(to: request)
            let sent = try #require(fixture.origin.requests.first)
            #expect(sent.body.isEmpty)
            #expect(sent.values("Content-Length").isEmpty)
        }
    }

    @Test func aVariantIsRecordedFromTheFieldsActuallySent() async throws {
        try await ProxyFixture.run { fixture in
            fixture.origin.answer(
                origin(200, [("Cache-Control", "max-age=600"), ("Vary", "Accept-Language")], body: "English"),
                origin(200, [("Cache-Control", "max-age=600"), ("Vary", "Accept-Language")], body: "Français")
            )
            _ = await fixture.get("/resource", [("Connection", "Accept-Language"), ("Accept-Language", "fr")])
            let sent = try #require(fixture.origin.requests.first)
            #expect(sent.values("Accept-Language").isEmpty)
            #expect(await fixture.get("/resource", [("Accept-Language", "fr")]).text == "Français")
            #expect(fixture.origin.requests.count == 2)
        }
    }

    @Test func aHEADMissIsFetchedAsAGETWhoseAnswerIsStored() async throws {
        try await ProxyFixture.run { fixture in
            fixture.origin.answer(origin(200, [("Cache-Control", "max-age=600")], body: "0123456789"))
            let head = await fixture.get("/resource", method: "HEAD")
            #expect(head.status == 200)
            #expect(head.body.readableBytes == 0)
            #expect(head.headers["Content-Length"] == "10")
            #expect(fixture.origin.requests.map(\.method) == ["GET"])
            let get = await fixture.get()
            #expect(get.text == "0123456789")
            #expect(get.cacheStatus?.hasPrefix("haneke; hit") == true)
        }
    }

    /// An upstream that answers one request with two responses (a HEAD answered with a body, or a
    /// GET body it did not read, as a bug or a smuggling would): the second must never answer the
    /// next request on the connection.
    @Test func bytesAfterAResponseCloseTheUpstreamConnection() async throws {
        let smuggled = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nCache-Control: max-age=600\r\n\r\nok"
            + "HTTP/1.1 200 OK\r\nContent-Length: 6\r\nCache-Control: max-age=600\r\n\r\nPWNED!"
        let honest = "HTTP/1.1 200 OK\r\nContent-Length: 6\r\nCache-Control: max-age=600\r\n\r\nvictim"
        let upstream = try await ScriptedOrigin.start(answers: [smuggled, honest])
        try await withServer(upstream, shutdown: { await $0.shutdown() }) { upstream in
            let clock = TestClock()
            let cache = HTTPCache(storage: MemoryStore<String, Data>(clock: clock), policy: HTTPCachePolicy(kind: .shared), clock: clock)
            let proxy = try CachingProxy(upstream: URL(string: "http://127.0.0.1:\(upstream.port)")!, cache: cache, group: try await sharedEventLoops())
            #expect(await proxy.respond(to: ProxyRequest(target: "/first")).text == "ok")
            let victim = await proxy.respond(to: ProxyRequest(target: "/victim"))
            #expect(victim.text == "victim")
            #expect(await proxy.respond(to: ProxyRequest(target: "/victim")).text == "victim")
            await proxy.shutdown()
        }
    }

    // MARK: - The proxy's own surface

    @Test func connectAndTraceAreRefusedAndOptionsStarIsAnsweredByTheProxy() async throws {
        try await ProxyFixture.run { fixture in
            fixture.origin.answer(origin(200, []))
            let group = try await sharedEventLoops()
            let proxy = fixture.proxy
            let server = try await ProxyServer.start(host: "localhost", port: 0, group: group, respond: { await proxy.respond(to: $0) })
            try await withServer(server, shutdown: { await $0.shutdown() }) { server in
                let client = UpstreamClient(
                    host: "127.0.0.1", port: server.port, authority: "127.0.0.1:\(server.port)", group: group,
                    maximumBodySize: 1 << 20, timeout: .seconds(3_600), maximumIdleConnections: 1, budget: MemoryBudget(limit: 1 << 30)
                )
                defer { client.close() }
                let trace = try await client.send(HTTPRequestHead(version: .http1_1, method: .TRACE, uri: "/"), body: nil)
                #expect(trace.head.status == .methodNotAllowed)
                let options = try await client.send(HTTPRequestHead(version: .http1_1, method: .OPTIONS, uri: "*"), body: nil)
                #expect(options.head.status == .ok)
                #expect(options.head.headers["Allow"].first?.contains("GET") == true)
                let connect = try await client.send(HTTPRequestHead(version: .http1_1, method: .CONNECT, uri: "example.com:443"), body: nil)
                #expect(connect.head.status == .methodNotAllowed)
                #expect(connect.head.headers["Connection"].first == "close")
                #expect(fixture.origin.requests.isEmpty)
            }
        }
    }

    @Test func a502SaysNothingOfTheUpstreamAndItsCauseGoesToTheLog() async throws {
        let logs = LogCapture()
        try await ProxyFixture.run { fixture in
            let cache = HTTPCache(storage: fixture.proxy.cache.storage, policy: HTTPCachePolicy(kind: .shared), clock: fixture.clock)
            let unreachable = try CachingProxy(upstream: URL(string: "http://127.0.0.1:1")!, cache: cache, group: try await sharedEventLoops(), logger: logs.logger)
            let response = await unreachable.respond(to: ProxyRequest(target: "/x;jsessionid=abc?token=secret&page=2"))
            #expect(response.status == 502)
            #expect(response.text == "The upstream server could not be reached.\n")
            let line = try #require(logs.entries.map(\.message).first { $0.contains("answered 502") })
            #expect(line.contains("/x;jsessionid=***?token=***&page=2"))
            #expect(!line.contains("secret"))
            await unreachable.shutdown()
        }
    }

    @Test(arguments: [
        ("http://h/a;jsessionid=abc/b?x=1", "http://h/a;jsessionid=***/b?x=1"),
        ("http://h/cb#access_token=xyz&token_type=bearer", "http://h/cb#access_token=***&token_type=bearer"),
        ("http://u:p@h/p?token=1#frag", "http://u:***@h/p?token=***#frag"),
    ])
    func logLinesHideFragmentsAndPathParameters(url: String, shown: String) {
        #expect(Redaction.redactingURL(url) == shown)
    }

    @Test func listenAddressesAsOperatorsWriteThem() {
        #expect(ProxyServer.listenAddress("localhost:8080")! == ("localhost", 8080))
        #expect(ProxyServer.listenAddress(":8080")! == ("0.0.0.0", 8080))
        #expect(ProxyServer.listenAddress("[::1]:8080")! == ("::1", 8080))
        #expect(ProxyServer.listenAddress("::1:8080") == nil)
        #expect(ProxyServer.listenAddress("localhost") == nil)
    }

    @Test func aPortInUseIsReportedWithItsAddress() async throws {
        let group = try await sharedEventLoops()
        let first = try await ProxyServer.start(host: "127.0.0.1", port: 0, group: group, respond: { _ in ProxyResponse(status: 200, headers: [:], body: ByteBuffer(), interim: []) })
        try await withServer(first, shutdown: { await $0.shutdown() }) { first in
            let error = await #expect(throws: StoreError.self) {
                _ = try await ProxyServer.start(host: "127.0.0.1", port: first.port, group: group, respond: { _ in ProxyResponse(status: 200, headers: [:], body: ByteBuffer(), interim: []) })
            }
            #expect(error?.message == "Cannot listen on 127.0.0.1:\(first.port)")
            #expect(error?.posixCode == .EADDRINUSE)
        }
    }
}

/// An origin on loopback that answers each request it reads (a head ending in an empty line)
/// with the next of its scripted byte strings, written as they are, on whatever connection asked.
final class ScriptedOrigin: Sendable {
    let port: Int
    private let channel: any Channel

    private init(port: Int, channel: any Channel) {
        self.port = port
        self.channel = channel
    }

    static func start(answers: [String]) async throws -> ScriptedOrigin {
        let script = Script(answers)
        let channel = try await ServerBootstrap(group: sharedEventLoops())
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(Handler(script: script)) }
            }
            .bind(to: try SocketAddress(ipAddress: "127.0.0.1", port: 0))
            .get()
        return ScriptedOrigin(port: channel.localAddress?.port ?? 0, channel: channel)
    }

    func shutdown() async {
        try? await channel.close()
    }

    /// The answers not yet sent.
    private final class Script: Sendable {
        let answers: Mutex<[String]>

        init(_ answers: [String]) {
            self.answers = Mutex(answers)
        }
    }

    private final class Handler: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer
        let script: Script
        var received = ""

        init(script: Script) {
            self.script = script
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            received += String(buffer: unwrapInboundIn(data))
            while let end = received.range(of: "\r\n\r\n") {
                received.removeSubrange(..<end.upperBound)
                let answer = script.answers.withLock { $0.isEmpty ? "HTTP/1.1 500 Oops\r\nContent-Length: 0\r\n\r\n" : $0.removeFirst() }
                context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: answer)), promise: nil)
            }
        }
    }
}
