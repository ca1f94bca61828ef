//! `$dateFromString`'s parsing: a string read against a format (`%Y-%m-%d`...), or without one
//! the forms of a date the server's parser reads most often: ISO 8601 (`2017-02-08T12:10:40.787Z`,
//! `2017-02-08 12:10`), `2017/02/08`, `02/08/2017`, `08-02-2017`, `08.02.2017`, and textual
//! months (`February 8, 2017`, `Wed, 8 Feb 2017 12:10:40 GMT`), each optionally followed by a
//! time and a zone (`Z`, `UTC`, `GMT`, a US zone abbreviation or a UTC offset).

use super::format::MONTH_NAMES;
use super::{MILLIS_PER_DAY, TimeZone, days_from_civil, days_from_iso, days_in_month};
use crate::error::{ErrorCode, MongoError, Result};

/// A zone written in the string: an offset (`+05:00`) or an abbreviation (`Z`, `EST`).
enum Zone {
    Offset(i64),
    Abbreviation(String, i64),
}

/// The fields read from the string; `None` for those it does not give.
#[derive(Default)]
struct Fields {
    year: Option<i64>,
    month: Option<i64>,
    day: Option<i64>,
    hour: Option<i64>,
    minute: Option<i64>,
    second: Option<i64>,
    millisecond: Option<i64>,
    day_of_year: Option<i64>,
    iso_year: Option<i64>,
    iso_week: Option<i64>,
    iso_day_of_week: Option<i64>,
    zone: Option<Zone>,
}

struct Cursor<'a> {
    text: &'a str,
    at: usize,
}

fn failure(message: String) -> MongoError {
    MongoError::new(ErrorCode::ConversionFailure, message)
}

impl Cursor<'_> {
    fn rest(&self) -> &str {
        &self.text[self.at..]
    }

    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    fn error(&self, message: &str) -> MongoError {
        let found = self
            .rest()
            .chars()
            .next()
            .map_or(String::new(), String::from);
        failure(format!(
            "Error parsing date string '{}'; {}: {message} '{found}'",
            self.text, self.at
        ))
    }

    fn eat(&mut self, byte: u8) -> bool {
        let found = self.peek() == Some(byte);
        if found {
            self.at += 1;
        }
        found
    }

    fn skip_spaces(&mut self) -> bool {
        let start = self.at;
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.at += 1;
        }
        self.at > start
    }

    /// Between one and `max` digits.
    fn number(&mut self, max: usize) -> Option<i64> {
        let digits = self.rest().bytes().take(max).take_while(u8::is_ascii_digit);
        let (count, value) = digits.fold((0, 0), |(n, v), b| (n + 1, v * 10 + i64::from(b - b'0')));
        if count == 0 {
            return None;
        }
        self.at += count;
        Some(value)
    }

    fn digits_ahead(&self) -> usize {
        self.rest().bytes().take_while(u8::is_ascii_digit).count()
    }

    fn word(&mut self) -> &str {
        let start = self.at;
        while self.peek().is_some_and(|b| b.is_ascii_alphabetic()) {
            self.at += 1;
        }
        &self.text[start..self.at]
    }

    /// A month name, full or its first three letters, any case.
    fn month_name(&mut self, full: Option<bool>) -> Option<i64> {
        let start = self.at;
        let word = self.word().to_ascii_lowercase();
        let month = MONTH_NAMES.iter().position(|name| {
            let name = name.to_ascii_lowercase();
            match full {
                Some(true) => word == name,
                Some(false) => word == name[..3],
                None => {
                    word == name || word == name[..3] || (word.len() > 3 && name.starts_with(&word))
                }
            }
        });
        if month.is_none() {
            self.at = start;
        }
        month.map(|m| m as i64 + 1)
    }

    /// A zone: `Z`, `UTC`, `GMT` or a US abbreviation, or `±HH`, `±HHMM`, `±HH:MM`.
    fn zone(&mut self) -> Option<Zone> {
        match self.peek()? {
            sign @ (b'+' | b'-') => {
                let start = self.at;
                self.at += 1;
                let mut offset = match self.digits_ahead() {
                    4 => {
                        let hhmm = self.number(4)?;
                        hhmm / 100 * 3600 + hhmm % 100 * 60
                    }
                    1 | 2 => self.number(2)? * 3600,
                    _ => {
                        self.at = start;
                        return None;
                    }
                };
                if self.eat(b':') {
                    offset += self.number(2)? * 60;
                }
                Some(Zone::Offset(if sign == b'-' { -offset } else { offset }))
            }
            b if b.is_ascii_alphabetic() => {
                let start = self.at;
                let word = self.word().to_string();
                let hours = match word.to_ascii_uppercase().as_str() {
                    "Z" | "UTC" | "GMT" => 0,
                    "EST" => -5,
                    "EDT" | "CDT" => {
                        if word.eq_ignore_ascii_case("EDT") {
                            -4
                        } else {
                            -5
                        }
                    }
                    "CST" => -6,
                    "MST" => -7,
                    "MDT" => -6,
                    "PST" => -8,
                    "PDT" => -7,
                    _ => {
                        self.at = start;
                        return None;
                    }
                };
                Some(Zone::Abbreviation(word, hours * 3600))
            }
            _ => None,
        }
    }
}

