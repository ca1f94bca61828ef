//! Time units of window ranges and `$densify` steps (`millisecond` .. `year`) and adding a
//! number of them to a date the way `$dateAdd` does in UTC: months, quarters and years move
//! the calendar date and clamp the day to the end of a shorter month.

use crate::error::{MongoError, Result};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeUnit {
    Millisecond,
    Second,
    Minute,
    Hour,
    Day,
    Week,
    Month,
    Quarter,
    Year,
}

const UNITS: &[(&str, TimeUnit)] = &[
    ("millisecond", TimeUnit::Millisecond),
    ("second", TimeUnit::Second),
    ("minute", TimeUnit::Minute),
    ("hour", TimeUnit::Hour),
    ("day", TimeUnit::Day),
    ("week", TimeUnit::Week),
    ("month", TimeUnit::Month),
    ("quarter", TimeUnit::Quarter),
    ("year", TimeUnit::Year),
];

impl TimeUnit {
    pub fn parse(name: &str) -> Result<TimeUnit> {
        UNITS
            .iter()
            .find(|(known, _)| *known == name)
            .map(|(_, unit)| *unit)
            .ok_or_else(|| MongoError::failed_to_parse(format!("unknown time unit value: {name}")))
    }

    /// Milliseconds in one unit, for the units of fixed length.
    pub fn fixed_millis(self) -> Option<i64> {
        Some(match self {
            TimeUnit::Millisecond => 1,
            TimeUnit::Second => 1_000,
            TimeUnit::Minute => 60_000,
            TimeUnit::Hour => 3_600_000,
            TimeUnit::Day => 86_400_000,
            TimeUnit::Week => 604_800_000,
            TimeUnit::Month | TimeUnit::Quarter | TimeUnit::Year => return None,
        })
    }

    /// `millis` plus `amount` units, or `None` on overflow.
    pub fn add(self, millis: i64, amount: i64) -> Option<i64> {
        if let Some(unit) = self.fixed_millis() {
            return millis.checked_add(unit.checked_mul(amount)?);
        }
        let months = match self {
            TimeUnit::Quarter => amount.checked_mul(3)?,
            TimeUnit::Year => amount.checked_mul(12)?,
            _ => amount,
        };
        let day_millis = millis.rem_euclid(86_400_000);
        let (year, month, day) = civil_from_days(millis.div_euclid(86_400_000));
        let total = year
            .checked_mul(12)?
            .checked_add(month - 1)?
            .checked_add(months)?;
        let (year, month) = (total.div_euclid(12), total.rem_euclid(12) + 1);
        let day = day.min(days_in_month(year, month));
        days_from_civil(year, month, day)
            .checked_mul(86_400_000)?
            .checked_add(day_millis)
    }
}

fn is_leap(year: i64) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn millis(y: i64, m: i64, d: i64) -> i64 {
        days_from_civil(y, m, d) * 86_400_000
    }

    #[test]
    fn adds_calendar_and_fixed_units() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(days_from_civil(2024, 2, 29)), (2024, 2, 29));
        let jan31 = millis(2021, 1, 31) + 3_600_000;
        assert_eq!(
            TimeUnit::Month.add(jan31, 1),
            Some(millis(2021, 2, 28) + 3_600_000)
        );
        assert_eq!(
            TimeUnit::Quarter.add(jan31, -1),
            Some(millis(2020, 10, 31) + 3_600_000)
        );
        assert_eq!(
            TimeUnit::Year.add(millis(2020, 2, 29), 1),
            Some(millis(2021, 2, 28))
        );
        assert_eq!(TimeUnit::Hour.add(0, 2), Some(7_200_000));
        assert_eq!(TimeUnit::Week.add(0, -1), Some(-604_800_000));
        assert_eq!(TimeUnit::parse("days").unwrap_err().code().code(), 9);
    }
}
