import CompressedStore
import FileStore
import Foundation
import HanekeProtocols
import HanekeTesting
import Logging
import MemoryStore
@testable import RedisStore
import Testing
import TestSupport

/// What the store does when Redis is down, slow, or talks nonsense: it answers quickly with an
/// error, a chain reads it as a miss, and it reconnects by itself.
///
/// "Quickly" is never measured: the stores' timeouts are an hour (see ``configuration(_:)``), far
/// beyond the tests' time limit, so an operation that waited for one fails its test by the limit.
@Suite(.timeLimit(.minutes(5)), .tags(.slow))
struct FaultTests {
    @Test(.tags(.redis, .process)) func withRedisDownEveryOperationThrowsUnavailableQuickly() async throws {
        let server = try await RedisTestServer()
        try await withServer(server, shutdown: { await $0.stop() }) { server in
            let store = RedisStore(configuration: try Self.configuration(server.url), logger: .quiet)
            try await store.setValue(Data("v".utf8), forKey: "k")
            await server.kill()

            let operations: [(String, @Sendable () async throws -> Void)] = [
                ("read", { _ = try await store.value(forKey: "k") }),
                ("write", { try await store.setValue(Data(), forKey: "k") }),
                ("remove", { try await store.removeValue(forKey: "k") }),
                ("remove all keys", { try await store.removeAll() }),
            ]
            // No waiting for a timeout: an operation that waited for one would outlast the time limit.
            for round in 0..<25 {
                for (name, operation) in operations {
                    await #expect("\(name), round \(round)") {
                        try await operation()
                    } throws: { error in
                        guard let error = error as? StoreError else { return false }
                        return error.code == .unavailable && error.message.contains("127.0.0.1:\(server.port)")
                    }
                }
            }
            #expect(store.statistics.errors == 100)

            // Back up (empty: nothing was persisted), and the store reconnects by itself.
            try await server.start()
            try await waitUntil { (try? await store.ping()) != nil }
            #expect(try await store.value(forKey: "k") == nil)
            try await store.setValue(Data("again".utf8), forKey: "k")
            #expect(try await store.value(forKey: "k") == Data("again".utf8))
        }
    }

    @Test(.tags(.redis, .process)) func aServerThatNeverListenedIsUnavailableAndNamesTheKey() async throws {
        let server = try await RedisTestServer()
        await server.stop()   // a port that was just free: nothing listens on it now
        let store = RedisStore(configuration: try Self.configuration(server.url), logger: .quiet)
        await #expect {
            _ = try await store.value(forKey: "greeting")
        } throws: { error in
            guard let error = error as? StoreError else { return false }
            return error.code == .unavailable
                && error.message == "Could not read key greeting on Redis at 127.0.0.1:\(server.port)"
                && "\(error)".contains("(cause: could not connect (Connection refused))")
        }
    }

    /// With Redis down, a chain reads it as a miss and the fetcher answers; memory hits never
    /// touch Redis; a write reaches the other layers and then reports `unavailable`.
    @Test(.tags(.redis, .process)) func aChainReadsRedisDownAsAMiss() async throws {
        let server = try await RedisTestServer()
        await server.stop()
        let redis = RedisStore(configuration: try Self.configuration(server.url), logger: .quiet)
        let memory = MemoryStore<String, Data>(name: "memory")
        let chain = memory.chained(to: redis, logger: .quiet).fetching(from: ClosureFetcher { key in Data("fetched \(key)".utf8) }, logger: .quiet)

        #expect(try await chain.fetch("a") == Data("fetched a".utf8))
        #expect(try await chain.fetch("a") == Data("fetched a".utf8))   // a memory hit
        let layers = Dictionary(uniqueKeysWithValues: chain.layerStatistics.map { ($0.name, $0.statistics) })
        #expect(layers["memory"]?.hits == 1)
        #expect(layers["fetcher"]?.hits == 1)
        #expect(layers["redis"]?.hits == 0)
        #expect((layers["redis"]?.errors ?? 0) >= 1)

        await #expect {
            try await chain.setValue(Data("written".utf8), forKey: "b")
        } throws: { error in
            (error as? StoreError)?.code == .unavailable
        }
        #expect(memory.value(forKey: "b") == Data("written".utf8))
    }

    @Test func aCommandWithoutAReplyTimesOutAndItsConnectionIsDropped() async throws {
        let server = try await ScriptedRedisServer.start { name, _ in
            name == "PING" ? .bytes("+PONG\r\n") : .silence
        }
        try await withServer(server, shutdown: { await $0.shutdown() }) { server in
            var configuration = try Self.configuration(server.url)
            configuration.commandTimeout = .milliseconds(200)
            configuration.connectionCount = 1
            let store = RedisStore(configuration: configuration, logger: .quiet)

            let start = ContinuousClock.now
            await #expect {
                _ = try await store.value(forKey: "k")
            } throws: { error in
                guard let error = error as? StoreError else { return false }
                return error.code == .timeout && "\(error)".contains("no reply within 200 ms; the connection was dropped")
            }
            // Not before the timeout; how long after it depends on the machine's load.
            #expect(ContinuousClock.now - start >= .milliseconds(200))
            try await waitUntil { server.connectionsClosed == 1 }
        }
    }

    /// The server never replies and the command timeout is an hour: a read that ends with
    /// `CancellationError` within the test's time limit stopped waiting when its task was
    /// cancelled, not at the timeout (nor at a reply).
    @Test func aCancelledTaskStopsWaitingForTheReplyAtOnce() async throws {
        let server = try await ScriptedRedisServer.start { name, _ in
            name == "PING" ? .bytes("+PONG\r\n") : .silence
        }
        try await withServer(server, shutdown: { await $0.shutdown() }) { server in
            var configuration = try Self.configuration(server.url)   // an hour's command timeout
            configuration.connectionCount = 1
            let store = RedisStore(configuration: configuration, logger: .quiet)
            try await store.ping()

            let read = Task { try await store.value(forKey: "k") }
            try await waitUntil("the GET reaching the server") { server.commandNames.contains("GET") }
            read.cancel()
            // Were the cancellation ignored, the time limit would cancel this test, and closing the
            // store's connections would end the read (with an error) an hour early.
            _ = await withTaskCancellationHandler {
                await #expect(throws: CancellationError.self) { _ = try await read.value }
            } onCancel: {
                store.shutdown()
            }
            #expect(store.statistics.errors == 0, "a cancellation is not a failure of the store")
        }
    }

    @Test func aMalformedReplyIsAClearErrorAndTheConnectionIsDropped() async throws {
        let gets = Locked(0)
        let server = try await ScriptedRedisServer.start { name, _ in
            switch name {
            case "PING": return .bytes("+PONG\r\n")
            case "GET": return gets.withLock { $0 += 1; return $0 } == 1 ? .bytes("%2\r\n$1\r\na\r\n") : .bytes("$2\r\nok\r\n")
            default: return .bytes("-ERR unexpected\r\n")
            }
        }
        try await withServer(server, shutdown: { await $0.shutdown() }) { server in
            var configuration = try Self.configuration(server.url)
            configuration.connectionCount = 1
            let store = RedisStore(configuration: configuration, logger: .quiet)

            await #expect {
                _ = try await store.value(forKey: "k")
            } throws: { error in
                guard let error = error as? StoreError else { return false }
                return error.code == .io
                    && error.message == "Could not read key k on Redis at 127.0.0.1:\(server.port)"
                    && "\(error)".contains("malformed RESP reply: unknown type byte 0x25 ('%') where a reply should start; the connection was dropped")
            }
            try await waitUntil { server.connectionsClosed == 1 }
            // The next command opens a new connection, in step again.
            #expect(try await store.value(forKey: "k") == Data("ok".utf8))
            #expect(server.connectionsAccepted == 2)
        }
    }

    /// A server's error text reaches errors escaped and cut: no terminal escape, bell or
    /// backspace, and not its 60 KB.
    @Test func aServersErrorTextIsEscapedAndCut() async throws {
        let hostile = "ERR \u{1b}[2J\u{07}\u{08}" + String(repeating: "x", count: 60_000)
        let server = try await ScriptedRedisServer.start { name, _ in
            name == "PING" ? .bytes("+PONG\r\n") : .bytes("-" + hostile + "\r\n")
        }
        try await withServer(server, shutdown: { await $0.shutdown() }) { server in
            let store = RedisStore(configuration: try Self.configuration(server.url), logger: .quiet)
            let error = try #require(await #expect(throws: StoreError.self) { try await store.value(forKey: "k") })
            let text = "\(error)"
            #expect(text.contains("Redis answered with an error: ERR \\u{1b}[2J\\u{7}\\u{8}xxx"), "\(text.prefix(300))")
            #expect(!text.unicodeScalars.contains { $0.value < 0x20 }, "\(text.prefix(300))")
            #expect(text.utf8.count < 1_000, "\(text.utf8.count) bytes")
        }
    }

    /// `maximumValueSize` bounds every reply a connection holds, and every write.
    @Test func maximumValueSizeBoundsRepliesAndWrites() async throws {
        let big = String(repeating: "v", count: 2 << 20)
        let server = try await ScriptedRedisServer.start { name, _ in
            name == "PING" ? .bytes("+PONG\r\n") : .bytes("$\(big.utf8.count)\r\n\(big)\r\n")
        }
        try await withServer(server, shutdown: { await $0.shutdown() }) { server in
            var configuration = try Self.configuration(server.url)
            configuration.maximumValueSize = 4 << 10
            configuration.connectionCount = 1
            let store = RedisStore(configuration: configuration, logger: .quiet)
            let error = try #require(await #expect(throws: StoreError.self) { try await store.value(forKey: "k") })
            #expect("\(error)".contains("malformed RESP reply"), "\(error)")
            try await waitUntil { server.connectionsClosed == 1 }
            let tooLarge = try #require(await #expect(throws: StoreError.self) {
                try await store.setValue(Data(count: 8 << 10), forKey: "k")
            })
            #expect(tooLarge.code == .valueTooLarge)
            #expect(tooLarge.message.contains("maximumValueSize (4096 bytes"), "\(tooLarge)")
        }
    }

    @Test func aCommandWhoseConnectionClosesIsSentAgainOnANewOne() async throws {
        let gets = Locked(0)
        let server = try await ScriptedRedisServer.start { name, _ in
            switch name {
            case "PING": return .bytes("+PONG\r\n")
            case "GET": return gets.withLock { $0 += 1; return $0 } == 1 ? .close : .bytes("$2\r\nok\r\n")
            default: return .bytes("-ERR unexpected\r\n")
            }
        }
        try await withServer(server, shutdown: { await $0.shutdown() }) { server in
            var configuration = try Self.configuration(server.url)
            configuration.connectionCount = 1
            let store = RedisStore(configuration: configuration, logger: .quiet)
            #expect(try await store.value(forKey: "k") == Data("ok".utf8))
            #expect(server.connectionsAccepted == 2)
            #expect(server.commandNames == ["PING", "GET", "PING", "GET"])
        }
    }

    /// A server that never ends a scan — every `SCAN` answers a non-zero cursor — cannot keep
    /// `removeAll()` looping: it stops after `maximumScanRounds` rounds, having removed what it
    /// found, with an error that says so.
    @Test(.timeLimit(.minutes(1)))
    func removeAllStopsWhenTheScanNeverEnds() async throws {
        let server = try await ScriptedRedisServer.start { name, _ in
            switch name {
            case "PING": .bytes("+PONG\r\n")
            case "SCAN": .bytes("*2\r\n$2\r\n17\r\n*1\r\n$7\r\nfault:k\r\n")
            case "UNLINK": .bytes(":1\r\n")
            default: .bytes("-ERR unexpected\r\n")
            }
        }
        try await withServer(server, shutdown: { await $0.shutdown() }) { server in
            var configuration = try Self.configuration(server.url)
            configuration.maximumScanRounds = 25
            let store = RedisStore(configuration: configuration, logger: .quiet)

            await #expect {
                try await store.removeAll()
            } throws: { error in
                guard let error = error as? StoreError else { return false }
                return error.code == .io
                    && error.message.hasPrefix("Could not remove all keys on Redis at 127.0.0.1:\(server.port): ")
                    && error.message.contains("the scan for keys with prefix \"fault:\" has not ended after 25 SCAN rounds")
                    && error.message.contains("the cursor is still 17")
            }
            #expect(server.commandNames.filter { $0 == "SCAN" }.count == 25)
            #expect(server.commandNames.filter { $0 == "UNLINK" }.count == 25)
            #expect(store.statistics.errors == 1)
        }
    }

    /// Credentials the server refuses — a wrong password, a wrong user, none where the server
    /// wants one, one where it wants none — are `authentication`, not `unavailable`: on the
    /// operation that met the refusal, and on the next one, which fails at once while the store
    /// waits to try again. The error names the key and the server; the server's reply is its
    /// cause, said once. The right password works on the same server.
    @Test(.tags(.redis, .process)) func refusedCredentialsAreAnAuthenticationErrorAlsoWhileTheStoreWaitsToRetry() async throws {
        let guarded = try await RedisTestServer(arguments: ["--requirepass", "s3cret"])
        let open = try await RedisTestServer()
        try await withServer(guarded, shutdown: { await $0.stop() }) { guarded in
            try await withServer(open, shutdown: { await $0.stop() }) { open in
                let cases = [
                    ("a wrong password", "redis://:nope@", guarded.port, "WRONGPASS"),
                    ("a wrong user", "redis://nobody:s3cret@", guarded.port, "WRONGPASS"),
                    ("no password", "redis://", guarded.port, "NOAUTH"),
                    ("a password the server does not want", "redis://:s3cret@", open.port, "the server refused AUTH"),
                ]
                for (name, start, port, reply) in cases {
                    let endpoint = "127.0.0.1:\(port)"
                    let url = start + endpoint
                    var configuration = try RedisStore.Configuration(url: url, keyPrefix: "fault:")
                    configuration.connectionCount = 1
                    configuration.minimumReconnectDelay = .seconds(60)   // the second operation meets the wait
                    configuration.maximumReconnectDelay = .seconds(60)
                    let log = LogCapture()
                    let store = RedisStore(configuration: configuration, logger: log.logger)
                    defer { store.shutdown() }

                    let refused = await #expect(throws: StoreError.self, "\(name)") { _ = try await store.value(forKey: "k") }
                    let waiting = await #expect(throws: StoreError.self, "\(name)") { try await store.setValue(Data("v".utf8), forKey: "k") }
                    for (error, message) in [(refused, "Could not read key k on Redis at \(endpoint)"), (waiting, "Could not write key k on Redis at \(endpoint)")] {
                        let text = error.map { "\($0)" } ?? ""
                        #expect(error?.code == .authentication, "\(name): \(text)")
                        #expect(error?.message == message, "\(name): \(text)")
                        #expect(text.components(separatedBy: reply).count - 1 == 1, "\(name): \(text)")
                    }
                    #expect(waiting.map { "\($0)" }?.contains("the next connection attempt is in") == true, "\(name): no second attempt yet")
                    #expect(store.pool.connectionsOpened == 0)
                    #expect(store.statistics.errors == 2)
                    #expect(log.lines.contains { $0.contains("its operations fail with `authentication`") }, "\(log.lines)")
                }

                let right = RedisStore(configuration: try Self.configuration("redis://:s3cret@127.0.0.1:\(guarded.port)"), logger: .quiet)
                defer { right.shutdown() }
                try await right.setValue(Data("v".utf8), forKey: "k")
                #expect(try await right.value(forKey: "k") == Data("v".utf8))
            }
        }
    }

    /// The password of the URL is in no error — not its message, its description or anything it
    /// holds — and in no line of the log: not when the server refuses the password, not when
    /// it refuses a command of a store that logged in, not when the connection is refused.
    @Test(.tags(.redis, .process)) func thePasswordIsInNoErrorAndNoLogLine() async throws {
        let server = try await RedisTestServer(arguments: ["--requirepass", "correct horse"])
        try await withServer(server, shutdown: { await $0.stop() }) { server in
            let password = "wrong-battery-staple"
            let log = LogCapture()
            let store = RedisStore(configuration: try Self.configuration("redis://admin:\(password)@127.0.0.1:\(server.port)"), logger: log.logger)
            let loggedIn = RedisStore(configuration: try Self.configuration("redis://:correct%20horse@127.0.0.1:\(server.port)"), logger: log.logger)

            var errors: [any Error] = []
            func failure(_ operation: () async throws -> Void) async -> String {
                do {
                    try await operation()
                    return "no error"
                } catch {
                    errors.append(error)
                    return "\(error)"
                }
            }
            #expect(await failure { _ = try await store.value(forKey: "k") }.contains("WRONGPASS"))
            _ = try await loggedIn.command("RPUSH", loggedIn.redisKey(for: "list"), "x")
            #expect(await failure { _ = try await loggedIn.value(forKey: "list") }.contains("WRONGTYPE"))
            await server.stop()
            try await waitUntil("an error saying the connection was refused") {
                await failure { try await store.setValue(Data(), forKey: "k") }.contains("Connection refused")
            }
            #expect(await failure { try await store.removeAll() } != "no error")
            try await waitUntil("the logged-in store's connection to close") {
                await failure { try await loggedIn.ping() }.contains("refused")
            }

            var texts = log.lines
            #expect(texts.contains { $0.contains("Cannot connect to Redis") && $0.contains("WRONGPASS") })
            #expect(texts.contains { $0.contains("A connection to Redis closed") })
            for error in errors {
                var dumped = ""
                dump(error, to: &dumped)
                texts += ["\(error)", String(reflecting: error), dumped]
            }
            for configuration in [store.configuration, loggedIn.configuration] {
                texts += ["\(configuration)", String(reflecting: configuration), configuration.url]
            }
            for text in texts {
                #expect(!text.contains(password) && !text.contains("correct horse") && !text.contains("correct%20horse"), "\(text)")
            }
        }
    }

    /// The issue's fault test: redis-server is killed in the middle of a load on a memory → LZ4
    /// file → Redis → fetcher chain. Every fetch still returns the right value; after a restart the
    /// Redis tier serves hits again.
    @Test(.tags(.redis, .process, .disk)) func aChainKeepsAnsweringWhenRedisIsKilledMidLoadAndUsesItAgainAfterARestart() async throws {
        let server = try await RedisTestServer()
        try await withServer(server, shutdown: { await $0.stop() }) { server in
            let redis = RedisStore(configuration: try Self.configuration(server.url), logger: .quiet)
            let directory = try TemporaryDirectory()
            // Small upper tiers, so that many reads reach Redis.
            let memory = MemoryStore<String, Data>(countLimit: 24, name: "memory")
            let disk = try FileStore(directory: directory.path, capacity: 48 << 10)
            let fetched = Locked(0)
            let chain = memory
                .chained(to: disk.compressed(), logger: .quiet)
                .chained(to: redis, logger: .quiet)
                .fetching(from: ClosureFetcher { (key: String) in
                    fetched.withLock { $0 += 1 }
                    return Self.value(for: key)
                }, logger: .quiet)

            func redisStatistics() -> StoreStatistics { redis.statistics }

            // Phase 1: load; one of the workers kills Redis a third of the way through.
            let wrong = Locked(0)
            let slowest = Locked(Duration.zero)
            let completed = Locked(0)
            func load(seed: UInt64, killAt: Int?) async throws {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for worker in 0..<8 {
                        group.addTask {
                            var random = SeededRandomNumberGenerator(seed: seed &+ UInt64(worker))
                            for _ in 0..<250 {
                                let key = "document-\(Int.random(in: 0..<300, using: &random))"
                                let start = ContinuousClock.now
                                let value = try await chain.fetch(key)
                                let elapsed = ContinuousClock.now - start
                                slowest.withLock { $0 = max($0, elapsed) }
                                if value != Self.value(for: key) { wrong.withLock { $0 += 1 } }
                                if completed.withLock({ $0 += 1; return $0 }) == killAt { await server.kill() }
                            }
                        }
                    }
                    try await group.waitForAll()
                }
            }

            try await load(seed: 1, killAt: 700)
            #expect(!server.isRunning)
            #expect(wrong.withLock { $0 } == 0)
            let duringOutage = redisStatistics()
            #expect(duringOutage.errors > 0, "reads and writes during the outage fail, and are counted")
            #expect(duringOutage.hits > 0, "Redis served before it was killed")

            // Phase 2: still down; everything still answers, from memory, disk and the fetcher.
            let fetchedBefore = fetched.withLock { $0 }
            try await load(seed: 2, killAt: nil)
            #expect(wrong.withLock { $0 } == 0)
            #expect(redisStatistics().hits == duringOutage.hits)
            #expect(fetched.withLock { $0 } > fetchedBefore)

            // Phase 3: Redis restarts (empty); the store reconnects by itself and the tier serves again.
            try await server.start()
            try await waitUntil { (try? await redis.ping()) != nil }
            let beforeRestartLoad = redisStatistics()
            try await load(seed: 3, killAt: nil)
            #expect(wrong.withLock { $0 } == 0)
            let afterRestart = redisStatistics()
            #expect(afterRestart.hits > beforeRestartLoad.hits, "the Redis tier serves hits again")
            #expect(afterRestart.errors == beforeRestartLoad.errors, "no failures once Redis is back")
            // No fetch waited for a timeout on the dead server: one would have outlasted the time limit.
            print("redis fault: \(completed.withLock { $0 }) fetches across a kill and a restart, \(wrong.withLock { $0 }) wrong values, \(fetched.withLock { $0 }) fetcher calls, Redis \(afterRestart.hits) hits and \(afterRestart.errors) errors, slowest fetch \(slowest.withLock { $0 })")
        }
    }

    // MARK: - Helpers

    /// A configuration for a server that tests stop and start: short reconnect delays, and
    /// timeouts of an hour, far beyond the suite's time limit: an operation that waited for one
    /// fails its test by the limit, however slow the machine.
    static func configuration(_ url: String) throws -> RedisStore.Configuration {
        var configuration = try RedisStore.Configuration(url: url, keyPrefix: "fault:")
        configuration.minimumReconnectDelay = .milliseconds(10)
        configuration.maximumReconnectDelay = .milliseconds(100)
        configuration.connectTimeout = .seconds(3600)
        configuration.commandTimeout = .seconds(3600)
        return configuration
    }

    /// 3 KiB of incompressible bytes that only `key` gives.
    static func value(for key: String) -> Data {
        var random = SeededRandomNumberGenerator(seed: UInt64(truncatingIfNeeded: key.utf8.reduce(5381) { ($0 << 5) &+ $0 &+ Int($1) }))
        return Data(key.utf8) + Data((0..<3072).map { _ in UInt8.random(in: 0...255, using: &random) })
    }
}

