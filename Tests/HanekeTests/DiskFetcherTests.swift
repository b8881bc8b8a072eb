import Foundation
import Haneke
import HanekeTesting
import Testing
import TestSupport

@Suite(.offThePool, .tags(.disk))
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
        #expect(error?.posixCode == .ENOENT)
    }

    @Test func aFileThatDoesNotDecodeIsADecodingError() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.appending("binary")
        try Data([0xFF, 0xFE, 0xFD]).write(to: URL(fileURLWithPath: path))
        let error = await #expect(throws: StoreError.self) { try await DiskFetcher<String>(path: path).fetch("k") }
        #expect(error?.code == .decoding)
    }

    /// The system's reason is the `posixCode`, printed once by the description, and not in the
    /// message, which names the file.
    @Test func aFolderIsAnIOErrorWithItsErrorNumber() async throws {
        let directory = try TemporaryDirectory()
        let error = try #require(await #expect(throws: StoreError.self) { try await DiskFetcher<Data>(path: directory.path).fetch("k") })
        #expect(error.code == .io)
        #expect(error.posixCode == .EISDIR)
        #expect(error.message == "Could not read \(directory.path)")
        let reason = "Is a directory (errno 21 EISDIR)"
        #expect("\(error)" == "io: Could not read \(directory.path) (cause: \(reason))")
        #expect("\(error)".components(separatedBy: "Is a directory").count - 1 == 1, "\(error)")
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

    @Test func anEmptyFileIsReadAsEmpty() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.appending("empty")
        try Data().write(to: URL(fileURLWithPath: path))
        #expect(try await DiskFetcher<Data>(path: path).fetch("k").isEmpty)
    }

    @Test(arguments: [(size: 1000, accepted: true), (size: 1001, accepted: false)])
    func aFileOverTheLimitIsRefused(size: Int, accepted: Bool) async throws {
        let directory = try TemporaryDirectory()
        let path = directory.appending("file")
        let contents = Data((0..<size).map { UInt8(truncatingIfNeeded: $0) })
        try contents.write(to: URL(fileURLWithPath: path))
        let fetcher = DiskFetcher<Data>(path: path, configuration: .init(maximumFileSize: 1000))
        if accepted {
            #expect(try await fetcher.fetch("k") == contents)
        } else {
            let error = await #expect(throws: StoreError.self) { try await fetcher.fetch("k") }
            #expect(error?.code == .valueTooLarge)
            #expect(error?.message.contains(path) == true)
            #expect(error?.message.contains("1000") == true)
        }
    }

    /// A sparse file of 2 GiB takes no disk space and, refused from its size, no memory.
    @Test func aSparseFileOf2GiBIsRefusedBeforeItIsRead() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.appending("sparse")
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        try #require(descriptor >= 0)
        let truncated = ftruncate(descriptor, 2 << 30)
        close(descriptor)
        try #require(truncated == 0)

        let before = peakMemory()
        let error = await #expect(throws: StoreError.self) { try await DiskFetcher<Data>(path: path).fetch("k") }
        #expect(error?.code == .valueTooLarge)
        #expect(error?.message.contains("\(2 << 30) bytes") == true)
        #expect(error?.message.contains("\(64 << 20) bytes") == true, "the default limit")
        // Reading the file would add 2 GiB; the margin leaves room for the tests running beside
        // this one in the same process (the peak is the process's).
        let growth = peakMemory() - before
        #expect(growth < 1 << 30, "the peak memory grew by \(growth) bytes")
        print("limits: a sparse file of 2 GiB was refused from its size; the process's peak memory grew by \(growth >> 20) MiB meanwhile")
    }

    /// A `/proc` file reports a size of 0: the read stops one byte past the limit.
    @Test func aFileWithoutASizeIsRefusedOnceItPassesTheLimit() async throws {
        let fetcher = DiskFetcher<Data>(path: "/proc/self/maps", configuration: .init(maximumFileSize: 64))
        let error = await #expect(throws: StoreError.self) { try await fetcher.fetch("k") }
        #expect(error?.code == .valueTooLarge)
    }

    /// A FIFO without a writer would hold a blocking `open` for good; a device never ends.
    @Test(arguments: ["fifo", "/dev/zero", "/dev/null"])
    func onlyRegularFilesAreRead(name: String) async throws {
        let directory = try TemporaryDirectory()
        var path = name
        if name == "fifo" {
            path = directory.appending("fifo")
            #expect(mkfifo(path, 0o600) == 0)
        }
        let error = await #expect(throws: StoreError.self) { try await DiskFetcher<Data>(path: path).fetch("k") }
        #expect(error?.code == .unsupported)
        #expect(error?.message.contains("not a regular file") == true)
        #expect(error?.message.contains(name == "fifo" ? "a FIFO" : "a character device") == true)
    }

    @Test func withoutALimitALargerFileIsRead() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.appending("file")
        let contents = Data(repeating: 7, count: 3 << 20)
        try contents.write(to: URL(fileURLWithPath: path))
        let fetcher = DiskFetcher<Data>(path: path, configuration: .init(maximumFileSize: nil))
        #expect(try await fetcher.fetch("k") == contents)
    }
}
