//! Exact comparison of numbers of any two BSON numeric types, with integer arithmetic only (no
//! rounding of large int64s or decimals), and the floor of a number among the doubles.

use super::{DecimalParts, Number};
use std::cmp::Ordering;

/// Compares two numbers by exact value.
pub fn compare(a: Number, b: Number) -> Ordering {
    match (a, b) {
        (Number::Int(x), Number::Int(y)) => x.cmp(&y),
        (Number::Int(x), Number::Double(y)) => compare_int_double(x, y),
        (Number::Double(x), Number::Int(y)) => compare_int_double(y, x).reverse(),
        (Number::Double(x), Number::Double(y)) => compare_doubles(x, y),
        (a, b) => compare_exact(Exact::of(a), Exact::of(b)),
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

/// The largest double not above `|n|`, and whether it equals `|n|`; `None` for NaN. Every
/// double and every int64 below 2^53 in magnitude is exact; the floor is what lets an index
/// key place a decimal or a large int64 among the doubles (see `keystring`).
pub fn floor_f64_of_abs(n: Number) -> Option<(f64, bool)> {
    match n {
        Number::Double(d) if d.is_nan() => None,
        Number::Double(d) => Some((d.abs(), true)),
        Number::Int(v) => {
            let magnitude = v.unsigned_abs();
            let significant = 64 - magnitude.leading_zeros();
            if significant <= f64::MANTISSA_DIGITS {
                return Some((magnitude as f64, true));
            }
            // Dropping the bits a double cannot hold rounds toward zero; the rest converts
            // exactly.
            let dropped = significant - f64::MANTISSA_DIGITS;
            let truncated = (magnitude >> dropped) << dropped;
            Some((truncated as f64, truncated == magnitude))
        }
        Number::Decimal(d) => match DecimalParts::from_decimal128(d) {
            DecimalParts::NaN { .. } => None,
            DecimalParts::Infinity { .. } => Some((f64::INFINITY, true)),
            DecimalParts::Finite { coefficient: 0, .. } => Some((0.0, true)),
            DecimalParts::Finite {
                coefficient,
                exponent,
                ..
            } => {
                let magnitude = Magnitude {
                    coefficient,
                    exp2: exponent,
                    exp5: exponent,
                };
                let nearest = DecimalParts::Finite {
                    negative: false,
                    coefficient,
                    exponent,
                }
                .to_f64();
                let ord = match Exact::of(Number::Double(nearest)) {
                    Exact::Finite { magnitude: m, .. } => compare_magnitudes(magnitude, m),
                    Exact::Zero => Ordering::Greater,
                    _ => Ordering::Less, // +Infinity
                };
                Some(match ord {
                    Ordering::Equal => (nearest, true),
                    Ordering::Greater => (nearest, false),
                    // The nearest double is above, so the one just below it is the floor.
                    Ordering::Less => (f64::from_bits(nearest.to_bits().saturating_sub(1)), false),
                })
            }
        },
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

/// A nonzero magnitude `coefficient * 2^exp2 * 5^exp5`: one form for all three kinds of number
/// (a double is `m * 2^e`, a decimal `c * 10^q = c * 2^q * 5^q`), so that any two compare with
/// integer arithmetic only.
#[derive(Clone, Copy, Debug)]
struct Magnitude {
    coefficient: u128,
    exp2: i32,
    exp5: i32,
}

/// A number reduced to what its order depends on.
#[derive(Clone, Copy, Debug)]
enum Exact {
    NaN,
    Infinite {
        negative: bool,
    },
    Zero,
    Finite {
        negative: bool,
        magnitude: Magnitude,
    },
}

impl Exact {
    fn of(n: Number) -> Exact {
        match n {
            Number::Int(0) => Exact::Zero,
            Number::Int(v) => Exact::Finite {
                negative: v < 0,
                magnitude: Magnitude {
                    coefficient: u128::from(v.unsigned_abs()),
                    exp2: 0,
                    exp5: 0,
                },
            },
            Number::Double(d) if d.is_nan() => Exact::NaN,
            Number::Double(d) if d.is_infinite() => Exact::Infinite { negative: d < 0.0 },
            Number::Double(0.0) => Exact::Zero,
            Number::Double(d) => {
                let bits = d.to_bits();
                let biased = ((bits >> 52) & 0x7ff) as i32;
                let fraction = bits & ((1u64 << 52) - 1);
                let (mantissa, exp2) = if biased == 0 {
                    (fraction, -1074)
                } else {
                    (fraction | (1u64 << 52), biased - 1075)
                };
                Exact::Finite {
                    negative: d < 0.0,
                    magnitude: Magnitude {
                        coefficient: u128::from(mantissa),
                        exp2,
                        exp5: 0,
                    },
                }
            }
            Number::Decimal(d) => match DecimalParts::from_decimal128(d) {
                DecimalParts::NaN { .. } => Exact::NaN,
                DecimalParts::Infinity { negative } => Exact::Infinite { negative },
                DecimalParts::Finite { coefficient: 0, .. } => Exact::Zero,
                DecimalParts::Finite {
                    negative,
                    coefficient,
                    exponent,
                } => Exact::Finite {
                    negative,
                    magnitude: Magnitude {
                        coefficient,
                        exp2: exponent,
                        exp5: exponent,
                    },
                },
            },
        }
    }

    /// Position among NaN < -Infinity < negative < zero < positive < +Infinity.
    fn class(self) -> u8 {
        match self {
            Exact::NaN => 0,
            Exact::Infinite { negative: true } => 1,
            Exact::Finite { negative: true, .. } => 2,
            Exact::Zero => 3,
            Exact::Finite {
                negative: false, ..
            } => 4,
            Exact::Infinite { negative: false } => 5,
        }
    }
}

fn compare_exact(a: Exact, b: Exact) -> Ordering {
    match (a, b) {
        (
            Exact::Finite {
                negative: na,
                magnitude: ma,
            },
            Exact::Finite {
                negative: nb,
                magnitude: mb,
            },
        ) if na == nb => {
            let ord = compare_magnitudes(ma, mb);
            if na { ord.reverse() } else { ord }
        }
        _ => a.class().cmp(&b.class()),
    }
}

const LOG2_5: f64 = 2.321_928_094_887_362;

fn compare_magnitudes(a: Magnitude, b: Magnitude) -> Ordering {
    // The estimate errs by far less than 1e-9 (its largest term is |exp5| * log2(5) with
    // |exp5| <= 6176), so a gap of 2 decides; within it the exponents are close and the exact
    // comparison stays small (a few thousand bits at most).
    let (la, lb) = (log2_estimate(a), log2_estimate(b));
    if la > lb + 2.0 {
        return Ordering::Greater;
    }
    if lb > la + 2.0 {
        return Ordering::Less;
    }
    let exp2 = a.exp2.min(b.exp2);
    let exp5 = a.exp5.min(b.exp5);
    let scaled = |m: Magnitude| {
        let mut big = BigUint::from_u128(m.coefficient);
        big.mul_pow5(m.exp5.abs_diff(exp5));
        big.shl(m.exp2.abs_diff(exp2));
        big
    };
    scaled(a).cmp(&scaled(b))
}

fn log2_estimate(m: Magnitude) -> f64 {
    (m.coefficient as f64).log2() + f64::from(m.exp2) + f64::from(m.exp5) * LOG2_5
}

/// The little unsigned big integer that exact comparison needs: multiply by small numbers,
/// shift left, compare. Limbs are little-endian with no zero limb on top.
#[derive(Debug, PartialEq, Eq)]
struct BigUint {
    limbs: Vec<u64>,
}

impl BigUint {
    fn from_u128(v: u128) -> BigUint {
        let mut limbs = vec![v as u64, (v >> 64) as u64];
        while limbs.last() == Some(&0) {
            limbs.pop();
        }
        BigUint { limbs }
    }

    fn mul_small(&mut self, factor: u64) {
        let mut carry = 0u128;
        for limb in &mut self.limbs {
            let product = u128::from(*limb) * u128::from(factor) + carry;
            *limb = product as u64;
            carry = product >> 64;
        }
        if carry != 0 {
            self.limbs.push(carry as u64);
        }
    }

    fn mul_pow5(&mut self, mut n: u32) {
        // 5^27 is the largest power of five below 2^64.
        const FIVE_27: u64 = 7_450_580_596_923_828_125;
        while n >= 27 {
            self.mul_small(FIVE_27);
            n -= 27;
        }
        if n > 0 {
            self.mul_small(5u64.pow(n));
        }
    }

    fn shl(&mut self, bits: u32) {
        if self.limbs.is_empty() || bits == 0 {
            return;
        }
        let whole = (bits / 64) as usize;
        let part = bits % 64;
        if part != 0 {
            let mut carry = 0u64;
            for limb in &mut self.limbs {
                let next = *limb >> (64 - part);
                *limb = (*limb << part) | carry;
                carry = next;
            }
            if carry != 0 {
                self.limbs.push(carry);
            }
        }
        self.limbs.splice(0..0, std::iter::repeat_n(0, whole));
    }
}

impl Ord for BigUint {
    fn cmp(&self, other: &Self) -> Ordering {
        self.limbs
            .len()
            .cmp(&other.limbs.len())
            .then_with(|| self.limbs.iter().rev().cmp(other.limbs.iter().rev()))
    }
}

impl PartialOrd for BigUint {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
