import Foundation
import Haneke
import HanekeTesting
import Images
import LoopbackHTTPServer
import Synchronization
import Testing
import TestSupport

/// A cache of images over a real loopback HTTP server and real files: the original is fetched
/// once, each format resizes once, and the disk gives back what was stored. The bodies run on
/// Swift's cooperative threads, under the blocking watchdog: every resize and every file runs on
/// the shared `IOExecutor`.
@Suite(.timeLimit(.minutes(1)), .tags(.disk))
struct ImageCacheTests {
    /// A 640×480 photo-like JPEG, built once by a task the tests await.
    static let photo = Task {
        try await Image.startLibrary()
        return try await TestImages.jpeg(from: await TestImages.photo(width: 640, height: 480), quality: 0.85)
    }

    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory(prefix: "imagecache")
    }

    /// Counts the resizes of the resizers it makes (through their `preResize` hook).
    final class Resizes: Sendable {
        private let count = Atomic<Int>(0)
        var value: Int { count.load(ordering: .relaxed) }

        func resizer(width: Int, height: Int, scaleMode: ImageResizer.ScaleMode = .aspectFit) -> ImageResizer {
            ImageResizer(size: ImageSize(width: width, height: height), scaleMode: scaleMode, preResize: { image in
                self.count.add(1, ordering: .relaxed)
                return image
            })
        }
    }

    /// A server that answers `/missing` with a 404, `/text` with text, and any other path with
    /// the photo.
    static func startServer() async throws -> LoopbackHTTPServer {
        let jpeg = try await photo.value
        return try await LoopbackHTTPServer.start { request in
            switch request.uri {
            case "/missing": .init(status: 404, body: Data("no such image".utf8))
            case "/text": .init(body: Data("not an image".utf8))
            default: .init(body: jpeg)
            }
        }
    }

    func makeCache() async throws -> Cache<Image> {
        try await Image.startLibrary()
        return Cache<Image>(name: "images", directory: directory.path, originalFormat: .images(name: "original"))
    }

    @Test func concurrentFetchesInOneFormatMakeOneRequestAndOneResize() async throws {
        let cache = try await makeCache()
        let resizes = Resizes()
        cache.addFormat(.resizing(name: "small", resizer: resizes.resizer(width: 64, height: 64)))
        try await withServer(try await Self.startServer(), shutdown: { await $0.shutdown() }) { server in
            let url = server.baseURL.appendingPathComponent("photo.jpg")
            let images = try await withThrowingTaskGroup(of: Image.self) { group in
                for _ in 0..<8 { group.addTask { try await cache.fetch(url: url, formatName: "small") } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(images.count == 8)
            #expect(Set(images).count == 1)
            #expect(images[0].size == ImageSize(width: 64, height: 48))
            #expect(images[0].format == .jpeg)
            #expect(server.requestCount(path: "/photo.jpg") == 1)
            #expect(resizes.value == 1)
        }
    }

    @Test func aRestartedAppWithAChangedResizingFormatServesNoImageOfTheOldSize() async throws {
        try await withServer(try await Self.startServer(), shutdown: { await $0.shutdown() }) { server in
            let url = server.baseURL.appendingPathComponent("avatar.jpg")
            let first = try await makeCache()
            first.addFormat(.resizing(name: "avatar", resizer: Resizes().resizer(width: 96, height: 96)))
            #expect(try await first.fetch(url: url, formatName: "avatar").size == ImageSize(width: 96, height: 72))
            try await first.flush()

            // The next run: the avatar format now makes 48-pixel images, under the same name.
            let restarted = try await makeCache()
            restarted.addFormat(.resizing(name: "avatar", resizer: Resizes().resizer(width: 48, height: 48)))
            await #expect(throws: StoreError.self) { try await restarted.fetch(key: url.absoluteString, formatName: "avatar") }
            #expect(try await restarted.fetch(url: url, formatName: "avatar").size == ImageSize(width: 48, height: 36))
            // The original was kept on disk: no second request.
            #expect(server.requestCount(path: "/avatar.jpg") == 1)
        }
    }

    @Test func twoFormatsShareOneRequestAndTheDiskServesThemAfterMemoryIsEmptied() async throws {
        let cache = try await makeCache()
        let small = Resizes(), square = Resizes()
        cache.addFormat(.resizing(name: "small", resizer: small.resizer(width: 64, height: 64)))
        cache.addFormat(.resizing(name: "square", resizer: square.resizer(width: 100, height: 100, scaleMode: .aspectFill)))
        let jpeg = try await Self.photo.value
        try await withServer(try await Self.startServer(), shutdown: { await $0.shutdown() }) { server in
            let url = server.baseURL.appendingPathComponent("photo.jpg")
            async let first = cache.fetch(url: url, formatName: "small")
            async let second = cache.fetch(url: url, formatName: "square")
            let (smallImage, squareImage) = try await (first, second)
            #expect(smallImage.size == ImageSize(width: 64, height: 48))
            #expect(squareImage.size == ImageSize(width: 100, height: 100))
            #expect(server.requestCount(path: "/photo.jpg") == 1)
            #expect((small.value, square.value) == (1, 1))
            // The original format kept the original, as the server sent it.
            #expect(try await cache.fetch(key: url.absoluteString).data == jpeg)

            cache.removeAllFromMemory()
            #expect(try await cache.fetch(url: url, formatName: "small") == smallImage)
            #expect(try await cache.fetch(url: url, formatName: "square") == squareImage)
            #expect(try await cache.fetch(url: url) == Image(data: jpeg))
            #expect(server.requestCount(path: "/photo.jpg") == 1)
            #expect((small.value, square.value) == (1, 1))
            #expect(try cache.layerStatistics(formatName: "small").first { $0.name == "disk" }?.statistics.hits == 1)
        }
    }

    @Test func aFormatAddedLaterResizesTheKeptOriginalWithoutARequest() async throws {
        let cache = try await makeCache()
        try await withServer(try await Self.startServer(), shutdown: { await $0.shutdown() }) { server in
            let url = server.baseURL.appendingPathComponent("late.jpg")
            _ = try await cache.fetch(url: url)
            let resizes = Resizes()
            cache.addFormat(.resizing(name: "tiny", resizer: resizes.resizer(width: 16, height: 16)))
            #expect(try await cache.fetch(url: url, formatName: "tiny").size == ImageSize(width: 16, height: 12))
            #expect(server.requestCount(path: "/late.jpg") == 1)
            #expect(resizes.value == 1)
        }
    }

    @Test func aFailedOriginalIsAClearErrorInEveryFormatAndIsNotCached() async throws {
        let cache = try await makeCache()
        let resizes = Resizes()
        cache.addFormat(.resizing(name: "small", resizer: resizes.resizer(width: 64, height: 64)))
        try await withServer(try await Self.startServer(), shutdown: { await $0.shutdown() }) { server in
            for _ in 0..<2 {
                let missing = try await #require(throws: StoreError.self) {
                    try await cache.fetch(url: server.baseURL.appendingPathComponent("missing"), formatName: "small")
                }
                #expect(missing.code == .invalidStatusCode)
                #expect(missing.statusCode == 404)
                let text = try await #require(throws: StoreError.self) {
                    try await cache.fetch(url: server.baseURL.appendingPathComponent("text"), formatName: "small")
                }
                #expect(text.code == .decoding)
                #expect(text.message.contains("does not decode as Image"))
            }
            // Not cached: each fetch asked again.
            #expect(server.requestCount(path: "/missing") == 2)
            #expect(server.requestCount(path: "/text") == 2)
            #expect(resizes.value == 0)
        }
    }

    @Test func imageFormatsDoNotCompressOnDisk() async throws {
        let cache = try await makeCache()
        cache.addFormat(.resizing(name: "small", resizer: ImageResizer(size: ImageSize(width: 8, height: 8))))
        #expect(try cache.compressionStatistics() == nil)
        #expect(try cache.compressionStatistics(formatName: "small") == nil)
        let format = Format<Image>.resizing(name: "small", resizer: ImageResizer(size: ImageSize(width: 8, height: 8)), diskCapacity: 1 << 20)
        #expect(!format.compressesOnDisk && format.derivesFromOriginal && format.transform != nil && format.diskCapacity == 1 << 20)
        #expect(Shared.imageCache.name == "shared-images")
        #expect(try Shared.imageCache.compressionStatistics() == nil)
    }

    @Test func aResizedImageRoundTripsThroughACompressedFileStoreChain() async throws {
        let original = try await Image(data: Self.photo.value)
        let resized = try await ImageResizer(size: ImageSize(width: 200, height: 200), outputFormat: .webp).resize(original)
        let path = directory.path
        let files = try await IOExecutor.shared.run { try FileStore(directory: path) }
        let memory = MemoryStore<String, Image>()
        let chain = memory.chained(to: files.compressed().coded(as: Image.self))
        try await chain.setValue(resized, forKey: "photo-200")
        memory.removeAll()
        let read = try #require(try await chain.value(forKey: "photo-200"))
        #expect(read.data == resized.data)
        #expect(read.size == ImageSize(width: 200, height: 150))
        #expect(read.format == .webp)
        let frame = try #require(try await files.value(forKey: "photo-200"))
        #expect(LZ4Frame.looksLikeFrame(frame))
    }
}

/// The conformance suite over files: a `FileStore` of images, LZ4-compressed and not. The stores
/// are opened with the synchronous `FileStore` initialiser, so the bodies run off the pool.
@Suite(.timeLimit(.minutes(2)), .offThePool, .tags(.disk))
struct ImageFileStoreConformanceTests {
    @Test func aFileStoreOfImagesConforms() async throws {
        try await StoreConformanceSuite(
            makeKey: ConformanceSamples.key,
            makeValue: TestImages.tinyImage,
            makeStore: { try TemporaryStore { try FileStore(directory: $0.path) }.coded(as: Image.self) }
        ).run()
    }

    @Test func aCompressedFileStoreOfImagesConforms() async throws {
        try await StoreConformanceSuite(
            makeKey: ConformanceSamples.key,
            makeValue: TestImages.tinyImage,
            makeStore: { try TemporaryStore { try FileStore(directory: $0.path) }.compressed().coded(as: Image.self) }
        ).run()
    }
}
