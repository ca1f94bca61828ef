//! Unit and property tests of numeric comparison and decimal128 decoding, and the decimal
//! helpers and number strategies other modules' tests use.

use super::*;
use proptest::prelude::*;
use std::cmp::Ordering;
use std::str::FromStr;

pub(crate) fn dec(s: &str) -> Decimal128 {
    Decimal128::from_str(s).expect("valid decimal literal")
}

pub(crate) fn dec_parts(negative: bool, coefficient: u128, exponent: i32) -> Decimal128 {
    DecimalParts::Finite {
        negative,
        coefficient,
        exponent,
    }
    .to_decimal128()
    .expect("in range")
}

fn cmp(a: Number, b: Number) -> Ordering {
    compare(a, b)
}

#[test]
fn ints_and_doubles_compare_exactly() {
    let big = i64::MAX;
    assert_eq!(
        compare(Number::Int(big), Number::Double(big as f64)),
        Ordering::Less
    );
    assert_eq!(
        compare(Number::Int(3), Number::Double(3.0)),
        Ordering::Equal
    );
    assert_eq!(compare(Number::Int(3), Number::Double(3.5)), Ordering::Less);
    assert_eq!(
        compare(Number::Int(-3), Number::Double(-3.5)),
        Ordering::Greater
    );
    assert_eq!(
        compare(Number::Double(f64::NAN), Number::Int(i64::MIN)),
        Ordering::Less
    );
    assert_eq!(
        compare(Number::Double(-0.0), Number::Int(0)),
        Ordering::Equal
    );
}

#[test]
fn decodes_both_coefficient_forms_and_specials() {
    assert_eq!(
        DecimalParts::from_decimal128(dec("1.0")),
        DecimalParts::Finite {
            negative: false,
            coefficient: 10,
            exponent: -1
        }
    );
    assert_eq!(
        DecimalParts::from_decimal128(dec("-0E+3")),
        DecimalParts::Finite {
            negative: true,
            coefficient: 0,
            exponent: 3
        }
    );
    assert_eq!(
        DecimalParts::from_decimal128(dec("9.999999999999999999999999999999999E+6144")),
        DecimalParts::Finite {
            negative: false,
            coefficient: DECIMAL128_MAX_COEFFICIENT,
            exponent: 6111
        }
    );
    assert_eq!(
        DecimalParts::from_decimal128(dec("1E-6176")),
        DecimalParts::Finite {
            negative: false,
            coefficient: 1,
            exponent: -6176
        }
    );
    assert_eq!(
        DecimalParts::from_decimal128(dec("Infinity")),
        DecimalParts::Infinity { negative: false }
    );
    assert_eq!(
        DecimalParts::from_decimal128(dec("-Infinity")),
        DecimalParts::Infinity { negative: true }
    );
    assert!(matches!(
        DecimalParts::from_decimal128(dec("NaN")),
        DecimalParts::NaN {
            signaling: false,
            ..
        }
    ));
    // sNaN: combination 11111 with the next bit set.
    let snan = Decimal128::from_bytes(((0b111111u128) << 121).to_le_bytes());
    assert!(matches!(
        DecimalParts::from_decimal128(snan),
        DecimalParts::NaN {
            signaling: true,
            ..
        }
    ));
    // Second form (combination starts with 11): implicit 100 prefix, always non-canonical.
    let large_form =
        Decimal128::from_bytes(((0b11u128 << 125) | (6176u128 << 111) | 5).to_le_bytes());
    assert_eq!(
        DecimalParts::from_decimal128(large_form),
        DecimalParts::Finite {
            negative: false,
            coefficient: 0,
            exponent: 0
        }
    );
    // First form with a coefficient above 10^34 - 1 reads as zero.
    let too_big = Decimal128::from_bytes(((6176u128 << 113) | ((1u128 << 113) - 1)).to_le_bytes());
    assert_eq!(
        compare(Number::Decimal(too_big), Number::Int(0)),
        Ordering::Equal
    );
}