/// `text` as a date: read against `format` when given, else in one of the usual forms. Without
/// a zone in the string the local time is in `zone`; a zone in the string goes only with UTC.
pub fn parse_date(text: &str, format: Option<&str>, zone: &TimeZone) -> Result<i64> {
    let mut cursor = Cursor { text, at: 0 };
    let fields = match format {
        Some(format) => read_with_format(&mut cursor, format)?,
        None => read_free_form(&mut cursor)?,
    };
    if cursor.at != text.len() {
        return Err(cursor.error("Trailing data"));
    }
    resolve(text, fields, zone)
}

fn read_with_format(cursor: &mut Cursor, format: &str) -> Result<Fields> {
    let mut fields = Fields::default();
    let mut specs = format.chars();
    while let Some(c) = specs.next() {
        if c != '%' {
            if !cursor.rest().starts_with(c) {
                return Err(cursor.error("The separation symbol could not be found"));
            }
            cursor.at += c.len_utf8();
            continue;
        }
        let spec = specs.next().unwrap_or('%');
        let (slot, digits, what) = match spec {
            '%' => {
                if !cursor.eat(b'%') {
                    return Err(cursor.error("The escaped character could not be found"));
                }
                continue;
            }
            'd' => (&mut fields.day, 2, "A two digit day"),
            'm' => (&mut fields.month, 2, "A two digit month"),
            'Y' => (&mut fields.year, 4, "A four digit year"),
            'G' => (&mut fields.iso_year, 4, "A four digit ISO year"),
            'H' => (&mut fields.hour, 2, "A two digit hour"),
            'M' => (&mut fields.minute, 2, "A two digit minute"),
            'S' => (&mut fields.second, 2, "A two digit second"),
            'L' => (&mut fields.millisecond, 3, "A three digit millisecond"),
            'j' => (&mut fields.day_of_year, 3, "A three digit day-of-year"),
            'V' => (&mut fields.iso_week, 2, "A two digit ISO week"),
            'u' => (&mut fields.iso_day_of_week, 1, "A single digit day-of-week"),
            'b' | 'B' => {
                fields.month = Some(
                    cursor
                        .month_name(Some(spec == 'B'))
                        .ok_or_else(|| cursor.error("A textual month could not be found"))?,
                );
                continue;
            }
            'z' => {
                fields.zone = Some(
                    cursor
                        .zone()
                        .ok_or_else(|| cursor.error("The timezone could not be found"))?,
                );
                continue;
            }
            'Z' => {
                let negative = match cursor.peek() {
                    Some(b'-') => true,
                    Some(b'+') => false,
                    _ => return Err(cursor.error("The timezone could not be found")),
                };
                cursor.at += 1;
                let minutes = cursor
                    .number(4)
                    .ok_or_else(|| cursor.error("The timezone could not be found"))?;
                fields.zone = Some(Zone::Offset(if negative { -minutes } else { minutes } * 60));
                continue;
            }
            other => unreachable!("format specifier %{other} was not validated"),
        };
        let value = cursor
            .number(digits)
            .ok_or_else(|| cursor.error(&format!("{what} could not be found")))?;
        *slot = Some(value);
    }
    Ok(fields)
}

