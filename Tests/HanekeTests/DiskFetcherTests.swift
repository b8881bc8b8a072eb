import Foundation
import Haneke
import HanekeTesting
import Testing

struct DiskFetcherTests {
    @Test func aFileIsReadAndDecoded() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.appending("config.json")
        try Data(#"{"answer":42}"#.utf8).write(to: URL(fileURLWithPath: path))
        #expect(try await DiskFetcher<JSON>(path: path).fetch("ignored")["answer"]?.int == 42)
        #expect(try await DiskFetcher<JSON>().fetch(path)["answer"]?.int == 42)
    }

    @Test func aMissingFileIsNotFound() async throws {
        let directory = try TemporaryDirectory()
        let error = await #expect(throws: StoreError.self) { try await DiskFetcher<Data>(path: directory.appending("nope")).fetch("k") }
        #expect(error?.code == .notFound)
        #expect(error?.message.contains("nope") == true)
    }

    @Test func aFileThatDoesNotDecodeIsADecodingError() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.appending("binary")
        try Data([0xFF, 0xFE, 0xFD]).write(to: URL(fileURLWithPath: path))
        let error = await #expect(throws: StoreError.self) { try await DiskFetcher<String>(path: path).fetch("k") }
        #expect(error?.code == .decoding)
    }

    @Test func aFolderIsAnIOError() async throws {
        let directory = try TemporaryDirectory()
        let error = await #expect(throws: StoreError.self) { try await DiskFetcher<Data>(path: directory.path).fetch("k") }
        #expect(error?.code == .io)
    }

    @Test func fetchByPathCaches() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.appending("greeting.txt")
        try Data("hello".utf8).write(to: URL(fileURLWithPath: path))
        let cache = Cache<String>(name: "files", directory: directory.appending("cache"))
        #expect(try await cache.fetch(path: path) == "hello")
        try FileManager.default.removeItem(atPath: path)
        #expect(try await cache.fetch(path: path) == "hello")   // from the cache now
    }
}
