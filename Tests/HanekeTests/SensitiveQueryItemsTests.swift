import Foundation
import Haneke
import HanekeProtocols
import HanekeTesting
import Logging
import Testing
import TestSupport

/// One setting for the whole process: a name added to `SensitiveQueryItems.current` is hidden in
/// log lines (which show keys through `Logger.describe`) and in every fetcher's errors, whatever
/// the fetcher's own configuration says. The name is one no other test uses, and is removed after.
struct SensitiveQueryItemsTests {
    @Test func aNameAddedOnceIsHiddenInLogsAndInEveryFetchersErrors() async throws {
        let name = "haneke-test-partner-token"
        #expect(!SensitiveQueryItems.current.contains(name))
        SensitiveQueryItems.current.insert(name)
        defer { SensitiveQueryItems.current.remove(name) }

        #expect(Logger.describe("https://api.example.com/items?\(name)=S3cr3t&page=2") == "https://api.example.com/items?\(name)=***&page=2")

        let refusing = try RefusingPort()
        let url = try #require(URL(string: "http://127.0.0.1:\(refusing.port)/items?\(name)=S3cr3t&page=2"))
        // A fetcher whose own list does not name it.
        let fetcher = NetworkFetcher<Data>(url: url, configuration: .init(sensitiveQueryItems: ["token"]))
        let error = try #require(await #expect(throws: StoreError.self) { try await fetcher.fetch("unused") })
        withExtendedLifetime(refusing) {}
        #expect(error.message.contains("\(name)=***&page=2"), "\(error.message)")
        #expect(!"\(error)".contains("S3cr3t"), "\(error)")
    }

    @Test func theDefaultsAreTheCommonNames() {
        #expect(SensitiveQueryItems.defaults.isSuperset(of: [
            "token", "access_token", "api_key", "signature", "sig", "password", "code", "session", "sessionid", "jwt", "auth",
            "x-goog-signature", "x-amz-signature",
        ]))
        #expect(SensitiveQueryItems.current.isSuperset(of: SensitiveQueryItems.defaults))
        #expect(NetworkFetcher<Data>.Configuration.defaultSensitiveQueryItems == SensitiveQueryItems.defaults)
    }
}
