//! The date part operators: `$year`, `$month`, `$dayOfMonth`, `$hour`, `$minute`, `$second`,
//! `$millisecond`, `$dayOfWeek`, `$dayOfYear`, `$week`, `$isoWeek`, `$isoWeekYear`,
//! `$isoDayOfWeek` (`<date>`, `[<date>]` or `{date, timezone}`), and `$dateToParts`.

use super::date_args::{Fields, non_null, parse_fields, require_fields, to_date};
use super::{Args, Arity, Expression, Operator, Scope, only_object};
use crate::error::{MongoError, Result};
use crate::expression::datetime::{Parts, TimeZone};
use crate::expression::value::{Value, bson_type_name, render, render_document};
use bson::{Bson, doc};

macro_rules! part_operators {
    ($($name:literal => $func:ident),* $(,)?) => {
        pub(super) static OPERATORS: &[Operator] = &[
            $(Operator { name: $name, arity: Arity::Any, parse: parse_date_part, eval: $func },)*
            Operator {
                name: "$dateToParts",
                arity: Arity::Any,
                parse: parse_date_to_parts,
                eval: date_to_parts,
            },
        ];
    };
}

part_operators! {
    "$year" => year,
    "$month" => month,
    "$dayOfMonth" => day_of_month,
    "$hour" => hour,
    "$minute" => minute,
    "$second" => second,
    "$millisecond" => millisecond,
    "$dayOfWeek" => day_of_week,
    "$dayOfYear" => day_of_year,
    "$week" => week,
    "$isoWeek" => iso_week,
    "$isoWeekYear" => iso_week_year,
    "$isoDayOfWeek" => iso_day_of_week,
}

/// `<date>`, `[<date>]` or `{date, timezone}` into `[date]` or `[date, timezone]`. An object
/// whose first field starts with `$` is an expression giving the date.
fn parse_date_part(name: &'static str, argument: &Bson, scope: &Scope) -> Result<Vec<Expression>> {
    match argument {
        Bson::Document(spec) if spec.keys().next().is_some_and(|k| k.starts_with('$')) => {
            Ok(vec![Expression::parse_object_in(spec, scope)?])
        }
        Bson::Document(spec) => {
            let (mut date, mut zone) = (None, None);
            for (key, value) in spec {
                let slot = match key.as_str() {
                    "date" => &mut date,
                    "timezone" => &mut zone,
                    _ => {
                        return Err(MongoError::location(
                            40535,
                            format!("unrecognized option to {name}: \"{key}\""),
                        ));
                    }
                };
                *slot = Some(Expression::parse_in(value, scope)?);
            }
            let date = date.ok_or_else(|| {
                MongoError::location(
                    40539,
                    format!(
                        "missing 'date' argument to {name}, provided: {name}: {}",
                        render_document(spec)
                    ),
                )
            })?;
            Ok(std::iter::once(date).chain(zone).collect())
        }
        Bson::Array(items) if items.len() != 1 => Err(MongoError::location(
            40536,
            format!(
                "{name} accepts exactly one argument if given an array, but was given {}",
                items.len()
            ),
        )),
        Bson::Array(items) => Ok(vec![Expression::parse_in(&items[0], scope)?]),
        other => Ok(vec![Expression::parse_in(other, scope)?]),
    }
}

/// Null when the date or the time zone is null or missing; the date is read before the zone.
fn date_part(args: &Args, name: &str, part: fn(&Parts) -> Bson) -> Result<Value> {
    let Some(date) = non_null(args.eval(0)?) else {
        return Ok(Some(Bson::Null));
    };
    let date = to_date(&date)?;
    let zone = if args.len() > 1 {
        match non_null(args.eval(1)?) {
            None => return Ok(Some(Bson::Null)),
            Some(Bson::String(id)) => TimeZone::parse(&id)?,
            Some(other) => {
                return Err(MongoError::location(
                    40533,
                    format!(
                        "{name} requires a string for the timezone argument, but was given a {} ({})",
                        bson_type_name(&other),
                        render(Some(&other))
                    ),
                ));
            }
        }
    } else {
        TimeZone::Utc
    };
    Ok(Some(part(&zone.parts(date))))
}

