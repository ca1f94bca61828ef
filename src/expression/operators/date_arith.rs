//! Calendar arithmetic on dates: `$dateAdd` and `$dateSubtract` (`{startDate, unit, amount,
//! timezone}`) and `$dateDiff` (`{startDate, endDate, unit, timezone, startOfWeek}`), and the
//! argument checks `$dateTrunc` shares with `$dateDiff`.

use super::date_args::{Fields, as_date, integral_i64, non_null, parse_fields, require_fields};
use super::{Args, Arity, Expression, Operator, Scope, object_argument, only_object};
use crate::error::{MongoError, Result};
use crate::expression::datetime::{TimeUnit, TimeZone, date_add, date_diff, parse_day_of_week};
use crate::expression::value::{Value, bson_type_name};
use bson::{Bson, DateTime};

pub(super) static OPERATORS: &[Operator] = &[
    Operator {
        name: "$dateAdd",
        arity: Arity::Any,
        parse: parse_date_arithmetic,
        eval: date_add_op,
    },
    Operator {
        name: "$dateDiff",
        arity: Arity::Any,
        parse: parse_date_diff,
        eval: date_diff_op,
    },
    Operator {
        name: "$dateSubtract",
        arity: Arity::Any,
        parse: parse_date_arithmetic,
        eval: date_subtract_op,
    },
];

/// Sunday, unless `startOfWeek` says otherwise.
const DEFAULT_START_OF_WEEK: i64 = 7;

const ARITHMETIC_FIELDS: [&str; 4] = ["startDate", "unit", "amount", "timezone"];

fn parse_date_arithmetic(
    name: &'static str,
    argument: &Bson,
    scope: &Scope,
) -> Result<Vec<Expression>> {
    let spec = object_argument(argument, 5166400, || {
        format!("{name} expects an object as its argument")
    })?;
    let exprs = parse_fields(spec, &ARITHMETIC_FIELDS, scope, |key| {
        MongoError::location(
            5166401,
            format!(
                "Unrecognized argument to {name}: {key}. Expected arguments are startDate, unit, amount, and optionally timezone."
            ),
        )
    })?;
    if !ARITHMETIC_FIELDS[..3].iter().all(|f| spec.contains_key(f)) {
        return Err(MongoError::location(
            5166402,
            format!("{name} requires startDate, unit, and amount to be present"),
        ));
    }
    Ok(exprs)
}

fn date_add_op(args: &Args) -> Result<Value> {
    date_arithmetic(args, "$dateAdd", false)
}

fn date_subtract_op(args: &Args) -> Result<Value> {
    date_arithmetic(args, "$dateSubtract", true)
}

/// Null when any argument is null or missing; then the types are checked.
fn date_arithmetic(args: &Args, name: &str, subtract: bool) -> Result<Value> {
    let fields = Fields::new(args)?;
    let Some(values) = fields.values(&[None, None, None])? else {
        return Ok(Some(Bson::Null));
    };
    let Some(zone) = fields.zone(3)? else {
        return Ok(Some(Bson::Null));
    };
    let start = as_date(&values[0]).ok_or_else(|| {
        MongoError::location(
            5166403,
            format!("{name} requires startDate to be convertible to a date"),
        )
    })?;
    let Bson::String(unit) = &values[1] else {
        return Err(MongoError::location(
            5166404,
            format!("{name} expects string defining the time unit"),
        ));
    };
    let unit = TimeUnit::parse(unit)
        .ok_or_else(|| MongoError::failed_to_parse(format!("unknown time unit value: {unit}")))?;
    let amount = integral_i64(&values[2]).ok_or_else(|| {
        MongoError::location(
            5166405,
            format!("{name} expects integer amount of time units"),
        )
    })?;
    let amount = if subtract {
        amount.checked_neg().ok_or_else(|| {
            MongoError::location(
                6045000,
                format!("invalid $dateSubtract 'amount' parameter value: {amount}"),
            )
        })?
    } else {
        amount
    };
    let result = date_add(start, unit, amount, &zone)?;
    Ok(Some(Bson::DateTime(DateTime::from_millis(result))))
}

