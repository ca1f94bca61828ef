//! Dates as the date operators see them: time zones (Olson names through `chrono-tz`, UTC
//! offsets, UTC), the local calendar fields of an instant, and back from local fields to an
//! instant.
//!
//! BSON dates are i64 milliseconds, which spans ±292 million years, far beyond `chrono`'s
//! ±262,000 years: the calendar arithmetic here works on day counts over the whole range, and
//! `chrono-tz` is only asked for zone offsets (at an instant clamped to its range, where every
//! zone's offset is constant anyway).
//!
//! - `arith`: `$dateAdd`'s, `$dateDiff`'s and `$dateTrunc`'s arithmetic in a zone.
//! - `format`: `$dateToString`'s format specifiers.
//! - `parse`: `$dateFromString`'s parsing, with and without a format.

mod arith;
mod format;
mod parse;

pub use arith::{TimeUnit, date_add, date_diff, parse_day_of_week, truncate};
pub use format::{format_date, validate_format};
pub use parse::parse_date;

use crate::error::{MongoError, Result};
use chrono::{DateTime, LocalResult, Offset, TimeZone as _};
use chrono_tz::Tz;

pub const MILLIS_PER_DAY: i64 = 86_400_000;

/// Instants beyond this many seconds from the epoch are looked up in `chrono-tz` at the limit.
const CHRONO_SECONDS_LIMIT: i64 = 8_000_000_000_000;

/// A time zone: UTC (the default, `"UTC"` or a zero offset), a fixed offset from UTC in
/// seconds, or an Olson zone (which includes `"GMT"` and `"Etc/UTC"`: only these are not "UTC"
/// where MongoDB tells the two apart, as in `$dateToString`'s default format).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TimeZone {
    Utc,
    Offset(i64),
    Named(Tz),
}

/// The calendar fields of an instant in a zone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Parts {
    pub year: i64,
    pub month: i64,
    pub day: i64,
    pub hour: i64,
    pub minute: i64,
    pub second: i64,
    pub millisecond: i64,
    /// Local days since 1970-01-01.
    pub days: i64,
    /// The zone's offset from UTC at the instant, in seconds.
    pub offset: i64,
}

impl Parts {
    pub fn millis_of_day(&self) -> i64 {
        ((self.hour * 60 + self.minute) * 60 + self.second) * 1000 + self.millisecond
    }

    /// 1 (Monday) to 7 (Sunday).
    pub fn iso_day_of_week(&self) -> i64 {
        iso_day_of_week(self.days)
    }

    /// 1 (Sunday) to 7 (Saturday).
    pub fn day_of_week(&self) -> i64 {
        iso_day_of_week(self.days) % 7 + 1
    }

    /// 1 to 366.
    pub fn day_of_year(&self) -> i64 {
        self.days - days_from_civil(self.year, 1, 1) + 1
    }

    /// Weeks starting on Sunday, 0 for the days before the year's first Sunday.
    pub fn week(&self) -> i64 {
        (self.day_of_year() - self.day_of_week() + 7) / 7
    }

    /// (ISO week-numbering year, ISO week 1 to 53).
    pub fn iso_week(&self) -> (i64, i64) {
        // The ISO week belongs to the year its Thursday is in.
        let thursday = self.days - self.iso_day_of_week() + 4;
        let (year, _, _) = civil_from_days(thursday);
        (year, (thursday - days_from_civil(year, 1, 1)) / 7 + 1)
    }
}

impl TimeZone {
    /// MongoDB's zone identifiers: an Olson name, `"UTC"`, or `±HH`, `±HHMM`, `±HH:MM`.
    pub fn parse(id: &str) -> Result<TimeZone> {
        if id == "UTC" {
            return Ok(TimeZone::Utc);
        }
        if let Ok(tz) = id.parse::<Tz>() {
            return Ok(TimeZone::Named(tz));
        }
        match parse_utc_offset(id) {
            Some(0) => Ok(TimeZone::Utc),
            Some(seconds) => Ok(TimeZone::Offset(seconds)),
            None => Err(MongoError::location(
                40485,
                format!("unrecognized time zone identifier: \"{id}\""),
            )),
        }
    }

