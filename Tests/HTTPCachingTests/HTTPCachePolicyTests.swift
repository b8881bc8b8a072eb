import Foundation
import HTTPCaching
import Testing

/// The rules of RFC 9111 and RFC 5861, section by section, as decisions on fixed instants.
struct HTTPCachePolicyTests {
    static let origin = Date(timeIntervalSince1970: 1_800_000_000)
    static let uri = "http://127.0.0.1:8080/resource"
    let privateCache = HTTPCachePolicy(kind: .private)
    let sharedCache = HTTPCachePolicy(kind: .shared)

    /// A response that arrived at `origin` for a request sent then, dated then unless it says otherwise.
    func stored(
        _ fields: [(String, String)], status: Int = 200, request: [(String, String)] = [],
        policy: HTTPCachePolicy = HTTPCachePolicy(), delay: Double = 0
    ) -> StoredHTTPResponse {
        var headers = HTTPHeaderFields(fields)
        if !headers.contains("Date") { headers.add(name: "Date", value: HTTPDate.format(Self.origin)) }
        return policy.storedResponse(
            HTTPResponse(status: status, headers: headers),
            for: HTTPCacheRequest(uri: Self.uri, headers: HTTPHeaderFields(request)),
            requestTime: Self.origin, responseTime: Self.origin.addingTimeInterval(delay)
        )
    }

    func request(_ fields: [(String, String)] = [], method: String = "GET") -> HTTPCacheRequest {
        HTTPCacheRequest(method: method, uri: Self.uri, headers: HTTPHeaderFields(fields))
    }

    func at(_ seconds: Double) -> Date { Self.origin.addingTimeInterval(seconds) }

    func isStored(_ fields: [(String, String)], status: Int = 200, request: HTTPCacheRequest? = nil, policy: HTTPCachePolicy) -> Bool {
        policy.storability(of: HTTPResponse(status: status, headers: HTTPHeaderFields(fields)), for: request ?? self.request()) == .store
    }

    // MARK: §3 Storing

    @Test func onlyFinalResponsesToGETWithALifetimeOrAHeuristicallyCacheableStatusAreStored() {
        #expect(isStored([("Cache-Control", "max-age=60")], policy: privateCache))
        #expect(isStored([], policy: privateCache))                                        // 200: heuristically cacheable
        #expect(isStored([], status: 404, policy: privateCache))
        #expect(!isStored([], status: 302, policy: privateCache))                          // neither
        #expect(isStored([("Expires", "0")], status: 302, policy: privateCache))           // an Expires counts, even invalid
        #expect(!isStored([("Cache-Control", "max-age=60")], request: request(method: "POST"), policy: privateCache))
        #expect(!isStored([("Cache-Control", "max-age=60")], request: request(method: "HEAD"), policy: privateCache))
        #expect(!isStored([("Cache-Control", "max-age=60")], status: 206, policy: privateCache))
        #expect(!isStored([("Cache-Control", "max-age=60")], status: 304, policy: privateCache))
        #expect(!isStored([("Cache-Control", "max-age=60")], status: 103, policy: privateCache))
    }

    @Test func noStoreInTheResponseOrTheRequestPreventsStoring() {
        #expect(!isStored([("Cache-Control", "nO-StOrE, max-age=60"), ("Expires", HTTPDate.format(at(60)))], policy: privateCache))
        #expect(!isStored([("Cache-Control", "max-age=60")], request: request([("Cache-Control", "no-store")]), policy: privateCache))
        #expect(isStored([("Cache-Control", "no-cache")], policy: privateCache))            // stored, revalidated on every use
    }

    @Test func mustUnderstandStoresOnlyUnderstoodStatusesAndOverridesNoStore() {
        #expect(isStored([("Cache-Control", "no-store, must-understand, max-age=60")], status: 200, policy: privateCache))
        #expect(!isStored([("Cache-Control", "no-store, must-understand, max-age=60")], status: 299, policy: privateCache))
    }

