//! Dates to and from strings: `$dateToString` (`{date, format, timezone, onNull}`) and
//! `$dateFromString` (`{dateString, format, timezone, onError, onNull}`).

use super::date_args::{Fields, non_null, parse_fields, require_fields, to_date};
use super::{Args, Arity, Expression, Operator, Scope, object_argument, only_object};
use crate::error::{ErrorCode, MongoError, Result};
use crate::expression::datetime::{format_date, parse_date, validate_format};
use crate::expression::value::{Value, bson_type_name, is_nullish, render, type_name};
use bson::{Bson, DateTime};

pub(super) static OPERATORS: &[Operator] = &[
    Operator {
        name: "$dateFromString",
        arity: Arity::Any,
        parse: parse_date_from_string,
        eval: date_from_string,
    },
    Operator {
        name: "$dateToString",
        arity: Arity::Any,
        parse: parse_date_to_string,
        eval: date_to_string,
    },
];

const TO_STRING_FIELDS: [&str; 4] = ["date", "format", "timezone", "onNull"];

fn parse_date_to_string(
    _: &'static str,
    argument: &Bson,
    scope: &Scope,
) -> Result<Vec<Expression>> {
    let spec = only_object("$dateToString", argument, 18629)?;
    let exprs = parse_fields(spec, &TO_STRING_FIELDS, scope, |key| {
        MongoError::location(
            18534,
            format!("Unrecognized argument to $dateToString: {key}"),
        )
    })?;
    require_fields(spec, "$dateToString", &[(18628, "date")])?;
    Ok(exprs)
}

/// The format, when not null, must be a string of known specifiers, whatever the date is.
fn checked_format(
    fields: &Fields,
    field: usize,
    code: i32,
    name: &str,
    parsing: bool,
) -> Result<Value> {
    if !fields.given(field) {
        return Ok(None);
    }
    let format = fields.eval(field)?;
    match &format {
        value if is_nullish(value.as_ref()) => {}
        Some(Bson::String(text)) => validate_format(text, parsing)?,
        other => {
            return Err(MongoError::location(
                code,
                format!(
                    "{name} requires that 'format' be a string, found: {} with value {}",
                    type_name(other.as_ref()),
                    render(other.as_ref())
                ),
            ));
        }
    }
    Ok(format)
}

/// A null or missing date gives `onNull` (null without it); the format and the zone are checked
/// first. Without a format, the ISO form: with a `Z` in UTC, without one in other zones.
fn date_to_string(args: &Args) -> Result<Value> {
    let fields = Fields::new(args)?;
    let date = fields.eval(0)?;
    let format = checked_format(&fields, 1, 18533, "$dateToString", false)?;
    let zone = fields.zone(2)?;
    let Some(date) = non_null(date) else {
        return if fields.given(3) {
            fields.eval(3)
        } else {
            Ok(Some(Bson::Null))
        };
    };
    let Some(zone) = zone else {
        return Ok(Some(Bson::Null));
    };
    let format = match format {
        Some(Bson::String(format)) => format,
        _ if fields.given(1) => return Ok(Some(Bson::Null)),
        _ if zone.is_utc() => "%Y-%m-%dT%H:%M:%S.%LZ".to_string(),
        _ => "%Y-%m-%dT%H:%M:%S.%L".to_string(),
    };
    Ok(Some(Bson::String(format_date(
        &format,
        to_date(&date)?,
        &zone,
    )?)))
}

const FROM_STRING_FIELDS: [&str; 5] = ["dateString", "format", "timezone", "onError", "onNull"];

fn parse_date_from_string(
    _: &'static str,
    argument: &Bson,
    scope: &Scope,
) -> Result<Vec<Expression>> {
    let spec = object_argument(argument, 40540, || {
        format!(
            "$dateFromString only supports an object as an argument, found: {}",
            bson_type_name(argument)
        )
    })?;
    let exprs = parse_fields(spec, &FROM_STRING_FIELDS, scope, |key| {
        MongoError::location(
            40541,
            format!("Unrecognized argument to $dateFromString: {key}"),
        )
    })?;
    require_fields(spec, "$dateFromString", &[(40542, "dateString")])?;
    Ok(exprs)
}

