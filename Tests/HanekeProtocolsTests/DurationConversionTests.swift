@testable import HanekeProtocols
import Testing

/// Every store converts lifetimes and timeouts through one saturating conversion.
struct DurationConversionTests {
    @Test(arguments: [
        (Duration.zero, Int64(0), Int64(0)),
        (.milliseconds(1_500), 1_500, 1_500_000_000),
        (.nanoseconds(1_999_999), 1, 1_999_999),
        (.nanoseconds(-1_999_999), -1, -1_999_999),
        (.seconds(Int64.max), .max, .max),
        (.seconds(Int64.min), .min, .min),
        (.seconds(9_223_372_036_854_775), 9_223_372_036_854_775_000, .max),
    ])
    func convertsAndClamps(duration: Duration, milliseconds: Int64, nanoseconds: Int64) {
        #expect(duration.saturatingMilliseconds == milliseconds)
        #expect(duration.saturatingNanoseconds == nanoseconds)
    }

    @Test func anInstantPlusAHugeLifetimeIsTheEndOfTime() {
        #expect(Int64(1_700_000_000_000).saturatingAdding(.max) == .max)
        #expect(Int64(-5).saturatingAdding(.min) == .min)
        #expect(Int64(5).saturatingAdding(-7) == -2)
    }
}
