//! Decimal128 arithmetic for the aggregation language and the update operators, on libdecNumber
//! (the `dec` crate): IEEE 754-2008 decimal with 34 significant digits, round-half-even and the
//! standard's preferred exponents, which is what MongoDB's `$add`, `$sum`, `$avg`, `$multiply`,
//! `$divide`, `$mod` and rounding operators compute as soon as one operand is a decimal. The BID
//! encoding itself is the document layer's ([`DecimalParts`]), the one Decimal128 codec; [`Dec`]
//! is its decoded form, and each operation hands it to libdecNumber and reads the result back.

use crate::document::numeric::{
    DECIMAL128_MAX_COEFFICIENT, DECIMAL128_MAX_EXPONENT, DECIMAL128_MIN_EXPONENT, DecimalParts,
};
use bson::Decimal128;
use dec::{Context, Decimal128 as Quad, Rounding as Mode};
use std::sync::LazyLock;

/// A decoded decimal128: `coeff × 10^exp`, or one of the special values.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Dec {
    Finite { neg: bool, coeff: u128, exp: i32 },
    Inf { neg: bool },
    NaN,
}

static INFINITY: LazyLock<Quad> = LazyLock::new(|| {
    Context::<Quad>::default()
        .parse("Infinity")
        .expect("libdecNumber reads Infinity")
});

/// decimal128's context: 34 digits, exponents -6176..=6111, round half to even, no traps.
fn context() -> Context<Quad> {
    Context::<Quad>::default()
}

