//! `$densify`: documents added so that the values of a numeric or date field step evenly
//! (`range: {step, unit, bounds}`) over the whole input (`"full"`), each partition's own span
//! (`"partition"`) or explicit `[lower, upper)` bounds, per `partitionByFields` partition.
//! Generated documents hold the field and the partition fields only.
//!
//! Memory, as in MongoDB: the input goes through the spilling sort by partition and value
//! (`internalQueryMaxBlockingSortMemoryUsageBytes`), the documents are generated one at a time
//! as the sorted ones are read, and the partitions seen count against
//! `internalDocumentSourceDensifyMaxMemoryBytes` (Location6007200 past it).

use super::keyed_sort::{KeyedDocs, KeyedSort};
use super::time_unit::TimeUnit;
use super::{RunContext, Stage};
use crate::document::order::values_equal;
use crate::error::{ErrorCode, MongoError, Result};
use crate::expression::LetVariables;
use crate::expression::fieldpath::{FieldPath, lookup, set_nested};
use crate::expression::numeric::{to_dec, to_f64, to_i64};
use crate::expression::value::{bson_type_name, compare, is_nullish, is_number};
use crate::spill::approximate_value_size;
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

/// `$densify`'s input as it arrives.
pub struct DensifyRun {
    sort: KeyedSort,
    /// The least and greatest values seen (the `"full"` bounds).
    min: Option<Bson>,
    max: Option<Bson>,
}

/// `$densify`'s output as it is read.
pub struct DensifyOutput {
    sorted: KeyedDocs,
    span: Option<(Bson, Bson)>,
    partition: Option<PartitionState>,
    /// Documents generated so far, over all partitions.
    generated: usize,
    /// What MongoDB's table of partitions would hold.
    table_bytes: usize,
}

impl DensifyOutput {
    /// The next document of `stage` (the `$densify` this output is of).
    pub fn next_doc(&mut self, stage: &Densify, ctx: &RunContext) -> Result<Option<Document>> {
        stage.next_doc(self, ctx)
    }
}

/// The partition being read.
struct PartitionState {
    key: Bson,
    /// The next value on the step.
    cursor: Bson,
    /// The bound the step stops at (inclusive or not); `None` for `"partition"` bounds, where
    /// the partition's last value ends it.
    upper: Option<(Bson, bool)>,
    /// The partition fields, which generated documents carry.
    template: Document,
    /// The partition's next existing document with its value.
    pending: Option<(Bson, Document)>,
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
    /// The run the stage's input goes into: sorted by partition then field value — the `$sort`
    /// MongoDB puts before the stage, within `internalQueryMaxBlockingSortMemoryUsageBytes`
    /// and spilling as it does —, with the span of all values for `"full"` bounds.
    pub fn start(&self, ctx: &RunContext) -> DensifyRun {
        let limits = &ctx.limits;
        DensifyRun {
            sort: KeyedSort::new(
                2,
                None,
                None,
                limits.sort_limits(limits.max_sort_bytes),
                ctx.vars.collation_arc(),
            ),
            min: None,
            max: None,
        }
    }

    /// Takes one input document into `run`; a document without a value for the field is
    /// returned, to pass on at once (it is never densified).
    pub fn push(&self, run: &mut DensifyRun, doc: Document) -> Result<Option<Document>> {
        let value = lookup(&doc, &self.field);
        if is_nullish(value.as_ref()) {
            return Ok(Some(doc));
        }
        let value = value.unwrap_or(Bson::Null);
        self.check_type(&value)?;
        if run
            .min
            .as_ref()
            .is_none_or(|min| compare(Some(&value), Some(min)) == Ordering::Less)
        {
            run.min = Some(value.clone());
        }
        if run
            .max
            .as_ref()
            .is_none_or(|max| compare(Some(&value), Some(max)) == Ordering::Greater)
        {
            run.max = Some(value.clone());
        }
        let key = self.partition_key(&doc);
        run.sort.push(vec![key, value], doc)?;
        Ok(None)
    }

