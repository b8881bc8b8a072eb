import Foundation
import HanekeProtocols
import HTTPCaching
import Testing

/// A stored response as one entry's attributes (`NetworkFetcher`'s entries): the prefix that decides
/// a fresh read without decoding, and every case where it must not decide.
struct EntryAttributesTests {
    let now = Date(timeIntervalSince1970: 1_767_225_600)

    func attributes(_ headers: HTTPHeaderFields, policy: HTTPCachePolicy = .fetcherDefault, request: HTTPCacheRequest? = nil) throws -> EntryAttributes {
        let request = request ?? HTTPCacheRequest(uri: "http://127.0.0.1/a")
        let stored = policy.storedResponse(HTTPResponse(status: 200, headers: headers), for: request, requestTime: now, responseTime: now)
        return try #require(policy.entryAttributes(of: stored, retention: .seconds(86_400)))
    }

    @Test func aFreshEntryIsDecidedAndItsRecordReadsBack() throws {
        let policy = HTTPCachePolicy.fetcherDefault
        let entry = try attributes(["Cache-Control": "max-age=60", "ETag": "\"v\""])
        let request = HTTPCacheRequest(uri: "http://127.0.0.1/a")
        #expect(policy.reuse(ofEntry: entry, for: request, at: now.addingTimeInterval(59)) == .fresh)
        #expect(policy.reuse(ofEntry: entry, for: request, at: now.addingTimeInterval(61)) == .validate(servableOnError: false))
        #expect(HTTPCachePolicy.storedResponse(inEntry: entry)?.headers["ETag"] == "\"v\"")
        #expect(entry.expiresAt == now.addingTimeInterval(60 + 86_400))
    }

    /// The prefix was computed under the writer's policy; another policy decides from the record.
    @Test func anotherPolicyDoesNotTrustThePrefix() throws {
        let entry = try attributes([:])   // no freshness information: fresh for 100 years by fetcherDefault
        let request = HTTPCacheRequest(uri: "http://127.0.0.1/a")
        #expect(HTTPCachePolicy.fetcherDefault.reuse(ofEntry: entry, for: request, at: now.addingTimeInterval(3_600)) == .fresh)
        #expect(HTTPCachePolicy().reuse(ofEntry: entry, for: request, at: now.addingTimeInterval(3_600)) == .validate(servableOnError: false))
    }

    @Test func varyDirectivesAndNoCacheAreDecidedFromTheRecord() throws {
        let policy = HTTPCachePolicy.fetcherDefault
        let german = HTTPCacheRequest(uri: "http://127.0.0.1/a", headers: ["Accept-Language": "de"])
        let entry = try attributes(["Cache-Control": "max-age=60", "Vary": "Accept-Language"], request: german)
        #expect(policy.reuse(ofEntry: entry, for: german, at: now) == .fresh)
        #expect(policy.reuse(ofEntry: entry, for: HTTPCacheRequest(uri: german.uri, headers: ["Accept-Language": "de, en"]), at: now) == .unusable)
        #expect(policy.reuse(ofEntry: entry, for: HTTPCacheRequest(uri: german.uri), at: now) == .unusable)
        let revalidating = HTTPCacheRequest(uri: german.uri, headers: ["Accept-Language": "de", "Cache-Control": "max-age=0"])
        #expect(policy.reuse(ofEntry: entry, for: revalidating, at: now) == .validate(servableOnError: false))
        let noCache = try attributes(["Cache-Control": "no-cache, max-age=60", "ETag": "\"n\""])
        #expect(policy.reuse(ofEntry: noCache, for: HTTPCacheRequest(uri: german.uri), at: now) == .validate(servableOnError: false))
    }

    /// Stale on arrival (an Age past its max-age): never fresh by the prefix, even on a clock that
    /// went back before the response arrived.
    @Test func aResponseStaleOnArrivalIsNeverFresh() throws {
        let policy = HTTPCachePolicy.fetcherDefault
        let entry = try attributes(["Cache-Control": "max-age=60", "Age": "100", "ETag": "\"a\""])
        let request = HTTPCacheRequest(uri: "http://127.0.0.1/a")
        #expect(policy.reuse(ofEntry: entry, for: request, at: now.addingTimeInterval(-1_000)) != .fresh)
    }

    @Test func metadataThatIsNotARecordIsNoneAndADamagedRecordIsUnusable() throws {
        let policy = HTTPCachePolicy.fetcherDefault
        let request = HTTPCacheRequest(uri: "http://127.0.0.1/a")
        #expect(policy.reuse(ofEntry: EntryAttributes(metadata: Data("app's own".utf8)), for: request, at: now) == nil)
        #expect(policy.reuse(ofEntry: EntryAttributes(), for: request, at: now) == nil)
        var damaged = try attributes(["Cache-Control": "max-age=60"]).metadata
        damaged[damaged.startIndex + 4] = 99   // another version
        #expect(policy.reuse(ofEntry: EntryAttributes(metadata: damaged), for: request, at: now) == .unusable)
        let cut = try attributes(["Cache-Control": "max-age=60"]).metadata.prefix(12)
        #expect(policy.reuse(ofEntry: EntryAttributes(metadata: Data(cut)), for: request, at: now) == .unusable)
        #expect(HTTPCachePolicy.storedResponse(inEntry: EntryAttributes(metadata: Data(cut))) == nil)
    }
}
