/// How `Date` values are represented in JSON.
public enum JSONDateStrategy: Sendable, Hashable {
    /// Foundation's default: seconds since 2001-01-01 as a number.
    case deferredToDate
    /// Seconds since 1970-01-01 as a number.
    case secondsSince1970
    /// An ISO 8601 string.
    case iso8601
}
