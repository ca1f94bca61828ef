//! Decimal128 arithmetic for the aggregation language: IEEE 754-2008 decimal with 34 significant
//! digits and round-half-even, which is what MongoDB's `$add`, `$sum`, `$avg`, `$multiply`,
//! `$divide` and `$mod` compute as soon as one operand is a decimal. The BID encoding itself is
//! the document layer's ([`DecimalParts`]), the one Decimal128 codec.

use crate::document::numeric::{
    DECIMAL128_MAX_COEFFICIENT, DECIMAL128_MAX_EXPONENT, DECIMAL128_MIN_EXPONENT, DecimalParts,
};
use bson::Decimal128;
use std::cmp::Ordering;

/// Significant digits of a decimal128 coefficient.
const DIGITS: u32 = 34;
const MAX_COEFF: u128 = DECIMAL128_MAX_COEFFICIENT;
const MAX_EXP: i64 = DECIMAL128_MAX_EXPONENT as i64;
const MIN_EXP: i64 = DECIMAL128_MIN_EXPONENT as i64;
/// Digits kept below the 34-digit result window while adding, so that rounding after a
/// subtraction that borrows is still correct.
const GUARD_DIGITS: i64 = 3;

/// A decoded decimal128: `coeff × 10^exp`, or one of the special values.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Dec {
    Finite { neg: bool, coeff: u128, exp: i32 },
    Inf { neg: bool },
    NaN,
}

impl Dec {
    /// `Decimal128()` in the server: positive zero with exponent zero.
    pub const ZERO: Dec = Dec::Finite {
        neg: false,
        coeff: 0,
        exp: 0,
    };

    /// Decodes through [`DecimalParts`]: NaN loses its sign and signalling bit (arithmetic
    /// never produces them); non-canonical coefficients read as zero.
    pub fn decode(value: Decimal128) -> Dec {
        match DecimalParts::from_decimal128(value) {
            DecimalParts::NaN { .. } => Dec::NaN,
            DecimalParts::Infinity { negative } => Dec::Inf { neg: negative },
            DecimalParts::Finite {
                negative,
                coefficient,
                exponent,
            } => Dec::Finite {
                neg: negative,
                coeff: coefficient,
                exp: exponent,
            },
        }
    }

    /// Encodes through [`DecimalParts`], canonically: NaN is the positive quiet NaN, and an
    /// exponent or coefficient out of range is clamped into it (arithmetic rounds first, so only
    /// values built by hand reach the clamp).
    pub fn encode(self) -> Decimal128 {
        let parts = match self {
            Dec::NaN => DecimalParts::NaN {
                negative: false,
                signaling: false,
            },
            Dec::Inf { neg } => DecimalParts::Infinity { negative: neg },
            Dec::Finite { neg, coeff, exp } => DecimalParts::Finite {
                negative: neg,
                coefficient: coeff.min(MAX_COEFF),
                exponent: i64::from(exp).clamp(MIN_EXP, MAX_EXP) as i32,
            },
        };
        parts
            .to_decimal128()
            .expect("a clamped decimal is within decimal128's range")
    }

    pub fn from_i64(value: i64) -> Dec {
        Dec::Finite {
            neg: value < 0,
            coeff: u128::from(value.unsigned_abs()),
            exp: 0,
        }
    }

    /// The server's `Decimal128(double, precision)`: the double rounded to `digits` significant
    /// digits, trailing zeros kept (`0.1` becomes `0.100000000000000` at 15 digits).
    pub fn from_f64(value: f64, digits: usize) -> Dec {
        if value.is_nan() {
            return Dec::NaN;
        }
        if value.is_infinite() {
            return Dec::Inf { neg: value < 0.0 };
        }
        let neg = value.is_sign_negative();
        if value == 0.0 {
            return Dec::Finite {
                neg,
                coeff: 0,
                exp: 0,
            };
        }
        let precision = digits.clamp(1, DIGITS as usize) - 1;
        let text = format!("{:.precision$e}", value.abs());
        let Some((mantissa, exponent)) = text.split_once('e') else {
            return Dec::NaN;
        };
        let coeff = mantissa
            .chars()
            .filter(char::is_ascii_digit)
            .collect::<String>()
            .parse::<u128>();
        match (coeff, exponent.parse::<i32>()) {
            (Ok(coeff), Ok(exponent)) => Dec::Finite {
                neg,
                coeff,
                exp: exponent - precision as i32,
            },
            _ => Dec::NaN,
        }
    }