// MARK: - Entries

extension FaultTests {
    /// The attributes are read by one script that takes a range of the stored bytes: no `GET`
    /// of the value.
    @Test func attributesAreReadWithoutTheValue() async throws {
        let scripts = Locked<[[String]]>([])
        let server = try await ScriptedRedisServer.start { name, arguments in
            switch name {
            case "PING": return .bytes("+PONG\r\n")
            case "EVAL":
                scripts.withLock { $0.append(arguments) }
                return .bytes("$3\r\nabc\r\n")
            default: return .bytes("-ERR unexpected\r\n")
            }
        }
        try await withServer(server, shutdown: { await $0.shutdown() }) { server in
            let store = RedisStore(configuration: try Self.configuration(server.url), logger: .quiet)
            #expect(try await store.attributes(forKey: "k") == EntryAttributes())
            #expect(server.commandNames == ["PING", "EVAL"])
            let arguments = scripts.withLock { $0 }.first ?? []
            #expect(arguments.first?.contains("GETRANGE") == true)
            #expect(arguments.dropFirst().elementsEqual(["1", "fault:k", "16411"]))
        }
    }

    /// An add's `SET … NX` whose connection closes before its reply is not sent again: the second
    /// sending would find the value the first one may have stored, and report it as another's.
    @Test func anAddWhoseConnectionClosesIsNotSentAgain() async throws {
        let server = try await ScriptedRedisServer.start { name, _ in
            switch name {
            case "PING": return .bytes("+PONG\r\n")
            case "SET": return .close
            default: return .bytes("-ERR unexpected\r\n")
            }
        }
        try await withServer(server, shutdown: { await $0.shutdown() }) { server in
            var configuration = try Self.configuration(server.url)
            configuration.connectionCount = 1
            let store = RedisStore(configuration: configuration, logger: .quiet)
            let error = await #expect(throws: StoreError.self) { _ = try await store.addEntry(StoreEntry(value: Data("v".utf8)), forKey: "k") }
            #expect(error?.code == .unavailable)
            #expect(server.commandNames == ["PING", "SET"])
        }
    }
}
