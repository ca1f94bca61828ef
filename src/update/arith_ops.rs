//! The arithmetic and bitwise operators: `$inc` and `$mul` with MongoDB's numeric promotions
//! (`SafeNum`: int32 → int64 → double, any decimal128 makes a decimal128) and overflow errors,
//! and `$bit` (`and`, `or`, `xor`).

use super::apply::{Outcome, identical};
use super::{BitOp, Op};
use crate::document::numeric::{Number, compare};
use crate::error::{MongoError, Result};
use crate::expression::numeric::{decimal_product, decimal_sum};
use crate::query::values::{format_g, is_number, type_name};
use bson::Bson;
use std::cmp::Ordering;

/// What an arithmetic or bitwise operator does to `existing`, the value at its path.
pub(super) fn compute(
    op: &Op,
    existing: Option<&Bson>,
    field: &str,
    id_text: &str,
) -> Result<Outcome> {
    let set_if_changed = |new: Bson| match existing {
        Some(old) if identical(old, &new) => Outcome::NoOp,
        _ => Outcome::Set(new),
    };
    Ok(match op {
        Op::Inc(v) | Op::Mul(v) => {
            let is_inc = matches!(op, Op::Inc(_));
            let name = if is_inc { "$inc" } else { "$mul" };
            match existing {
                None if is_inc => Outcome::Set(v.clone()),
                // MongoDB multiplies the operand by int32 0: the operand's type, and for a
                // double or decimal its sign and exponent (`-2.5` gives `-0.0`).
                None => match arithmetic(v, &Bson::Int32(0), false) {
                    Some(zero) => Outcome::Set(zero),
                    None => return Err(MongoError::internal("a product with 0 overflowed")),
                },
                Some(old) => {
                    if !is_number(old) {
                        return Err(MongoError::type_mismatch(format!(
                            "Cannot apply {name} to a value of non-numeric type. {id_text} has the field '{field}' of non-numeric type {}",
                            type_name(old)
                        )));
                    }
                    let Some(result) = arithmetic(old, v, is_inc) else {
                        return Err(MongoError::bad_value(format!(
                            "Failed to apply {name} operations to current value ({}) for document {id_text}",
                            debug_number(old)
                        )));
                    };
                    if same_number(old, &result) {
                        Outcome::NoOp
                    } else {
                        Outcome::Set(result)
                    }
                }
            }
        }
        Op::Bit(ops) => {
            let start = match existing {
                None => Bson::Int32(0),
                Some(v @ (Bson::Int32(_) | Bson::Int64(_))) => v.clone(),
                Some(other) => {
                    let id = id_text.trim_start_matches('{').trim_end_matches('}');
                    return Err(MongoError::bad_value(format!(
                        "Cannot apply $bit to a value of non-integral type.{id} has the field {field} of non-integer type {}",
                        type_name(other)
                    )));
                }
            };
            let mut result = start;
            for (bit_op, operand) in ops {
                result = bitwise(&result, operand, *bit_op);
            }
            if existing.is_none() {
                Outcome::Set(result)
            } else {
                set_if_changed(result)
            }
        }
        _ => {
            return Err(MongoError::internal(format!(
                "not an arithmetic update operator: {op:?}"
            )));
        }
    })
}

/// MongoDB's `SafeNum::isIdentical`, which decides that `$inc`/`$mul` changed nothing: same
/// type and equal value, compared as numbers (`-0.0` equals `0.0`, decimal `1.0` equals `1.00`,
/// NaN equals nothing), so the stored value keeps its representation.
fn same_number(old: &Bson, new: &Bson) -> bool {
    match (old, new) {
        (Bson::Int32(x), Bson::Int32(y)) => x == y,
        (Bson::Int64(x), Bson::Int64(y)) => x == y,
        (Bson::Double(x), Bson::Double(y)) => x == y,
        (Bson::Decimal128(x), Bson::Decimal128(y)) => {
            let (x, y) = (Number::Decimal(*x), Number::Decimal(*y));
            !x.is_nan() && !y.is_nan() && compare(x, y) == Ordering::Equal
        }
        _ => false,
    }
}

/// `$inc`/`$mul` arithmetic with MongoDB's promotions: any decimal128 makes a decimal128
/// (doubles rounded to 15 digits first, the result rounded half to even), otherwise int32
/// overflow widens to int64 and any double makes a double; `None` when an int64 result
/// overflows (MongoDB refuses the update).
fn arithmetic(a: &Bson, b: &Bson, add: bool) -> Option<Bson> {
    use Bson::{Decimal128, Double, Int32, Int64};
    Some(match (a, b) {
        (Decimal128(_), _) | (_, Decimal128(_)) => Decimal128(if add {
            decimal_sum(a, b)
        } else {
            decimal_product(a, b)
        }),
        (Double(_), _) | (_, Double(_)) => {
            let (x, y) = (
                crate::query::values::as_f64(a),
                crate::query::values::as_f64(b),
            );
            Double(if add { x + y } else { x * y })
        }
        (Int32(x), Int32(y)) => {
            let narrow = if add {
                x.checked_add(*y)
            } else {
                x.checked_mul(*y)
            };
            match narrow {
                Some(v) => Int32(v),
                None => Int64(if add {
                    i64::from(*x) + i64::from(*y)
                } else {
                    i64::from(*x) * i64::from(*y)
                }),
            }
        }
        _ => {
            let as_i64 = |v: &Bson| match v {
                Int32(n) => i64::from(*n),
                Int64(n) => *n,
                _ => 0,
            };
            let (x, y) = (as_i64(a), as_i64(b));
            let result = if add {
                x.checked_add(y)
            } else {
                x.checked_mul(y)
            };
            Int64(result?)
        }
    })
}

/// MongoDB's `SafeNum::debugString`.
fn debug_number(v: &Bson) -> String {
    match v {
        Bson::Int32(n) => format!("(NumberInt){n}"),
        Bson::Int64(n) => format!("(NumberLong){n}"),
        Bson::Double(d) => format!("(NumberDouble){}", format_g(*d, 6)),
        Bson::Decimal128(d) => format!("(NumberDecimal){d}"),
        other => crate::query::values::render(other),
    }
}

fn bitwise(a: &Bson, b: &Bson, op: BitOp) -> Bson {
    let apply32 = |x: i32, y: i32| match op {
        BitOp::And => x & y,
        BitOp::Or => x | y,
        BitOp::Xor => x ^ y,
    };
    let apply64 = |x: i64, y: i64| match op {
        BitOp::And => x & y,
        BitOp::Or => x | y,
        BitOp::Xor => x ^ y,
    };
    match (a, b) {
        (Bson::Int32(x), Bson::Int32(y)) => Bson::Int32(apply32(*x, *y)),
        _ => {
            let as_i64 = |v: &Bson| match v {
                Bson::Int32(n) => i64::from(*n),
                Bson::Int64(n) => *n,
                _ => 0,
            };
            Bson::Int64(apply64(as_i64(a), as_i64(b)))
        }
    }
}
