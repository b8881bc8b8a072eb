public import Foundation

/// The system's wall clock.
public struct SystemClock: StoreClock {
    /// Creates the system clock.
    public init() {}

    /// The current time, from `Date()`.
    public func now() -> Date { Date() }
}

extension StoreClock where Self == SystemClock {
    /// The system's wall clock.
    public static var system: SystemClock { SystemClock() }
}
