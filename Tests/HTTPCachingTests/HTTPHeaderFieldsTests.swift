import Foundation
import HTTPCaching
import Testing

struct HTTPHeaderFieldsTests {
    @Test func namesAreComparedWithoutRegardToCase() {
        let headers: HTTPHeaderFields = ["Cache-Control": "max-age=60", "ETag": "\"v1\""]
        #expect(headers["cache-control"] == "max-age=60")
        #expect(headers["ETAG"] == "\"v1\"")
        #expect(headers["Age"] == nil)
        #expect(!HTTPHeaderFields.namesMatch("a-b", "a_b"))
        #expect(!HTTPHeaderFields.namesMatch("@", "`"))
    }

    @Test func repeatedFieldsCombineInOrder() {
        var headers = HTTPHeaderFields([("Vary", "Accept"), ("X", "1"), ("vary", "Accept-Language")])
        #expect(headers["Vary"] == "Accept, Accept-Language")
        #expect(headers.values(for: "VARY") == ["Accept", "Accept-Language"])
        headers["Vary"] = "Origin"
        #expect(headers.fields.map(\.name) == ["Vary", "X"])
        #expect(headers["vary"] == "Origin")
        headers["Vary"] = nil
        #expect(!headers.contains("Vary"))
    }

    @Test func listMembersKeepQuotedCommasAndDropEmptyMembers() {
        let headers = HTTPHeaderFields([("If-None-Match", "\"a,b\" , W/\"c\""), ("If-None-Match", " , \"d\"")])
        #expect(headers.listMembers(for: "if-none-match") == ["\"a,b\"", "W/\"c\"", "\"d\""])
    }
}

struct HTTPDateTests {
    @Test(arguments: [
        "Sun, 06 Nov 1994 08:49:37 GMT",
        "Sunday, 06-Nov-94 08:49:37 GMT",
        "Sun Nov  6 08:49:37 1994",
    ])
    func theThreeFormsParseToOneInstant(text: String) {
        #expect(HTTPDate.parse(text)?.timeIntervalSince1970 == 784_111_777)
    }

    @Test(arguments: [
        "Thu, 18 Aug 2050 02:01:18 UTC",     // not GMT
        "Thu, 18 Aug 2050 02:01:18 +0000",   // another zone
        "Thu, 18 Aug 50 02:01:18 GMT",       // two-digit year in the preferred form
        "Thu 18 Aug 2050 02:01:18 GMT",      // no comma
        "Thu, 18  Aug  2050 02:01:18 GMT",   // several spaces
        "Thu, 18-Aug-2050 02:01:18 GMT",     // dashes
        "Thu, 18 Aug 2050 02.01.18 GMT",     // periods
        "Thu, 18 Aug 2050 2:01:18 GMT",      // one-digit hour
        "Thu, 31 Feb 2050 02:01:18 GMT",     // no such day
        "0", "", "yesterday",
    ])
    func invalidDatesAreRefused(text: String) {
        #expect(HTTPDate.parse(text) == nil)
    }

    @Test func formattingWritesThePreferredFormAndRoundTrips() throws {
        let instant = try #require(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT"))
        #expect(HTTPDate.format(instant) == "Sun, 06 Nov 1994 08:49:37 GMT")
        for seconds in stride(from: -86_400.0 * 400, to: 86_400.0 * 365 * 200, by: 86_400.0 * 37 + 3_671) {
            let date = HTTPDate.format(.init(timeIntervalSince1970: seconds))
            #expect(HTTPDate.parse(date)?.timeIntervalSince1970 == seconds, "\(date)")
        }
    }
}

struct CacheControlTests {
    @Test func directivesAreCaseInsensitiveAndTakeTokensOrQuotedStrings() {
        let directives = CacheControl(parsing: "No-Store, MAX-AGE=\"60\", private=\"Set-Cookie, X\"")
        #expect(directives.noStore)
        #expect(directives.maxAge == 60)
        #expect(directives.fieldNames("private") == ["Set-Cookie", "X"])
    }

    @Test(arguments: [
        ("max-age=003600", 3_600),
        ("max-age=2147483648", 2_147_483_648),
        ("max-age=99999999999999999999999", 2_147_483_648),
    ])
    func deltaSecondsSaturate(value: String, seconds: Int) {
        #expect(CacheControl(parsing: value).maxAge == seconds)
    }

    @Test(arguments: ["max-age=-1", "max-age='3600'", "max-age=3600.0", "max-age=a100", "max-age=100a", "max-age="])
    func invalidDeltaSecondsArePresentButHaveNoValue(value: String) {
        let directives = CacheControl(parsing: value)
        #expect(directives.contains("max-age"))
        #expect(directives.maxAge == nil)
    }

    @Test func aMaxAgeInsideAQuotedStringIsNotADirective() {
        #expect(CacheControl(parsing: "extension=\"max-age=3600\"").maxAge == nil)
        #expect(CacheControl(parsing: "max-age=1, extension=\"max-age=3600\"").maxAge == 1)
    }

    @Test func theFirstOfRepeatedDirectivesCountsAcrossFields() {
        let headers = HTTPHeaderFields([("Cache-Control", "max-age=1"), ("Cache-Control", "max-age=3600")])
        #expect(CacheControl(headers).maxAge == 1)
    }

    @Test func maxStaleWithoutAValueAcceptsAnyStaleness() {
        #expect(CacheControl(parsing: "max-stale").maxStale == .max)
        #expect(CacheControl(parsing: "max-stale=5").maxStale == 5)
        #expect(CacheControl(parsing: "no-cache").maxStale == nil)
    }
}
