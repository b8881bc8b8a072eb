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
    /// Why the payload is damaged.
    case damaged(String)

    /// Checks one payload that should be an LZ4 frame.
    /// - Parameters:
    ///   - payload: The payload as stored.
    ///   - limit: The most bytes a frame may decode to; a frame that claims or makes more is damage.
    static func checkFrame(_ payload: Data, limit: Int) -> PayloadCheck {
        guard LZ4Frame.looksLikeFrame(payload) else { return .damaged("the payload is not an LZ4 frame (its magic number is damaged)") }
        do {
            return .frame(contentSize: try LZ4Frame.decompress(payload, limit: limit).count)
        } catch let error as StoreError {
            return .damaged(error.message)
        } catch {
            return .damaged("\(error)")
        }
    }
}

/// Judges every payload of a folder during the one walk that reads them (each file is read once):
/// as asked, or — `auto` — both ways, keeping the reading the majority decides once every payload
/// has been seen (a compressed store's folder holds LZ4 frames). Also adds up what `stats` shows.
/// Used on one thread, inside an engine's examination (`DiskEngine.inspect`, whose payload check
/// it is).
final class PayloadJudge {
    /// The sizes of the unexpired values, as `stats` shows them.
    struct Tally {
        /// The payloads that are LZ4 frames.
        var frames = 0
        /// The bytes of those frames.
        var frameBytes = 0
        /// The bytes the frames decode to.
        var contentBytes = 0
        /// The bytes of the payloads that are not frames.
        var rawBytes = 0
    }

    private let payloads: PayloadCheck.Payloads
    private let limit: Int
    private let now: Date
    private var seen = 0
    private var looksLikeFrames = 0
    private var asFrames = Tally()
    private var asRaw = Tally()
    /// Why each damaged entry is damaged if the payloads are frames, by path (`auto` only).
    private var damageAsFrames: [String: String] = [:]

    /// A judge for one walk.
    /// - Parameters:
    ///   - options: What the payloads are, and the decompression limit.
    ///   - now: What time it is, for which entries have expired (and count in no tally).
    init(_ options: PayloadOptions, now: Date = Date()) {
        payloads = options.payloads
        limit = options.decompressionLimit.bytes
        self.now = now
    }

    /// Judges one payload: the check of ``payloadCheck``.
    /// - Returns: Why the payload is damaged, when that is known already; `nil` otherwise.
    func judge(_ entry: DiskInspection.Entry, _ payload: Data) -> String? {
        seen += 1
        if LZ4Frame.looksLikeFrame(payload) { looksLikeFrames += 1 }
        let live = (entry.expires ?? .distantFuture) > now
        if payloads != .lz4, live { asRaw.rawBytes += payload.count }
        guard payloads != .raw else { return nil }
        switch PayloadCheck.checkFrame(payload, limit: limit) {
        case .damaged(let reason):
            guard payloads == .auto else { return reason }
            damageAsFrames[entry.location] = reason
        case .frame(let contentSize):
            guard live else { break }
            asFrames.frames += 1
            asFrames.frameBytes += payload.count
            asFrames.contentBytes += contentSize
        }
        return nil
    }

    /// Whether the payloads are LZ4 frames: as asked, or when most of them look like one.
    var expectsFrames: Bool {
        switch payloads {
        case .lz4: true
        case .raw: false
        case .auto: looksLikeFrames * 2 > seen
        }
    }

    /// The sizes of the unexpired values, by the reading kept.
    var tally: Tally { expectsFrames ? asFrames : asRaw }

    /// Ends the walk: with `auto`, the entries that are damaged when read as frames, by location,
    /// if the majority are frames (the engine moves them to the problems); none otherwise.
    var damageFoundAtTheEnd: [String: String] {
        payloads == .auto && expectsFrames ? damageAsFrames : [:]
    }

    /// The judge as an engine's payload check.
    var payloadCheck: DiskInspection.PayloadCheck {
        DiskInspection.PayloadCheck(check: { self.judge($0, $1) }, damageFoundAtTheEnd: { self.damageFoundAtTheEnd })
    }
}

/// The options that say how to read payloads, shared by `verify` and `stats`.
struct PayloadOptions: ParsableArguments {
    @Option(help: "What the payloads are: lz4 frames, raw bytes, or auto (decided by the majority).")
    var payloads: PayloadCheck.Payloads = .auto

    @Option(parsing: .unconditional, help: ArgumentHelp("The most bytes a value may decompress to (a frame that claims more is a problem); the library's default, 64M.", valueName: "size"))
    var decompressionLimit = ByteSize(bytes: 64 << 20)
}
