//! `$setWindowFields`: documents sorted by `partitionBy` then `sortBy`, and for each output
//! field a window function computed over each document's window of its partition
//! (`documents: [lo, hi]` positions, or `range: [lo, hi]` of the sort value, with a `unit` for
//! dates). The functions live in `window_functions`.
//!
//! Memory, as in MongoDB: the input is sorted by partition and `sortBy` through the spilling
//! sort (`internalQueryMaxBlockingSortMemoryUsageBytes`), then read back a partition at a time;
//! one partition with its computed outputs may hold up to
//! `internalDocumentSourceSetWindowFieldsMaxMemoryBytes` (100 MB), past which the stage fails
//! with Location5414201. MongoDB spills a partition's documents with `allowDiskUse`; this
//! stage does not, and refuses such a partition whatever `allowDiskUse` says.

use super::keyed_sort::{KeyedDocs, KeyedSort};
use super::time_unit::TimeUnit;
use super::window_functions::{self, Function, Needs, Partition};
use super::{RunContext, Stage};
use crate::error::{ErrorCode, MongoError, Result};
use crate::expression::fieldpath::{FieldPath, set_nested};
use crate::expression::numeric::to_f64;
use crate::expression::value::{Value, bson_type_name, compare, is_number, render, type_name};
use crate::expression::{Expression, LetVariables};
use crate::query::sort::SortSpec;
use crate::spill::{approximate_document_size, approximate_value_size};
use bson::{Bson, Document};
use std::cmp::Ordering;
use std::collections::VecDeque;
use std::sync::Arc;

pub struct SetWindowFields {
    partition_by: Option<Expression>,
    sort_by: Option<SortSpec>,
    /// The path of the only `sortBy` key, which ranges and rank-style functions read.
    sort_field: Option<Vec<String>>,
    outputs: Vec<Output>,
}

struct Output {
    path: Vec<String>,
    function: Function,
    bounds: Bounds,
}

#[derive(Clone, Debug, PartialEq)]
enum Bound<T> {
    Unbounded,
    Current,
    At(T),
}

enum Bounds {
    Documents(Bound<i64>, Bound<i64>),
    Range(Bound<Bson>, Bound<Bson>, Option<TimeUnit>),
}

fn failed(message: impl Into<String>) -> MongoError {
    MongoError::failed_to_parse(message)
}

fn wrong_type(field: &str, value: &Bson, expected: &str) -> MongoError {
    MongoError::new(
        ErrorCode::TypeMismatch,
        format!(
            "BSON field '$setWindowFields.{field}' is the wrong type '{}', expected type '{expected}'",
            bson_type_name(value)
        ),
    )
}

pub fn parse(name: &str, spec: &Bson, vars: &Arc<LetVariables>) -> Result<Vec<Stage>> {
    let Bson::Document(spec) = spec else {
        return Err(failed(format!(
            "the {name} stage specification must be an object, found {}",
            bson_type_name(spec)
        )));
    };
    let scope = vars.scope();
    let (mut partition_by, mut sort_by, mut output) = (None, None, None);
    for (field, value) in spec {
        match field.as_str() {
            "partitionBy" => partition_by = Some(Expression::parse_in(value, scope)?),
            "sortBy" => {
                let Bson::Document(keys) = value else {
                    return Err(wrong_type("sortBy", value, "object"));
                };
                sort_by = Some(keys.clone());
            }
            "output" => {
                let Bson::Document(fields) = value else {
                    return Err(wrong_type("output", value, "object"));
                };
                output = Some(fields.clone());
            }
            other => {
                return Err(MongoError::new(
                    ErrorCode::IDLUnknownField,
                    format!("BSON field '$setWindowFields.{other}' is an unknown field."),
                ));
            }
        }
    }
    let output = output.ok_or_else(|| crate::command::missing("$setWindowFields", "output"))?;
    // A `{$meta: ...}` key sorts by metadata, not by a field of that name.
    let sort_field = sort_by
        .as_ref()
        .filter(|keys| keys.len() == 1)
        .and_then(|keys| keys.iter().next())
        .filter(|(_, direction)| is_number(direction))
        .map(|(path, _)| path.split('.').map(String::from).collect::<Vec<_>>());
    let ascending_single = sort_by
        .as_ref()
        .filter(|keys| keys.len() == 1)
        .and_then(|keys| keys.values().next())
        .is_some_and(|direction| is_number(direction) && to_f64(direction) > 0.0);
    let sort_spec = sort_by
        .as_ref()
        .map(|s| SortSpec::parse_for(s, vars))
        .transpose()?;
    let mut outputs = Vec::with_capacity(output.len());
    for (field, function) in &output {
        let path = FieldPath::parse(field)?;
        let Bson::Document(function) = function else {
            return Err(failed(format!("The field '{field}' must be an object")));
        };
        let (function_parsed, needs) = window_functions::parse(
            field,
            function,
            sort_by.is_some(),
            sort_field.is_some(),
            vars,
        )?;
        let bounds = match (function.get("window"), needs) {
            (Some(window), Needs::Window | Needs::ExplicitWindow) => parse_bounds(
                window,
                sort_by.is_some(),
                sort_field.is_some(),
                ascending_single,
                vars,
            )?,
            _ => Bounds::Documents(Bound::Unbounded, Bound::Unbounded),
        };
        outputs.push(Output {
            path: path.parts().to_vec(),
            function: function_parsed,
            bounds,
        });
    }
    Ok(vec![Stage::SetWindowFields(SetWindowFields {
        partition_by,
        sort_by: sort_spec,
        sort_field,
        outputs,
    })])
}

