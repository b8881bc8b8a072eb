import HanekeProtocols
import NIOCore
@testable import RedisStore
import Testing

struct ConfigurationTests {
    @Test func theDefaultsAreTheDocumentedOnes() {
        let configuration = RedisStore.Configuration()
        #expect(configuration.host == "127.0.0.1")
        #expect(configuration.port == 6379)
        #expect(configuration.database == 0)
        #expect(configuration.keyPrefix == "haneke:")
        #expect(configuration.password == nil && configuration.username == nil)
        #expect(configuration.timeToLive == nil)
        #expect(configuration.connectionCount == 4)
        #expect(configuration.connectTimeout == .seconds(1))
        #expect(configuration.commandTimeout == .seconds(2))
        #expect(configuration.minimumReconnectDelay == .milliseconds(100))
        #expect(configuration.maximumReconnectDelay == .seconds(5))
        #expect(configuration.scanCount == 1000)
        #expect(configuration.maximumScanRounds == 100_000)
        #expect(configuration.tls == nil)
    }

    /// `rediss://` is TLS with full verification against the system's authorities; `redis://` none.
    @Test func aRedissURLTurnsOnTLSWithFullVerification() throws {
        let secure = try RedisStore.Configuration(url: "rediss://alice:topsecret@cache.internal:6380/1")
        #expect(secure.tls == RedisStore.Configuration.TLS())
        #expect(secure.tls?.verification == .full)
        #expect(secure.tls?.certificateAuthorityFile == nil && secure.tls?.certificateFile == nil && secure.tls?.serverName == nil)
        #expect(secure.host == "cache.internal" && secure.port == 6380 && secure.database == 1 && secure.username == "alice")
        #expect(secure.url == "rediss://alice:***@cache.internal:6380/1")
        #expect(try RedisStore.Configuration(url: "REDISS://[::1]").tls != nil)
        #expect(try RedisStore.Configuration(url: "redis://cache.internal").tls == nil)
    }

    struct Parsed: Sendable, CustomTestStringConvertible {
        var url: String
        var host: String
        var port: Int
        var username: String?
        var password: String?
        var database: Int
        var testDescription: String { url }
    }

    @Test(arguments: [
        Parsed(url: "redis://cache.internal", host: "cache.internal", port: 6379, database: 0),
        Parsed(url: "redis://127.0.0.1:6380", host: "127.0.0.1", port: 6380, database: 0),
        Parsed(url: "redis://127.0.0.1:6380/", host: "127.0.0.1", port: 6380, database: 0),
        Parsed(url: "REDIS://localhost/3", host: "localhost", port: 6379, database: 3),
        Parsed(url: "redis://:s3cret@10.0.0.5:7000/2", host: "10.0.0.5", port: 7000, password: "s3cret", database: 2),
        Parsed(url: "redis://alice:wonder%40land%3A1@host/15", host: "host", port: 6379, username: "alice", password: "wonder@land:1", database: 15),
        Parsed(url: "redis://a%3Ab:p@ss@host", host: "host", port: 6379, username: "a:b", password: "p@ss", database: 0),
        Parsed(url: "redis://:pa/ss@host:7000/2", host: "host", port: 7000, password: "pa/ss", database: 2),
        Parsed(url: "redis://[::1]:6390/1", host: "::1", port: 6390, database: 1),
        Parsed(url: "redis://[::1]", host: "::1", port: 6379, database: 0),
    ])
    func parsesURLs(_ expected: Parsed) throws {
        let configuration = try RedisStore.Configuration(url: expected.url, keyPrefix: "p:")
        #expect(configuration.host == expected.host)
        #expect(configuration.port == expected.port)
        #expect(configuration.username == expected.username)
        #expect(configuration.password == expected.password)
        #expect(configuration.database == expected.database)
        #expect(configuration.keyPrefix == "p:")
    }

