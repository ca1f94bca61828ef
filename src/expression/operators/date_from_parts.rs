//! `$dateFromParts`: a date from calendar fields (`{year, month, day, hour, minute, second,
//! millisecond, timezone}`) or ISO week fields (`{isoWeekYear, isoWeek, isoDayOfWeek, ...}`).
//! Fields out of their natural range carry into the next larger one (month 14 is February of
//! the next year, hour -1 is 23:00 the day before).

use super::date_args::{Fields, integral_i64, non_null, parse_fields};
use super::{Args, Arity, Expression, Operator, Scope, only_object};
use crate::error::{ErrorCode, MongoError, Result};
use crate::expression::datetime::{MILLIS_PER_DAY, days_from_civil, days_from_iso};
use crate::expression::value::{Value, bson_type_name, render};
use bson::{Bson, DateTime};

pub(super) static OPERATORS: &[Operator] = &[Operator {
    name: "$dateFromParts",
    arity: Arity::Any,
    parse: parse_date_from_parts,
    eval: date_from_parts,
}];

const FIELDS: [&str; 11] = [
    "year",
    "month",
    "day",
    "hour",
    "minute",
    "second",
    "millisecond",
    "isoWeekYear",
    "isoWeek",
    "isoDayOfWeek",
    "timezone",
];
const YEAR: usize = 0;
const MONTH: usize = 1;
const DAY: usize = 2;
const HOUR: usize = 3;
const MINUTE: usize = 4;
const SECOND: usize = 5;
const MILLISECOND: usize = 6;
const ISO_YEAR: usize = 7;
const ISO_WEEK: usize = 8;
const ISO_DAY: usize = 9;
const TIMEZONE: usize = 10;

fn parse_date_from_parts(
    _: &'static str,
    argument: &Bson,
    scope: &Scope,
) -> Result<Vec<Expression>> {
    let spec = only_object("$dateFromParts", argument, 40519)?;
    let exprs = parse_fields(spec, &FIELDS, scope, |key| {
        MongoError::location(
            40518,
            format!("Unrecognized argument to $dateFromParts: {key}"),
        )
    })?;
    let has = |fields: &[usize]| fields.iter().any(|&f| spec.contains_key(FIELDS[f]));
    if !has(&[YEAR, ISO_YEAR]) {
        return Err(MongoError::location(
            40516,
            "$dateFromParts requires either 'year' or 'isoWeekYear' to be present",
        ));
    }
    if has(&[YEAR]) && has(&[ISO_YEAR, ISO_WEEK, ISO_DAY]) {
        return Err(MongoError::location(
            40489,
            "$dateFromParts does not allow mixing natural dates with ISO dates",
        ));
    }
    if has(&[ISO_YEAR]) && has(&[YEAR, MONTH, DAY]) {
        return Err(MongoError::location(
            40525,
            "$dateFromParts does not allow mixing ISO dates with natural dates",
        ));
    }
    Ok(exprs)
}

/// The field's integer value (`default` when not given), `None` when null or missing. `bounded`
/// fields must lie in [-32768, 32767].
fn number(fields: &Fields, field: usize, default: i64, bounded: bool) -> Result<Option<i64>> {
    if !fields.given(field) {
        return Ok(Some(default));
    }
    let Some(value) = non_null(fields.eval(field)?) else {
        return Ok(None);
    };
    let name = FIELDS[field];
    let number = integral_i64(&value).ok_or_else(|| {
        MongoError::location(
            40515,
            format!(
                "'{name}' must evaluate to an integer, found {} with value {}",
                bson_type_name(&value),
                render(Some(&value))
            ),
        )
    })?;
    if bounded && !(-32768..=32767).contains(&number) {
        return Err(MongoError::location(
            31034,
            format!(
                "'{name}' must evaluate to a value in the range [-32768, 32767]; value {number} is not in range"
            ),
        ));
    }
    Ok(Some(number))
}