fn parse_bounds(
    window: &Bson,
    has_sort: bool,
    single_sort: bool,
    ascending: bool,
    vars: &Arc<LetVariables>,
) -> Result<Bounds> {
    let Bson::Document(window) = window else {
        return Err(failed("'window' field must be an object"));
    };
    let (documents, range, unit) = (
        window.get("documents"),
        window.get("range"),
        window.get("unit"),
    );
    if documents.is_some() && range.is_some() {
        return Err(failed(
            "Window bounds can specify either 'documents' or 'unit', not both.",
        ));
    }
    if range.is_none() && unit.is_some() {
        return Err(failed(
            "Window bounds can only specify 'unit' with range-based bounds.",
        ));
    }
    let pair = |value: &Bson| -> Result<(Bson, Bson)> {
        match value {
            Bson::Array(items) if items.len() == 2 => Ok((items[0].clone(), items[1].clone())),
            _ => Err(failed(format!(
                "Window bounds must be a 2-element array: {}",
                render(Some(value))
            ))),
        }
    };
    if let Some(documents) = documents {
        if window.len() != 1 {
            return Err(failed(
                "'window' field that specifies documents cannot have other fields",
            ));
        }
        let (lo, hi) = pair(documents)?;
        let as_int = |v: Bson| -> Result<i64> {
            match integral(&v) {
                Some(n) => Ok(n),
                None => Err(failed("Numeric document-based bounds must be an integer")),
            }
        };
        let lower = parse_bound(&lo, vars, as_int)?;
        let upper = parse_bound(&hi, vars, as_int)?;
        check_forward(&lower, &upper, |a, b| a <= b, |n| Bson::Int64(*n))?;
        let unbounded = lower == Bound::Unbounded && upper == Bound::Unbounded;
        if !unbounded && !has_sort {
            return Err(MongoError::location(
                5339901,
                "Document-based bounds require a sortBy",
            ));
        }
        return Ok(Bounds::Documents(lower, upper));
    }
    let Some(range) = range else {
        if !window.is_empty() {
            return Err(failed(
                "'window' field can only contain 'documents' as the only argument or 'range' with an optional 'unit' field",
            ));
        }
        return Ok(Bounds::Documents(Bound::Unbounded, Bound::Unbounded));
    };
    let (lo, hi) = pair(range)?;
    let unit = match unit {
        Some(unit) => {
            if window.len() != 2 {
                return Err(failed(
                    "'window' field that specifies unit cannot have other fields besides 'range'",
                ));
            }
            let Bson::String(unit) = unit else {
                return Err(failed("'unit' must be a string"));
            };
            Some(TimeUnit::parse(unit)?)
        }
        None => {
            if window.len() != 1 {
                return Err(failed(
                    "'window' field that specifies range cannot have other fields besides 'unit'",
                ));
            }
            None
        }
    };
    let check = |v: Bson| -> Result<Bson> {
        match (unit, integral(&v)) {
            (Some(_), Some(_)) => Ok(v),
            (Some(_), None) => Err(failed("With 'unit', range-based bounds must be an integer")),
            (None, _) if is_number(&v) => Ok(v),
            (None, _) => Err(failed("Range-based bounds expression must be a number")),
        }
    };
    let lower = parse_bound(&lo, vars, check)?;
    let upper = parse_bound(&hi, vars, check)?;
    check_forward(
        &lower,
        &upper,
        |a, b| compare(Some(a), Some(b)) != Ordering::Greater,
        Bson::clone,
    )?;
    if !single_sort {
        return Err(MongoError::location(
            5339902,
            "Range-based bounds require sortBy a single field",
        ));
    }
    if !ascending {
        return Err(MongoError::location(
            8947401,
            "Range-based bounds require an ascending sortBy",
        ));
    }
    Ok(Bounds::Range(lower, upper, unit))
}

