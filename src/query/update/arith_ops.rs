//! The arithmetic and bitwise operators: `$inc` and `$mul` with MongoDB's numeric promotions and
//! overflow errors, and `$bit` (`and`, `or`, `xor`).

use super::apply::{Outcome, identical};
use super::{BitOp, Op};
use crate::error::{MongoError, Result};
use crate::query::values::{format_g, is_number, not_implemented, type_name};
use bson::Bson;

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
                None => Outcome::Set(if is_inc { v.clone() } else { zero_like(v) }),
                Some(old) => {
                    if !is_number(old) {
                        return Err(MongoError::type_mismatch(format!(
                            "Cannot apply {name} to a value of non-numeric type. {id_text} has the field '{field}' of non-numeric type {}",
                            type_name(old)
                        )));
                    }
                    let Some(result) = arithmetic(old, v, is_inc)? else {
                        return Err(MongoError::bad_value(format!(
                            "Failed to apply {name} operations to current value ({}) for document {id_text}",
                            debug_number(old)
                        )));
                    };
                    set_if_changed(result)
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

fn zero_like(v: &Bson) -> Bson {
    match v {
        Bson::Int32(_) => Bson::Int32(0),
        Bson::Int64(_) => Bson::Int64(0),
        Bson::Decimal128(_) => {
            Bson::Decimal128("0".parse().unwrap_or(bson::Decimal128::from_bytes([0; 16])))
        }
        _ => Bson::Double(0.0),
    }
}

/// `$inc`/`$mul` arithmetic with MongoDB's promotions: int32 overflow widens to int64, any
/// double makes a double; `None` when an int64 result overflows (MongoDB refuses the update).
fn arithmetic(a: &Bson, b: &Bson, add: bool) -> Result<Option<Bson>> {
    use Bson::{Decimal128, Double, Int32, Int64};
    Ok(match (a, b) {
        (Decimal128(_), _) | (_, Decimal128(_)) => {
            return Err(not_implemented(
                "decimal128 arithmetic in $inc and $mul is not supported yet",
            ));
        }
        (Double(_), _) | (_, Double(_)) => {
            let (x, y) = (
                crate::query::values::as_f64(a),
                crate::query::values::as_f64(b),
            );
            Some(Double(if add { x + y } else { x * y }))
        }
        (Int32(x), Int32(y)) => {
            let narrow = if add {
                x.checked_add(*y)
            } else {
                x.checked_mul(*y)
            };
            Some(match narrow {
                Some(v) => Int32(v),
                None => Int64(if add {
                    i64::from(*x) + i64::from(*y)
                } else {
                    i64::from(*x) * i64::from(*y)
                }),
            })
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
            result.map(Int64)
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
