//! Decimal128's IEEE 754-2008 BID encoding: decoding into sign, coefficient and exponent (and
//! NaN/Infinity), canonical encoding back, and correctly rounded conversion to a double.

use bson::Decimal128;

/// Offset between the stored exponent field and the exponent of a decimal128.
pub const DECIMAL128_EXPONENT_BIAS: i32 = 6176;
/// The smallest exponent a decimal128 can carry.
pub const DECIMAL128_MIN_EXPONENT: i32 = -DECIMAL128_EXPONENT_BIAS;
/// The largest exponent a canonical decimal128 can carry.
pub const DECIMAL128_MAX_EXPONENT: i32 = 6111;
/// 10^34 - 1: coefficients above it are non-canonical and read as zero.
pub const DECIMAL128_MAX_COEFFICIENT: u128 = 10u128.pow(34) - 1;

const COEFFICIENT_BITS: u32 = 113;
const EXPONENT_MASK: u128 = 0x3fff;

/// A decoded decimal128: its value is `(-1)^negative * coefficient * 10^exponent`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecimalParts {
    NaN {
        negative: bool,
        signaling: bool,
    },
    Infinity {
        negative: bool,
    },
    /// `coefficient` is at most [`DECIMAL128_MAX_COEFFICIENT`]; zero keeps its sign and exponent
    /// (they do not change its value).
    Finite {
        negative: bool,
        coefficient: u128,
        exponent: i32,
    },
}

impl DecimalParts {
    /// Decodes the BID encoding (the bytes are little-endian, as BSON stores them).
    pub fn from_decimal128(d: Decimal128) -> DecimalParts {
        let bits = u128::from_le_bytes(d.bytes());
        let negative = bits >> 127 == 1;
        let combination = (bits >> 122) & 0x1f;
        if combination == 0b11111 {
            return DecimalParts::NaN {
                negative,
                signaling: (bits >> 121) & 1 == 1,
            };
        }
        if combination == 0b11110 {
            return DecimalParts::Infinity { negative };
        }
        if (bits >> 125) & 0b11 == 0b11 {
            // The second coefficient form has an implicit `100` prefix, so every coefficient it
            // can hold is at least 2^113 > 10^34 - 1: non-canonical, hence zero.
            let exponent = ((bits >> 111) & EXPONENT_MASK) as i32 - DECIMAL128_EXPONENT_BIAS;
            return DecimalParts::Finite {
                negative,
                coefficient: 0,
                exponent,
            };
        }
        let exponent =
            ((bits >> COEFFICIENT_BITS) & EXPONENT_MASK) as i32 - DECIMAL128_EXPONENT_BIAS;
        let mut coefficient = bits & ((1u128 << COEFFICIENT_BITS) - 1);
        if coefficient > DECIMAL128_MAX_COEFFICIENT {
            coefficient = 0;
        }
        DecimalParts::Finite {
            negative,
            coefficient,
            exponent,
        }
    }

    /// Encodes canonically; `None` when a finite value's coefficient or exponent is out of range.
    pub fn to_decimal128(self) -> Option<Decimal128> {
        let bits = match self {
            DecimalParts::NaN {
                negative,
                signaling,
            } => {
                (u128::from(negative) << 127)
                    | (0b11111u128 << 122)
                    | (u128::from(signaling) << 121)
            }
            DecimalParts::Infinity { negative } => {
                (u128::from(negative) << 127) | (0b11110u128 << 122)
            }
            DecimalParts::Finite {
                negative,
                coefficient,
                exponent,
            } => {
                if coefficient > DECIMAL128_MAX_COEFFICIENT
                    || !(DECIMAL128_MIN_EXPONENT..=DECIMAL128_MAX_EXPONENT).contains(&exponent)
                {
                    return None;
                }
                let biased = (exponent + DECIMAL128_EXPONENT_BIAS) as u128;
                (u128::from(negative) << 127) | (biased << COEFFICIENT_BITS) | coefficient
            }
        };
        Some(Decimal128::from_bytes(bits.to_le_bytes()))
    }

    /// The nearest double, correctly rounded.
    pub fn to_f64(self) -> f64 {
        match self {
            DecimalParts::NaN { .. } => f64::NAN,
            DecimalParts::Infinity { negative } => signed(f64::INFINITY, negative),
            DecimalParts::Finite {
                negative,
                coefficient,
                exponent,
            } => {
                // Rust's float parser rounds correctly for any digit count and exponent, which
                // a multiplication by a power of ten in floating point would not.
                let magnitude = if coefficient == 0 {
                    0.0
                } else {
                    format!("{coefficient}e{exponent}")
                        .parse::<f64>()
                        .unwrap_or(f64::NAN)
                };
                signed(magnitude, negative)
            }
        }
    }
}

fn signed(magnitude: f64, negative: bool) -> f64 {
    if negative { -magnitude } else { magnitude }
}
