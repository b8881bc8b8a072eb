import BaselineLock
import Foundation
import Haneke
import HanekeProtocols
import HanekeTesting
import Images
import ThumbnailJob

#if canImport(Glibc)
import Glibc
#endif

/// Workload 8: 256-pixel thumbnails (aspect fit, JPEG quality 85) of 2–4 megapixel photo-like
/// JPEGs, by `ImageResizer` against `vipsthumbnail` and Pillow over the same files in the same run;
/// the peak memory of each as a child process; and a cached thumbnail read from memory and from
/// disk through `Cache<Image>` against `Cache<Data>` holding the same bytes.
enum ThumbnailBenchmarks {
    static func run(_ scale: Scale) async throws -> [Row] {
        let corpus = try await Corpus.make(count: scale.pick(20, smoke: 4))
        let scratch = RawFiles.scratchDirectory("thumbnails")
        defer { RawFiles.removeDirectory(scratch) }
        var rows: [Row] = []
        rows += try await throughput(corpus, scratch: scratch, scale: scale)
        rows += try await peakMemory(corpus, scratch: scratch)
        rows += try await cachedHits(corpus, scratch: scratch, scale: scale)
        return rows
    }

    static let resizer = ImageResizer(size: ImageSize(width: 256, height: 256), scaleMode: .aspectFit, outputFormat: .jpeg, compressionQuality: 0.85)
    static let concurrency = ProcessInfo.processInfo.activeProcessorCount

    // MARK: - Thumbnails per second

    static func throughput(_ corpus: Corpus, scratch: String, scale: Scale) async throws -> [Row] {
        let output = scratch + "/out"
        RawFiles.makeDirectory(output)
        let count = Double(corpus.files.count)
        let vipsthumbnail = try Tools.require("/usr/bin/vipsthumbnail", package: "libvips-tools")
        // The process's own start-up (loading libvips and its modules), measured apart: vipsthumbnail
        // --vips-version starts, prints libvips's version and exits.
        let startup = Measure.median(try await (0..<5).asyncMap { _ in try await Spawn.run(vipsthumbnail, ["--vips-version"]).seconds })

        let ours: () async throws -> Double = {
            let seconds = try await Measure.seconds {
                try await ThumbnailJob.run(files: corpus.files, output: output, resizer: resizer, concurrency: concurrency)
            }
            return count / seconds
        }
        let oneProcess: () async throws -> Double = {
            let run = try await Spawn.run(vipsthumbnail, ["-s", "256", "-o", output + "/%s.jpg[Q=85]"] + corpus.files)
            try run.check("vipsthumbnail")
            return count / max(1e-6, run.seconds - startup)
        }
        var rows: [Row] = []
        _ = try await ours()   // warm-up: the page cache, libvips's modules
        let (subject, baseline) = try await Measure.interleaved(rounds: scale.rounds, subject: ours, baseline: oneProcess)
        rows.append(Row(
            workload: "8", name: "thumbnails", variant: "\(corpus.files.count) JPEGs → 256 px",
            subject: Figure(label: "ImageResizer, \(concurrency) in flight", value: subject, unit: "thumbs/s"),
            baseline: Figure(label: "vipsthumbnail, 1 process", value: baseline, unit: "thumbs/s"),
            ratio: subject / baseline, goal: "≥ 0.9×", met: subject / baseline >= 0.9,
            note: String(format: "%.1f MP on average; vipsthumbnail's start-up (%.0f ms, --vips-version) taken off its time; it resizes one file after another, each with libvips's own threads", corpus.averageMegapixels, startup * 1000)
        ))

        let perFile: () async throws -> Double = {
            let seconds = try await Measure.seconds {
                for file in corpus.files {
                    try await Spawn.run(vipsthumbnail, ["-s", "256", "-o", output + "/%s.jpg[Q=85]", file]).check("vipsthumbnail")
                }
            }
            return count / seconds
        }
        let (subject2, perFileRate) = try await Measure.interleaved(rounds: min(scale.rounds, 3), subject: ours, baseline: perFile)
        rows.append(Row(
            workload: "8", name: "thumbnails", variant: "\(corpus.files.count) JPEGs → 256 px",
            subject: Figure(label: "ImageResizer", value: subject2, unit: "thumbs/s"),
            baseline: Figure(label: "vipsthumbnail, a process per file", value: perFileRate, unit: "thumbs/s"),
            ratio: subject2 / perFileRate, goal: "report", met: nil, note: nil
        ))

        switch try await Pillow.python() {
        case .failure(let error):
            rows.append(Row(
                workload: "8", name: "thumbnails", variant: "\(corpus.files.count) JPEGs → 256 px",
                subject: Figure(label: "ImageResizer", value: subject, unit: "thumbs/s"), baseline: nil, ratio: nil,
                goal: "≥ 3× Pillow", met: nil, note: "Pillow not measured: \(error)"
            ))
        case .success(let python):
            let pillow: () async throws -> Double = {
                try await Pillow.rate(python: python, files: corpus.files, output: output, scratch: scratch)
            }
            let (subject3, pillowRate) = try await Measure.interleaved(rounds: scale.rounds, subject: ours, baseline: pillow)
            let pillowVersion = try await Pillow.version(python)
            rows.append(Row(
                workload: "8", name: "thumbnails", variant: "\(corpus.files.count) JPEGs → 256 px",
                subject: Figure(label: "ImageResizer", value: subject3, unit: "thumbs/s"),
                baseline: Figure(label: "Pillow \(pillowVersion), 1 process", value: pillowRate, unit: "thumbs/s"),
                ratio: subject3 / pillowRate, goal: "≥ 3×", met: subject3 / pillowRate >= 3,
                note: "Image.thumbnail((256, 256)) then save as JPEG quality 85, timed inside Python (its start-up and imports not counted); one thread"
            ))
            // Core for core: ours one image at a time, as Pillow works.
            let single: () async throws -> Double = {
                let seconds = try await Measure.seconds {
                    try await ThumbnailJob.run(files: corpus.files, output: output, resizer: resizer, concurrency: 1)
                }
                return count / seconds
            }
            let (subject4, pillowRate4) = try await Measure.interleaved(rounds: scale.rounds, subject: single, baseline: pillow)
            rows.append(Row(
                workload: "8", name: "thumbnails", variant: "\(corpus.files.count) JPEGs → 256 px",
                subject: Figure(label: "ImageResizer, 1 in flight", value: subject4, unit: "thumbs/s"),
                baseline: Figure(label: "Pillow \(pillowVersion), 1 process", value: pillowRate4, unit: "thumbs/s"),
                ratio: subject4 / pillowRate4, goal: "report", met: nil, note: nil
            ))
        }
        return rows
    }