    /// The nearest double (ties to even), as `Decimal128::toDouble` converts.
    pub fn to_f64(self) -> f64 {
        match self {
            Dec::NaN => f64::NAN,
            Dec::Inf { neg } => {
                if neg {
                    f64::NEG_INFINITY
                } else {
                    f64::INFINITY
                }
            }
            Dec::Finite { neg, coeff, exp } => {
                let magnitude = format!("{coeff}e{exp}").parse::<f64>().unwrap_or(f64::NAN);
                if neg { -magnitude } else { magnitude }
            }
        }
    }

    /// The value rounded to an integer (ties to even), if it fits an int64.
    pub fn to_i64_rounded(self) -> Option<i64> {
        let Dec::Finite { neg, coeff, exp } = self else {
            return None;
        };
        let magnitude = if exp >= 0 {
            let scaled = U256::from_u128(coeff).mul_pow10(u32::try_from(exp).ok()?)?;
            scaled.to_u128()?
        } else {
            round_div_pow10(U256::from_u128(coeff), exp.unsigned_abs()).to_u128()?
        };
        let signed = i128::try_from(magnitude).ok()?;
        i64::try_from(if neg { -signed } else { signed }).ok()
    }

    /// The value as an int64 when it is integral and in range.
    pub fn to_i64_exact(self) -> Option<i64> {
        let rounded = self.to_i64_rounded()?;
        Dec::from_i64(rounded)
            .minus(self)
            .is_zero()
            .then_some(rounded)
    }

    pub fn is_zero(self) -> bool {
        matches!(self, Dec::Finite { coeff: 0, .. })
    }

    pub fn negate(self) -> Dec {
        match self {
            Dec::Finite { neg, coeff, exp } => Dec::Finite {
                neg: !neg,
                coeff,
                exp,
            },
            Dec::Inf { neg } => Dec::Inf { neg: !neg },
            Dec::NaN => Dec::NaN,
        }
    }

    pub fn abs(self) -> Dec {
        match self {
            Dec::Finite { coeff, exp, .. } => Dec::Finite {
                neg: false,
                coeff,
                exp,
            },
            Dec::Inf { .. } => Dec::Inf { neg: false },
            Dec::NaN => Dec::NaN,
        }
    }

    pub fn plus(self, other: Dec) -> Dec {
        match (self, other) {
            (Dec::NaN, _) | (_, Dec::NaN) => Dec::NaN,
            (Dec::Inf { neg: a }, Dec::Inf { neg: b }) => {
                if a == b {
                    Dec::Inf { neg: a }
                } else {
                    Dec::NaN
                }
            }
            (Dec::Inf { neg }, _) | (_, Dec::Inf { neg }) => Dec::Inf { neg },
            (
                Dec::Finite {
                    neg: an,
                    coeff: ac,
                    exp: ae,
                },
                Dec::Finite {
                    neg: bn,
                    coeff: bc,
                    exp: be,
                },
            ) => add_finite((an, ac, i64::from(ae)), (bn, bc, i64::from(be))),
        }
    }

    pub fn minus(self, other: Dec) -> Dec {
        self.plus(other.negate())
    }

    pub fn times(self, other: Dec) -> Dec {
        match (self, other) {
            (Dec::NaN, _) | (_, Dec::NaN) => Dec::NaN,
            (Dec::Inf { neg: a }, Dec::Inf { neg: b }) => Dec::Inf { neg: a != b },
            (Dec::Inf { neg: a }, Dec::Finite { neg: b, coeff, .. })
            | (Dec::Finite { neg: b, coeff, .. }, Dec::Inf { neg: a }) => {
                if coeff == 0 {
                    Dec::NaN
                } else {
                    Dec::Inf { neg: a != b }
                }
            }
            (
                Dec::Finite {
                    neg: an,
                    coeff: ac,
                    exp: ae,
                },
                Dec::Finite {
                    neg: bn,
                    coeff: bc,
                    exp: be,
                },
            ) => finish(
                an != bn,
                U256::mul_u128(ac, bc),
                i64::from(ae) + i64::from(be),
            ),
        }
    }

