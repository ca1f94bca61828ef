//! Exponential and logarithmic operators: `$exp`, `$ln`, `$log`, `$log10`, `$pow`, `$sqrt`,
//! and `$rand`.

use super::{Args, Expression, Scope};
use super::{Arity, Operator, nary};
use crate::error::{MongoError, Result};
use crate::expression::decimal::Dec;
use crate::expression::decimal_math;
use crate::expression::numeric::{int_or_long, to_dec, to_f64};
use crate::expression::value::{Value, bson_type_name, format_double_g, is_nullish, is_number};
use bson::Bson;

pub(super) static OPERATORS: &[Operator] = &[
    Operator {
        name: "$exp",
        arity: Arity::Exactly(1),
        parse: nary,
        eval: exp,
    },
    Operator {
        name: "$ln",
        arity: Arity::Exactly(1),
        parse: nary,
        eval: ln,
    },
    Operator {
        name: "$log",
        arity: Arity::Exactly(2),
        parse: nary,
        eval: log,
    },
    Operator {
        name: "$log10",
        arity: Arity::Exactly(1),
        parse: nary,
        eval: log10,
    },
    Operator {
        name: "$pow",
        arity: Arity::Exactly(2),
        parse: nary,
        eval: pow,
    },
    Operator {
        name: "$rand",
        arity: Arity::Exactly(0),
        parse: parse_rand,
        eval: rand,
    },
    Operator {
        name: "$sqrt",
        arity: Arity::Exactly(1),
        parse: nary,
        eval: sqrt,
    },
];

pub(super) fn decimal(value: Dec) -> Value {
    Some(Bson::Decimal128(value.encode()))
}

/// The argument of a one-number operator: `None` when it is null or missing (the result is
/// then null), an error when it is not a number.
pub(super) fn numeric_arg(name: &str, args: &Args) -> Result<Option<Bson>> {
    match args.eval(0)? {
        value if is_nullish(value.as_ref()) => Ok(None),
        Some(value) if is_number(&value) => Ok(Some(value)),
        Some(other) => Err(MongoError::location(
            28765,
            format!(
                "{name} only supports numeric types, not {}",
                bson_type_name(&other)
            ),
        )),
        None => Ok(None),
    }
}

/// `$exp` is a double, or a decimal for a decimal argument.
pub fn exp(args: &Args) -> Result<Value> {
    Ok(match numeric_arg("$exp", args)? {
        None => Some(Bson::Null),
        Some(Bson::Decimal128(d)) => decimal(decimal_math::exp(Dec::decode(d))),
        Some(other) => Some(Bson::Double(to_f64(&other).exp())),
    })
}

/// A logarithm's argument as a double, which must be positive (or NaN).
fn positive(value: f64, code: i32, what: &str) -> Result<f64> {
    if value > 0.0 || value.is_nan() {
        Ok(value)
    } else {
        Err(MongoError::location(
            code,
            format!(
                "{what} must be a positive number, but is {}",
                format_double_g(value)
            ),
        ))
    }
}

pub fn ln(args: &Args) -> Result<Value> {
    let Some(value) = numeric_arg("$ln", args)? else {
        return Ok(Some(Bson::Null));
    };
    if let Bson::Decimal128(d) = value {
        let d = Dec::decode(d);
        if d.is_positive() {
            return Ok(decimal(decimal_math::ln(d)));
        }
    }
    let x = positive(to_f64(&value), 28766, "$ln's argument")?;
    Ok(Some(Bson::Double(x.ln())))
}

pub fn log10(args: &Args) -> Result<Value> {
    let Some(value) = numeric_arg("$log10", args)? else {
        return Ok(Some(Bson::Null));
    };
    if let Bson::Decimal128(d) = value {
        let d = Dec::decode(d);
        if d.is_positive() {
            return Ok(decimal(decimal_math::log10(d)));
        }
    }
    let x = positive(to_f64(&value), 28761, "$log10's argument")?;
    Ok(Some(Bson::Double(x.log10())))
}

