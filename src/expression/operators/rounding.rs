//! Rounding operators: `$ceil`, `$floor`, `$round`, `$trunc`, which round in decimal as the
//! server does (doubles through a 34-digit decimal, integers only for negative places).

use super::math::{decimal, numeric_arg};
use super::{Args, Expression, Scope};
use super::{Arity, Operator, nary};
use crate::error::{MongoError, Result};
use crate::expression::decimal::{Dec, Rounding};
use crate::expression::numeric::int_or_long;
use crate::expression::value::{Value, bson_type_name, is_nullish, is_number};
use bson::Bson;

pub(super) static OPERATORS: &[Operator] = &[
    Operator {
        name: "$ceil",
        arity: Arity::Exactly(1),
        parse: nary,
        eval: ceil,
    },
    Operator {
        name: "$floor",
        arity: Arity::Exactly(1),
        parse: nary,
        eval: floor,
    },
    Operator {
        name: "$round",
        arity: Arity::Any,
        parse: parse_one_or_two,
        eval: round,
    },
    Operator {
        name: "$trunc",
        arity: Arity::Any,
        parse: parse_one_or_two,
        eval: trunc,
    },
];

/// Integers are left as they are; decimals round to an integral value with exponent zero.
fn ceil_or_floor(name: &str, args: &Args, up: bool) -> Result<Value> {
    let Some(value) = numeric_arg(name, args)? else {
        return Ok(Some(Bson::Null));
    };
    Ok(match value {
        Bson::Double(v) => Some(Bson::Double(if up { v.ceil() } else { v.floor() })),
        Bson::Decimal128(d) => {
            let mode = if up {
                Rounding::TowardPositive
            } else {
                Rounding::TowardNegative
            };
            decimal(Dec::decode(d).quantize(0, mode))
        }
        integer => Some(integer),
    })
}

pub fn ceil(args: &Args) -> Result<Value> {
    ceil_or_floor("$ceil", args, true)
}

pub fn floor(args: &Args) -> Result<Value> {
    ceil_or_floor("$floor", args, false)
}

/// `$round` and `$trunc` take the number and an optional place.
pub fn parse_one_or_two(
    name: &'static str,
    argument: &Bson,
    scope: &Scope,
) -> Result<Vec<Expression>> {
    let args = nary(name, argument, scope)?;
    if !(1..=2).contains(&args.len()) {
        return Err(MongoError::location(
            28667,
            format!(
                "Expression {name} takes at least 1 arguments, and at most 2, but {} were passed in.",
                args.len()
            ),
        ));
    }
    Ok(args)
}

/// Rounds to `place` digits after the point (before it when negative) in decimal, whatever the
/// input type: doubles go through a 34-digit decimal, integers change only for negative places.
fn round_or_trunc(name: &str, args: &Args, mode: Rounding) -> Result<Value> {
    let value = args.eval(0)?;
    let Some(value) = value.filter(|v| !is_nullish(Some(v))) else {
        return Ok(Some(Bson::Null));
    };
    if !is_number(&value) {
        return Err(MongoError::location(
            51081,
            format!(
                "{name} only supports numeric types, not {}",
                bson_type_name(&value)
            ),
        ));
    }
    let mut place = 0i64;
    if args.len() > 1 {
        let precision = args.eval(1)?;
        let Some(precision) = precision.filter(|v| !is_nullish(Some(v))) else {
            return Ok(Some(Bson::Null));
        };
        place = coerce_to_long(&precision)?;
        if !is_int32_integral(&precision) {
            return Err(MongoError::location(
                51082,
                format!("precision argument to  {name} must be a integral value"),
            ));
        }
        if !(-20..=100).contains(&place) {
            return Err(MongoError::location(
                51083,
                format!(
                    "cannot apply {name} with precision value {place} value must be in [-20, 100]"
                ),
            ));
        }
    }
    let quantum = -(place as i32);
    Ok(Some(match value {
        Bson::Decimal128(d) => match Dec::decode(d) {
            inf @ Dec::Inf { .. } => Bson::Decimal128(inf.encode()),
            d => Bson::Decimal128(d.quantize(quantum, mode).encode()),
        },
        Bson::Double(v) if v.is_infinite() => Bson::Double(v),
        Bson::Double(v) => Bson::Double(Dec::from_f64(v, 34).quantize(quantum, mode).to_f64()),
        integer if place >= 0 => integer,
        integer => {
            let n = crate::expression::numeric::to_i64(&integer);
            let rounded = Dec::from_i64(n)
                .quantize(quantum, mode)
                .to_i64_exact()
                .ok_or_else(|| {
                    MongoError::location(
                        51080,
                        format!(
                            "invalid conversion from Decimal128 result in {name} resulting from arguments: [{n}, {place}]"
                        ),
                    )
                })?;
            if matches!(integer, Bson::Int64(_)) {
                Bson::Int64(rounded)
            } else {
                int_or_long(rounded)
            }
        }
    }))
}