/// `unit` as a time unit, with `$dateDiff`'s and `$dateTrunc`'s errors.
pub(super) fn time_unit(value: &Bson, name: &str) -> Result<TimeUnit> {
    let Bson::String(unit) = value else {
        return Err(MongoError::location(
            5439013,
            format!(
                "{name} requires 'unit' to be a string, but got {}",
                bson_type_name(value)
            ),
        ));
    };
    TimeUnit::parse(unit).ok_or_else(|| {
        MongoError::location(
            5439014,
            format!("{name} parameter 'unit' value cannot be recognized as a time unit: {unit}"),
        )
    })
}

pub(super) fn start_of_week(value: Option<Bson>, name: &str) -> Result<i64> {
    let Some(value) = value else {
        return Ok(DEFAULT_START_OF_WEEK);
    };
    let Bson::String(day) = &value else {
        return Err(MongoError::location(
            5439015,
            format!(
                "{name} requires 'startOfWeek' to be a string, but got {}",
                bson_type_name(&value)
            ),
        ));
    };
    parse_day_of_week(day).ok_or_else(|| {
        MongoError::location(
            5439016,
            format!(
                "{name} parameter 'startOfWeek' value cannot be recognized as a day of a week: {day}"
            ),
        )
    })
}

/// `startOfWeek` counts only with the unit `"week"`: it is not evaluated otherwise. `Ok(None)`
/// when it is null or missing.
pub(super) fn eval_start_of_week(
    fields: &Fields,
    field: usize,
    unit: &Bson,
) -> Result<Option<Option<Bson>>> {
    if !fields.given(field) || !matches!(unit, Bson::String(u) if u == "week") {
        return Ok(Some(None));
    }
    Ok(non_null(fields.eval(field)?).map(Some))
}

/// The zone, with the context MongoDB adds to its errors.
pub(super) fn zone_with_context(
    fields: &Fields,
    field: usize,
    name: &str,
) -> Result<Option<TimeZone>> {
    fields.zone(field).map_err(|err| {
        MongoError::location(
            err.code().code(),
            format!(
                "{name} parameter 'timezone' value parsing failed :: caused by :: {}",
                err.message()
            ),
        )
    })
}

const DIFF_FIELDS: [&str; 5] = ["startDate", "endDate", "unit", "timezone", "startOfWeek"];

fn parse_date_diff(_: &'static str, argument: &Bson, scope: &Scope) -> Result<Vec<Expression>> {
    let spec = only_object("$dateDiff", argument, 5166301)?;
    let exprs = parse_fields(spec, &DIFF_FIELDS, scope, |key| {
        MongoError::location(
            5166302,
            format!("Unrecognized argument to $dateDiff: {key}"),
        )
    })?;
    require_fields(
        spec,
        "$dateDiff",
        &[
            (5166303, "startDate"),
            (5166304, "endDate"),
            (5166305, "unit"),
        ],
    )?;
    Ok(exprs)
}

/// A long; null when an argument is null or missing.
fn date_diff_op(args: &Args) -> Result<Value> {
    let fields = Fields::new(args)?;
    let Some(values) = fields.values(&[None, None, None])? else {
        return Ok(Some(Bson::Null));
    };
    let Some(week_start) = eval_start_of_week(&fields, 4, &values[2])? else {
        return Ok(Some(Bson::Null));
    };
    let Some(zone) = zone_with_context(&fields, 3, "$dateDiff")? else {
        return Ok(Some(Bson::Null));
    };
    let date = |value: &Bson, parameter: &str| {
        as_date(value).ok_or_else(|| {
            MongoError::location(
                5166307,
                format!(
                    "$dateDiff requires '{parameter}' to be a date, but got {}",
                    bson_type_name(value)
                ),
            )
        })
    };
    let start = date(&values[0], "startDate")?;
    let end = date(&values[1], "endDate")?;
    let unit = time_unit(&values[2], "$dateDiff")?;
    let week_start = start_of_week(week_start, "$dateDiff")?;
    Ok(Some(Bson::Int64(date_diff(
        start, end, unit, &zone, week_start,
    )?)))
}