/// `$log: [number, base]`: both arguments are evaluated before either is checked.
pub fn log(args: &Args) -> Result<Value> {
    let (arg, base) = args.eval_pair()?;
    let (Some(arg), Some(base)) = (arg, base) else {
        return Ok(Some(Bson::Null));
    };
    if is_nullish(Some(&arg)) || is_nullish(Some(&base)) {
        return Ok(Some(Bson::Null));
    }
    for (value, code, what) in [(&arg, 28756, "argument"), (&base, 28757, "base")] {
        if !is_number(value) {
            return Err(MongoError::location(
                code,
                format!(
                    "$log's {what} must be numeric, not {}",
                    bson_type_name(value)
                ),
            ));
        }
    }
    if matches!(arg, Bson::Decimal128(_)) || matches!(base, Bson::Decimal128(_)) {
        let (a, b) = (to_dec(&arg), to_dec(&base));
        if a.is_positive() && b.is_positive() && !b.minus(Dec::from_i64(1)).is_zero() {
            return Ok(decimal(decimal_math::ln(a).divided_by(decimal_math::ln(b))));
        }
    }
    let a = positive(to_f64(&arg), 28758, "$log's argument")?;
    let b = to_f64(&base);
    if !((b > 0.0 && b != 1.0) || b.is_nan()) {
        return Err(MongoError::location(
            28759,
            format!(
                "$log's base must be a positive number not equal to 1, but is {}",
                format_double_g(b)
            ),
        ));
    }
    Ok(Some(Bson::Double(a.ln() / b.ln())))
}

pub fn sqrt(args: &Args) -> Result<Value> {
    let Some(value) = numeric_arg("$sqrt", args)? else {
        return Ok(Some(Bson::Null));
    };
    let negative =
        || MongoError::location(28714, "$sqrt's argument must be greater than or equal to 0");
    if let Bson::Decimal128(d) = value {
        let d = Dec::decode(d);
        if d.is_negative() {
            return Err(negative());
        }
        return Ok(decimal(decimal_math::sqrt(d)));
    }
    let x = to_f64(&value);
    if x < 0.0 {
        return Err(negative());
    }
    Ok(Some(Bson::Double(x.sqrt())))
}

/// `$pow`: a decimal if either side is, a double if either side is, otherwise the exact integer
/// power as an int (when both are ints and it fits) or a long, falling back to a double when it
/// does not fit a long.
pub fn pow(args: &Args) -> Result<Value> {
    let (base, exponent) = args.eval_pair()?;
    let (Some(base), Some(exponent)) = (base, exponent) else {
        return Ok(Some(Bson::Null));
    };
    if is_nullish(Some(&base)) || is_nullish(Some(&exponent)) {
        return Ok(Some(Bson::Null));
    }
    for (value, code, what) in [(&base, 28762, "base"), (&exponent, 28763, "exponent")] {
        if !is_number(value) {
            return Err(MongoError::location(
                code,
                format!(
                    "$pow's {what} must be numeric, not {}",
                    bson_type_name(value)
                ),
            ));
        }
    }
    let zero_to_negative = || {
        MongoError::location(
            28764,
            "$pow cannot take a base of 0 and a negative exponent",
        )
    };
    if matches!(base, Bson::Decimal128(_)) || matches!(exponent, Bson::Decimal128(_)) {
        let (b, e) = (to_dec(&base), to_dec(&exponent));
        if b.is_zero() && e.is_negative() {
            return Err(zero_to_negative());
        }
        return Ok(decimal(decimal_math::pow(b, e)));
    }
    let (b, e) = (to_f64(&base), to_f64(&exponent));
    if b == 0.0 && e < 0.0 {
        return Err(zero_to_negative());
    }
    if matches!(base, Bson::Double(_)) || matches!(exponent, Bson::Double(_)) {
        return Ok(Some(Bson::Double(b.powf(e))));
    }
    let any_long = matches!(base, Bson::Int64(_)) || matches!(exponent, Bson::Int64(_));
    let format = |result: i64| {
        if any_long {
            Bson::Int64(result)
        } else {
            int_or_long(result)
        }
    };
    let (b, e) = (integer(&base), integer(&exponent));
    let exact = match b {
        0 => Some(i64::from(e == 0)),
        1 => Some(1),
        -1 => Some(if e % 2 == 0 { 1 } else { -1 }),
        _ => u32::try_from(e).ok().and_then(|e| b.checked_pow(e)),
    };
    Ok(Some(match exact {
        Some(result) => format(result),
        None => Bson::Double((b as f64).powf(e as f64)),
    }))
}