fn read_free_form(cursor: &mut Cursor) -> Result<Fields> {
    let mut fields = Fields::default();
    cursor.skip_spaces();
    // A leading day name ("Wed," or "Wednesday") says nothing the date does not.
    if cursor.peek().is_some_and(|b| b.is_ascii_alphabetic()) {
        let start = cursor.at;
        let word = cursor.word().to_ascii_lowercase();
        let days = [
            "monday",
            "tuesday",
            "wednesday",
            "thursday",
            "friday",
            "saturday",
            "sunday",
        ];
        if word.len() >= 3
            && days
                .iter()
                .any(|d| d.starts_with(&word) && (word.len() == 3 || word == *d))
        {
            cursor.eat(b',');
            cursor.skip_spaces();
        } else {
            cursor.at = start;
        }
    }
    let bad_date = |cursor: &Cursor| cursor.error("Unexpected character");
    if let Some(month) = cursor.month_name(None) {
        // "February 8, 2017" or "Feb 8th 2017".
        cursor.skip_spaces();
        fields.month = Some(month);
        fields.day = Some(cursor.number(2).ok_or_else(|| bad_date(cursor))?);
        ordinal_suffix(cursor);
        cursor.eat(b',');
        cursor.skip_spaces();
        fields.year = Some(cursor.number(4).ok_or_else(|| bad_date(cursor))?);
    } else {
        let digits = cursor.digits_ahead();
        let first = cursor.number(4).ok_or_else(|| bad_date(cursor))?;
        let separator = cursor.peek();
        if digits == 4 && matches!(separator, Some(b'-' | b'/')) {
            // 2017-02-08 or 2017/02/08.
            cursor.at += 1;
            fields.year = Some(first);
            fields.month = Some(cursor.number(2).ok_or_else(|| bad_date(cursor))?);
            if !cursor.eat(separator.unwrap_or(b'-')) {
                return Err(bad_date(cursor));
            }
            fields.day = Some(cursor.number(2).ok_or_else(|| bad_date(cursor))?);
        } else if digits <= 2 && matches!(separator, Some(b'/' | b'-' | b'.')) {
            // 02/08/2017 (month first), 08-02-2017 and 08.02.2017 (day first).
            cursor.at += 1;
            let second = cursor.number(2).ok_or_else(|| bad_date(cursor))?;
            if !cursor.eat(separator.unwrap_or(b'/')) {
                return Err(bad_date(cursor));
            }
            fields.year = Some(cursor.number(4).ok_or_else(|| bad_date(cursor))?);
            let (month, day) = if separator == Some(b'/') {
                (first, second)
            } else {
                (second, first)
            };
            fields.month = Some(month);
            fields.day = Some(day);
        } else if digits <= 2 && cursor.skip_spaces() {
            // 8 February 2017.
            fields.day = Some(first);
            fields.month = Some(cursor.month_name(None).ok_or_else(|| bad_date(cursor))?);
            cursor.eat(b',');
            cursor.skip_spaces();
            fields.year = Some(cursor.number(4).ok_or_else(|| bad_date(cursor))?);
        } else {
            return Err(bad_date(cursor));
        }
    }
    let before_time = cursor.at;
    let separated = cursor.eat(b'T') || cursor.eat(b't') || cursor.skip_spaces();
    if separated && cursor.digits_ahead() > 0 {
        fields.hour = cursor.number(2);
        if !cursor.eat(b':') {
            return Err(cursor.error("Unexpected character"));
        }
        fields.minute = Some(
            cursor
                .number(2)
                .ok_or_else(|| cursor.error("Unexpected character"))?,
        );
        fields.second = Some(0);
        if cursor.eat(b':') {
            fields.second = Some(
                cursor
                    .number(2)
                    .ok_or_else(|| cursor.error("Unexpected character"))?,
            );
            if cursor.eat(b'.') || cursor.eat(b',') {
                let count = cursor.digits_ahead();
                if count == 0 {
                    return Err(cursor.error("Unexpected character"));
                }
                let digits = &cursor.rest()[..count];
                let padded = format!("{:0<3}", &digits[..count.min(3)]);
                fields.millisecond = padded.parse().ok();
                cursor.at += count;
            }
        }
    } else {
        cursor.at = before_time;
    }
    let before_zone = cursor.at;
    cursor.skip_spaces();
    match cursor.zone() {
        Some(zone) => fields.zone = Some(zone),
        None => cursor.at = before_zone,
    }
    Ok(fields)
}

