public import Foundation
public import HanekeProtocols

/// A stored response as the attributes of one store entry whose value is the response's body (or
/// what a fetcher decoded from it): how a `NetworkFetcher` keeps HTTP's rules in any stack.
///
/// The metadata begins with when the response stops being fresh and whether that alone decides
/// (no `Vary`, no `no-cache`), so that a read of a fresh entry by a request without directives of
/// its own decides without decoding the stored fields; any other read decodes them and asks
/// ``reuse(of:for:at:)``.
extension HTTPCachePolicy {
    /// The attributes to keep `stored` with: an expiry when it can no longer be used (its freshness,
    /// its `stale-while-revalidate` and `stale-if-error` windows, and `retention` more when it has a
    /// validator or may be served while the origin cannot be reached), and the record as metadata.
    /// - Parameters:
    ///   - stored: The stored response.
    ///   - retention: How long a stale response is kept to be revalidated.
    /// - Returns: The attributes, or `nil` when the response can never be used (it is stale, and
    ///   has no validator and no stale window) or its fields take more than an entry's metadata may.
    public func entryAttributes(of stored: StoredHTTPResponse, retention: Duration) -> EntryAttributes? {
        guard let expiry = usefulUntil(stored, retention: retention), let record = try? stored.encoded() else { return nil }
        let variant = Self.variantSection(of: stored)
        // Stale on arrival, it is never fresh by the prefix alone (a clock that went back would
        // otherwise make it so).
        let decidesAlone = !directives(of: stored).noCache && variant != nil && freshnessLeftOnArrival(of: stored) > 0
        var writer = ByteWriter()
        writer.append(Self.entryMagic)
        writer.append(byte: Self.entryVersion)
        writer.append(byte: decidesAlone ? 1 : 0)
        writer.append(uint32: fingerprint)
        writer.append(int64: stored.responseTime.addingTimeInterval(min(freshnessLeftOnArrival(of: stored), Self.longestUsefulLife)).millisecondsSince1970)
        writer.append(uint16: UInt16(variant?.count ?? 0))
        writer.append(Data(variant ?? []))
        writer.append(record)
        guard writer.data.count <= EntryAttributes.metadataLimit else { return nil }
        return EntryAttributes(expiresAt: expiry, storedAt: stored.responseTime, metadata: writer.data)
    }

    /// The stored response in attributes that ``entryAttributes(of:retention:)`` made.
    /// - Parameter attributes: An entry's attributes.
    /// - Returns: The record, or `nil` when the metadata is not one (a value set by other means).
    /// A record whose metadata begins with this module's magic but does not read (damaged, or
    /// written by another version) is ``Reuse/unusable``: fetched anew, never served.
    public static func storedResponse(inEntry attributes: EntryAttributes) -> StoredHTTPResponse? {
        guard let offset = recordOffset(in: attributes.metadata) else { return nil }
        return try? StoredHTTPResponse(decoding: Data(attributes.metadata[(attributes.metadata.startIndex + offset)...]))
    }

    /// What an entry that ``entryAttributes(of:retention:)`` made may do for `request` at `now`:
    /// ``reuse(of:for:at:)`` of its record, decided without decoding it when the entry is fresh,
    /// has no `no-cache`, its `Vary` fields have the values the request has, and the request has no
    /// `Cache-Control` or `Pragma`.
    /// - Parameters:
    ///   - attributes: The entry's attributes.
    ///   - request: The request.
    ///   - now: The current time.
    /// - Returns: The decision, or `nil` when the entry holds no stored response.
    public func reuse(ofEntry attributes: EntryAttributes, for request: HTTPCacheRequest, at now: Date) -> Reuse? {
        let metadata = attributes.metadata
        let fresh = metadata.withUnsafeBytes { bytes -> Bool? in
            guard Self.hasMagic(bytes) else { return nil }
            guard let prefix = Self.prefix(of: bytes) else { return false }
            // Decided by the prefix only under the policy that wrote it.
            guard prefix.decidesAlone, prefix.fingerprint == fingerprint, now.millisecondsSince1970 < prefix.freshUntil,
                  !request.headers.contains("Cache-Control"), !request.headers.contains("Pragma") else { return false }
            return Self.variantMatches(UnsafeRawBufferPointer(rebasing: bytes[prefix.variant]), request.headers)
        }
        guard let fresh else { return nil }
        if fresh { return .fresh }
        guard let stored = Self.storedResponse(inEntry: attributes) else { return .unusable }
        return reuse(of: stored, for: request, at: now)
    }

    /// ``fingerprint`` computed from the settings: one multiply per setting, over its bits.
    var computedFingerprint: UInt32 {
        var hash: UInt64 = 14_695_981_039_346_656_037
        func mix(_ value: UInt64) { hash = (hash ^ value) &* 1_099_511_628_211 }
        mix(kind == .shared ? 1 : 0)
        mix(UInt64(bitPattern: Int64(relaxations.rawValue)))
        mix(heuristicFraction.bitPattern)
        mix(UInt64(bitPattern: maximumHeuristicLifetime.components.seconds))
        mix(UInt64(bitPattern: maximumHeuristicLifetime.components.attoseconds))
        mix(servesStaleWhenDisconnected ? 1 : 0)
        mix(UInt64(bitPattern: unspecifiedLifetime?.components.seconds ?? -1))
        mix(UInt64(bitPattern: unspecifiedLifetime?.components.attoseconds ?? -1))
        return UInt32(truncatingIfNeeded: hash ^ (hash >> 32))
    }

    /// The fixed part of an entry's metadata, and where its variant section lies.
    private struct EntryPrefix {
        var decidesAlone: Bool
        var fingerprint: UInt32
        var freshUntil: Int64
        var variant: Range<Int>
    }