    @Test func aSharedCacheRefusesPrivateResponsesAndAuthorizedRequestsUnlessAllowed() {
        #expect(isStored([("Cache-Control", "private, max-age=60")], policy: privateCache))
        #expect(!isStored([("Cache-Control", "private, max-age=60")], policy: sharedCache))
        let authorized = request([("Authorization", "Bearer x")])
        #expect(!isStored([("Cache-Control", "max-age=60")], request: authorized, policy: sharedCache))
        #expect(isStored([("Cache-Control", "max-age=60")], request: authorized, policy: privateCache))
        for allowing in ["public, max-age=60", "s-maxage=60", "must-revalidate, max-age=60"] {
            #expect(isStored([("Cache-Control", allowing)], request: authorized, policy: sharedCache), "\(allowing)")
        }
    }

    @Test func varyStarIsNeverStored() {
        #expect(!isStored([("Cache-Control", "max-age=60"), ("Vary", "Foo, *")], policy: privateCache))
        #expect(!isStored([("Cache-Control", "max-age=60"), ("Vary", ", *")], policy: privateCache))
    }

    @Test func hopByHopFieldsAndThoseConnectionNamesAreNotStoredAndADateIsAdded() {
        let response = HTTPResponse(headers: [
            "Connection": "close, X-Per-Hop", "Keep-Alive": "timeout=5", "Transfer-Encoding": "chunked",
            "Proxy-Authenticate": "Basic", "Upgrade": "h2c", "TE": "trailers", "X-Per-Hop": "1",
            "Set-Cookie": "a=b", "Content-Length": "10", "ETag": "\"x\"",
        ])
        let stored = privateCache.storedResponse(response, for: request(), requestTime: Self.origin, responseTime: at(1))
        #expect(stored.headers.fields.map(\.name) == ["Set-Cookie", "Content-Length", "ETag", "Date"])
        #expect(stored.headers["Date"] == HTTPDate.format(at(1)))
    }

    // MARK: §4.2 Freshness

    @Test func aSharedCachePrefersSMaxAgeAndAPrivateOneIgnoresIt() {
        let fields = [("Cache-Control", "max-age=3600, s-maxage=60")]
        #expect(sharedCache.freshnessLifetime(of: stored(fields, policy: sharedCache)) == 60)
        #expect(privateCache.freshnessLifetime(of: stored(fields)) == 3_600)
        let split = [("Cache-Control", "s-maxage=3600"), ("Cache-Control", "max-age=60")]
        #expect(privateCache.freshnessLifetime(of: stored(split)) == 60)
    }

    @Test func expiresCountsFromDateAndAnInvalidOneIsThePast() {
        let dated = [("Date", HTTPDate.format(at(-100))), ("Expires", HTTPDate.format(at(500)))]
        #expect(privateCache.freshnessLifetime(of: stored(dated)) == 600)
        #expect(privateCache.freshnessLifetime(of: stored([("Expires", "0")])) == 0)
        let twice = [("Expires", HTTPDate.format(at(500))), ("Expires", HTTPDate.format(at(500)))]
        #expect(privateCache.freshnessLifetime(of: stored(twice)) == 0)
        #expect(privateCache.freshnessLifetime(of: stored([("Cache-Control", "max-age=0"), ("Expires", HTTPDate.format(at(500)))])) == 0)
        #expect(privateCache.freshnessLifetime(of: stored([("Cache-Control", "max-age=-1"), ("Expires", HTTPDate.format(at(500)))])) == 0)
    }

    @Test func heuristicFreshnessIsATenthOfTheTimeSinceLastModifiedForCacheableStatusesOnly() {
        let modified = [("Last-Modified", HTTPDate.format(at(-10_000)))]
        #expect(privateCache.freshnessLifetime(of: stored(modified)) == 1_000)
        for status in [201, 202, 403, 502, 503, 504, 599] {
            #expect(privateCache.freshnessLifetime(of: stored(modified, status: status)) == 0, "\(status)")
        }
        #expect(privateCache.freshnessLifetime(of: stored(modified + [("Cache-Control", "public")], status: 599)) == 1_000)
        let ancient = [("Last-Modified", HTTPDate.format(at(-86_400 * 365 * 10)))]
        #expect(privateCache.freshnessLifetime(of: stored(ancient)) == 86_400)
    }