/// "1st", "2nd", "3rd", "8th".
fn ordinal_suffix(cursor: &mut Cursor) {
    let rest = cursor.rest().to_ascii_lowercase();
    if ["st", "nd", "rd", "th"].iter().any(|s| rest.starts_with(s)) {
        cursor.at += 2;
    }
}

fn resolve(text: &str, fields: Fields, zone: &TimeZone) -> Result<i64> {
    let invalid = |what: &str| failure(format!("Error parsing date string '{text}'; {what}"));
    let (year, month, day) = if fields.iso_year.is_some()
        || fields.iso_week.is_some()
        || fields.iso_day_of_week.is_some()
    {
        let (Some(year), Some(week)) = (fields.iso_year, fields.iso_week) else {
            return Err(incomplete(text));
        };
        let days = days_from_iso(year, week, fields.iso_day_of_week.unwrap_or(1));
        super::civil_from_days(days)
    } else if let Some(day_of_year) = fields.day_of_year {
        let year = fields.year.ok_or_else(|| incomplete(text))?;
        super::civil_from_days(days_from_civil(year, 1, 1) + day_of_year - 1)
    } else {
        match (fields.year, fields.month, fields.day) {
            (Some(y), Some(m), Some(d)) => (y, m, d),
            _ => return Err(incomplete(text)),
        }
    };
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return Err(invalid("The parsed date was invalid"));
    }
    let (hour, minute, second) = (
        fields.hour.unwrap_or(0),
        fields.minute.unwrap_or(0),
        fields.second.unwrap_or(0),
    );
    if hour > 23 || minute > 59 || second > 59 {
        return Err(invalid("The parsed time was invalid"));
    }
    let local = i128::from(days_from_civil(year, month, day)) * i128::from(MILLIS_PER_DAY)
        + i128::from(((hour * 60 + minute) * 60 + second) * 1000 + fields.millisecond.unwrap_or(0));
    let instant = match fields.zone {
        None => zone.instant_of_local(local),
        Some(written) if !zone.is_utc() => {
            return Err(failure(match written {
                Zone::Offset(_) => "you cannot pass in a date/time string with GMT offset together with a timezone argument".to_string(),
                Zone::Abbreviation(name, _) => format!(
                    "you cannot pass in a date/time string with time zone information ('{name}') together with a timezone argument"
                ),
            }));
        }
        Some(Zone::Offset(offset) | Zone::Abbreviation(_, offset)) => {
            local - i128::from(offset) * 1000
        }
    };
    i64::try_from(instant).map_err(|_| invalid("The parsed date was invalid"))
}