/// Null when any field given is null or missing. The time fields and the zone are read first,
/// then the date fields.
fn date_from_parts(args: &Args) -> Result<Value> {
    let fields = Fields::new(args)?;
    let null = Ok(Some(Bson::Null));
    let mut time = [0_i64; 4];
    for (slot, field) in time.iter_mut().zip([HOUR, MINUTE, SECOND, MILLISECOND]) {
        match number(&fields, field, 0, field <= MINUTE)? {
            Some(value) => *slot = value,
            None => return null,
        }
    }
    let Some(zone) = fields.zone(TIMEZONE)? else {
        return null;
    };
    let (year_field, code) = if fields.given(YEAR) {
        (YEAR, 40523)
    } else {
        (ISO_YEAR, 31095)
    };
    let mut date = [0_i64; 3];
    let date_fields = if year_field == YEAR {
        [YEAR, MONTH, DAY]
    } else {
        [ISO_YEAR, ISO_WEEK, ISO_DAY]
    };
    for (slot, field) in date.iter_mut().zip(date_fields) {
        let default = if field == year_field { 1970 } else { 1 };
        match number(&fields, field, default, field != year_field)? {
            Some(value) => *slot = value,
            None => return null,
        }
    }
    let [year, second_field, third_field] = date;
    if !(1..=9999).contains(&year) {
        return Err(MongoError::location(
            code,
            format!(
                "'{}' must evaluate to an integer in the range 1 to 9999, found {year}",
                FIELDS[year_field]
            ),
        ));
    }
    let days = if year_field == YEAR {
        let months = year * 12 + second_field - 1;
        days_from_civil(months.div_euclid(12), months.rem_euclid(12) + 1, 1) + third_field - 1
    } else {
        days_from_iso(year, second_field, third_field)
    };
    let [hour, minute, second, millisecond] = time.map(i128::from);
    let local = i128::from(days) * i128::from(MILLIS_PER_DAY)
        + ((hour * 60 + minute) * 60 + second) * 1000
        + millisecond;
    let instant = i64::try_from(zone.instant_of_local(local)).map_err(|_| {
        MongoError::new(
            ErrorCode::DurationOverflow,
            "$dateFromParts: the date is out of the range of a date",
        )
    })?;
    Ok(Some(Bson::DateTime(DateTime::from_millis(instant))))
}

#[cfg(test)]
mod tests {
    use crate::expression::tests::eval;
    use bson::{Bson, DateTime, bson, doc};

    fn run(spec: Bson) -> Option<Bson> {
        eval(bson!({"$dateFromParts": spec}), &doc! {"n": null}).unwrap()
    }

    fn code(spec: Bson) -> i32 {
        eval(bson!({"$dateFromParts": spec}), &doc! {})
            .unwrap_err()
            .code()
            .code()
    }

    fn date(millis: i64) -> Option<Bson> {
        Some(Bson::DateTime(DateTime::from_millis(millis)))
    }

    /// 2017-02-08T12:00:00Z.
    const NOON: i64 = 1_486_555_200_000;

    #[test]
    fn manual_examples() {
        assert_eq!(
            run(bson!({"year": 2017, "month": 2, "day": 8, "hour": 12})),
            date(NOON)
        );
        assert_eq!(
            run(bson!({"isoWeekYear": 2017, "isoWeek": 6, "isoDayOfWeek": 3, "hour": 12})),
            date(NOON)
        );
        assert_eq!(
            run(
                bson!({"year": 2017, "month": 2, "day": 8, "hour": 12, "timezone": "America/New_York"})
            ),
            date(NOON + 5 * 3_600_000)
        );
        // 2016-12-31T23:46:12 in New York is 2017-01-01T04:46:12Z.
        assert_eq!(
            run(
                bson!({"year": 2016, "month": 12, "day": 31, "hour": 23, "minute": 46, "second": 12, "timezone": "America/New_York"})
            ),
            date(1_483_245_972_000)
        );
        assert_eq!(run(bson!({"year": 1970})), date(0));
        assert_eq!(
            run(
                bson!({"year": 1969, "month": 7, "day": 20, "hour": 20, "minute": 17, "second": 40})
            ),
            date(-14_182_940_000)
        );
        assert_eq!(
            run(bson!({"year": 2017.0, "month": 2_i64, "day": 8, "hour": 12})),
            date(NOON)
        );
    }

