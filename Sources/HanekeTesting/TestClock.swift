public import Foundation
public import HanekeProtocols

/// A clock that stands still until a test moves it: expiry without sleeping.
///
/// ```swift
/// let clock = TestClock()
/// let memory = MemoryStore<String, Data>(timeToLive: .seconds(60), clock: clock)
/// clock.advance(by: .seconds(61))   // every entry has now expired
/// ```
public final class TestClock: StoreClock {
    private let current: Locked<Date>

    /// Creates a clock stopped at `start`.
    /// - Parameter start: The initial time; 2026-01-01T00:00:00Z by default, so runs are reproducible.
    public init(start: Date = Date(timeIntervalSince1970: 1_767_225_600)) {
        current = Locked(start)
    }

    /// The clock's current time.
    public func now() -> Date { current.withLock { $0 } }

    /// Moves the clock forward (or backward, with a negative duration).
    /// - Parameter duration: How far to move.
    public func advance(by duration: Duration) {
        current.withLock { $0 += duration.timeInterval }
    }

    /// Sets the clock to `date`.
    /// - Parameter date: The new current time.
    public func set(to date: Date) {
        current.withLock { $0 = date }
    }
}
