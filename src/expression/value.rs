//! Values as aggregation expressions see them: a BSON value or *missing*, with MongoDB's type
//! names, truthiness and comparison, and the way the server prints values in its messages.

use super::datetime::civil_from_days;
use super::decimal::Dec;
use crate::document::collation::Collation;
use bson::{Bson, Document};
use std::cmp::Ordering;

/// The result of evaluating an expression. `None` is MongoDB's *missing*, which is not `null`:
/// a computed field that evaluates to missing is left out of the output document.
pub type Value = Option<Bson>;

/// Missing compares as `undefined` does (below `null`), as in MongoDB's `Value::compare`.
static MISSING_FOR_COMPARISON: Bson = Bson::Undefined;

/// The type name `$type` returns and error messages use (`"missing"` for missing).
pub fn type_name(value: Option<&Bson>) -> &'static str {
    value.map_or("missing", bson_type_name)
}

pub use crate::document::types::type_name as bson_type_name;

/// Missing, `null` and `undefined`: the values most operators turn into a `null` result.
pub fn is_nullish(value: Option<&Bson>) -> bool {
    matches!(value, None | Some(Bson::Null) | Some(Bson::Undefined))
}

pub fn is_number(value: &Bson) -> bool {
    matches!(
        value,
        Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_)
    )
}

/// MongoDB's `coerceToBool`: only missing, null, undefined, false and numeric zero are false
/// (empty strings and arrays are true, and so is NaN).
pub fn truthy(value: Option<&Bson>) -> bool {
    match value {
        None | Some(Bson::Null) | Some(Bson::Undefined) => false,
        Some(Bson::Boolean(b)) => *b,
        Some(Bson::Int32(v)) => *v != 0,
        Some(Bson::Int64(v)) => *v != 0,
        Some(Bson::Double(v)) => *v != 0.0,
        Some(Bson::Decimal128(d)) => !Dec::decode(*d).is_zero(),
        Some(_) => true,
    }
}

/// Compares two values in MongoDB's order, missing sorting with `undefined`.
pub fn compare(a: Option<&Bson>, b: Option<&Bson>) -> Ordering {
    compare_collated(a, b, None)
}

/// [`compare`] with strings compared by `collation` (`None`: simple).
pub fn compare_collated(
    a: Option<&Bson>,
    b: Option<&Bson>,
    collation: Option<&Collation>,
) -> Ordering {
    crate::document::order::compare_collated(
        a.unwrap_or(&MISSING_FOR_COMPARISON),
        b.unwrap_or(&MISSING_FOR_COMPARISON),
        collation,
    )
}

/// A value as the server's `Value` prints it inside messages (`{a: 1, b: "x"}`, `MISSING`).
pub fn render(value: Option<&Bson>) -> String {
    value.map_or_else(|| "MISSING".to_string(), render_bson)
}

fn render_bson(value: &Bson) -> String {
    match value {
        Bson::Double(v) => format_double_g(*v),
        Bson::String(s) => format!("\"{s}\""),
        Bson::Document(d) => render_document(d),
        Bson::Array(items) => {
            let parts: Vec<String> = items.iter().map(render_bson).collect();
            format!("[{}]", parts.join(", "))
        }
        Bson::Int32(v) => v.to_string(),
        Bson::Int64(v) => v.to_string(),
        Bson::Boolean(b) => b.to_string(),
        Bson::Null => "null".into(),
        Bson::Undefined => "undefined".into(),
        Bson::Decimal128(d) => d.to_string(),
        Bson::ObjectId(oid) => format!("ObjectId('{oid}')"),
        Bson::DateTime(d) => format_iso_date(d.timestamp_millis()),
        other => crate::document::display::render(other),
    }
}

/// A document the way `Document::toString` prints it: `{a: 1, b: {c: "x"}}`.
pub fn render_document(doc: &Document) -> String {
    let parts: Vec<String> = doc
        .iter()
        .map(|(k, v)| format!("{k}: {}", render_bson(v)))
        .collect();
    format!("{{{}}}", parts.join(", "))
}