/// The value with its sign bit flipped (IEEE copy-negate; the sign is the top bit in both
/// decimal encodings). libdecNumber's `minus` would make `-0` of `0 - 0`'s `+0`.
fn copy_negate(q: Quad) -> Quad {
    let mut bytes = q.to_le_bytes();
    bytes[15] ^= 0x80;
    Quad::from_le_bytes(bytes)
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
    /// exponent or coefficient out of range is clamped into it (libdecNumber rounds first, so
    /// only values built by hand reach the clamp).
    pub fn encode(self) -> Decimal128 {
        let parts = match self {
            Dec::NaN => DecimalParts::NaN {
                negative: false,
                signaling: false,
            },
            Dec::Inf { neg } => DecimalParts::Infinity { negative: neg },
            Dec::Finite { neg, coeff, exp } => DecimalParts::Finite {
                negative: neg,
                coefficient: coeff.min(DECIMAL128_MAX_COEFFICIENT),
                exponent: exp.clamp(DECIMAL128_MIN_EXPONENT, DECIMAL128_MAX_EXPONENT),
            },
        };
        parts
            .to_decimal128()
            .expect("a clamped decimal is within decimal128's range")
    }

    /// libdecNumber's form of the value.
    pub(super) fn quad(self) -> Quad {
        match self {
            Dec::NaN => Quad::NAN,
            Dec::Inf { neg } => {
                if neg {
                    copy_negate(*INFINITY)
                } else {
                    *INFINITY
                }
            }
            Dec::Finite { neg, coeff, exp } => {
                let mut cx = context();
                let mut q = cx.from_u128(coeff.min(DECIMAL128_MAX_COEFFICIENT));
                cx.set_exponent(
                    &mut q,
                    exp.clamp(DECIMAL128_MIN_EXPONENT, DECIMAL128_MAX_EXPONENT),
                );
                if neg { copy_negate(q) } else { q }
            }
        }
    }

    /// The value of a libdecNumber result.
    pub(super) fn from_quad(q: Quad) -> Dec {
        if q.is_nan() {
            Dec::NaN
        } else if q.is_infinite() {
            Dec::Inf { neg: q.is_signed() }
        } else {
            Dec::Finite {
                neg: q.is_signed(),
                coeff: q.coefficient().unsigned_abs(),
                exp: q.exponent(),
            }
        }
    }

    pub fn from_i64(value: i64) -> Dec {
        Dec::Finite {
            neg: value < 0,
            coeff: u128::from(value.unsigned_abs()),
            exp: 0,
        }
    }

    /// The server's `Decimal128(double, precision)`: the double rounded to `digits` significant
    /// digits, trailing zeros kept (`0.1` becomes `0.100000000000000` at 15 digits). Rust's
    /// formatting rounds the double's exact binary value correctly to those digits.
    pub fn from_f64(value: f64, digits: usize) -> Dec {
        if value.is_nan() {
            return Dec::NaN;
        }
        if value.is_infinite() {
            return Dec::Inf { neg: value < 0.0 };
        }
        if value == 0.0 {
            return Dec::Finite {
                neg: value.is_sign_negative(),
                coeff: 0,
                exp: 0,
            };
        }
        let precision = digits.clamp(1, 34) - 1;
        match context().parse(format!("{value:.precision$e}")) {
            Ok(q) => Dec::from_quad(q),
            Err(_) => Dec::NaN,
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
            Dec::Finite { neg, coeff, exp } => DecimalParts::Finite {
                negative: neg,
                coefficient: coeff,
                exponent: exp,
            }
            .to_f64(),
        }
    }

    /// The value rounded to an integer (ties to even), if it fits an int64.
    pub fn to_i64_rounded(self) -> Option<i64> {
        match self.quantize(0, Rounding::HalfEven) {
            Dec::Finite { neg, coeff, .. } => {
                let magnitude = i128::try_from(coeff).ok()?;
                i64::try_from(if neg { -magnitude } else { magnitude }).ok()
            }
            _ => None,
        }
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
        Dec::from_quad(context().add(self.quad(), other.quad()))
    }

    pub fn minus(self, other: Dec) -> Dec {
        Dec::from_quad(context().sub(self.quad(), other.quad()))
    }

    pub fn times(self, other: Dec) -> Dec {
        Dec::from_quad(context().mul(self.quad(), other.quad()))
    }

    /// Division; the caller rejects a zero divisor with MongoDB's error first.
    pub fn divided_by(self, other: Dec) -> Dec {
        Dec::from_quad(context().div(self.quad(), other.quad()))
    }

    /// The remainder of truncating division (sign of the dividend), as `$mod` computes it:
    /// exact for any operands, also where the integer quotient has more than 34 digits.
    pub fn remainder(self, other: Dec) -> Dec {
        let mut cx = context();
        let result = cx.rem(self.quad(), other.quad());
        if !cx.status().division_impossible() {
            return Dec::from_quad(result);
        }
        // libdecNumber's remainder needs the quotient's integer part within the precision:
        // redo it wide enough for any two decimal128s (exponents 12,287 places apart).
        let mut dividend = Exact::from(self.quad());
        Context::<Exact>::default().rem(&mut dividend, &Exact::from(other.quad()));
        Dec::from_quad(dividend.to_decimal128())
    }
}

