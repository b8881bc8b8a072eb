public import Foundation

/// HTTP's dates (RFC 9110 §5.6.7): parses the preferred form and the two obsolete ones, and writes
/// the preferred one, without `DateFormatter` (whose locale and time zone handling is slow and
/// differs on Linux).
public enum HTTPDate {
    private static let monthNames = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
    private static let dayNames = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"]   // 1970-01-01 was a Thursday
    private static let monthTitles = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// Parses an HTTP date: `Sun, 06 Nov 1994 08:49:37 GMT`, `Sunday, 06-Nov-94 08:49:37 GMT` or
    /// `Sun Nov  6 08:49:37 1994`. The day name is not checked against the date.
    /// - Parameter text: The field value.
    /// - Returns: The instant, or `nil` when `text` is not a valid HTTP date.
    public static func parse(_ text: String) -> Date? {
        if let date = parseFixdate(text) { return date }
        // Exactly one space between parts: "Thu, 18  Aug  2050 …" is not a date (RFC 9110 §5.6.7).
        let words = text.lowercased().split(separator: " ", omittingEmptySubsequences: false)
        guard let first = words.first else { return nil }
        let day: Int, month: Int, year: Int, time: Substring
        if first.hasSuffix(","), words.count == 6, words[5] == "gmt" {
            // IMF-fixdate: "sun," "06" "nov" "1994" "08:49:37" "gmt"
            guard first.count == 4, let d = number(words[1], digits: 2), let m = monthIndex(words[2]),
                  let y = number(words[3], digits: 4) else { return nil }
            (day, month, year, time) = (d, m, y, words[4])
        } else if first.hasSuffix(","), words.count == 4, words[3] == "gmt" {
            // RFC 850: "sunday," "06-nov-94" "08:49:37" "gmt"
            let parts = words[1].split(separator: "-", omittingEmptySubsequences: false)
            guard first.count > 4, parts.count == 3, let d = number(parts[0], digits: 2), let m = monthIndex(parts[1]),
                  let y2 = number(parts[2], digits: 2) else { return nil }
            // A two-digit year more than 50 years in the future is in the past century (RFC 9110).
            let currentYear = civil(fromDays: Int(Date().timeIntervalSince1970) / 86_400).0
            var y = (currentYear / 100) * 100 + y2
            if y > currentYear + 50 { y -= 100 }
            (day, month, year, time) = (d, m, y, words[2])
        } else if text.utf8.count == 24 {
            // asctime, fixed width: "sun nov  6 08:49:37 1994"
            let parts = words.filter { !$0.isEmpty }
            guard parts.count == 5, first.count == 3, let m = monthIndex(parts[1]), let d = number(parts[2], digits: 1...2),
                  let y = number(parts[4], digits: 4) else { return nil }
            (day, month, year, time) = (d, m, y, parts[3])
        } else {
            return nil
        }
        let clock = time.split(separator: ":", omittingEmptySubsequences: false)
        guard clock.count == 3, let hour = number(clock[0], digits: 2), let minute = number(clock[1], digits: 2),
              let second = number(clock[2], digits: 2), hour < 24, minute < 60, second < 61,
              day >= 1, day <= daysIn(month: month, year: year) else { return nil }
        let days = daysSinceEpoch(year: year, month: month + 1, day: day)
        return Date(timeIntervalSince1970: TimeInterval(days * 86_400 + hour * 3_600 + minute * 60 + min(second, 59)))
    }

    /// The preferred form, the common case, read from its fixed positions:
    /// `Sun, 06 Nov 1994 08:49:37 GMT`; `nil` for anything else (the general parser decides).
    private static func parseFixdate(_ text: String) -> Date? {
        var text = text
        return text.withUTF8 { bytes -> Date? in
            guard bytes.count == 29, bytes[3] == UInt8(ascii: ","), bytes[4] == 0x20, bytes[7] == 0x20, bytes[11] == 0x20,
                  bytes[16] == 0x20, bytes[19] == UInt8(ascii: ":"), bytes[22] == UInt8(ascii: ":"), bytes[25] == 0x20,
                  bytes[26] | 0x20 == UInt8(ascii: "g"), bytes[27] | 0x20 == UInt8(ascii: "m"), bytes[28] | 0x20 == UInt8(ascii: "t")
            else { return nil }
            func digits(_ range: Range<Int>) -> Int? {
                var value = 0
                for index in range {
                    let digit = Int(bytes[index]) - 0x30
                    guard digit >= 0, digit <= 9 else { return nil }
                    value = value * 10 + digit
                }
                return value
            }
            let month = String(decoding: UnsafeBufferPointer(rebasing: bytes[8..<11]), as: UTF8.self).lowercased()
            guard let m = monthNames.firstIndex(of: month), let day = digits(5..<7), let year = digits(12..<16),
                  let hour = digits(17..<19), let minute = digits(20..<22), let second = digits(23..<25),
                  hour < 24, minute < 60, second < 61, day >= 1, day <= daysIn(month: m, year: year) else { return nil }
            let days = daysSinceEpoch(year: year, month: m + 1, day: day)
            return Date(timeIntervalSince1970: TimeInterval(days * 86_400 + hour * 3_600 + minute * 60 + min(second, 59)))
        }
    }

    /// Writes `date` in the preferred form, `Sun, 06 Nov 1994 08:49:37 GMT`, to the second.
    /// - Parameter date: The instant.
    /// - Returns: The field value.
    public static func format(_ date: Date) -> String {
        let seconds = Int(date.timeIntervalSince1970.rounded(.down))
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let inDay = seconds - days * 86_400
        let (year, month, day) = civil(fromDays: days)
        let weekday = dayNames[((days % 7) + 7) % 7]
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        let yearText = String(repeating: "0", count: max(0, 4 - String(year).count)) + String(year)
        return "\(weekday), \(two(day)) \(monthTitles[month - 1]) \(yearText) \(two(inDay / 3_600)):\(two(inDay / 60 % 60)):\(two(inDay % 60)) GMT"
    }

    private static func monthIndex(_ text: some StringProtocol) -> Int? {
        monthNames.firstIndex(of: String(text))
    }

    private static func number(_ text: some StringProtocol, digits: Int) -> Int? {
        number(text, digits: digits...digits)
    }

    private static func number(_ text: some StringProtocol, digits: ClosedRange<Int>) -> Int? {
        guard digits.contains(text.utf8.count), text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return Int(text)
    }

    private static func isLeap(_ year: Int) -> Bool { year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) }

    /// Days in a month, `month` counted from 0.
    private static func daysIn(month: Int, year: Int) -> Int {
        [31, isLeap(year) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month]
    }

    /// Days from 1970-01-01 to a date of the proleptic Gregorian calendar (Howard Hinnant's algorithm).
    private static func daysSinceEpoch(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The date `days` after 1970-01-01: year, month from 1, day from 1.
    private static func civil(fromDays days: Int) -> (Int, Int, Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
