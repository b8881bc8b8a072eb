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
        60s answers 504. At most 64 upstream exchanges run at once, and 1024 client connections; a \
        request may have 100 header fields of 64K in all.

        The proxy runs until SIGINT or SIGTERM, then finishes its revalidations and flushes the \
        folder. It prints one line once it listens.
        """ + ExitStatus.help
    )

    @Option(help: ArgumentHelp("The server to forward to: an http URL (its path is ignored).", valueName: "url"))
    var upstream: String

    @Option(help: ArgumentHelp("The address and port to listen on.", valueName: "host:port"))
    var listen = "127.0.0.1:8080"

    @Option(name: .customLong("dir"), help: ArgumentHelp("A folder to keep responses in (created if missing).", valueName: "dir"))
    var directory: String?

    @Option(parsing: .unconditional, help: ArgumentHelp("The most the cache may hold: bytes or a number with K, M, G or T.", valueName: "size"))
    var capacity = ByteSize(bytes: 1 << 30)

    @Flag(name: .customLong("private"), help: "Cache as one user's cache: keep private responses, ignore s-maxage.")
    var isPrivate = false

    func run() async throws {
        guard let upstreamURL = URL(string: upstream), upstreamURL.scheme == "http", upstreamURL.host != nil else {
            throw ValidationError("--upstream must be an http URL with a host, such as http://127.0.0.1:8000 (not \(upstream))")
        }
        guard let colon = listen.lastIndex(of: ":"), let port = Int(listen[listen.index(after: colon)...]), (0...65_535).contains(port) else {
            throw ValidationError("--listen must be HOST:PORT, such as 127.0.0.1:8080 (not \(listen))")
        }
        let host = String(listen[..<colon]).trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        let capacity = self.capacity.bytes
        let directory = self.directory
        let logger = Logger(label: "haneke.proxy")
        // Opening a folder and starting NIO's threads wait for the system: off the cooperative pool.
        let (storage, memory, flush) = try await IOExecutor.shared.run { try Self.makeStorage(directory: directory, capacity: capacity) }
        let group = try await IOExecutor.shared.run { MultiThreadedEventLoopGroup.singleton }
        let cache = HTTPCache(storage: storage, policy: HTTPCachePolicy(kind: isPrivate ? .private : .shared))
        let proxy = try CachingProxy(upstream: upstreamURL, cache: cache, group: group, peek: { memory.entry(forKey: $0) }, logger: logger)
        let server = try await ProxyServer.start(
            host: host, port: port, group: group, respondAtOnce: { proxy.respondAtOnce(to: $0) }, respond: { await proxy.respond(to: $0) }
        )
        print("haneke proxy: listening on http://\(listen.hasPrefix("[") ? "[\(host)]" : host):\(server.port), upstream \(proxy.upstreamOrigin), cache \(directory ?? "in memory") (\(ByteSize.format(capacity)))")
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