    /// Division; the caller rejects a zero divisor with MongoDB's error first.
    pub fn divided_by(self, other: Dec) -> Dec {
        match (self, other) {
            (Dec::NaN, _) | (_, Dec::NaN) | (Dec::Inf { .. }, Dec::Inf { .. }) => Dec::NaN,
            (Dec::Inf { neg: a }, Dec::Finite { neg: b, .. }) => Dec::Inf { neg: a != b },
            (Dec::Finite { neg: a, .. }, Dec::Inf { neg: b }) => Dec::Finite {
                neg: a != b,
                coeff: 0,
                exp: MIN_EXP as i32,
            },
            (
                Dec::Finite {
                    neg: an,
                    coeff: ac,
                    exp: ae,
                },
                Dec::Finite {
                    neg: bn,
                    coeff: bc,
                    exp: be,
                },
            ) => div_finite(an != bn, ac, i64::from(ae), bc, i64::from(be)),
        }
    }

    /// The remainder of truncating division (sign of the dividend), as `$mod` computes it.
    /// `None` when the operands' exponents are too far apart to align exactly here.
    pub fn remainder(self, other: Dec) -> Option<Dec> {
        match (self, other) {
            (Dec::NaN, _) | (_, Dec::NaN) | (Dec::Inf { .. }, _) => Some(Dec::NaN),
            (Dec::Finite { .. }, Dec::Inf { .. }) => Some(self),
            (
                Dec::Finite {
                    neg,
                    coeff: ac,
                    exp: ae,
                },
                Dec::Finite {
                    coeff: bc, exp: be, ..
                },
            ) => {
                if bc == 0 {
                    return Some(Dec::NaN);
                }
                let exp = ae.min(be);
                let a = U256::from_u128(ac).mul_pow10(u32::try_from(ae - exp).ok()?)?;
                let b = U256::from_u128(bc)
                    .mul_pow10(u32::try_from(be - exp).ok()?)?
                    .to_u128()?;
                let (_, remainder) = a.divrem_u128(b);
                Some(finish(neg, U256::from_u128(remainder), i64::from(exp)))
            }
        }
    }
}

/// The rounding directions `quantize` supports (`$round`, `$trunc`, `$ceil`, `$floor`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rounding {
    HalfEven,
    TowardZero,
    TowardPositive,
    TowardNegative,
}

impl Dec {
    /// IEEE `quantize`: the value with exponent `exp`, rounded in direction `mode`. NaN when the
    /// value is infinite or the coefficient would need more than 34 digits.
    pub fn quantize(self, exp: i32, mode: Rounding) -> Dec {
        let Dec::Finite {
            neg,
            coeff,
            exp: from,
        } = self
        else {
            return Dec::NaN;
        };
        if from >= exp {
            if coeff == 0 {
                return Dec::Finite { neg, coeff, exp };
            }
            let shift = (from - exp) as u32;
            return match 10u128.checked_pow(shift).and_then(|f| coeff.checked_mul(f)) {
                Some(scaled) if scaled <= MAX_COEFF => Dec::Finite {
                    neg,
                    coeff: scaled,
                    exp,
                },
                _ => Dec::NaN,
            };
        }
        let shift = exp.abs_diff(from);
        let (quotient, remainder, divisor) = match 10u128.checked_pow(shift) {
            Some(divisor) => (coeff / divisor, coeff % divisor, Some(divisor)),
            None => (0, coeff, None),
        };
        // How the dropped part compares with one half of the last kept unit.
        let half = match divisor {
            Some(divisor) => (remainder * 2).cmp(&divisor),
            None => Ordering::Less,
        };
        let inexact = remainder != 0;
        let up = match mode {
            Rounding::HalfEven => {
                half == Ordering::Greater || (half == Ordering::Equal && quotient % 2 == 1)
            }
            Rounding::TowardZero => false,
            Rounding::TowardPositive => inexact && !neg,
            Rounding::TowardNegative => inexact && neg,
        };
        Dec::Finite {
            neg,
            coeff: quotient + u128::from(up),
            exp,
        }
    }

