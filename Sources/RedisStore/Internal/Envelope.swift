import Foundation
import HanekeProtocols
import NIOCore

/// The bytes a `RedisStore` keeps under a key: a small header with the entry's attributes, its
/// metadata, then the value.
///
/// | offset | size | field                                                        |
/// |--------|------|--------------------------------------------------------------|
/// | 0      | 6    | magic `89 48 4E 4B 45 0A` (`\x89HNKE\n`)                     |
/// | 6      | 1    | version, 1                                                   |
/// | 7      | 1    | flags, 0 (others are refused)                                |
/// | 8      | 8    | storedAt: milliseconds since 1970, signed, big-endian        |
/// | 16     | 8    | expiresAt: milliseconds since 1970, big-endian; 0 for never  |
/// | 24     | 4    | metadata length, big-endian, at most 16 KiB                  |
/// | 28     | n    | metadata                                                     |
/// | 28 + n | …    | the value                                                    |
///
/// Bytes that do not start with the magic and version are a plain value, as 0.3.0 stored them:
/// it never expires (Redis's own `PX` still applies), its storedAt is unknown, it has no metadata.
/// Bytes that start with the magic but whose header cannot be read (another version, flags, a
/// metadata length over the limit or past the end) are damaged.
struct Envelope {
    /// The magic: a byte that is not text, `HNKE`, a line feed (damage by a text transfer shows).
    static let magic: [UInt8] = [0x89, 0x48, 0x4E, 0x4B, 0x45, 0x0A]
    static let version: UInt8 = 1
    /// The bytes before the metadata.
    static let headerSize = 28
    /// The most bytes of an envelope before its value: the header and the largest metadata.
    static let maximumPrefixSize = headerSize + EntryAttributes.metadataLimit

    /// When the value was first stored, in milliseconds since 1970; `nil` for a plain value.
    var storedAt: Int64?
    /// When it expires, in milliseconds since 1970; `nil` for never.
    var expiresAt: Int64?
    var metadata: Data
    /// Where the value starts in the bytes read: after the header and metadata, or 0 for a
    /// plain value.
    var valueOffset: Int

    /// Why bytes that start with the magic cannot be read.
    struct Damage: Error {
        var reason: String
    }

    /// The attributes, as `Date`s.
    var attributes: EntryAttributes {
        EntryAttributes(expiresAt: expiresAt.map(Self.date), storedAt: storedAt.map(Self.date), metadata: metadata)
    }

    /// Whether the entry has expired at `now` (milliseconds): its expiry is `now` or earlier.
    func isExpired(at now: Int64) -> Bool {
        expiresAt.map { $0 <= now } ?? false
    }

    /// Reads the header and metadata at the start of `bytes` — all of a stored value, or a prefix
    /// of it (a `GETRANGE`); the value is not copied.
    /// - Throws: ``Damage`` for bytes that start with the magic and version but are not a valid
    ///   envelope.
    static func decode(_ bytes: ByteBuffer) throws(Damage) -> Envelope {
        let view = bytes.readableBytesView
        guard view.count >= magic.count + 1, view.prefix(magic.count).elementsEqual(magic) else {
            return Envelope(storedAt: nil, expiresAt: nil, metadata: Data(), valueOffset: 0)
        }
        let start = bytes.readerIndex
        guard let version = bytes.getInteger(at: start + 6, as: UInt8.self), version == Self.version else {
            throw Damage(reason: "its envelope is of version \(view[view.startIndex + 6]), which this version of Haneke cannot read (it reads version \(Self.version))")
        }
        guard view.count >= headerSize,
              let flags = bytes.getInteger(at: start + 7, as: UInt8.self),
              let storedAt = bytes.getInteger(at: start + 8, as: Int64.self),
              let expiresAt = bytes.getInteger(at: start + 16, as: Int64.self),
              let length = bytes.getInteger(at: start + 24, as: UInt32.self) else {
            throw Damage(reason: "its envelope is shorter than its \(headerSize)-byte header (\(view.count) bytes)")
        }
        guard flags == 0 else { throw Damage(reason: "its envelope has unknown flags \(flags)") }
        guard length <= EntryAttributes.metadataLimit else {
            throw Damage(reason: "its envelope announces \(length) bytes of metadata, more than an entry carries (\(EntryAttributes.metadataLimit))")
        }
        guard let metadata = bytes.getBytes(at: start + headerSize, length: Int(length)) else {
            throw Damage(reason: "its envelope announces \(length) bytes of metadata and has \(view.count - headerSize)")
        }
        return Envelope(
            storedAt: storedAt, expiresAt: expiresAt == 0 ? nil : expiresAt, metadata: Data(metadata), valueOffset: headerSize + Int(length)
        )
    }

    /// The header and metadata of an entry stored at `storedAt` that expires at `expiresAt`
    /// (milliseconds; `nil` for never), written to `buffer`.
    static func writeHeader(storedAt: Int64, expiresAt: Int64?, metadata: Data, to buffer: inout ByteBuffer) {
        buffer.writeBytes(magic)
        buffer.writeInteger(version)
        buffer.writeInteger(UInt8(0))
        buffer.writeInteger(storedAt)
        // 0 is "never": an expiry of exactly 1970 has passed anyway, and is never written.
        buffer.writeInteger(expiresAt ?? 0)
        buffer.writeInteger(UInt32(metadata.count))
        buffer.writeBytes(metadata)
    }

    /// `date` in whole milliseconds since 1970, rounded down; clamped to what an `Int64` holds.
    static func milliseconds(_ date: Date) -> Int64 {
        date.millisecondsSince1970
    }

    static func date(_ milliseconds: Int64) -> Date {
        Date(millisecondsSince1970: milliseconds)
    }
}