#[test]
fn decimals_compare_exactly_with_every_type() {
    use Number::{Decimal as D, Double as F, Int as I};
    assert_eq!(cmp(D(dec("1.0")), I(1)), Ordering::Equal);
    assert_eq!(cmp(D(dec("1.00")), F(1.0)), Ordering::Equal);
    assert_eq!(cmp(D(dec("-0")), F(0.0)), Ordering::Equal);
    assert_eq!(cmp(D(dec("0E+6111")), F(-0.0)), Ordering::Equal);
    assert_eq!(cmp(D(dec("0.1")), F(0.1)), Ordering::Less); // 0.1 as a double is a bit above
    assert_eq!(cmp(D(dec("0.3")), F(0.3)), Ordering::Greater); // and 0.3 a bit below
    // 0.1 as a double is 0.1000000000000000055511151231257827021181583404541015625.
    assert_eq!(
        cmp(D(dec("0.1000000000000000055511151231257827")), F(0.1)),
        Ordering::Less
    );
    assert_eq!(
        cmp(D(dec("0.1000000000000000055511151231257828")), F(0.1)),
        Ordering::Greater
    );
    assert_eq!(
        cmp(D(dec("9223372036854775807")), I(i64::MAX)),
        Ordering::Equal
    );
    assert_eq!(
        cmp(D(dec("9223372036854775806.9")), I(i64::MAX)),
        Ordering::Less
    );
    assert_eq!(
        cmp(D(dec("9223372036854775808")), I(i64::MAX)),
        Ordering::Greater
    );
    assert_eq!(
        cmp(D(dec("9007199254740993")), F(9007199254740992.0)),
        Ordering::Greater
    );
    assert_eq!(cmp(D(dec("1E+400")), F(f64::MAX)), Ordering::Greater);
    assert_eq!(cmp(D(dec("1E+400")), F(f64::INFINITY)), Ordering::Less);
    assert_eq!(cmp(D(dec("Infinity")), F(f64::INFINITY)), Ordering::Equal);
    assert_eq!(
        cmp(D(dec("-Infinity")), F(f64::NEG_INFINITY)),
        Ordering::Equal
    );
    assert_eq!(cmp(D(dec("-Infinity")), F(f64::NAN)), Ordering::Greater);
    assert_eq!(cmp(D(dec("NaN")), F(f64::NAN)), Ordering::Equal);
    assert_eq!(cmp(D(dec("NaN")), D(dec("-Infinity"))), Ordering::Less);
    assert_eq!(cmp(D(dec("1E-6176")), F(5e-324)), Ordering::Less);
    assert_eq!(cmp(D(dec("1E-6176")), I(0)), Ordering::Greater);
    assert_eq!(cmp(D(dec("-1E-6176")), I(0)), Ordering::Less);
    // The smallest subnormal double is 4.94065645841246544176568792868221372365059...E-324.
    assert_eq!(
        cmp(
            D(dec("4.940656458412465441765687928682213E-324")),
            F(5e-324)
        ),
        Ordering::Less
    );
    assert_eq!(
        cmp(
            D(dec("4.940656458412465441765687928682214E-324")),
            F(5e-324)
        ),
        Ordering::Greater
    );
    assert_eq!(cmp(D(dec("-2.5")), D(dec("-2.50000"))), Ordering::Equal);
    assert_eq!(
        cmp(D(dec("-2.5")), D(dec("-2.4999999999999999999999999999999"))),
        Ordering::Less
    );
}

#[test]
fn floor_of_abs_places_values_between_doubles() {
    let floor = |n| floor_f64_of_abs(n).unwrap();
    assert_eq!(
        floor(Number::Decimal(dec("0.1"))),
        (0.09999999999999999, false)
    );
    assert_eq!(floor(Number::Decimal(dec("-0.5"))), (0.5, true));
    assert_eq!(floor(Number::Decimal(dec("1E+400"))), (f64::MAX, false));
    assert_eq!(floor(Number::Decimal(dec("1E-400"))), (0.0, false));
    assert_eq!(
        floor(Number::Int(i64::MIN)),
        (9_223_372_036_854_775_808.0, true)
    );
    assert_eq!(
        floor(Number::Int(9_007_199_254_740_993)),
        (9_007_199_254_740_992.0, false)
    );
    assert_eq!(floor_f64_of_abs(Number::Double(f64::NAN)), None);
}

