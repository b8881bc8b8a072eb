public import Foundation

/// A source of wall-clock time, injected into stores with a time to live so that tests can move time
/// forward instead of sleeping (`TestClock` in HanekeTesting).
///
/// Wall-clock time (a `Date`) rather than a monotonic instant, because expiry dates are written to disk
/// and must mean the same thing after a restart.
public protocol StoreClock: Sendable {
    /// The current time.
    func now() -> Date
}