    // MARK: - Peak memory

    /// Each variant in a child process of its own, started by PeakRSS (a small C parent: see its
    /// source for why); its peak resident size is `ru_maxrss` from `wait4`, less the same program's
    /// peak when it starts and exits without an image (its code, libraries and interpreter): what
    /// the resizing itself added.
    static func peakMemory(_ corpus: Corpus, scratch: String) async throws -> [Row] {
        let output = scratch + "/out"
        let probe = Tools.sibling("ThumbnailProbe")
        let peakRSS = Tools.sibling("PeakRSS")
        let vipsthumbnail = try Tools.require("/usr/bin/vipsthumbnail", package: "libvips-tools")
        let report = scratch + "/peak-rss"
        func measure(_ program: String, _ arguments: [String]) async throws -> Double {
            try await Spawn.run(peakRSS, [report, program] + arguments).check((program as NSString).lastPathComponent)
            guard let kib = Double(try String(contentsOfFile: report, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)) else {
                throw Tools.Failure(message: "PeakRSS wrote no figure")
            }
            return kib / 1024
        }
        func peak(_ program: String, _ arguments: [String], floor floorArguments: [String]) async throws -> (peak: Double, floor: Double) {
            (try await measure(program, arguments), try await measure(program, floorArguments))
        }
        // One image at a time, as vipsthumbnail and Pillow resize; and as many as workload 8's
        // throughput figure has in flight.
        let ours = try await peak(probe, [output, "1"] + corpus.files, floor: [output, "1"])
        let oursWide = try await peak(probe, [output, String(concurrency)] + corpus.files, floor: [output, String(concurrency)])
        let vips = try await peak(vipsthumbnail, ["-s", "256", "-o", output + "/%s.jpg[Q=85]"] + corpus.files, floor: ["--vips-version"])
        var rows: [Row] = []
        func row(_ label: String, _ baseline: (peak: Double, floor: Double)) -> Row {
            let subject = ours.peak - ours.floor, base = baseline.peak - baseline.floor
            return Row(
                workload: "8", name: "thumbnail peak memory", variant: "1 at a time, above the floor",
                subject: Figure(label: "ImageResizer", value: subject, unit: "MiB"),
                baseline: Figure(label: label, value: base, unit: "MiB"),
                ratio: base / max(subject, 0.01), goal: "report", met: nil,
                note: String(
                    format: "ru_maxrss of a child (PeakRSS) over %d JPEGs less its floor (the same program with no image): ours %.1f MiB (floor %.1f), %@ %.1f MiB (floor %.1f); ours with %d in flight %.1f MiB above its floor",
                    corpus.files.count, ours.peak, ours.floor, label, baseline.peak, baseline.floor, concurrency, oursWide.peak - oursWide.floor
                )
            )
        }
        rows.append(row("vipsthumbnail", vips))
        if case .success(let python) = try await Pillow.python() {
            let script = try Pillow.script(in: scratch)
            let pillow = try await peak(python, [script, output, scratch + "/pillow-time"] + corpus.files, floor: [script, output, scratch + "/pillow-time"])
            rows.append(row("Pillow", pillow))
        }
        return rows
    }