fn integer(value: &Bson) -> i64 {
    match value {
        Bson::Int32(v) => i64::from(*v),
        Bson::Int64(v) => *v,
        _ => 0,
    }
}

/// `{$rand: {}}` (or `[]`): no arguments.
pub fn parse_rand(_name: &'static str, argument: &Bson, _scope: &Scope) -> Result<Vec<Expression>> {
    match argument {
        Bson::Document(d) if d.is_empty() => Ok(Vec::new()),
        Bson::Array(a) if a.is_empty() => Ok(Vec::new()),
        Bson::Document(_) | Bson::Array(_) => Err(MongoError::location(
            3040501,
            "$rand does not currently accept arguments",
        )),
        _ => Err(MongoError::location(
            10065,
            "invalid parameter: expected an object ($rand)",
        )),
    }
}

/// A uniformly distributed double in [0, 1), from 53 random bits.
pub fn rand(_args: &Args) -> Result<Value> {
    let bytes = uuid::Uuid::new_v4().into_bytes();
    // Bytes 6 and 8 hold the version and variant; bytes 9 to 15 are all random.
    let mut bits = [0u8; 8];
    bits[..7].copy_from_slice(&bytes[9..]);
    let bits = u64::from_le_bytes(bits) >> 3;
    Ok(Some(Bson::Double(bits as f64 / (1u64 << 53) as f64)))
}

#[cfg(test)]
mod tests {
    use crate::expression::tests::{
        decimal as dec, error_code as code, eval, shown, value_of as ok,
    };
    use bson::{Bson, bson, doc};

    #[test]
    fn exponentials_and_logarithms() {
        assert_eq!(ok(bson!({"$exp": 0})), Bson::Double(1.0));
        assert_eq!(ok(bson!({"$exp": 1})), Bson::Double(std::f64::consts::E));
        assert_eq!(ok(bson!({"$ln": 1})), Bson::Double(0.0));
        assert_eq!(ok(bson!({"$ln": std::f64::consts::E})), Bson::Double(1.0));
        assert_eq!(ok(bson!({"$log10": 100})), Bson::Double(2.0));
        assert_eq!(ok(bson!({"$log": [100, 10]})), Bson::Double(2.0));
        assert_eq!(ok(bson!({"$log": [8, 2]})), Bson::Double(3.0));
        assert_eq!(shown(ok(bson!({"$exp": dec("0")}))), "1");
        assert_eq!(shown(ok(bson!({"$log10": dec("1000")}))), "3");
        assert_eq!(shown(ok(bson!({"$log": [dec("100"), 10]}))), "2");
        assert!(matches!(ok(bson!({"$ln": dec("10")})), Bson::Decimal128(_)));
        assert!(ok(bson!({"$ln": f64::NAN})).as_f64().unwrap().is_nan());
        assert_eq!(ok(bson!({"$ln": null})), Bson::Null);
        assert_eq!(ok(bson!({"$log": ["$missing", "x"]})), Bson::Null);
        let err = eval(bson!({"$ln": 0}), &doc! {}).unwrap_err();
        assert_eq!(
            (err.code().code(), err.message()),
            (28766, "$ln's argument must be a positive number, but is 0")
        );
        assert_eq!(code(bson!({"$ln": dec("-1")})), 28766);
        assert_eq!(code(bson!({"$log10": -1})), 28761);
        assert_eq!(code(bson!({"$log": ["a", 2]})), 28756);
        assert_eq!(code(bson!({"$log": [2, "a"]})), 28757);
        assert_eq!(code(bson!({"$log": [-1, 10]})), 28758);
        let err = eval(bson!({"$log": [10, 1]}), &doc! {}).unwrap_err();
        assert_eq!(
            (err.code().code(), err.message()),
            (
                28759,
                "$log's base must be a positive number not equal to 1, but is 1"
            )
        );
        assert_eq!(code(bson!({"$log": [dec("10"), dec("-2")]})), 28759);
        assert_eq!(code(bson!({"$exp": "x"})), 28765);
    }