fn integral(value: &Bson) -> Option<i64> {
    match value {
        Bson::Int32(v) => Some(i64::from(*v)),
        Bson::Int64(v) => Some(*v),
        Bson::Double(v) if v.fract() == 0.0 && v.is_finite() => Some(*v as i64),
        Bson::Decimal128(_) if to_f64(value).fract() == 0.0 => Some(to_f64(value) as i64),
        _ => None,
    }
}

fn parse_bound<T>(
    value: &Bson,
    vars: &Arc<LetVariables>,
    convert: impl Fn(Bson) -> Result<T>,
) -> Result<Bound<T>> {
    match value {
        Bson::String(s) if s == "unbounded" => Ok(Bound::Unbounded),
        Bson::String(s) if s == "current" => Ok(Bound::Current),
        Bson::String(_) => Err(failed(
            "Window bounds must be 'unbounded', 'current', or a number.",
        )),
        other => {
            let constant = super::bucket::constant_value(other, vars)?
                .ok_or_else(|| failed("Window bounds expression must be a constant."))?;
            Ok(Bound::At(convert(constant)?))
        }
    }
}

/// `current` counts as 0; two numeric bounds must be in order.
fn check_forward<T: Clone>(
    lower: &Bound<T>,
    upper: &Bound<T>,
    less_or_equal: impl Fn(&T, &T) -> bool,
    show: impl Fn(&T) -> Bson,
) -> Result<()> {
    let zero = |b: &Bound<T>| -> Option<Option<T>> {
        match b {
            Bound::Current => Some(None),
            Bound::At(v) => Some(Some(v.clone())),
            Bound::Unbounded => None,
        }
    };
    let (Some(lo), Some(hi)) = (zero(lower), zero(upper)) else {
        return Ok(());
    };
    let ordered = match (&lo, &hi) {
        (Some(a), Some(b)) => less_or_equal(a, b),
        (Some(a), None) => compare(Some(&show(a)), Some(&Bson::Int32(0))) != Ordering::Greater,
        (None, Some(b)) => compare(Some(&Bson::Int32(0)), Some(&show(b))) != Ordering::Greater,
        (None, None) => true,
    };
    if !ordered {
        let text = |v: &Option<T>| {
            v.as_ref()
                .map_or("0".to_string(), |v| render(Some(&show(v))))
        };
        return Err(MongoError::location(
            5339900,
            format!(
                "Lower bound must not exceed upper bound: [{}, {}]",
                text(&lo),
                text(&hi)
            ),
        ));
    }
    Ok(())
}

impl SetWindowFields {
    /// The sort the stage's input goes into: by partition, then `sortBy` — the `$sort` MongoDB
    /// puts before the stage, within `internalQueryMaxBlockingSortMemoryUsageBytes` and
    /// spilling as it does.
    /// Without `partitionBy` and `sortBy` MongoDB sorts nothing: the input is one partition,
    /// held as it arrives.
    pub fn start(&self, ctx: &RunContext) -> WindowRun {
        if self.partition_by.is_none() && self.sort_by.is_none() {
            return WindowRun::Whole(Vec::new(), 0);
        }
        let limits = &ctx.limits;
        WindowRun::Sorted(KeyedSort::new(
            1,
            self.sort_by.as_ref(),
            None,
            limits.sort_limits(limits.max_sort_bytes),
            ctx.vars.collation_arc(),
        ))
    }

