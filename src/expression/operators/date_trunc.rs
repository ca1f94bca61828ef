//! `$dateTrunc` (`{date, unit, binSize, timezone, startOfWeek}`): the start of the bin of
//! `binSize` units a date falls in.

use super::date_args::{Fields, as_date, integral_i64, parse_fields, require_fields};
use super::date_arith::{eval_start_of_week, start_of_week, time_unit, zone_with_context};
use super::{Args, Arity, Expression, Operator, Scope, only_object};
use crate::error::{MongoError, Result};
use crate::expression::datetime::truncate;
use crate::expression::value::{Value, bson_type_name, render};
use bson::{Bson, DateTime};

pub(super) static OPERATORS: &[Operator] = &[Operator {
    name: "$dateTrunc",
    arity: Arity::Any,
    parse: parse_date_trunc,
    eval: date_trunc_op,
}];

const TRUNC_FIELDS: [&str; 5] = ["date", "unit", "binSize", "timezone", "startOfWeek"];

fn parse_date_trunc(_: &'static str, argument: &Bson, scope: &Scope) -> Result<Vec<Expression>> {
    let spec = only_object("$dateTrunc", argument, 5439007)?;
    let exprs = parse_fields(spec, &TRUNC_FIELDS, scope, |key| {
        MongoError::location(
            5439008,
            format!(
                "Unrecognized argument to $dateTrunc: {key}. Expected arguments are date, unit, and optionally, binSize, timezone, startOfWeek"
            ),
        )
    })?;
    require_fields(spec, "$dateTrunc", &[(5439009, "date"), (5439010, "unit")])?;
    Ok(exprs)
}

fn date_trunc_op(args: &Args) -> Result<Value> {
    let fields = Fields::new(args)?;
    // A binSize left out is 1.
    let Some(values) = fields.values(&[None, None, Some(Bson::Int64(1))])? else {
        return Ok(Some(Bson::Null));
    };
    let Some(week_start) = eval_start_of_week(&fields, 4, &values[1])? else {
        return Ok(Some(Bson::Null));
    };
    let Some(zone) = zone_with_context(&fields, 3, "$dateTrunc")? else {
        return Ok(Some(Bson::Null));
    };
    let date = as_date(&values[0]).ok_or_else(|| {
        MongoError::location(
            5439012,
            format!(
                "$dateTrunc requires 'date' to be a date, but got {}",
                bson_type_name(&values[0])
            ),
        )
    })?;
    let unit = time_unit(&values[1], "$dateTrunc")?;
    let bin_size = integral_i64(&values[2]).ok_or_else(|| {
        MongoError::location(
            5439017,
            format!(
                "$dateTrunc requires 'binSize' to be a 64-bit integer, but got value '{}' of type {}",
                render(Some(&values[2])),
                bson_type_name(&values[2])
            ),
        )
    })?;
    if bin_size <= 0 {
        return Err(MongoError::location(
            5439018,
            format!("$dateTrunc requires 'binSize' to be greater than 0, but got value {bin_size}"),
        ));
    }
    let week_start = start_of_week(week_start, "$dateTrunc")?;
    let result = truncate(date, unit, bin_size, &zone, week_start)?;
    Ok(Some(Bson::DateTime(DateTime::from_millis(result))))
}

#[cfg(test)]
mod tests {
    use crate::expression::tests::{date_at as at, error_code as code, eval};
    use bson::{Bson, bson, doc};

    fn run(expr: Bson) -> Option<Bson> {
        eval(expr, &doc! {}).unwrap()
    }

    #[test]
    fn date_trunc_examples() {
        let trunc = |date: &str, spec: bson::Document| {
            let mut spec = spec;
            spec.insert("date", at(date));
            run(bson!({"$dateTrunc": spec}))
        };
        // The manual's examples on 2020-05-18T14:10:30Z.
        let date = "2020-05-18T14:10:30Z";
        assert_eq!(
            trunc(date, doc! {"unit": "week"}),
            Some(at("2020-05-17T00:00:00Z"))
        );
        assert_eq!(
            trunc(date, doc! {"unit": "month", "binSize": 6}),
            Some(at("2020-01-01T00:00:00Z"))
        );
        assert_eq!(
            trunc(date, doc! {"unit": "hour", "binSize": 2}),
            Some(at("2020-05-18T14:00:00Z"))
        );
        assert_eq!(
            trunc(date, doc! {"unit": "minute", "binSize": 15}),
            Some(at("2020-05-18T14:00:00Z"))
        );
        assert_eq!(
            trunc(date, doc! {"unit": "week", "startOfWeek": "monday"}),
            Some(at("2020-05-18T00:00:00Z"))
        );
        assert_eq!(
            trunc(
                date,
                doc! {"unit": "day", "timezone": "America/Los_Angeles"}
            ),
            Some(at("2020-05-18T07:00:00Z"))
        );
        assert_eq!(
            trunc(
                "1969-07-20T20:17:40Z",
                doc! {"unit": "second", "binSize": 15}
            ),
            Some(at("1969-07-20T20:17:30Z"))
        );
        assert_eq!(
            trunc(date, doc! {"unit": "day", "binSize": null}),
            Some(Bson::Null)
        );
    }

    #[test]
    fn date_trunc_errors() {
        let with = |date: Bson, spec: bson::Document| {
            let mut spec = spec;
            spec.insert("date", date);
            code(bson!({"$dateTrunc": spec}))
        };
        let date = at("2020-05-18T14:10:30Z");
        assert_eq!(with(bson!("x"), doc! {"unit": "day"}), 5439012);
        assert_eq!(with(date.clone(), doc! {"unit": 1}), 5439013);
        assert_eq!(with(date.clone(), doc! {"unit": "fortnight"}), 5439014);
        assert_eq!(
            with(date.clone(), doc! {"unit": "day", "binSize": 1.5}),
            5439017
        );
        assert_eq!(
            with(date.clone(), doc! {"unit": "day", "binSize": 0}),
            5439018
        );
        assert_eq!(
            with(
                date.clone(),
                doc! {"unit": "day", "binSize": 200_000_000_000_i64}
            ),
            5439006
        );
        assert_eq!(
            with(date.clone(), doc! {"unit": "hour", "binSize": i64::MAX}),
            5439002
        );
        assert_eq!(with(date.clone(), doc! {"unit": "day", "x": 1}), 5439008);
        assert_eq!(code(bson!({"$dateTrunc": "x"})), 5439007);
        assert_eq!(code(bson!({"$dateTrunc": {"unit": "day"}})), 5439009);
        assert_eq!(code(bson!({"$dateTrunc": {"date": date}})), 5439010);
    }
}
