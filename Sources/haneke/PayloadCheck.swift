import ArgumentParser
import Foundation
import Haneke

/// What the tool makes of an entry's payload: the one judgement `verify` and `stats` share, so
/// they agree on what is a problem. Frames are decoded — within a limit, never trusting the size a
/// frame's header claims.
enum PayloadCheck {
    /// What the payloads of a folder are.
    enum Payloads: String, ExpressibleByArgument, CaseIterable {
        case auto, lz4, raw
    }

    /// A frame that decodes to `contentSize` bytes and matches its checksum.
    case frame(contentSize: Int)
    /// Bytes that are not expected to be a frame.
    case raw
    /// Why the payload is damaged.
    case damaged(String)

    /// Checks one payload.
    /// - Parameters:
    ///   - payload: The payload as stored.
    ///   - expectFrames: Whether the folder's payloads are LZ4 frames.
    ///   - limit: The most bytes a frame may decode to; a frame that claims or makes more is damage.
    static func check(_ payload: Data, expectFrames: Bool, limit: Int) -> PayloadCheck {
        guard expectFrames else { return .raw }
        guard LZ4Frame.looksLikeFrame(payload) else { return .damaged("the payload is not an LZ4 frame (its magic number is damaged)") }
        do {
            return .frame(contentSize: try LZ4Frame.decompress(payload, limit: limit).count)
        } catch let error as StoreError {
            return .damaged(error.message)
        } catch {
            return .damaged("\(error)")
        }
    }

    /// Whether the folder's payloads are frames: as asked, or (`auto`) when most of them look like
    /// one (a compressed store's folder).
    static func expectFrames(_ payloads: Payloads, in folder: String) throws -> Bool {
        switch payloads {
        case .lz4: return true
        case .raw: return false
        case .auto:
            var frames = 0
            var total = 0
            _ = try FileStore.inspect(directory: folder, validatingPayloads: { _, payload in
                total += 1
                if LZ4Frame.looksLikeFrame(payload) { frames += 1 }
                return nil
            })
            return total > 0 && frames * 2 > total
        }
    }
}

/// The options that say how to read payloads, shared by `verify` and `stats`.
struct PayloadOptions: ParsableArguments {
    @Option(help: "What the payloads are: lz4 frames, raw bytes, or auto (decided by the majority).")
    var payloads: PayloadCheck.Payloads = .auto

    @Option(help: "The most bytes a value may decompress to (a frame that claims more is a problem); the library's default, 64M.")
    var decompressionLimit = ByteSize(bytes: 64 << 20)
}