    #[test]
    fn out_of_range_values_carry() {
        // The manual's examples: months 14 and 0, days 0 and 32, hours -1 and 24...
        let dt = |y: i32, m: i32, d: i32, h: i32| {
            run(bson!({"year": y, "month": m, "day": d, "hour": h}))
        };
        assert_eq!(
            dt(2017, 14, 1, 12),
            run(bson!({"year": 2018, "month": 2, "day": 1, "hour": 12}))
        );
        assert_eq!(
            dt(2017, 0, 1, 12),
            run(bson!({"year": 2016, "month": 12, "day": 1, "hour": 12}))
        );
        assert_eq!(
            dt(2017, 2, 0, 12),
            run(bson!({"year": 2017, "month": 1, "day": 31, "hour": 12}))
        );
        assert_eq!(
            dt(2017, 1, 32, 12),
            run(bson!({"year": 2017, "month": 2, "day": 1, "hour": 12}))
        );
        assert_eq!(
            dt(2017, 2, 8, -1),
            run(bson!({"year": 2017, "month": 2, "day": 7, "hour": 23}))
        );
        assert_eq!(
            run(
                bson!({"year": 2017, "month": 2, "day": 8, "hour": 12, "minute": -60, "second": 3600, "millisecond": -1000})
            ),
            date(NOON - 1000)
        );
        assert_eq!(
            run(bson!({"isoWeekYear": 2017, "isoWeek": 0, "isoDayOfWeek": 10})),
            run(bson!({"year": 2017, "month": 1, "day": 4}))
        );
    }

    #[test]
    fn nulls_and_errors() {
        let null = Some(Bson::Null);
        assert_eq!(run(bson!({"year": "$n"})), null);
        assert_eq!(run(bson!({"year": 2017, "hour": "$missing"})), null);
        assert_eq!(run(bson!({"year": 2017, "timezone": null})), null);
        assert_eq!(code(bson!({"year": 2017, "month": "2"})), 40515);
        assert_eq!(code(bson!({"year": 2017.5})), 40515);
        assert_eq!(code(bson!({"year": 10000})), 40523);
        assert_eq!(code(bson!({"year": 0})), 40523);
        assert_eq!(code(bson!({"isoWeekYear": 0})), 31095);
        assert_eq!(code(bson!({"year": 2017, "month": 32768})), 31034);
        assert_eq!(code(bson!({"year": 2017, "hour": -32769})), 31034);
        assert_eq!(code(bson!({"year": 2017, "timezone": 5})), 40517);
        assert_eq!(code(bson!({"year": 2017, "timezone": "Nowhere"})), 40485);
        // The time fields are read before the year.
        assert_eq!(code(bson!({"year": 0, "hour": "x"})), 40515);
        assert_eq!(code(bson!("x")), 40519);
        assert_eq!(code(bson!({"year": 2017, "x": 1})), 40518);
        assert_eq!(code(bson!({"month": 1})), 40516);
        assert_eq!(code(bson!({"year": 2017, "isoWeek": 1})), 40489);
        assert_eq!(code(bson!({"isoWeekYear": 2017, "day": 1})), 40525);
        let err = eval(
            bson!({"$dateFromParts": {"year": 2017, "month": 1.5}}),
            &doc! {},
        )
        .unwrap_err();
        assert_eq!(
            err.message(),
            "'month' must evaluate to an integer, found double with value 1.5"
        );
    }
}
