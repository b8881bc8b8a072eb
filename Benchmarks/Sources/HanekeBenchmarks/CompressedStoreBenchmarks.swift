import BaselineLock
import CLZ4Baseline
import CompressedStore
import Foundation
import HanekeProtocols
import MemoryStore

/// Workload 3: CompressedStore's `setValue` and `value(forKey:)` against direct liblz4 frame calls
/// on the same buffers, with a reused output buffer and context. The store sits on a one-slot base
/// (`Slot`), so the figures are the compressed layer's own; the chain benchmark measures stacks.
enum CompressedStoreBenchmarks {
    static func run(_ scale: Scale) async throws -> [Row] {
        var rows: [Row] = []
        let json = jsonCorpus(bytes: 1 << 20)
        var random = SystemRandomNumberGenerator()
        let noise = Data((0..<(1 << 20)).map { _ in UInt8.random(in: 0...255, using: &random) })
        for (size, label) in [(4 << 10, "4 KiB"), (1 << 20, "1 MiB")] {
            for (kind, data) in [("JSON", json), ("random", noise)] {
                rows += try await measure(Data(data.prefix(size)), label: "\(label) \(kind)", scale: scale)
            }
        }
        return rows
    }

    static func measure(_ value: Data, label: String, scale: Scale) async throws -> [Row] {
        let store = Slot().compressed()
        let iterations = max(1, scale.pick(64 << 20, smoke: 1 << 20) / value.count)
        let megabytes = Double(iterations * value.count) / 1e6

        // Baseline buffers, allocated once.
        let bound = baseline_bound(value.count)
        let frameBuffer = UnsafeMutableRawPointer.allocate(byteCount: bound, alignment: 16)
        let plainBuffer = UnsafeMutableRawPointer.allocate(byteCount: value.count + 1, alignment: 16)
        defer {
            frameBuffer.deallocate()
            plainBuffer.deallocate()
        }
        let context = baseline_decompression_context()
        let frameSize = value.withUnsafeBytes { baseline_compress(frameBuffer, bound, $0.baseAddress!, value.count) }

        let encode = try await Measure.interleaved(rounds: scale.rounds) {
            let seconds = try await Measure.seconds {
                for _ in 0..<iterations { try await store.setValue(value, forKey: "k") }
            }
            return megabytes / seconds
        } baseline: {
            var total = 0
            let seconds = Measure.seconds {
                value.withUnsafeBytes { source in
                    for _ in 0..<iterations { total &+= baseline_compress(frameBuffer, bound, source.baseAddress!, value.count) }
                }
            }
            precondition(total == frameSize * iterations)
            return megabytes / seconds
        }
        let decode = try await Measure.interleaved(rounds: scale.rounds) {
            var total = 0
            let seconds = try await Measure.seconds {
                for _ in 0..<iterations { total &+= try await store.value(forKey: "k")?.count ?? 0 }
            }
            precondition(total == value.count * iterations)
            return megabytes / seconds
        } baseline: {
            var total = 0
            let seconds = Measure.seconds {
                for _ in 0..<iterations { total &+= baseline_decompress(context, plainBuffer, value.count + 1, frameBuffer, frameSize) }
            }
            precondition(total == value.count * iterations)
            return megabytes / seconds
        }
        let statistics = store.compressionStatistics
        let ratio = Double(statistics.bytesBeforeCompression) / Double(statistics.bytesAfterCompression)
        let frame = try store.frame(for: value)
        let growth = frame.count - value.count
        let blocks = (value.count + 65_535) / 65_536
        let overhead = 23 + 4 * blocks
        let isRandom = label.hasSuffix("random")
        return [
            Row(
                workload: "3", name: "CompressedStore encode", variant: label,
                subject: Figure(label: "setValue", value: encode.subject, unit: "MB/s"),
                baseline: Figure(label: "LZ4F_compressFrame", value: encode.baseline, unit: "MB/s"),
                ratio: encode.subject / encode.baseline, goal: "≥ 0.9×", met: encode.subject / encode.baseline >= 0.9,
                note: isRandom
                    ? "grows by \(growth) bytes (frame overhead allowed: \(overhead))\(growth <= overhead ? "" : " — OVER")"
                    : String(format: "compression ratio %.2f", ratio)
            ),
            Row(
                workload: "3", name: "CompressedStore decode", variant: label,
                subject: Figure(label: "value(forKey:)", value: decode.subject, unit: "MB/s"),
                baseline: Figure(label: "LZ4F_decompress", value: decode.baseline, unit: "MB/s"),
                ratio: decode.subject / decode.baseline, goal: "≥ 0.9×", met: decode.subject / decode.baseline >= 0.9
            ),
        ]
    }

    /// JSON documents like an API's, concatenated to about `bytes`.
    static func jsonCorpus(bytes: Int) -> Data {
        struct User: Codable {
            var id: Int
            var name: String
            var email: String
            var active: Bool
            var score: Double
            var tags: [String]
            var city: String
        }
        let cities = ["Lisbon", "Oslo", "Quito", "Hanoi", "Perth", "Dakar"]
        let tags = ["swift", "cache", "linux", "lz4", "disk", "memory", "redis"]
        var random = SystemRandomNumberGenerator()
        var corpus = Data()
        var id = 0
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        while corpus.count < bytes {
            let users = (0..<50).map { _ -> User in
                id += 1
                return User(
                    id: id, name: "user-\(id)", email: "user\(id)@example.com", active: id % 3 != 0,
                    score: Double(Int.random(in: 0...100_000, using: &random)) / 1000,
                    tags: Array(tags.shuffled(using: &random).prefix(3)), city: cities.randomElement(using: &random)!
                )
            }
            corpus += try! encoder.encode(users)
        }
        return corpus
    }
}

/// The smallest possible base store: it holds one value. Its cost is a lock and a retain.
final class Slot: Store {
    private let slot = PthreadLocked<Data?>(nil)
    func value(forKey key: String) -> Data? { slot.withLock { $0 } }
    func setValue(_ value: Data, forKey key: String) { slot.withLock { $0 = value } }
    func removeValue(forKey key: String) { slot.withLock { $0 = nil } }
    func removeAll() { slot.withLock { $0 = nil } }
}
