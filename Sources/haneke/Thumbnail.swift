import ArgumentParser
import Foundation
import Haneke
import Images

#if canImport(Glibc)
import Glibc
#endif

/// `haneke thumbnail`: the image cache made visible, as `demo` does for JSON.
struct Thumbnail: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Resize a folder of images through a disk-backed image cache and show what each layer did.",
        discussion: """
        Builds Cache<Image> with a resizing format (memory, then files on disk; named by its settings, \
        such as thumbnail-256-aspectFit-same-q85, so that other settings never share its thumbnails) and \
        fetches every image file of FOLDER (.jpg, .jpeg, .png, .webp, .gif, .tif, .tiff, .heic, \
        .heif, .avif; not its subfolders) through a DiskFetcher, as many at a time as the machine has \
        cores, three times: cold (each original \
        read and resized, on the shared I/O executor), warm (memory cleared: each thumbnail read \
        from disk) and hot (from memory). Prints, per pass, how many images each layer served and \
        the time; per layer, its hits, misses, writes and errors; and the bytes of the originals and \
        of their thumbnails.

        Without --cache-dir the cache goes in a new temporary folder, deleted at the end; a folder \
        given with --cache-dir (new, empty, or one an earlier thumbnail run made) is kept, and a \
        later run with the same settings finds its thumbnails there. With --output, each thumbnail \
        is also written to DIR, named after its original with the output format's extension; a \
        file already there that an earlier thumbnail run did not write (DIR's .haneke-thumbnails \
        lists those, with their sizes and times) is never replaced without --force: the command \
        stops before writing any. Links among the originals are not followed.

        An image that cannot be read or resized (damaged, truncated, too large, not an image) is \
        listed with its reason, one line each, and the command ends with exit status 1 once every \
        other image is done.

        --json prints {folder, cacheDirectory, cacheDeleted, format, images, passes: [{name, served, \
        failed, seconds}], layers: [{name, hits, misses, writes, errors}], originalBytes, \
        thumbnailBytes, thumbnails: [{file, width, height, format, bytes}], output, failures: [{file, \
        reason}]}, where served counts the images by the layer that served them.
        """ + ExitStatus.help
    )

    @Argument(help: ArgumentHelp("The folder of images.", valueName: "folder"))
    var folder: String

    @Option(help: ArgumentHelp("The thumbnails' size in pixels: the box they fit in, or fill (1 to 10000).", valueName: "pixels"))
    var size = 256

    @Option(help: ArgumentHelp("How an image is fitted to the size: aspectFit, aspectFill (cover, then the centre cut), fill (stretched), none (its own size).", valueName: "mode"))
    var mode: Mode = .aspectFit

    /// `--mode`: ImageResizer's scale modes by their names.
    enum Mode: String, ExpressibleByArgument, CaseIterable {
        case aspectFit, aspectFill, fill, none

        var scaleMode: ImageResizer.ScaleMode {
            switch self {
            case .aspectFit: .aspectFit
            case .aspectFill: .aspectFill
            case .fill: .fill
            case .none: .none
            }
        }
    }

    @Option(help: ArgumentHelp("The thumbnails' format: jpeg, png or webp (the original's when it is one of these, by default).", valueName: "format"))
    var format: String?

    @Option(help: ArgumentHelp("JPEG and WebP quality, from 0 to 1.", valueName: "q"))
    var quality = 0.85

    @Option(help: ArgumentHelp("The cache's folder: a new or empty folder, or one an earlier thumbnail run made; kept at the end.", valueName: "dir"))
    var cacheDir: String?

    @Option(help: ArgumentHelp("Also write each thumbnail to this folder (made if missing).", valueName: "dir"))
    var output: String?

    @Flag(help: "With --output, replace files there that no thumbnail run wrote.")
    var force = false

    @Flag(help: "Print the figures as JSON.")
    var json = false

    @OptionGroup var progress: ProgressOptions

    /// The file name extensions taken as images.
    static let imageExtensions: Set<String> = ["jpg", "jpeg", "png", "webp", "gif", "tif", "tiff", "heic", "heif", "avif"]

    /// The file that marks a folder as a thumbnail run's cache.
    static let markerName = ".haneke-thumbnail"

    func validate() throws {
        guard (1...10_000).contains(size) else { throw ValidationError("--size must be from 1 to 10000 pixels (got \(size))") }
        guard (0...1).contains(quality) else { throw ValidationError("--quality must be from 0 to 1 (got \(quality))") }
        if let format, outputFormat(format) == nil {
            throw ValidationError("--format must be jpeg, png or webp (got \(shown(format, quoted: true)))")
        }
    }

    private func outputFormat(_ name: String) -> ImageFormat? {
        ImageFormat.writable.first { $0.name == name.lowercased() || (name.lowercased() == "jpg" && $0 == .jpeg) }
    }

    func run() async throws {
        let files = try await IOExecutor.shared.run { try Self.imageFiles(in: folder) }
        guard !files.isEmpty else {
            throw ToolError.usage("\(shown(folder)) has no image files (\(Self.imageExtensions.sorted().map { "." + $0 }.joined(separator: " ")))")
        }
        if let output { try await IOExecutor.shared.run { [folder] in try Self.prepareOutput(output, input: folder) } }
        let root = cacheDir ?? NSTemporaryDirectory() + "haneke-thumbnail-\(UUID().uuidString.prefix(8))"
        let deleting = cacheDir == nil
        let report = try await withClaimedFolder(root, deleting: deleting, what: "the cache's folder", claim: Self.claim) {
            try await measure(files, root: root, deleting: deleting)
        }
        if json { try printJSON(report) } else { show(report) }
        if !report.failures.isEmpty { throw ExitStatus.problems }
    }

    /// The image files of `folder` (regular files, not links or subfolders), sorted by name.
    static func imageFiles(in folder: String) throws -> [String] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder, isDirectory: &isDirectory) else {
            throw ToolError.usage("\(shown(folder)) does not exist")
        }
        guard isDirectory.boolValue else { throw ToolError.usage("\(shown(folder)) is not a folder") }
        let names: [String]
        do { names = try FileManager.default.contentsOfDirectory(atPath: folder) } catch { throw ToolError.io("could not list \(shown(folder))", error) }
        return names.sorted().filter { name in
            guard imageExtensions.contains((name as NSString).pathExtension.lowercased()) else { return false }
            // lstat: a link is not followed, whatever it points to.
            var info = stat()
            return lstat(folder + "/" + name, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG
        }.map { folder + "/" + $0 }
    }

    /// Makes the output folder if it is missing; refuses a file in its place, and the input folder
    /// itself (a thumbnail named like its original would replace it).
    static func prepareOutput(_ output: String, input: String) throws {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: output, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else { throw ToolError.usage("--output \(shown(output)) is not a folder") }
            let resolved = { (path: String) in URL(fileURLWithPath: path).resolvingSymlinksInPath().standardizedFileURL.path }
            guard resolved(output) != resolved(input) else {
                throw ToolError.usage("--output \(shown(output)) is the folder of the originals; refusing to write thumbnails over them: pass another folder")
            }
            return
        }
        do { try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true) } catch {
            throw ToolError.io("could not create \(shown(output))", error)
        }
    }

    /// Makes sure `folder` is this command's to use: a folder that does not exist yet, an empty one,
    /// or one an earlier thumbnail run marked. Anything else is refused, untouched.
    static func claim(_ folder: String) throws {
        try claimFolder(folder, marker: markerName, command: "haneke thumbnail", refusal: "", markerText: "A cache made by `haneke thumbnail`.\n")
    }

    /// Runs the three passes with the cache in `root`.
    private func measure(_ files: [String], root: String, deleting: Bool) async throws -> Report {
        let resizer = ImageResizer(
            size: ImageSize(width: size, height: size), scaleMode: mode.scaleMode,
            outputFormat: format.flatMap(outputFormat), compressionQuality: quality
        )
        let formatName = "thumbnail-\(size)-\(mode.rawValue)-\(format.flatMap(outputFormat)?.name ?? "same")-q\(Int((quality * 100).rounded()))"
        var thumbnails = Format<Image>.resizing(name: formatName, resizer: resizer)
        thumbnails.derivesFromOriginal = false   // the tool keeps the thumbnails, not the originals
        // The name carries every setting already (the tool's folder layout is `<cache>/<name>`).
        thumbnails.version = nil
        let cache = Cache<Image>(name: "thumbnail", directory: root, logger: quietLogger)
        cache.addFormat(thumbnails)

        var report = Report(folder: folder, cacheDirectory: root, cacheDeleted: deleting, format: formatName, images: files.count)
        let line = progress.line()
        var results: [String: Image] = [:]
        // As many images in flight as cores (a resize keeps one core busy); what each layer served
        // in a pass is the rise of its hits over the pass.
        let width = max(1, ProcessInfo.processInfo.activeProcessorCount)
        for name in ["cold", "warm (memory cleared)", "hot"] {
            if name.hasPrefix("warm") { cache.removeAllFromMemory() }
            var pass = Pass(name: name)
            let before = try cache.layerStatistics(formatName: formatName)
            let start = ContinuousClock.now
            var done = 0
            try await withThrowingTaskGroup(of: (String, Result<Image, any Error>).self) { group in
                var next = 0
                func add() {
                    let file = files[next]
                    next += 1
                    group.addTask {
                        do { return (file, .success(try await cache.fetch(path: file, formatName: formatName))) } catch { return (file, .failure(error)) }
                    }
                }
                while next < min(width, files.count) { add() }
                while let (file, result) = try await group.next() {
                    done += 1
                    line.show("\(name): \(done)/\(files.count) \(shown((file as NSString).lastPathComponent))")
                    switch result {
                    case .success(let image):
                        results[file] = image
                    case .failure(let error):
                        pass.failed += 1
                        if name == "cold" { report.failures.append(Failure(file: file, reason: ToolError.reason(error))) }
                    }
                    if next < files.count { add() }
                }
            }
            line.end()
            let elapsed = ContinuousClock.now - start
            pass.seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            for (old, new) in zip(before, try cache.layerStatistics(formatName: formatName)) where new.statistics.hits > old.statistics.hits {
                pass.served[new.name] = new.statistics.hits - old.statistics.hits
            }
            report.failures.sort { $0.file < $1.file }
            report.passes.append(pass)
        }
        report.layers = try cache.layerStatistics(formatName: formatName).map {
            Layer(name: $0.name, hits: $0.statistics.hits, misses: $0.statistics.misses, writes: $0.statistics.writes, errors: $0.statistics.errors)
        }
        let resized = files.compactMap { file in results[file].map { (file, $0) } }
        report.originalBytes = try await IOExecutor.shared.run {
            resized.reduce(0) { total, item in total + ((try? FileManager.default.attributesOfItem(atPath: item.0)[.size] as? Int) ?? 0) }
        }
        report.thumbnailBytes = resized.reduce(0) { $0 + $1.1.data.count }
        report.thumbnails = resized.map { ThumbnailInfo(file: $0.0, width: $0.1.width, height: $0.1.height, format: $0.1.format.name, bytes: $0.1.data.count) }
        try await cache.flush()
        if let output {
            report.output = output
            try await IOExecutor.shared.run { [force] in try Self.write(resized, to: output, force: force) }
        }
        return report
    }

    /// Writes each thumbnail to `output`, named after its original with its format's extension
    /// (`photo.png` as JPEG: `photo.jpg`; the original's whole name first when two would collide).
    /// A file in the way that no thumbnail run wrote (``OutputManifest``) stops the command before
    /// any is written, unless `force`.
    static func write(_ thumbnails: [(String, Image)], to output: String, force: Bool) throws {
        var taken: Set<String> = []
        var targets: [(name: String, image: Image)] = []
        for (file, image) in thumbnails {
            let name = (file as NSString).lastPathComponent
            let suffix = image.format == .jpeg ? "jpg" : image.format.name
            var target = (name as NSString).deletingPathExtension + "." + suffix
            if taken.contains(target) { target = name + "." + suffix }
            taken.insert(target)
            targets.append((target, image))
        }
        var manifest = OutputManifest(folder: output)
        if !force {
            let foreign = targets.map(\.name).filter { name in
                var info = stat()
                return lstat(output + "/" + name, &info) == 0 && !manifest.wrote(name, info)
            }
            if !foreign.isEmpty {
                let listed = foreign.prefix(5).map { shown($0) }.joined(separator: ", ") + (foreign.count > 5 ? ", …" : "")
                throw ToolError.usage("--output \(shown(output)) already has \(counted(foreign.count, "file", "files")) no thumbnail run wrote (\(listed)); pass --force to replace them")
            }
        }
        for (name, image) in targets {
            let path = output + "/" + name
            // Written beside and renamed over: a link in the way is replaced, never followed.
            do { try image.data.write(to: URL(fileURLWithPath: path), options: .atomic) } catch {
                throw ToolError.io("could not write \(shown(path))", error)
            }
            var info = stat()
            if lstat(path, &info) == 0 { manifest.record(name, info) }
        }
        do { try manifest.save() } catch { throw ToolError.io("could not write \(shown(output + "/" + OutputManifest.fileName))", error) }
    }

    /// The files thumbnail runs wrote to an output folder, with the size and modification time
    /// each had then: a file that still has both is the tool's own to replace.
    struct OutputManifest {
        static let fileName = ".haneke-thumbnails"
        let folder: String
        private var files: [String: String] = [:]

        init(folder: String) {
            self.folder = folder
            let text = (try? String(contentsOfFile: folder + "/" + Self.fileName, encoding: .utf8)) ?? ""
            for line in text.split(separator: "\n") {
                let parts = line.split(separator: "\t", maxSplits: 1)
                if parts.count == 2 { files[String(parts[1])] = String(parts[0]) }
            }
        }

        private static func stamp(_ info: stat) -> String {
            "\(info.st_size):\(info.st_mtim.tv_sec).\(info.st_mtim.tv_nsec)"
        }

        /// Whether a run wrote `name` as it is now (a regular file of the recorded size and time).
        func wrote(_ name: String, _ info: stat) -> Bool {
            info.st_mode & S_IFMT == S_IFREG && files[name] == Self.stamp(info)
        }

        mutating func record(_ name: String, _ info: stat) {
            files[name] = Self.stamp(info)
        }

        /// Writes the list (private to the user), replacing the old one.
        func save() throws {
            let text = files.keys.sorted().map { files[$0]! + "\t" + $0 + "\n" }.joined()
            let path = folder + "/" + Self.fileName
            try Data(text.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
            chmod(path, 0o600)
        }
    }

    private func show(_ report: Report) {
        print("Haneke thumbnail: \(counted(report.images, "image", "images")) in \(shown(report.folder)) → format \(report.format), cache in \(shown(report.cacheDirectory))\(report.cacheDeleted ? " (deleted at the end)" : "")\n")
        printTable(
            ["pass", "images", "memory", "disk", "fetcher", "failed", "time", "per image"],
            report.passes.map { pass in
                let done = pass.served.values.reduce(0, +)
                return [pass.name, "\(report.images)", "\(pass.served["memory", default: 0])", "\(pass.served["disk", default: 0])",
                        "\(pass.served["fetcher", default: 0])", "\(pass.failed)", String(format: "%.3f s", pass.seconds),
                        done + pass.failed == 0 ? "—" : String(format: "%.2f ms", pass.seconds * 1000 / Double(done + pass.failed))]
            },
            rightAligned: [1, 2, 3, 4, 5, 6, 7]
        )
        print("")
        printTable(
            ["layer", "hits", "misses", "writes", "errors"],
            report.layers.map { [$0.name, "\($0.hits)", "\($0.misses)", "\($0.writes)", "\($0.errors)"] },
            rightAligned: [1, 2, 3, 4]
        )
        let count = report.thumbnails.count
        print("\nbytes: \(counted(count, "original", "originals")), \(ByteSize.format(report.originalBytes)) → \(counted(count, "thumbnail", "thumbnails")), \(ByteSize.format(report.thumbnailBytes))"
            + (report.originalBytes > 0 ? String(format: " (%.1f%%)", Double(report.thumbnailBytes) * 100 / Double(report.originalBytes)) : ""))
        if let output = report.output { print("thumbnails written to \(shown(output))") }
        if !report.failures.isEmpty {
            print("\n\(counted(report.failures.count, "image", "images")) failed:")
            for failure in report.failures { print("  \(shown(failure.file)): \(shown(failure.reason, limit: 1000))") }
        }
    }

    /// What `--json` prints.
    struct Report: Encodable {
        var folder: String
        var cacheDirectory: String
        var cacheDeleted: Bool
        var format: String
        var images: Int
        var passes: [Pass] = []
        var layers: [Layer] = []
        var originalBytes = 0
        var thumbnailBytes = 0
        var thumbnails: [ThumbnailInfo] = []
        var output: String?
        var failures: [Failure] = []

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(folder, forKey: .folder)
            try container.encode(cacheDirectory, forKey: .cacheDirectory)
            try container.encode(cacheDeleted, forKey: .cacheDeleted)
            try container.encode(format, forKey: .format)
            try container.encode(images, forKey: .images)
            try container.encode(passes, forKey: .passes)
            try container.encode(layers, forKey: .layers)
            try container.encode(originalBytes, forKey: .originalBytes)
            try container.encode(thumbnailBytes, forKey: .thumbnailBytes)
            try container.encode(thumbnails, forKey: .thumbnails)
            try container.encode(OrNull(output), forKey: .output)
            try container.encode(failures, forKey: .failures)
        }

        enum CodingKeys: String, CodingKey {
            case folder, cacheDirectory, cacheDeleted, format, images, passes, layers, originalBytes, thumbnailBytes, thumbnails, output, failures
        }
    }

    /// One pass over the folder.
    struct Pass: Encodable {
        var name: String
        /// Images served, by the layer that served them (`memory`, `disk`, `fetcher`).
        var served: [String: Int] = [:]
        var failed = 0
        var seconds = 0.0
    }

    /// A layer's counters after the three passes.
    struct Layer: Encodable {
        var name: String
        var hits: Int
        var misses: Int
        var writes: Int
        var errors: Int
    }

    /// One thumbnail made.
    struct ThumbnailInfo: Encodable {
        var file: String
        var width: Int
        var height: Int
        var format: String
        var bytes: Int
    }

    /// An image that could not be read or resized.
    struct Failure: Encodable {
        var file: String
        var reason: String
    }
}