    /// The output over the sorted input: each partition's documents with the generated ones
    /// between them, made one at a time as they are read.
    pub fn finish(&self, run: DensifyRun) -> Result<DensifyOutput> {
        Ok(DensifyOutput {
            sorted: run.sort.finish()?,
            span: run.min.zip(run.max),
            partition: None,
            generated: 0,
            table_bytes: 0,
        })
    }

    /// The next document of `out`: a generated one while the step is behind the next existing
    /// value (or, at a partition's end, within the bounds), else the next existing one.
    fn next_doc(&self, out: &mut DensifyOutput, ctx: &RunContext) -> Result<Option<Document>> {
        loop {
            let Some(part) = out.partition.as_mut() else {
                let Some((mut keys, doc)) = out.sorted.next_keyed()? else {
                    return Ok(None);
                };
                let (Some(value), Some(key)) = (keys.pop(), keys.pop()) else {
                    return Err(MongoError::internal(
                        "a sorted $densify document lost its keys",
                    ));
                };
                if !self.partitions.is_empty() {
                    // MongoDB keeps each partition's last value in a table bounded by
                    // `internalDocumentSourceDensifyMaxMemoryBytes`; this stage reads the
                    // partitions one after another and needs no table, but holds to the same
                    // bound so that the same requests are refused.
                    out.table_bytes +=
                        approximate_value_size(&key) + approximate_value_size(&value);
                    let max_bytes = ctx.limits.max_densify_bytes;
                    if out.table_bytes > max_bytes {
                        return Err(MongoError::location(
                            6007200,
                            format!("$densify exceeded memory limit of {max_bytes}"),
                        ));
                    }
                }
                let (cursor, upper) = match &self.bounds {
                    Bounds::Explicit(range) => (range.0.clone(), Some((range.1.clone(), false))),
                    Bounds::Full => match &out.span {
                        Some((lo, hi)) => (lo.clone(), Some((hi.clone(), true))),
                        None => (value.clone(), None),
                    },
                    Bounds::Partition => (value.clone(), None),
                };
                let mut template = Document::new();
                for path in &self.partitions {
                    if let Some(v) = lookup(&doc, path) {
                        set_nested(&mut template, path, v);
                    }
                }
                out.partition = Some(PartitionState {
                    key,
                    cursor,
                    upper,
                    template,
                    pending: Some((value, doc)),
                });
                continue;
            };
            let within = |value: &Bson| match &part.upper {
                Some((upper, inclusive)) => match compare(Some(value), Some(upper)) {
                    Ordering::Less => true,
                    Ordering::Equal => *inclusive,
                    Ordering::Greater => false,
                },
                None => true,
            };
            let Some((value, _)) = &part.pending else {
                // The partition's documents are out: generate up to its upper bound.
                if part.upper.is_some() && within(&part.cursor) {
                    return self.generate(out).map(Some);
                }
                out.partition = None;
                continue;
            };
            if compare(Some(&part.cursor), Some(value)) == Ordering::Less && within(&part.cursor) {
                return self.generate(out).map(Some);
            }
            if values_equal(&part.cursor, value) && within(&part.cursor) {
                // An existing document holds this step's value.
                part.cursor = self.increment(&part.cursor)?;
            }
            let (_, doc) = part.pending.take().expect("checked above");
            if let Some((mut keys, next)) = out.sorted.next_if_first_key(&part.key)? {
                part.pending = keys.pop().map(|value| (value, next));
            }
            return Ok(Some(doc));
        }
    }

    /// The document generated at the current partition's step, which then moves on.
    fn generate(&self, out: &mut DensifyOutput) -> Result<Document> {
        out.generated += 1;
        if out.generated > MAX_GENERATED_DOCS {
            return Err(too_many_generated(out.generated));
        }
        let part = out
            .partition
            .as_mut()
            .ok_or_else(|| MongoError::internal("$densify generates outside a partition"))?;
        let mut doc = part.template.clone();
        set_nested(&mut doc, &self.field, part.cursor.clone());
        part.cursor = self.increment(&part.cursor)?;
        Ok(doc)
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
