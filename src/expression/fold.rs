//! The folds the accumulator expressions (`{$sum: [...]}`, `$avg`, `$min`, `$max`, `$stdDevPop`,
//! `$stdDevSamp`, `$median`, `$percentile`) and `$group`'s accumulators of the same names share:
//! `$sum`/`$avg`'s widening sum, `$min`/`$max`'s extreme, Welford's running deviation, the
//! exact discrete percentiles, and the checks of a percentile specification. The accumulators
//! keep these as their per-group state; the expressions fold their arguments through [`Fold`].

use super::decimal::Dec;
use super::numeric::{DoubleDouble, Width, int_or_long, to_f64, width};
use super::value::{
    Value, bson_type_name, compare_collated, format_double_g, is_nullish, is_number, render,
};
use crate::document::collation::Collation;
use crate::error::{ErrorCode, MongoError, Result};
use bson::{Bson, doc};
use std::cmp::Ordering;

/// An accumulator expression's running state over its arguments.
#[derive(Clone, Debug)]
pub enum Fold {
    Sum(Sum),
    /// The sum of the numeric inputs and how many there were.
    Avg(Sum, u64),
    Min(Option<Bson>),
    Max(Option<Bson>),
    StdDev(StdDev),
    Quantiles(Percentile),
}

impl Fold {
    /// The fold of the expression form of `name` (`{$sum: [...]}` in `$project`), which folds
    /// its arguments as a group accumulates documents; `None` for the other names.
    pub fn for_expression(name: &str) -> Option<Fold> {
        Some(match name {
            "$sum" => Fold::Sum(Sum::default()),
            "$avg" => Fold::Avg(Sum::default(), 0),
            "$min" => Fold::Min(None),
            "$max" => Fold::Max(None),
            "$stdDevPop" => Fold::StdDev(StdDev::new(false)),
            "$stdDevSamp" => Fold::StdDev(StdDev::new(true)),
            _ => return None,
        })
    }

    /// A `$percentile` (`ps` given) or `$median` fold.
    pub fn quantiles(ps: Option<Vec<f64>>) -> Fold {
        Fold::Quantiles(Percentile::new(ps))
    }

    pub fn add(&mut self, input: Value) {
        match self {
            Fold::Sum(sum) => {
                sum.add(input.as_ref());
            }
            Fold::Avg(sum, count) => {
                if sum.add(input.as_ref()) {
                    *count += 1;
                }
            }
            Fold::Min(best) => keep_extreme(best, input, Ordering::Less, None),
            Fold::Max(best) => keep_extreme(best, input, Ordering::Greater, None),
            Fold::StdDev(state) => state.add(input.as_ref()),
            Fold::Quantiles(state) => state.add(input.as_ref()),
        }
    }

    pub fn finish(self) -> Bson {
        match self {
            Fold::Sum(sum) => sum.total(),
            Fold::Avg(sum, count) => sum.average(count),
            Fold::Min(best) | Fold::Max(best) => best.unwrap_or(Bson::Null),
            Fold::StdDev(state) => state.finish(),
            Fold::Quantiles(state) => state.finish(),
        }
    }
}

/// `$min`/`$max` ignore null, undefined and missing; ties keep the earlier value.
/// Strings compare by `collation` (`None`: simple).
pub fn keep_extreme(
    best: &mut Option<Bson>,
    input: Value,
    wanted: Ordering,
    collation: Option<&Collation>,
) {
    let Some(value) = input.filter(|v| !is_nullish(Some(v))) else {
        return;
    };
    if best
        .as_ref()
        .is_none_or(|current| compare_collated(Some(&value), Some(current), collation) == wanted)
    {
        *best = Some(value);
    }
}

/// `$sum` as the server computes it: integers and doubles in a double-double sum, decimals in
/// a separate decimal sum, and the result in the widest type seen (narrowed back to an int when
/// an int-only sum fits).
#[derive(Clone, Debug)]
pub struct Sum {
    widest: Width,
    /// The widest type among the non-decimal inputs: a partial sum reports it with its
    /// double-double total.
    non_decimal_widest: Width,
    non_decimal: DoubleDouble,
    decimal: Dec,
}