    // MARK: - Cached thumbnails

    /// A thumbnail read back through `Cache<Image>` — from memory, and from disk after
    /// `removeAllFromMemory()` — against `Cache<Data>` holding the same bytes, key by key,
    /// alternating which cache goes first.
    static func cachedHits(_ corpus: Corpus, scratch: String, scale: Scale) async throws -> [Row] {
        var thumbnails: [Image] = []
        for file in corpus.files {
            let data = try await IOExecutor.shared.run { try Data(contentsOf: URL(fileURLWithPath: file)) }
            thumbnails.append(try await resizer.resize(Image(data: data)))
        }
        let keyCount = scale.pick(400, smoke: 40)
        let keys = (0..<keyCount).map { "https://images.example.com/photos/\($0).jpg" }
        let format = Format<Image>.images(name: "thumbnail-256")
        var dataFormat = Format<Data>(name: "thumbnail-256")
        dataFormat.compressesOnDisk = false
        let images = Cache<Image>(name: "images", directory: scratch + "/image-cache")
        images.addFormat(format)
        let bytes = Cache<Data>(name: "bytes", directory: scratch + "/data-cache")
        bytes.addFormat(dataFormat)
        for (index, key) in keys.enumerated() {
            let thumbnail = thumbnails[index % thumbnails.count]
            try await images.set(thumbnail, forKey: key, formatName: "thumbnail-256")
            try await bytes.set(thumbnail.data, forKey: key, formatName: "thumbnail-256")
        }
        try await images.flush()
        try await bytes.flush()
        let averageBytes = thumbnails.reduce(0) { $0 + $1.data.count } / max(1, thumbnails.count)

        var rows: [Row] = []
        for fromDisk in [false, true] {
            var imageTimes: [Double] = []
            var dataTimes: [Double] = []
            for round in 0..<max(3, scale.rounds) {
                if fromDisk {
                    images.removeAllFromMemory()
                    bytes.removeAllFromMemory()
                }
                for key in keys {
                    let imageFirst = round % 2 == 0
                    if !imageFirst { dataTimes.append(try await time { _ = try await bytes.fetch(key: key, formatName: "thumbnail-256") }) }
                    imageTimes.append(try await time { _ = try await images.fetch(key: key, formatName: "thumbnail-256") })
                    if imageFirst { dataTimes.append(try await time { _ = try await bytes.fetch(key: key, formatName: "thumbnail-256") }) }
                }
            }
            let image = Measure.percentile(imageTimes, 50), data = Measure.percentile(dataTimes, 50)
            rows.append(Row(
                workload: "8", name: "cached thumbnail hit", variant: fromDisk ? "disk (memory cleared)" : "memory",
                subject: Figure(label: "Cache<Image>", value: image, unit: "µs"),
                baseline: Figure(label: "Cache<Data>, same bytes", value: data, unit: "µs"),
                ratio: data / image, goal: "≤ 1.3× Data", met: image <= 1.3 * data,
                note: fromDisk
                    ? String(format: "p50 of %d keys × %d rounds, %d-byte JPEGs on average; an image hit from disk also reads its header (format, size, alpha), in Swift", keyCount, max(3, scale.rounds), averageBytes)
                    : nil
            ))
        }
        return rows
    }

