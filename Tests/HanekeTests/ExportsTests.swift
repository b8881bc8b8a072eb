// Only `import Haneke` (and the test library): what an app that uses the cache imports.
import Haneke
import Testing

/// `import Haneke` alone names the HTTPCaching types the cache's and the fetcher's API take: this
/// file compiles only if it does.
struct ExportsTests {
    @Test func theHeaderFieldsAndThePolicyAreNamedWithHanekeAlone() {
        var headers: HTTPHeaderFields = ["Accept-Language": "fr"]
        headers.add(name: "X-Api-Key", value: "K3y")
        let policy: HTTPCachePolicy = .fetcherDefault
        let configuration = NetworkFetcher<String>.Configuration(cachePolicy: policy, crossOriginRedirectHeaders: ["X-Api-Key"])
        let fetcher = NetworkFetcher<String>(headers: headers, configuration: configuration)
        #expect(fetcher.headers["accept-language"] == "fr")
        #expect(fetcher.headers.values(for: "x-api-key") == ["K3y"])
        #expect(fetcher.configuration.cachePolicy == HTTPCachePolicy.fetcherDefault)
        #expect(NetworkFetcher<String>.Configuration.redirectSafelistedHeaders.contains("accept-language"))
    }
}