    @Test func ageCountsTheAgeFieldTheDelayTheApparentAgeAndTheTimeStored() {
        let response = stored([("Cache-Control", "max-age=100"), ("Age", "30")], delay: 2)
        // corrected initial age = 30 + 2 (response delay); then 10 s resident.
        #expect(privateCache.currentAge(of: response, at: at(12)) == 42)
        let late = stored([("Cache-Control", "max-age=100"), ("Date", HTTPDate.format(at(-50)))])
        #expect(privateCache.currentAge(of: late, at: at(0)) == 50)   // apparent age
    }

    @Test(arguments: [
        ([("Age", "abc")], 0), ([("Age", "-10")], 0), ([("Age", "1.5")], 0),
        ([("Age", "2147483649")], 2_147_483_648), ([("Age", "7200, 0")], 7_200), ([("Age", "0, 7200")], 0),
        ([("Age", "7200"), ("Age", "0")], 7_200), ([("Age", "0"), ("Age", "7200")], 0),
    ] as [([(String, String)], Double)])
    func theFirstAgeMemberCountsAndAnInvalidOneIsIgnored(fields: [(String, String)], age: Double) {
        #expect(privateCache.currentAge(of: stored(fields), at: Self.origin) == age)
    }

    // MARK: §4 Reuse

    @Test func aFreshResponseIsServedAndAStaleOneValidated() {
        let response = stored([("Cache-Control", "max-age=60")])
        #expect(privateCache.reuse(of: response, for: request(), at: at(59)) == .fresh)
        #expect(privateCache.reuse(of: response, for: request(), at: at(60)) == .validate(servableOnError: false))
        let immutable = stored([("Cache-Control", "max-age=60, immutable")])
        #expect(privateCache.reuse(of: immutable, for: request(), at: at(61)) == .validate(servableOnError: false))
        let aged = stored([("Cache-Control", "max-age=60"), ("Age", "61")])
        #expect(privateCache.reuse(of: aged, for: request(), at: at(0)) == .validate(servableOnError: false))
    }

    @Test func noCacheAlwaysValidates() {
        for value in ["no-cache, max-age=3600", "No-CaChE, max-age=3600", "no-cache=\"Set-Cookie\", max-age=3600"] {
            let response = stored([("Cache-Control", value), ("Expires", HTTPDate.format(at(3_600)))])
            #expect(privateCache.reuse(of: response, for: request(), at: at(1)) == .validate(servableOnError: false), "\(value)")
        }
    }

    @Test func requestDirectivesAskForFresherOrAcceptStaler() {
        let response = stored([("Cache-Control", "max-age=100")])
        #expect(privateCache.reuse(of: response, for: request([("Cache-Control", "max-age=10")]), at: at(20)) == .validate(servableOnError: false))
        #expect(privateCache.reuse(of: response, for: request([("Cache-Control", "min-fresh=90")]), at: at(20)) == .validate(servableOnError: false))
        #expect(privateCache.reuse(of: response, for: request([("Cache-Control", "no-cache")]), at: at(1)) == .validate(servableOnError: false))
        #expect(privateCache.reuse(of: response, for: request([("Pragma", "no-cache")]), at: at(1)) == .validate(servableOnError: false))
        #expect(privateCache.reuse(of: response, for: request([("Pragma", "no-cache"), ("Cache-Control", "max-age=1000")]), at: at(1)) == .fresh)
        #expect(privateCache.reuse(of: response, for: request([("Cache-Control", "max-stale=50")]), at: at(150)) == .staleAccepted)
        #expect(privateCache.reuse(of: response, for: request([("Cache-Control", "max-stale")]), at: at(10_000)) == .staleAccepted)
        #expect(privateCache.reuse(of: response, for: request([("Cache-Control", "max-stale=50")]), at: at(151)) == .validate(servableOnError: false))
    }

    @Test func staleWhileRevalidateServesWithinItsWindow() {
        let response = stored([("Cache-Control", "max-age=1, stale-while-revalidate=4")])
        #expect(privateCache.reuse(of: response, for: request(), at: at(3)) == .staleWhileRevalidate)
        #expect(privateCache.reuse(of: response, for: request(), at: at(5)) == .staleWhileRevalidate)
        #expect(privateCache.reuse(of: response, for: request(), at: at(5.5)) == .validate(servableOnError: false))
    }