fn int(value: i64) -> Bson {
    Bson::Int32(value as i32)
}

fn year(args: &Args) -> Result<Value> {
    date_part(args, "$year", |p| int(p.year))
}

fn month(args: &Args) -> Result<Value> {
    date_part(args, "$month", |p| int(p.month))
}

fn day_of_month(args: &Args) -> Result<Value> {
    date_part(args, "$dayOfMonth", |p| int(p.day))
}

fn hour(args: &Args) -> Result<Value> {
    date_part(args, "$hour", |p| int(p.hour))
}

fn minute(args: &Args) -> Result<Value> {
    date_part(args, "$minute", |p| int(p.minute))
}

fn second(args: &Args) -> Result<Value> {
    date_part(args, "$second", |p| int(p.second))
}

fn millisecond(args: &Args) -> Result<Value> {
    date_part(args, "$millisecond", |p| int(p.millisecond))
}

fn day_of_week(args: &Args) -> Result<Value> {
    date_part(args, "$dayOfWeek", |p| int(p.day_of_week()))
}

fn day_of_year(args: &Args) -> Result<Value> {
    date_part(args, "$dayOfYear", |p| int(p.day_of_year()))
}

fn week(args: &Args) -> Result<Value> {
    date_part(args, "$week", |p| int(p.week()))
}

fn iso_week(args: &Args) -> Result<Value> {
    date_part(args, "$isoWeek", |p| int(p.iso_week().1))
}

/// The one part MongoDB returns as a long.
fn iso_week_year(args: &Args) -> Result<Value> {
    date_part(args, "$isoWeekYear", |p| Bson::Int64(p.iso_week().0))
}

fn iso_day_of_week(args: &Args) -> Result<Value> {
    date_part(args, "$isoDayOfWeek", |p| int(p.iso_day_of_week()))
}

const TO_PARTS_FIELDS: [&str; 3] = ["date", "timezone", "iso8601"];

fn parse_date_to_parts(_: &'static str, argument: &Bson, scope: &Scope) -> Result<Vec<Expression>> {
    let spec = only_object("$dateToParts", argument, 40524)?;
    let exprs = parse_fields(spec, &TO_PARTS_FIELDS, scope, |key| {
        MongoError::location(
            40520,
            format!("Unrecognized argument to $dateToParts: {key}"),
        )
    })?;
    require_fields(spec, "$dateToParts", &[(40522, "date")])?;
    Ok(exprs)
}

/// The time zone and `iso8601` are checked before a null date makes the result null.
fn date_to_parts(args: &Args) -> Result<Value> {
    let fields = Fields::new(args)?;
    let date = fields.eval(0)?;
    let Some(zone) = fields.zone(1)? else {
        return Ok(Some(Bson::Null));
    };
    let iso = if fields.given(2) {
        match non_null(fields.eval(2)?) {
            None => return Ok(Some(Bson::Null)),
            Some(Bson::Boolean(iso)) => iso,
            Some(other) => {
                return Err(MongoError::location(
                    40521,
                    format!(
                        "iso8601 must evaluate to a bool, found {}",
                        bson_type_name(&other)
                    ),
                ));
            }
        }
    } else {
        false
    };
    let Some(date) = non_null(date) else {
        return Ok(Some(Bson::Null));
    };
    let date = to_date(&date)?;
    let p = zone.parts(date);
    let time = doc! {
        "hour": int(p.hour),
        "minute": int(p.minute),
        "second": int(p.second),
        "millisecond": int(p.millisecond),
    };
    let mut parts = if iso {
        let (iso_year, iso_week) = p.iso_week();
        doc! {
            "isoWeekYear": int(iso_year),
            "isoWeek": int(iso_week),
            "isoDayOfWeek": int(p.iso_day_of_week()),
        }
    } else {
        doc! {"year": int(p.year), "month": int(p.month), "day": int(p.day)}
    };
    parts.extend(time);
    Ok(Some(Bson::Document(parts)))
}

