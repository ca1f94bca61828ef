//! Decimal128 transcendental functions for `$sqrt`, `$exp`, `$ln`, `$log10`, `$log` and `$pow`,
//! on libdecNumber's arbitrary-precision functions at decimal128's 34 digits: correctly rounded
//! (`$pow` within one unit in the last place), exact where the result is exact (`sqrt(2.25)`,
//! `log10(1000)`, `2^10`, `exp(0)`), with IEEE 754-2008's preferred exponents.

use super::decimal::Dec;
use dec::{Context, Decimal};

/// libdecNumber's arbitrary-precision number, wide enough for 34 digits (12 units of 3).
type Wide = Decimal<12>;

/// A context at decimal128's precision and exponent range (which libdecNumber's exp, ln and
/// log10 also require to be within their limits), rounding half to even.
fn context() -> Context<Wide> {
    let mut cx = Context::<Wide>::default();
    cx.set_precision(34).expect("34 digits fit 12 units");
    cx.set_max_exponent(6144).expect("decimal128's emax");
    cx.set_min_exponent(-6143).expect("decimal128's emin");
    cx.set_clamp(true);
    cx
}

fn wide(x: Dec) -> Wide {
    Wide::from(x.quad())
}

fn narrow(x: &Wide) -> Dec {
    Dec::from_quad(x.to_decimal128())
}

fn unary(x: Dec, f: impl FnOnce(&mut Context<Wide>, &mut Wide)) -> Dec {
    let mut value = wide(x);
    f(&mut context(), &mut value);
    narrow(&value)
}

/// Correctly rounded square root (NaN for negative numbers; `-0` stays `-0`).
pub fn sqrt(x: Dec) -> Dec {
    unary(x, |cx, v| cx.sqrt(v))
}

/// Natural logarithm (NaN for negative numbers, -Infinity for zero).
pub fn ln(x: Dec) -> Dec {
    unary(x, |cx, v| cx.ln(v))
}

/// Base-10 logarithm: exact for powers of ten.
pub fn log10(x: Dec) -> Dec {
    unary(x, |cx, v| cx.log10(v))
}

/// e^x.
pub fn exp(x: Dec) -> Dec {
    unary(x, |cx, v| cx.exp(v))
}

/// base^exponent; the caller has rejected a zero base with a negative exponent.
pub fn pow(base: Dec, exponent: Dec) -> Dec {
    let power = wide(exponent);
    unary(base, |cx, v| cx.pow(v, &power))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expression::decimal::tests::{dec, show};

    #[test]
    fn square_roots_are_exact_when_they_can_be() {
        assert_eq!(show(sqrt(dec("25"))), "5");
        assert_eq!(show(sqrt(dec("2.25"))), "1.5");
        assert_eq!(show(sqrt(dec("1E+100"))), "1E+50");
        assert_eq!(show(sqrt(dec("-0"))), "-0");
        assert_eq!(show(sqrt(dec("4.0"))), "2.0");
        assert_eq!(show(sqrt(dec("2"))), "1.414213562373095048801688724209698");
        assert_eq!(
            show(sqrt(dec("1E-3001"))),
            "3.162277660168379331998893544432719E-1501"
        );
        assert_eq!(show(sqrt(dec("-1"))), "NaN");
    }

    #[test]
    fn logarithms() {
        assert_eq!(show(log10(dec("1000"))), "3");
        assert_eq!(show(log10(dec("0.01"))), "-2");
        assert_eq!(show(ln(dec("10"))), "2.302585092994045684017991454684364");
        assert_eq!(show(ln(dec("2"))), "0.6931471805599453094172321214581766");
        assert_eq!(
            show(ln(dec("0.5"))),
            "-0.6931471805599453094172321214581766"
        );
        assert_eq!(
            show(ln(dec("12345.678"))),
            "9.421061321291831976526783991071446"
        );
        assert_eq!(
            show(log10(dec("2"))),
            "0.3010299956639811952137388947244930"
        );
        assert_eq!(show(ln(dec("1"))), "0");
        assert_eq!(show(ln(dec("0"))), "-Infinity");
    }

    #[test]
    fn exponentials_and_powers() {
        assert_eq!(show(exp(dec("0"))), "1");
        assert_eq!(show(exp(dec("1"))), "2.718281828459045235360287471352662");
        assert_eq!(
            show(exp(dec("-2.5"))),
            "0.08208499862389879516952867446715981"
        );
        assert_eq!(
            show(exp(dec("100"))),
            "2.688117141816135448412625551580014E+43"
        );
        assert_eq!(show(exp(dec("-Infinity"))), "0");
        assert_eq!(show(exp(dec("1E+5"))), "Infinity");
        assert_eq!(show(pow(dec("2"), dec("10"))), "1024");
        assert_eq!(show(pow(dec("2"), dec("-2"))), "0.25");
        assert_eq!(show(pow(dec("-3"), dec("3"))), "-27");
        assert_eq!(show(pow(dec("1.5"), dec("2"))), "2.25");
        assert_eq!(
            show(pow(dec("2"), dec("0.5"))),
            "1.414213562373095048801688724209698"
        );
        assert_eq!(pow(dec("-2"), dec("0.5")), Dec::NaN);
    }
}
