#if canImport(Glibc)
import Glibc
#endif
import NIOCore
import NIOEmbedded
@testable import RedisStore
import Testing
import TestSupport

/// The RESP2 encoder and decoder on their own: every type, every split of the bytes, and what a
/// malformed reply does.
struct RESPTests {
    /// Bytes and the value they encode, for every RESP2 type and its edge cases.
    static let vectors: [(bytes: String, value: RESPValue)] = [
        ("+OK\r\n", .simpleString("OK")),
        ("+\r\n", .simpleString("")),
        ("-ERR unknown command 'FOO'\r\n", .error("ERR unknown command 'FOO'")),
        ("-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
         .error("WRONGTYPE Operation against a key holding the wrong kind of value")),
        (":0\r\n", .integer(0)),
        (":-42\r\n", .integer(-42)),
        (":9223372036854775807\r\n", .integer(.max)),
        (":-9223372036854775808\r\n", .integer(.min)),
        ("$5\r\nhello\r\n", .bulkString(ByteBuffer(string: "hello"))),
        ("$0\r\n\r\n", .bulkString(ByteBuffer())),
        ("$-1\r\n", .bulkString(nil)),
        ("$6\r\na\r\nb\r\n\r\n", .bulkString(ByteBuffer(string: "a\r\nb\r\n"))),   // CRLF inside is data
        ("$4\r\n\u{0}\u{1}\u{7F}$\r\n", .bulkString(ByteBuffer(bytes: [0, 1, 0x7F, 0x24]))),
        ("*0\r\n", .array([])),
        ("*-1\r\n", .array(nil)),
        ("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n", .command("SET", "k", "v")),
        ("*2\r\n$1\r\n0\r\n*2\r\n$3\r\nk:1\r\n$3\r\nk:2\r\n",
         .array([.bulkString(ByteBuffer(string: "0")), .array([.bulkString(ByteBuffer(string: "k:1")), .bulkString(ByteBuffer(string: "k:2"))])])),
        ("*5\r\n+OK\r\n-ERR x\r\n:7\r\n$-1\r\n*-1\r\n",
         .array([.simpleString("OK"), .error("ERR x"), .integer(7), .bulkString(nil), .array(nil)])),
        ("*1\r\n*1\r\n*0\r\n", .array([.array([.array([])])])),
    ]

    @Test(arguments: 0..<vectors.count)
    func encodesEveryType(_ index: Int) throws {
        let (bytes, value) = Self.vectors[index]
        var out = ByteBuffer()
        try RESPEncoder.write(value, into: &out)
        #expect(String(buffer: out) == bytes)
    }

    @Test(arguments: 0..<vectors.count)
    func decodesEveryTypeInOneRead(_ index: Int) throws {
        let (bytes, value) = Self.vectors[index]
        let channel = try Self.decodingChannel()
        try channel.writeInbound(ByteBuffer(string: bytes))
        #expect(try channel.readInbound(as: RESPValue.self) == value)
        #expect(try channel.readInbound(as: RESPValue.self) == nil)
        #expect(try channel.finish().isClean)
    }

    /// The bytes of each vector arrive in two reads, split at every position: nothing comes out
    /// of the first read, exactly the value out of the second.
    @Test(arguments: 0..<vectors.count)
    func decodesEveryTypeSplitAtEveryPosition(_ index: Int) throws {
        let (text, value) = Self.vectors[index]
        let bytes = Array(text.utf8)
        for split in 1..<bytes.count {
            let channel = try Self.decodingChannel()
            try channel.writeInbound(ByteBuffer(bytes: bytes[..<split]))
            #expect(try channel.readInbound(as: RESPValue.self) == nil, "split at \(split) of \(text.debugDescription)")
            try channel.writeInbound(ByteBuffer(bytes: bytes[split...]))
            #expect(try channel.readInbound(as: RESPValue.self) == value, "split at \(split) of \(text.debugDescription)")
            #expect(try channel.finish().isClean)
        }
    }

