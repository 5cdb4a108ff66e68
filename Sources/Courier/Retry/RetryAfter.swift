import Foundation

/// Reads a `Retry-After` header value (RFC 9110 §10.2.3): a number of seconds, or an HTTP-date.
enum RetryAfter {
    /// The delay a `Retry-After` value asks for, measured from `now`.
    ///
    /// - Parameters:
    ///   - value: The header value, for example `"2"` or `"Wed, 21 Oct 2015 07:28:00 GMT"`.
    ///   - now: The current wall-clock time, for HTTP-dates.
    /// - Returns: The delay (zero for a date in the past; at most ``NetworkNumber/maximumSeconds``, about
    ///   34,800 years, which is "longer than any cap"), or `nil` when the value is neither form.
    static func delay(_ value: String, now: Date) -> Duration? {
        var bytes = Array(value.utf8)[...]
        while let first = bytes.first, first == space || first == tab { bytes.removeFirst() }
        while let last = bytes.last, last == space || last == tab { bytes.removeLast() }
        guard !bytes.isEmpty else { return nil }
        if let seconds = NetworkNumber.digits(bytes, maximum: NetworkNumber.maximumSeconds) {
            return NetworkNumber.duration(wholeSeconds: seconds)
        }
        guard let date = httpDate(Array(bytes), now: now) else { return nil }
        return NetworkNumber.duration(seconds: Double(date) - now.timeIntervalSince1970)
    }

    /// Parses an HTTP-date in any of the three forms a recipient must accept (RFC 9110 §5.6.7), and
    /// returns its seconds since 1970:
    /// - IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`
    /// - RFC 850: `Sunday, 06-Nov-94 08:49:37 GMT`
    /// - asctime: `Sun Nov  6 08:49:37 1994`
    static func httpDate(_ bytes: [UInt8], now: Date) -> Int64? {
        let tokens = bytes.split { $0 == space || $0 == comma || $0 == hyphen }
        let day: ArraySlice<UInt8>
        let month: ArraySlice<UInt8>
        let year: ArraySlice<UInt8>
        let time: ArraySlice<UInt8>
        if tokens.count == 6, tokens[5].elementsEqual("GMT".utf8) {
            (day, month, year, time) = (tokens[1], tokens[2], tokens[3], tokens[4])
        } else if tokens.count == 5 {
            (month, day, time, year) = (tokens[1], tokens[2], tokens[3], tokens[4])
        } else {
            return nil
        }
        guard tokens[0].allSatisfy(isLetter),
            let monthNumber = monthNumber(month),
            (1...2).contains(day.count), day.allSatisfy(isDigit),
            year.count == 4 || year.count == 2, year.allSatisfy(isDigit),
            let (hour, minute, second) = clockTime(time)
        else { return nil }
        var yearNumber = number(year)
        if year.count == 2 {
            // A two-digit year that would be more than 50 years ahead is the latest such year in the past.
            let currentYear = civilYear(daysSince1970: Int64((now.timeIntervalSince1970 / 86_400).rounded(.down)))
            yearNumber += currentYear / 100 * 100
            if yearNumber > currentYear + 50 { yearNumber -= 100 }
        }
        let dayNumber = number(day)
        guard dayNumber >= 1, dayNumber <= daysInMonth(monthNumber, year: yearNumber) else { return nil }
        let days = daysSince1970(year: yearNumber, month: monthNumber, day: dayNumber)
        return days * 86_400 + hour * 3_600 + minute * 60 + second
    }

    private static let space = UInt8(ascii: " ")
    private static let tab = UInt8(ascii: "\t")
    private static let comma = UInt8(ascii: ",")
    private static let hyphen = UInt8(ascii: "-")
    private static let colon = UInt8(ascii: ":")
    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

    private static func isDigit(_ byte: UInt8) -> Bool { byte >= 48 && byte <= 57 }

    private static func isLetter(_ byte: UInt8) -> Bool { (byte | 0x20) >= 97 && (byte | 0x20) <= 122 }

    private static func number(_ digits: ArraySlice<UInt8>) -> Int64 {
        digits.reduce(0) { $0 * 10 + Int64($1 - 48) }
    }

    private static func monthNumber(_ name: ArraySlice<UInt8>) -> Int64? {
        guard name.count == 3, name.allSatisfy(isLetter) else { return nil }
        let lowered = String(decoding: name.map { $0 | 0x20 }, as: UTF8.self)
        return months.firstIndex(of: lowered).map { Int64($0 + 1) }
    }

    private static func clockTime(_ text: ArraySlice<UInt8>) -> (Int64, Int64, Int64)? {
        let parts = text.split(separator: colon, omittingEmptySubsequences: false)
        guard parts.count == 3, parts.allSatisfy({ $0.count == 2 && $0.allSatisfy(isDigit) }) else { return nil }
        let (hour, minute, second) = (number(parts[0]), number(parts[1]), number(parts[2]))
        // 60 seconds is a leap second, which the grammar allows.
        guard hour < 24, minute < 60, second <= 60 else { return nil }
        return (hour, minute, second)
    }

    private static func daysInMonth(_ month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2:
            let isLeap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
            return isLeap ? 29 : 28
        case 4, 6, 9, 11:
            return 30
        default:
            return 31
        }
    }

    /// Days from 1970-01-01 to a date of the proleptic Gregorian calendar (Howard Hinnant's
    /// `days_from_civil`).
    static func daysSince1970(year: Int64, month: Int64, day: Int64) -> Int64 {
        let year = month <= 2 ? year - 1 : year
        let era = (year >= 0 ? year : year - 399) / 400
        let yearOfEra = year - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The year of the day `days` after 1970-01-01 (Howard Hinnant's `civil_from_days`).
    static func civilYear(daysSince1970 days: Int64) -> Int64 {
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        return yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
    }
}