#[cfg(test)]
mod tests {
    use crate::expression::tests::eval;
    use bson::{Bson, DateTime, Timestamp, bson, doc, oid::ObjectId};

    fn input() -> bson::Document {
        // 2014-01-01T08:15:39.736Z, a Wednesday.
        doc! {"date": DateTime::from_millis(1_388_564_139_736), "n": null, "s": "x"}
    }

    fn run(expr: Bson) -> Option<Bson> {
        eval(expr, &input()).unwrap()
    }

    fn code(expr: Bson) -> i32 {
        eval(expr, &input()).unwrap_err().code().code()
    }

    #[test]
    fn manual_example() {
        let cases = [
            ("$year", bson!(2014)),
            ("$month", bson!(1)),
            ("$dayOfMonth", bson!(1)),
            ("$hour", bson!(8)),
            ("$minute", bson!(15)),
            ("$second", bson!(39)),
            ("$millisecond", bson!(736)),
            ("$dayOfYear", bson!(1)),
            ("$dayOfWeek", bson!(4)),
            ("$week", bson!(0)),
            ("$isoWeek", bson!(1)),
            ("$isoDayOfWeek", bson!(3)),
            ("$isoWeekYear", Bson::Int64(2014)),
        ];
        for (name, expected) in cases {
            assert_eq!(
                run(bson!({name: "$date"})),
                Some(expected.clone()),
                "{name}"
            );
            assert_eq!(
                run(bson!({name: ["$date"]})),
                Some(expected.clone()),
                "{name}"
            );
            assert_eq!(
                run(bson!({name: {"date": "$date", "timezone": "UTC"}})),
                Some(expected),
                "{name}"
            );
        }
    }

    #[test]
    fn time_zones_and_other_date_types() {
        let in_zone = |zone: &str| bson!({"$hour": {"date": "$date", "timezone": zone}});
        assert_eq!(run(in_zone("America/Chicago")), Some(bson!(2)));
        assert_eq!(run(in_zone("+04:45")), Some(bson!(13)));
        assert_eq!(run(in_zone("-0530")), Some(bson!(2)));
        assert_eq!(run(in_zone("+03")), Some(bson!(11)));
        assert_eq!(
            run(bson!({"$minute": {"date": "$date", "timezone": "Asia/Kathmandu"}})),
            Some(bson!(0))
        );
        // Dec 31 in New York is still 2013, in ISO week 1 of 2014.
        let local =
            bson!({"date": {"$add": ["$date", -28_800_000_i64]}, "timezone": "America/New_York"});
        assert_eq!(run(bson!({"$year": local.clone()})), Some(bson!(2013)));
        assert_eq!(run(bson!({"$isoWeekYear": local})), Some(Bson::Int64(2014)));
        let ts = Timestamp {
            time: 1_388_564_139,
            increment: 1,
        };
        assert_eq!(run(bson!({"$second": ts})), Some(bson!(39)));
        let oid = ObjectId::parse_str("52c3ceab0000000000000000").unwrap();
        assert_eq!(run(bson!({"$minute": oid})), Some(bson!(15)));
        // The operand may be an expression object.
        assert_eq!(
            run(bson!({"$year": {"$add": ["$date", 31_536_000_000_i64]}})),
            Some(bson!(2015))
        );
        // Before 1970.
        assert_eq!(
            run(bson!({"$dayOfWeek": DateTime::from_millis(-14_182_940_000)})),
            Some(bson!(1))
        );
    }

