import Foundation
import HanekeTesting
import Images
import Testing
import TestSupport

/// `haneke thumbnail`, run as a separate process on a folder of images made for each test.
@Suite(.timeLimit(.minutes(2)), .offThePool, .tags(.disk, .process, .slow))
struct ThumbnailTests {
    typealias Run = ChildProcess.Outcome

    static func haneke(_ arguments: String...) async throws -> Run {
        try await ChildProcess.run(ChildProcess.binary("haneke"), arguments)
    }

    /// What `--json` prints, the fields the tests read.
    struct Report: Decodable {
        struct Pass: Decodable { var name: String; var served: [String: Int]; var failed: Int }
        struct Layer: Decodable { var name: String; var hits: Int; var misses: Int; var writes: Int; var errors: Int }
        struct Made: Decodable { var file: String; var width: Int; var height: Int; var format: String; var bytes: Int }
        struct Failure: Decodable { var file: String; var reason: String }
        var images: Int
        var format: String
        var passes: [Pass]
        var layers: [Layer]
        var originalBytes: Int
        var thumbnailBytes: Int
        var thumbnails: [Made]
        var failures: [Failure]
    }

    /// An RGB PNG of smooth gradients (stored deflate blocks: no compressor needed).
    static func png(width: Int, height: Int) -> Data {
        var pixels = [UInt8](repeating: 0, count: width * height * 3)
        for y in 0..<height {
            for x in 0..<width {
                let offset = (y * width + x) * 3
                pixels[offset] = UInt8(x * 255 / max(1, width - 1))
                pixels[offset + 1] = UInt8(y * 255 / max(1, height - 1))
                pixels[offset + 2] = UInt8((x + y) % 256)
            }
        }
        return PNGWriter.png(width: width, height: height, colorType: .rgb, pixels: pixels)
    }

    /// A JPEG of `png(width:height:)`, made by libvips through the Images module.
    static func jpeg(width: Int, height: Int) async throws -> Data {
        let resizer = ImageResizer(size: ImageSize(width: 1, height: 1), scaleMode: .none, outputFormat: .jpeg, compressionQuality: 0.9)
        return try await resizer.resize(Image(data: png(width: width, height: height))).data
    }

    /// A folder with two JPEGs, a PNG and a text file that is not an image.
    static func makeFolder() async throws -> TemporaryDirectory {
        let folder = try TemporaryDirectory(prefix: "images")
        try await jpeg(width: 600, height: 400).write(to: URL(fileURLWithPath: folder.appending("landscape.jpg")))
        try await jpeg(width: 300, height: 500).write(to: URL(fileURLWithPath: folder.appending("portrait.JPEG")))
        try png(width: 200, height: 200).write(to: URL(fileURLWithPath: folder.appending("square.png")))
        try Data("not an image, and not named like one".utf8).write(to: URL(fileURLWithPath: folder.appending("notes.txt")))
        return folder
    }

