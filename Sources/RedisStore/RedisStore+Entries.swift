public import Foundation
public import HanekeProtocols
import Logging
import NIOCore

// Entries with their own attributes, kept in each value's envelope (see `Envelope`): the value
// and its attributes are one Redis string, so that every write of them is one command and every
// read one reply. The attributes alone are a prefix of it (`GETRANGE`), and a Lua script
// replaces that prefix on the server without the value crossing the network. Expiry is on the
// store's clock: `PX` is the time left on it, and each read checks the envelope's expiry too.

extension RedisStore {
    // MARK: - Store

    /// Returns the entry for `key` — its value, expiry, the time it was first stored and its
    /// metadata — or `nil` when Redis has none or it has expired on the store's ``clock``. A value
    /// stored by 0.3.0 (without an envelope) has no expiry, no storedAt and no metadata.
    /// - Parameter key: The key to look up.
    /// - Returns: The entry, or `nil`.
    /// - Throws: `StoreError` as ``value(forKey:)``.
    /// - Performs network I/O: one round trip (`GET`).
    public func entry(forKey key: String) async throws -> StoreEntry<Data>? {
        try await readEntry(forKey: key)
    }

    /// Returns the entry for `key` with its value passed through `transform` (on the caller's
    /// thread, once the reply has arrived), or `nil` on a miss.
    /// - Parameters:
    ///   - key: The key to look up.
    ///   - transform: What to make of the stored bytes: it runs once, on a hit.
    /// - Returns: The entry with what `transform` made of its value, or `nil`.
    /// - Throws: `StoreError` as ``value(forKey:)``; what `transform` throws.
    /// - Performs network I/O: one round trip (`GET`).
    public func entry<Transformed: Sendable>(
        forKey key: String,
        transformedBy transform: @escaping @Sendable (Data) throws -> Transformed
    ) async throws -> StoreEntry<Transformed>? {
        try await readEntry(forKey: key)?.map(transform)
    }

    /// Returns the attributes of the entry for `key` without reading its value: the envelope's
    /// header and metadata only (`GETRANGE` of at most 16 KiB and 28 bytes, in a Lua script that
    /// also tells a missing key from an empty value). `nil` when there is none or it has expired.
    /// Counts no read.
    /// - Parameter key: The key to look up.
    /// - Returns: The attributes, or `nil`.
    /// - Throws: `StoreError` as ``value(forKey:)``.
    /// - Performs network I/O: one round trip (`EVAL`).
    public func attributes(forKey key: String) async throws -> EntryAttributes? {
        try Task.checkCancellation()
        guard let prefix = try await readPrefix(forKey: key, "read the attributes of") else { return nil }
        let envelope = try decode(prefix, "read the attributes of", key: key)
        return envelope.isExpired(at: now()) ? nil : envelope.attributes
    }

    /// Stores `entry` for `key` with its own expiry (bounded by ``Configuration/timeToLive``) and
    /// metadata, replacing any previous value: `SET` with `PX` of the time left on the store's
    /// ``clock``. An entry without `EntryAttributes.storedAt` is stamped now;
    /// one whose expiry has passed already is not stored, and the key is removed (`UNLINK`).
    /// - Parameters:
    ///   - entry: The value and its attributes.
    ///   - key: The key.
    /// - Throws: `StoreError` with code `valueTooLarge` for metadata over
    ///   `EntryAttributes.metadataLimit` or an entry over 512 MiB; otherwise as
    ///   ``setValue(_:forKey:)``.
    /// - Performs network I/O: one round trip (`SET` or `UNLINK`).
    public func setEntry(_ entry: StoreEntry<Data>, forKey key: String) async throws {
        try await writeEntry(entry.value, attributes: entry.attributes, forKey: key)
    }

