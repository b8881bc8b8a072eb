import NIOCore

/// How long to wait before trying to connect again after failed attempts: exponential, capped,
/// with "equal jitter" (half the delay fixed, half random) so that a fleet of machines does not
/// reconnect in lockstep when Redis comes back.
struct ReconnectBackoff: Sendable, Hashable {
    /// The delay after the first failure (before jitter).
    var minimum: TimeAmount
    /// The longest delay.
    var maximum: TimeAmount

    /// The delay after `failures` consecutive failed attempts (1 or more).
    /// - Parameters:
    ///   - failures: How many attempts in a row have failed.
    ///   - random: A number in `0..<1`; the jitter.
    /// - Returns: Between half and all of `min(maximum, minimum × 2^(failures − 1))`.
    func delay(afterFailures failures: Int, random: Double) -> TimeAmount {
        let doublings = min(max(failures, 1) - 1, 40)
        let (scaled, overflow) = minimum.nanoseconds.multipliedReportingOverflow(by: Int64(1) << doublings)
        let base = overflow ? maximum.nanoseconds : min(maximum.nanoseconds, scaled)
        let half = base / 2
        return .nanoseconds(half + Int64(Double(base - half) * min(max(random, 0), 1)))
    }
}
