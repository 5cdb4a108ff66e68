import Foundation

/// Formats dates as RFC 9110 `IMF-fixdate`, the form `Retry-After` and `Date` use:
/// `Sun, 06 Nov 1994 08:49:37 GMT`.
enum HTTPDate {
    private static let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    static func string(from date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(secondsFromGMT: 0)!
        let parts = calendar.dateComponents([.weekday, .day, .month, .year, .hour, .minute, .second], from: date)
        func two(_ value: Int?) -> String {
            let value = value ?? 0
            return value < 10 ? "0\(value)" : "\(value)"
        }
        let weekday = Self.weekdays[(parts.weekday ?? 1) - 1]
        let month = Self.months[(parts.month ?? 1) - 1]
        let year = parts.year ?? 1970
        let time = "\(two(parts.hour)):\(two(parts.minute)):\(two(parts.second))"
        return "\(weekday), \(two(parts.day)) \(month) \(year) \(time) GMT"
    }
}
