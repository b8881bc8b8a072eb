import NIOCore

/// Bytes that are not a valid RESP2 reply. The connection that received them is dropped, since
/// nothing after them can be trusted to line up with the commands sent.
struct RESPProtocolError: Error, Hashable, CustomStringConvertible {
    /// What was wrong, in a sentence.
    var reason: String

    var description: String { "malformed RESP reply: \(reason)" }
}

/// Decodes RESP2 replies from the bytes of a connection, one `RESPValue` per complete reply.
///
/// Bytes may arrive split anywhere (inside a length, between CR and LF, inside a bulk string): an
/// incomplete reply consumes nothing and waits for more. Anything that cannot be the start of a
/// valid reply throws `RESPProtocolError`, and the handler after it drops the connection.
struct RESPDecoder: ByteToMessageDecoder {
    typealias InboundOut = RESPValue

    /// The largest bulk string accepted: Redis's own `proto-max-bulk-len`, 512 MiB.
    static let maximumBulkLength = 512 << 20
    /// The most elements an array may announce.
    static let maximumArrayCount = 1 << 24
    /// The longest line (simple string, error, integer or length) accepted before its CRLF.
    static let maximumLineLength = 64 << 10
    /// The deepest nesting of arrays accepted.
    static let maximumDepth = 32
    /// The most bytes an incomplete reply may hold before it is refused: one bulk string of the
    /// largest size and a little more. (The store's replies are one value, or a small SCAN batch.)
    static let maximumReplySize = maximumBulkLength + (1 << 20)

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let value = try Self.parse(&buffer) else { return .needMoreData }
        context.fireChannelRead(wrapInboundOut(value))
        return .continue
    }

    mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        try decode(context: context, buffer: &buffer)
    }

    /// Parses one reply from the start of `buffer` and consumes its bytes; returns `nil`, consuming
    /// nothing, when the reply is not complete yet.
    /// - Parameter maximumReplySize: The most bytes an incomplete reply may hold (tests lower it).
    /// - Throws: `RESPProtocolError` when the bytes cannot be a valid reply.
    static func parse(_ buffer: inout ByteBuffer, maximumReplySize: Int = maximumReplySize) throws -> RESPValue? {
        var cursor = buffer
        guard let value = try parseValue(&cursor, depth: 0) else {
            if buffer.readableBytes > maximumReplySize {
                throw RESPProtocolError(reason: "a reply runs over \(maximumReplySize) bytes without ending")
            }
            return nil
        }
        buffer.moveReaderIndex(to: cursor.readerIndex)
        return value
    }

    private static func parseValue(_ buffer: inout ByteBuffer, depth: Int) throws -> RESPValue? {
        guard let type = buffer.readInteger(as: UInt8.self) else { return nil }
        switch type {
        case UInt8(ascii: "+"):
            return try readLine(&buffer).map { .simpleString(String(buffer: $0)) }
        case UInt8(ascii: "-"):
            return try readLine(&buffer).map { .error(String(buffer: $0)) }
        case UInt8(ascii: ":"):
            return try readLine(&buffer).map { .integer(try integer(in: $0, of: "an integer reply")) }
        case UInt8(ascii: "$"):
            guard let line = try readLine(&buffer) else { return nil }
            let length = try integer(in: line, of: "a bulk string length")
            if length == -1 { return .bulkString(nil) }
            guard length >= 0, length <= maximumBulkLength else {
                throw RESPProtocolError(reason: "bulk string length \(length) is out of range (-1 to \(maximumBulkLength))")
            }
            guard buffer.readableBytes >= Int(length) + 2 else { return nil }
            let bytes = buffer.readSlice(length: Int(length))!
            guard buffer.readInteger(as: UInt16.self) == crlf else {
                throw RESPProtocolError(reason: "a \(length)-byte bulk string is not followed by CRLF")
            }
            return .bulkString(bytes)
        case UInt8(ascii: "*"):
            guard let line = try readLine(&buffer) else { return nil }
            let count = try integer(in: line, of: "an array length")
            if count == -1 { return .array(nil) }
            guard count >= 0, count <= maximumArrayCount else {
                throw RESPProtocolError(reason: "array length \(count) is out of range (-1 to \(maximumArrayCount))")
            }
            guard depth < maximumDepth else {
                throw RESPProtocolError(reason: "arrays are nested more than \(maximumDepth) deep")
            }
            var elements: [RESPValue] = []
            elements.reserveCapacity(min(Int(count), 1024))
            for _ in 0..<count {
                guard let element = try parseValue(&buffer, depth: depth + 1) else { return nil }
                elements.append(element)
            }
            return .array(elements)
        default:
            throw RESPProtocolError(reason: "unknown type byte \(describe(type)) where a reply should start")
        }
    }

    private static let crlf = UInt16(UInt8(ascii: "\r")) << 8 | UInt16(UInt8(ascii: "\n"))

    /// Reads the bytes up to the next CRLF and consumes the CRLF; `nil` when the line is not complete.
    private static func readLine(_ buffer: inout ByteBuffer) throws -> ByteBuffer? {
        let view = buffer.readableBytesView
        let end = view.firstIndex(where: { $0 == UInt8(ascii: "\r") || $0 == UInt8(ascii: "\n") })
        // The line so far, or the whole line: too long either way, whether or not its CRLF is here.
        let length = (end ?? view.endIndex) - view.startIndex
        guard length <= maximumLineLength else {
            throw RESPProtocolError(reason: "a line runs over \(maximumLineLength) bytes without CRLF")
        }
        guard let end else { return nil }
        guard view[end] == UInt8(ascii: "\r") else {
            throw RESPProtocolError(reason: "a line ends with LF without CR")
        }
        guard buffer.readableBytes > length + 1 else { return nil }
        let line = buffer.readSlice(length: length)!
        let terminator = buffer.readInteger(as: UInt16.self)!
        guard terminator == crlf else {
            throw RESPProtocolError(reason: "CR is followed by \(describe(UInt8(truncatingIfNeeded: terminator))) instead of LF")
        }
        return line
    }

    /// Parses a signed decimal integer that fills `line`.
    private static func integer(in line: ByteBuffer, of what: String) throws -> Int64 {
        let bytes = line.readableBytesView
        var index = bytes.startIndex
        let negative = index < bytes.endIndex && bytes[index] == UInt8(ascii: "-")
        if negative { index += 1 }
        guard index < bytes.endIndex, bytes.count <= 20 else {
            throw RESPProtocolError(reason: "\(what) is not a number: \(quote(line))")
        }
        var value: Int64 = 0
        while index < bytes.endIndex {
            let byte = bytes[index]
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else {
                throw RESPProtocolError(reason: "\(what) is not a number: \(quote(line))")
            }
            let digit = Int64(byte - UInt8(ascii: "0"))
            let (times10, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = negative ? times10.subtractingReportingOverflow(digit) : times10.addingReportingOverflow(digit)
            guard !overflow1, !overflow2 else {
                throw RESPProtocolError(reason: "\(what) does not fit in 64 bits: \(quote(line))")
            }
            value = sum
            index += 1
        }
        return value
    }

    private static func describe(_ byte: UInt8) -> String {
        let hex = "0x" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
        return (0x21...0x7E).contains(byte) ? "\(hex) ('\(Character(Unicode.Scalar(byte)))')" : hex
    }

    private static func quote(_ line: ByteBuffer) -> String {
        "\"" + String(decoding: line.readableBytesView.prefix(40), as: UTF8.self) + (line.readableBytes > 40 ? "…" : "") + "\""
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