    #[test]
    fn square_roots() {
        assert_eq!(ok(bson!({"$sqrt": 25})), Bson::Double(5.0));
        assert_eq!(ok(bson!({"$sqrt": 2.25})), Bson::Double(1.5));
        assert_eq!(shown(ok(bson!({"$sqrt": dec("2.25")}))), "1.5");
        assert_eq!(ok(bson!({"$sqrt": "$missing"})), Bson::Null);
        let err = eval(bson!({"$sqrt": -1}), &doc! {}).unwrap_err();
        assert_eq!(
            (err.code().code(), err.message()),
            (28714, "$sqrt's argument must be greater than or equal to 0")
        );
        assert_eq!(code(bson!({"$sqrt": dec("-0.5")})), 28714);
        assert_eq!(shown(ok(bson!({"$sqrt": dec("-0")}))), "-0");
    }

    #[test]
    fn powers_keep_the_narrowest_exact_type() {
        assert_eq!(ok(bson!({"$pow": [5, 0]})), Bson::Int32(1));
        assert_eq!(ok(bson!({"$pow": [5, 2]})), Bson::Int32(25));
        assert_eq!(ok(bson!({"$pow": [5, -2]})), Bson::Double(0.04));
        assert_eq!(ok(bson!({"$pow": [-1, -3]})), Bson::Int32(-1));
        assert_eq!(ok(bson!({"$pow": [2, 31]})), Bson::Int64(2_147_483_648));
        assert_eq!(ok(bson!({"$pow": [2_i64, 2]})), Bson::Int64(4));
        assert_eq!(ok(bson!({"$pow": [-2, 63]})), Bson::Int64(i64::MIN));
        assert_eq!(
            ok(bson!({"$pow": [2, 64]})),
            Bson::Double(18_446_744_073_709_551_616.0)
        );
        assert_eq!(ok(bson!({"$pow": [2.0, 3]})), Bson::Double(8.0));
        assert!(ok(bson!({"$pow": [-5, 0.5]})).as_f64().unwrap().is_nan());
        assert_eq!(shown(ok(bson!({"$pow": [dec("2"), 10]}))), "1024");
        assert_eq!(shown(ok(bson!({"$pow": [dec("1.5"), 2]}))), "2.25");
        assert_eq!(ok(bson!({"$pow": [null, 2]})), Bson::Null);
        let err = eval(bson!({"$pow": [0, -1]}), &doc! {}).unwrap_err();
        assert_eq!(
            (err.code().code(), err.message()),
            (
                28764,
                "$pow cannot take a base of 0 and a negative exponent"
            )
        );
        assert_eq!(code(bson!({"$pow": [dec("0"), -1]})), 28764);
        assert_eq!(code(bson!({"$pow": ["2", 1]})), 28762);
        assert_eq!(code(bson!({"$pow": [2, "1"]})), 28763);
        assert_eq!(code(bson!({"$pow": [2]})), 16020);
    }

    #[test]
    fn rand_is_a_double_in_the_unit_interval() {
        let values: Vec<f64> = (0..50)
            .map(|_| ok(bson!({"$rand": {}})).as_f64().unwrap())
            .collect();
        assert!(values.iter().all(|v| (0.0..1.0).contains(v)));
        assert!(values.windows(2).any(|w| w[0] != w[1]));
        assert!(ok(bson!({"$rand": []})).as_f64().is_some());
        assert_eq!(code(bson!({"$rand": {"a": 1}})), 3040501);
        assert_eq!(code(bson!({"$rand": [1]})), 3040501);
        assert_eq!(code(bson!({"$rand": 1})), 10065);
    }
}