    /// Parses a decimal string as the server's `Decimal128(string)` does: an optional sign, digits
    /// with an optional point and exponent, or `Infinity`/`Inf`/`NaN` in any case; more than 34
    /// digits round half to even. `None` when the text is not a number, `Some(Err)` carries
    /// why a number is out of range ("overflow" or "underflow").
    pub fn parse(text: &str) -> Option<std::result::Result<Dec, &'static str>> {
        let (neg, body) = match text.as_bytes().first() {
            Some(b'-') => (true, &text[1..]),
            Some(b'+') => (false, &text[1..]),
            _ => (false, text),
        };
        match body.to_ascii_lowercase().as_str() {
            "inf" | "infinity" => return Some(Ok(Dec::Inf { neg })),
            "nan" => return Some(Ok(Dec::NaN)),
            _ => {}
        }
        let (mantissa, exponent) = match body.find(['e', 'E']) {
            Some(at) => (&body[..at], Some(&body[at + 1..])),
            None => (body, None),
        };
        let mut exp: i64 = match exponent {
            Some(e) => {
                let digits = e.strip_prefix(['+', '-']).unwrap_or(e);
                if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                    return None;
                }
                // Exponents this large only matter for their sign.
                e.parse::<i64>().unwrap_or(if e.starts_with('-') {
                    -100_000
                } else {
                    100_000
                })
            }
            None => 0,
        };
        let (int_part, frac_part) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        if int_part.is_empty() && frac_part.is_empty()
            || !int_part
                .bytes()
                .chain(frac_part.bytes())
                .all(|b| b.is_ascii_digit())
        {
            return None;
        }
        exp -= frac_part.len() as i64;
        // Keep 37 significant digits and a sticky digit for the rest: enough to round to 34.
        let (mut coeff, mut dropped, mut sticky, mut significant) = (0u128, 0i64, false, 0);
        for b in int_part.bytes().chain(frac_part.bytes()) {
            let digit = u128::from(b - b'0');
            if significant < 37 {
                coeff = coeff * 10 + digit;
                if coeff != 0 {
                    significant += 1;
                }
            } else {
                dropped += 1;
                sticky |= digit != 0;
            }
        }
        exp += dropped;
        if sticky {
            coeff = coeff * 10 + 1;
            exp -= 1;
        }
        let value = finish(neg, U256::from_u128(coeff), exp);
        Some(match value {
            Dec::Inf { .. } => Err("overflow"),
            Dec::Finite { coeff: 0, .. } if coeff != 0 => Err("underflow"),
            _ => Ok(value),
        })
    }

    /// Less than zero (NaN and zeros are not).
    pub fn is_negative(self) -> bool {
        match self {
            Dec::Finite { neg, coeff, .. } => neg && coeff != 0,
            Dec::Inf { neg } => neg,
            Dec::NaN => false,
        }
    }

    /// Greater than zero (NaN is not).
    pub fn is_positive(self) -> bool {
        match self {
            Dec::Finite { neg, coeff, .. } => !neg && coeff != 0,
            Dec::Inf { neg } => !neg,
            Dec::NaN => false,
        }
    }

    /// The value times `10^shift`, exactly (only the exponent changes, within its range).
    pub fn scale_by_pow10(self, shift: i64) -> Dec {
        match self {
            Dec::Finite { neg, coeff, exp } => {
                finish(neg, U256::from_u128(coeff), i64::from(exp) + shift)
            }
            other => other,
        }
    }

    /// The value truncated toward zero, if that fits an int64.
    pub fn to_i64_truncated(self) -> Option<i64> {
        self.quantize(0, Rounding::TowardZero).to_i64_exact()
    }
}

impl std::fmt::Display for Dec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.encode())
    }
}

type Operand = (bool, u128, i64);