    private static func time(_ body: () async throws -> Void) async throws -> Double {
        try await Measure.seconds(body) * 1e6
    }

    // MARK: - Corpus

    /// Photo-like JPEGs of 2 to 4 megapixels — gradients, soft discs, fine noise — made once with
    /// libvips (a PNG of the pixels, encoded at quality 90) and kept in `.build/thumbnail-corpus`.
    struct Corpus {
        var files: [String]
        var averageMegapixels: Double

        static let sizes = [(2048, 1536), (1920, 1080), (2304, 1728), (1600, 1600), (2560, 1440)]

        static func make(count: Int) async throws -> Corpus {
            let folder = Tools.packageRoot + "/.build/thumbnail-corpus/v1"
            RawFiles.makeDirectory(folder)
            var files: [String] = []
            var pixels = 0
            for index in 0..<count {
                let (width, height) = sizes[index % sizes.count]
                pixels += width * height
                let path = folder + String(format: "/photo-%02d.jpg", index)
                files.append(path)
                if FileManager.default.fileExists(atPath: path) { continue }
                let png = photoPNG(width: width, height: height, seed: UInt64(index + 1))
                let encoder = ImageResizer(size: ImageSize(width: 1, height: 1), scaleMode: .none, outputFormat: .jpeg, compressionQuality: 0.9, pixelLimit: nil)
                let jpeg = try await encoder.resize(Image(data: png, pixelLimit: nil)).data
                try await IOExecutor.shared.run { try jpeg.write(to: URL(fileURLWithPath: path + ".tmp")); try FileManager.default.moveItem(atPath: path + ".tmp", toPath: path) }
            }
            return Corpus(files: files, averageMegapixels: Double(pixels) / Double(count) / 1e6)
        }

        static func photoPNG(width: Int, height: Int, seed: UInt64) -> Data {
            // SplitMix64 from `seed` itself (the generator adds its step to the seed it is given):
            // the sequence the kept corpus (v1) was made with.
            var random = SeededRandomNumberGenerator(seed: seed &- 0x9E37_79B9_7F4A_7C15)
            let discs = (0..<8).map { _ in
                (x: random.unit() * Double(width), y: random.unit() * Double(height),
                 radius: (0.08 + 0.3 * random.unit()) * Double(min(width, height)),
                 color: (random.unit() * 255, random.unit() * 255, random.unit() * 255))
            }
            var bytes = [UInt8](repeating: 0, count: width * height * 3)
            for y in 0..<height {
                for x in 0..<width {
                    let u = Double(x) / Double(width), v = Double(y) / Double(height)
                    var pixel = (200 * u + 30, 160 * v + 40, 120 * (1 - u) * v + 60)
                    for disc in discs {
                        let dx = Double(x) - disc.x, dy = Double(y) - disc.y
                        let weight = max(0, 1 - (dx * dx + dy * dy).squareRoot() / disc.radius)
                        pixel.0 += (disc.color.0 - pixel.0) * weight
                        pixel.1 += (disc.color.1 - pixel.1) * weight
                        pixel.2 += (disc.color.2 - pixel.2) * weight
                    }
                    let noise = Double(Int(random.next() % 21) - 10)
                    let offset = (y * width + x) * 3
                    bytes[offset] = clamp(pixel.0 + noise)
                    bytes[offset + 1] = clamp(pixel.1 + noise)
                    bytes[offset + 2] = clamp(pixel.2 + noise)
                }
            }
            return PNG.rgb(width: width, height: height, pixels: bytes)
        }

        private static func clamp(_ value: Double) -> UInt8 { UInt8(max(0, min(255, value))) }
    }
}

extension SeededRandomNumberGenerator {
    /// A number in [0, 1) from the top 53 bits of the next one.
    mutating func unit() -> Double { Double(next() >> 11) / Double(1 << 53) }
}

