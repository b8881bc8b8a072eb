import CompressedStore
import FileStore
import Foundation
import HanekeProtocols
import HanekeTesting
import MemoryStore
import Testing
import TestSupport

@Suite(.timeLimit(.minutes(2)), .offThePool, .tags(.disk))
struct CompressedStoreTests {
    static let frameOverhead = 7 + 8 + 4 + 4   // header with content size, end mark, content checksum

    func fixture(_ name: String) throws -> Data {
        let url = try #require(Bundle.module.url(forResource: name, withExtension: nil, subdirectory: "Fixtures"))
        return try Data(contentsOf: url)
    }

    static func randomBytes(_ count: Int, seed: UInt64) -> Data {
        var random = SeededRandomNumberGenerator(seed: seed)
        var bytes = [UInt8](repeating: 0, count: count)
        for i in stride(from: 0, to: count, by: 8) {
            let word = random.next()
            for j in 0..<min(8, count - i) { bytes[i + j] = UInt8(truncatingIfNeeded: word >> (8 * j)) }
        }
        return Data(bytes)
    }

    static func text(_ count: Int) -> Data {
        let sentence = "Haneke caches values in memory, on disk and in Redis; LZ4 keeps the disk small. "
        return Data(String(repeating: sentence, count: count / sentence.utf8.count + 1).utf8.prefix(count))
    }

    // MARK: - Golden frames from the lz4 tool

    @Test(arguments: [
        ("corpus.json.lz4", "corpus.json"),
        ("corpus-content-size.json.lz4", "corpus.json"),
        ("corpus-hc-linked.json.lz4", "corpus.json"),
        ("corpus-64k-blocks-blockcrc.json.lz4", "corpus.json"),
        ("corpus-no-checksum.json.lz4", "corpus.json"),
        ("corpus-from-pipe.json.lz4", "corpus.json"),
        ("random.bin.lz4", "random.bin"),
        ("hello.txt.lz4", "hello.txt"),
        ("empty.txt.lz4", "empty.txt"),
    ])
    func framesWrittenByTheLZ4ToolDecode(frameName: String, originalName: String) async throws {
        let bytes = MemoryStore<String, Data>()
        bytes.setValue(try fixture(frameName), forKey: "k")
        #expect(try await bytes.compressed().value(forKey: "k") == (try fixture(originalName)))
    }

    /// A warm read of `memory → coded(compressed(FileStore))` of a large value (over 64 KiB
    /// compressed) reads, decompresses and decodes in one job of the store's I/O executor, and the
    /// caller resumes once, with the value; a small one whose file the kernel has cached is read,
    /// decompressed and decoded on the caller's thread, without a hop.
    @Test func aReadOverAFileStoreDecompressesAndDecodesALargeValueOnItsExecutor() async throws {
        let directory = try TemporaryDirectory()
        let executor = IOExecutor(width: 1)
        let disk = try FileStore(directory: directory.path, executor: executor)
        let seen = Locked<[Bool]>([])
        let codec = ThreadNotingCodec(executor: executor, seen: seen)
        let store = disk.compressed().coded(with: codec)
        var random = SystemRandomNumberGenerator()
        let large = Data((0..<100_000).map { _ in UInt8.random(in: 0...255, using: &random) })
        try await store.setValue(large, forKey: "k")
        try await store.setValue(Self.text(10_000), forKey: "small")
        await disk.waitUntilIndexed()
        seen.withLock { $0.removeAll() }

        #expect(try await store.value(forKey: "k") == large)
        #expect(seen.withLock { $0 } == [true], "decoded on the executor that read the file")

        // Through a chain and a type-erased store, as a Cache's format stacks them.
        let chain = MemoryStore<String, Data>().chained(to: store).eraseToAnyStore()
        #expect(try await chain.value(forKey: "k") == large)
        #expect(seen.withLock { $0 } == [true, true])

        // A small value from the page cache: no hop.
        #expect(try await store.value(forKey: "small") == Self.text(10_000))
        #expect(seen.withLock { $0 } == [true, true, false], "read and decoded on the caller's thread")

        // What the caller's transform throws comes out as it was; the file store counts no error.
        struct Refused: Error {}
        await #expect(throws: Refused.self) {
            try await store.value(forKey: "k", transformedBy: { _ -> Int in throw Refused() })
        }
        #expect(disk.statistics.errors == 0)
        #expect(try await store.value(forKey: "missing", transformedBy: { _ in 1 }) == nil)