/// A libdecNumber number of 12,600 digits: any decimal128 quotient's integer part fits.
type Exact = dec::Decimal<4200>;

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
        if !matches!(self, Dec::Finite { .. }) {
            return Dec::NaN;
        }
        let mut cx = context();
        cx.set_rounding(match mode {
            Rounding::HalfEven => Mode::HalfEven,
            Rounding::TowardZero => Mode::Down,
            Rounding::TowardPositive => Mode::Ceiling,
            Rounding::TowardNegative => Mode::Floor,
        });
        let quantum = Dec::Finite {
            neg: false,
            coeff: 1,
            exp,
        };
        Dec::from_quad(cx.quantize(self.quad(), quantum.quad()))
    }

    /// Parses a decimal string as the server's `Decimal128(string)` does: an optional sign, digits
    /// with an optional point and exponent, or `Infinity`/`Inf`/`NaN` in any case; more than 34
    /// digits round half to even. `None` when the text is not a number, `Some(Err)` carries
    /// why a number is out of range ("overflow" or "underflow").
    pub fn parse(text: &str) -> Option<std::result::Result<Dec, &'static str>> {
        let body = text.strip_prefix(['-', '+']).unwrap_or(text);
        match body.to_ascii_lowercase().as_str() {
            "inf" | "infinity" => {
                return Some(Ok(Dec::Inf {
                    neg: text.starts_with('-'),
                }));
            }
            "nan" => return Some(Ok(Dec::NaN)),
            _ => {}
        }
        // libdecNumber also reads `sNaN` and NaN payloads, which MongoDB does not.
        if !body
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'))
        {
            return None;
        }
        let mut cx = context();
        let value = cx.parse(text).ok()?;
        let status = cx.status();
        Some(if status.overflow() {
            Err("overflow")
        } else if value.is_zero() && status.underflow() {
            Err("underflow")
        } else {
            Ok(Dec::from_quad(value))
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
        let shift = Dec::from_i64(shift.clamp(-20_000, 20_000)).quad();
        Dec::from_quad(context().scaleb(self.quad(), shift))
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
    fn round_trips_through_the_bson_encoding_and_libdecnumber() {
        for text in [
            "0",
            "-0",
            "1.5",
            "-123.456",
            "1E+6111",
            "1E-6176",
            "0E-6176",
            "-0E+6111",
            "9999999999999999999999999999999999",
            "-9.999999999999999999999999999999999E+6144",
            "NaN",
            "Infinity",
            "-Infinity",
        ] {
            let value = dec(text);
            assert_eq!(
                show(value),
                text.parse::<Decimal128>().unwrap().to_string(),
                "{text}"
            );
            assert_eq!(Dec::from_quad(value.quad()), value, "{text}");
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
    fn mongodb_string_forms() {
        for (text, shown) in [
            ("1000", "1000"),
            ("1E+3", "1E+3"),
            ("0.001", "0.001"),
            ("1E-7", "1E-7"),
            ("0.0000001", "1E-7"),
            ("-0", "-0"),
            ("-0.00", "-0.00"),
            ("nan", "NaN"),
            ("-inf", "-Infinity"),
            (
                "12345678901234567890123456789012345",
                "1.234567890123456789012345678901234E+34",
            ),
        ] {
            let parsed = Dec::parse(text).unwrap().unwrap();
            assert_eq!(show(parsed), shown, "{text}");
        }
        assert_eq!(Dec::parse("1E+7000"), Some(Err("overflow")));
        assert_eq!(Dec::parse("1E-7000"), Some(Err("underflow")));
        assert_eq!(Dec::parse("sNaN"), None);
        assert_eq!(Dec::parse("1.2.3"), None);
        assert_eq!(Dec::parse(""), None);
    }

    #[test]
    fn results_carry_the_preferred_exponents() {
        // Sums and differences keep the smaller exponent, products add them, quotients aim
        // at the difference: IEEE 754-2008 as MongoDB's decimal library computes.
        assert_eq!(show(dec("1.0").plus(dec("2.00"))), "3.00");
        assert_eq!(show(dec("1.5").plus(Dec::from_i64(1))), "2.5");
        assert_eq!(show(dec("12.34").plus(dec("0.66"))), "13.00");
        assert_eq!(show(dec("5").plus(dec("0E-2"))), "5.00");
        assert_eq!(show(dec("1E+3").plus(dec("1E+3"))), "2E+3");
        assert_eq!(show(dec("1.0").minus(dec("1.0"))), "0.0");
        assert_eq!(show(dec("1").minus(dec("1"))), "0");
        assert_eq!(show(dec("-0").plus(dec("-0"))), "-0");
        assert_eq!(show(Dec::ZERO.plus(dec("-0"))), "0");
        assert_eq!(show(dec("1.50").times(dec("2"))), "3.00");
        assert_eq!(show(dec("1.5").times(dec("2"))), "3.0");
        assert_eq!(show(dec("-0").times(dec("5"))), "-0");
        assert_eq!(show(dec("1E+2").times(dec("1E+3"))), "1E+5");
        assert_eq!(show(dec("10").divided_by(dec("2"))), "5");
        assert_eq!(show(dec("1.00").divided_by(dec("2"))), "0.50");
        assert_eq!(show(dec("1").divided_by(dec("4"))), "0.25");
        assert_eq!(show(dec("1E+3").divided_by(dec("1E+1"))), "1E+2");
        assert_eq!(show(dec("0.5").divided_by(dec("2"))), "0.25");
        assert_eq!(show(dec("1").divided_by(dec("0"))), "Infinity");
        assert_eq!(show(dec("0").divided_by(dec("0"))), "NaN");
    }

    #[test]
    fn arithmetic_rounds_half_even_to_34_digits() {
        assert_eq!(
            show(dec("1E+40").plus(dec("1E-40"))),
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
            show(dec("1234567890123456789012345678901234").plus(dec("0.50001"))),
            "1234567890123456789012345678901235"
        );
        assert_eq!(
            show(dec("10").divided_by(dec("3"))),
            "3.333333333333333333333333333333333"
        );
        assert_eq!(
            show(dec("100").divided_by(dec("7"))),
            "14.28571428571428571428571428571429"
        );
        assert_eq!(
            show(dec("9.999999999999999999999999999999999E+6144").divided_by(dec("2"))),
            "5.000000000000000000000000000000000E+6144"
        );
        assert_eq!(
            show(dec("9.999999999999999999999999999999999E+6144").times(dec("10"))),
            "Infinity"
        );
        assert_eq!(show(dec("1E-6176").divided_by(dec("4"))), "0E-6176");
    }

    #[test]
    fn remainder_keeps_the_dividend_sign() {
        assert_eq!(show(dec("7").remainder(dec("3"))), "1");
        assert_eq!(show(dec("-7.5").remainder(dec("2"))), "-1.5");
        assert_eq!(show(dec("7.50").remainder(dec("2"))), "1.50");
        assert_eq!(show(dec("-6").remainder(dec("3"))), "-0");
        // Quotients beyond 34 digits stay exact.
        assert_eq!(show(dec("1E+40").remainder(dec("3"))), "1");
        assert_eq!(show(dec("1E+6111").remainder(dec("7"))), "6");
        assert_eq!(show(dec("1E+6111").remainder(dec("1E-6176"))), "0E-6176");
        assert_eq!(show(dec("5").remainder(dec("Infinity"))), "5");
        assert_eq!(show(dec("Infinity").remainder(dec("5"))), "NaN");
    }

    #[test]
    fn quantize_in_each_direction() {
        assert_eq!(show(dec("2.5").quantize(0, Rounding::HalfEven)), "2");
        assert_eq!(show(dec("3.5").quantize(0, Rounding::HalfEven)), "4");
        assert_eq!(show(dec("-2.7").quantize(0, Rounding::TowardZero)), "-2");
        assert_eq!(show(dec("2.1").quantize(0, Rounding::TowardPositive)), "3");
        assert_eq!(
            show(dec("-2.1").quantize(0, Rounding::TowardNegative)),
            "-3"
        );
        assert_eq!(show(dec("1.2345").quantize(-2, Rounding::HalfEven)), "1.23");
        assert_eq!(show(dec("1.2").quantize(-3, Rounding::HalfEven)), "1.200");
        assert_eq!(show(dec("-0.4").quantize(0, Rounding::HalfEven)), "-0");
        assert_eq!(dec("1E+40").quantize(0, Rounding::HalfEven), Dec::NaN);
    }

    #[test]
    fn conversions() {
        assert_eq!(show(Dec::from_f64(0.1, 15)), "0.100000000000000");
        assert_eq!(show(Dec::from_f64(1.0, 15)), "1.00000000000000");
        assert_eq!(show(Dec::from_f64(1e300, 15)), "1.00000000000000E+300");
        assert_eq!(Dec::from_f64(-2.5, 15).to_f64(), -2.5);
        assert_eq!(dec("2.5").to_i64_rounded(), Some(2));
        assert_eq!(dec("3.5").to_i64_rounded(), Some(4));
        assert_eq!(dec("1.5").to_i64_exact(), None);
        assert_eq!(dec("12E+1").to_i64_exact(), Some(120));
        assert_eq!(dec("1E+30").to_i64_exact(), None);
        assert_eq!(dec("-9223372036854775808").to_i64_exact(), Some(i64::MIN));
        assert_eq!(show(dec("1.5").scale_by_pow10(3)), "1.5E+3");
        assert_eq!(show(dec("-7").scale_by_pow10(-2)), "-0.07");
    }
}