fn add_finite((an, ac, ae): Operand, (bn, bc, be): Operand) -> Dec {
    if ac == 0 && bc == 0 {
        // Exact zero: negative only when both are (round-half-even), at the smaller exponent.
        return finish(an && bn, U256::ZERO, ae.min(be));
    }
    let adjusted = |c: u128, e: i64| {
        if c == 0 {
            i64::MIN
        } else {
            e + i64::from(digits(c)) - 1
        }
    };
    let ((hn, hc, he), (ln, lc, le)) = if adjusted(ac, ae) >= adjusted(bc, be) {
        ((an, ac, ae), (bn, bc, be))
    } else {
        ((bn, bc, be), (an, ac, ae))
    };
    let top = adjusted(hc, he);
    // Align both operands at `exp`: the smaller exponent when that keeps everything exact within
    // 34 + 3 digits, otherwise just below the guard digits, folding the rest into a sticky digit.
    let exp = ae.min(be).max(top - i64::from(DIGITS) - GUARD_DIGITS + 1);
    let high = U256::from_u128(hc)
        .mul_pow10((he - exp) as u32)
        .and_then(U256::to_u128)
        .unwrap_or(0);
    let (low, sticky) = if le >= exp {
        (
            U256::from_u128(lc)
                .mul_pow10((le - exp) as u32)
                .and_then(U256::to_u128)
                .unwrap_or(0),
            false,
        )
    } else {
        let shift = le.abs_diff(exp);
        if shift > u64::from(DIGITS) {
            // The whole coefficient (at most 34 digits) lies below the alignment point.
            (0, lc != 0)
        } else {
            let divisor = 10u128.pow(shift as u32);
            (lc / divisor, lc % divisor != 0)
        }
    };
    let (high, low, exp) = if sticky {
        (high * 10, low * 10 + 1, exp - 1)
    } else {
        (high, low, exp)
    };
    let (neg, magnitude) = if hn == ln {
        (hn, high + low)
    } else {
        match high.cmp(&low) {
            Ordering::Greater => (hn, high - low),
            Ordering::Less => (ln, low - high),
            Ordering::Equal => (false, 0),
        }
    };
    finish(neg, U256::from_u128(magnitude), exp)
}

fn div_finite(neg: bool, ac: u128, ae: i64, bc: u128, be: i64) -> Dec {
    let ideal = ae - be;
    if bc == 0 {
        return if ac == 0 { Dec::NaN } else { Dec::Inf { neg } };
    }
    if ac == 0 {
        return finish(neg, U256::ZERO, ideal);
    }
    // Scale the dividend so that the quotient has at least 35 digits: one to round on.
    let shift = 35 + digits(bc) - digits(ac);
    let Some(dividend) = U256::from_u128(ac).mul_pow10(shift) else {
        return Dec::NaN;
    };
    let (mut quotient, remainder) = dividend.divrem_u128(bc);
    let mut exp = ideal - i64::from(shift);
    if remainder == 0 {
        // Exact: use the ideal exponent as far as the quotient's trailing zeros allow.
        while exp < ideal {
            let (q, r) = quotient.divrem_u64(10);
            if r != 0 {
                break;
            }
            quotient = q;
            exp += 1;
        }
        finish(neg, quotient, exp)
    } else {
        let sticky = quotient
            .mul_u64(10)
            .and_then(|q| q.checked_add(U256::from_u128(1)));
        finish(
            neg,
            sticky.unwrap_or(quotient),
            if sticky.is_some() { exp - 1 } else { exp },
        )
    }
}

/// Rounds an exact `c × 10^exp` to 34 digits (ties to even) within the exponent range:
/// underflow rounds further, overflow pads the coefficient or becomes infinity.
fn finish(neg: bool, mut c: U256, mut exp: i64) -> Dec {
    let mut drop = (i64::from(c.digits()) - i64::from(DIGITS)).max(0);
    if exp + drop < MIN_EXP {
        drop = MIN_EXP - exp;
    }
    if drop > 0 {
        c = round_div_pow10(c, u32::try_from(drop).unwrap_or(u32::MAX));
        exp += drop;
        if c.digits() > DIGITS {
            // Rounding carried into a 35th digit: the coefficient is exactly 10^34.
            c = c.divrem_u64(10).0;
            exp += 1;
        }
    }
    if exp > MAX_EXP {
        if c.is_zero() {
            exp = MAX_EXP;
        } else {
            while exp > MAX_EXP && c.digits() < DIGITS {
                match c.mul_u64(10) {
                    Some(scaled) => c = scaled,
                    None => break,
                }
                exp -= 1;
            }
            if exp > MAX_EXP {
                return Dec::Inf { neg };
            }
        }
    }
    Dec::Finite {
        neg,
        coeff: c.to_u128().unwrap_or(0),
        exp: exp as i32,
    }
}