    /// Every vector back to back, delivered one byte at a time: pipelined replies, each complete
    /// exactly when its last byte arrives.
    @Test func decodesPipelinedRepliesArrivingByteByByte() throws {
        let channel = try Self.decodingChannel()
        var decoded: [RESPValue] = []
        for (text, _) in Self.vectors {
            let bytes = Array(text.utf8)
            for (offset, byte) in bytes.enumerated() {
                try channel.writeInbound(ByteBuffer(bytes: [byte]))
                let value = try channel.readInbound(as: RESPValue.self)
                #expect((value != nil) == (offset == bytes.count - 1), "\(text.debugDescription) byte \(offset)")
                if let value { decoded.append(value) }
            }
        }
        #expect(decoded == Self.vectors.map(\.value))
        #expect(try channel.finish().isClean)
    }

    @Test func decodesSeveralRepliesFromOneRead() throws {
        let channel = try Self.decodingChannel()
        try channel.writeInbound(ByteBuffer(string: Self.vectors.map(\.bytes).joined()))
        var decoded: [RESPValue] = []
        while let value = try channel.readInbound(as: RESPValue.self) { decoded.append(value) }
        #expect(decoded == Self.vectors.map(\.value))
    }

    @Test func decodesALargeBulkStringInChunks() async throws {
        // A megabyte made and decoded in a debug build is 0.15 s of CPU: off the cooperative pool.
        let (early, decoded, payload) = try await offThePool { () throws -> (Int, RESPValue?, [UInt8]) in
            let payload = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
            var bytes = ByteBuffer(string: "$\(payload.count)\r\n")
            bytes.writeBytes(payload)
            bytes.writeStaticString("\r\n")
            let channel = try Self.decodingChannel()
            var early = 0
            while let chunk = bytes.readSlice(length: min(bytes.readableBytes, 65_536)) {
                if try channel.readInbound(as: RESPValue.self) != nil { early += 1 }
                try channel.writeInbound(chunk)
                if bytes.readableBytes == 0 { break }
            }
            return (early, try channel.readInbound(as: RESPValue.self), payload)
        }
        #expect(early == 0, "a value came out before its last chunk")
        #expect(decoded == .bulkString(ByteBuffer(bytes: payload)))
    }

    /// A nested reply, then a second reply, split into three reads at every pair of positions:
    /// the decoder carries its place from read to read and gives what one read gives.
    @Test func aNestedReplySplitAnywhereDecodesAsInOneRead() async throws {
        let text = "*4\r\n*3\r\n$3\r\nk:1\r\n*2\r\n:-7\r\n$-1\r\n+OK\r\n$6\r\na\r\nb\r\n\r\n*0\r\n*2\r\n*-1\r\n-ERR nested\r\n"
            + ":123456789\r\n"
        let expected: [RESPValue] = [
            .array([
                .array([.bulkString(ByteBuffer(string: "k:1")), .array([.integer(-7), .bulkString(nil)]), .simpleString("OK")]),
                .bulkString(ByteBuffer(string: "a\r\nb\r\n")),
                .array([]),
                .array([.array(nil), .error("ERR nested")]),
            ]),
            .integer(123_456_789),
        ]
        let bytes = Array(text.utf8)
        #expect(try Self.decode([bytes[...]]) == expected)
        // About 5,000 channels, 0.9 s of CPU in a debug build: decoded off the cooperative pool,
        // which returns the splits that decoded otherwise.
        let wrong = try await offThePool { () throws -> [String] in
            var wrong: [String] = []
            for first in 1..<bytes.count {
                for second in first..<bytes.count {
                    let pieces = [bytes[..<first], bytes[first..<second], bytes[second...]]
                    let (values, clean) = try Self.decodeCheckingTheEnd(pieces)
                    if values != expected || !clean { wrong.append("split at \(first) and \(second): \(values), clean \(clean)") }
                }
            }
            return wrong
        }
        #expect(wrong.isEmpty, "\(wrong.prefix(5))")
    }

