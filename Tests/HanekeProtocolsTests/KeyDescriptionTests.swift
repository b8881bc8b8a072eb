import Foundation
@testable import HanekeProtocols
import HanekeTesting
import Logging
import MemoryStore
import Testing
import TestSupport

/// Keys as errors and logs show them: secrets hidden, escaped, cut.
struct KeyDescriptionTests {
    @Test(arguments: [
        ("http://alice:S3cr3t@example.com/a?token=abc&page=2", "http://alice:***@example.com/a?token=***&page=2"),
        ("https://ghp_TOKEN@github.com/org/repo", "https://***@github.com/org/repo"),
        ("https://api.example.com/v1?API_KEY=k1&Signature=s&q=cats", "https://api.example.com/v1?API_KEY=***&Signature=***&q=cats"),
        ("s3://bucket/x?X-Amz-Security-Token=t", "s3://bucket/x?X-Amz-Security-Token=***"),
        ("plain key", "plain key"),
        ("not a url: http:/x?token=1", "not a url: http:/x?token=1"),
    ])
    func urlsLoseTheirSecrets(key: String, shown: String) {
        #expect(Logger.describe(key) == shown)
    }

    @Test func controlCharactersAreEscapedSoAKeyStaysOnOneLine() {
        #expect(Logger.describe("a\nb\r\tc\u{1B}[31mred\u{7}\\") == #"a\nb\r\tc\u{1b}[31mred\u{7}\\"#)
        #expect(Logger.describe("ключ 🙂") == "ключ 🙂")
    }

    @Test func aHugeKeyIsCut() {
        let shown = Logger.describe(String(repeating: "k", count: 100_000))
        #expect(shown == String(repeating: "k", count: 200) + "… (100000 bytes)")
    }

    /// A chain logs the key of a layer that failed: with its credentials hidden.
    @Test func aChainLogsAURLKeyWithoutItsSecrets() async throws {
        let logs = LogCapture()
        let broken = FailingStore(wrapping: MemoryStore<String, Data>(), failing: [.read])
        let chain = MemoryStore<String, Data>().chained(to: broken, logger: logs.logger)
        _ = try await chain.value(forKey: "https://alice:S3cr3t@example.com/photo?token=abc")
        let logged = logs.lines.joined(separator: "\n")
        #expect(!logged.isEmpty)
        #expect(!logged.contains("S3cr3t"), "\(logged)")
        #expect(!logged.contains("abc"), "\(logged)")
        #expect(logged.contains("https://alice:***@example.com/photo?token=***"), "\(logged)")
    }
}
