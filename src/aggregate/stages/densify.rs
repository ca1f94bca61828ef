//! `$densify`: documents added so that the values of a numeric or date field step evenly
//! (`range: {step, unit, bounds}`) over the whole input (`"full"`), each partition's own span
//! (`"partition"`) or explicit `[lower, upper)` bounds, per `partitionByFields` partition.
//! Generated documents hold the field and the partition fields only.

use super::time_unit::TimeUnit;
use super::{RunContext, Stage};
use crate::document::order::values_equal;
use crate::error::{ErrorCode, MongoError, Result};
use crate::expression::LetVariables;
use crate::expression::fieldpath::{FieldPath, lookup, set_nested};
use crate::expression::numeric::{to_dec, to_f64, to_i64};
use crate::expression::value::{bson_type_name, compare, is_nullish, is_number};
use bson::{Bson, DateTime, Document};
use std::cmp::Ordering;
use std::sync::Arc;

/// MongoDB's `internalQueryMaxAllowedDensifyDocs`: a stage generating more documents fails
/// rather than filling memory (a step of 1 over `[0, 1e19]` would never end).
pub(super) const MAX_GENERATED_DOCS: usize = 500_000;

fn too_many_generated(generated: usize) -> MongoError {
    MongoError::location(
        5897900,
        format!(
            "Generated {generated} documents in $densify, which is over the limit of {MAX_GENERATED_DOCS}. \
             Increase the 'internalQueryMaxAllowedDensifyDocs' parameter to allow more generated documents"
        ),
    )
}

pub struct Densify {
    field: Vec<String>,
    partitions: Vec<Vec<String>>,
    step: Bson,
    unit: Option<TimeUnit>,
    bounds: Bounds,
}

enum Bounds {
    Full,
    Partition,
    /// Inclusive lower, exclusive upper.
    Explicit(Box<(Bson, Bson)>),
}

fn unknown(path: &str) -> MongoError {
    MongoError::new(
        ErrorCode::IDLUnknownField,
        format!("BSON field '{path}' is an unknown field."),
    )
}

fn wrong_type(path: &str, value: &Bson, expected: &str) -> MongoError {
    MongoError::new(
        ErrorCode::TypeMismatch,
        format!(
            "BSON field '{path}' is the wrong type '{}', expected type '{expected}'",
            bson_type_name(value)
        ),
    )
}

pub fn parse(name: &str, spec: &Bson, _vars: &Arc<LetVariables>) -> Result<Vec<Stage>> {
    let Bson::Document(spec) = spec else {
        return Err(MongoError::failed_to_parse(format!(
            "The {name} stage specification must be an object, found {}",
            bson_type_name(spec)
        )));
    };
    let (mut field, mut partitions, mut range) = (None, Vec::new(), None);
    for (key, value) in spec {
        match key.as_str() {
            "field" => match value {
                Bson::String(path) => field = Some(FieldPath::parse(path)?.parts().to_vec()),
                _ => return Err(wrong_type("$densify.field", value, "string")),
            },
            "partitionByFields" => {
                let Bson::Array(items) = value else {
                    return Err(wrong_type("$densify.partitionByFields", value, "array"));
                };
                for item in items {
                    let Bson::String(path) = item else {
                        return Err(wrong_type("$densify.partitionByFields.0", item, "string"));
                    };
                    partitions.push(FieldPath::parse(path)?.parts().to_vec());
                }
            }
            "range" => match value {
                Bson::Document(r) => range = Some(r.clone()),
                _ => return Err(wrong_type("$densify.range", value, "object")),
            },
            other => return Err(unknown(&format!("$densify.{other}"))),
        }
    }
    let field = field.ok_or_else(|| crate::command::missing("$densify", "field"))?;
    let range = range.ok_or_else(|| crate::command::missing("$densify", "range"))?;
    let (mut step, mut unit, mut bounds) = (None, None, None);
    for (key, value) in &range {
        match key.as_str() {
            "step" => step = Some(value.clone()),
            "unit" => match value {
                Bson::String(u) => unit = Some(u.clone()),
                _ => return Err(wrong_type("$densify.range.unit", value, "string")),
            },
            "bounds" => bounds = Some(value.clone()),
            other => return Err(unknown(&format!("$densify.range.{other}"))),
        }
    }
    let step = step.ok_or_else(|| crate::command::missing("$densify.range", "step"))?;
    let bounds = bounds.ok_or_else(|| crate::command::missing("$densify.range", "bounds"))?;
    if !is_number(&step) || compare(Some(&step), Some(&Bson::Int32(0))) != Ordering::Greater {
        return Err(MongoError::location(
            5733401,
            "The step parameter in a range statement must be a strictly positive numeric value",
        ));
    }
    let unit = match unit {
        Some(unit) => {
            if to_f64(&step).fract() != 0.0 {
                return Err(MongoError::location(
                    6586400,
                    "The step parameter in a range statement must be a whole number when densifying a date range",
                ));
            }
            Some(TimeUnit::parse(&unit)?)
        }
        None => None,
    };
    let bounds = parse_bounds(&bounds, &step, unit)?;
    if matches!(bounds, Bounds::Partition) && partitions.is_empty() {
        return Err(MongoError::location(
            5733408,
            "One cannot specify the bounds as 'partition' without specifying a non-empty array of partitionByFields. You may have meant to specify 'full' bounds.",
        ));
    }
    Ok(vec![Stage::Densify(Densify {
        field,
        partitions,
        step,
        unit,
        bounds,
    })])
}

