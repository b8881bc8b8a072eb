import Foundation
@testable import Haneke
import HanekeProtocols
import HanekeTesting
import Testing
import TestSupport

@Suite(.timeLimit(.minutes(1)), .tags(.disk))
struct CacheFreshnessTests {
    let directory: TemporaryDirectory
    let clock = TestClock()

    init() throws {
        directory = try TemporaryDirectory(prefix: "cache-freshness")
    }

    func makeCache(originalFormat: Format<String>? = nil) -> Cache<String> {
        Cache<String>(name: "fresh", directory: directory.appending("fresh"), originalFormat: originalFormat, clock: clock)
    }

    @Test func aFormatsTimeToLiveHoldsInMemoryAndOnDiskAcrossARestart() async throws {
        var format = Format<String>(name: "original")
        format.timeToLive = .seconds(60)
        let cache = makeCache(originalFormat: format)
        try await cache.set("value", forKey: "k")
        clock.advance(by: .seconds(30))
        #expect(try await cache.fetch(key: "k") == "value")
        try await cache.flush()

        // A new process: memory is empty, the disk still has the value and its expiry.
        let restarted = makeCache(originalFormat: format)
        #expect(try await restarted.fetch(key: "k") == "value")
        #expect(try restarted.layerStatistics().first { $0.name == "disk" }?.statistics.hits == 1)
        clock.advance(by: .seconds(31))
        await #expect(throws: StoreError.self) { try await restarted.fetch(key: "k") }
        let again = makeCache(originalFormat: format)
        await #expect(throws: StoreError.self) { try await again.fetch(key: "k") }
    }

    @Test func aValueMayHaveALifetimeOfItsOwn() async throws {
        let cache = makeCache()
        try await cache.set("token", forKey: "short", timeToLive: .seconds(300))
        try await cache.set("page", forKey: "long")
        clock.advance(by: .seconds(299))
        #expect(try await cache.fetch(key: "short") == "token")
        cache.removeAllFromMemory()
        clock.advance(by: .seconds(2))
        await #expect(throws: StoreError.self) { try await cache.fetch(key: "short") }
        #expect(try await cache.fetch(key: "long") == "page")
    }

    @Test func aFormatWhoseSettingsChangedServesNothingMadeUnderTheOldOnes() async throws {
        func avatar(size: Int) -> Format<String> {
            var format = Format<String>(name: "avatar") { "\(size)px:" + $0 }
            format.version = "size \(size)"
            return format
        }
        let cache = makeCache()
        cache.addFormat(avatar(size: 96))
        #expect(try await cache.fetch(key: "me", formatName: "avatar") { _ in "photo" } == "96px:photo")
        try await cache.flush()

        let restarted = makeCache()
        restarted.addFormat(avatar(size: 48))
        await #expect(throws: StoreError.self) { try await restarted.fetch(key: "me", formatName: "avatar") }
        #expect(try await restarted.fetch(key: "me", formatName: "avatar") { _ in "photo" } == "48px:photo")
        #expect(FormatIdentity.folderName(of: avatar(size: 96)) != FormatIdentity.folderName(of: avatar(size: 48)))
        #expect(FormatIdentity.folderName(of: Format<String>(name: "avatar")) == "avatar")
    }

    @Test func aFormatRefreshesInTheBackgroundAndServesStaleOnError() async throws {
        var format = Format<String>(name: "original")
        format.freshness = Freshness(timeToLive: .seconds(60), refreshAfter: .seconds(30), serveStaleFor: .seconds(600))
        let cache = makeCache(originalFormat: format)
        let calls = Locked(0)
        let failing = Locked(false)
        let fetcher = ClosureFetcher<String, String> { key in
            let call = calls.withLock { $0 += 1; return $0 }
            if failing.withLock({ $0 }) { throw StoreError(.unavailable, "down") }
            return "\(key)#\(call)"
        }
        #expect(try await cache.fetch(key: "k", fetcher: fetcher) == "k#1")
        clock.advance(by: .seconds(31))
        #expect(try await cache.fetch(key: "k", fetcher: fetcher) == "k#1")   // served at once, refreshed behind
        try await cache.waitForRefreshes()
        #expect(try await cache.fetch(key: "k", fetcher: fetcher) == "k#2")
        failing.withLock { $0 = true }
        clock.advance(by: .seconds(120))
        #expect(try await cache.fetch(key: "k", fetcher: fetcher) == "k#2")   // expired, the source is down
        clock.advance(by: .seconds(600))
        await #expect(throws: StoreError.self) { try await cache.fetch(key: "k", fetcher: fetcher) }
    }
}