impl Default for Sum {
    fn default() -> Self {
        Sum {
            widest: Width::Int,
            non_decimal_widest: Width::Int,
            non_decimal: DoubleDouble::default(),
            decimal: Dec::ZERO,
        }
    }
}

impl Sum {
    /// Adds a number; anything else is ignored. Returns whether the input counted.
    pub fn add(&mut self, input: Option<&Bson>) -> bool {
        let Some(input) = input else {
            return false;
        };
        let Some(input_width) = width(input) else {
            return false;
        };
        self.widest = self.widest.max(input_width);
        if input_width != Width::Decimal {
            self.non_decimal_widest = self.non_decimal_widest.max(input_width);
        }
        match input {
            Bson::Int32(v) => self.non_decimal.add_double(f64::from(*v)),
            Bson::Int64(v) => self.non_decimal.add_long(*v),
            Bson::Double(v) => self.non_decimal.add_double(*v),
            Bson::Decimal128(d) => self.decimal = self.decimal.plus(Dec::decode(*d)),
            _ => return false,
        }
        true
    }

    pub fn total(&self) -> Bson {
        match self.widest {
            Width::Int if self.non_decimal.fits_long() => int_or_long(self.non_decimal.get_long()),
            Width::Int | Width::Long if self.non_decimal.fits_long() => {
                Bson::Int64(self.non_decimal.get_long())
            }
            Width::Int | Width::Long | Width::Double => Bson::Double(self.non_decimal.get_double()),
            Width::Decimal => Bson::Decimal128(self.decimal_total().encode()),
        }
    }

    fn decimal_total(&self) -> Dec {
        self.decimal.plus(self.non_decimal.get_decimal())
    }

    /// The sum as a shard sends it to be merged, the server's partial sum:
    /// `[<non-decimal type code>, sum, addend]` of the double-double total, and the decimal
    /// total as a fourth element when any input was a decimal. The whole state travels so that
    /// the merged total rounds as a single sum would.
    pub fn partial(&self) -> Bson {
        let (sum, addend) = self.non_decimal.parts();
        let mut parts = vec![
            Bson::Int32(type_code(self.non_decimal_widest)),
            Bson::Double(sum),
            Bson::Double(addend),
        ];
        if self.widest == Width::Decimal {
            parts.push(Bson::Decimal128(self.decimal.encode()));
        }
        Bson::Array(parts)
    }

    /// Adds a partial sum made by [`Sum::partial`].
    pub fn merge_partial(&mut self, partial: Option<&Bson>) -> Result<()> {
        let malformed = || {
            MongoError::type_mismatch(format!(
                "a partial sum must be [type, sum, addend, decimal?], found {}",
                render(partial)
            ))
        };
        let Some(Bson::Array(parts)) = partial else {
            return Err(malformed());
        };
        let (Some(Bson::Int32(code)), Some(Bson::Double(sum)), Some(Bson::Double(addend))) =
            (parts.first(), parts.get(1), parts.get(2))
        else {
            return Err(malformed());
        };
        let non_decimal = width_of_code(*code).ok_or_else(malformed)?;
        self.non_decimal_widest = self.non_decimal_widest.max(non_decimal);
        self.widest = self.widest.max(non_decimal);
        self.non_decimal.add_double(*sum);
        // An infinite sum carries a NaN addend that a single sum would never have added.
        if sum.is_finite() || !addend.is_nan() {
            self.non_decimal.add_double(*addend);
        }
        match parts.get(3) {
            None => {}
            Some(Bson::Decimal128(decimal)) => {
                self.widest = Width::Decimal;
                self.decimal = self.decimal.plus(Dec::decode(*decimal));
            }
            Some(_) => return Err(malformed()),
        }
        Ok(())
    }

    /// `$avg`: null without numeric input, a decimal if any input was one, else a double.
    pub fn average(&self, count: u64) -> Bson {
        if count == 0 {
            return Bson::Null;
        }
        if self.widest == Width::Decimal {
            let count = Dec::from_i64(i64::try_from(count).unwrap_or(i64::MAX));
            return Bson::Decimal128(self.decimal_total().divided_by(count).encode());
        }
        Bson::Double(self.non_decimal.get_double() / count as f64)
    }
}