#[cfg(test)]
mod tests {
    use crate::expression::tests::{date_at as at, error_code as code, eval};
    use bson::{Bson, DateTime, bson, doc};

    fn run(expr: Bson) -> Option<Bson> {
        eval(expr, &doc! {}).unwrap()
    }

    #[test]
    fn date_add_and_subtract() {
        let add = |start: &str, unit: &str, amount: i64, zone: &str| {
            run(
                bson!({"$dateAdd": {"startDate": at(start), "unit": unit, "amount": amount, "timezone": zone}}),
            )
        };
        // The manual's examples.
        assert_eq!(
            add("2020-10-24T18:10:00Z", "day", 3, "UTC"),
            Some(at("2020-10-27T18:10:00Z"))
        );
        assert_eq!(
            add("2021-01-31T12:00:00Z", "month", 1, "UTC"),
            Some(at("2021-02-28T12:00:00Z"))
        );
        assert_eq!(
            add("2021-03-31T12:10:05Z", "month", 1, "UTC"),
            Some(at("2021-04-30T12:10:05Z"))
        );
        // Across the November 2020 DST change in New York: a day keeps 01:00 local.
        assert_eq!(
            add("2020-10-31T12:10:05Z", "day", 1, "America/New_York"),
            Some(at("2020-11-01T13:10:05Z"))
        );
        assert_eq!(
            add("2020-11-01T05:50:02Z", "hour", 1, "America/New_York"),
            Some(at("2020-11-01T06:50:02Z"))
        );
        assert_eq!(
            run(
                bson!({"$dateSubtract": {"startDate": at("2021-01-01T00:00:00Z"), "unit": "week", "amount": 2.0}})
            ),
            Some(at("2020-12-18T00:00:00Z"))
        );
        assert_eq!(
            run(
                bson!({"$dateSubtract": {"startDate": at("1969-12-31T23:59:59.999Z"), "unit": "millisecond", "amount": -1_i64}})
            ),
            Some(Bson::DateTime(DateTime::from_millis(0)))
        );
        for null_arg in ["startDate", "unit", "amount", "timezone"] {
            let mut spec =
                doc! {"startDate": at("2021-01-01T00:00:00Z"), "unit": "day", "amount": 1};
            spec.insert(null_arg, Bson::Null);
            assert_eq!(
                run(bson!({"$dateAdd": spec})),
                Some(Bson::Null),
                "{null_arg}"
            );
        }
    }

    #[test]
    fn date_add_errors() {
        let with = |start: Bson, unit: Bson, amount: Bson| {
            code(bson!({"$dateAdd": {"startDate": start, "unit": unit, "amount": amount}}))
        };
        let start = at("2021-01-01T00:00:00Z");
        assert_eq!(with(bson!("x"), bson!("day"), bson!(1)), 5166403);
        assert_eq!(with(start.clone(), bson!(1), bson!(1)), 5166404);
        assert_eq!(with(start.clone(), bson!("days"), bson!(1)), 9);
        assert_eq!(with(start.clone(), bson!("day"), bson!(1.5)), 5166405);
        assert_eq!(
            with(start.clone(), bson!("year"), bson!(600_000_000_i64)),
            5976500
        );
        assert_eq!(
            with(start.clone(), bson!("day"), bson!(110_000_000_000_i64)),
            5166406
        );
        assert_eq!(
            code(
                bson!({"$dateSubtract": {"startDate": start.clone(), "unit": "day", "amount": i64::MIN}})
            ),
            6045000
        );
        assert_eq!(code(bson!({"$dateAdd": 1})), 5166400);
        assert_eq!(
            code(
                bson!({"$dateAdd": {"startDate": start.clone(), "unit": "day", "amount": 1, "x": 1}})
            ),
            5166401
        );
        assert_eq!(
            code(bson!({"$dateAdd": {"startDate": start, "unit": "day"}})),
            5166402
        );
    }