    /// A large reply arriving in 4 KiB reads costs time in proportion to its size: an array of
    /// 2,000,000 integers takes at most 6 times as long as one of 500,000 — 4 times is linear, and a
    /// decoder that parses the reply from its first byte at every read takes 16 times as long, so
    /// the bound sits well apart from both and a noisy machine does not decide the outcome. Each
    /// size is timed three times, interleaved, and the fastest run counts; the time is the CPU time
    /// of the thread that decodes, so that other tests running meanwhile on the two cores do not
    /// decide the ratio.
    @Test func aLargeReplyArrivingInPiecesDecodesInLinearTime() async throws {
        let (small, large) = try await offThePool {
            let small = Self.integerArray(count: 500_000)
            let large = Self.integerArray(count: 2_000_000)
            var times = (Duration.seconds(Int64.max), Duration.seconds(Int64.max))
            for _ in 0..<3 {
                times.0 = min(times.0, try Self.timeDecodingInPieces(small, count: 500_000))
                times.1 = min(times.1, try Self.timeDecodingInPieces(large, count: 2_000_000))
            }
            return times
        }
        let ratio = large / small
        print("RESP array of integers in 4 KiB reads, CPU time: 500,000 in \(small), 2,000,000 in \(large), ratio \(ratio)")
        #expect(ratio <= 6, "500,000 integers in \(small), 2,000,000 in \(large)")
    }

