//! Numeric comparison across int32, int64, double and decimal128 by exact value, as MongoDB
//! compares numbers (NaN sorts below every other number and equals every NaN; -0 == 0), and
//! decimal128's IEEE 754-2008 BID encoding: the crate's one Decimal128 codec (the expression
//! layer's decimal arithmetic encodes and decodes through it).
//!
//! - [`Number`] (here): a number in any of BSON's four numeric types.
//! - `decimal`: decimal128's BID encoding, decoded into [`DecimalParts`] and back.
//! - `compare`: exact comparison ([`compare()`], [`compare_doubles`], [`floor_f64_of_abs`]).

mod compare;
mod decimal;

pub use compare::{compare, compare_doubles, floor_f64_of_abs};
pub use decimal::{
    DECIMAL128_EXPONENT_BIAS, DECIMAL128_MAX_COEFFICIENT, DECIMAL128_MAX_EXPONENT,
    DECIMAL128_MIN_EXPONENT, DecimalParts,
};

use bson::{Bson, Decimal128};

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

    /// The nearest double (exact for every int32 and every double; decimals are correctly
    /// rounded, overflowing to ±Infinity and underflowing to ±0).
    pub fn to_f64(self) -> f64 {
        match self {
            Number::Int(v) => v as f64,
            Number::Double(v) => v,
            Number::Decimal(d) => DecimalParts::from_decimal128(d).to_f64(),
        }
    }

    pub fn is_nan(self) -> bool {
        match self {
            Number::Int(_) => false,
            Number::Double(v) => v.is_nan(),
            Number::Decimal(d) => {
                matches!(DecimalParts::from_decimal128(d), DecimalParts::NaN { .. })
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests;