/// A double as a C++ stream prints it by default (`%g`, six significant digits): `1.5`, `10`,
/// `1e+20`, `3.14159`.
pub fn format_double_g(v: f64) -> String {
    if v.is_nan() {
        return "nan".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if v == 0.0 {
        return if v.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    let scientific = format!("{v:.5e}");
    let (mantissa, exponent) = split_exponent(&scientific);
    if !(-4..6).contains(&exponent) {
        format!("{}e{}", trim_fraction(mantissa), exponent_suffix(exponent))
    } else {
        let decimals = usize::try_from(5 - exponent).unwrap_or(0);
        trim_fraction(&format!("{v:.decimals$}")).to_string()
    }
}

/// A double as `fmt::format("{}")` prints it, which is what `$toString` returns: the shortest
/// digits that read back as the same double, in exponent form below 1e-4 and from 1e16 on.
pub fn format_double_shortest(v: f64) -> String {
    let scientific = format!("{:e}", v.abs());
    let (mantissa, exponent) = split_exponent(&scientific);
    let sign = if v.is_sign_negative() { "-" } else { "" };
    if !(-4..16).contains(&exponent) {
        return format!("{sign}{mantissa}e{}", exponent_suffix(exponent));
    }
    let digits: String = mantissa.chars().filter(|c| c.is_ascii_digit()).collect();
    let body = if exponent >= 0 {
        let int_len = usize::try_from(exponent).unwrap_or(0) + 1;
        if digits.len() <= int_len {
            format!("{digits}{}", "0".repeat(int_len - digits.len()))
        } else {
            format!("{}.{}", &digits[..int_len], &digits[int_len..])
        }
    } else {
        let zeros = usize::try_from(-exponent - 1).unwrap_or(0);
        format!("0.{}{digits}", "0".repeat(zeros))
    };
    format!("{sign}{body}")
}

fn split_exponent(scientific: &str) -> (&str, i32) {
    match scientific.split_once('e') {
        Some((mantissa, exponent)) => (mantissa, exponent.parse().unwrap_or(0)),
        None => (scientific, 0),
    }
}

/// C's exponent form: a sign and at least two digits (`+20`, `-05`).
fn exponent_suffix(exponent: i32) -> String {
    let sign = if exponent < 0 { '-' } else { '+' };
    format!("{sign}{:02}", exponent.unsigned_abs())
}

fn trim_fraction(number: &str) -> &str {
    if number.contains('.') {
        number.trim_end_matches('0').trim_end_matches('.')
    } else {
        number
    }
}

/// Milliseconds since the epoch as MongoDB's ISO form, `2024-01-02T03:04:05.006Z`.
pub fn format_iso_date(millis: i64) -> String {
    let (year, month, day, rest) = civil_from_millis(millis);
    let (hour, minute, second, milli) = (
        rest / 3_600_000,
        rest / 60_000 % 60,
        rest / 1000 % 60,
        rest % 1000,
    );
    format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}.{milli:03}Z")
}

/// The UTC calendar year of a date, for range checks before formatting.
pub fn year_of(millis: i64) -> i64 {
    civil_from_millis(millis).0
}

/// (year, month, day, milliseconds into the day) of a UTC instant, proleptic Gregorian.
fn civil_from_millis(millis: i64) -> (i64, u32, u32, i64) {
    let days = millis.div_euclid(86_400_000);
    let rest = millis.rem_euclid(86_400_000);
    let (year, month, day) = civil_from_days(days);
    (year, month as u32, day as u32, rest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    #[test]
    fn missing_sorts_below_null_and_equals_undefined() {
        assert_eq!(compare(None, Some(&Bson::Null)), Ordering::Less);
        assert_eq!(compare(None, Some(&Bson::Undefined)), Ordering::Equal);
        assert_eq!(compare(Some(&Bson::MinKey), None), Ordering::Less);
        assert_eq!(
            compare(Some(&Bson::Int32(1)), Some(&Bson::Double(1.0))),
            Ordering::Equal
        );
    }

    #[test]
    fn truthiness_follows_coerce_to_bool() {
        assert!(!truthy(None));
        assert!(!truthy(Some(&Bson::Null)));
        assert!(!truthy(Some(&Bson::Int64(0))));
        assert!(!truthy(Some(&Bson::Double(0.0))));
        assert!(truthy(Some(&Bson::Double(f64::NAN))));
        assert!(truthy(Some(&Bson::String(String::new()))));
        assert!(truthy(Some(&Bson::Array(vec![]))));
        assert!(!truthy(Some(&Bson::Decimal128("0.00".parse().unwrap()))));
    }

    #[test]
    fn type_names_match_the_server() {
        assert_eq!(type_name(None), "missing");
        assert_eq!(type_name(Some(&Bson::Int32(1))), "int");
        assert_eq!(type_name(Some(&Bson::Int64(1))), "long");
        assert_eq!(type_name(Some(&Bson::Document(doc! {}))), "object");
        assert_eq!(type_name(Some(&Bson::Boolean(true))), "bool");
    }

    #[test]
    fn doubles_print_like_cpp_streams() {
        assert_eq!(format_double_g(1.5), "1.5");
        assert_eq!(format_double_g(10.0), "10");
        assert_eq!(format_double_g(1e20), "1e+20");
        assert_eq!(format_double_g(1.23456789), "1.23457");
        assert_eq!(format_double_g(0.0001), "0.0001");
        assert_eq!(format_double_g(0.00001), "1e-05");
        assert_eq!(format_double_g(123456.0), "123456");
        assert_eq!(format_double_g(1234567.0), "1.23457e+06");
    }

    #[test]
    fn doubles_print_shortest_like_fmt() {
        assert_eq!(format_double_shortest(1.0), "1");
        assert_eq!(format_double_shortest(1.5), "1.5");
        assert_eq!(format_double_shortest(0.1), "0.1");
        assert_eq!(format_double_shortest(-2.25), "-2.25");
        assert_eq!(format_double_shortest(1e15), "1000000000000000");
        assert_eq!(format_double_shortest(1e16), "1e+16");
        assert_eq!(format_double_shortest(1.5e20), "1.5e+20");
        assert_eq!(format_double_shortest(0.0001), "0.0001");
        assert_eq!(format_double_shortest(0.00001), "1e-05");
        assert_eq!(format_double_shortest(1.0 / 3.0), "0.3333333333333333");
    }

    #[test]
    fn values_render_like_server_messages() {
        assert_eq!(render(None), "MISSING");
        assert_eq!(
            render(Some(&Bson::Document(doc! {"_id": 1, "a": {"b": 10}}))),
            "{_id: 1, a: {b: 10}}"
        );
        assert_eq!(
            render(Some(&Bson::Array(vec![
                Bson::Int32(1),
                Bson::String("x".into())
            ]))),
            "[1, \"x\"]"
        );
    }

    #[test]
    fn dates_format_as_iso() {
        assert_eq!(format_iso_date(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            format_iso_date(1_522_169_931_538),
            "2018-03-27T16:58:51.538Z"
        );
        assert_eq!(format_iso_date(-1), "1969-12-31T23:59:59.999Z");
        assert_eq!(format_iso_date(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(year_of(253_402_300_800_000), 10000);
    }
}
