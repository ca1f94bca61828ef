//! `$bucketAuto`'s `granularity`: rounding bucket boundaries up and down to a preferred number
//! series (Renard R5..R80, 1-2-5, E6..E192) or to powers of two, with MongoDB's result types
//! (doubles for the series, `$pow(2, n)` results for powers of two, decimals for decimals).

use crate::error::{MongoError, Result};
use crate::expression::decimal::Dec;
use crate::expression::numeric::{int_or_long, to_f64};
use crate::expression::value::{bson_type_name, compare, is_number};
use bson::Bson;
use std::cmp::Ordering;

const R5: &[f64] = &[10., 16., 25., 40., 63.];
const R10: &[f64] = &[100., 125., 160., 200., 250., 315., 400., 500., 630., 800.];
const R20: &[f64] = &[
    100., 112., 125., 140., 160., 180., 200., 224., 250., 280., 315., 355., 400., 450., 500., 560.,
    630., 710., 800., 900.,
];
const R40: &[f64] = &[
    100., 106., 112., 118., 125., 132., 140., 150., 160., 170., 180., 190., 200., 212., 224., 236.,
    250., 265., 280., 300., 315., 355., 375., 400., 425., 450., 475., 500., 530., 560., 600., 630.,
    670., 710., 750., 800., 850., 900., 950.,
];
const R80: &[f64] = &[
    103., 109., 115., 122., 128., 136., 145., 155., 165., 175., 185., 195., 206., 218., 230., 243.,
    258., 272., 290., 307., 325., 345., 365., 387., 412., 437., 462., 487., 515., 545., 575., 615.,
    650., 690., 730., 775., 825., 875., 925., 975.,
];
const S125: &[f64] = &[10., 20., 50.];
const E6: &[f64] = &[10., 15., 22., 33., 47., 68.];
const E12: &[f64] = &[10., 12., 15., 18., 22., 27., 33., 39., 47., 56., 68., 82.];
const E24: &[f64] = &[
    10., 11., 12., 13., 15., 16., 18., 20., 22., 24., 27., 30., 33., 36., 39., 43., 47., 51., 56.,
    62., 68., 75., 82., 91.,
];
const E48: &[f64] = &[
    100., 105., 110., 115., 121., 127., 133., 140., 147., 154., 162., 169., 178., 187., 196., 205.,
    215., 226., 237., 249., 261., 274., 287., 301., 316., 332., 348., 365., 383., 402., 422., 442.,
    464., 487., 511., 536., 562., 590., 619., 649., 681., 715., 750., 787., 825., 866., 909., 953.,
];
const E96: &[f64] = &[
    100., 102., 105., 107., 110., 113., 115., 118., 121., 124., 127., 130., 133., 137., 140., 143.,
    147., 150., 154., 158., 162., 165., 169., 174., 178., 182., 187., 191., 196., 200., 205., 210.,
    215., 221., 226., 232., 237., 243., 249., 255., 261., 267., 274., 280., 287., 294., 301., 309.,
    316., 324., 332., 340., 348., 357., 365., 374., 383., 392., 402., 412., 422., 432., 442., 453.,
    464., 475., 487., 499., 511., 523., 536., 549., 562., 576., 590., 604., 619., 634., 649., 665.,
    681., 698., 715., 732., 750., 768., 787., 806., 825., 845., 866., 887., 909., 931., 953., 976.,
];
const E192: &[f64] = &[
    100., 101., 102., 104., 105., 106., 107., 109., 110., 111., 113., 114., 115., 117., 118., 120.,
    121., 123., 124., 126., 127., 129., 130., 132., 133., 135., 137., 138., 140., 142., 143., 145.,
    147., 149., 150., 152., 154., 156., 158., 160., 162., 164., 165., 167., 169., 172., 174., 176.,
    178., 180., 182., 184., 187., 189., 191., 193., 196., 198., 200., 203., 205., 208., 210., 213.,
    215., 218., 221., 223., 226., 229., 232., 234., 237., 240., 243., 246., 249., 252., 255., 258.,
    261., 264., 267., 271., 274., 277., 280., 284., 287., 291., 294., 298., 301., 305., 309., 312.,
    316., 320., 324., 328., 332., 336., 340., 344., 348., 352., 357., 361., 365., 370., 374., 379.,
    383., 388., 392., 397., 402., 407., 412., 417., 422., 427., 432., 437., 442., 448., 453., 459.,
    464., 470., 475., 481., 487., 493., 499., 505., 511., 517., 523., 530., 536., 542., 549., 556.,
    562., 569., 576., 583., 590., 597., 604., 612., 619., 626., 634., 642., 649., 657., 665., 673.,
    681., 690., 698., 706., 715., 723., 732., 741., 750., 759., 768., 777., 787., 796., 806., 816.,
    825., 835., 845., 856., 866., 876., 887., 898., 909., 920., 931., 942., 953., 965., 976., 988.,
];