/// `c / 10^k` rounded half to even.
fn round_div_pow10(mut c: U256, k: u32) -> U256 {
    if k == 0 {
        return c;
    }
    if k > 80 {
        // Every digit is dropped and the rounding digit is a leading zero.
        return U256::ZERO;
    }
    let (mut last, mut sticky) = (0u64, false);
    for _ in 0..k {
        sticky |= last != 0;
        let (q, r) = c.divrem_u64(10);
        c = q;
        last = r;
    }
    let odd = c.0[0] & 1 == 1;
    if last > 5 || (last == 5 && (sticky || odd)) {
        c = c.checked_add(U256::from_u128(1)).unwrap_or(c);
    }
    c
}

fn digits(value: u128) -> u32 {
    value.checked_ilog10().map_or(1, |d| d + 1)
}

/// An unsigned 256-bit integer, little-endian limbs: wide enough for a product of two
/// coefficients and for a dividend scaled to a 35-digit quotient.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct U256([u64; 4]);

impl U256 {
    const ZERO: U256 = U256([0; 4]);

    fn from_u128(value: u128) -> U256 {
        U256([value as u64, (value >> 64) as u64, 0, 0])
    }

    fn to_u128(self) -> Option<u128> {
        (self.0[2] == 0 && self.0[3] == 0)
            .then(|| u128::from(self.0[0]) | (u128::from(self.0[1]) << 64))
    }

    fn is_zero(self) -> bool {
        self.0 == [0; 4]
    }

    fn digits(self) -> u32 {
        let (mut value, mut count) = (self, 0);
        while !value.is_zero() {
            value = value.divrem_u64(10).0;
            count += 1;
        }
        count.max(1)
    }

    fn mul_u64(self, factor: u64) -> Option<U256> {
        let mut out = [0u64; 4];
        let mut carry = 0u128;
        for (slot, limb) in out.iter_mut().zip(self.0) {
            let product = u128::from(limb) * u128::from(factor) + carry;
            *slot = product as u64;
            carry = product >> 64;
        }
        (carry == 0).then_some(U256(out))
    }

    fn mul_pow10(self, k: u32) -> Option<U256> {
        (0..k).try_fold(self, |value, _| value.mul_u64(10))
    }

    fn checked_add(self, other: U256) -> Option<U256> {
        let mut out = [0u64; 4];
        let mut carry = false;
        for (i, slot) in out.iter_mut().enumerate() {
            let (sum, c1) = self.0[i].overflowing_add(other.0[i]);
            let (sum, c2) = sum.overflowing_add(u64::from(carry));
            *slot = sum;
            carry = c1 || c2;
        }
        (!carry).then_some(U256(out))
    }

    fn divrem_u64(self, divisor: u64) -> (U256, u64) {
        let mut out = [0u64; 4];
        let mut remainder = 0u128;
        for i in (0..4).rev() {
            let current = (remainder << 64) | u128::from(self.0[i]);
            out[i] = (current / u128::from(divisor)) as u64;
            remainder = current % u128::from(divisor);
        }
        (U256(out), remainder as u64)
    }

    /// Long division by a divisor below 2^127 (coefficients are below 2^113).
    fn divrem_u128(self, divisor: u128) -> (U256, u128) {
        let mut quotient = U256::ZERO;
        let mut remainder = 0u128;
        for bit in (0..256).rev() {
            remainder = (remainder << 1) | u128::from((self.0[bit / 64] >> (bit % 64)) & 1);
            if remainder >= divisor {
                remainder -= divisor;
                quotient.0[bit / 64] |= 1 << (bit % 64);
            }
        }
        (quotient, remainder)
    }