/// Pillow in a virtual environment of the benchmarks' own, `.build/venv`, made with `python3 -m
/// venv` and `pip install pillow` on first use and kept.
enum Pillow {
    static let venv = Tools.packageRoot + "/.build/venv"

    /// The environment's python, made if missing (on the I/O executor: it waits for pip); a
    /// failure (no python3, no network) in words.
    static func python() async throws -> Result<String, Tools.Failure> {
        try await IOExecutor.shared.run { makePython() }
    }

    private static func makePython() -> Result<String, Tools.Failure> {
        if let cached = cache.withLock({ $0 }) { return cached }
        let result: Result<String, Tools.Failure>
        let python = venv + "/bin/python"
        if FileManager.default.isExecutableFile(atPath: python), Tools.succeeds([python, "-c", "import PIL"]) {
            result = .success(python)
        } else {
            print("workload 8: making \(venv) with Pillow (once)…")
            if Tools.succeeds(["/usr/bin/env", "python3", "-m", "venv", venv]), Tools.succeeds([venv + "/bin/pip", "install", "--quiet", "pillow"]),
               Tools.succeeds([python, "-c", "import PIL"]) {
                result = .success(python)
            } else {
                result = .failure(Tools.Failure(message: "could not make \(venv) with Pillow (python3 -m venv, pip install pillow)"))
            }
        }
        cache.withLock { $0 = result }
        return result
    }

    private static let cache = PthreadLocked<Result<String, Tools.Failure>?>(nil)

    static func version(_ python: String) async throws -> String {
        try await IOExecutor.shared.run { versionNow(python) }
    }

    private static func versionNow(_ python: String) -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = ["-c", "import PIL; print(PIL.__version__)"]
        let pipe = Pipe()
        process.standardOutput = pipe
        guard (try? process.run()) != nil else { return "?" }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }


    /// The script: thumbnails of FILES into OUTDIR; writes its own time, in seconds, to TIMEFILE.
    static func script(in scratch: String) throws -> String {
        let path = scratch + "/pillow_thumbnails.py"
        try Data("""
            import os, sys, time
            from PIL import Image
            output, timefile, files = sys.argv[1], sys.argv[2], sys.argv[3:]
            start = time.perf_counter()
            for path in files:
                with Image.open(path) as image:
                    image.thumbnail((256, 256))
                    name = os.path.splitext(os.path.basename(path))[0] + ".jpg"
                    image.save(os.path.join(output, name), "JPEG", quality=85)
            with open(timefile, "w") as f:
                f.write(str(time.perf_counter() - start))

            """.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    static func rate(python: String, files: [String], output: String, scratch: String) async throws -> Double {
        let script = try script(in: scratch)
        let timeFile = scratch + "/pillow-time"
        try await Spawn.run(python, [script, output, timeFile] + files).check("python (Pillow)")
        guard let seconds = Double(try String(contentsOfFile: timeFile, encoding: .utf8)), seconds > 0 else {
            throw Tools.Failure(message: "the Pillow script wrote no time")
        }
        return Double(files.count) / seconds
    }
}

enum Tools {
    /// Runs a program (its path first) and waits for it; whether it exited with 0.
    static func succeeds(_ arguments: [String]) -> Bool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: arguments[0])
        process.arguments = Array(arguments.dropFirst())
        guard (try? process.run()) != nil else { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }

    /// Starts a program with its stdout on a pipe (stderr is dropped).
    static func launch(_ program: String, _ arguments: [String]) throws -> (process: Process, stdout: Pipe) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        return (process, output)
    }

    /// Runs a program and waits for it: its exit status and what it wrote on stdout (stderr is
    /// dropped). Blocks: call it off the cooperative pool.
    static func output(_ program: String, _ arguments: [String]) throws -> (status: Int32, stdout: Data) {
        let (process, output) = try launch(program, arguments)
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, data)
    }

    struct Failure: Error, CustomStringConvertible {
        var message: String
        var description: String { message }
    }

    /// The Benchmarks package's folder.
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

    static func require(_ path: String, package: String) throws -> String {
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw Failure(message: "\(path) is missing: install the Debian package \(package) (make bench-deps does)")
        }
        return path
    }

    /// An executable built beside this one.
    static func sibling(_ name: String) -> String {
        URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent().appendingPathComponent(name).path
    }
}