const SERIES: &[(&str, &[f64])] = &[
    ("R5", R5),
    ("R10", R10),
    ("R20", R20),
    ("R40", R40),
    ("R80", R80),
    ("1-2-5", S125),
    ("E6", E6),
    ("E12", E12),
    ("E24", E24),
    ("E48", E48),
    ("E96", E96),
    ("E192", E192),
];

#[derive(Clone, Copy, Debug)]
pub enum Rounder {
    Series(&'static [f64]),
    PowersOf2,
}

impl Rounder {
    pub fn parse(name: &str) -> Result<Rounder> {
        if name == "POWERSOF2" {
            return Ok(Rounder::PowersOf2);
        }
        SERIES
            .iter()
            .find(|(known, _)| *known == name)
            .map(|(_, series)| Rounder::Series(series))
            .ok_or_else(|| {
                MongoError::location(40257, format!("Unknown rounding granularity '{name}'"))
            })
    }

    pub fn round_up(self, value: &Bson) -> Result<Bson> {
        self.round(value, true)
    }

    pub fn round_down(self, value: &Bson) -> Result<Bson> {
        self.round(value, false)
    }

    /// Both directions check alike and pass zero through; only the walk differs.
    fn round(self, value: &Bson, up: bool) -> Result<Bson> {
        self.check(value)?;
        if to_f64(value) == 0.0 {
            return Ok(value.clone());
        }
        Ok(match self {
            Rounder::Series(series) => match value {
                Bson::Decimal128(d) => series_decimal(series, Dec::decode(*d), up),
                _ if up => Bson::Double(series_up(series, to_f64(value))),
                _ => Bson::Double(series_down(series, to_f64(value))),
            },
            Rounder::PowersOf2 => {
                let exponent = if up {
                    exponent_up(value)
                } else {
                    exponent_down(value)
                };
                power_of_two(exponent, matches!(value, Bson::Decimal128(_)))
            }
        })
    }

