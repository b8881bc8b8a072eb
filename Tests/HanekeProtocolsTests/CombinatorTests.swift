import Foundation
import Formats
import HanekeProtocols
import HanekeTesting
import MemoryStore
import Testing

struct CombinatorTests {
    struct User: Codable, Hashable, Sendable, DataConvertible, DataRepresentable {
        var id: Int
        var name: String
    }

    @Test func codedAsUsesTheTypesOwnConformance() async throws {
        let bytes = MemoryStore<String, Data>()
        let users = bytes.coded(as: User.self)
        try await users.setValue(User(id: 1, name: "Ada"), forKey: "1")

        #expect(try await users.value(forKey: "1") == User(id: 1, name: "Ada"))
        #expect(bytes.value(forKey: "1") == Data(#"{"id":1,"name":"Ada"}"#.utf8))
    }

    @Test func codedWithUsesTheGivenCodec() async throws {
        let bytes = MemoryStore<String, Data>()
        let users = bytes.coded(with: PropertyListCodec<User>())
        try await users.setValue(User(id: 2, name: "Grace"), forKey: "2")

        #expect(try await users.value(forKey: "2") == User(id: 2, name: "Grace"))
        #expect(bytes.value(forKey: "2")?.starts(with: Data("bplist00".utf8)) == true)
    }

    @Test func undecodableBytesThrowADecodingErrorNamingTheKeyAndType() async throws {
        let bytes = MemoryStore<String, Data>()
        bytes.setValue(Data(#"{"id":"one"}"#.utf8), forKey: "user-1")
        let users = bytes.coded(as: User.self)

        let error = await #expect(throws: StoreError.self) { try await users.value(forKey: "user-1") }
        #expect(error?.code == .decoding)
        #expect(error?.message.contains("user-1") == true)
        #expect(error?.message.contains("User") == true)
        // The decoder's reason once, after the message, as StoreError's documentation shows it.
        let text = error.map { "\($0)" } ?? ""
        #expect(text.hasPrefix("decoding: Could not decode the value stored for key user-1: Could not decode User from 12 bytes of JSON (cause: expected Int at id: "), "\(text)")
    }

    @Test func aCodecThatCannotEncodeThrowsAnEncodingError() async throws {
        let numbers = MemoryStore<String, Data>().coded(with: JSONCodec<Double>())
        let error = await #expect(throws: StoreError.self) { try await numbers.setValue(.nan, forKey: "x") }
        #expect(error?.code == .encoding)
    }

    @Test func mapKeysTranslatesEveryOperation() async throws {
        let base = RecordingStore(wrapping: MemoryStore<String, String>())
        let byURL = base.mapKeys { (url: URL) in url.absoluteString }
        let url = try #require(URL(string: "https://haneke.io/a"))

        try await byURL.setValue("page", forKey: url)
        #expect(try await byURL.value(forKey: url) == "page")
        try await byURL.removeValue(forKey: url)
        #expect(base.calls.map(\.key) == [url.absoluteString, url.absoluteString, url.absoluteString])
    }

    @Test func mapKeysCanRefuseAKey() async throws {
        let store = MemoryStore<String, String>().mapKeys { (key: Int) throws -> String in
            guard key >= 0 else { throw StoreError(.invalidKey, "negative key \(key)") }
            return String(key)
        }
        let error = await #expect(throws: StoreError.self) { try await store.value(forKey: -1) }
        #expect(error?.code == .invalidKey)
    }

    @Test func anyStoreForwardsEverythingAndDoesNotNest() async throws {
        let memory = MemoryStore<String, String>(name: "inner")
        let erased = memory.eraseToAnyStore()
        try await erased.setValue("v", forKey: "k")
        #expect(memory.value(forKey: "k") == "v")
        #expect(erased.layerStatistics.map(\.name) == ["inner"])
        #expect(erased.eraseToAnyStore().layerStatistics.map(\.name) == ["inner"])
    }

    @Test func countedCountsAStoreThatDoesNot() async throws {
        let counted = PlainStore().counted(name: "mine")
        try await counted.setValue("v", forKey: "k")
        _ = try await counted.value(forKey: "k")
        _ = try await counted.value(forKey: "missing")
        try await counted.removeValue(forKey: "k")
        #expect(counted.layerStatistics == [
            LayerStatistics(name: "mine", statistics: StoreStatistics(hits: 1, misses: 1, writes: 1, removals: 1)),
        ])
        #expect(PlainStore().layerStatistics.isEmpty)
    }

    @Test func aCodedStoreConforms() async throws {
        try await StoreConformanceSuite {
            MemoryStore<String, Data>().coded(as: String.self)
        }.run()
    }

    @Test func aPropertyListCodedStoreConforms() async throws {
        try await StoreConformanceSuite(
            makeKey: ConformanceSamples.key,
            makeValue: { User(id: $0, name: "user \($0)") },
            makeStore: { MemoryStore<String, Data>().coded(with: PropertyListCodec<User>()) }
        ).run()
    }

    @Test func anyStoreConforms() async throws {
        try await StoreConformanceSuite {
            MemoryStore<String, Data>().chained(to: MemoryStore()).eraseToAnyStore()
        }.run()
    }

    @Test func aKeyMappedStoreConforms() async throws {
        try await StoreConformanceSuite(
            makeKey: { $0 },
            makeValue: ConformanceSamples.data,
            makeStore: { MemoryStore<String, Data>().mapKeys { (key: Int) in "k\(key)" } }
        ).run()
    }

    @Test func aCountedStoreConforms() async throws {
        try await StoreConformanceSuite { MemoryStore<String, Data>().counted(name: "c") }.run()
    }
}

/// A minimal store of your own, which counts nothing.
final class PlainStore: Store {
    private let memory = MemoryStore<String, String>()
    func value(forKey key: String) async throws -> String? { memory.value(forKey: key) }
    func setValue(_ value: String, forKey key: String) async throws { memory.setValue(value, forKey: key) }
    func removeValue(forKey key: String) async throws { memory.removeValue(forKey: key) }
    func removeAll() async throws { memory.removeAll() }
}