/// A child process started with posix_spawn and reaped with waitpid, for its wall time. Its output
/// goes to /dev/null. The wait is on the I/O executor, never on a cooperative thread.
enum Spawn {
    struct Outcome {
        var status: Int32
        var seconds: Double
        var program: String

        func check(_ name: String) throws {
            guard status == 0 else { throw Tools.Failure(message: "\(name) failed with status \(status)") }
        }
    }

    @discardableResult
    static func run(_ program: String, _ arguments: [String]) async throws -> Outcome {
        try await IOExecutor.shared.run {
            var actions = posix_spawn_file_actions_t()
            posix_spawn_file_actions_init(&actions)
            defer { posix_spawn_file_actions_destroy(&actions) }
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
            posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
            let argv: [UnsafeMutablePointer<CChar>?] = ([program] + arguments).map { strdup($0) } + [nil]
            defer { for pointer in argv { free(pointer) } }
            var pid: pid_t = 0
            let start = ContinuousClock.now
            let environment: [UnsafeMutablePointer<CChar>?] = ProcessInfo.processInfo.environment.map { strdup($0.key + "=" + $0.value) } + [nil]
            defer { for pointer in environment { free(pointer) } }
            let result = posix_spawn(&pid, program, &actions, nil, argv, environment)
            guard result == 0 else { throw Tools.Failure(message: "could not start \(program): \(String(cString: strerror(result)))") }
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 {
                guard errno == EINTR else { throw Tools.Failure(message: "waitpid failed: \(String(cString: strerror(errno)))") }
            }
            let elapsed = ContinuousClock.now - start
            let exitStatus = (status & 0x7F) == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
            return Outcome(
                status: exitStatus,
                seconds: elapsed.seconds,
                program: program
            )
        }
    }
}

extension Range where Bound == Int {
    func asyncMap<T>(_ transform: (Int) async throws -> T) async rethrows -> [T] {
        var results: [T] = []
        for value in self { results.append(try await transform(value)) }
        return results
    }
}

/// PNG of RGB pixels with deflate's stored blocks (no compressor needed), for the corpus.
enum PNG {
    static func rgb(width: Int, height: Int, pixels: [UInt8]) -> Data {
        var scanlines: [UInt8] = []
        scanlines.reserveCapacity((width * 3 + 1) * height)
        for row in 0..<height {
            scanlines.append(0)
            scanlines += pixels[(row * width * 3)..<((row + 1) * width * 3)]
        }
        var zlib: [UInt8] = [0x78, 0x01]
        zlib.reserveCapacity(scanlines.count + scanlines.count / 65_535 * 5 + 16)
        var offset = 0
        repeat {
            let length = min(65_535, scanlines.count - offset)
            let last: UInt8 = offset + length == scanlines.count ? 1 : 0
            zlib += [last, UInt8(length & 0xFF), UInt8(length >> 8), UInt8(~length & 0xFF), UInt8((~length >> 8) & 0xFF)]
            zlib += scanlines[offset..<(offset + length)]
            offset += length
        } while offset < scanlines.count
        var a: UInt32 = 1, b: UInt32 = 0
        for byte in scanlines { a = (a + UInt32(byte)) % 65_521; b = (b + a) % 65_521 }
        zlib += bigEndian(b << 16 | a)
        var data: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        data += chunk("IHDR", bigEndian(UInt32(width)) + bigEndian(UInt32(height)) + [8, 2, 0, 0, 0])
        data += chunk("IDAT", zlib)
        data += chunk("IEND", [])
        return Data(data)
    }

    private static func chunk(_ type: String, _ body: [UInt8]) -> [UInt8] {
        let typed = Array(type.utf8) + body
        return bigEndian(UInt32(body.count)) + typed + bigEndian(crc32(typed))
    }

    private static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }

    private static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var table = [UInt32](repeating: 0, count: 256)
        for index in 0..<256 {
            var crc = UInt32(index)
            for _ in 0..<8 { crc = crc & 1 == 1 ? 0xEDB8_8320 ^ (crc >> 1) : crc >> 1 }
            table[index] = crc
        }
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes { crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        return crc ^ 0xFFFF_FFFF
    }
}
