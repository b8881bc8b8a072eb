import Foundation
import Haneke
import HanekeProtocols
import HanekeTesting
import HTTPCaching
import LoopbackHTTPServer
import Testing
import TestSupport

/// A header field goes to the origin as it was given, or not at all: libcurl sends each field as
/// the one line it is handed, so a value with `CR LF` would reach the origin as two fields. The
/// fetcher refuses what cannot be sent as given before any request, and its error says which field
/// and why without showing the value (it may be a secret).
@Suite(.timeLimit(.minutes(1)), .tags(.disk))
struct RequestHeaderTests {
    /// An origin that records the fields of each request it gets and answers `ok`.
    final class Origin: Sendable {
        private let received = Locked<[HTTPHeaderFields]>([])

        func respond(to request: LoopbackHTTPServer.Request) -> LoopbackHTTPServer.Response {
            received.withLock { $0.append(HTTPHeaderFields(request.headers)) }
            return .init(status: 200, body: Data("ok".utf8))
        }

        /// The fields of each request received, in order.
        var requests: [HTTPHeaderFields] { received.withLock { $0 } }
    }

    /// Runs `body` with an origin, its server, and a cache in a temporary folder.
    func withOrigin(_ body: (Origin, LoopbackHTTPServer, Cache<String>) async throws -> Void) async throws {
        let origin = Origin()
        let directory = try TemporaryDirectory(prefix: "request-headers")
        let server = try await LoopbackHTTPServer.start { origin.respond(to: $0) }
        try await withServer(server, shutdown: { await $0.shutdown() }) { server in
            try await body(origin, server, Cache<String>(name: "headers", directory: directory.appending("headers")))
        }
    }

    /// Each value carries `S3cr3t`, and some what would be another field: neither may show in the error.
    static let refusedValues: [(name: String, value: String, says: String)] = [
        ("Accept-Language", "en\r\nX-Injected: 1", "has a carriage return (CR, U+000D) in its value at character 3"),
        ("X-Api-Key", "S3cr3t\nX-Injected: 1", "has a line feed (LF, U+000A) in its value at character 7"),
        ("Authorization", "Bearer S3cr3t\0X-Injected", "has a NUL (U+0000) in its value at character 14"),
        ("Cookie", "id=S3cr3t\u{7F}", "has a DEL (U+007F) in its value at character 10"),
        ("Private-Token", "S3cr3t\u{1B}[2J", "has the control character U+001B in its value at character 7"),
        ("X-Note", "S3cr3t\u{85}X-Injected", "has the control character U+0085 in its value at character 7"),
    ]

    @Test(arguments: refusedValues)
    func aValueWithAControlCharacterIsRefusedBeforeAnyRequest(name: String, value: String, says: String) async throws {
        try await withOrigin { origin, server, cache in
            let url = server.baseURL.appendingPathComponent("page")
            let headers: HTTPHeaderFields = ["Accept": "text/plain", name: value]
            let viaCache = await #expect(throws: StoreError.self) { try await cache.fetch(url: url, headers: headers) }
            let viaFetcher = await #expect(throws: StoreError.self) {
                try await NetworkFetcher<String>(url: url, headers: headers).fetch("unused")
            }
            for error in [viaCache, viaFetcher] {
                let error = try #require(error)
                #expect(error.code == .invalidKey, "\(error)")
                #expect(error.message == "GET \(url.absoluteString) was not sent: header field 2 of 2 (\(name)) \(says); a field "
                    + "value may hold no control character but a tab, and CR, LF or NUL would end the field early (RFC 9110 §5.5)")
                for text in [String(describing: error), String(reflecting: error)] {
                    #expect(!text.contains("S3cr3t") && !text.contains("X-Injected"), "\(text)")
                }
            }
            #expect(server.requestsReceived == 0)
            #expect(origin.requests.isEmpty)
        }
    }

    /// A bad name is not shown: it may be a whole field pasted in as a name, secret and all.
    static let refusedNames: [(name: String, says: String)] = [
        ("X Api Key", "has a space (U+0020) in its name at character 2"),
        ("X-Api-Key:", "has a colon (U+003A) in its name at character 10"),
        ("Authorization: Bearer S3cr3t", "has a colon (U+003A) in its name at character 14"),
        ("X-A\r\nX-Injected", "has a carriage return (CR, U+000D) in its name at character 4"),
        ("X-Tab\t", "has a tab (U+0009) in its name at character 6"),
        ("Ünïcode", "has the non-ASCII character U+00DC in its name at character 1"),
        ("X-(S3cr3t)", "has '(' (U+0028) in its name at character 3"),
    ]

    @Test(arguments: refusedNames)
    func aNameThatIsNotATokenIsRefusedBeforeAnyRequest(name: String, says: String) async throws {
        try await withOrigin { origin, server, cache in
            let url = server.baseURL.appendingPathComponent("page")
            let error = try #require(await #expect(throws: StoreError.self) { try await cache.fetch(url: url, headers: [name: "value"]) })
            #expect(error.code == .invalidKey, "\(error)")
            #expect(error.message == "GET \(url.absoluteString) was not sent: header field 1 of 1 \(says); a field name is a "
                + "token of letters, digits and !#$%&'*+-.^_`|~ (RFC 9110 §5.6.2)")
            #expect(!"\(error)".contains("S3cr3t") && !"\(error)".contains("X-Injected"), "\(error)")
            let empty = try #require(await #expect(throws: StoreError.self) {
                try await NetworkFetcher<String>(url: url, headers: ["Accept": "text/plain", "": "value"]).fetch("unused")
            })
            #expect(empty.message.hasSuffix("was not sent: header field 2 of 2 has an empty name; a field name is a token (RFC 9110 §5.6.2)"))
            #expect(server.requestsReceived == 0)
            #expect(origin.requests.isEmpty)
        }
    }

    /// A tab and non-ASCII text may be in a value, and an empty value is sent empty (libcurl reads
    /// `Name:` with nothing after it as "drop your own field", so it goes as `Name;`).
    @Test func soundFieldsAreSentAsGivenAnEmptyOneToo() async throws {
        try await withOrigin { origin, server, _ in
            let headers: HTTPHeaderFields = ["X-Tabbed": "a\tb", "Accept-Language": "fr-CH, fr;q=0.9", "X-Name": "Zoë", "X-Empty": "", "User-Agent": ""]
            let fetched = try await NetworkFetcher<String>(url: server.baseURL.appendingPathComponent("page"), headers: headers).fetch("unused")
            #expect(fetched == "ok")
            let received = try #require(origin.requests.first)
            #expect(received["X-Tabbed"] == "a\tb")
            #expect(received["Accept-Language"] == "fr-CH, fr;q=0.9")
            #expect(received["X-Name"] == "Zoë")
            #expect(received.values(for: "X-Empty") == [""])
            #expect(received.values(for: "User-Agent") == [""])
        }
    }
}