    @Test func staleIfErrorAllowsServingStaleWhenValidationFailsWithinItsWindow() {
        let response = stored([("Cache-Control", "max-age=1, stale-if-error=10")])
        #expect(privateCache.reuse(of: response, for: request(), at: at(5)) == .validate(servableOnError: true))
        #expect(privateCache.reuse(of: response, for: request(), at: at(12)) == .validate(servableOnError: false))
        let asked = stored([("Cache-Control", "max-age=1")])
        #expect(privateCache.reuse(of: asked, for: request([("Cache-Control", "stale-if-error=60")]), at: at(30)) == .validate(servableOnError: true))
    }

    @Test(arguments: ["must-revalidate", "no-cache", "proxy-revalidate", "s-maxage=1"])
    func directivesThatForbidServingStale(directive: String) {
        let response = stored([("Cache-Control", "max-age=1, stale-while-revalidate=100, stale-if-error=100, \(directive)")], policy: sharedCache)
        #expect(sharedCache.reuse(of: response, for: request([("Cache-Control", "max-stale")]), at: at(3)) == .validate(servableOnError: false))
    }

    @Test func aDisconnectedCacheMayServeStaleUnlessADirectiveForbidsIt() {
        // A shared cache does so only where its operator allows it.
        #expect(!sharedCache.mayServeStaleWhenDisconnected(stored([("Cache-Control", "max-age=1")], policy: sharedCache)))
        let sharedCache = HTTPCachePolicy(kind: .shared, servesStaleWhenDisconnected: true)
        #expect(sharedCache.mayServeStaleWhenDisconnected(stored([("Cache-Control", "max-age=1")], policy: sharedCache)))
        for forbidding in ["must-revalidate", "no-cache", "proxy-revalidate", "s-maxage=1"] {
            #expect(!sharedCache.mayServeStaleWhenDisconnected(stored([("Cache-Control", "max-age=1, \(forbidding)")], policy: sharedCache)), "\(forbidding)")
        }
        #expect(privateCache.mayServeStaleWhenDisconnected(stored([("Cache-Control", "max-age=1, proxy-revalidate")])))
        let strict = HTTPCachePolicy(kind: .private, servesStaleWhenDisconnected: false)
        #expect(!strict.mayServeStaleWhenDisconnected(stored([("Cache-Control", "max-age=1")])))
    }

    @Test func aSharedCacheRefusesWhatNginxAndVarnishRefuseUnlessRelaxed() {
        let cookie = request([("Cookie", "sid=a")])
        let lastModified = HTTPResponse(headers: ["Last-Modified": "Mon, 01 Jan 2024 00:00:00 GMT"])
        #expect(sharedCache.storability(of: lastModified, for: cookie) != .store)
        #expect(sharedCache.storability(of: lastModified, for: request()) == .store)
        #expect(sharedCache.storability(of: HTTPResponse(headers: ["Cache-Control": "max-age=60"]), for: cookie) == .store)
        #expect(sharedCache.storability(of: HTTPResponse(headers: ["Cache-Control": "max-age=60", "Set-Cookie": "a=b"]), for: request()) != .store)
        let relaxed = HTTPCachePolicy(kind: .shared, relaxations: .all)
        #expect(relaxed.storability(of: lastModified, for: cookie) == .store)
        #expect(relaxed.storability(of: HTTPResponse(headers: ["Cache-Control": "max-age=60", "Set-Cookie": "a=b"]), for: request()) == .store)
        #expect(privateCache.storability(of: lastModified, for: cookie) == .store)
        // A client's staleness is the private cache's and the relaxed shared cache's only.
        let response = stored([("Cache-Control", "max-age=1")], policy: sharedCache)
        #expect(sharedCache.reuse(of: response, for: request([("Cache-Control", "max-stale")]), at: at(10)) == .validate(servableOnError: false))
        #expect(sharedCache.reuse(of: response, for: request([("Cache-Control", "stale-if-error=60")]), at: at(10)) == .validate(servableOnError: false))
        #expect(relaxed.reuse(of: response, for: request([("Cache-Control", "max-stale")]), at: at(10)) == .staleAccepted)
        // A 304 never brings its Set-Cookie into a shared entry.
        let updated = sharedCache.updating(response, with: ["Set-Cookie": "sid=x", "X-New": "1"], requestTime: at(10), responseTime: at(10))
        #expect(updated.headers["Set-Cookie"] == nil)
        #expect(updated.headers["X-New"] == "1")
        #expect(privateCache.updating(response, with: ["Set-Cookie": "sid=x"], requestTime: at(10), responseTime: at(10)).headers["Set-Cookie"] == "sid=x")
        // A fresh response a client's refresh validated stays unless relaxed.
        #expect(!sharedCache.mayBeReplaced(response, at: at(0)))
        #expect(sharedCache.mayBeReplaced(response, at: at(10)))
        #expect(relaxed.mayBeReplaced(response, at: at(0)))
    }