    /// Replaces the attributes of the entry for `key`, keeping its value, which is not sent: a
    /// Lua script checks that the envelope's prefix is still the one read, then overwrites it in
    /// place (`SETRANGE`, when its length is unchanged) or rebuilds the string on the server, and
    /// sets `PX` to the new expiry's time left (bounded by ``Configuration/timeToLive``). When the
    /// entry changed between the read and the script (another writer), the other write counts as
    /// the later one: nothing is written, and the result is `true`.
    /// - Parameters:
    ///   - attributes: The new attributes; without storedAt, the entry counts as stored now.
    ///   - key: The key whose entry changes.
    /// - Returns: `false` when the key had no unexpired entry (nothing is written).
    /// - Throws: `StoreError` with code `valueTooLarge` for metadata over the limit; otherwise as
    ///   ``setValue(_:forKey:)``.
    /// - Performs network I/O: two round trips (`EVAL` twice).
    @discardableResult
    public func setAttributes(_ attributes: EntryAttributes, forKey key: String) async throws -> Bool {
        try Task.checkCancellation()
        let operation = "replace the attributes of"
        try check(attributes, forKey: key)
        guard let prefix = try await readPrefix(forKey: key, operation) else { return false }
        let envelope = try decode(prefix, operation, key: key)
        let now = now()
        guard !envelope.isExpired(at: now) else { return false }
        let (storedAt, expiresAt, milliseconds) = plan(attributes, at: now)
        var header = allocator.buffer(capacity: Envelope.headerSize + attributes.metadata.count)
        Envelope.writeHeader(storedAt: storedAt, expiresAt: expiresAt, metadata: attributes.metadata, to: &header)
        // What identifies the entry read: its envelope's header and metadata, or the bytes read of
        // a plain value (all of them, when shorter than the range).
        let identity = envelope.storedAt == nil ? prefix : prefix.getSlice(at: prefix.readerIndex, length: envelope.valueOffset)!
        let expiry = milliseconds.map(String.init) ?? (expiresAt.map { $0 <= now } == true ? "0" : "-1")
        let reply = try await send(.command("EVAL", [
            ByteBuffer(string: Self.replaceAttributesScript), ByteBuffer(string: "1"), redisKey(key),
            identity, ByteBuffer(string: String(envelope.valueOffset)), header, ByteBuffer(string: expiry),
        ]), operation, key: key)
        guard case .integer = reply else { throw unexpected(reply, operation, key: key) }
        counter.recordWrite()
        return true
    }

    /// Stores `entry` for `key` only if the key has no unexpired value: `SET … NX` (with `PX`),
    /// atomic on the server, so exactly one of any number of callers — in any number of
    /// processes and machines sharing the server — inserts. When the key is taken, the entry there
    /// is read (`GET`); one that has expired on the store's ``clock`` (or is damaged) is removed
    /// only if it is still the one read (a Lua compare-and-delete on its header), and the `SET …
    /// NX` is tried again, a few times at most. An insertion counts as a write, finding an entry
    /// as a hit.
    /// - Parameters:
    ///   - entry: The value and its attributes.
    ///   - key: The key.
    /// - Returns: `.inserted`, or `.existing` with the entry already there (nothing was written).
    /// - Throws: `StoreError` as ``setEntry(_:forKey:)``; `io` when the key changed under every
    ///   attempt. A `SET … NX` whose connection closed before its reply is not sent again (the
    ///   second sending would find the first one's value): it throws `unavailable`.
    /// - Performs network I/O: one round trip (`SET … NX`), two when the key is taken, more when
    ///   its entry has expired.
    public func addEntry(_ entry: StoreEntry<Data>, forKey key: String) async throws -> AddResult<Data> {
        try Task.checkCancellation()
        let operation = "add"
        try check(entry.attributes, forKey: key, valueSize: entry.value.count)
        let now = now()
        let (storedAt, expiresAt, milliseconds) = plan(entry.attributes, at: now)
        let expiredAlready = expiresAt.map { $0 <= now } ?? false
        var arguments = [redisKey(key), envelope(entry.value, storedAt: storedAt, expiresAt: expiresAt, metadata: entry.attributes.metadata), ByteBuffer(string: "NX")]
        if let milliseconds { arguments += [ByteBuffer(string: "PX"), ByteBuffer(string: String(milliseconds))] }
        for _ in 0..<Self.addAttempts {
            if !expiredAlready {
                let reply = try await send(.command("SET", arguments), operation, key: key, retrying: false)
                switch reply {
                case .simpleString("OK"):
                    counter.recordWrite()
                    return .inserted
                case .bulkString(nil):
                    break
                default:
                    throw unexpected(reply, operation, key: key)
                }
            }
            let read = try await send(.command("GET", [redisKey(key)]), operation, key: key, reads: true)
            let existing: ByteBuffer
            switch read {
            case .bulkString(let bytes?): existing = bytes
            case .bulkString(nil) where expiredAlready: counter.recordWrite(); return .inserted
            case .bulkString(nil): continue
            default: throw unexpected(read, operation, key: key)
            }
            let identity: ByteBuffer
            do {
                let envelope = try Envelope.decode(existing)
                if !envelope.isExpired(at: self.now()) {
                    counter.recordHit()
                    return .existing(StoreEntry(value: value(of: existing, after: envelope), attributes: envelope.attributes))
                }
                identity = existing.getSlice(at: existing.readerIndex, length: Envelope.headerSize)!
            } catch {
                logger.warning("A damaged entry was replaced by an added one", metadata: [
                    "redis": "\(pool.endpoint)", "key": "\(Logger.describe(key))", "reason": "\(error.reason)",
                ])
                identity = existing.getSlice(at: existing.readerIndex, length: min(existing.readableBytes, Envelope.maximumPrefixSize))!
            }
            let removed = try await send(.command("EVAL", [
                ByteBuffer(string: Self.compareAndDeleteScript), ByteBuffer(string: "1"), redisKey(key), identity,
            ]), operation, key: key)
            guard case .integer = removed else { throw unexpected(removed, operation, key: key) }
            if expiredAlready {
                counter.recordWrite()
                return .inserted
            }
        }
        counter.recordError()
        throw StoreError(.io, "\(subject(operation, key: key)): the key changed under each of \(Self.addAttempts) attempts (an expired entry was replaced by another writer each time)")
    }