    pub fn is_utc(&self) -> bool {
        *self == TimeZone::Utc
    }

    /// The offset from UTC, in seconds, at the instant `millis`.
    pub fn offset_at(&self, millis: i64) -> i64 {
        match self {
            TimeZone::Utc => 0,
            TimeZone::Offset(seconds) => *seconds,
            TimeZone::Named(tz) => {
                let seconds = millis
                    .div_euclid(1000)
                    .clamp(-CHRONO_SECONDS_LIMIT, CHRONO_SECONDS_LIMIT);
                let utc = DateTime::from_timestamp(seconds, 0)
                    .expect("clamped into chrono's range")
                    .naive_utc();
                i64::from(tz.offset_from_utc_datetime(&utc).fix().local_minus_utc())
            }
        }
    }

    /// The local calendar fields of the instant `millis`.
    pub fn parts(&self, millis: i64) -> Parts {
        let offset = self.offset_at(millis);
        let local = i128::from(millis) + i128::from(offset) * 1000;
        let day_millis = i128::from(MILLIS_PER_DAY);
        let days = local.div_euclid(day_millis) as i64;
        let rest = local.rem_euclid(day_millis) as i64;
        let (year, month, day) = civil_from_days(days);
        Parts {
            year,
            month,
            day,
            hour: rest / 3_600_000,
            minute: rest / 60_000 % 60,
            second: rest / 1000 % 60,
            millisecond: rest % 1000,
            days,
            offset,
        }
    }

    /// The instant whose local time is `local` milliseconds after 1970-01-01T00:00 local. A
    /// local time skipped by a transition is read with the offset before it (so it lands after
    /// the transition), and a repeated one is the earlier of the two instants, as timelib does.
    pub fn instant_of_local(&self, local: i128) -> i128 {
        let offset = match self {
            TimeZone::Utc => 0,
            TimeZone::Offset(seconds) => *seconds,
            TimeZone::Named(tz) => {
                let seconds = (local.div_euclid(1000)).clamp(
                    i128::from(-CHRONO_SECONDS_LIMIT),
                    i128::from(CHRONO_SECONDS_LIMIT),
                ) as i64;
                let naive = DateTime::from_timestamp(seconds, 0)
                    .expect("clamped into chrono's range")
                    .naive_utc();
                let fixed = match tz.offset_from_local_datetime(&naive) {
                    LocalResult::Single(offset) | LocalResult::Ambiguous(offset, _) => offset.fix(),
                    LocalResult::None => tz
                        .offset_from_utc_datetime(&(naive - chrono::Duration::days(1)))
                        .fix(),
                };
                i64::from(fixed.local_minus_utc())
            }
        };
        local - i128::from(offset) * 1000
    }
}