fn parse_bounds(bounds: &Bson, step: &Bson, unit: Option<TimeUnit>) -> Result<Bounds> {
    match bounds {
        Bson::String(s) if s == "full" => Ok(Bounds::Full),
        Bson::String(s) if s == "partition" => Ok(Bounds::Partition),
        Bson::String(_) => Err(MongoError::location(
            5946802,
            "Bounds string must either be 'full' or 'partition'",
        )),
        Bson::Array(items) => {
            let [lower, upper] = items.as_slice() else {
                return Err(MongoError::location(
                    5733403,
                    "A bounding array in a range statement must have exactly two elements",
                ));
            };
            if compare(Some(lower), Some(upper)) == Ordering::Greater {
                return Err(MongoError::location(
                    5733402,
                    "A bounding array must be an ascending array of either two dates or two numbers",
                ));
            }
            if is_number(lower) {
                if unit.is_some() {
                    return Err(MongoError::location(
                        5733409,
                        "Numeric bounds may not have unit parameter",
                    ));
                }
                if !is_number(upper) {
                    return Err(MongoError::location(
                        5733406,
                        "A bounding array must contain either both dates or both numeric types",
                    ));
                }
                let same =
                    |a: &Bson, b: &Bson| std::mem::discriminant(a) == std::mem::discriminant(b);
                if !same(lower, upper) || !same(lower, step) {
                    return Err(MongoError::location(
                        5876900,
                        "Upper bound, lower bound, and step must all have the same type",
                    ));
                }
            } else if let Bson::DateTime(_) = lower {
                if !matches!(upper, Bson::DateTime(_)) {
                    return Err(MongoError::location(
                        5733405,
                        "A bounding array must contain either both dates or both numeric types",
                    ));
                }
                if unit.is_none() {
                    return Err(MongoError::location(
                        5733410,
                        "A bounding array of dates must specify a unit",
                    ));
                }
            } else {
                return Err(MongoError::location(
                    5946800,
                    "Explicit bounds must be numeric or dates",
                ));
            }
            Ok(Bounds::Explicit(Box::new((lower.clone(), upper.clone()))))
        }
        _ => Err(MongoError::location(
            5733404,
            "The bounds in a range statement must be the string 'full', 'partition', or an ascending array of two numbers or two dates",
        )),
    }
}

