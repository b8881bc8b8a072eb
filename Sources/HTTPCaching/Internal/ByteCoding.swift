import Foundation

/// Writes the small binary records of this module: big-endian integers, length-prefixed strings.
struct ByteWriter {
    var data = Data()

    mutating func append(_ bytes: Data) { data.append(bytes) }
    mutating func append(byte: UInt8) { data.append(byte) }
    mutating func append(uint16 value: UInt16) {
        data.append(UInt8(value >> 8))
        data.append(UInt8(value & 0xFF))
    }
    mutating func append(uint32 value: UInt32) {
        for shift in stride(from: 24, through: 0, by: -8) { data.append(UInt8(truncatingIfNeeded: value >> UInt32(shift))) }
    }
    mutating func append(int64 value: Int64) {
        for shift in stride(from: 56, through: 0, by: -8) { data.append(UInt8(truncatingIfNeeded: value >> Int64(shift))) }
    }
    /// Appends a string with a 16-bit length; `false` when it is too long.
    mutating func append(string: String) -> Bool {
        let utf8 = Array(string.utf8)
        guard utf8.count <= Int(UInt16.max) else { return false }
        append(uint16: UInt16(utf8.count))
        data.append(contentsOf: utf8)
        return true
    }
    /// Appends header fields: a 16-bit count, then each name and value; `false` when they do not fit.
    mutating func append(_ headers: HTTPHeaderFields) -> Bool {
        guard headers.count <= Int(UInt16.max) else { return false }
        append(uint16: UInt16(headers.count))
        for field in headers.fields {
            guard append(string: field.name), append(string: field.value) else { return false }
        }
        return true
    }
}

/// Reads what `ByteWriter` wrote; every read is `nil` past the end.
struct ByteReader {
    private let data: Data
    private var offset: Int

    init(_ data: Data) {
        self.data = data
        offset = data.startIndex
    }

    mutating func bytes(_ count: Int) -> Data? {
        guard count >= 0, data.endIndex - offset >= count else { return nil }
        defer { offset += count }
        return data[offset..<offset + count]
    }
    mutating func byte() -> UInt8? { bytes(1)?.first }
    mutating func uint16() -> UInt16? {
        guard let bytes = bytes(2) else { return nil }
        return UInt16(bytes[bytes.startIndex]) << 8 | UInt16(bytes[bytes.startIndex + 1])
    }
    mutating func int64() -> Int64? {
        guard let bytes = bytes(8) else { return nil }
        return bytes.reduce(Int64(0)) { $0 << 8 | Int64($1) }
    }
    mutating func string() -> String? {
        guard let count = uint16(), let bytes = bytes(Int(count)) else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }
    mutating func headers() -> HTTPHeaderFields? {
        guard let count = uint16() else { return nil }
        var fields: [(String, String)] = []
        fields.reserveCapacity(Int(count))
        for _ in 0..<count {
            guard let name = string(), let value = string() else { return nil }
            fields.append((name, value))
        }
        return HTTPHeaderFields(fields)
    }
    /// The bytes left.
    mutating func rest() -> Data? {
        defer { offset = data.endIndex }
        return Data(data[offset...])
    }
    var isAtEnd: Bool { offset == data.endIndex }
}