    // MARK: - Internals

    /// How many times ``addEntry(_:forKey:)`` tries `SET … NX` while it finds expired entries.
    static let addAttempts = 8

    /// Returns the prefix of the stored bytes, up to 16 KiB and 28 bytes; a missing key is `nil`,
    /// an empty value an empty string.
    static let readPrefixScript = """
        local prefix = redis.call('GETRANGE', KEYS[1], 0, ARGV[1])
        if prefix == '' and redis.call('EXISTS', KEYS[1]) == 0 then return false end
        return prefix
        """

    /// Replaces the first `ARGV[2]` bytes (the envelope's header and metadata; 0 for a plain value)
    /// with `ARGV[3]` when the stored bytes still start with `ARGV[1]` (what was read; for an
    /// empty value, the key still holds an empty value); then `PEXPIRE` `ARGV[4]` milliseconds,
    /// `PERSIST` for -1, or deletes the key for 0 (the new expiry has passed). 1 when replaced,
    /// 0 when the key changed.
    static let replaceAttributesScript = """
        local key = KEYS[1]
        local old = ARGV[1]
        if #old == 0 then
            if redis.call('EXISTS', key) == 0 or redis.call('STRLEN', key) ~= 0 then return 0 end
        elseif redis.call('GETRANGE', key, 0, #old - 1) ~= old then
            return 0
        end
        local length = tonumber(ARGV[2])
        local new = ARGV[3]
        local expiry = tonumber(ARGV[4])
        if expiry == 0 then
            redis.call('DEL', key)
            return 1
        end
        if #new == length then
            redis.call('SETRANGE', key, 0, new)
        else
            redis.call('SET', key, new .. redis.call('GETRANGE', key, length, -1))
        end
        if expiry > 0 then redis.call('PEXPIRE', key, expiry) else redis.call('PERSIST', key) end
        return 1
        """

    /// Deletes the key when its bytes still start with `ARGV[1]` (the header of an expired
    /// envelope: any entry with that header has expired too); 1 when deleted.
    static let compareAndDeleteScript = """
        if redis.call('GETRANGE', KEYS[1], 0, #ARGV[1] - 1) == ARGV[1] then
            return redis.call('DEL', KEYS[1])
        end
        return 0
        """

    /// The current time on the store's clock, in milliseconds since 1970.
    func now() -> Int64 {
        Envelope.milliseconds(clock.now())
    }

    /// The entry for `key` (`GET`), or `nil` when there is none or it has expired; counted.
    func readEntry(forKey key: String) async throws -> StoreEntry<Data>? {
        try Task.checkCancellation()
        let reply = try await send(.command("GET", [redisKey(key)]), "read", key: key, reads: true)
        switch reply {
        case .bulkString(let bytes?):
            let envelope = try decode(bytes, "read", key: key)
            guard !envelope.isExpired(at: now()) else {
                // Redis removes it by its PX; on the store's clock it has expired already.
                counter.recordMiss()
                return nil
            }
            counter.recordHit()
            return StoreEntry(value: value(of: bytes, after: envelope), attributes: envelope.attributes)
        case .bulkString(nil):
            counter.recordMiss()
            return nil
        default:
            throw unexpected(reply, "read", key: key)
        }
    }

    /// The prefix of the bytes stored for `key` (header and metadata, or the start of a plain
    /// value), or `nil` when there is none.
    private func readPrefix(forKey key: String, _ operation: String) async throws -> ByteBuffer? {
        let reply = try await send(.command("EVAL", [
            ByteBuffer(string: Self.readPrefixScript), ByteBuffer(string: "1"), redisKey(key),
            ByteBuffer(string: String(Envelope.maximumPrefixSize - 1)),
        ]), operation, key: key, reads: true)
        switch reply {
        case .bulkString(let bytes?): return bytes
        case .bulkString(nil): return nil
        default: throw unexpected(reply, operation, key: key)
        }
    }