#[test]
fn to_f64_rounds_decimals_correctly() {
    assert_eq!(Number::Decimal(dec("0.1")).to_f64(), 0.1);
    assert_eq!(Number::Decimal(dec("-1E+400")).to_f64(), f64::NEG_INFINITY);
    assert_eq!(Number::Decimal(dec("1E-400")).to_f64(), 0.0);
    assert!(Number::Decimal(dec("NaN")).to_f64().is_nan());
}

/// Exact value as (sign, decimal exponent of the leading digit, digits without leading or
/// trailing zeros), computed with schoolbook digit arithmetic: an oracle independent of the
/// big-integer path above. `None` stands for NaN and infinities, which the caller handles.
pub(crate) fn exact_decimal(n: Number) -> Option<(bool, i64, Vec<u8>)> {
    fn digits_of(mut v: u128) -> Vec<u8> {
        let mut out = Vec::new();
        while v > 0 {
            out.push((v % 10) as u8);
            v /= 10;
        }
        out.reverse();
        out
    }
    /// `m * base^power` in decimal digits, through little-endian limbs of nine digits.
    fn scaled_digits(m: u64, base: u64, power: i64) -> Vec<u8> {
        const LIMB: u64 = 1_000_000_000;
        let mut limbs = vec![m % LIMB, (m / LIMB) % LIMB, m / LIMB / LIMB];
        let mut remaining = power;
        while remaining > 0 {
            // Up to 2^29 or 5^12 per step keeps every product below 2^64.
            let step = remaining.min(if base == 2 { 29 } else { 12 });
            let factor = base.pow(step as u32);
            let mut carry = 0u64;
            for limb in &mut limbs {
                let p = *limb * factor + carry;
                *limb = p % LIMB;
                carry = p / LIMB;
            }
            while carry > 0 {
                limbs.push(carry % LIMB);
                carry /= LIMB;
            }
            remaining -= step;
        }
        let text: String = limbs.iter().rev().map(|l| format!("{l:09}")).collect();
        text.trim_start_matches('0')
            .bytes()
            .map(|b| b - b'0')
            .collect()
    }
    // value = digits (as an integer) * 10^scale
    let (negative, mut digits, mut scale): (bool, Vec<u8>, i64) = match n {
        Number::Int(v) => (v < 0, digits_of(u128::from(v.unsigned_abs())), 0),
        Number::Double(d) => {
            if !d.is_finite() {
                return None;
            }
            let bits = d.to_bits();
            let biased = ((bits >> 52) & 0x7ff) as i64;
            let fraction = bits & ((1u64 << 52) - 1);
            let (m, e) = if biased == 0 {
                (fraction, -1074)
            } else {
                (fraction | (1 << 52), biased - 1075)
            };
            if e >= 0 {
                (d < 0.0, scaled_digits(m, 2, e), 0)
            } else {
                // m / 2^k = m * 5^k / 10^k
                (d < 0.0, scaled_digits(m, 5, -e), e)
            }
        }
        Number::Decimal(x) => match DecimalParts::from_decimal128(x) {
            DecimalParts::Finite {
                negative,
                coefficient,
                exponent,
            } => (negative, digits_of(coefficient), i64::from(exponent)),
            _ => return None,
        },
    };
    while digits.last() == Some(&0) {
        digits.pop();
        scale += 1;
    }
    if digits.is_empty() {
        return Some((false, 0, Vec::new()));
    }
    let leading = scale + digits.len() as i64 - 1;
    Some((negative, leading, digits))
}