/// `±HH`, `±HHMM` or `±HH:MM` as seconds east of UTC.
fn parse_utc_offset(spec: &str) -> Option<i64> {
    let bytes = spec.as_bytes();
    let sign = match bytes.first()? {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let digits = |range: std::ops::Range<usize>| -> Option<i64> {
        let part = bytes.get(range)?;
        part.iter()
            .all(u8::is_ascii_digit)
            .then(|| part.iter().fold(0, |n, b| n * 10 + i64::from(b - b'0')))
    };
    let (hours, minutes) = match bytes.len() {
        3 => (digits(1..3)?, 0),
        5 => (digits(1..3)?, digits(3..5)?),
        6 if bytes[3] == b':' => (digits(1..3)?, digits(4..6)?),
        _ => return None,
    };
    Some(sign * (hours * 3600 + minutes * 60))
}

pub fn is_leap_year(year: i64) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

pub fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if is_leap_year(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm); `month`
/// is 1 to 12, `day` may be past the month's end (it then counts on into the next months).
pub fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let yoe = year.rem_euclid(400);
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// (year, month, day) of a day count since 1970-01-01.
pub fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

/// 1 (Monday) to 7 (Sunday); 1970-01-01 was a Thursday.
pub fn iso_day_of_week(days: i64) -> i64 {
    (days + 3).rem_euclid(7) + 1
}

/// The day count of ISO week `week`, day `day_of_week` (1 = Monday) of ISO year `year`; weeks
/// and days out of range count on from there, as timelib does.
pub fn days_from_iso(year: i64, week: i64, day_of_week: i64) -> i64 {
    let january_4 = days_from_civil(year, 1, 4);
    let week_1_monday = january_4 - iso_day_of_week(january_4) + 1;
    week_1_monday + (week - 1) * 7 + (day_of_week - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zones_by_name_and_offset() {
        assert_eq!(TimeZone::parse("UTC").unwrap(), TimeZone::Utc);
        assert_eq!(TimeZone::parse("+00:00").unwrap(), TimeZone::Utc);
        assert_eq!(
            TimeZone::parse("+04:45").unwrap(),
            TimeZone::Offset(4 * 3600 + 45 * 60)
        );
        assert_eq!(
            TimeZone::parse("-0530").unwrap(),
            TimeZone::Offset(-(5 * 3600 + 30 * 60))
        );
        assert_eq!(TimeZone::parse("+03").unwrap(), TimeZone::Offset(3 * 3600));
        assert!(matches!(
            TimeZone::parse("GMT").unwrap(),
            TimeZone::Named(_)
        ));
        for bad in ["Mars/Olympus", "+3", "+03:0", "america/new_york", ""] {
            let err = TimeZone::parse(bad).unwrap_err();
            assert_eq!(err.code().code(), 40485, "{bad}");
        }
        let err = TimeZone::parse("Mars/Olympus").unwrap_err();
        assert_eq!(
            err.message(),
            "unrecognized time zone identifier: \"Mars/Olympus\""
        );
    }

    #[test]
    fn parts_across_the_range() {
        let p = TimeZone::Utc.parts(-1);
        assert_eq!(
            (
                p.year,
                p.month,
                p.day,
                p.hour,
                p.minute,
                p.second,
                p.millisecond
            ),
            (1969, 12, 31, 23, 59, 59, 999)
        );
        let p = TimeZone::Utc.parts(i64::MAX);
        assert_eq!((p.year, p.month, p.day), (292_278_994, 8, 17));
        let p = TimeZone::Utc.parts(i64::MIN);
        assert_eq!((p.year, p.month, p.day), (-292_275_055, 5, 16));
        // 2014-01-01 was a Wednesday in ISO week 1 of 2014; 2016-01-01 in week 53 of 2015.
        let p = TimeZone::Utc.parts(1_388_534_400_000);
        assert_eq!((p.iso_day_of_week(), p.day_of_week(), p.week()), (3, 4, 0));
        assert_eq!(p.iso_week(), (2014, 1));
        assert_eq!(
            TimeZone::Utc.parts(1_451_606_400_000).iso_week(),
            (2015, 53)
        );
    }

    #[test]
    fn local_times_around_transitions() {
        let ny = TimeZone::parse("America/New_York").unwrap();
        // 2021-03-14 02:30 does not exist in New York: it reads as 03:30 EDT (07:30Z).
        let local = i128::from(days_from_civil(2021, 3, 14)) * 86_400_000 + 9_000_000;
        assert_eq!(
            ny.instant_of_local(local),
            i128::from(days_from_civil(2021, 3, 14)) * 86_400_000 + 27_000_000
        );
        // 2021-11-07 01:30 happens twice: the first (EDT, 05:30Z) is taken.
        let local = i128::from(days_from_civil(2021, 11, 7)) * 86_400_000 + 5_400_000;
        assert_eq!(
            ny.instant_of_local(local),
            i128::from(days_from_civil(2021, 11, 7)) * 86_400_000 + 19_800_000
        );
    }
}