    /// Takes one input document into `run`, with its partition.
    pub fn push(&self, run: &mut WindowRun, doc: Document, ctx: &RunContext) -> Result<()> {
        let sort = match run {
            WindowRun::Sorted(sort) => sort,
            WindowRun::Whole(docs, used) => {
                *used += approximate_document_size(&doc);
                let max_bytes = ctx.limits.max_window_bytes;
                if *used > max_bytes {
                    return Err(exceeded_memory(*used, max_bytes));
                }
                docs.push(doc);
                return Ok(());
            }
        };
        let key = match &self.partition_by {
            Some(expr) => {
                let key = expr.evaluate(&ctx.variables(&doc))?;
                if let Some(Bson::Array(_)) = key {
                    return Err(MongoError::new(
                        ErrorCode::TypeMismatch,
                        "An expression used to partition cannot evaluate to value of type array",
                    ));
                }
                key.unwrap_or(Bson::Null)
            }
            None => Bson::Null,
        };
        sort.push(vec![key], doc)
    }

    /// The output over the sorted input, computed a partition at a time as it is read.
    pub fn finish(&self, run: WindowRun) -> Result<WindowOutput> {
        let input = match run {
            WindowRun::Sorted(sort) => WindowInput::Sorted(Box::new(sort.finish()?)),
            WindowRun::Whole(docs, used) => WindowInput::Whole(Some((docs, used))),
        };
        Ok(WindowOutput {
            input,
            ready: VecDeque::new(),
        })
    }

    /// One partition's documents with their output fields. The partition and the outputs
    /// computed over it are held at once, within `max_bytes`
    /// (`internalDocumentSourceSetWindowFieldsMaxMemoryBytes`).
    fn partition_output(
        &self,
        docs: Vec<Document>,
        mut used: usize,
        ctx: &RunContext,
    ) -> Result<Vec<Document>> {
        let max_bytes = ctx.limits.max_window_bytes;
        let docs_ref: Vec<&Document> = docs.iter().collect();
        let mut results = Vec::with_capacity(self.outputs.len());
        let sort_values: Vec<Value> = docs
            .iter()
            .map(|doc| match &self.sort_field {
                Some(path) => crate::expression::fieldpath::lookup(doc, path),
                None => None,
            })
            .collect();
        let partition = Partition {
            docs: &docs_ref,
            sort_values: &sort_values,
        };
        for output in &self.outputs {
            let windows = windows(&output.bounds, &sort_values)?;
            let values = output.function.compute(&partition, &windows, ctx)?;
            // The outputs are computed for the whole partition before any document leaves,
            // so they count with it (a `$push` over an unbounded window grows with the square
            // of the partition).
            used = used.saturating_add(values.iter().map(approximate_value_size).sum());
            if used > max_bytes {
                return Err(exceeded_memory(used, max_bytes));
            }
            results.push(values);
        }
        drop(docs_ref);
        let mut out = Vec::with_capacity(docs.len());
        for (i, mut doc) in docs.into_iter().enumerate() {
            for (output, values) in self.outputs.iter().zip(&mut results) {
                set_nested(&mut doc, &output.path, std::mem::take(&mut values[i]));
            }
            out.push(doc);
        }
        Ok(out)
    }
}

/// MongoDB's refusal of a partition past `internalDocumentSourceSetWindowFieldsMaxMemoryBytes`.
fn exceeded_memory(used: usize, max_bytes: usize) -> MongoError {
    MongoError::location(
        5414201,
        format!(
            "Exceeded memory limit in DocumentSourceSetWindowFields, used {used} bytes but max allowed is {max_bytes}"
        ),
    )
}

/// `$setWindowFields`' output as it is read: its sorted input and the documents of the
/// partition computed last.
pub struct WindowOutput {
    input: WindowInput,
    ready: VecDeque<Document>,
}

/// `$setWindowFields`' input as it arrives: sorted by partition and `sortBy`, or, with
/// neither, held whole (one partition) with its bytes.
pub enum WindowRun {
    Sorted(KeyedSort),
    Whole(Vec<Document>, usize),
}

enum WindowInput {
    Sorted(Box<KeyedDocs>),
    /// The one partition, until it is computed.
    Whole(Option<(Vec<Document>, usize)>),
}