/// The oracle order: NaN < -inf < finite < +inf, finite by exact decimal value.
pub(crate) fn oracle_compare(a: Number, b: Number) -> Ordering {
    fn class(n: Number) -> (u8, Option<(bool, i64, Vec<u8>)>) {
        if n.is_nan() {
            return (0, None);
        }
        match exact_decimal(n) {
            Some(v) => (2, Some(v)),
            None => (if n.to_f64() < 0.0 { 1 } else { 3 }, None),
        }
    }
    let (ca, va) = class(a);
    let (cb, vb) = class(b);
    match (va, vb) {
        (Some((na, ea, da)), Some((nb, eb, db))) => {
            let sign = |neg: bool, d: &Vec<u8>| {
                if d.is_empty() {
                    1
                } else if neg {
                    0
                } else {
                    2
                }
            };
            let (sa, sb) = (sign(na, &da), sign(nb, &db));
            if sa != sb {
                return sa.cmp(&sb);
            }
            let ord = ea.cmp(&eb).then_with(|| da.cmp(&db));
            match sa {
                0 => ord.reverse(),
                1 => Ordering::Equal,
                _ => ord,
            }
        }
        _ => ca.cmp(&cb),
    }
}

pub(crate) fn arb_number() -> impl Strategy<Value = Number> {
    let edge_doubles = prop::sample::select(vec![
        f64::NAN,
        -f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        0.0,
        -0.0,
        f64::MAX,
        f64::MIN,
        f64::MIN_POSITIVE,
        5e-324,
        -5e-324,
        9_007_199_254_740_992.0,
        9_007_199_254_740_994.0,
        9_223_372_036_854_775_808.0,
        -9_223_372_036_854_775_808.0,
        0.1,
        0.3,
        1.0,
        -1.0,
        2.5,
    ]);
    let edge_ints = prop::sample::select(vec![
        i64::MIN,
        i64::MAX,
        i64::MIN + 1,
        0,
        1,
        -1,
        9_007_199_254_740_992,
        9_007_199_254_740_993,
        -9_007_199_254_740_993,
        9_007_199_254_740_991,
    ]);
    let coefficient = prop_oneof![
        0u128..1000,
        0u128..=DECIMAL128_MAX_COEFFICIENT,
        Just(DECIMAL128_MAX_COEFFICIENT),
        Just(9_007_199_254_740_993u128),
        Just(9_223_372_036_854_775_807u128),
    ];
    let exponent = prop_oneof![
        -6i32..6,
        -40i32..40,
        DECIMAL128_MIN_EXPONENT..=DECIMAL128_MAX_EXPONENT,
        Just(DECIMAL128_MIN_EXPONENT),
        Just(DECIMAL128_MAX_EXPONENT),
        -360i32..-300,
    ];
    let finite_decimal = (any::<bool>(), coefficient, exponent)
        .prop_map(|(n, c, e)| Number::Decimal(dec_parts(n, c, e)));
    let special_decimal = prop::sample::select(vec![
        "NaN",
        "-NaN",
        "Infinity",
        "-Infinity",
        "0",
        "-0",
        "1.0",
        "0.1",
        "-2.50",
    ])
    .prop_map(|s| Number::Decimal(dec(s)));
    prop_oneof![
        2 => any::<i64>().prop_map(Number::Int),
        1 => any::<i32>().prop_map(|v| Number::Int(i64::from(v))),
        1 => edge_ints.prop_map(Number::Int),
        2 => any::<f64>().prop_map(Number::Double),
        1 => (-1000i32..1000, 0u32..8).prop_map(|(n, s)| Number::Double(f64::from(n) / f64::from(1u32 << s))),
        1 => edge_doubles.prop_map(Number::Double),
        3 => finite_decimal,
        1 => special_decimal,
        // Decimals equal to ints and doubles, so that equality across types gets exercised.
        1 => any::<i64>().prop_map(|v| Number::Decimal(dec(&v.to_string()))),
        1 => (-1000i32..1000, 0u32..8).prop_map(|(n, s)| Number::Decimal(dec(&(f64::from(n) / f64::from(1u32 << s)).to_string()))),
        // Decimals within a hair of a double (34 or 17 significant digits of it), so that
        // values sharing a floor double get exercised.
        2 => (any::<f64>().prop_filter("finite", |d| d.is_finite()), prop::sample::select(vec![33usize, 16, 20]))
            .prop_map(|(d, precision)| Number::Decimal(dec(&format!("{d:.precision$e}")))),
    ]
}

