//! Decimal128 transcendental functions for `$sqrt`, `$exp`, `$ln`, `$log10`, `$log` and `$pow`:
//! computed with 34-digit decimal arithmetic after range reduction, so results agree with the
//! server's to about 31 significant digits, and exactly where the result is exact (`sqrt(2.25)`,
//! `log10(1000)`, `2^10`, `exp(0)`).

use super::decimal::Dec;

/// ln 10 and ln 2 to 34 significant digits.
const LN10: &str = "2.302585092994045684017991454684364";
const LN2: &str = "0.6931471805599453094172321214581766";

fn constant(text: &str) -> Dec {
    match Dec::parse(text) {
        Some(Ok(value)) => value,
        _ => Dec::NaN,
    }
}

fn int(value: i64) -> Dec {
    Dec::from_i64(value)
}

/// Splits a positive finite value into `m × 10^n` with `m` in [1, 10).
fn split_pow10(coeff: u128, exp: i32) -> (Dec, i64) {
    let digits = i64::from(coeff.checked_ilog10().unwrap_or(0));
    let m = Dec::Finite {
        neg: false,
        coeff,
        exp: -(digits as i32),
    };
    (m, i64::from(exp) + digits)
}

/// Correctly signed square root; the caller has rejected negative numbers.
pub fn sqrt(x: Dec) -> Dec {
    let Dec::Finite { neg, coeff, exp } = x else {
        return x;
    };
    if coeff == 0 {
        return Dec::Finite {
            neg,
            coeff: 0,
            exp: exp.div_euclid(2),
        };
    }
    if neg {
        return Dec::NaN;
    }
    // x = m × 10^(2h) with m in a range a double handles.
    let (_, n) = split_pow10(coeff, exp);
    let h = n.div_euclid(2);
    let m = x.scale_by_pow10(-2 * h);
    let mut y = Dec::from_f64(m.to_f64().sqrt(), 17);
    let half = constant("0.5");
    for _ in 0..4 {
        y = y.plus(m.divided_by(y)).times(half);
    }
    let y = strip_to_exact(y, m, i64::from(exp.div_euclid(2)) - h, |r| r.times(r));
    y.scale_by_pow10(h)
}

/// Drops trailing zeros of `y` down to the ideal exponent while `check(y)` still equals
/// `target` exactly: exact results take the exponent IEEE prescribes (`sqrt(2.25)` is `1.5`).
fn strip_to_exact(y: Dec, target: Dec, ideal: i64, check: impl Fn(Dec) -> Dec) -> Dec {
    let Dec::Finite {
        neg,
        mut coeff,
        mut exp,
    } = y
    else {
        return y;
    };
    while i64::from(exp) < ideal && coeff % 10 == 0 && coeff != 0 {
        coeff /= 10;
        exp += 1;
    }
    let stripped = Dec::Finite { neg, coeff, exp };
    if check(stripped).minus(target).is_zero() {
        stripped
    } else {
        y
    }
}

/// Natural logarithm of a positive value (NaN for others, as the callers check first).
pub fn ln(x: Dec) -> Dec {
    match x {
        Dec::NaN => Dec::NaN,
        Dec::Inf { neg: false } => x,
        Dec::Finite {
            neg: false,
            coeff,
            exp,
        } if coeff != 0 => {
            let (m, n) = split_pow10(coeff, exp);
            ln_unit(m).plus(constant(LN10).times(int(n)))
        }
        _ => Dec::NaN,
    }
}

/// ln m for m in [1, 10): m = 2^k × z with z near 1, then ln z = 2 atanh((z-1)/(z+1)).
fn ln_unit(m: Dec) -> Dec {
    let k = m.to_f64().log2().round() as i64;
    let z = m.divided_by(int(1 << k));
    let one = int(1);
    let t = z.minus(one).divided_by(z.plus(one));
    let t2 = t.times(t);
    let (mut sum, mut power) = (t, t);
    for n in (3..200).step_by(2) {
        power = power.times(t2);
        let term = power.divided_by(int(n));
        let next = sum.plus(term);
        if next == sum {
            break;
        }
        sum = next;
    }
    constant(LN2).times(int(k)).plus(sum.times(int(2)))
}

/// Base-10 logarithm: exact for powers of ten.
pub fn log10(x: Dec) -> Dec {
    if let Dec::Finite {
        neg: false,
        coeff,
        exp,
    } = x
    {
        let (m, n) = split_pow10(coeff, exp);
        if m.minus(int(1)).is_zero() {
            return int(n);
        }
        return ln(x).divided_by(constant(LN10));
    }
    ln(x)
}

