import StoreFolders
import Testing

/// The hexadecimal names `KeyDigest` writes (its digit loop, which the compiler vectorises) against
/// the same digits written by the standard library, over digests that hold every digit in every
/// place.
@Suite struct KeyDigestTests {
    /// The 16 upper-case digits of `value`, zero-padded, as the standard library writes them.
    func reference(_ value: UInt64) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }

    @Test func namesAreTheUpperCaseDigitsOfTheDigest() {
        var generator = SystemRandomNumberGenerator()
        var digests = [
            KeyDigest(high: 0, low: 0), KeyDigest(high: .max, low: .max),
            KeyDigest(high: 0x0123_4567_89AB_CDEF, low: 0xFEDC_BA98_7654_3210),
            KeyDigest(high: 0x9A9A_9A9A_9A9A_9A9A, low: 0xA9A9_A9A9_A9A9_A9A9),
        ]
        digests += (0..<2_000).map { _ in KeyDigest(high: generator.next(), low: generator.next()) }
        for digest in digests {
            let hex = reference(digest.high) + reference(digest.low)
            #expect(digest.hex == hex)
            #expect(digest.shard == String(hex.prefix(2)))
            #expect(digest.path(in: "/var/cache/x") == "/var/cache/x/\(hex.prefix(2))/\(hex)")
        }
    }

    /// A known MD5 (RFC 1321's test suite): the name of the key "abc".
    @Test func theNameOfAKeyIsItsMD5() {
        #expect(KeyDigest(key: "abc").hex == "900150983CD24FB0D6963F7D28E17F72")
    }
}