/// `Value::coerceToLong`: numbers truncate, anything else is an error.
fn coerce_to_long(value: &Bson) -> Result<i64> {
    match value {
        Bson::Int32(v) => Ok(i64::from(*v)),
        Bson::Int64(v) => Ok(*v),
        Bson::Double(v) => Ok(*v as i64),
        Bson::Decimal128(d) => Ok(Dec::decode(*d).to_i64_truncated().unwrap_or(i64::MIN)),
        other => Err(MongoError::location(
            16004,
            format!(
                "can't convert from BSON type {} to long",
                bson_type_name(other)
            ),
        )),
    }
}

/// `Value::integral`: a number whose value is an int32.
fn is_int32_integral(value: &Bson) -> bool {
    match value {
        Bson::Int32(_) => true,
        Bson::Int64(v) => i32::try_from(*v).is_ok(),
        Bson::Double(v) => {
            v.fract() == 0.0 && *v >= f64::from(i32::MIN) && *v <= f64::from(i32::MAX)
        }
        Bson::Decimal128(d) => Dec::decode(*d)
            .to_i64_exact()
            .is_some_and(|v| i32::try_from(v).is_ok()),
        _ => false,
    }
}

pub fn round(args: &Args) -> Result<Value> {
    round_or_trunc("$round", args, Rounding::HalfEven)
}

pub fn trunc(args: &Args) -> Result<Value> {
    round_or_trunc("$trunc", args, Rounding::TowardZero)
}

#[cfg(test)]
mod tests {
    use crate::expression::tests::{
        decimal as dec, error_code as code, eval, shown, value_of as ok,
    };
    use bson::{Bson, bson, doc};

    #[test]
    fn ceil_and_floor() {
        for (v, c, f) in [(9.25, 10.0, 9.0), (8.73, 9.0, 8.0), (-45.39, -45.0, -46.0)] {
            assert_eq!(ok(bson!({"$ceil": v})), Bson::Double(c));
            assert_eq!(ok(bson!({"$floor": v})), Bson::Double(f));
        }
        assert_eq!(ok(bson!({"$ceil": 7})), Bson::Int32(7));
        assert_eq!(ok(bson!({"$floor": 7_i64})), Bson::Int64(7));
        assert_eq!(shown(ok(bson!({"$ceil": dec("1.25")}))), "2");
        assert_eq!(shown(ok(bson!({"$floor": dec("-1.25")}))), "-2");
        assert_eq!(shown(ok(bson!({"$floor": dec("1.5E+3")}))), "1500");
        assert_eq!(ok(bson!({"$ceil": "$missing"})), Bson::Null);
        let err = eval(bson!({"$floor": "x"}), &doc! {}).unwrap_err();
        assert_eq!(
            (err.code().code(), err.message()),
            (28765, "$floor only supports numeric types, not string")
        );
    }