/// A null or missing string gives `onNull`; a string that does not parse (or is not a string)
/// gives `onError`. The format and the zone are checked first, and their errors are not
/// `onError`'s.
fn date_from_string(args: &Args) -> Result<Value> {
    let fields = Fields::new(args)?;
    let text = fields.eval(0)?;
    let format = checked_format(&fields, 1, 40684, "$dateFromString", true)?;
    let zone = fields.zone(2)?;
    let Some(text) = non_null(text) else {
        return if fields.given(4) {
            fields.eval(4)
        } else {
            Ok(Some(Bson::Null))
        };
    };
    let parsed = match text {
        Bson::String(text) => match (zone, format) {
            (None, _) => return Ok(Some(Bson::Null)),
            (Some(zone), Some(Bson::String(format))) => parse_date(&text, Some(&format), &zone),
            (Some(_), _) if fields.given(1) => return Ok(Some(Bson::Null)),
            (Some(zone), _) => parse_date(&text, None, &zone),
        },
        other => Err(MongoError::new(
            ErrorCode::ConversionFailure,
            format!(
                "$dateFromString requires that 'dateString' be a string, found: {} with value {}",
                bson_type_name(&other),
                render(Some(&other))
            ),
        )),
    };
    match parsed {
        Ok(millis) => Ok(Some(Bson::DateTime(DateTime::from_millis(millis)))),
        Err(err) if fields.given(3) && err.code() == ErrorCode::ConversionFailure => fields.eval(3),
        Err(err) => Err(err),
    }
}

#[cfg(test)]
mod tests {
    use crate::expression::tests::eval;
    use bson::{Bson, DateTime, bson, doc};

    fn text(s: &str) -> Option<Bson> {
        Some(Bson::String(s.into()))
    }

    fn date(millis: i64) -> Option<Bson> {
        Some(Bson::DateTime(DateTime::from_millis(millis)))
    }

    #[test]
    fn date_to_string_manual_example() {
        // 2014-01-01T08:15:39.736Z.
        let d = doc! {"date": DateTime::from_millis(1_388_564_139_736)};
        let run = |expr: Bson| eval(expr, &d).unwrap();
        let to_string = |format: &str, zone: &str| {
            run(bson!({"$dateToString": {"format": format, "date": "$date", "timezone": zone}}))
        };
        assert_eq!(to_string("%Y-%m-%d", "UTC"), text("2014-01-01"));
        assert_eq!(to_string("%H:%M:%S:%L%z", "UTC"), text("08:15:39:736+0000"));
        assert_eq!(
            to_string("%H:%M:%S:%L%z", "America/New_York"),
            text("03:15:39:736-0500")
        );
        assert_eq!(to_string("%Z", "America/New_York"), text("-300"));
        assert_eq!(to_string("%Z", "+04:30"), text("270"));
        assert_eq!(to_string("%d %B %Y", "UTC"), text("01 January 2014"));
        assert_eq!(to_string("%b %d, %Y", "UTC"), text("Jan 01, 2014"));
        assert_eq!(
            run(bson!({"$dateToString": {"date": "$date"}})),
            text("2014-01-01T08:15:39.736Z")
        );
        assert_eq!(
            run(bson!({"$dateToString": {"date": "$date", "timezone": "+01:00"}})),
            text("2014-01-01T09:15:39.736")
        );
    }

    #[test]
    fn date_to_string_nulls_and_errors() {
        let d = doc! {"date": DateTime::from_millis(0)};
        let run = |expr: Bson| eval(expr, &d).unwrap();
        let code = |expr: Bson| eval(expr, &d).unwrap_err().code().code();
        assert_eq!(
            run(bson!({"$dateToString": {"date": "$x"}})),
            Some(Bson::Null)
        );
        assert_eq!(
            run(bson!({"$dateToString": {"date": null, "onNull": "none"}})),
            text("none")
        );
        assert_eq!(
            run(bson!({"$dateToString": {"date": "$date", "onNull": "none", "format": null}})),
            Some(Bson::Null)
        );
        assert_eq!(
            run(bson!({"$dateToString": {"date": "$date", "timezone": "$x"}})),
            Some(Bson::Null)
        );
        assert_eq!(
            run(bson!({"$dateToString": {"date": "$x", "onNull": "$x"}})),
            None
        );
        // The format is checked before a null date gives onNull.
        assert_eq!(
            code(bson!({"$dateToString": {"date": null, "format": 1}})),
            18533
        );
        assert_eq!(
            code(bson!({"$dateToString": {"date": null, "format": "%Q"}})),
            18536
        );
        assert_eq!(
            code(bson!({"$dateToString": {"date": null, "format": "%"}})),
            18535
        );
        assert_eq!(
            code(bson!({"$dateToString": {"date": null, "timezone": "Nowhere"}})),
            40485
        );
        assert_eq!(
            code(bson!({"$dateToString": {"date": "$date", "timezone": 1}})),
            40517
        );
        assert_eq!(code(bson!({"$dateToString": {"date": "x"}})), 16006);
        assert_eq!(code(bson!({"$dateToString": "$date"})), 18629);
        assert_eq!(
            code(bson!({"$dateToString": {"date": "$date", "fmt": "%Y"}})),
            18534
        );
        assert_eq!(code(bson!({"$dateToString": {"format": "%Y"}})), 18628);
        let far = doc! {"date": DateTime::from_millis(253_402_300_800_000)};
        let err = eval(bson!({"$dateToString": {"date": "$date"}}), &far).unwrap_err();
        assert_eq!(err.code().code(), 18537);
    }