    @Test func proxyRevalidateBindsOnlySharedCaches() {
        let response = stored([("Cache-Control", "max-age=1, stale-while-revalidate=100, proxy-revalidate")])
        #expect(privateCache.reuse(of: response, for: request(), at: at(3)) == .staleWhileRevalidate)
    }

    @Test func varyMatchesOnTheNamedRequestFieldsOnly() {
        let response = stored([("Cache-Control", "max-age=60"), ("Vary", "Accept-Language, Foo")], request: [("Accept-Language", "de"), ("Other", "1")])
        #expect(privateCache.reuse(of: response, for: request([("accept-language", "de"), ("Other", "2")]), at: at(1)) == .fresh)
        #expect(privateCache.reuse(of: response, for: request([("Accept-Language", "en")]), at: at(1)) == .unusable)
        #expect(privateCache.reuse(of: response, for: request([("Accept-Language", "de"), ("Foo", "x")]), at: at(1)) == .unusable)
        #expect(privateCache.reuse(of: response, for: request(), at: at(1)) == .unusable)
        let listed = stored([("Cache-Control", "max-age=60"), ("Vary", "Accept")], request: [("Accept", "a,b")])
        #expect(privateCache.reuse(of: listed, for: request([("Accept", "a, b")]), at: at(1)) == .fresh)
    }

    @Test func servedResponsesCarryTheirAgeAndKeepTheirDate() {
        let response = stored([("Cache-Control", "max-age=100000"), ("Age", "30")])
        let served = privateCache.servedHeaders(of: response, at: at(3))
        #expect(served["Age"] == "33")
        #expect(served["Date"] == HTTPDate.format(Self.origin))
    }

    // MARK: §4.3 Validation

    @Test func validatorsBecomeConditionalFields() {
        let response = stored([("ETag", "\"v1\""), ("Last-Modified", HTTPDate.format(at(-10)))])
        #expect(privateCache.validators(of: response) == ["If-None-Match": "\"v1\"", "If-Modified-Since": HTTPDate.format(at(-10))])
        #expect(privateCache.validators(of: stored([("Cache-Control", "max-age=1")])) == nil)
    }

    @Test func aNotModifiedUpdatesTheStoredFieldsButNotContentLengthAndRestartsTheAge() {
        let response = stored([("Cache-Control", "max-age=2"), ("ETag", "\"a\""), ("Test-Header", "old"), ("Content-Length", "36"), ("Keep", "me")])
        let notModified: HTTPHeaderFields = ["Cache-Control": "max-age=3600", "ETag": "\"a\"", "Test-Header": "new", "Content-Length": "10", "Connection": "close"]
        #expect(privateCache.notModified(notModified, matches: response))
        #expect(!privateCache.notModified(["ETag": "\"b\""], matches: response))
        let updated = privateCache.updating(response, with: notModified, requestTime: at(10), responseTime: at(10))
        #expect(updated.headers["Test-Header"] == "new")
        #expect(updated.headers["Cache-Control"] == "max-age=3600")
        #expect(updated.headers["Content-Length"] == "36")
        #expect(updated.headers["Keep"] == "me")
        #expect(!updated.headers.contains("Connection"))
        #expect(privateCache.reuse(of: updated, for: request(), at: at(11)) == .fresh)
    }