    #[test]
    fn null_and_missing() {
        let null = Some(Bson::Null);
        assert_eq!(run(bson!({"$year": "$n"})), null);
        assert_eq!(run(bson!({"$year": "$missing"})), null);
        assert_eq!(
            run(bson!({"$year": {"date": "$date", "timezone": "$missing"}})),
            null
        );
        assert_eq!(run(bson!({"$year": {"date": null, "timezone": 5}})), null);
    }

    #[test]
    fn errors() {
        assert_eq!(code(bson!({"$year": "$s"})), 16006);
        assert_eq!(code(bson!({"$year": 5})), 16006);
        assert_eq!(
            code(bson!({"$year": {"date": "$date", "timezone": 5}})),
            40533
        );
        assert_eq!(
            code(bson!({"$year": {"date": "$date", "timezone": "Nowhere"}})),
            40485
        );
        assert_eq!(
            code(bson!({"$year": {"date": "$date", "tz": "UTC"}})),
            40535
        );
        assert_eq!(code(bson!({"$year": {"timezone": "UTC"}})), 40539);
        assert_eq!(code(bson!({"$year": {}})), 40539);
        assert_eq!(code(bson!({"$year": [1, 2]})), 40536);
        assert_eq!(code(bson!({"$year": []})), 40536);
        let err = eval(bson!({"$year": {"date": "$date", "timezone": 5}}), &input()).unwrap_err();
        assert_eq!(
            err.message(),
            "$year requires a string for the timezone argument, but was given a int (5)"
        );
        let err = eval(bson!({"$month": {"date": "$date", "foo": 1}}), &input()).unwrap_err();
        assert_eq!(err.message(), "unrecognized option to $month: \"foo\"");
    }

    #[test]
    fn date_to_parts() {
        // The manual's example: 2017-01-01T01:29:09.123Z.
        let d = doc! {"date": DateTime::from_millis(1_483_234_149_123)};
        let run = |expr: Bson| eval(expr, &d).unwrap();
        assert_eq!(
            run(bson!({"$dateToParts": {"date": "$date"}})),
            Some(
                bson!({"year": 2017, "month": 1, "day": 1, "hour": 1, "minute": 29, "second": 9, "millisecond": 123})
            )
        );
        assert_eq!(
            run(bson!({"$dateToParts": {"date": "$date", "iso8601": true}})),
            Some(
                bson!({"isoWeekYear": 2016, "isoWeek": 52, "isoDayOfWeek": 7, "hour": 1, "minute": 29, "second": 9, "millisecond": 123})
            )
        );
        assert_eq!(
            run(bson!({"$dateToParts": {"date": "$date", "timezone": "America/New_York"}})),
            Some(
                bson!({"year": 2016, "month": 12, "day": 31, "hour": 20, "minute": 29, "second": 9, "millisecond": 123})
            )
        );
        let null = Some(Bson::Null);
        assert_eq!(run(bson!({"$dateToParts": {"date": "$nope"}})), null);
        assert_eq!(
            run(bson!({"$dateToParts": {"date": "$date", "timezone": null}})),
            null
        );
        assert_eq!(
            run(bson!({"$dateToParts": {"date": "$date", "iso8601": null}})),
            null
        );
        let code = |expr: Bson| eval(expr, &d).unwrap_err().code().code();
        // The zone and the flag are checked even when the date is null.
        assert_eq!(
            code(bson!({"$dateToParts": {"date": null, "timezone": 1}})),
            40517
        );
        assert_eq!(
            code(bson!({"$dateToParts": {"date": null, "iso8601": 1}})),
            40521
        );
        assert_eq!(code(bson!({"$dateToParts": {"date": 1}})), 16006);
        assert_eq!(code(bson!({"$dateToParts": "$date"})), 40524);
        assert_eq!(
            code(bson!({"$dateToParts": {"date": "$date", "x": 1}})),
            40520
        );
        assert_eq!(code(bson!({"$dateToParts": {"timezone": "UTC"}})), 40522);
    }
}