impl WindowOutput {
    /// The next document of `stage` (the `$setWindowFields` this output is of).
    pub fn next_doc(
        &mut self,
        stage: &SetWindowFields,
        ctx: &RunContext,
    ) -> Result<Option<Document>> {
        if self.ready.is_empty() {
            let sorted = match &mut self.input {
                WindowInput::Sorted(sorted) => sorted,
                WindowInput::Whole(whole) => {
                    if let Some((docs, used)) = whole.take() {
                        if !docs.is_empty() {
                            self.ready = stage.partition_output(docs, used, ctx)?.into();
                        }
                    }
                    return Ok(self.ready.pop_front());
                }
            };
            let Some((key, first)) = sorted.next_keyed()? else {
                return Ok(None);
            };
            let max_bytes = ctx.limits.max_window_bytes;
            let mut used = approximate_document_size(&first);
            let mut docs = vec![first];
            while let Some((_, doc)) = sorted.next_if_first_key(&key[0])? {
                used += approximate_document_size(&doc);
                if used > max_bytes {
                    return Err(exceeded_memory(used, max_bytes));
                }
                docs.push(doc);
            }
            self.ready = stage.partition_output(docs, used, ctx)?.into();
        }
        Ok(self.ready.pop_front())
    }
}

/// Each document's window as an inclusive index range of its partition.
fn windows(bounds: &Bounds, sort_values: &[Value]) -> Result<Vec<Option<(usize, usize)>>> {
    let n = sort_values.len();
    match bounds {
        Bounds::Documents(lower, upper) => Ok((0..n as i64)
            .map(|i| {
                let lo = match lower {
                    Bound::Unbounded => 0,
                    Bound::Current => i,
                    Bound::At(k) => (i + k).max(0),
                };
                let hi = match upper {
                    Bound::Unbounded => n as i64 - 1,
                    Bound::Current => i,
                    Bound::At(k) => (i + k).min(n as i64 - 1),
                };
                (lo <= hi && lo < n as i64 && hi >= 0).then_some((lo as usize, hi as usize))
            })
            .collect()),
        Bounds::Range(lower, upper, unit) => {
            let mut positions = Vec::with_capacity(n);
            for value in sort_values {
                positions.push(range_position(value.as_ref(), *unit)?);
            }
            let shifted = |base: f64, bound: &Bound<Bson>| -> Option<f64> {
                match bound {
                    Bound::Unbounded => None,
                    Bound::Current => Some(base),
                    Bound::At(offset) => Some(match unit {
                        Some(unit) => unit
                            .add(base as i64, integral(offset).unwrap_or(0))
                            .map_or(f64::INFINITY, |m| m as f64),
                        None => base + to_f64(offset),
                    }),
                }
            };
            Ok(positions
                .iter()
                .map(|&base| {
                    let lo_value = shifted(base, lower);
                    let hi_value = shifted(base, upper);
                    let lo = positions
                        .iter()
                        .position(|&p| lo_value.is_none_or(|v| p >= v))?;
                    let hi = positions
                        .iter()
                        .rposition(|&p| hi_value.is_none_or(|v| p <= v))?;
                    (lo <= hi).then_some((lo, hi))
                })
                .collect())
        }
    }
}

/// A sort value as a position on the range axis: a number without `unit`, a date (in
/// milliseconds) with one.
fn range_position(value: Option<&Bson>, unit: Option<TimeUnit>) -> Result<f64> {
    match (value, unit) {
        (Some(Bson::DateTime(d)), Some(_)) => Ok(d.timestamp_millis() as f64),
        (_, Some(_)) => Err(MongoError::location(
            5429513,
            format!(
                "Invalid range: Expected the sortBy field to be a Date, but it was {}",
                type_name(value)
            ),
        )),
        (Some(Bson::DateTime(_)), None) => Err(MongoError::location(
            5429413,
            "Invalid range: For windows that involve date or time ranges, a unit must be provided.",
        )),
        (Some(v), None) if is_number(v) => Ok(to_f64(v)),
        (_, None) => Err(MongoError::location(
            5429414,
            format!(
                "Invalid range: Expected the sortBy field to be a number, but it was {}",
                type_name(value)
            ),
        )),
    }
}
