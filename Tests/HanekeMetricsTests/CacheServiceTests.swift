#if ServiceLifecycle
import Foundation
import Haneke
import HanekeProtocols
import HanekeServiceLifecycle
import HanekeTesting
import Logging
import ServiceLifecycle
import Testing
import TestSupport

@Suite(.timeLimit(.minutes(1)), .tags(.disk))
struct CacheServiceTests {
    let directory: TemporaryDirectory
    let clock = TestClock()

    init() throws {
        directory = try TemporaryDirectory(prefix: "service")
    }

    @Test func aGracefulShutdownWaitsForTheRefreshUnderWayBeforeTheServiceEnds() async throws {
        var format = Format<String>(name: "original")
        format.freshness = Freshness(timeToLive: .seconds(60), refreshAfter: .seconds(10))
        let cache = Cache<String>(name: "pages", directory: directory.appending("pages"), originalFormat: format, clock: clock)
        let names = Cache<String>(name: "names", directory: directory.appending("names"), clock: clock)
        _ = try await cache.fetch(key: "home") { _ in "v1" }
        clock.advance(by: .seconds(11))

        // The refresh's fetcher waits until it is let go.
        let (release, released) = AsyncStream.makeStream(of: Void.self)
        let refreshStarted = Locked(false)
        #expect(try await cache.fetch(key: "home") { _ in
            refreshStarted.withLock { $0 = true }
            for await _ in release {}
            return "v2"
        } == "v1")

        let group = ServiceGroup(
            configuration: .init(services: [CacheService(cache, names)], logger: Logger(label: "test"))
        )
        let running = Task { try await group.run() }
        await group.triggerGracefulShutdown()
        while !refreshStarted.withLock({ $0 }) { await Task.yield() }
        released.finish()
        try await running.value
        // The service ended after the refresh: its value is there.
        #expect(try await cache.fetch(key: "home") == "v2")
    }
}
#endif