    /// The limit counts what an incomplete reply holds once parsed, not only the bytes waiting: an
    /// endless array whose elements arrive a few at a time, each consumed at once, is refused when
    /// its elements add up — although the bytes received are far under the limit.
    @Test func anIncompleteReplyIsRefusedForWhatItsParsedElementsHold() throws {
        var decoder = RESPDecoder(maximumReplySize: 10_000)
        var pending = ByteBuffer(string: "*1000000\r\n")
        var received = pending.readableBytes
        var decoded: [RESPValue] = []
        var left = 0
        let error = #expect(throws: RESPProtocolError.self) {
            for _ in 0..<1_000_000 {
                pending.writeStaticString("$3\r\nabc\r\n")
                received += 9
                if let value = try decoder.next(&pending) { decoded.append(value) }
                left = max(left, pending.readableBytes)
            }
        }
        #expect(error?.reason == "a reply runs over 10000 bytes without ending")
        #expect(decoded.isEmpty)
        #expect(left == 0, "each complete element is consumed at once")
        #expect(received < 5_000)
    }

    /// Malformed replies and the reason the decoder gives.
    static let malformed: [(bytes: String, reason: String)] = [
        ("!oops\r\n", "unknown type byte 0x21 ('!')"),
        ("OK\r\n", "unknown type byte 0x4F ('O')"),
        (":12a\r\n", "an integer reply is not a number: \"12a\""),
        (":\r\n", "an integer reply is not a number"),
        (":-\r\n", "an integer reply is not a number"),
        (":99999999999999999999\r\n", "does not fit in 64 bits"),
        ("$abc\r\n", "a bulk string length is not a number"),
        ("$-2\r\n", "bulk string length -2 is out of range"),
        ("$999999999999\r\n", "bulk string length 999999999999 is out of range"),
        ("$3\r\nabcd\r\n", "a 3-byte bulk string is not followed by CRLF"),
        ("*-5\r\n", "array length -5 is out of range"),
        ("*1\r\n?\r\n", "unknown type byte 0x3F ('?')"),
        ("+OK\rX", "CR is followed by 0x58 ('X') instead of LF"),
        ("+OK\n", "a line ends with LF without CR"),
        (String(repeating: "*1\r\n", count: 40) + ":1\r\n", "arrays are nested more than 32 deep"),
        ("+" + String(repeating: "x", count: 70_000), "a line runs over 65536 bytes without CRLF"),
        ("+" + String(repeating: "x", count: 70_000) + "\r\n", "a line runs over 65536 bytes without CRLF"),
    ]

    @Test func anIncompleteReplyLargerThanTheLimitIsRefused() throws {
        // An array that announces more elements than ever arrive keeps its bytes waiting; past the
        // limit (512 MiB and a little more by default) the decoder gives up on it.
        var waiting = ByteBuffer(string: "*1000\r\n" + String(repeating: "$3\r\nabc\r\n", count: 10))
        var decoder = RESPDecoder(maximumReplySize: 1_000)
        #expect(try decoder.next(&waiting) == nil)
        var tooLarge = ByteBuffer(string: "*1000\r\n" + String(repeating: "$3\r\nabc\r\n", count: 200))
        var other = RESPDecoder(maximumReplySize: 1_000)
        let error = #expect(throws: RESPProtocolError.self) { try other.next(&tooLarge) }
        #expect(error?.reason == "a reply runs over 1000 bytes without ending")
    }

    @Test(arguments: 0..<malformed.count)
    func rejectsMalformedRepliesWithAClearReason(_ index: Int) throws {
        let (bytes, reason) = Self.malformed[index]
        let channel = try Self.decodingChannel()
        #expect {
            try channel.writeInbound(ByteBuffer(string: bytes))
        } throws: { error in
            guard let error = error as? RESPProtocolError else { return false }
            return error.reason.contains(reason) && "\(error)".hasPrefix("malformed RESP reply: ")
        }
        _ = try? channel.finish()
    }

    @Test func refusesToEncodeLineBreaksInSimpleStrings() {
        var out = ByteBuffer()
        #expect(throws: RESPProtocolError.self) { try RESPEncoder.write(.simpleString("a\r\nb"), into: &out) }
        #expect(throws: RESPProtocolError.self) { try RESPEncoder.write(.error("a\nb"), into: &out) }
    }

    /// The values decoded from `pieces`, each written as a read of its own (empty pieces skipped).
    static func decode(_ pieces: [ArraySlice<UInt8>]) throws -> [RESPValue] {
        let (values, clean) = try decodeCheckingTheEnd(pieces)
        #expect(clean)
        return values
    }

    /// ``decode(_:)`` without expectations, for a thread outside the test's task: the values, and
    /// whether the channel ended with nothing left over.
    static func decodeCheckingTheEnd(_ pieces: [ArraySlice<UInt8>]) throws -> ([RESPValue], Bool) {
        let channel = try decodingChannel()
        var values: [RESPValue] = []
        for piece in pieces where !piece.isEmpty {
            try channel.writeInbound(ByteBuffer(bytes: piece))
            while let value = try channel.readInbound(as: RESPValue.self) { values.append(value) }
        }
        return (values, try channel.finish().isClean)
    }

    /// The first of the integers in the arrays of ``integerArray(count:)``: every one has 8 digits,
    /// so that twice the count is twice the bytes.
    static let firstInteger = 10_000_000

    /// An array of `count` integers from ``firstInteger`` up, encoded.
    static func integerArray(count: Int) -> ByteBuffer {
        var bytes = Array("*\(count)\r\n".utf8)
        bytes.reserveCapacity(count * 10)
        for number in firstInteger..<firstInteger + count {
            bytes.append(UInt8(ascii: ":"))
            bytes.append(contentsOf: String(number).utf8)
            bytes.append(contentsOf: [UInt8(ascii: "\r"), UInt8(ascii: "\n")])
        }
        return ByteBuffer(bytes: bytes)
    }

    /// How long decoding `reply`, an array of `count` integers from ``firstInteger`` up, takes
    /// when it arrives in reads of 4 KiB; checks the value too (after the clock stops).
    static func timeDecodingInPieces(_ reply: ByteBuffer, count: Int) throws -> Duration {
        let channel = try decodingChannel()
        var bytes = reply
        let start = threadCPUTime()
        while let piece = bytes.readSlice(length: min(bytes.readableBytes, 4096)), piece.readableBytes > 0 {
            try channel.writeInbound(piece)
        }
        let value = try channel.readInbound(as: RESPValue.self)
        let elapsed = threadCPUTime() - start
        guard case .array(let elements?) = value else {
            Issue.record("expected an array, decoded \(value?.summary ?? "nothing")")
            return elapsed
        }
        #expect(elements.count == count)
        var expected = Int64(firstInteger)
        for case .integer(let number) in elements where number == expected { expected += 1 }
        #expect(expected == firstInteger + count, "\(count) integers from \(firstInteger) up, in order")
        return elapsed
    }

    /// The CPU time the calling thread has used (an embedded channel decodes on the thread that
    /// writes to it).
    static func threadCPUTime() -> Duration {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return .seconds(time.tv_sec) + .nanoseconds(time.tv_nsec)
    }

    static func decodingChannel() throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(RESPDecoder()))
        return channel
    }
}