    #[test]
    fn round_and_trunc_documented_examples() {
        let cases = [
            (19.25, 19.2, 20.0, 19.0, 19.2, 10.0),
            (28.73, 28.7, 30.0, 29.0, 28.7, 20.0),
            (34.32, 34.3, 30.0, 34.0, 34.3, 30.0),
            (-45.39, -45.4, -50.0, -45.0, -45.3, -40.0),
        ];
        for (v, round1, round_minus1, round0, trunc1, trunc_minus1) in cases {
            assert_eq!(ok(bson!({"$round": [v, 1]})), Bson::Double(round1));
            assert_eq!(ok(bson!({"$round": [v, -1]})), Bson::Double(round_minus1));
            assert_eq!(ok(bson!({"$round": v})), Bson::Double(round0));
            assert_eq!(ok(bson!({"$trunc": [v, 1]})), Bson::Double(trunc1));
            assert_eq!(ok(bson!({"$trunc": [v, -1]})), Bson::Double(trunc_minus1));
        }
    }

    #[test]
    fn round_is_half_to_even_and_keeps_integer_types() {
        assert_eq!(ok(bson!({"$round": 2.5})), Bson::Double(2.0));
        assert_eq!(ok(bson!({"$round": 3.5})), Bson::Double(4.0));
        assert_eq!(ok(bson!({"$round": -2.5})), Bson::Double(-2.0));
        assert_eq!(ok(bson!({"$round": [1234, 2]})), Bson::Int32(1234));
        assert_eq!(ok(bson!({"$round": [1250, -2]})), Bson::Int32(1200));
        assert_eq!(ok(bson!({"$round": [1350, -2]})), Bson::Int32(1400));
        assert_eq!(ok(bson!({"$trunc": [1299_i64, -2]})), Bson::Int64(1200));
        assert_eq!(
            ok(bson!({"$round": [2_147_483_647, -1]})),
            Bson::Int64(2_147_483_650)
        );
        assert_eq!(shown(ok(bson!({"$round": [dec("1.2345"), 2]}))), "1.23");
        assert_eq!(shown(ok(bson!({"$round": [dec("1.235"), 2]}))), "1.24");
        assert_eq!(shown(ok(bson!({"$round": [dec("12"), 2]}))), "12.00");
        assert_eq!(shown(ok(bson!({"$trunc": [dec("-1.999"), 0]}))), "-1");
        assert_eq!(shown(ok(bson!({"$round": dec("Infinity")}))), "Infinity");
        assert_eq!(
            ok(bson!({"$round": [f64::INFINITY, 2]})),
            Bson::Double(f64::INFINITY)
        );
        assert_eq!(ok(bson!({"$round": [null, 2]})), Bson::Null);
        assert_eq!(ok(bson!({"$round": [1.5, "$missing"]})), Bson::Null);
        assert_eq!(
            code(bson!({"$round": [9_223_372_036_854_775_807_i64, -1]})),
            51080
        );
    }

    #[test]
    fn round_argument_errors() {
        assert_eq!(code(bson!({"$round": ["a", 1]})), 51081);
        let err = eval(bson!({"$trunc": [1.5, 1.5]}), &doc! {}).unwrap_err();
        assert_eq!(
            (err.code().code(), err.message()),
            (
                51082,
                "precision argument to  $trunc must be a integral value"
            )
        );
        let err = eval(bson!({"$round": [1.5, 101]}), &doc! {}).unwrap_err();
        assert_eq!(
            (err.code().code(), err.message()),
            (
                51083,
                "cannot apply $round with precision value 101 value must be in [-20, 100]"
            )
        );
        assert_eq!(code(bson!({"$round": [1.5, -21]})), 51083);
        assert_eq!(code(bson!({"$round": [1.5, "x"]})), 16004);
        let err = eval(bson!({"$round": [1, 2, 3]}), &doc! {}).unwrap_err();
        assert_eq!(
            (err.code().code(), err.message()),
            (
                28667,
                "Expression $round takes at least 1 arguments, and at most 2, but 3 were passed in."
            )
        );
        assert_eq!(code(bson!({"$trunc": []})), 28667);
    }
}
