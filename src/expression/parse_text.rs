//! Numbers and dates read from strings the way `$convert` reads them: the server's
//! `NumberParser` (base 10 integers, `strtod` doubles, Decimal128 strings, no surrounding
//! whitespace) and the ISO-8601 forms its date parser accepts by default.

use super::datetime::{days_from_civil, days_in_month};
use super::decimal::Dec;

/// Why a string is not a number, in the server's words.
pub type Reason = &'static str;

/// A base-10 integer with an optional sign, nothing else, within `[min, max]`.
pub fn parse_integer(text: &str, min: i64, max: i64) -> Result<i64, Reason> {
    let (neg, digits) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if digits.is_empty() {
        return Err("No digits");
    }
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err("Did not consume whole string.");
    }
    let mut magnitude: u64 = 0;
    for b in digits.bytes() {
        magnitude = magnitude
            .checked_mul(10)
            .and_then(|m| m.checked_add(u64::from(b - b'0')))
            .ok_or("Overflow")?;
    }
    let value = if neg {
        -i128::from(magnitude)
    } else {
        i128::from(magnitude)
    };
    if value < i128::from(min) || value > i128::from(max) {
        return Err("Overflow");
    }
    Ok(value as i64)
}

/// A double as `strtod` reads it, the whole string: decimal or hexadecimal (`-0x1p3`) forms,
/// `inf`, `infinity` and `nan` in any case. Results that overflow or underflow are errors.
pub fn parse_double(text: &str) -> Result<f64, Reason> {
    if text.is_empty() {
        return Err("Empty string");
    }
    if text.starts_with(|c: char| c.is_ascii_whitespace()) {
        return Err("Leading whitespace");
    }
    let (neg, body) = match text.as_bytes()[0] {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    let lower = body.to_ascii_lowercase();
    for (word, value) in [
        ("infinity", f64::INFINITY),
        ("inf", f64::INFINITY),
        ("nan", f64::NAN),
    ] {
        if lower.starts_with(word) {
            if lower.len() != word.len() {
                return Err("Did not consume whole string.");
            }
            return Ok(if neg { -value } else { value });
        }
    }
    let (magnitude, consumed, nonzero) =
        if lower.len() > 2 && lower.starts_with("0x") && hex_digit_at(&lower, 2) {
            let (value, used, nonzero) = scan_hex(&lower[2..]);
            (value, used + 2, nonzero)
        } else {
            let used = scan_decimal(body);
            if used == 0 {
                return Err("Did not consume any digits");
            }
            let value: f64 = body[..used]
                .parse()
                .map_err(|_| "Did not consume any digits")?;
            (
                value,
                used,
                body[..used]
                    .bytes()
                    .take_while(|b| *b != b'e' && *b != b'E')
                    .any(|b| (b'1'..=b'9').contains(&b)),
            )
        };
    if magnitude.is_infinite() || (nonzero && (magnitude == 0.0 || !magnitude.is_normal())) {
        return Err("Out of range");
    }
    if consumed != body.len() {
        return Err("Did not consume whole string.");
    }
    Ok(if neg { -magnitude } else { magnitude })
}

fn hex_digit_at(text: &str, at: usize) -> bool {
    let bytes = text.as_bytes();
    bytes.get(at).is_some_and(u8::is_ascii_hexdigit)
        || (bytes.get(at) == Some(&b'.') && bytes.get(at + 1).is_some_and(u8::is_ascii_hexdigit))
}

/// The length of the longest prefix that is `digits[.digits][e[sign]digits]`.
fn scan_decimal(text: &str) -> usize {
    let bytes = text.as_bytes();
    let digits_from = |mut i: usize| {
        while bytes.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        i
    };
    let int_end = digits_from(0);
    let mut end = int_end;
    if bytes.get(end) == Some(&b'.') {
        let frac_end = digits_from(end + 1);
        if frac_end > end + 1 || int_end > 0 {
            end = frac_end;
        }
    }
    if end == 0 || (end == 1 && bytes[0] == b'.') {
        return 0;
    }
    if matches!(bytes.get(end), Some(b'e' | b'E')) {
        let mut i = end + 1;
        if matches!(bytes.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let exp_end = digits_from(i);
        if exp_end > i {
            end = exp_end;
        }
    }
    end
}

/// A hexadecimal significand with an optional binary exponent (`1.8p3`): value, bytes used,
/// and whether any digit was non-zero.
fn scan_hex(text: &str) -> (f64, usize, bool) {
    let bytes = text.as_bytes();
    let (mut mantissa, mut scale, mut i, mut seen_point, mut nonzero) =
        (0u64, 0i32, 0, false, false);
    while let Some(&b) = bytes.get(i) {
        if b == b'.' && !seen_point {
            seen_point = true;
        } else if let Some(digit) = (b as char).to_digit(16) {
            nonzero |= digit != 0;
            if mantissa >> 56 == 0 {
                mantissa = mantissa * 16 + u64::from(digit);
                if seen_point {
                    scale -= 4;
                }
            } else if !seen_point {
                scale += 4;
            }
        } else {
            break;
        }
        i += 1;
    }
    if bytes.get(i) == Some(&b'p') {
        let mut j = i + 1;
        let neg = match bytes.get(j) {
            Some(b'-') => {
                j += 1;
                true
            }
            Some(b'+') => {
                j += 1;
                false
            }
            _ => false,
        };
        let start = j;
        let mut exponent: i32 = 0;
        while let Some(d) = bytes.get(j).filter(|b| b.is_ascii_digit()) {
            exponent = exponent
                .saturating_mul(10)
                .saturating_add(i32::from(d - b'0'));
            j += 1;
        }
        if j > start {
            scale = scale.saturating_add(if neg { -exponent } else { exponent });
            i = j;
        }
    }
    (mantissa as f64 * 2f64.powi(scale), i, nonzero)
}

/// A Decimal128 string, rounded to 34 digits.
pub fn parse_decimal(text: &str) -> Result<Dec, Reason> {
    if text.is_empty() {
        return Err("Empty string");
    }
    match Dec::parse(text) {
        Some(Ok(value)) => Ok(value),
        Some(Err("overflow")) => Err("Conversion from string to decimal would overflow"),
        Some(Err(_)) => Err("Conversion from string to decimal would underflow"),
        None => Err("Failed to parse string to decimal"),
    }
}

/// An ISO-8601 date as milliseconds since the epoch: `YYYY-MM-DD`, optionally followed by `T`
/// or a space and `HH:MM[:SS[.fraction]]`, then optionally `Z`, `UTC`, `GMT` or an offset
/// (`+HH`, `+HH:MM`, `+HHMM`), which may follow a space. Without a zone the time is UTC.
pub fn parse_iso_date(text: &str) -> Result<i64, String> {
    let mut cursor = Cursor { text, at: 0 };
    let year = cursor.number(4, 4)?;
    cursor.expect(b'-')?;
    let month = cursor.number(2, 2)?;
    cursor.expect(b'-')?;
    let day = cursor.number(2, 2)?;
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return Err("The parsed date was invalid".into());
    }
    let mut millis_of_day = 0;
    if matches!(cursor.peek(), Some(b'T' | b't' | b' '))
        && cursor
            .text
            .as_bytes()
            .get(cursor.at + 1)
            .is_some_and(u8::is_ascii_digit)
    {
        cursor.at += 1;
        let hour = cursor.number(2, 2)?;
        cursor.expect(b':')?;
        let minute = cursor.number(2, 2)?;
        let (mut second, mut millis) = (0, 0);
        if cursor.peek() == Some(b':') {
            cursor.at += 1;
            second = cursor.number(2, 2)?;
            if cursor.peek() == Some(b'.') {
                cursor.at += 1;
                let fraction = cursor.digits(usize::MAX);
                if fraction.is_empty() {
                    return Err(cursor.unexpected());
                }
                let padded = format!("{:0<3}", &fraction[..fraction.len().min(3)]);
                millis = padded.parse::<i64>().unwrap_or(0);
            }
        }
        if hour > 23 || minute > 59 || second > 59 {
            return Err("The parsed time was invalid".into());
        }
        millis_of_day = ((hour * 60 + minute) * 60 + second) * 1000 + millis;
    }
    if cursor.peek() == Some(b' ') {
        cursor.at += 1;
    }
    let offset_minutes = cursor.zone()?;
    if cursor.at != text.len() {
        return Err(cursor.unexpected());
    }
    let days = days_from_civil(year, month, day);
    Ok(days * 86_400_000 + millis_of_day - offset_minutes * 60_000)
}

struct Cursor<'a> {
    text: &'a str,
    at: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    fn unexpected(&self) -> String {
        match self.text[self.at..].chars().next() {
            Some(c) => format!("Unexpected character '{c}' at position {}", self.at),
            None => "Unexpected end of string".into(),
        }
    }

    fn expect(&mut self, byte: u8) -> Result<(), String> {
        if self.peek() == Some(byte) {
            self.at += 1;
            Ok(())
        } else {
            Err(self.unexpected())
        }
    }

    /// Up to `max` digits.
    fn digits(&mut self, max: usize) -> &str {
        let start = self.at;
        while self.at - start < max && self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.at += 1;
        }
        &self.text[start..self.at]
    }

    fn number(&mut self, min: usize, max: usize) -> Result<i64, String> {
        let start = self.at;
        let digits = self.digits(max);
        if !(min..=max).contains(&digits.len()) {
            self.at = start;
            return Err(self.unexpected());
        }
        Ok(digits.parse().unwrap_or(0))
    }

    /// The zone's offset east of UTC in minutes (0 when there is none).
    fn zone(&mut self) -> Result<i64, String> {
        let rest = &self.text[self.at..];
        for name in ["Z", "z", "UTC", "GMT"] {
            if rest == name {
                self.at += name.len();
                return Ok(0);
            }
        }
        let sign = match self.peek() {
            Some(b'+') => 1,
            Some(b'-') => -1,
            _ => return Ok(0),
        };
        self.at += 1;
        let hours = self.number(2, 2)?;
        let minutes = match self.peek() {
            Some(b':') => {
                self.at += 1;
                self.number(2, 2)?
            }
            Some(b) if b.is_ascii_digit() => self.number(2, 2)?,
            _ => 0,
        };
        if hours > 23 || minutes > 59 {
            return Err("The timezone offset was invalid".into());
        }
        Ok(sign * (hours * 60 + minutes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_are_plain_base_10() {
        let int = |s| parse_integer(s, i64::from(i32::MIN), i64::from(i32::MAX));
        assert_eq!(int("42"), Ok(42));
        assert_eq!(int("-2147483648"), Ok(-2_147_483_648));
        assert_eq!(int("+7"), Ok(7));
        assert_eq!(int("007"), Ok(7));
        assert_eq!(int("2147483648"), Err("Overflow"));
        assert_eq!(int("1.5"), Err("Did not consume whole string."));
        assert_eq!(int(" 1"), Err("Did not consume whole string."));
        assert_eq!(int("1 "), Err("Did not consume whole string."));
        assert_eq!(int("1e3"), Err("Did not consume whole string."));
        assert_eq!(int(""), Err("No digits"));
        assert_eq!(int("-"), Err("No digits"));
        assert_eq!(
            parse_integer("99999999999999999999", i64::MIN, i64::MAX),
            Err("Overflow")
        );
    }

    #[test]
    fn doubles_follow_strtod() {
        assert_eq!(parse_double("1.5"), Ok(1.5));
        assert_eq!(parse_double("-5e-1"), Ok(-0.5));
        assert_eq!(parse_double(".5"), Ok(0.5));
        assert_eq!(parse_double("5."), Ok(5.0));
        assert_eq!(parse_double("1E3"), Ok(1000.0));
        assert_eq!(parse_double("-Infinity"), Ok(f64::NEG_INFINITY));
        assert_eq!(parse_double("INF"), Ok(f64::INFINITY));
        assert!(parse_double("nan").unwrap().is_nan());
        assert_eq!(parse_double("-0x1p3"), Ok(-8.0));
        assert_eq!(parse_double("+0x1.8p1"), Ok(3.0));
        assert_eq!(parse_double("1e400"), Err("Out of range"));
        assert_eq!(parse_double("1e-400"), Err("Out of range"));
        assert_eq!(parse_double("0e-400"), Ok(0.0));
        assert_eq!(parse_double(" 1"), Err("Leading whitespace"));
        assert_eq!(parse_double("1 "), Err("Did not consume whole string."));
        assert_eq!(parse_double("1e"), Err("Did not consume whole string."));
        assert_eq!(parse_double("abc"), Err("Did not consume any digits"));
        assert_eq!(parse_double(""), Err("Empty string"));
    }

    #[test]
    fn decimals() {
        assert_eq!(parse_decimal("1.50").unwrap().to_string(), "1.50");
        assert_eq!(parse_decimal("-Infinity").unwrap().to_string(), "-Infinity");
        assert_eq!(
            parse_decimal("1.2345678901234567890123456789012345678")
                .unwrap()
                .to_string(),
            "1.234567890123456789012345678901235"
        );
        assert_eq!(
            parse_decimal("1E+7000"),
            Err("Conversion from string to decimal would overflow")
        );
        assert_eq!(
            parse_decimal("1.2.3"),
            Err("Failed to parse string to decimal")
        );
        assert_eq!(parse_decimal(""), Err("Empty string"));
    }

    #[test]
    fn iso_dates() {
        assert_eq!(parse_iso_date("1970-01-01"), Ok(0));
        assert_eq!(parse_iso_date("2018-03-03"), Ok(1_520_035_200_000));
        assert_eq!(
            parse_iso_date("2018-03-27T16:58:51.538Z"),
            Ok(1_522_169_931_538)
        );
        assert_eq!(
            parse_iso_date("2018-03-20 11:00:06 +0500"),
            Ok(1_521_525_606_000)
        );
        assert_eq!(
            parse_iso_date("2018-03-20T11:00:06+05:00"),
            Ok(1_521_525_606_000)
        );
        assert_eq!(parse_iso_date("2018-03-20T11:00"), Ok(1_521_543_600_000));
        assert_eq!(parse_iso_date("1969-12-31T23:59:59.9Z"), Ok(-100));
        assert!(parse_iso_date("2018-02-30").is_err());
        assert!(parse_iso_date("2018-03-20T25:00:00Z").is_err());
        assert!(parse_iso_date("March 3rd").is_err());
        assert!(parse_iso_date("2018-03-20Tfoo").is_err());
    }
}