/// BSON's type numbers, which a partial sum names its type with.
fn type_code(width: Width) -> i32 {
    match width {
        Width::Int => 16,
        Width::Long => 18,
        Width::Double => 1,
        Width::Decimal => 19,
    }
}

fn width_of_code(code: i32) -> Option<Width> {
    match code {
        16 => Some(Width::Int),
        18 => Some(Width::Long),
        1 => Some(Width::Double),
        19 => Some(Width::Decimal),
        _ => None,
    }
}

/// `$stdDevPop` / `$stdDevSamp`.
#[derive(Clone, Debug)]
pub struct StdDev {
    sample: bool,
    count: u64,
    mean: f64,
    m2: f64,
}

impl StdDev {
    pub fn new(sample: bool) -> StdDev {
        StdDev {
            sample,
            count: 0,
            mean: 0.0,
            m2: 0.0,
        }
    }

    pub fn add(&mut self, input: Option<&Bson>) {
        let Some(value) = input.filter(|v| is_number(v)) else {
            return;
        };
        let value = to_f64(value);
        self.count += 1;
        let delta = value - self.mean;
        if delta != 0.0 {
            self.mean += delta / self.count as f64;
            self.m2 += delta * (value - self.mean);
        }
    }

    /// What a shard sends to be merged: `{m2, mean, count}`.
    pub fn partial(&self) -> Bson {
        Bson::Document(doc! {
            "m2": self.m2,
            "mean": self.mean,
            "count": i64::try_from(self.count).unwrap_or(i64::MAX),
        })
    }

    /// Combines a partial made by [`StdDev::partial`] (the parallel form of Welford's update).
    pub fn merge_partial(&mut self, partial: Option<&Bson>) -> Result<()> {
        let Some(Bson::Document(fields)) = partial else {
            return Err(MongoError::type_mismatch(format!(
                "a partial standard deviation must be an object, found {}",
                render(partial)
            )));
        };
        let number = |name: &str| fields.get(name).filter(|v| is_number(v)).map(to_f64);
        let (Some(m2), Some(mean), Some(count)) = (number("m2"), number("mean"), number("count"))
        else {
            return Err(MongoError::type_mismatch(format!(
                "a partial standard deviation must be {{m2, mean, count}}, found {}",
                render(partial)
            )));
        };
        let count = count as u64;
        if count == 0 {
            return Ok(());
        }
        let delta = mean - self.mean;
        let total = self.count + count;
        if delta != 0.0 {
            self.mean = (self.count as f64 * self.mean + count as f64 * mean) / total as f64;
            self.m2 += delta * delta * (self.count as f64 * count as f64 / total as f64);
        }
        self.m2 += m2;
        self.count = total;
        Ok(())
    }

    /// Null when undefined: no numeric input, or only one for the sample deviation.
    pub fn finish(self) -> Bson {
        let divisor = if self.sample {
            self.count.saturating_sub(1)
        } else {
            self.count
        };
        if divisor == 0 {
            return Bson::Null;
        }
        Bson::Double((self.m2 / divisor as f64).sqrt())
    }
}

/// `$percentile` (`ps` given: an array of doubles) or `$median` (a double); null(s) when
/// there was no numeric input.
#[derive(Clone, Debug)]
pub struct Percentile {
    ps: Option<Vec<f64>>,
    values: Vec<f64>,
}

impl Percentile {
    pub fn new(ps: Option<Vec<f64>>) -> Percentile {
        Percentile {
            ps,
            values: Vec::new(),
        }
    }

    /// How many numbers are kept.
    pub fn held(&self) -> usize {
        self.values.len()
    }

    /// Numbers count as doubles; NaN is skipped, as the server's algorithms skip it.
    pub fn add(&mut self, input: Option<&Bson>) {
        if let Some(value) = input.filter(|v| is_number(v)).map(to_f64) {
            if !value.is_nan() {
                self.values.push(value);
            }
        }
    }

    /// What a shard sends to be merged: its numeric inputs, as doubles. (The server sends its
    /// t-digest; this computes the percentiles exactly, so the inputs themselves travel.)
    pub fn partial(&self) -> Bson {
        Bson::Array(self.values.iter().map(|v| Bson::Double(*v)).collect())
    }