/// Numbers packed around a few anchors (neighbouring doubles, decimals a unit in the 34th
/// digit away, integers and half-integers beside large doubles), so that random pairs often
/// share the double just below them, or are equal across types.
pub(crate) fn arb_clustered_number() -> impl Strategy<Value = Number> {
    let anchors = prop::sample::select(vec![
        0.1,
        -0.1,
        1.0 / 3.0,
        1.5,
        -2.0,
        0.0,
        9_007_199_254_740_992.0,
        -9_007_199_254_740_992.0,
        9_223_372_036_854_775_808.0,
        1e300,
        -1e-300,
        5e-324,
        f64::MAX,
    ]);
    (anchors, 0u8..7, -2i64..=2).prop_map(|(anchor, variant, k)| {
        let digits34 = dec(&format!("{anchor:.33e}"));
        match variant {
            0 => Number::Double(anchor),
            1 => Number::Double(f64::from_bits(anchor.to_bits().wrapping_add_signed(k))),
            2 => Number::Decimal(digits34),
            3 => match DecimalParts::from_decimal128(digits34) {
                DecimalParts::Finite {
                    negative,
                    coefficient,
                    exponent,
                } => {
                    let c = coefficient
                        .saturating_add_signed(i128::from(k))
                        .min(DECIMAL128_MAX_COEFFICIENT);
                    Number::Decimal(dec_parts(negative, c, exponent))
                }
                _ => Number::Decimal(digits34),
            },
            4 => Number::Decimal(dec(&format!("{anchor:.16e}"))),
            5 => Number::Int((anchor as i64).saturating_add(k)),
            _ => Number::Decimal(dec(&format!("{}.5", (anchor as i64).saturating_add(k)))),
        }
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn compare_matches_the_digit_oracle(a in arb_number(), b in arb_number()) {
        prop_assert_eq!(compare(a, b), oracle_compare(a, b), "{:?} vs {:?}", a, b);
        prop_assert_eq!(compare(b, a), compare(a, b).reverse());
    }

    #[test]
    fn compare_matches_the_digit_oracle_on_close_numbers(a in arb_clustered_number(), b in arb_clustered_number()) {
        prop_assert_eq!(compare(a, b), oracle_compare(a, b), "{:?} vs {:?}", a, b);
    }

    #[test]
    fn floor_of_abs_is_the_largest_double_not_above(n in prop_oneof![arb_number(), arb_clustered_number()]) {
        if let Some((floor, exact)) = floor_f64_of_abs(n) {
            let abs = match n {
                Number::Int(v) => Number::Decimal(dec(&v.unsigned_abs().to_string())),
                Number::Double(d) => Number::Double(d.abs()),
                Number::Decimal(d) => {
                    let mut bytes = d.bytes();
                    bytes[15] &= 0x7f;
                    Number::Decimal(Decimal128::from_bytes(bytes))
                }
            };
            let ord = oracle_compare(Number::Double(floor), abs);
            prop_assert_eq!(ord, if exact { Ordering::Equal } else { Ordering::Less });
            if floor < f64::INFINITY {
                let next = f64::from_bits(floor.to_bits() + 1);
                prop_assert_eq!(oracle_compare(Number::Double(next), abs), Ordering::Greater);
            }
        } else {
            prop_assert!(n.is_nan());
        }
    }

    #[test]
    fn decimal_parts_round_trip(n in any::<bool>(), c in 0u128..=DECIMAL128_MAX_COEFFICIENT, e in DECIMAL128_MIN_EXPONENT..=DECIMAL128_MAX_EXPONENT) {
        let d = dec_parts(n, c, e);
        prop_assert_eq!(DecimalParts::from_decimal128(d), DecimalParts::Finite { negative: n, coefficient: c, exponent: e });
        // The bson crate's own parser agrees on the value.
        let reparsed = dec(&d.to_string());
        prop_assert_eq!(compare(Number::Decimal(reparsed), Number::Decimal(d)), Ordering::Equal);
    }
}
