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
/// Bytes may arrive split anywhere (inside a length, between CR and LF, inside a bulk string). The
/// decoder keeps its place between reads — the arrays being filled, and how far into the element in
/// progress it has looked — and consumes each element as soon as it is complete, so a reply that
/// arrives in many pieces costs time in proportion to its size: every byte is looked at a bounded
/// number of times, however the reply is split. Anything that cannot be part of a valid reply
/// throws `RESPProtocolError`, and the handler after it drops the connection.
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
    /// The most bytes an incomplete reply may hold before it is refused, by default: one bulk string
    /// of the largest size and a little more. (The store's replies are one value, or a small SCAN
    /// batch.)
    static let maximumReplySize = maximumBulkLength + (1 << 20)

    /// The reply size that leaves room for one value of `maximumValueSize` bytes (a stored
    /// envelope), and a little more for framing and a `SCAN` batch.
    static func replySize(forValuesUpTo maximumValueSize: Int) -> Int {
        min(maximumValueSize, maximumBulkLength) + (1 << 20)
    }

    /// The most bytes an incomplete reply may hold — the elements parsed so far (see
    /// ``heldBytes``) and the bytes waiting to be parsed — before it is refused.
    let maximumReplySize: Int

    /// The arrays being filled, outermost first.
    private var openArrays: [PartialArray] = []
    /// What the bytes at the reader index are.
    private var expecting = Expecting.typeByte
    /// The memory held by the elements of ``openArrays``, estimated as each element's size in an
    /// array plus the bytes of its string; 0 between replies.
    private var heldBytes = 0

    /// An array whose header has been read, and some of its elements.
    private struct PartialArray {
        var elements: [RESPValue]
        var remaining: Int
    }

    /// Where the decoder is inside an element.
    private enum Expecting {
        /// The first byte of an element.
        case typeByte
        /// The rest of a line that started with `type`, whose first `scanned` bytes hold no CR or LF.
        case line(type: UInt8, scanned: Int)
        /// The bytes of a bulk string, and its CRLF.
        case bulkString(length: Int)
    }

    /// Creates a decoder with nothing parsed yet.
    /// - Parameter maximumReplySize: The most bytes an incomplete reply may hold (tests lower it).
    init(maximumReplySize: Int = Self.maximumReplySize) {
        self.maximumReplySize = maximumReplySize
    }

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let value = try next(&buffer) else { return .needMoreData }
        context.fireChannelRead(wrapInboundOut(value))
        return .continue
    }

    mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        try decode(context: context, buffer: &buffer)
    }

    /// Parses the elements at the start of `buffer`, consuming each one that is complete, and
    /// returns the reply they complete; `nil` when it is not complete yet (the next call, with
    /// more bytes after those left in `buffer`, carries on where this one stopped).
    /// - Throws: `RESPProtocolError` when the bytes cannot be part of a valid reply, or when an
    ///   incomplete reply holds more than ``maximumReplySize`` bytes.
    mutating func next(_ buffer: inout ByteBuffer) throws -> RESPValue? {
        let source = buffer
        var consumed = 0
        defer { buffer.moveReaderIndex(forwardBy: consumed) }
        return try source.withUnsafeReadableBytes { bytes in
            try nextReply(bytes, of: source, consumed: &consumed)
        }
    }

    /// ``next(_:)`` on the readable bytes of `source`, of which the first `consumed` are parsed.
    private mutating func nextReply(_ bytes: UnsafeRawBufferPointer, of source: ByteBuffer, consumed: inout Int) throws -> RESPValue? {
        while var value = try nextElement(bytes, of: source, consumed: &consumed) {
            // Put the element in its array, and each array it completes in the one around it.
            while let last = openArrays.indices.last {
                heldBytes += Self.elementSize + value.payloadSize
                openArrays[last].elements.append(value)
                openArrays[last].remaining -= 1
                guard openArrays[last].remaining == 0 else { break }
                value = .array(openArrays.removeLast().elements)
            }
            if openArrays.isEmpty {
                heldBytes = 0
                return value
            }
            try checkSize(heldBytes)
        }
        try checkSize(heldBytes + bytes.count - consumed)
        return nil
    }

    /// The size of an element in an array, counted for each element an incomplete reply holds.
    private static let elementSize = MemoryLayout<RESPValue>.stride

    private func checkSize(_ held: Int) throws {
        guard held <= maximumReplySize else {
            throw RESPProtocolError(reason: "a reply runs over \(maximumReplySize) bytes without ending")
        }
    }

    /// Parses the next element that is not a non-empty array — opening any arrays announced before
    /// it — and consumes its bytes; `nil` when the rest of it has not arrived yet.
    private mutating func nextElement(_ bytes: UnsafeRawBufferPointer, of source: ByteBuffer, consumed: inout Int) throws -> RESPValue? {
        while true {
            switch expecting {
            case .typeByte:
                guard consumed < bytes.count else { return nil }
                let type = bytes[consumed]
                switch type {
                case UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: ":"), UInt8(ascii: "$"), UInt8(ascii: "*"):
                    consumed += 1
                    expecting = .line(type: type, scanned: 0)
                default:
                    throw RESPProtocolError(reason: "unknown type byte \(Self.describe(type)) where a reply should start")
                }
            case .line(let type, var scanned):
                guard let line = try Self.line(bytes, consumed: &consumed, scanned: &scanned) else {
                    expecting = .line(type: type, scanned: scanned)
                    return nil
                }
                expecting = .typeByte
                if let value = try element(type, line) { return value }
            case .bulkString(let length):
                let start = consumed
                guard bytes.count - start >= length + 2 else { return nil }
                guard bytes[start + length] == Self.cr, bytes[start + length + 1] == Self.lf else {
                    throw RESPProtocolError(reason: "a \(length)-byte bulk string is not followed by CRLF")
                }
                consumed += length + 2
                expecting = .typeByte
                guard openArrays.isEmpty else {
                    // Kept across reads: a copy of its own, so that it does not keep the
                    // connection's whole buffer alive (nor make the next read copy that buffer).
                    var copy = Self.allocator.buffer(capacity: length)
                    copy.writeBytes(UnsafeRawBufferPointer(rebasing: bytes[start..<start + length]))
                    return .bulkString(copy)
                }
                return .bulkString(source.getSlice(at: source.readerIndex + start, length: length)!)
            }
        }
    }

    private static let allocator = ByteBufferAllocator()

    /// The element a line of `type` stands for; `nil` when it is the header of a bulk string or
    /// of a non-empty array, whose bytes or elements follow.
    private mutating func element(_ type: UInt8, _ line: UnsafeRawBufferPointer) throws -> RESPValue? {
        switch type {
        case UInt8(ascii: "+"):
            return .simpleString(String(decoding: line, as: UTF8.self))
        case UInt8(ascii: "-"):
            return .error(String(decoding: line, as: UTF8.self))
        case UInt8(ascii: ":"):
            return .integer(try Self.integer(in: line, of: "an integer reply"))
        case UInt8(ascii: "$"):
            let length = try Self.integer(in: line, of: "a bulk string length")
            if length == -1 { return .bulkString(nil) }
            guard length >= 0, length <= Self.maximumBulkLength else {
                throw RESPProtocolError(reason: "bulk string length \(length) is out of range (-1 to \(Self.maximumBulkLength))")
            }
            expecting = .bulkString(length: Int(length))
            return nil
        default:
            let count = try Self.integer(in: line, of: "an array length")
            if count == -1 { return .array(nil) }
            guard count >= 0, count <= Self.maximumArrayCount else {
                throw RESPProtocolError(reason: "array length \(count) is out of range (-1 to \(Self.maximumArrayCount))")
            }
            guard openArrays.count < Self.maximumDepth else {
                throw RESPProtocolError(reason: "arrays are nested more than \(Self.maximumDepth) deep")
            }
            if count == 0 { return .array([]) }
            var elements: [RESPValue] = []
            elements.reserveCapacity(min(Int(count), 1024))
            openArrays.append(PartialArray(elements: elements, remaining: Int(count)))
            return nil
        }
    }

    private static let cr = UInt8(ascii: "\r")
    private static let lf = UInt8(ascii: "\n")

    /// The line that starts at `consumed`, without its CRLF, with `consumed` moved past the CRLF;
    /// `nil` when the line is not complete, consuming nothing.
    /// - Parameter scanned: How many bytes of the line are known to hold no CR or LF; the search
    ///   starts after them, and on `nil` it says how far the search got.
    private static func line(_ bytes: UnsafeRawBufferPointer, consumed: inout Int, scanned: inout Int) throws -> UnsafeRawBufferPointer? {
        let start = consumed
        // No further than one byte past the longest line: enough to tell that it is too long.
        let limit = min(bytes.count, start + maximumLineLength + 1)
        var end = start + scanned
        while end < limit, bytes[end] != cr, bytes[end] != lf { end += 1 }
        // The line so far, or the whole line: too long either way, whether or not its CRLF is here.
        guard end - start <= maximumLineLength else {
            throw RESPProtocolError(reason: "a line runs over \(maximumLineLength) bytes without CRLF")
        }
        scanned = end - start
        guard end < bytes.count else { return nil }
        guard bytes[end] == cr else {
            throw RESPProtocolError(reason: "a line ends with LF without CR")
        }
        guard end + 1 < bytes.count else { return nil }
        guard bytes[end + 1] == lf else {
            throw RESPProtocolError(reason: "CR is followed by \(describe(bytes[end + 1])) instead of LF")
        }
        consumed = end + 2
        return UnsafeRawBufferPointer(rebasing: bytes[start..<end])
    }

    /// Parses a signed decimal integer that fills `line`.
    private static func integer(in line: UnsafeRawBufferPointer, of what: String) throws -> Int64 {
        var index = 0
        let negative = !line.isEmpty && line[0] == UInt8(ascii: "-")
        if negative { index = 1 }
        guard index < line.count, line.count <= 20 else {
            throw RESPProtocolError(reason: "\(what) is not a number: \(quote(line))")
        }
        var value: Int64 = 0
        while index < line.count {
            let byte = line[index]
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

    private static func quote(_ line: UnsafeRawBufferPointer) -> String {
        "\"" + String(decoding: line.prefix(40), as: UTF8.self) + (line.count > 40 ? "…" : "") + "\""
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}

extension RESPValue {
    /// The bytes of a string or error, counted with the element's own size while a reply is incomplete.
    fileprivate var payloadSize: Int {
        switch self {
        case .simpleString(let text), .error(let text): text.utf8.count
        case .bulkString(let bytes?): bytes.readableBytes
        case .integer, .bulkString(nil), .array: 0
        }
    }
}
