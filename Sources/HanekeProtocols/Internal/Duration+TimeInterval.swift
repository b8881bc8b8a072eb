package import Foundation

extension Duration {
    /// The duration in seconds, as a `TimeInterval`.
    package var timeInterval: TimeInterval {
        let (seconds, attoseconds) = components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }

    /// The duration in whole milliseconds (the rest dropped, toward zero), clamped to `Int64`'s
    /// range: `.seconds(Int64.max)` is `Int64.max` milliseconds, not a trap. Every store converts
    /// lifetimes and timeouts through this or ``saturatingNanoseconds``.
    package var saturatingMilliseconds: Int64 { saturating(unitsPerSecond: 1_000) }

    /// The duration in whole nanoseconds (the rest dropped, toward zero), clamped to `Int64`'s
    /// range (about 292 years).
    package var saturatingNanoseconds: Int64 { saturating(unitsPerSecond: 1_000_000_000) }

    private func saturating(unitsPerSecond: Int64) -> Int64 {
        let (seconds, attoseconds) = components
        let limit: Int64 = seconds < 0 || (seconds == 0 && attoseconds < 0) ? .min : .max
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: unitsPerSecond)
        guard !overflow else { return limit }
        let (sum, sumOverflow) = whole.addingReportingOverflow(attoseconds / (1_000_000_000_000_000_000 / unitsPerSecond))
        return sumOverflow ? limit : sum
    }
}

extension Int64 {
    /// `self + other`, clamped to `Int64`'s range instead of trapping: an instant plus a huge
    /// lifetime is the end of time.
    package func saturatingAdding(_ other: Int64) -> Int64 {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? (other < 0 ? .min : .max) : sum
    }
}
