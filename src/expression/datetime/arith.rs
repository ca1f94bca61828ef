//! Calendar arithmetic in a time zone: adding units to a date (`$dateAdd`, `$dateSubtract`),
//! counting unit boundaries between two dates (`$dateDiff`) and binning a date (`$dateTrunc`),
//! with MongoDB's rules for month ends, DST transitions and overflow.

use super::{MILLIS_PER_DAY, TimeZone, days_from_civil, days_in_month, iso_day_of_week};
use crate::error::{MongoError, Result};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeUnit {
    Year,
    Quarter,
    Month,
    Week,
    Day,
    Hour,
    Minute,
    Second,
    Millisecond,
}

impl TimeUnit {
    pub fn parse(name: &str) -> Option<TimeUnit> {
        Some(match name {
            "year" => TimeUnit::Year,
            "quarter" => TimeUnit::Quarter,
            "month" => TimeUnit::Month,
            "week" => TimeUnit::Week,
            "day" => TimeUnit::Day,
            "hour" => TimeUnit::Hour,
            "minute" => TimeUnit::Minute,
            "second" => TimeUnit::Second,
            "millisecond" => TimeUnit::Millisecond,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            TimeUnit::Year => "year",
            TimeUnit::Quarter => "quarter",
            TimeUnit::Month => "month",
            TimeUnit::Week => "week",
            TimeUnit::Day => "day",
            TimeUnit::Hour => "hour",
            TimeUnit::Minute => "minute",
            TimeUnit::Second => "second",
            TimeUnit::Millisecond => "millisecond",
        }
    }

    /// Milliseconds in one unit, for the units of fixed length.
    fn fixed_millis(self) -> Option<i64> {
        match self {
            TimeUnit::Hour => Some(3_600_000),
            TimeUnit::Minute => Some(60_000),
            TimeUnit::Second => Some(1000),
            TimeUnit::Millisecond => Some(1),
            _ => None,
        }
    }

    /// Months in one unit, for the units counted in months.
    fn months(self) -> Option<i64> {
        match self {
            TimeUnit::Year => Some(12),
            TimeUnit::Quarter => Some(3),
            TimeUnit::Month => Some(1),
            _ => None,
        }
    }
}

/// A day name, case-insensitive (`"monday"`, `"Mon"`...), as its ISO number (1 = Monday).
pub fn parse_day_of_week(name: &str) -> Option<i64> {
    const NAMES: [(&str, &str); 7] = [
        ("monday", "mon"),
        ("tuesday", "tue"),
        ("wednesday", "wed"),
        ("thursday", "thu"),
        ("friday", "fri"),
        ("saturday", "sat"),
        ("sunday", "sun"),
    ];
    let lower = name.to_ascii_lowercase();
    NAMES
        .iter()
        .position(|(long, short)| lower == *long || lower == *short)
        .map(|i| i as i64 + 1)
}

/// (year, month) `amount` months after (year, month).
fn add_months(year: i64, month: i64, amount: i64) -> (i64, i64) {
    let total = year * 12 + (month - 1) + amount;
    (total.div_euclid(12), total.rem_euclid(12) + 1)
}

fn overflow(code: i32, operator: &str) -> MongoError {
    MongoError::location(code, format!("{operator} overflowed"))
}

/// Whether `amount` units roughly fit the range of a date, which keeps the arithmetic below
/// from overflowing.
fn amount_is_valid(amount: i64, unit: TimeUnit) -> bool {
    let max_days = (u64::MAX / MILLIS_PER_DAY as u64 + 1) as i64;
    let max_years = max_days / 365 + 1;
    let max = match unit {
        TimeUnit::Year => max_years,
        TimeUnit::Quarter => max_years * 4,
        TimeUnit::Month => max_years * 12,
        TimeUnit::Week => max_days / 7,
        TimeUnit::Day => max_days,
        TimeUnit::Hour => max_days * 24,
        TimeUnit::Minute => max_days * 24 * 60,
        TimeUnit::Second => max_days * 24 * 60 * 60,
        TimeUnit::Millisecond => return true,
    };
    -max < amount && amount < max
}

/// `date` plus `amount` units in `zone`. Days and longer keep the local time of day across DST
/// changes; a month or year that lands past the end of a month ends on its last day.
pub fn date_add(date: i64, unit: TimeUnit, amount: i64, zone: &TimeZone) -> Result<i64> {
    if unit == TimeUnit::Millisecond {
        return date
            .checked_add(amount)
            .ok_or_else(|| overflow(5166406, "dateAdd"));
    }
    if !amount_is_valid(amount, unit) {
        return Err(MongoError::location(
            5976500,
            format!(
                "invalid dateAdd 'amount' parameter value: {amount} {}",
                unit.name()
            ),
        ));
    }
    let parts = zone.parts(date);
    let day_millis = i128::from(MILLIS_PER_DAY);
    let time_of_day = i128::from(parts.millis_of_day());
    let result = match (unit.fixed_millis(), unit.months()) {
        (Some(millis), _) => i128::from(date) + i128::from(amount) * i128::from(millis),
        // A day past the end of the target month clamps to its last day.
        (None, Some(months)) => {
            let (year, month) = add_months(parts.year, parts.month, amount * months);
            let day = parts.day.min(days_in_month(year, month));
            let days = days_from_civil(year, month, day);
            zone.instant_of_local(i128::from(days) * day_millis + time_of_day)
        }
        (None, None) => {
            let per_unit = if unit == TimeUnit::Week { 7 } else { 1 };
            let days = i128::from(parts.days) + i128::from(amount) * per_unit;
            zone.instant_of_local(days * day_millis + time_of_day)
        }
    };
    i64::try_from(result).map_err(|_| overflow(5166406, "dateAdd"))
}

fn quarter(month: i64) -> i64 {
    (month - 1) / 3
}

/// Days from the start of the week (`start_of_week`, 1 = Monday) to the local day `days`.
fn day_in_week(days: i64, start_of_week: i64) -> i64 {
    (iso_day_of_week(days) - start_of_week + 7) % 7
}

fn weeks_between(start_days: i64, end_days: i64, start_of_week: i64) -> i64 {
    (end_days - start_days + day_in_week(start_days, start_of_week)
        - day_in_week(end_days, start_of_week))
        / 7
}

/// How many `unit` boundaries lie between `start` and `end` in `zone` (negative when `end` is
/// earlier). Hours, minutes and seconds count elapsed time, whatever the offset changes.
pub fn date_diff(
    start: i64,
    end: i64,
    unit: TimeUnit,
    zone: &TimeZone,
    start_of_week: i64,
) -> Result<i64> {
    if unit == TimeUnit::Millisecond {
        return end
            .checked_sub(start)
            .ok_or_else(|| overflow(5166308, "dateDiff"));
    }
    let (s, e) = (zone.parts(start), zone.parts(end));
    let years = e.year - s.year;
    let days = e.days - s.days;
    let hours = e.hour - s.hour + days * 24;
    let minutes = e.minute - s.minute + hours * 60;
    let offset_change = s.offset - e.offset;
    Ok(match unit {
        TimeUnit::Year => years,
        TimeUnit::Quarter => quarter(e.month) - quarter(s.month) + years * 4,
        TimeUnit::Month => e.month - s.month + years * 12,
        TimeUnit::Week => weeks_between(s.days, e.days, start_of_week),
        TimeUnit::Day => days,
        TimeUnit::Hour => hours + offset_change / 3600,
        TimeUnit::Minute => minutes + offset_change / 60,
        TimeUnit::Second => e.second - s.second + minutes * 60 + offset_change,
        TimeUnit::Millisecond => unreachable!("handled above"),
    })
}

/// The start of the `bin_size`-unit bin that `date` falls in, bins being counted from
/// 2000-01-01T00:00 local time (for weeks, from the first `start_of_week` day on or after it).
pub fn truncate(
    date: i64,
    unit: TimeUnit,
    bin_size: i64,
    zone: &TimeZone,
    start_of_week: i64,
) -> Result<i64> {
    const REFERENCE_UTC: i64 = 946_684_800_000;
    let mut reference = REFERENCE_UTC - zone.offset_at(REFERENCE_UTC) * 1000;
    let mut reference_days = days_from_civil(2000, 1, 1);
    if unit == TimeUnit::Week {
        // 2000-01-01 was a Saturday, and no DST change happened in early January 2000.
        let shift = (7 - day_in_week(reference_days, start_of_week)) % 7;
        reference += shift * MILLIS_PER_DAY;
        reference_days += shift;
    }
    if let Some(unit_millis) = unit.fixed_millis() {
        let bin_millis = bin_size
            .checked_mul(unit_millis)
            .ok_or_else(|| overflow(5439002, "dateTrunc"))?;
        let shifted = date
            .checked_sub(reference)
            .ok_or_else(|| overflow(5439000, "dateTrunc"))?;
        return date
            .checked_sub(shifted.rem_euclid(bin_millis))
            .ok_or_else(|| overflow(5439001, "dateTrunc"));
    }
    if bin_size > 100_000_000_000 {
        return Err(MongoError::location(
            5439006,
            "dateTrunc unsupported binSize value",
        ));
    }
    let parts = zone.parts(date);
    let distance = match unit {
        TimeUnit::Day => parts.days - reference_days,
        TimeUnit::Week => weeks_between(reference_days, parts.days, start_of_week),
        TimeUnit::Month => parts.month - 1 + (parts.year - 2000) * 12,
        TimeUnit::Quarter => quarter(parts.month) + (parts.year - 2000) * 4,
        TimeUnit::Year => parts.year - 2000,
        _ => unreachable!("fixed-length units are handled above"),
    };
    let bin_start = distance - distance.rem_euclid(bin_size);
    date_add(reference, unit, bin_start, zone)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(year: i64, month: i64, day: i64, hour: i64, minute: i64) -> i64 {
        days_from_civil(year, month, day) * MILLIS_PER_DAY + (hour * 60 + minute) * 60_000
    }

    #[test]
    fn adding_months_clamps_to_the_month_end() {
        let z = TimeZone::Utc;
        assert_eq!(
            date_add(utc(2020, 10, 31, 0, 0), TimeUnit::Month, 1, &z).unwrap(),
            utc(2020, 11, 30, 0, 0)
        );
        assert_eq!(
            date_add(utc(2020, 2, 29, 5, 0), TimeUnit::Year, -1, &z).unwrap(),
            utc(2019, 2, 28, 5, 0)
        );
        assert_eq!(
            date_add(utc(2021, 1, 15, 0, 0), TimeUnit::Quarter, -5, &z).unwrap(),
            utc(2019, 10, 15, 0, 0)
        );
        assert_eq!(
            date_add(i64::MAX - 5, TimeUnit::Millisecond, 10, &z)
                .unwrap_err()
                .code()
                .code(),
            5166406
        );
        assert_eq!(
            date_add(0, TimeUnit::Year, 1_000_000_000, &z)
                .unwrap_err()
                .code()
                .code(),
            5976500
        );
    }

    #[test]
    fn days_keep_the_local_time_across_dst() {
        let ny = TimeZone::parse("America/New_York").unwrap();
        // 2021-03-13 12:00 EST + 1 day = 2021-03-14 12:00 EDT; + 24 hours = 13:00 EDT.
        let start = utc(2021, 3, 13, 17, 0);
        assert_eq!(
            date_add(start, TimeUnit::Day, 1, &ny).unwrap(),
            utc(2021, 3, 14, 16, 0)
        );
        assert_eq!(
            date_add(start, TimeUnit::Hour, 24, &ny).unwrap(),
            utc(2021, 3, 14, 17, 0)
        );
    }

    #[test]
    fn differences_count_boundaries() {
        let z = TimeZone::Utc;
        let diff = |a, b, unit| date_diff(a, b, unit, &z, 7).unwrap();
        let (a, b) = (utc(2020, 12, 31, 23, 59), utc(2021, 1, 1, 0, 0));
        assert_eq!(diff(a, b, TimeUnit::Year), 1);
        assert_eq!(diff(a, b, TimeUnit::Quarter), 1);
        assert_eq!(diff(a, b, TimeUnit::Day), 1);
        assert_eq!(diff(a, b, TimeUnit::Minute), 1);
        assert_eq!(diff(b, a, TimeUnit::Month), -1);
        // 2021-01-02 is a Saturday, 2021-01-03 a Sunday.
        assert_eq!(
            diff(utc(2021, 1, 2, 0, 0), utc(2021, 1, 3, 0, 0), TimeUnit::Week),
            1
        );
        assert_eq!(
            date_diff(
                utc(2021, 1, 2, 0, 0),
                utc(2021, 1, 3, 0, 0),
                TimeUnit::Week,
                &z,
                1
            )
            .unwrap(),
            0
        );
        let err = date_diff(i64::MIN, 1, TimeUnit::Millisecond, &z, 7).unwrap_err();
        assert_eq!(err.code().code(), 5166308);
    }

    #[test]
    fn truncation_bins_from_the_reference_point() {
        let z = TimeZone::Utc;
        let date = utc(2021, 3, 20, 11, 30);
        assert_eq!(
            truncate(date, TimeUnit::Hour, 2, &z, 7).unwrap(),
            utc(2021, 3, 20, 10, 0)
        );
        assert_eq!(
            truncate(date, TimeUnit::Month, 1, &z, 7).unwrap(),
            utc(2021, 3, 1, 0, 0)
        );
        assert_eq!(
            truncate(date, TimeUnit::Quarter, 1, &z, 7).unwrap(),
            utc(2021, 1, 1, 0, 0)
        );
        assert_eq!(
            truncate(date, TimeUnit::Week, 1, &z, 7).unwrap(),
            utc(2021, 3, 14, 0, 0)
        );
        assert_eq!(
            truncate(date, TimeUnit::Week, 1, &z, 1).unwrap(),
            utc(2021, 3, 15, 0, 0)
        );
        assert_eq!(
            truncate(utc(1969, 7, 20, 20, 17), TimeUnit::Year, 5, &z, 7).unwrap(),
            utc(1965, 1, 1, 0, 0)
        );
    }
}