    @Test func aNotModifiedWithoutAValidatorAnswersForTheResponseItValidated() {
        #expect(privateCache.notModified(["Cache-Control": "max-age=10"], matches: stored([("ETag", "\"a\"")])))
        #expect(!privateCache.notModified(["Last-Modified": HTTPDate.format(at(-5))], matches: stored([("Last-Modified", HTTPDate.format(at(-9)))])))
    }

    @Test func aNotModifiedWithoutAnAgeStartsTheAgeAgain() {
        let response = stored([("Cache-Control", "max-age=60"), ("Age", "50"), ("ETag", "\"a\"")])
        let updated = privateCache.updating(response, with: ["ETag": "\"a\""], requestTime: at(100), responseTime: at(100))
        #expect(updated.headers["Age"] == nil)
        #expect(privateCache.reuse(of: updated, for: request(), at: at(150)) == .fresh)
    }

    @Test func preconditionsHoldOnlyForStoredSuccesses() {
        let missing = stored([("ETag", "\"gone\""), ("Cache-Control", "max-age=60")], status: 404)
        #expect(!privateCache.requestIsNotModified(request([("If-None-Match", "*")]), by: missing))
    }

    @Test func aRequestsOwnConditionsAreAnsweredFromTheStoredResponse() {
        let response = stored([("ETag", "W/\"abc\""), ("Last-Modified", HTTPDate.format(at(-5_000)))])
        #expect(privateCache.requestIsNotModified(request([("If-None-Match", "\"x\", \"abc\"")]), by: response))
        #expect(privateCache.requestIsNotModified(request([("If-None-Match", "*")]), by: response))
        // If-None-Match wins over If-Modified-Since.
        #expect(!privateCache.requestIsNotModified(request([("If-None-Match", "\"x\""), ("If-Modified-Since", HTTPDate.format(at(0)))]), by: response))
        #expect(privateCache.requestIsNotModified(request([("If-Modified-Since", HTTPDate.format(at(-1_000)))]), by: response))
        #expect(!privateCache.requestIsNotModified(request([("If-Modified-Since", HTTPDate.format(at(-10_000)))]), by: response))
        let headers = HTTPCachePolicy.notModifiedHeaders(from: ["ETag": "\"a\"", "Content-Type": "text/plain", "Cache-Control": "max-age=1"])
        #expect(headers == ["ETag": "\"a\"", "Cache-Control": "max-age=1"])
    }

    // MARK: §4.4 Invalidation

    @Test func unsafeMethodsInvalidateTheTargetAndSameOriginLocations() {
        let fields: HTTPHeaderFields = ["Location": "/other", "Content-Location": "http://elsewhere.example/x"]
        for method in ["POST", "PUT", "DELETE", "M-SEARCH"] {
            #expect(privateCache.invalidatedURIs(request: request(method: method), status: 201, headers: fields) == [Self.uri, "http://127.0.0.1:8080/other"])
        }
        #expect(privateCache.invalidatedURIs(request: request(method: "GET"), status: 200, headers: fields).isEmpty)
        #expect(privateCache.invalidatedURIs(request: request(method: "POST"), status: 500, headers: fields).isEmpty)
    }

    // MARK: RFC 9213 CDN-Cache-Control

    @Test func aSharedCacheFollowsAValidCDNCacheControlInsteadOfCacheControl() {
        let targeted = [("CDN-Cache-Control", "max-age=10000"), ("Cache-Control", "no-store")]
        #expect(isStored(targeted, policy: sharedCache))
        #expect(!isStored(targeted, policy: privateCache))
        #expect(sharedCache.freshnessLifetime(of: stored([("CDN-Cache-Control", "max-age=10"), ("Cache-Control", "max-age=3600")], policy: sharedCache)) == 10)
        #expect(!isStored([("CDN-Cache-Control", "private"), ("Cache-Control", "max-age=3600")], policy: sharedCache))
        for invalid in ["max-age=10000, &&&&&", "max-age=\"10000\""] {
            #expect(!isStored([("CDN-Cache-Control", invalid), ("Cache-Control", "no-store")], policy: sharedCache), "\(invalid)")
        }
    }
}
