//! `$dateToString`'s format specifiers (`%Y`, `%m`, `%d`...), and the check both
//! `$dateToString` and `$dateFromString` make of a format string.

use super::TimeZone;
use crate::error::{MongoError, Result};
use std::fmt::Write;

pub const MONTH_NAMES: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// The specifiers `$dateToString` knows; `$dateFromString` knows the same but `%w` and `%U`.
const TO_STRING_SPECIFIERS: &str = "bBdGHjLmMSwuUVYzZ";
const FROM_STRING_SPECIFIERS: &str = "bBdGHjLmMSuVYzZ";

/// Every `%` must be followed by a known specifier or another `%`.
pub fn validate_format(format: &str, for_parsing: bool) -> Result<()> {
    let known = if for_parsing {
        FROM_STRING_SPECIFIERS
    } else {
        TO_STRING_SPECIFIERS
    };
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            continue;
        }
        match chars.next() {
            None => {
                return Err(MongoError::location(
                    18535,
                    "Unmatched '%' at end of format string",
                ));
            }
            Some(spec) if spec == '%' || known.contains(spec) => {}
            Some(spec) => {
                return Err(MongoError::location(
                    18536,
                    format!("Invalid format character '%{spec}' in format string"),
                ));
            }
        }
    }
    Ok(())
}

/// A number zero-padded to `width`; numbers outside 0 to 9999 cannot be formatted.
fn padded(out: &mut String, number: i64, width: usize) -> Result<()> {
    if !(0..=9999).contains(&number) {
        return Err(MongoError::location(
            18537,
            format!(
                "Could not convert date to string: date component was outside the supported range of 0-9999: {number}"
            ),
        ));
    }
    let _ = write!(out, "{number:0width$}");
    Ok(())
}

/// `date` in `zone` as `format` (already checked by [`validate_format`]) says.
pub fn format_date(format: &str, date: i64, zone: &TimeZone) -> Result<String> {
    let parts = zone.parts(date);
    let mut out = String::with_capacity(format.len() + 16);
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next().unwrap_or('%') {
            '%' => out.push('%'),
            'Y' => padded(&mut out, parts.year, 4)?,
            'm' => padded(&mut out, parts.month, 2)?,
            'd' => padded(&mut out, parts.day, 2)?,
            'H' => padded(&mut out, parts.hour, 2)?,
            'M' => padded(&mut out, parts.minute, 2)?,
            'S' => padded(&mut out, parts.second, 2)?,
            'L' => padded(&mut out, parts.millisecond, 3)?,
            'j' => padded(&mut out, parts.day_of_year(), 3)?,
            'w' => padded(&mut out, parts.day_of_week(), 1)?,
            'u' => padded(&mut out, parts.iso_day_of_week(), 1)?,
            'U' => padded(&mut out, parts.week(), 2)?,
            'G' => padded(&mut out, parts.iso_week().0, 4)?,
            'V' => padded(&mut out, parts.iso_week().1, 2)?,
            'b' => out.push_str(&MONTH_NAMES[(parts.month - 1) as usize][..3]),
            'B' => out.push_str(MONTH_NAMES[(parts.month - 1) as usize]),
            'z' => {
                out.push(if parts.offset < 0 { '-' } else { '+' });
                padded(&mut out, parts.offset.abs() / 3600, 2)?;
                padded(&mut out, parts.offset.abs() / 60 % 60, 2)?;
            }
            'Z' => {
                let _ = write!(out, "{}", parts.offset / 60);
            }
            other => unreachable!("format specifier %{other} was not validated"),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_every_specifier() {
        // 2014-01-01T08:15:39.736Z, a Wednesday.
        let date = 1_388_564_139_736;
        let z = TimeZone::Utc;
        assert_eq!(
            format_date(
                "%Y-%m-%d %H:%M:%S.%L %j %w %u %U %G-W%V %b %B %z %Z %%",
                date,
                &z
            )
            .unwrap(),
            "2014-01-01 08:15:39.736 001 4 3 00 2014-W01 Jan January +0000 0 %"
        );
        let ny = TimeZone::parse("America/New_York").unwrap();
        assert_eq!(
            format_date("%H:%M %z %Z", date, &ny).unwrap(),
            "03:15 -0500 -300"
        );
        let india = TimeZone::parse("+05:30").unwrap();
        assert_eq!(format_date("%z", date, &india).unwrap(), "+0530");
    }

    #[test]
    fn years_outside_four_digits_cannot_be_formatted() {
        let err = format_date("%Y", -62_198_755_200_000, &TimeZone::Utc).unwrap_err();
        assert_eq!(err.code().code(), 18537);
        assert!(err.message().ends_with("0-9999: -1"), "{}", err.message());
    }

    #[test]
    fn format_validation() {
        assert!(validate_format("%Y %% %w", false).is_ok());
        let code = |f, parsing| validate_format(f, parsing).unwrap_err().code().code();
        assert_eq!(code("%Y%", false), 18535);
        assert_eq!(code("%q", false), 18536);
        assert_eq!(code("%w", true), 18536);
        assert_eq!(
            validate_format("%q", false).unwrap_err().message(),
            "Invalid format character '%q' in format string"
        );
    }
}