    @Test func coldResizesWarmAndHotComeFromTheCache() async throws {
        let folder = try await Self.makeFolder()
        let output = try TemporaryDirectory(prefix: "thumbs")
        let run = try await Self.haneke("thumbnail", folder.path, "--size", "64", "--output", output.appending("out"), "--json", "--quiet")
        #expect(run.status == 0, "\(run.stderr)")
        let report = try JSONDecoder().decode(Report.self, from: run.stdout)
        #expect(report.images == 3)
        #expect(report.failures.isEmpty)
        #expect(report.passes.map(\.name) == ["cold", "warm (memory cleared)", "hot"])
        #expect(report.passes[0].served == ["fetcher": 3], "\(report.passes[0].served)")
        #expect(report.passes[1].served == ["disk": 3], "\(report.passes[1].served)")
        #expect(report.passes[2].served == ["memory": 3], "\(report.passes[2].served)")
        let layers = Dictionary(uniqueKeysWithValues: report.layers.map { ($0.name, $0) })
        #expect(layers["fetcher"]?.hits == 3)
        #expect(layers["memory"]?.hits == 3)
        #expect(layers["disk"]?.hits == 3)
        #expect(layers.values.allSatisfy { $0.errors == 0 })
        #expect(report.thumbnailBytes < report.originalBytes)

        // Aspect fit in 64×64, each in its original's format, written to --output.
        let expected: [String: (Int, Int, ImageFormat)] = [
            "landscape.jpg": (64, 43, .jpeg), "portrait.jpg": (39, 64, .jpeg), "square.png": (64, 64, .png),
        ]
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: output.appending("out"))) == Set(expected.keys).union([".haneke-thumbnails"]))
        for (name, (width, height, format)) in expected {
            let image = try Image(data: Data(contentsOf: URL(fileURLWithPath: output.appending("out/" + name))))
            #expect(image.format == format, "\(name)")
            #expect(abs(image.width - width) <= 1 && abs(image.height - height) <= 1, "\(name): \(image.size)")
            #expect(max(image.width, image.height) == 64, "\(name): \(image.size)")
        }
    }

    /// A file in --output that no thumbnail run wrote is never replaced without --force, and the
    /// command writes none before it says so; files a run wrote are replaced by the next.
    @Test func outputNeverReplacesAFileItDidNotWrite() async throws {
        let folder = try await Self.makeFolder()
        let output = try TemporaryDirectory(prefix: "thumbs")
        let mine = Data("my own landscape".utf8)
        try mine.write(to: URL(fileURLWithPath: output.appending("landscape.jpg")))
        let refused = try await Self.haneke("thumbnail", folder.path, "--size", "32", "--output", output.path, "--quiet")
        #expect(refused.status == 2, "\(refused.stderr)")
        #expect(refused.stderr.contains("already has 1 file no thumbnail run wrote (landscape.jpg); pass --force"), "\(refused.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: output.appending("landscape.jpg"))) == mine)
        #expect(try FileManager.default.contentsOfDirectory(atPath: output.path) == ["landscape.jpg"], "nothing else written")

        let forced = try await Self.haneke("thumbnail", folder.path, "--size", "32", "--output", output.path, "--quiet", "--force")
        #expect(forced.status == 0, "\(forced.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: output.appending("landscape.jpg"))) != mine)
        // Its own files, as it left them, it replaces without --force.
        let again = try await Self.haneke("thumbnail", folder.path, "--size", "48", "--output", output.path, "--quiet")
        #expect(again.status == 0, "\(again.stderr)")
        #expect(try Image(data: Data(contentsOf: URL(fileURLWithPath: output.appending("square.png")))).width == 48)
        // Changed since: someone else's now.
        try Data("edited".utf8).write(to: URL(fileURLWithPath: output.appending("square.png")))
        let edited = try await Self.haneke("thumbnail", folder.path, "--size", "32", "--output", output.path, "--quiet")
        #expect(edited.status == 2 && edited.stderr.contains("(square.png)"), "\(edited.stderr)")
    }

    /// A link among the originals is not followed (the help says links are not read).
    @Test func linksAmongTheOriginalsAreSkipped() async throws {
        let folder = try await Self.makeFolder()
        let elsewhere = try TemporaryDirectory(prefix: "elsewhere")
        try Self.png(width: 20, height: 20).write(to: URL(fileURLWithPath: elsewhere.appending("outside.png")))
        try FileManager.default.createSymbolicLink(atPath: folder.appending("linked.png"), withDestinationPath: elsewhere.appending("outside.png"))
        let run = try await Self.haneke("thumbnail", folder.path, "--size", "32", "--json", "--quiet")
        #expect(run.status == 0, "\(run.stderr)")
        let report = try JSONSerialization.jsonObject(with: Data(run.output.utf8)) as? [String: Any]
        #expect(report?["images"] as? Int == 3, "\(run.output)")
        #expect(!run.output.contains("linked.png"), "\(run.output)")
    }

    @Test func aDamagedImageIsListedWithItsReasonAndTheRestAreDone() async throws {
        let folder = try await Self.makeFolder()
        let whole = try await Self.jpeg(width: 400, height: 300)
        // Cut mid-scan: libvips decodes the first half, then warns and fails.
        try whole.prefix(whole.count / 2).write(to: URL(fileURLWithPath: folder.appending("truncated.jpg")))
        try Data("plain text".utf8).write(to: URL(fileURLWithPath: folder.appending("fake.png")))
        let run = try await Self.haneke("thumbnail", folder.path, "--size", "32", "--format", "webp", "--quiet")
        #expect(run.status == 1, "\(run.stderr)")
        #expect(run.stderr.isEmpty, "failed images are the output, not an error: \(run.stderr)")
        #expect(run.output.contains("2 images failed"), "\(run.output)")
        let lines = run.output.split(separator: "\n")
        for name in ["truncated.jpg", "fake.png"] {
            let line = try #require(lines.first { $0.contains(folder.appending(name)) }, "\(name): \(run.output)")
            #expect(line.contains(": "), "a reason follows the name: \(line)")
        }
        #expect(run.output.contains("3 thumbnails"), "\(run.output)")

        let json = try await Self.haneke("thumbnail", folder.path, "--size", "32", "--json", "--quiet")
        #expect(json.status == 1)
        let report = try JSONDecoder().decode(Report.self, from: json.stdout)
        #expect(report.images == 5)
        #expect(report.failures.map(\.file).sorted() == [folder.appending("fake.png"), folder.appending("truncated.jpg")])
        #expect(report.failures.allSatisfy { !$0.reason.isEmpty && !$0.reason.contains("\n") })
        #expect(report.passes.allSatisfy { $0.failed == 2 })
        #expect(report.thumbnails.count == 3)
    }

    @Test func aKeptCacheServesTheNextRunFromDisk() async throws {
        let folder = try await Self.makeFolder()
        let cache = try TemporaryDirectory(prefix: "cache")
        let first = try await Self.haneke("thumbnail", folder.path, "--size", "48", "--mode", "aspectFill", "--cache-dir", cache.path)
        #expect(first.status == 0, "\(first.stderr)")
        for text in ["cold", "warm", "hot", "memory", "disk", "fetcher", "bytes: 3 originals"] {
            #expect(first.output.contains(text), "\(text): \(first.output)")
        }
        let second = try await Self.haneke("thumbnail", folder.path, "--size", "48", "--mode", "aspectFill", "--cache-dir", cache.path, "--json")
        #expect(second.status == 0, "\(second.stderr)")
        let report = try JSONDecoder().decode(Report.self, from: second.stdout)
        #expect(report.passes[0].served == ["disk": 3], "the cold pass of a second run reads the kept thumbnails: \(report.passes[0].served)")
        #expect(report.thumbnails.allSatisfy { $0.width == 48 && $0.height == 48 })
        #expect(FileManager.default.fileExists(atPath: cache.path + "/" + report.format))

        // A folder that is neither empty nor a thumbnail cache is refused and left as it was.
        let foreign = try TemporaryDirectory(prefix: "foreign")
        try Data("mine".utf8).write(to: URL(fileURLWithPath: foreign.appending("notes.txt")))
        let refused = try await Self.haneke("thumbnail", folder.path, "--cache-dir", foreign.path)
        #expect(refused.status == 2)
        #expect(refused.stderr.contains("refusing to use it"), "\(refused.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: foreign.path) == ["notes.txt"])
    }

    @Test func withoutCacheDirTheTemporaryCacheIsDeleted() async throws {
        let folder = try await Self.makeFolder()
        let temporary = try TemporaryDirectory()
        let run = try await ChildProcess.run("/usr/bin/env", ["TMPDIR=" + temporary.path, ChildProcess.binary("haneke"), "thumbnail", folder.path, "--quiet"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.output.contains("(deleted at the end)"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: temporary.path).isEmpty, "the command left its cache")
    }

    @Test func usageMistakesExitWithStatus2AndOneLine() async throws {
        let folder = try await Self.makeFolder()
        let empty = try TemporaryDirectory(prefix: "empty")
        let cases: [([String], String)] = [
            (["thumbnail", folder.path, "--size", "0"], "--size"),
            (["thumbnail", folder.path, "--quality", "1.5"], "--quality"),
            (["thumbnail", folder.path, "--format", "gif"], "--format"),
            (["thumbnail", folder.path, "--mode", "stretch"], "stretch"),
            (["thumbnail", folder.appending("missing")], "does not exist"),
            (["thumbnail", folder.appending("notes.txt")], "is not a folder"),
            (["thumbnail", empty.path], "has no image files"),
            (["thumbnail", folder.path, "--output", folder.path + "/."], "refusing to write thumbnails over them"),
        ]
        for (arguments, text) in cases {
            let run = try await ChildProcess.run(ChildProcess.binary("haneke"), arguments)
            #expect(run.status == 2, "\(arguments): \(run.stderr)")
            #expect(run.stdout.isEmpty, "\(arguments)")
            #expect(run.stderr.split(separator: "\n").count == 1, "\(arguments): \(run.stderr)")
            #expect(run.stderr.contains(text), "\(arguments): \(run.stderr)")
        }
    }
}