    /// Adds the inputs of a partial made by [`Percentile::partial`].
    pub fn merge_partial(&mut self, partial: Option<&Bson>) -> Result<()> {
        let Some(Bson::Array(values)) = partial else {
            return Err(MongoError::type_mismatch(format!(
                "a partial percentile must be an array, found {}",
                render(partial)
            )));
        };
        for value in values {
            self.add(Some(value));
        }
        Ok(())
    }

    pub fn finish(mut self) -> Bson {
        self.values.sort_by(f64::total_cmp);
        let at = |p: f64| -> Bson {
            let n = self.values.len();
            if n == 0 {
                return Bson::Null;
            }
            let rank = if p >= 1.0 {
                n - 1
            } else {
                ((n as f64 * p).ceil() as usize).saturating_sub(1)
            };
            self.values
                .get(rank.min(n - 1))
                .map_or(Bson::Null, |v| Bson::Double(*v))
        };
        match &self.ps {
            Some(ps) => Bson::Array(ps.iter().map(|p| at(*p)).collect()),
            None => at(0.5),
        }
    }
}

/// The `{input, p, method}` (`$percentile`) or `{input, method}` (`$median`) specification,
/// checked as the server's IDL parser checks it: unknown fields and `method`'s type and value
/// as they come, then the required fields in order. Returns the raw `input` and `p`, which the
/// accumulator and the expression form parse in their own scopes.
pub fn quantile_spec<'a>(
    name: &str,
    argument: &'a Bson,
    not_object: i32,
) -> Result<(&'a Bson, Option<&'a Bson>)> {
    let Bson::Document(spec) = argument else {
        return Err(MongoError::location(
            not_object,
            format!(
                "specification must be an object; found {name}: {}",
                render(Some(argument))
            ),
        ));
    };
    let required: &[&str] = if name == "$median" {
        &["input", "method"]
    } else {
        &["input", "p", "method"]
    };
    for (field, value) in spec {
        if !required.contains(&field.as_str()) {
            return Err(MongoError::new(
                ErrorCode::IDLUnknownField,
                format!("BSON field '{name}.{field}' is an unknown field."),
            ));
        }
        if field == "method" {
            check_method(name, value)?;
        }
    }
    if let Some(missing) = required.iter().find(|field| !spec.contains_key(**field)) {
        return Err(MongoError::new(
            ErrorCode::IDLFailedToParse,
            format!("BSON field '{name}.{missing}' is missing but a required field"),
        ));
    }
    Ok((spec.get("input").unwrap_or(&Bson::Null), spec.get("p")))
}

/// MongoDB 8.0 accepts only the approximate method (which it computes exactly on small inputs).
fn check_method(name: &str, method: &Bson) -> Result<()> {
    let Bson::String(method) = method else {
        return Err(MongoError::type_mismatch(format!(
            "BSON field '{name}.method' is the wrong type '{}', expected type 'string'",
            bson_type_name(method)
        )));
    };
    if method != "approximate" {
        return Err(MongoError::bad_value(
            "Currently only 'approximate' can be used as percentile 'method'.",
        ));
    }
    Ok(())
}

/// The value of a constant `p`: a non-empty array of numbers in [0, 1].
pub fn percentiles(value: Option<Bson>) -> Result<Vec<f64>> {
    let message =
        "The $percentile 'p' field must be an array of numbers from [0.0, 1.0], but found: ";
    let items = match &value {
        Some(Bson::Array(items)) if !items.is_empty() => items,
        other => {
            return Err(MongoError::location(
                7750301,
                format!("{message}{}", render(other.as_ref())),
            ));
        }
    };
    items
        .iter()
        .map(|item| {
            if !is_number(item) {
                return Err(MongoError::location(
                    7750302,
                    format!("{message}{}", render(Some(item))),
                ));
            }
            let p = to_f64(item);
            // The server's range check lets NaN through.
            if !(p.is_nan() || (0.0..=1.0).contains(&p)) {
                return Err(MongoError::location(
                    7750303,
                    format!("{message}{}", format_double_g(p)),
                ));
            }
            Ok(p)
        })
        .collect()
}