    @Test(arguments: [
        ("localhost:6379", "expected redis://"),
        ("http://localhost", "the scheme must be redis:// or rediss://"),
        ("rediss://", "the host is missing"),
        ("redis://", "the host is missing"),
        ("redis://:pw@", "the host is missing"),
        ("redis://host:0", "the port \"0\" is not a number from 1 to 65535"),
        ("redis://host:http", "the port \"http\" is not a number"),
        ("redis://host/db1", "the database \"db1\" is not a number"),
        ("redis://host/-1", "the database \"-1\" is not a number"),
        ("redis://alice@host", "a user name needs a password"),
        ("redis://host?timeout=1", "query parameters"),
        ("redis://[::1:6379", "missing its ]"),
    ])
    func rejectsInvalidURLsSayingWhy(_ url: String, _ reason: String) {
        #expect {
            _ = try RedisStore.Configuration(url: url)
        } throws: { error in
            guard let error = error as? StoreError else { return false }
            return error.code == .invalidConfiguration && error.message.contains(reason)
        }
    }

    @Test func clusterURLsNameTheNodesOnce() throws {
        let configuration = try RedisStore.Configuration(
            clusterURLs: ["rediss://:pw@10.0.0.5:7000", "rediss://:pw@10.0.0.6:7001", "rediss://:pw@10.0.0.5:7000"], keyPrefix: "app:"
        )
        #expect(configuration.host == "10.0.0.5" && configuration.port == 7000)
        #expect(configuration.cluster == [.init(host: "10.0.0.5", port: 7000), .init(host: "10.0.0.6", port: 7001)])
        #expect(configuration.password == "pw" && configuration.tls != nil && configuration.keyPrefix == "app:")
        #expect(RedisStore.Configuration().cluster == nil)
    }

    @Test(arguments: [
        ([], "none was given"),
        (["redis://10.0.0.5:7000/1"], "database 0 only"),
        (["redis://10.0.0.5:7000", "rediss://10.0.0.6:7000"], "scheme and credentials"),
        (["redis://:a@10.0.0.5:7000", "redis://:b@10.0.0.6:7000"], "scheme and credentials"),
        (["redis://10.0.0.5:7000", "http://10.0.0.6"], "scheme must be"),
    ])
    func invalidClusterURLsAreRefused(urls: [String], reason: String) {
        do {
            _ = try RedisStore.Configuration(clusterURLs: urls)
            Issue.record("\(urls) was accepted")
        } catch let error as StoreError {
            #expect(error.code == .invalidConfiguration)
            #expect("\(error)".contains(reason), "\(error)")
            #expect(!"\(error)".contains(":b@"), "no password in \(error)")
        } catch {
            Issue.record("\(error)")
        }
    }

    @Test func neverShowsThePassword() throws {
        let configuration = try RedisStore.Configuration(url: "redis://alice:topsecret@host:7000/2", keyPrefix: "app:")
        #expect(configuration.url == "redis://alice:***@host:7000/2")
        #expect(configuration.description == "redis://alice:***@host:7000/2 (key prefix \"app:\")")
        #expect(RedisStore.Configuration(host: "::1", password: "x").url == "redis://:***@[::1]:6379/0")
        #expect {
            _ = try RedisStore.Configuration(url: "redis://alice:topsecret@host:bad")
        } throws: { error in
            "\(error)".contains("alice:***@") && !"\(error)".contains("topsecret")
        }
    }

    /// Invalid URLs whose errors once quoted part of the password: one with a `/` in it (read as
    /// the start of the database, leaving part of the password to be read as a port), and one
    /// given without its `:` (read as a user name).
    @Test(arguments: [
        ("redis://alice:top/secret@host:bad", "top", "redis://alice:***@host:bad", "the port \"bad\""),
        ("redis://:top/secret@host/db", "top", "redis://:***@host/db", "the database \"db\""),
        ("redis://topsecret@host", "topsecret", "redis://***@host", "a user name needs a password"),
    ])
    func anInvalidURLNeverShowsThePassword(_ url: String, _ secret: String, _ shown: String, _ reason: String) {
        #expect {
            _ = try RedisStore.Configuration(url: url)
        } throws: { error in
            "\(error)".contains("\"\(shown)\": \(reason)") && !"\(error)".contains(secret)
        }
    }

    /// A huge URL is not quoted whole in its error.
    @Test func anInvalidURLIsCutInItsError() {
        let url = "redis://host:" + String(repeating: "9", count: 4_000)
        let error = #expect(throws: StoreError.self) { _ = try RedisStore.Configuration(url: url) }
        #expect(error?.message.contains("the port") == true)
        #expect((error?.message.utf8.count ?? .max) < 1_000)
        // Past 4 KiB a URL is refused before it is read, and its error is cut as well.
        let huge = "redis://host:" + String(decoding: [UInt8](repeating: UInt8(ascii: "9"), count: 100_000), as: UTF8.self)
        let refused = #expect(throws: StoreError.self) { _ = try RedisStore.Configuration(url: huge) }
        #expect(refused?.message.contains("it is 100013 bytes long, more than the 4096 a Redis URL may take") == true, "\(String(describing: refused))")
        #expect((refused?.message.utf8.count ?? .max) < 1_000)
        #expect(throws: Never.self) { _ = try RedisStore.Configuration(url: "redis://" + String(repeating: "h", count: 4_096 - 13) + ":6379") }
    }

    @Test func backoffDoublesFromTheMinimumToTheMaximumWithJitter() {
        let backoff = ReconnectBackoff(minimum: .milliseconds(100), maximum: .seconds(5))
        let expected: [Int64] = [100, 200, 400, 800, 1600, 3200, 5000, 5000]
        for (index, base) in expected.enumerated() {
            let failures = index + 1
            #expect(backoff.delay(afterFailures: failures, random: 0) == .milliseconds(base / 2))
            #expect(backoff.delay(afterFailures: failures, random: 0.999_999) <= .milliseconds(base))
            #expect(backoff.delay(afterFailures: failures, random: 0.999_999) > .milliseconds(base * 99 / 100))
        }
        #expect(backoff.delay(afterFailures: 1_000, random: 0.5) == .milliseconds(3750))
    }
}