        // A damaged frame is the compressed store's error, thrown from the executor's job.
        var frame = try #require(try await disk.value(forKey: "k"))
        frame[frame.startIndex + frame.count / 2] ^= 0xFF
        try await disk.setValue(frame, forKey: "k")
        let error = await #expect(throws: StoreError.self) { try await store.value(forKey: "k") }
        #expect(error?.code == .corrupted, "\(String(describing: error))")
    }

    @Test(.tags(.process)) func framesThisStoreWritesDecodeWithTheLZ4Tool() async throws {
        let lz4 = try #require(Self.lz4Tool, "the lz4 tool is missing: make test installs it")
        let directory = try TemporaryDirectory()
        let disk = try FileStore(directory: directory.path)
        let store = disk.compressed()
        let values: [(String, Data)] = [
            ("text", Self.text(300_000)),
            ("random", Self.randomBytes(100_000, seed: 1)),
            ("empty", Data()),
            ("json", try fixture("corpus.json")),
        ]
        for (key, value) in values {
            try await store.setValue(value, forKey: key)
            // The payload after the header (40 bytes + key) is the frame.
            let offset = 40 + key.utf8.count + 1
            let output = try await Self.run("tail -c +\(offset) '\(disk.path(forKey: key))' | \(lz4) -d -c")
            #expect(output == value, "key \(key)")
        }
    }

    @Test(.tags(.process)) func highCompressionFramesAlsoDecodeWithTheLZ4Tool() async throws {
        let lz4 = try #require(Self.lz4Tool)
        let directory = try TemporaryDirectory()
        let value = Self.text(200_000)
        for configuration in [
            CompressedStore<MemoryStore<String, Data>>.Configuration(level: .maximum, blockSize: .megabytes4),
            .init(level: .accelerated(8), blockSize: .kilobytes256, linkedBlocks: false),
        ] {
            let frame = try MemoryStore<String, Data>().compressed(configuration).frame(for: value)
            let path = directory.appending("frame.lz4")
            try frame.write(to: URL(fileURLWithPath: path))
            #expect(try await Self.run("\(lz4) -d -c '\(path)'") == value)
        }
    }

    // MARK: - Round trips

    /// The values of ``valuesRoundTrip(name:)``, by name. The test's arguments are the names: the
    /// test framework identifies each case by encoding its arguments, and encoding 16 MiB of bytes
    /// took 0.3 s of CPU on a cooperative thread before any test ran.
    static func roundTripValue(named name: String) -> Data {
        switch name {
        case "one byte": Data([0x2A])
        case "64 KiB - 1 of text": text(65_535)
        case "64 KiB of text": text(65_536)
        case "64 KiB + 1 of text": text(65_537)
        case "64 KiB of random": randomBytes(65_536, seed: 2)
        case "many blocks of text": text(1_000_000)
        case "many blocks of random": randomBytes(300_000, seed: 3)
        case "16 MiB of text": text(16 << 20)
        default: Data()
        }
    }

    @Test(arguments: [
        "empty", "one byte", "64 KiB - 1 of text", "64 KiB of text", "64 KiB + 1 of text", "64 KiB of random",
        "many blocks of text", "many blocks of random", "16 MiB of text",
    ])
    func valuesRoundTrip(name: String) async throws {
        let value = Self.roundTripValue(named: name)
        #expect(!value.isEmpty || name == "empty", "every name has its value")
        let bytes = MemoryStore<String, Data>()
        let store = bytes.compressed()
        try await store.setValue(value, forKey: name)
        #expect(try await store.value(forKey: name) == value)
        let frame = try #require(bytes.value(forKey: name))
        #expect(frame.starts(with: [0x04, 0x22, 0x4D, 0x18]))
    }

    @Test(arguments: CompressedStore<MemoryStore<String, Data>>.BlockSize.allCases)
    func everyBlockSizeAndLevelRoundTrips(blockSize: CompressedStore<MemoryStore<String, Data>>.BlockSize) async throws {
        let value = Self.text(700_000) + Self.randomBytes(50_000, seed: 4)
        for level in [CompressionLevel.fast, .accelerated(4), .high, .high(3), .maximum] {
            for linked in [true, false] {
                let store = MemoryStore<String, Data>().compressed(.init(level: level, blockSize: blockSize, linkedBlocks: linked))
                try await store.setValue(value, forKey: "k")
                #expect(try await store.value(forKey: "k") == value, "\(level) linked: \(linked)")
            }
        }
    }

    @Test func textCompressesAndRandomBytesGrowOnlyByTheFrameOverhead() throws {
        let store = MemoryStore<String, Data>().compressed()
        let text = try store.frame(for: Self.text(100_000))
        #expect(text.count < 10_000)
        for size in [1, 1_000, 65_536, 200_000] {
            let frame = try store.frame(for: Self.randomBytes(size, seed: UInt64(size)))
            let blocks = (size + 65_535) / 65_536
            #expect(frame.count <= size + Self.frameOverhead + 4 * blocks, "\(size) bytes")
        }
    }

    @Test func theJSONCorpusCompressesAboutThreeToOne() async throws {
        let store = MemoryStore<String, Data>().compressed()
        try await store.setValue(try fixture("corpus.json"), forKey: "corpus")
        let statistics = store.compressionStatistics
        #expect(statistics.bytesBeforeCompression == 132_408)
        let ratio = try #require(statistics.ratio)
        #expect(ratio > 3)
        _ = try await store.value(forKey: "corpus")
        #expect(store.compressionStatistics.decompressedBytesRead == 132_408)
        #expect(store.compressionStatistics.compressedBytesRead == statistics.bytesAfterCompression)
    }

    // MARK: - Damage

    @Test(arguments: [1, 4, 7, 18, 100, 5_000])
    func aTruncatedFrameIsCorrupted(keep: Int) async throws {
        let bytes = MemoryStore<String, Data>()
        let store = bytes.compressed()
        try await store.setValue(Self.text(20_000) + Self.randomBytes(5_000, seed: 5), forKey: "k")
        let frame = try #require(bytes.value(forKey: "k"))
        bytes.setValue(frame.prefix(min(keep, frame.count - 1)), forKey: "k")
        let error = await #expect(throws: StoreError.self) { try await store.value(forKey: "k") }
        #expect(error?.code == .corrupted)
        #expect(error?.message.contains("k") == true)
    }

    @Test func everyFlippedBitIsCaught() async throws {
        let bytes = MemoryStore<String, Data>()
        let store = bytes.compressed()
        let value = Self.text(3_000) + Self.randomBytes(500, seed: 6)
        try await store.setValue(value, forKey: "k")
        let frame = try #require(bytes.value(forKey: "k"))
        var caught = 0
        for offset in 0..<frame.count {
            for bit in [0, 3, 7] {
                var damaged = frame
                damaged[offset] ^= UInt8(1 << bit)
                bytes.setValue(damaged, forKey: "k")
                do {
                    let decoded = try await store.value(forKey: "k")
                    #expect(decoded == value, "a flipped bit at \(offset) gave wrong data")
                } catch let error as StoreError {
                    #expect(error.code == .corrupted || error.code == .decompressionLimitExceeded)
                    caught += 1
                }
            }
        }
        // Bits that change nothing (reserved, unused) may decode to the same value; none gives wrong data.
        #expect(caught > frame.count * 3 * 9 / 10)
    }

    @Test(arguments: [Data([0]), Data("not a frame at all".utf8), Data(repeating: 0xFF, count: 64), Data([0x04, 0x22, 0x4D, 0x18])])
    func garbageIsCorrupted(garbage: Data) async throws {
        let bytes = MemoryStore<String, Data>()
        bytes.setValue(garbage, forKey: "k")
        let error = await #expect(throws: StoreError.self) { try await bytes.compressed().value(forKey: "k") }
        #expect(error?.code == .corrupted)
    }

    @Test func anEmptyStoredValueIsCorrupted() async throws {
        let bytes = MemoryStore<String, Data>()
        bytes.setValue(Data(), forKey: "k")
        let error = await #expect(throws: StoreError.self) { try await bytes.compressed().value(forKey: "k") }
        #expect(error?.code == .corrupted)
    }

    @Test func bytesAfterTheFrameAreCorrupted() async throws {
        let bytes = MemoryStore<String, Data>()
        let store = bytes.compressed()
        try await store.setValue(Data("value".utf8), forKey: "k")
        bytes.setValue(try #require(bytes.value(forKey: "k")) + Data([0]), forKey: "k")
        let error = await #expect(throws: StoreError.self) { try await store.value(forKey: "k") }
        #expect(error?.code == .corrupted)
    }

    /// The content checksum of a frame this library writes is checked by libxxhash rather than by
    /// liblz4 (whose copy of XXH32 is three times as slow on Debian's build): damage that still
    /// decodes (a byte of an incompressible block, stored as it is) and a damaged checksum are both
    /// caught, with the same error as before. A frame with block checksums (from the lz4 tool) is
    /// still checked whole by liblz4.
    @Test func everyChecksumOfAFrameIsChecked() throws {
        var random = SystemRandomNumberGenerator()
        let noise = Data((0..<4_096).map { _ in UInt8.random(in: 0...255, using: &random) })
        let frame = try LZ4Frame.compress(noise)
        #expect(try LZ4Frame.decompress(frame) == noise)
        var inTheData = frame
        inTheData[frame.count / 2] ^= 0x01   // an uncompressed block: it still decodes, to other bytes
        var inTheChecksum = frame
        inTheChecksum[frame.count - 1] ^= 0x80
        for damaged in [inTheData, inTheChecksum] {
            let error = #expect(throws: StoreError.self) { try LZ4Frame.decompress(damaged) }
            #expect(error?.code == .corrupted)
            #expect(error?.message == "The \(frame.count)-byte LZ4 frame is damaged: the content checksum does not match")
        }
        // Made by `lz4 -B4 -BX`: 64 KiB blocks, each with its checksum; a byte of a block changed.
        var blockChecked = try fixture("corpus-64k-blocks-blockcrc.json.lz4")
        #expect(try LZ4Frame.decompress(blockChecked) == (try fixture("corpus.json")))
        blockChecked[blockChecked.count / 2] ^= 0x01
        #expect(throws: StoreError.self) { try LZ4Frame.decompress(blockChecked) }
    }

    @Test func theRecordedContentSizeIsReadFromACheckedHeader() throws {
        let frame = try LZ4Frame.compress(Self.text(5_000))
        #expect(LZ4Frame.recordedContentSize(of: frame) == 5_000)
        #expect(LZ4Frame.recordedContentSize(of: try fixture("claims-4GiB.lz4")) == 1 << 32)
        #expect(LZ4Frame.recordedContentSize(of: try fixture("corpus.json.lz4")) == nil)   // no size recorded
        var damaged = frame
        damaged[8] ^= 0x01   // inside the recorded size: the header checksum no longer matches
        #expect(LZ4Frame.recordedContentSize(of: damaged) == nil)
        #expect(try LZ4Frame.decompress(frame) == Self.text(5_000))
    }

    @Test func aFrameClaimingFourGiBIsRefusedBeforeAllocating() async throws {
        let bytes = MemoryStore<String, Data>()
        bytes.setValue(try fixture("claims-4GiB.lz4"), forKey: "k")   // made by `lz4 --content-size` of 4 GiB of zeros
        let before = peakMemory()
        let error = await #expect(throws: StoreError.self) { try await bytes.compressed().value(forKey: "k") }
        #expect(error?.code == .decompressionLimitExceeded)
        #expect(error?.message.contains("4294967296") == true)
        // Even with a limit above the claim, the truncated frame is found damaged, not allocated and filled.
        let generous = bytes.compressed(.init(decompressionLimit: 5 << 30))
        await #expect(throws: StoreError.self) { try await generous.value(forKey: "k") }
        // Neither allocated and filled the 4 GiB (the process's peak memory also counts whatever
        // ran beside this test).
        #expect(peakMemory() - before < 1 << 30, "the peak memory grew by \((peakMemory() - before) >> 20) MiB")
    }

    @Test func aFrameWithoutItsSizeIsHeldToTheLimitWhileDecoding() async throws {
        let bytes = MemoryStore<String, Data>()
        bytes.setValue(try fixture("corpus-from-pipe.json.lz4"), forKey: "k")   // no content size
        let error = await #expect(throws: StoreError.self) {
            try await bytes.compressed(.init(decompressionLimit: 100_000)).value(forKey: "k")
        }
        #expect(error?.code == .decompressionLimitExceeded)
        #expect(try await bytes.compressed(.init(decompressionLimit: 132_408)).value(forKey: "k")?.count == 132_408)
    }

    @Test func aFrameWithoutItsSizeStillDecodesAfterAFrameThatFailedHalfWay() async throws {
        let bytes = MemoryStore<String, Data>()
        let store = bytes.compressed()
        try await store.setValue(Self.text(300_000), forKey: "whole")
        let frame = try #require(bytes.value(forKey: "whole"))
        bytes.setValue(frame.prefix(frame.count / 2), forKey: "half")
        bytes.setValue(try fixture("corpus-from-pipe.json.lz4"), forKey: "no size")
        for _ in 0..<20 {
            await #expect(throws: StoreError.self) { try await store.value(forKey: "half") }
            #expect(try await store.value(forKey: "no size")?.count == 132_408)
        }
    }

    @Test func aValueOverTheLimitIsRefusedOnRead() async throws {
        let bytes = MemoryStore<String, Data>()
        try await bytes.compressed().setValue(Self.text(2_000), forKey: "k")
        let error = await #expect(throws: StoreError.self) {
            try await bytes.compressed(.init(decompressionLimit: 1_999)).value(forKey: "k")
        }
        #expect(error?.code == .decompressionLimitExceeded)
    }

    // MARK: - In a chain

    @Test func aDamagedFrameInAChainIsAMissIsRemovedAndTheFetcherIsAsked() async throws {
        let bytes = MemoryStore<String, Data>(name: "disk")
        let compressed = bytes.compressed()
        try await compressed.setValue(Data("old".utf8), forKey: "k")
        var frame = try #require(bytes.value(forKey: "k"))
        frame[frame.count - 6] ^= 0x01   // inside the data: the checksum no longer matches
        bytes.setValue(frame, forKey: "k")

        let calls = Locked(0)
        let store = MemoryStore<String, Data>(name: "memory")
            .chained(to: compressed)
            .fetching { key in
                calls.withLock { $0 += 1 }
                return Data("fetched \(key)".utf8)
            }
        #expect(try await store.fetch("k") == Data("fetched k".utf8))
        #expect(calls.withLock { $0 } == 1)
        #expect(try await compressed.value(forKey: "k") == Data("fetched k".utf8))
        let disk = try #require(store.layerStatistics.first { $0.name == "disk" })
        #expect(disk.statistics.errors == 1)
        #expect(compressed.compressionStatistics.framesRejected == 1)
    }

    @Test func theFileStoreCompressedConforms() async throws {
        try await StoreConformanceSuite {
            try TemporaryStore { try FileStore(directory: $0.path) }.compressed()
        }.run()
    }

    @Test func aMemoryToCompressedFileChainConforms() async throws {
        try await StoreConformanceSuite {
            MemoryStore<String, Data>(countLimit: 64)
                .chained(to: try TemporaryStore { try FileStore(directory: $0.path) }.compressed())
        }.run()
    }

    @Test func aCompressedMemoryStoreConforms() async throws {
        try await StoreConformanceSuite { MemoryStore<String, Data>().compressed(.init(level: .high)) }.run()
    }

    // MARK: - Helpers

    static let lz4Tool: String? = ["/usr/bin/lz4", "/usr/local/bin/lz4", "/opt/homebrew/bin/lz4"]
        .first { FileManager.default.isExecutableFile(atPath: $0) }

    static func run(_ command: String) async throws -> Data {
        let run = try await ChildProcess.run("/bin/sh", ["-c", command])
        guard run.status == 0 else {
            throw StoreError(.io, "`\(command)` exited with \(run.status): \(run.stderr)")
        }
        return run.stdout
    }

    /// A value larger than the decompression limit is refused on write — before, it was stored,
    /// could never be read back, and in a chain was a miss refetched on every request.
    @Test func aValueLargerThanTheDecompressionLimitIsRefusedOnWrite() async throws {
        let disk = try TemporaryStore { try FileStore(directory: $0.path, configuration: .init(capacity: nil)) }
        let compressed = disk.compressed(.init(decompressionLimit: 64 << 10))
        let big = Data(count: (64 << 10) + 1)
        let error = await #expect(throws: StoreError.self) { try await compressed.setValue(big, forKey: "big") }
        #expect(error?.code == .valueTooLarge)
        #expect(error?.message.contains("could never be read back") == true)
        #expect(try await disk.value(forKey: "big") == nil, "nothing was written")
        try await compressed.setValue(Data(count: 64 << 10), forKey: "at the limit")
        #expect(try await compressed.value(forKey: "at the limit")?.count == 64 << 10)

        // In a chain with a fetcher: the fetch returns the value, the disk keeps nothing, and the
        // error is the write's (reported, not cached as a miss to refetch forever).
        let calls = Locked(0)
        let chain = MemoryStore<String, Data>(countLimit: 0)
            .chained(to: compressed)
            .fetching { _ in calls.withLock { $0 += 1 }; return big }
        #expect(try await chain.fetch("fetched") == big)
        #expect(calls.withLock { $0 } == 1)
        #expect(compressed.layerStatistics.contains { $0.statistics.errors > 0 })
    }
}

/// A codec of bytes as they are that notes, on each decode, whether it ran on `executor`.
private struct ThreadNotingCodec: DataCodec {
    let executor: IOExecutor
    let seen: Locked<[Bool]>

    func encode(_ value: Data) throws -> Data { value }

    func decode(_ data: Data) throws -> Data {
        seen.withLock { $0.append(executor.isCurrent) }
        return data
    }
}