    fn mul_u128(a: u128, b: u128) -> U256 {
        let a = [a as u64, (a >> 64) as u64];
        let b = [b as u64, (b >> 64) as u64];
        let mut out = [0u64; 4];
        for (i, &x) in a.iter().enumerate() {
            let mut carry = 0u128;
            for (j, &y) in b.iter().enumerate() {
                let current = u128::from(x) * u128::from(y) + u128::from(out[i + j]) + carry;
                out[i + j] = current as u64;
                carry = current >> 64;
            }
            out[i + 2] = carry as u64;
        }
        U256(out)
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    pub(crate) fn dec(text: &str) -> Dec {
        Dec::decode(text.parse().unwrap())
    }

    pub(crate) fn show(value: Dec) -> String {
        value.to_string()
    }

    #[test]
    fn round_trips_through_the_bson_encoding() {
        for text in [
            "0",
            "-0",
            "1.5",
            "-123.456",
            "1E+6111",
            "1E-6176",
            "9999999999999999999999999999999999",
            "NaN",
            "Infinity",
            "-Infinity",
        ] {
            assert_eq!(
                show(dec(text)),
                text.parse::<Decimal128>().unwrap().to_string(),
                "{text}"
            );
        }
        assert_eq!(
            dec("1.5"),
            Dec::Finite {
                neg: false,
                coeff: 15,
                exp: -1
            }
        );
    }

    #[test]
    fn addition_is_exact_when_it_fits_and_keeps_the_smaller_exponent() {
        assert_eq!(show(dec("1.5").plus(Dec::from_i64(1))), "2.5");
        assert_eq!(show(dec("12.34").plus(dec("0.66"))), "13.00");
        assert_eq!(show(dec("1").minus(dec("1"))), "0");
        assert_eq!(show(dec("-0").plus(dec("-0"))), "-0");
        assert_eq!(show(Dec::ZERO.plus(dec("-0"))), "0");
        assert_eq!(show(dec("5").plus(dec("0E-2"))), "5.00");
    }

    #[test]
    fn addition_rounds_half_even_to_34_digits() {
        assert_eq!(
            show(dec("1E+40").plus(dec("1E-40"))),
            "1.000000000000000000000000000000000E+40"
        );
        assert_eq!(
            show(dec("1E+40").minus(dec("1E-40"))),
            "1.000000000000000000000000000000000E+40"
        );
        assert_eq!(
            show(dec("9999999999999999999999999999999999").plus(dec("1"))),
            "1.000000000000000000000000000000000E+34"
        );
        assert_eq!(
            show(dec("1234567890123456789012345678901234").plus(dec("0.5"))),
            "1234567890123456789012345678901234"
        );
        assert_eq!(
            show(dec("1234567890123456789012345678901235").plus(dec("0.5"))),
            "1234567890123456789012345678901236"
        );
        assert_eq!(
            show(dec("1234567890123456789012345678901234").plus(dec("1E-42"))),
            "1234567890123456789012345678901234"
        );
        assert_eq!(
            show(dec("1234567890123456789012345678901234").minus(dec("1E-42"))),
            "1234567890123456789012345678901234"
        );
        assert_eq!(
            show(dec("1234567890123456789012345678901234").plus(dec("0.50001"))),
            "1234567890123456789012345678901235"
        );
    }

    #[test]
    fn multiplication_and_division() {
        assert_eq!(show(dec("1.5").times(dec("2"))), "3.0");
        assert_eq!(show(dec("-0").times(dec("5"))), "-0");
        assert_eq!(
            show(dec("10").divided_by(dec("3"))),
            "3.333333333333333333333333333333333"
        );
        assert_eq!(
            show(dec("100").divided_by(dec("7"))),
            "14.28571428571428571428571428571429"
        );
        assert_eq!(show(dec("0.5").divided_by(dec("2"))), "0.25");
        assert_eq!(show(dec("10").divided_by(dec("2"))), "5");
        assert_eq!(show(dec("1").divided_by(dec("4"))), "0.25");
        assert_eq!(
            show(dec("9.999999999999999999999999999999999E+6144").divided_by(dec("2"))),
            "5.000000000000000000000000000000000E+6144"
        );
        assert_eq!(
            show(dec("9.999999999999999999999999999999999E+6144").times(dec("10"))),
            "Infinity"
        );
    }

    #[test]
    fn remainder_keeps_the_dividend_sign() {
        assert_eq!(
            dec("7").remainder(dec("3")).map(show),
            Some("1".to_string())
        );
        assert_eq!(
            dec("-7.5").remainder(dec("2")).map(show),
            Some("-1.5".to_string())
        );
    }

    #[test]
    fn conversions() {
        assert_eq!(show(Dec::from_f64(0.1, 15)), "0.100000000000000");
        assert_eq!(show(Dec::from_f64(1.0, 15)), "1.00000000000000");
        assert_eq!(Dec::from_f64(-2.5, 15).to_f64(), -2.5);
        assert_eq!(dec("2.5").to_i64_rounded(), Some(2));
        assert_eq!(dec("3.5").to_i64_rounded(), Some(4));
        assert_eq!(dec("1.5").to_i64_exact(), None);
        assert_eq!(dec("12E+1").to_i64_exact(), Some(120));
        assert_eq!(dec("1E+30").to_i64_exact(), None);
    }
}
