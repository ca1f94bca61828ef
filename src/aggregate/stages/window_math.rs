//! The arithmetic of the numeric window functions: standard deviation, covariance, the sort
//! positions `$derivative` and `$integral` compute with, and `$linearFill`'s interpolation.

use super::time_unit::TimeUnit;
use crate::error::{MongoError, Result};
use crate::expression::numeric::to_f64;
use crate::expression::value::{Value, is_nullish, is_number};
use bson::Bson;

pub(super) fn num(value: &Value) -> Option<f64> {
    value.as_ref().filter(|v| is_number(v)).map(to_f64)
}

pub(super) fn numbers(inputs: &[Value], window: Option<(usize, usize)>) -> Vec<f64> {
    window.map_or_else(Vec::new, |(lo, hi)| {
        inputs[lo..=hi].iter().filter_map(num).collect()
    })
}

pub(super) fn std_dev(xs: &[f64], sample: bool) -> Bson {
    let n = xs.len() as f64;
    if xs.is_empty() || (sample && xs.len() < 2) {
        return Bson::Null;
    }
    let mean = xs.iter().sum::<f64>() / n;
    let squares: f64 = xs.iter().map(|x| (x - mean).powi(2)).sum();
    Bson::Double((squares / if sample { n - 1.0 } else { n }).sqrt())
}

pub(super) fn covariance(
    xs: &[Value],
    ys: &[Value],
    window: Option<(usize, usize)>,
    sample: bool,
) -> Bson {
    let Some((lo, hi)) = window else {
        return Bson::Null;
    };
    let pairs: Vec<(f64, f64)> = (lo..=hi)
        .filter_map(|k| Some((num(&xs[k])?, num(&ys[k])?)))
        .collect();
    let n = pairs.len() as f64;
    if pairs.is_empty() || (sample && pairs.len() < 2) {
        return Bson::Null;
    }
    let (mx, my) = (
        pairs.iter().map(|p| p.0).sum::<f64>() / n,
        pairs.iter().map(|p| p.1).sum::<f64>() / n,
    );
    let sum: f64 = pairs.iter().map(|(x, y)| (x - mx) * (y - my)).sum();
    Bson::Double(sum / if sample { n - 1.0 } else { n })
}

/// The sort values as numbers: dates need a `unit` (and count in that unit), numbers need none.
pub(super) fn positions(sort_values: &[Value], unit: Option<TimeUnit>) -> Result<Vec<Option<f64>>> {
    sort_values
        .iter()
        .map(|value| match (value, unit) {
            (Some(Bson::DateTime(d)), Some(unit)) => {
                let per_unit = unit.fixed_millis().ok_or_else(|| {
                    MongoError::location(5490704, "unit must be 'week' or smaller")
                })?;
                Ok(Some(d.timestamp_millis() as f64 / per_unit as f64))
            }
            (Some(Bson::DateTime(_)), None) => Err(MongoError::location(
                5624901,
                "For windows that involve date or time ranges, a unit must be provided.",
            )),
            (Some(v), None) if is_number(v) => Ok(Some(to_f64(v))),
            (Some(v), Some(_)) if is_number(v) => Err(MongoError::location(
                5624900,
                "With a unit, the sortBy field must be a date",
            )),
            _ => Ok(None),
        })
        .collect()
}

/// Nulls between two values are interpolated by the sort position; nulls before the first or
/// after the last value stay null.
pub(super) fn linear_fill(values: &[Value], sort_values: &[Value]) -> Result<Vec<Bson>> {
    let x = |k: usize| -> Option<f64> {
        match sort_values.get(k)? {
            Some(Bson::DateTime(d)) => Some(d.timestamp_millis() as f64),
            Some(v) if is_number(v) => Some(to_f64(v)),
            _ => None,
        }
    };
    let known: Vec<usize> = (0..values.len())
        .filter(|&k| !is_nullish(values[k].as_ref()))
        .collect();
    for &k in &known {
        if num(&values[k]).is_none() {
            return Err(MongoError::location(
                6050106,
                "Value to $linearFill must be numeric",
            ));
        }
    }
    let mut out = Vec::with_capacity(values.len());
    for k in 0..values.len() {
        if let Some(v) = values[k].clone().filter(|v| !is_nullish(Some(v))) {
            out.push(v);
            continue;
        }
        let before = known.iter().rev().find(|&&p| p < k).copied();
        let after = known.iter().find(|&&q| q > k).copied();
        let filled = match (before, after) {
            (Some(p), Some(q)) => match (x(p), x(q), x(k), num(&values[p]), num(&values[q])) {
                (Some(xp), Some(xq), Some(xk), Some(yp), Some(yq)) if xq != xp => {
                    Bson::Double(yp + (yq - yp) * (xk - xp) / (xq - xp))
                }
                _ => Bson::Null,
            },
            _ => Bson::Null,
        };
        out.push(filled);
    }
    Ok(out)
}