impl Densify {
    pub fn run(&self, docs: Vec<Document>, _ctx: &RunContext) -> Result<Vec<Document>> {
        let mut nullish = Vec::new();
        let mut valued = Vec::with_capacity(docs.len());
        for doc in docs {
            let value = lookup(&doc, &self.field);
            if is_nullish(value.as_ref()) {
                nullish.push(doc);
                continue;
            }
            let value = value.unwrap_or(Bson::Null);
            self.check_type(&value)?;
            let key = self.partition_key(&doc);
            valued.push((key, value, doc));
        }
        valued.sort_by(|(ka, va, _), (kb, vb, _)| {
            compare(Some(ka), Some(kb)).then_with(|| compare(Some(va), Some(vb)))
        });
        let global = (
            valued
                .iter()
                .map(|(_, v, _)| v)
                .min_by(|a, b| compare(Some(a), Some(b)))
                .cloned(),
            valued
                .iter()
                .map(|(_, v, _)| v)
                .max_by(|a, b| compare(Some(a), Some(b)))
                .cloned(),
        );
        let mut out = nullish;
        let mut start = 0;
        let mut total_generated = 0;
        while start < valued.len() {
            let end = (start..valued.len())
                .find(|&i| !values_equal(&valued[i].0, &valued[start].0))
                .unwrap_or(valued.len());
            let part = &valued[start..end];
            let (anchor, upper, inclusive) = match &self.bounds {
                Bounds::Explicit(range) => (range.0.clone(), range.1.clone(), false),
                Bounds::Full => match &global {
                    (Some(lo), Some(hi)) => (lo.clone(), hi.clone(), true),
                    _ => break,
                },
                Bounds::Partition => (part[0].1.clone(), part[part.len() - 1].1.clone(), true),
            };
            // The partition's values are sorted: one walk alongside the generated ones finds
            // those already present.
            let mut existing = part.iter().map(|(_, v, _)| v).peekable();
            let mut generated = Vec::new();
            let mut value = anchor;
            loop {
                let order = compare(Some(&value), Some(&upper));
                if order == Ordering::Greater || (order == Ordering::Equal && !inclusive) {
                    break;
                }
                while existing
                    .next_if(|e| compare(Some(e), Some(&value)) == Ordering::Less)
                    .is_some()
                {}
                if !existing.peek().is_some_and(|e| values_equal(e, &value)) {
                    total_generated += 1;
                    if total_generated > MAX_GENERATED_DOCS {
                        return Err(too_many_generated(total_generated));
                    }
                    generated.push(value.clone());
                }
                value = self.increment(&value)?;
            }
            let mut merged: Vec<(Bson, Document)> = part
                .iter()
                .map(|(_, v, d)| (v.clone(), d.clone()))
                .collect();
            for value in generated {
                let mut doc = Document::new();
                for path in &self.partitions {
                    if let Some(v) = lookup(&part[0].2, path) {
                        set_nested(&mut doc, path, v);
                    }
                }
                set_nested(&mut doc, &self.field, value.clone());
                merged.push((value, doc));
            }
            merged.sort_by(|(a, _), (b, _)| compare(Some(a), Some(b)));
            out.extend(merged.into_iter().map(|(_, d)| d));
            start = end;
        }
        Ok(out)
    }

    /// The partition fields' values; with `"full"` bounds and no partitions, one partition.
    fn partition_key(&self, doc: &Document) -> Bson {
        Bson::Array(
            self.partitions
                .iter()
                .map(|path| lookup(doc, path).unwrap_or(Bson::Null))
                .collect(),
        )
    }

    fn check_type(&self, value: &Bson) -> Result<()> {
        let is_date = matches!(value, Bson::DateTime(_));
        if !is_number(value) && !is_date {
            return Err(MongoError::location(
                5733201,
                "Densify field type must be numeric or a date",
            ));
        }
        match (self.unit.is_some(), is_date) {
            (true, false) => Err(MongoError::location(
                6053600,
                "Encountered numeric densify value in collection when step has a date unit.",
            )),
            (false, true) => Err(MongoError::location(
                6053600,
                "Encountered date densify value in collection when step does not have a date unit.",
            )),
            _ => Ok(()),
        }
    }

    /// The next value on the step: `$add` for numbers, `$dateAdd` for dates.
    fn increment(&self, value: &Bson) -> Result<Bson> {
        let overflow = || MongoError::location(5733201, "$densify value overflowed");
        Ok(match (value, self.unit) {
            (Bson::DateTime(d), Some(unit)) => {
                let step = to_f64(&self.step) as i64;
                let next = unit.add(d.timestamp_millis(), step).ok_or_else(overflow)?;
                Bson::DateTime(DateTime::from_millis(next))
            }
            _ if matches!(self.step, Bson::Decimal128(_))
                || matches!(value, Bson::Decimal128(_)) =>
            {
                Bson::Decimal128(to_dec(value).plus(to_dec(&self.step)).encode())
            }
            (Bson::Int32(a), _) if matches!(self.step, Bson::Int32(_)) => {
                let sum = i64::from(*a) + to_i64(&self.step);
                i32::try_from(sum).map_or(Bson::Int64(sum), Bson::Int32)
            }
            (Bson::Int32(_) | Bson::Int64(_), _)
                if matches!(self.step, Bson::Int32(_) | Bson::Int64(_)) =>
            {
                let a = to_i64(value);
                match a.checked_add(to_i64(&self.step)) {
                    Some(sum) => Bson::Int64(sum),
                    None => Bson::Double(a as f64 + to_f64(&self.step)),
                }
            }
            _ => Bson::Double(to_f64(value) + to_f64(&self.step)),
        })
    }
}