/// e^x.
pub fn exp(x: Dec) -> Dec {
    let Dec::Finite { neg, coeff, .. } = x else {
        return match x {
            Dec::Inf { neg: true } => Dec::ZERO,
            other => other,
        };
    };
    if coeff == 0 {
        return int(1);
    }
    let approx = x.to_f64();
    if approx > 14_200.0 {
        return Dec::Inf { neg: false };
    }
    if approx < -14_300.0 || (neg && approx.is_infinite()) {
        return Dec::ZERO;
    }
    // e^x = 10^q × e^r with |r| ≤ ln(10)/2, then e^r = (e^(r/8))^8 by Taylor series.
    let q = (approx / std::f64::consts::LN_10).round() as i64;
    let r = x.minus(constant(LN10).times(int(q)));
    let small = r.divided_by(int(8));
    let (mut sum, mut term) = (int(1), int(1));
    for n in 1..60 {
        term = term.times(small).divided_by(int(n));
        let next = sum.plus(term);
        if next == sum {
            break;
        }
        sum = next;
    }
    let mut result = sum;
    for _ in 0..3 {
        result = result.times(result);
    }
    result.scale_by_pow10(q)
}

/// base^exponent; the caller has rejected a zero base with a negative exponent.
pub fn pow(base: Dec, exponent: Dec) -> Dec {
    if matches!(base, Dec::NaN) || matches!(exponent, Dec::NaN) {
        return Dec::NaN;
    }
    if exponent.is_zero() || base.minus(int(1)).is_zero() {
        return int(1);
    }
    let finite = |d: Dec| matches!(d, Dec::Finite { .. });
    if !finite(base) || !finite(exponent) {
        let value = base.to_f64().powf(exponent.to_f64());
        return Dec::from_f64(value, 34);
    }
    if let Some(n) = exponent.to_i64_exact() {
        if n.unsigned_abs() <= 1 << 32 {
            let magnitude = power_by_squaring(base, n.unsigned_abs());
            return if n < 0 {
                int(1).divided_by(magnitude)
            } else {
                magnitude
            };
        }
    }
    if base.is_negative() {
        return Dec::NaN;
    }
    if base.is_zero() {
        return Dec::ZERO;
    }
    exp(exponent.times(ln(base)))
}

fn power_by_squaring(mut base: Dec, mut n: u64) -> Dec {
    let mut result = int(1);
    while n > 0 {
        if n & 1 == 1 {
            result = result.times(base);
        }
        n >>= 1;
        if n > 0 {
            base = base.times(base);
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expression::decimal::tests::{dec, show};

    /// Agreement with a reference value to `digits` significant digits.
    fn close(value: Dec, expected: &str, digits: i32) -> bool {
        let expected = dec(expected);
        let tolerance = expected
            .abs()
            .times(Dec::parse(&format!("1E-{digits}")).unwrap().unwrap());
        let diff = value.minus(expected).abs();
        !diff.minus(tolerance).is_positive()
    }

    #[test]
    fn square_roots_are_exact_when_they_can_be() {
        assert_eq!(show(sqrt(dec("25"))), "5");
        assert_eq!(show(sqrt(dec("2.25"))), "1.5");
        assert_eq!(show(sqrt(dec("1E+100"))), "1E+50");
        assert_eq!(show(sqrt(dec("-0"))), "-0");
        assert!(close(
            sqrt(dec("2")),
            "1.414213562373095048801688724209698",
            32
        ));
        assert!(close(
            sqrt(dec("1E-3001")),
            "3.162277660168379331998893544432719E-1501",
            32
        ));
    }

    #[test]
    fn logarithms() {
        assert_eq!(show(log10(dec("1000"))), "3");
        assert_eq!(show(log10(dec("0.01"))), "-2");
        assert!(close(
            ln(dec("10")),
            "2.302585092994045684017991454684364",
            32
        ));
        assert!(close(
            ln(dec("2")),
            "0.6931471805599453094172321214581766",
            32
        ));
        assert!(close(
            ln(dec("0.5")),
            "-0.6931471805599453094172321214581766",
            32
        ));
        assert!(close(
            ln(dec("12345.678")),
            "9.421061321291831976526783991071446",
            31
        ));
        assert!(close(
            log10(dec("2")),
            "0.3010299956639811952137388947244930",
            31
        ));
        assert!(ln(dec("1")).is_zero());
    }

    #[test]
    fn exponentials_and_powers() {
        assert_eq!(show(exp(dec("0"))), "1");
        assert!(close(
            exp(dec("1")),
            "2.718281828459045235360287471352662",
            31
        ));
        assert!(close(
            exp(dec("-2.5")),
            "0.08208499862389879516952867446715980",
            31
        ));
        assert!(close(
            exp(dec("100")),
            "2.688117141816135448412625551580014E+43",
            30
        ));
        assert_eq!(show(pow(dec("2"), dec("10"))), "1024");
        assert_eq!(show(pow(dec("2"), dec("-2"))), "0.25");
        assert_eq!(show(pow(dec("-3"), dec("3"))), "-27");
        assert!(close(
            pow(dec("2"), dec("0.5")),
            "1.414213562373095048801688724209698",
            30
        ));
        assert_eq!(pow(dec("-2"), dec("0.5")), Dec::NaN);
    }
}