    private static func hasMagic(_ bytes: UnsafeRawBufferPointer) -> Bool {
        bytes.count >= 4 && bytes[0] == 0x68 && bytes[1] == 0x6E && bytes[2] == 0x6B && bytes[3] == 0x45
    }

    private static func prefix(of bytes: UnsafeRawBufferPointer) -> EntryPrefix? {
        guard bytes.count >= fixedPrefixLength, hasMagic(bytes), bytes[4] == entryVersion else { return nil }
        var fingerprint: UInt32 = 0
        for index in 6..<10 { fingerprint = fingerprint << 8 | UInt32(bytes[index]) }
        var freshUntil: Int64 = 0
        for index in 10..<18 { freshUntil = freshUntil << 8 | Int64(bytes[index]) }
        let variantLength = Int(bytes[18]) << 8 | Int(bytes[19])
        guard bytes.count >= fixedPrefixLength + variantLength else { return nil }
        return EntryPrefix(
            decidesAlone: bytes[5] == 1, fingerprint: fingerprint, freshUntil: freshUntil,
            variant: fixedPrefixLength..<fixedPrefixLength + variantLength
        )
    }

    private static func recordOffset(in metadata: Data) -> Int? {
        metadata.withUnsafeBytes { bytes in prefix(of: bytes)?.variant.upperBound }
    }

    /// The request fields a stored response's `Vary` names, as bytes compared on every read: for each
    /// name (in lower case), its length (1 byte) and bytes, then the length of the request's values
    /// (2 bytes; `0xFFFF` when the request had none) and the values' list members joined by NUL.
    /// `nil` when it cannot be written so (`Vary: *`, a name over 255 bytes, values over 64 KiB).
    private static func variantSection(of stored: StoredHTTPResponse) -> [UInt8]? {
        var section: [UInt8] = []
        for name in stored.headers.listMembers(for: "Vary") {
            let lowered = Array(name.lowercased().utf8)
            guard name != "*", !lowered.isEmpty, lowered.count <= 255 else { return nil }
            section.append(UInt8(lowered.count))
            section += lowered
            guard let value = variantValue(stored.variantRequestHeaders, lowered) else {
                section += [0xFF, 0xFF]
                continue
            }
            guard value.count < 0xFFFF else { return nil }
            section += [UInt8(value.count >> 8), UInt8(value.count & 0xFF)]
            section += value
        }
        return section.count <= Int(UInt16.max) ? section : nil
    }

    /// Whether `headers` has, for every name of a variant section, the values written there.
    private static func variantMatches(_ section: UnsafeRawBufferPointer, _ headers: HTTPHeaderFields) -> Bool {
        var offset = 0
        while offset < section.count {
            let nameLength = Int(section[offset])
            guard offset + 1 + nameLength + 2 <= section.count else { return false }
            let name = UnsafeRawBufferPointer(rebasing: section[offset + 1..<offset + 1 + nameLength])
            offset += 1 + nameLength
            let valueLength = Int(section[offset]) << 8 | Int(section[offset + 1])
            offset += 2
            let value = variantValue(headers, name)
            if valueLength == 0xFFFF {
                guard value == nil else { return false }
                continue
            }
            guard offset + valueLength <= section.count, let value, value.elementsEqual(section[offset..<offset + valueLength]) else { return false }
            offset += valueLength
        }
        return true
    }

    /// The list members of every field of `headers` named `name` (lower-case bytes), joined by NUL;
    /// `nil` when there is none.
    private static func variantValue(_ headers: HTTPHeaderFields, _ name: some Collection<UInt8>) -> [UInt8]? {
        var value: [UInt8]?
        for field in headers.fields where namesMatch(field.name, lowercased: name) {
            for member in HeaderLists.members(of: field.value) {
                if value == nil { value = [] } else { value!.append(0) }
                value! += Array(member.utf8)
            }
            if value == nil { value = [] }
        }
        return value
    }

    /// Whether a field name is `lowercased` (ASCII letters compared without case).
    private static func namesMatch(_ name: String, lowercased: some Collection<UInt8>) -> Bool {
        let utf8 = name.utf8
        guard utf8.count == lowercased.count else { return false }
        for (byte, lower) in zip(utf8, lowercased) {
            let folded = byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
            guard folded == lower else { return false }
        }
        return true
    }

    /// When the entry of `stored` stops being useful; `nil` when it already has.
    func usefulUntil(_ stored: StoredHTTPResponse, retention: Duration) -> Date? {
        let directives = directives(of: stored)
        var usable = freshnessLeftOnArrival(of: stored)
        usable += Double(max(directives.staleWhileRevalidate ?? 0, directives.staleIfError ?? 0))
        // Kept to be revalidated, or to be served when the origin cannot be reached.
        if stored.headers.contains("ETag") || stored.headers.contains("Last-Modified") || mayServeStaleWhenDisconnected(stored) {
            usable += retention.timeInterval
        }
        guard usable > 0 else { return nil }
        return stored.responseTime.addingTimeInterval(min(usable, Self.longestUsefulLife))
    }

    /// About a century: no entry is kept longer (an `unspecifiedLifetime` of `.max` stays a date).
    private static let longestUsefulLife: Double = 100 * 365 * 86_400

    private static let entryMagic = Data("hnkE".utf8)
    /// Magic (4), version (1), flags (1), the writing policy's fingerprint (4), fresh until in
    /// milliseconds since 1970 (8), the variant section's length (2).
    private static let fixedPrefixLength = 20
    private static let entryVersion: UInt8 = 2
}
