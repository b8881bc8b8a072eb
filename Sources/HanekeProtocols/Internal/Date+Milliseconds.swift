package import Foundation

extension Date {
    /// Whole milliseconds since 1970, rounded down, as the disk engines and Redis keep instants;
    /// clamped to what an `Int64` holds (a date beyond it, or not a number, is the latest).
    package var millisecondsSince1970: Int64 {
        let milliseconds = (timeIntervalSince1970 * 1_000).rounded(.down)
        guard !milliseconds.isNaN, milliseconds < 9.2e18 else { return .max }
        guard milliseconds > -9.2e18 else { return .min }
        return Int64(milliseconds)
    }

    /// The instant `milliseconds` after 1970.
    package init(millisecondsSince1970 milliseconds: Int64) {
        self.init(timeIntervalSince1970: Double(milliseconds) / 1_000)
    }
}
