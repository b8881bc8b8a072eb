import ArgumentParser
import Dispatch
import Foundation
import HTTPCaching
import Haneke
import HanekeProxy
import Logging
import NIOPosix

struct Proxy: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run a caching reverse proxy in front of an HTTP server.",
        discussion: """
        Every request to HOST:PORT goes to the upstream (its path and query appended to the \
        upstream's origin), through a cache that follows RFC 9111 and RFC 5861 as a shared cache \
        (or a private one with --private): what may be stored, for how long, for which request \
        headers (Vary), revalidation with If-None-Match and If-Modified-Since, \
        stale-while-revalidate and stale-if-error, invalidation after POST, PUT and DELETE. Each \
        response carries a Cache-Status header (RFC 9211): `haneke; hit`, `haneke; fwd=uri-miss; \
        fwd-status=200; stored`, `haneke; fwd=stale; fwd-status=304` (revalidated), or a hit with \
        detail=stale-while-revalidate or stale-if-error (served stale).

        The cache is memory (an eighth of SIZE, at most 256M), then, with --dir, the folder: \
        bodies up to 16K as rows of an SQLite database, larger ones as LZ4-compressed files, SIZE \
        in all. Without --dir it is memory only, SIZE of it. Bodies are read whole: a response \
        over 64M answers 502, a request body over 16M 413; an upstream exchange that takes over \
        60s answers 504. At most 64 upstream exchanges run at once, and 1024 client connections, \
        256 from one address (at the limit the connection idle the longest is closed to make \
        room); a request may have 100 header fields of 64K in all, its head must arrive within \
        30s of its first byte and its body at 500 bytes a second at least, and a connection idle \
        for 90s is closed.

        As a shared cache it refuses by default what nginx or Varnish refuse: a response with \
        Set-Cookie is not stored, a response to a request with Cookie only with an explicit \
        lifetime, a client's max-stale or stale-if-error is ignored, a stale response is served \
        while the upstream is down only if it says stale-if-error, and a client's no-cache \
        revalidates without replacing a fresh response. --allow relaxes each. The key is what \
        reaches the upstream: fields that rewrite a request there (X-Forwarded-Host, \
        X-Original-URL, X-HTTP-Method-Override, ...) are dropped unless --trust-header or \
        --key-header names them; X-Forwarded-For and Forwarded name the client; a HEAD is \
        fetched as a GET and a GET goes without a body. CONNECT and TRACE are answered 405.

        The proxy runs until SIGINT or SIGTERM, then finishes its revalidations and flushes the \
        folder. It prints one line once it listens.
        """ + ExitStatus.help
    )

    @Option(help: ArgumentHelp("The server to forward to: an http URL (its path is ignored).", valueName: "url"))
    var upstream: String

    @Option(help: ArgumentHelp("The address and port to listen on: an address or a host name, or none (:8080) for every address.", valueName: "host:port"))
    var listen = "127.0.0.1:8080"

    @Option(name: .customLong("dir"), help: ArgumentHelp("A folder to keep responses in (created if missing).", valueName: "dir"))
    var directory: String?

    @Option(parsing: .unconditional, help: ArgumentHelp("The most the cache may hold: bytes or a number with K, M, G or T.", valueName: "size"))
    var capacity = ByteSize(bytes: 1 << 30)

    @Option(name: .customLong("memory-budget"), parsing: .unconditional, help: ArgumentHelp(
        "The most bytes in flight across all connections (request bodies, upstream bodies, responses being written): bytes or a number with K, M, G or T. Past it, new requests get 503.",
        valueName: "size"
    ))
    var memoryBudget = ByteSize(bytes: ProxyServer.Limits().memoryBudget)

    @Flag(name: .customLong("private"), help: "Cache as one user's cache: keep private responses, ignore s-maxage.")
    var isPrivate = false

    @Option(name: .customLong("allow"), help: ArgumentHelp(
        "Relax a shared cache's safe default (repeatable): set-cookie (store responses with Set-Cookie), heuristic-with-cookies (heuristic lifetimes for requests with Cookie), client-staleness (honour a request's max-stale and stale-if-error), client-refresh (a request's no-cache replaces a fresh response), stale-when-disconnected (serve stale while the upstream is unreachable), or all.",
        valueName: "relaxation"
    ))
    var relaxations: [Relaxation] = []

    @Option(name: .customLong("trust-header"), help: ArgumentHelp(
        "Pass a client's field that rewrites a request at the upstream (X-Forwarded-Host, X-Forwarded-For, ...) as sent, unkeyed (repeatable): for a trusted front that sets it.",
        valueName: "name"
    ))
    var trustedHeaders: [String] = []

    @Option(name: .customLong("key-header"), help: ArgumentHelp("Pass a client's field to the upstream and key the cache by its value (repeatable).", valueName: "name"))
    var keyedHeaders: [String] = []

    /// A relaxation of the shared cache's defaults, as `--allow` names it.
    enum Relaxation: String, ExpressibleByArgument, CaseIterable {
        case setCookie = "set-cookie"
        case heuristicWithCookies = "heuristic-with-cookies"
        case clientStaleness = "client-staleness"
        case clientRefresh = "client-refresh"
        case staleWhenDisconnected = "stale-when-disconnected"
        case all

        var policy: HTTPCachePolicy.SharedCacheRelaxations {
            switch self {
            case .setCookie: .storeSetCookie
            case .heuristicWithCookies: .heuristicLifetimeWithCookies
            case .clientStaleness: .clientStaleness
            case .clientRefresh: .clientRefresh
            case .staleWhenDisconnected: []
            case .all: .all
            }
        }
    }

    func run() async throws {
        guard let upstreamURL = URL(string: upstream), upstreamURL.scheme == "http", upstreamURL.host != nil else {
            throw ValidationError("--upstream must be an http URL with a host, such as http://127.0.0.1:8000 (not \(upstream))")
        }
        guard let (host, port) = ProxyServer.listenAddress(listen) else {
            throw ValidationError("--listen must be HOST:PORT, [IPv6]:PORT or :PORT, such as 127.0.0.1:8080 (not \(listen))")
        }
        let capacity = self.capacity.bytes
        let directory = self.directory
        let logger = Logger(label: "haneke.proxy")
        // Opening a folder and starting NIO's threads wait for the system: off the cooperative pool.
        let (storage, memory, flush) = try await IOExecutor.shared.run { try Self.makeStorage(directory: directory, capacity: capacity) }
        let group = try await IOExecutor.shared.run { MultiThreadedEventLoopGroup.singleton }
        let policy = HTTPCachePolicy(
            kind: isPrivate ? .private : .shared,
            servesStaleWhenDisconnected: isPrivate || relaxations.contains(.staleWhenDisconnected) || relaxations.contains(.all),
            relaxations: relaxations.reduce(into: []) { $0.formUnion($1.policy) }
        )
        var configuration = CachingProxy<AnyStore<String, Data>>.Configuration()
        configuration.trustedFields = Set(trustedHeaders.map { $0.lowercased() })
        configuration.keyedFields = keyedHeaders.map { $0.lowercased() }
        let cache = HTTPCache(storage: storage, policy: policy)
        var limits = ProxyServer.Limits()
        limits.memoryBudget = memoryBudget.bytes
        let budget = MemoryBudget(limit: limits.memoryBudget)
        let proxy = try CachingProxy(
            upstream: upstreamURL, cache: cache, group: group, configuration: configuration, peek: { memory.entry(forKey: $0) }, budget: budget, logger: logger
        )
        let server: ProxyServer
        do {
            server = try await ProxyServer.start(
                host: host, port: port, limits: limits, group: group, budget: budget, respondAtOnce: { proxy.respondAtOnce(to: $0) }, respond: { await proxy.respond(to: $0) }
            )
        } catch {
            await proxy.shutdown()
            throw error
        }
        print("haneke proxy: listening on http://\(host.contains(":") ? "[\(host)]" : host):\(server.port), upstream \(proxy.upstreamOrigin), cache \(directory ?? "in memory") (\(ByteSize.format(capacity)))")
        fflush(nil)
        await Self.waitForTermination()
        await server.shutdown()
        await proxy.shutdown()
        try await IOExecutor.shared.run { try flush() }
    }

    /// Memory, then (with a folder) small bodies as SQLite rows and large ones as LZ4 files.
    private static func makeStorage(directory: String?, capacity: Int) throws -> (AnyStore<String, Data>, MemoryStore<String, Data>, @Sendable () throws -> Void) {
        guard let directory else {
            let memory = MemoryStore<String, Data>(costLimit: capacity, name: "memory")
            return (memory.eraseToAnyStore(), memory, {})
        }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let memory = MemoryStore<String, Data>(costLimit: min(capacity / 8, 256 << 20), name: "memory")
        let rows = try SQLiteStore(directory: directory, capacity: capacity / 2)
        let files = try FileStore(directory: directory, capacity: capacity - capacity / 2)
        let disk = rows.routingLargeValues(over: 16 << 10, to: files.compressed())
        return (memory.chained(to: disk).eraseToAnyStore(), memory, {
            try rows.flush()
            try files.flush()
        })
    }

    /// Returns once the process receives SIGINT or SIGTERM.
    private static func waitForTermination() async {
        let (signals, continuation) = AsyncStream<Void>.makeStream()
        var sources: [any DispatchSourceSignal] = []
        for signalNumber in [SIGINT, SIGTERM] {
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
            source.setEventHandler { continuation.yield() }
            source.resume()
            sources.append(source)
        }
        for await _ in signals { break }
        for source in sources { source.cancel() }
    }
}