    /// The envelope at the start of `bytes`; a damaged one is `corrupted`, counted and logged.
    private func decode(_ bytes: ByteBuffer, _ operation: String, key: String) throws -> Envelope {
        do {
            return try Envelope.decode(bytes)
        } catch {
            counter.recordError()
            throw StoreError(.corrupted, "\(subject(operation, key: key)): the stored bytes are damaged: \(error.reason)")
        }
    }

    private func value(of bytes: ByteBuffer, after envelope: Envelope) -> Data {
        Data(bytes.readableBytesView.dropFirst(envelope.valueOffset))
    }

    /// Stores `value` with `attributes` (`nil`: a plain value, stored now with the store's
    /// lifetime), or removes the key when the entry's expiry has passed already.
    func writeEntry(_ value: Data, attributes: EntryAttributes?, forKey key: String) async throws {
        try Task.checkCancellation()
        try check(attributes ?? EntryAttributes(), forKey: key, valueSize: value.count)
        let now = now()
        let (storedAt, expiresAt, milliseconds) = plan(attributes ?? EntryAttributes(), at: now)
        if let expiresAt, expiresAt <= now {
            let reply = try await send(.command("UNLINK", [redisKey(key)]), "write", key: key)
            guard case .integer = reply else { throw unexpected(reply, "write", key: key) }
            counter.recordWrite()
            return
        }
        var arguments = [redisKey(key), envelope(value, storedAt: storedAt, expiresAt: expiresAt, metadata: attributes?.metadata ?? Data())]
        if let milliseconds { arguments += [ByteBuffer(string: "PX"), ByteBuffer(string: String(milliseconds))] }
        let reply = try await send(.command("SET", arguments), "write", key: key)
        guard case .simpleString("OK") = reply else { throw unexpected(reply, "write", key: key) }
        counter.recordWrite()
    }

    /// The envelope of `value`: its header, its metadata, then the value.
    private func envelope(_ value: Data, storedAt: Int64, expiresAt: Int64?, metadata: Data) -> ByteBuffer {
        var buffer = allocator.buffer(capacity: Envelope.headerSize + metadata.count + value.count)
        Envelope.writeHeader(storedAt: storedAt, expiresAt: expiresAt, metadata: metadata, to: &buffer)
        _ = value.withUnsafeBytes { buffer.writeBytes($0) }
        return buffer
    }

    /// Refuses what cannot be stored: metadata over the limit, an envelope over what Redis
    /// accepts, a time to live that is not positive.
    private func check(_ attributes: EntryAttributes, forKey key: String, valueSize: Int = 0) throws {
        do {
            try attributes.checkMetadataSize(forKey: key)
            let size = valueSize + Envelope.headerSize + attributes.metadata.count
            let limit = configuration.effectiveMaximumValueSize
            guard size <= limit else {
                throw StoreError(.valueTooLarge, "The \(valueSize)-byte value for key \(Logger.describe(key)) is larger than the store's maximumValueSize (\(limit) bytes, with its \(size - valueSize)-byte header and metadata)")
            }
            if let timeToLive = configuration.timeToLive, timeToLive <= .zero {
                throw StoreError(.invalidConfiguration, "Could not write key \(Logger.describe(key)): the time to live is \(timeToLive); it must be positive (nil keeps values until they are removed)")
            }
        } catch {
            counter.recordError()
            throw error
        }
    }

    /// What a write at `now` (milliseconds) keeps: storedAt (the entry's, or now), the expiry
    /// (the entry's, bounded by the store's lifetime; `nil` for never), and the `PX` to send —
    /// the time left, at least 1 ms; `nil` for none (never, or a century or more away, beyond
    /// Redis's expiry arithmetic).
    private func plan(_ attributes: EntryAttributes, at now: Int64) -> (storedAt: Int64, expiresAt: Int64?, px: Int64?) {
        let storedAt = attributes.storedAt.map(Envelope.milliseconds) ?? now
        let bound = timeToLiveMilliseconds.map { now.saturatingAdding($0) }
        let own = attributes.expiresAt.map(Envelope.milliseconds)
        let expiresAt: Int64?
        switch (own, bound) {
        case let (own?, bound?): expiresAt = min(own, bound)
        case let (own, bound): expiresAt = own ?? bound
        }
        let century: Int64 = 100 * 365 * 24 * 3_600 * 1_000
        guard let expiresAt, expiresAt > now else { return (storedAt, expiresAt, nil) }
        let left = expiresAt.subtractingReportingOverflow(now)
        return (storedAt, expiresAt, left.overflow || left.partialValue >= century ? nil : max(1, left.partialValue))
    }
}