    #[test]
    fn date_from_string_manual_examples() {
        let run = |expr: Bson| eval(expr, &doc! {}).unwrap();
        let from = |spec: Bson| run(bson!({"$dateFromString": spec}));
        assert_eq!(
            from(bson!({"dateString": "2017-02-08T12:10:40.787"})),
            date(1_486_555_840_787)
        );
        assert_eq!(
            from(bson!({"dateString": "2017-02-08T12:10:40.787", "timezone": "America/New_York"})),
            date(1_486_573_840_787)
        );
        assert_eq!(
            from(bson!({"dateString": "2017-02-08"})),
            date(1_486_512_000_000)
        );
        assert_eq!(
            from(bson!({"dateString": "06-15-2018", "format": "%m-%d-%Y"})),
            date(1_529_020_800_000)
        );
        assert_eq!(
            from(bson!({"dateString": "15-06-2018", "format": "%d-%m-%Y"})),
            date(1_529_020_800_000)
        );
        // The manual's logmessages collection.
        assert_eq!(
            from(bson!({"dateString": "2017-02-08", "timezone": "-05:00"})),
            date(1_486_530_000_000)
        );
        assert_eq!(
            from(bson!({"dateString": "2017-02-09", "timezone": "Europe/London"})),
            date(1_486_598_400_000)
        );
        assert_eq!(
            from(bson!({"dateString": "2017-02-09T03:35:02.055", "timezone": "+0530"})),
            date(1_486_591_502_055)
        );
        assert_eq!(
            from(bson!({"dateString": "20177-02-09T03:35:02.055", "onError": "bad"})),
            text("bad")
        );
        assert_eq!(
            from(bson!({"dateString": null, "onNull": "none"})),
            text("none")
        );
        assert_eq!(from(bson!({"dateString": "$nope"})), Some(Bson::Null));
        assert_eq!(from(bson!({"dateString": 5, "onError": 0})), Some(bson!(0)));
        assert_eq!(
            from(bson!({"dateString": "2017-02-08", "timezone": null})),
            Some(Bson::Null)
        );
        assert_eq!(
            from(bson!({"dateString": "2017-02-08", "format": null})),
            Some(Bson::Null)
        );
    }

    #[test]
    fn date_from_string_errors() {
        let code = |spec: Bson| {
            eval(bson!({"$dateFromString": spec}), &doc! {})
                .unwrap_err()
                .code()
                .code()
        };
        assert_eq!(code(bson!({"dateString": "not a date"})), 241);
        assert_eq!(code(bson!({"dateString": 5})), 241);
        assert_eq!(
            code(bson!({"dateString": "2017-02-08Z", "timezone": "Europe/Paris"})),
            241
        );
        // Format and zone errors are not onError's to catch.
        assert_eq!(
            code(bson!({"dateString": "x", "format": 5, "onError": 0})),
            40684
        );
        assert_eq!(
            code(bson!({"dateString": "x", "format": "%w", "onError": 0})),
            18536
        );
        assert_eq!(
            code(bson!({"dateString": null, "timezone": "Nowhere", "onError": 0})),
            40485
        );
        assert_eq!(code(bson!("x")), 40540);
        assert_eq!(code(bson!({"dateString": "x", "tz": 1})), 40541);
        assert_eq!(code(bson!({"format": "%Y"})), 40542);
        let operand = bson!({"$dateFromString": "x"});
        let err = eval(operand, &doc! {}).unwrap_err();
        assert_eq!(
            err.message(),
            "$dateFromString only supports an object as an argument, found: string"
        );
    }
}