fn incomplete(text: &str) -> MongoError {
    failure(format!(
        "an incomplete date/time string has been found, with elements missing: \"{text}\""
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(text: &str) -> i64 {
        parse_date(text, None, &TimeZone::Utc).unwrap()
    }

    const FEB_8_2017: i64 = 1_486_512_000_000;

    #[test]
    fn usual_forms() {
        assert_eq!(utc("2017-02-08"), FEB_8_2017);
        assert_eq!(utc("2017-02-08T12:10:40.787"), FEB_8_2017 + 43_840_787);
        assert_eq!(utc("2017-02-08T12:10:40.787Z"), FEB_8_2017 + 43_840_787);
        assert_eq!(utc("2017-02-08 12:10:40.7+01:00"), FEB_8_2017 + 40_240_700);
        assert_eq!(utc("2017-02-08T12:10-0130"), FEB_8_2017 + 49_200_000);
        assert_eq!(utc("2017/02/08"), FEB_8_2017);
        assert_eq!(utc("02/08/2017"), FEB_8_2017);
        assert_eq!(utc("08-02-2017"), FEB_8_2017);
        assert_eq!(utc("08.02.2017"), FEB_8_2017);
        assert_eq!(utc("February 8, 2017"), FEB_8_2017);
        assert_eq!(utc("Feb 8th 2017 01:00 EST"), FEB_8_2017 + 6 * 3_600_000);
        assert_eq!(utc("Wed, 8 Feb 2017 12:00:00 GMT"), FEB_8_2017 + 43_200_000);
        assert_eq!(utc("1960-01-01"), -315_619_200_000);
    }

    #[test]
    fn formats() {
        let with = |text, format| parse_date(text, Some(format), &TimeZone::Utc);
        assert_eq!(with("06-15-2018", "%m-%d-%Y").unwrap(), 1_529_020_800_000);
        assert_eq!(with("15-06-2018", "%d-%m-%Y").unwrap(), 1_529_020_800_000);
        assert_eq!(with("2018 166", "%Y %j").unwrap(), 1_529_020_800_000);
        assert_eq!(with("2018-W24-5", "%G-W%V-%u").unwrap(), 1_529_020_800_000);
        assert_eq!(with("15 June 2018", "%d %B %Y").unwrap(), 1_529_020_800_000);
        assert_eq!(
            with("15 jun 2018 +0100", "%d %b %Y %z").unwrap(),
            1_529_017_200_000
        );
        assert_eq!(
            with("15/06/2018 -60", "%d/%m/%Y %Z").unwrap(),
            1_529_024_400_000
        );
        assert_eq!(with("100%", "%H%%").unwrap_err().code().code(), 241);
        for (text, format) in [
            ("15-06-2018", "%d/%m/%Y"),
            ("2018-06", "%Y-%m"),
            ("2018-02-30", "%Y-%m-%d"),
            ("2018-06-15x", "%Y-%m-%d"),
        ] {
            let err = with(text, format).unwrap_err();
            assert_eq!(err.code().name(), "ConversionFailure", "{text} {format}");
        }
    }

    #[test]
    fn zones() {
        let ny = TimeZone::parse("America/New_York").unwrap();
        assert_eq!(
            parse_date("2017-02-08T12:10:40.787", None, &ny).unwrap(),
            FEB_8_2017 + 43_840_787 + 5 * 3_600_000
        );
        let err = parse_date("2017-02-08T12:10:40Z", None, &ny).unwrap_err();
        assert_eq!(
            err.message(),
            "you cannot pass in a date/time string with time zone information ('Z') together with a timezone argument"
        );
        let err = parse_date("2017-02-08 +05:00", None, &ny).unwrap_err();
        assert!(err.message().contains("GMT offset"));
        for bad in [
            "",
            "2017-13-01",
            "2017-02-08T25:00",
            "20177-02-09T03:35:02.055",
            "not a date",
        ] {
            let err = parse_date(bad, None, &TimeZone::Utc).unwrap_err();
            assert_eq!(err.code().code(), 241, "{bad}");
        }
    }
}