    #[test]
    fn date_diff_examples() {
        let diff = |start: &str, end: &str, unit: &str| {
            run(bson!({"$dateDiff": {"startDate": at(start), "endDate": at(end), "unit": unit}}))
        };
        assert_eq!(
            diff("2021-01-01T00:00:00Z", "2021-01-31T00:00:00Z", "day"),
            Some(Bson::Int64(30))
        );
        assert_eq!(
            diff("2020-12-31T23:59:00Z", "2021-01-01T00:00:00Z", "year"),
            Some(Bson::Int64(1))
        );
        assert_eq!(
            diff("2021-01-01T00:00:00Z", "2020-01-01T00:00:00Z", "quarter"),
            Some(Bson::Int64(-4))
        );
        assert_eq!(
            diff(
                "2021-01-01T00:00:00Z",
                "2021-01-01T00:00:01.5Z",
                "millisecond"
            ),
            Some(Bson::Int64(1500))
        );
        // The manual's startOfWeek example: 2022-01-08 is a Saturday.
        let weeks = |start_of_week: &str| {
            run(bson!({"$dateDiff": {
                "startDate": at("2022-01-01T00:00:00Z"), "endDate": at("2022-01-08T00:00:00Z"),
                "unit": "week", "startOfWeek": start_of_week}}))
        };
        assert_eq!(weeks("Sunday"), Some(Bson::Int64(1)));
        assert_eq!(weeks("sat"), Some(Bson::Int64(1)));
        assert_eq!(weeks("MONDAY"), Some(Bson::Int64(1)));
        assert_eq!(
            run(
                bson!({"$dateDiff": {"startDate": at("2021-03-13T12:00:00Z"), "endDate": at("2021-03-14T12:00:00Z"), "unit": "hour", "timezone": "America/New_York"}})
            ),
            Some(Bson::Int64(24))
        );
        // startOfWeek is only read for weeks.
        assert_eq!(
            run(
                bson!({"$dateDiff": {"startDate": at("2021-01-01T00:00:00Z"), "endDate": at("2021-01-02T00:00:00Z"), "unit": "day", "startOfWeek": 5}})
            ),
            Some(Bson::Int64(1))
        );
        assert_eq!(
            run(bson!({"$dateDiff": {"startDate": null, "endDate": 1, "unit": 1}})),
            Some(Bson::Null)
        );
    }

    #[test]
    fn date_diff_errors() {
        let start = at("2021-01-01T00:00:00Z");
        let with = |end: Bson, unit: Bson, extra: bson::Document| {
            let mut spec = doc! {"startDate": start.clone(), "endDate": end, "unit": unit};
            spec.extend(extra);
            code(bson!({"$dateDiff": spec}))
        };
        assert_eq!(with(bson!(1), bson!("day"), doc! {}), 5166307);
        assert_eq!(with(start.clone(), bson!(1), doc! {}), 5439013);
        assert_eq!(with(start.clone(), bson!("days"), doc! {}), 5439014);
        assert_eq!(
            with(start.clone(), bson!("week"), doc! {"startOfWeek": 1}),
            5439015
        );
        assert_eq!(
            with(
                start.clone(),
                bson!("week"),
                doc! {"startOfWeek": "someday"}
            ),
            5439016
        );
        assert_eq!(
            with(start.clone(), bson!("day"), doc! {"timezone": "Nowhere"}),
            40485
        );
        assert_eq!(
            with(start.clone(), bson!("day"), doc! {"timezone": 3}),
            40517
        );
        assert_eq!(code(bson!({"$dateDiff": []})), 5166301);
        assert_eq!(
            code(bson!({"$dateDiff": {"startDate": 1, "endDate": 1, "unit": "day", "x": 1}})),
            5166302
        );
        assert_eq!(
            code(bson!({"$dateDiff": {"endDate": 1, "unit": "day"}})),
            5166303
        );
        assert_eq!(
            code(bson!({"$dateDiff": {"startDate": 1, "unit": "day"}})),
            5166304
        );
        assert_eq!(
            code(bson!({"$dateDiff": {"startDate": 1, "endDate": 1}})),
            5166305
        );
    }
}
