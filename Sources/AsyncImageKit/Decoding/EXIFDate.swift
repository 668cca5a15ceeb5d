import Foundation

/// EXIF's date format, `"YYYY:MM:DD HH:MM:SS"`, and its offsets, `"+HH:MM"`.
enum EXIFDate {
    /// `text` as a date at `offset` (UTC when `nil` or unreadable); `nil` when
    /// `text` is not a valid date and time.
    static func parse(_ text: String, offset: String?) -> Date? {
        let digits = Array(text.utf8)
        guard digits.count >= 19 else { return nil }
        func number(_ start: Int, _ length: Int) -> Int? {
            var value = 0
            for byte in digits[start..<(start + length)] {
                guard (0x30...0x39).contains(byte) else { return nil }
                value = value * 10 + Int(byte - 0x30)
            }
            return value
        }
        guard let year = number(0, 4), let month = number(5, 2), let day = number(8, 2),
            let hour = number(11, 2), let minute = number(14, 2), let second = number(17, 2),
            year >= 1, (1...12).contains(month), (1...daysIn(month, year)).contains(day),
            hour < 24, minute < 60, second <= 60
        else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        var seconds = days * 86_400 + hour * 3_600 + minute * 60 + second
        if let offset, let shift = offsetSeconds(offset) { seconds -= shift }
        return Date(timeIntervalSince1970: TimeInterval(seconds))
    }

    /// `"+HH:MM"` or `"-HH:MM"` in seconds east of UTC.
    static func offsetSeconds(_ text: String) -> Int? {
        let bytes = Array(text.utf8)
        guard bytes.count >= 6, bytes[0] == 0x2B || bytes[0] == 0x2D, bytes[3] == 0x3A,
            let hours = Int(String(decoding: bytes[1..<3], as: UTF8.self)),
            let minutes = Int(String(decoding: bytes[4..<6], as: UTF8.self)),
            hours <= 18, minutes < 60
        else { return nil }
        let value = hours * 3_600 + minutes * 60
        return bytes[0] == 0x2D ? -value : value
    }

    static func daysIn(_ month: Int, _ year: Int) -> Int {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days since 1970-01-01 in the proleptic Gregorian calendar (Howard Hinnant's algorithm).
    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
