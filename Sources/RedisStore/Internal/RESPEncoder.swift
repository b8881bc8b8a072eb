import NIOCore

/// Encodes `RESPValue`s as RESP2 bytes. The client only ever sends arrays of bulk strings (that is
/// what a command is); the other types are encoded too, for tests and scripted servers.
struct RESPEncoder: MessageToByteEncoder {
    typealias OutboundIn = RESPValue

    func encode(data: RESPValue, out: inout ByteBuffer) throws {
        try Self.write(data, into: &out)
    }

    /// Appends the encoding of `value` to `out`.
    /// - Throws: `RESPProtocolError` for a simple string or error containing CR or LF, which RESP2
    ///   cannot carry.
    static func write(_ value: RESPValue, into out: inout ByteBuffer) throws {
        switch value {
        case .simpleString(let text):
            try writeLine(UInt8(ascii: "+"), text, into: &out)
        case .error(let text):
            try writeLine(UInt8(ascii: "-"), text, into: &out)
        case .integer(let number):
            writeHeader(UInt8(ascii: ":"), number, into: &out)
        case .bulkString(nil):
            writeHeader(UInt8(ascii: "$"), -1, into: &out)
        case .bulkString(let bytes?):
            writeHeader(UInt8(ascii: "$"), Int64(bytes.readableBytes), into: &out)
            out.writeImmutableBuffer(bytes)
            out.writeStaticString("\r\n")
        case .array(nil):
            writeHeader(UInt8(ascii: "*"), -1, into: &out)
        case .array(let elements?):
            writeHeader(UInt8(ascii: "*"), Int64(elements.count), into: &out)
            for element in elements { try write(element, into: &out) }
        }
    }

    private static func writeLine(_ type: UInt8, _ text: String, into out: inout ByteBuffer) throws {
        guard !text.utf8.contains(where: { $0 == UInt8(ascii: "\r") || $0 == UInt8(ascii: "\n") }) else {
            throw RESPProtocolError(reason: "a simple string or error cannot contain CR or LF")
        }
        out.writeInteger(type)
        out.writeString(text)
        out.writeStaticString("\r\n")
    }

    /// Writes a type byte, a decimal number and CRLF, without allocating a `String`.
    private static func writeHeader(_ type: UInt8, _ number: Int64, into out: inout ByteBuffer) {
        out.writeInteger(type)
        if number < 0 { out.writeInteger(UInt8(ascii: "-")) }
        var magnitude = number.magnitude
        // Up to 20 digits, filled from the end of a scratch buffer, least significant first.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { scratch in
            var count = 0
            repeat {
                scratch[19 - count] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
                count += 1
            } while magnitude > 0
            out.writeBytes(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(scratch)[(20 - count)...]))
        }
        out.writeStaticString("\r\n")
    }
}