    /// The rounders' own checks (distinct codes per rounder kind, as in MongoDB).
    fn check(self, value: &Bson) -> Result<()> {
        let (numeric, nan, negative) = match self {
            Rounder::Series(_) => (40262, 40263, 40268),
            Rounder::PowersOf2 => (40265, 40266, 40267),
        };
        if !is_number(value) {
            return Err(MongoError::location(
                numeric,
                format!(
                    "A granularity rounder can only round numeric values, but found type: {}",
                    bson_type_name(value)
                ),
            ));
        }
        let number = to_f64(value);
        if number.is_nan() {
            return Err(MongoError::location(
                nan,
                "A granularity rounder cannot round NaN",
            ));
        }
        if number < 0.0 {
            return Err(MongoError::location(
                negative,
                "A granularity rounder can only round non-negative numbers",
            ));
        }
        Ok(())
    }
}

/// The exponent of the smallest power of two above `value`.
fn exponent_up(value: &Bson) -> i64 {
    match value {
        Bson::Double(v) => v.log2().floor() as i64 + 1,
        Bson::Decimal128(d) => Dec::decode(*d).to_f64().log2().floor() as i64 + 1,
        _ => 64 - i64::from(long_of(value).leading_zeros()),
    }
}

/// The exponent of the largest power of two below `value`.
fn exponent_down(value: &Bson) -> i64 {
    match value {
        Bson::Double(v) => v.log2().ceil() as i64 - 1,
        Bson::Decimal128(d) => Dec::decode(*d).to_f64().log2().ceil() as i64 - 1,
        _ => {
            let n = long_of(value);
            let floor_log = 63 - i64::from(n.leading_zeros());
            if n.count_ones() == 1 {
                floor_log - 1
            } else {
                floor_log
            }
        }
    }
}

fn long_of(value: &Bson) -> u64 {
    match value {
        Bson::Int32(v) => u64::try_from(*v).unwrap_or(0),
        Bson::Int64(v) => u64::try_from(*v).unwrap_or(0),
        _ => 0,
    }
}

/// `$pow(2, exponent)`: an int or long when the exponent is non-negative and the power fits,
/// a double otherwise; a decimal for decimal inputs.
fn power_of_two(exponent: i64, decimal: bool) -> Bson {
    if decimal {
        let two = Dec::from_i64(2);
        let mut result = Dec::from_i64(1);
        for _ in 0..exponent.unsigned_abs() {
            result = if exponent >= 0 {
                result.times(two)
            } else {
                result.divided_by(two)
            };
        }
        return Bson::Decimal128(result.encode());
    }
    if (0..63).contains(&exponent) {
        return int_or_long(1_i64 << exponent);
    }
    Bson::Double(2f64.powi(i32::try_from(exponent).unwrap_or(i32::MAX)))
}

fn first(series: &[f64]) -> f64 {
    series.first().copied().unwrap_or(1.0)
}

fn last(series: &[f64]) -> f64 {
    series.last().copied().unwrap_or(1.0)
}

fn series_up(series: &[f64], number: f64) -> f64 {
    let mut multiplier = 1.0;
    while number >= last(series) * multiplier {
        multiplier *= 10.0;
    }
    while number < first(series) * multiplier {
        let previous_min = first(series) * multiplier;
        multiplier /= 10.0;
        if number >= last(series) * multiplier {
            return previous_min;
        }
    }
    series
        .iter()
        .find(|&&s| number < s * multiplier)
        .map_or(last(series) * multiplier, |s| s * multiplier)
}

fn series_down(series: &[f64], number: f64) -> f64 {
    let mut multiplier = 1.0;
    while number <= first(series) * multiplier {
        multiplier /= 10.0;
    }
    while number > last(series) * multiplier {
        let previous_max = last(series) * multiplier;
        multiplier *= 10.0;
        if number <= first(series) * multiplier {
            return previous_max;
        }
    }
    series
        .iter()
        .rev()
        .find(|&&s| s * multiplier < number)
        .map_or(first(series) * multiplier, |s| s * multiplier)
}

/// The same walk as [`series_up`]/[`series_down`] in decimal arithmetic.
fn series_decimal(series: &[f64], number: Dec, up: bool) -> Bson {
    let cmp = |a: Dec, b: Dec| {
        compare(
            Some(&Bson::Decimal128(a.encode())),
            Some(&Bson::Decimal128(b.encode())),
        )
    };
    let ten = Dec::from_i64(10);
    let at =
        |i: usize, m: Dec| Dec::from_i64(series.get(i).copied().unwrap_or(1.0) as i64).times(m);
    let (lo, hi) = (0, series.len() - 1);
    let mut multiplier = Dec::from_i64(1);
    if up {
        while cmp(number, at(hi, multiplier)) != Ordering::Less {
            multiplier = multiplier.times(ten);
        }
        while cmp(number, at(lo, multiplier)) == Ordering::Less {
            let previous_min = at(lo, multiplier);
            multiplier = multiplier.divided_by(ten);
            if cmp(number, at(hi, multiplier)) != Ordering::Less {
                return Bson::Decimal128(previous_min.encode());
            }
        }
        let i = (0..series.len())
            .find(|&i| cmp(number, at(i, multiplier)) == Ordering::Less)
            .unwrap_or(hi);
        Bson::Decimal128(at(i, multiplier).encode())
    } else {
        while cmp(number, at(lo, multiplier)) != Ordering::Greater {
            multiplier = multiplier.divided_by(ten);
        }
        while cmp(number, at(hi, multiplier)) == Ordering::Greater {
            let previous_max = at(hi, multiplier);
            multiplier = multiplier.times(ten);
            if cmp(number, at(lo, multiplier)) != Ordering::Greater {
                return Bson::Decimal128(previous_max.encode());
            }
        }
        let i = (0..series.len())
            .rev()
            .find(|&i| cmp(at(i, multiplier), number) == Ordering::Less)
            .unwrap_or(lo);
        Bson::Decimal128(at(i, multiplier).encode())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn up(name: &str, v: Bson) -> Bson {
        Rounder::parse(name).unwrap().round_up(&v).unwrap()
    }

    fn down(name: &str, v: Bson) -> Bson {
        Rounder::parse(name).unwrap().round_down(&v).unwrap()
    }

    #[test]
    fn preferred_number_series() {
        assert_eq!(up("R5", Bson::Int32(11)), Bson::Double(16.0));
        assert_eq!(up("R5", Bson::Int32(16)), Bson::Double(25.0));
        assert_eq!(down("R5", Bson::Int32(16)), Bson::Double(10.0));
        assert_eq!(up("E6", Bson::Double(0.8)), Bson::Double(1.0));
        assert_eq!(down("E6", Bson::Double(0.8)), Bson::Double(68.0 * 0.01));
        assert_eq!(up("1-2-5", Bson::Int32(3)), Bson::Double(5.0));
        assert_eq!(down("1-2-5", Bson::Int32(3)), Bson::Double(2.0));
        assert_eq!(up("1-2-5", Bson::Int32(0)), Bson::Int32(0));
        assert_eq!(up("E12", Bson::Int32(100)), Bson::Double(120.0));
        assert_eq!(
            up("R5", Bson::Decimal128("11".parse().unwrap())).to_string(),
            "16"
        );
    }

    #[test]
    fn powers_of_two() {
        assert_eq!(up("POWERSOF2", Bson::Int32(8)), Bson::Int32(16));
        assert_eq!(up("POWERSOF2", Bson::Int32(9)), Bson::Int32(16));
        assert_eq!(down("POWERSOF2", Bson::Int32(8)), Bson::Int32(4));
        assert_eq!(down("POWERSOF2", Bson::Int64(9)), Bson::Int32(8));
        assert_eq!(up("POWERSOF2", Bson::Double(3.5)), Bson::Int32(4));
        assert_eq!(up("POWERSOF2", Bson::Double(0.3)), Bson::Double(0.5));
    }

    #[test]
    fn errors() {
        let code = |r: Result<Bson>| r.unwrap_err().code().code();
        assert_eq!(Rounder::parse("R3").unwrap_err().code().code(), 40257);
        let series = Rounder::parse("R5").unwrap();
        assert_eq!(code(series.round_up(&Bson::String("a".into()))), 40262);
        assert_eq!(code(series.round_up(&Bson::Double(f64::NAN))), 40263);
        assert_eq!(code(series.round_up(&Bson::Int32(-1))), 40268);
        let pow = Rounder::PowersOf2;
        assert_eq!(code(pow.round_down(&Bson::Null)), 40265);
        assert_eq!(code(pow.round_down(&Bson::Int32(-1))), 40267);
    }
}
