import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Haneke
import HanekeProtocols
import HanekeTesting
import LoopbackHTTPServer
import Testing
import TestSupport

@Suite(.timeLimit(.minutes(1)))
struct NetworkFetcherTests {
    /// 512 MiB of zeros as a gzip body of 3.4 MB, built once by a task the tests await (a plain
    /// `static let` would keep a second test's thread waiting while the first builds it). Built on
    /// a thread of its own: in a debug build it computes for a fifth of a second and faults in
    /// megabytes of fresh pages, which held a cooperative thread past the blocking watchdog's
    /// limit in a CI run.
    static let bomb = Task { try await offThePool { LoopbackHTTPServer.Response.gzipEncodedZeros(count: 512 << 20) } }

    /// Routes: `/status/<code>` answers that status with a body, `/empty` an empty 200, `/short` a
    /// body shorter than its Content-Length, `/slow` never answers, `/bytes/<n>` n bytes, `/gzip/<n>`
    /// n zeros gzip-encoded, `/bomb` 512 MiB of zeros gzip-encoded, `/drip` a byte every 200 ms,
    /// `/announced-gigabyte` a Content-Length of 1 GiB and then a byte a second, anything else its
    /// path as JSON.
    static func startServer() async throws -> LoopbackHTTPServer {
        try await LoopbackHTTPServer.start { request in
            let path = String(request.uri.split(separator: "?").first ?? "")
            if path.hasPrefix("/status/"), let code = Int(path.dropFirst("/status/".count)) {
                return .init(status: code, body: Data(#"{"status":\#(code)}"#.utf8))
            }
            if path.hasPrefix("/bytes/"), let count = Int(path.dropFirst("/bytes/".count)) {
                return .init(body: Data(repeating: 0x61, count: count))
            }
            if path.hasPrefix("/gzip/"), let count = Int(path.dropFirst("/gzip/".count)) {
                return .gzipEncodedZeros(count: count)
            }
            switch path {
            case "/empty": return .init(status: 200)
            case "/short": return .init(status: 200, body: Data(#"{"cut":"#.utf8), announcedLength: 100)
            case "/slow":
                try? await Task.sleep(for: .seconds(30))
                return .init(status: 200, body: Data("late".utf8))
            case "/text": return .init(status: 200, body: Data("plain text".utf8))
            case "/bomb": return (try? await bomb.value) ?? .init(status: 500)
            case "/drip": return .init(body: Data(repeating: 0x61, count: 1000), dripInterval: .milliseconds(200))
            case "/announced-gigabyte":
                return .init(body: Data(repeating: 0x61, count: 1000), announcedLength: 1 << 30, dripInterval: .seconds(1))
            default: return .init(status: 200, body: Data(#"{"path":"\#(path)"}"#.utf8))
            }
        }
    }

    /// Runs `body` with a server of its own, and waits for the server to shut down.
    func withServer(_ body: (LoopbackHTTPServer) async throws -> Void) async throws {
        try await TestSupport.withServer(try await Self.startServer(), shutdown: { await $0.shutdown() }, body)
    }

    func fetch(_ path: String, from server: LoopbackHTTPServer) async throws -> JSON {
        try await NetworkFetcher<JSON>(url: server.baseURL.appendingPathComponent(path)).fetch("unused")
    }

    @Test(arguments: [200, 201])
    func successStatusesGiveTheBody(status: Int) async throws {
        try await withServer { server async throws in
            #expect(try await fetch("status/\(status)", from: server)["status"]?.int == status)
        }
    }

    @Test(arguments: [204, 301, 401, 403, 404, 500, 503])
    func otherStatusesFailWithTheStatus(status: Int) async throws {
        try await withServer { server in
            let error = await #expect(throws: StoreError.self) { try await fetch("status/\(status)", from: server) }
            #expect(error?.code == .invalidStatusCode)
            #expect(error?.statusCode == status)
            #expect(error?.message.contains("\(status)") == true)
        }
    }

    @Test func anEmptyBodyIsMissingData() async throws {
        try await withServer { server in
            let error = await #expect(throws: StoreError.self) { try await fetch("empty", from: server) }
            #expect(error?.code == .missingData)
        }
    }

    @Test func aBodyShorterThanItsContentLengthIsMissingData() async throws {
        try await withServer { server in
            let error = await #expect(throws: StoreError.self) { try await fetch("short", from: server) }
            #expect(error?.code == .missingData, "\(String(describing: error))")
        }
    }

    @Test func aBodyThatDoesNotDecodeIsADecodingError() async throws {
        try await withServer { server in
            let error = await #expect(throws: StoreError.self) { try await fetch("text", from: server) }
            #expect(error?.code == .decoding)
            #expect(error?.message.contains("JSON") == true)
        }
    }

    @Test func aKeyThatIsNotAnHTTPURLIsRefused() async throws {
        let error = await #expect(throws: StoreError.self) { try await NetworkFetcher<Data>().fetch("file:///etc/passwd") }
        #expect(error?.code == .invalidKey)
    }

    @Test func withoutAURLTheKeyIsTheURL() async throws {
        try await withServer { server in
            let url = server.baseURL.appendingPathComponent("keyed").absoluteString
            let fetched = try await NetworkFetcher<JSON>().fetch(url)
            #expect(fetched["path"]?.string == "/keyed")
        }
    }

    @Test func cancellingTheTaskCancelsTheRequest() async throws {
        try await withServer { server in
            let task = Task { try await fetch("slow", from: server) }
            try await waitUntil("the request reaching the server") { server.requestsReceived > 0 }
            task.cancel()
            // `/slow` never answers: a fetch that ends with CancellationError within the time limit
            // ended when its task was cancelled, not when the server answered.
            await #expect(throws: CancellationError.self) { try await task.value }
        }
    }

    @Test func fetchByURLCachesAndASecondFetchDoesNotReachTheServer() async throws {
        try await withServer { server in
            let directory = try TemporaryDirectory()
            let cache = Cache<JSON>(name: "network", directory: directory.path)
            let url = server.baseURL.appendingPathComponent("documents/1")

            #expect(try await cache.fetch(url: url)["path"]?.string == "/documents/1")
            #expect(try await cache.fetch(url: url)["path"]?.string == "/documents/1")
            #expect(server.requestCount(path: "/documents/1") == 1)
            #expect(try await cache.fetch(key: url.absoluteString)["path"]?.string == "/documents/1")
        }
    }

    @Test func aFailedResponseIsNotCached() async throws {
        try await withServer { server in
            let directory = try TemporaryDirectory()
            let cache = Cache<JSON>(name: "network", directory: directory.path)
            let url = server.baseURL.appendingPathComponent("status/404")

            for _ in 0..<2 {
                let error = await #expect(throws: StoreError.self) { try await cache.fetch(url: url) }
                #expect(error?.statusCode == 404)
            }
            #expect(server.requestCount(path: "/status/404") == 2)
            await #expect(throws: StoreError.self) { try await cache.fetch(key: url.absoluteString) }
            #expect(await cache.size == 0)
        }
    }

    @Test func concurrentFetchesOfOneURLMakeOneRequest() async throws {
        try await withServer { server in
            let directory = try TemporaryDirectory()
            let cache = Cache<Data>(name: "network", directory: directory.path)
            let url = server.baseURL.appendingPathComponent("shared")
            try await withThrowingTaskGroup(of: Data.self) { group in
                for _ in 0..<50 { group.addTask { try await cache.fetch(url: url) } }
                for try await body in group { #expect(body == Data(#"{"path":"/shared"}"#.utf8)) }
            }
            #expect(server.requestCount(path: "/shared") == 1)
        }
    }

    // MARK: - Limits

    @Test(arguments: [1, 100_000])
    func aGzipBodyArrivesDecoded(count: Int) async throws {
        try await withServer { server async throws in
            let fetcher = NetworkFetcher<Data>(url: server.baseURL.appendingPathComponent("gzip/\(count)"))
            #expect(try await fetcher.fetch("unused") == Data(count: count))
        }
    }

    /// A session of the caller's own collects each body whole; the limit still holds, checked once
    /// the body is in, and cancelling still cancels. The shared session passed explicitly is the
    /// default one.
    @Test func aSessionOfYourOwnIsUsedAndHeldToTheLimit() async throws {
        try await withServer { server async throws in
            // FoundationNetworking's first session initializes libcurl: off the cooperative pool.
            let session = try await offThePool { URLSession(configuration: .ephemeral) }
            let small = NetworkFetcher<Data>(url: server.baseURL.appendingPathComponent("bytes/1000"), session: session)
            #expect(try await small.fetch("unused").count == 1000)
            let large = NetworkFetcher<Data>(
                url: server.baseURL.appendingPathComponent("bytes/1001"),
                session: session,
                configuration: .init(maximumBodySize: 1000)
            )
            let error = await #expect(throws: StoreError.self) { try await large.fetch("unused") }
            #expect(error?.code == .valueTooLarge)

            // Cancelling the task cancels the session's request.
            let slow = NetworkFetcher<Data>(url: server.baseURL.appendingPathComponent("slow"), session: session)
            let received = server.requestsReceived
            let task = Task { try await slow.fetch("unused") }
            try await waitUntil("the request reaching the server") { server.requestsReceived > received }
            task.cancel()
            await #expect(throws: CancellationError.self) { try await task.value }
            // Invalidating waits for the session's thread too.
            try await offThePool { session.finishTasksAndInvalidate() }
        }
    }

    @Test(arguments: [(size: 1000, accepted: true), (size: 1001, accepted: false)])
    func aBodyOverTheLimitIsRefused(size: Int, accepted: Bool) async throws {
        try await withServer { server async throws in
            let url = server.baseURL.appendingPathComponent("bytes/\(size)")
            let fetcher = NetworkFetcher<Data>(url: url, configuration: .init(maximumBodySize: 1000))
            if accepted {
                #expect(try await fetcher.fetch("unused").count == size)
            } else {
                let error = await #expect(throws: StoreError.self) { try await fetcher.fetch("unused") }
                #expect(error?.code == .valueTooLarge)
                #expect(error?.message.contains(url.absoluteString) == true)
                #expect(error?.message.contains("maximumBodySize of 1000 bytes") == true)
            }
        }
    }

    /// 3.4 MB on the wire inflate to 512 MiB: counted as they are decoded, the bytes pass the
    /// limit early and the fetch fails at once, its body dropped, so the peak memory stays far
    /// below the bomb's size. (With the limit off, the same fetch raises it by about 460 MiB.)
    @Test(.tags(.slow), arguments: [8 << 20, 64 << 20])
    func aGzipBombFailsOnceItPassesTheLimit(limit: Int) async throws {
        _ = try await Self.bomb.value   // built before the peak is measured
        let before = peakMemory()
        var elapsed = Duration.zero
        try await withServer { server in
            let url = server.baseURL.appendingPathComponent("bomb")
            let fetcher = NetworkFetcher<Data>(url: url, configuration: .init(maximumBodySize: limit))
            let start = ContinuousClock.now
            let error = await #expect(throws: StoreError.self) { try await fetcher.fetch("unused") }
            elapsed = ContinuousClock.now - start
            #expect(error?.code == .valueTooLarge, "\(String(describing: error))")
            #expect(error?.message.contains(url.absoluteString) == true)
            #expect(error?.message.contains("maximumBodySize of \(limit) bytes") == true)
        }
        let growth = peakMemory() - before
        #expect(growth < 256 << 20, "the peak memory grew by \(growth >> 20) MiB")
        print("limits: a gzip bomb of 512 MiB under a maximumBodySize of \(limit >> 20) MiB failed after \(elapsed); the process's peak memory grew by \(growth >> 20) MiB")
    }

    /// A gzip bomb whose compressed bytes never stop coming holds up no other fetch. FoundationNetworking
    /// cannot stop libcurl inflating it while bytes arrive (its write callback never aborts, and
    /// `cancel()` waits for the session's thread), so the bomb's fetch fails at the limit and its
    /// transfer goes on in the background; a small fetch started after that must not wait for it.
    /// The server keeps sending until the small fetch is done (or for 30 s at most): before, the
    /// small fetch waited on the same session's thread, and ended only after the server stopped.
    @Test(.timeLimit(.minutes(2)))
    func anEndlessGzipBombHoldsUpNoOtherFetch() async throws {
        let sending = Locked(true)
        let server = try await LoopbackHTTPServer.start { request in
            request.uri.hasPrefix("/bomb") ? .endlessGzipZeros { sending.withLock { $0 } } : .init(body: Data("small".utf8))
        }
        let cap = Task {
            try? await Task.sleep(for: .seconds(30))
            sending.withLock { $0 = false }
        }
        try await TestSupport.withServer(server, shutdown: { await $0.shutdown() }) { server in
            let bomb = NetworkFetcher<Data>(url: server.baseURL.appendingPathComponent("bomb"), configuration: .init(maximumBodySize: 8 << 20))
            let error = await #expect(throws: StoreError.self) { try await bomb.fetch("unused") }
            #expect(error?.code == .valueTooLarge, "\(String(describing: error))")
            let small = try await NetworkFetcher<Data>(url: server.baseURL.appendingPathComponent("small")).fetch("unused")
            let bombStillSending = sending.withLock { sent in defer { sent = false }; return sent }
            #expect(small == Data("small".utf8))
            #expect(bombStillSending, "the small fetch ended only once the bomb's server stopped sending")
        }
        cap.cancel()
    }

    /// The head announces 1 GiB and the body drips: only the Content-Length can end it early.
    @Test func aContentLengthOverTheLimitIsRefusedWhenTheHeadArrives() async throws {
        try await withServer { server in
            let fetcher = NetworkFetcher<Data>(
                url: server.baseURL.appendingPathComponent("announced-gigabyte"),
                configuration: .init(maximumBodySize: 1 << 20, requestTimeout: .seconds(30))
            )
            let error = await #expect(throws: StoreError.self) { try await fetcher.fetch("unused") }
            #expect(error?.code == .valueTooLarge, "\(String(describing: error))")
            #expect(error?.message.contains("announced \(1 << 30) bytes (Content-Length)") == true)
        }
    }

    /// A byte every 200 ms never trips the session's idle timeout; the deadline for the whole
    /// request does.
    @Test func aDrippingServerIsCutOffAtTheRequestTimeout() async throws {
        try await withServer { server in
            let fetcher = NetworkFetcher<Data>(
                url: server.baseURL.appendingPathComponent("drip"),
                configuration: .init(requestTimeout: .seconds(1))
            )
            let start = ContinuousClock.now
            let error = await #expect(throws: StoreError.self) { try await fetcher.fetch("unused") }
            #expect(error?.code == .timeout, "\(String(describing: error))")
            #expect(error?.message.contains("requestTimeout") == true)
            #expect(ContinuousClock.now - start >= .seconds(1))
            print("limits: a server dripping a byte every 200 ms was cut off after \(ContinuousClock.now - start) (requestTimeout 1 s)")
        }
    }

    @Test func theDefaultsAreStated() {
        let configuration = NetworkFetcher<Data>.Configuration()
        #expect(configuration.maximumBodySize == 64 << 20)
        #expect(configuration.requestTimeout == .seconds(60))
        #expect(configuration.sensitiveQueryItems.isSuperset(of: ["token", "access_token", "api_key", "key", "signature", "password", "secret"]))
        #expect(configuration.crossOriginRedirectHeaders.isEmpty)
        #expect(!configuration.allowsInsecureRedirects)
        #expect(NetworkFetcher<Data>.Configuration.redirectSafelistedHeaders == [
            "accept", "accept-language", "content-language", "range", "user-agent", "cache-control", "pragma",
            "if-none-match", "if-modified-since", "if-match", "if-unmodified-since", "if-range",
        ])
        #expect(NetworkFetcher<Data>().configuration == configuration)
    }

    /// A refused connection: the message says which request failed, the cause (libcurl's reason
    /// and its error code) is printed once by the description.
    @Test func aRefusedConnectionIsUnavailableWithItsCauseOnce() async throws {
        let refusing = try RefusingPort()
        let url = "http://127.0.0.1:\(refusing.port)/a"
        let error = try #require(await #expect(throws: StoreError.self) {
            try await NetworkFetcher<Data>(url: URL(string: url)).fetch("unused")
        })
        withExtendedLifetime(refusing) {}
        let cause = "\(try #require(error.cause))"
        #expect(error.code == .unavailable)
        #expect(error.message == "GET \(url) failed")
        #expect(cause.hasPrefix("Failed to connect to 127.0.0.1 port \(refusing.port)"), "\(cause)")
        #expect(cause.hasSuffix("(libcurl error 7)"), "\(cause)")
        #expect("\(error)" == "unavailable: GET \(url) failed (cause: \(cause))")
        #expect("\(error)".components(separatedBy: "Failed to connect").count - 1 == 1, "\(error)")
    }

    // MARK: - Secrets

    enum Failure: String, CaseIterable {
        case notFound, connectionRefused, timeout
    }

    @Test(arguments: Failure.allCases)
    func secretsInTheURLStayOutOfErrors(failure: Failure) async throws {
        let path = failure == .timeout ? "drip" : "status/404"
        if failure == .connectionRefused {
            let refusing = try RefusingPort()
            try await check(port: refusing.port)
            withExtendedLifetime(refusing) {}   // the port stays taken until the request has failed
            return
        }
        try await withServer { server in try await check(port: server.port) }

        func check(port: Int) async throws {
            let url = try #require(URL(string: "http://alice:S3cr3t@127.0.0.1:\(port)/\(path)?token=T0k3n&page=2&API_KEY=K3y"))
            // A short deadline only where the server drips: the other requests may wait behind a
            // gzip bomb of another test, which holds the shared session's thread while it inflates.
            let timeout: Duration = failure == .timeout ? .seconds(1) : .seconds(60)
            let fetcher = NetworkFetcher<Data>(url: url, configuration: .init(requestTimeout: timeout))
            let error = await #expect(throws: StoreError.self) { try await fetcher.fetch("unused") }
            let expected: StoreError.Code = switch failure {
            case .notFound: .invalidStatusCode
            case .connectionRefused: .unavailable
            case .timeout: .timeout
            }
            #expect(error?.code == expected, "\(String(describing: error))")
            let shown = "http://alice:***@127.0.0.1:\(port)/\(path)?token=***&page=2&API_KEY=***"
            #expect(error?.message.contains(shown) == true, "\(String(describing: error))")
            for text in [String(describing: error), String(reflecting: error), error?.localizedDescription ?? ""] {
                #expect(!text.contains("S3cr3t") && !text.contains("T0k3n") && !text.contains("K3y"), "\(text)")
            }
        }
    }

    @Test(arguments: [
        ("ftp://alice:S3cr3t@example.com/file?token=T0k3n", "ftp://alice:***@example.com/file?token=***"),
        ("ftp://ghp_T0k3n@example.com/file", "ftp://***@example.com/file"),
    ])
    func secretsInAKeyThatIsNotAnHTTPURLStayOutOfTheError(key: String, shown: String) async throws {
        let error = await #expect(throws: StoreError.self) { try await NetworkFetcher<Data>().fetch(key) }
        #expect(error?.code == .invalidKey)
        #expect(error?.message.contains(shown) == true, "\(String(describing: error))")
        #expect(error?.message.contains("S3cr3t") == false)
        #expect(error?.message.contains("T0k3n") == false)
    }
}
