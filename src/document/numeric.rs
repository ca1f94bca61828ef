//! Numeric comparison across int32, int64, double and decimal128 by value, as MongoDB compares
//! numbers (NaN sorts below every other number and equals itself).

use bson::{Bson, Decimal128};
use std::cmp::Ordering;

/// A number in any of BSON's four numeric types.
#[derive(Clone, Copy, Debug)]
pub enum Number {
    Int(i64),
    Double(f64),
    Decimal(Decimal128),
}

impl Number {
    pub fn from_bson(value: &Bson) -> Option<Number> {
        match value {
            Bson::Int32(v) => Some(Number::Int(i64::from(*v))),
            Bson::Int64(v) => Some(Number::Int(*v)),
            Bson::Double(v) => Some(Number::Double(*v)),
            Bson::Decimal128(v) => Some(Number::Decimal(*v)),
            _ => None,
        }
    }

    /// The nearest double (exact for every int32 and every double).
    pub fn to_f64(self) -> f64 {
        match self {
            Number::Int(v) => v as f64,
            Number::Double(v) => v,
            Number::Decimal(d) => decimal_to_f64(d),
        }
    }
}

/// Compares two numbers by value.
pub fn compare(a: Number, b: Number) -> Ordering {
    match (a, b) {
        (Number::Int(x), Number::Int(y)) => x.cmp(&y),
        (Number::Int(x), Number::Double(y)) => compare_int_double(x, y),
        (Number::Double(x), Number::Int(y)) => compare_int_double(y, x).reverse(),
        (Number::Double(x), Number::Double(y)) => compare_doubles(x, y),
        // FIXME(issue 4): decimal128 compares through the nearest double here; the key-encoding
        // work replaces this with an exact comparison.
        (a, b) => compare_doubles(a.to_f64(), b.to_f64()),
    }
}

/// Doubles in MongoDB order: NaN below everything, -0.0 == 0.0.
pub fn compare_doubles(x: f64, y: f64) -> Ordering {
    match (x.is_nan(), y.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Less,
        (false, true) => Ordering::Greater,
        (false, false) => x.partial_cmp(&y).unwrap_or(Ordering::Equal),
    }
}

/// Exact comparison of an int64 with a double (no rounding of large integers).
fn compare_int_double(x: i64, y: f64) -> Ordering {
    if y.is_nan() {
        return Ordering::Greater;
    }
    // 2^63 as a double: every i64 is below it, and -2^63 is exactly representable.
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    if y >= TWO_63 {
        return Ordering::Less;
    }
    if y < -TWO_63 {
        return Ordering::Greater;
    }
    let truncated = y.trunc();
    let yi = truncated as i64;
    match x.cmp(&yi) {
        Ordering::Equal => {
            let frac = y - truncated;
            if frac > 0.0 {
                Ordering::Less
            } else if frac < 0.0 {
                Ordering::Greater
            } else {
                Ordering::Equal
            }
        }
        other => other,
    }
}

fn decimal_to_f64(d: Decimal128) -> f64 {
    let text = d.to_string();
    text.parse::<f64>().unwrap_or(f64::NAN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ints_and_doubles_compare_exactly() {
        let big = i64::MAX;
        assert_eq!(
            compare(Number::Int(big), Number::Double(big as f64)),
            Ordering::Less
        );
        assert_eq!(
            compare(Number::Int(3), Number::Double(3.0)),
            Ordering::Equal
        );
        assert_eq!(compare(Number::Int(3), Number::Double(3.5)), Ordering::Less);
        assert_eq!(
            compare(Number::Int(-3), Number::Double(-3.5)),
            Ordering::Greater
        );
        assert_eq!(
            compare(Number::Double(f64::NAN), Number::Int(i64::MIN)),
            Ordering::Less
        );
        assert_eq!(
            compare(Number::Double(-0.0), Number::Int(0)),
            Ordering::Equal
        );
    }
}
