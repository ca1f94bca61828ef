//! `$setWindowFields`' window functions: parsing `{<$function>: <argument>, window: ...}` and
//! computing a function's value for every document of a sorted partition. The `$group`
//! accumulators run over each document's window; the others (`$rank`, `$shift`, `$locf`,
//! `$derivative`...) read the partition themselves.

use super::RunContext;
use super::time_unit::TimeUnit;
use super::window_math::{covariance, linear_fill, num, numbers, positions, std_dev};
use crate::aggregate::accumulators::Accumulator;
use crate::document::collation::Collation;
use crate::document::order::compare_collated;
use crate::error::{MongoError, Result};
use crate::expression::numeric::to_f64;
use crate::expression::value::{Value, is_nullish, is_number};
use crate::expression::{Expression, LetVariables, Scope};
use bson::{Bson, Document};

/// What a window function needs from the stage around it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Needs {
    /// Takes an optional `window` (default: the whole partition).
    Window,
    /// Takes a required `window`.
    ExplicitWindow,
    /// Takes no `window` and reads the partition in sort order.
    Sorted,
}

pub enum Function {
    Accumulate(Accumulator),
    StdDev {
        input: Expression,
        sample: bool,
    },
    Covariance {
        x: Expression,
        y: Expression,
        sample: bool,
    },
    Rank {
        dense: bool,
    },
    DocumentNumber,
    Shift {
        output: Expression,
        by: i64,
        default: Bson,
    },
    Locf(Expression),
    LinearFill(Expression),
    Derivative {
        input: Expression,
        unit: Option<TimeUnit>,
    },
    Integral {
        input: Expression,
        unit: Option<TimeUnit>,
    },
    ExpMovingAvg {
        input: Expression,
        alpha: f64,
    },
}

const ACCUMULATORS: &[&str] = &[
    "$sum",
    "$avg",
    "$min",
    "$max",
    "$count",
    "$push",
    "$addToSet",
    "$first",
    "$last",
    "$firstN",
    "$lastN",
    "$minN",
    "$maxN",
    "$top",
    "$bottom",
    "$topN",
    "$bottomN",
    "$median",
    "$percentile",
];

fn failed(message: impl Into<String>) -> MongoError {
    MongoError::failed_to_parse(message)
}

/// Parses the function of one output field: the `$`-prefixed key of `spec` (the `window` key,
/// if any, is the stage's business). `sorted_by_one_field` tells whether the stage's `sortBy`
/// has exactly one key, which rank-style functions require.
pub fn parse(
    field: &str,
    spec: &Document,
    has_sort: bool,
    sorted_by_one_field: bool,
    vars: &LetVariables,
) -> Result<(Function, Needs)> {
    let scope = vars.scope();
    let Some((name, argument)) = spec.iter().find(|(k, _)| k.starts_with('$')) else {
        let first = spec
            .keys()
            .next()
            .map_or(String::new(), |k| format!(", {k}"));
        return Err(failed(format!(
            "Expected a $-prefixed window function{first}"
        )));
    };
    let name = name.as_str();
    let has_window = spec.contains_key("window");
    for key in spec.keys() {
        if key != name && key != "window" {
            return Err(failed(format!("{name} got unexpected argument: {key}")));
        }
    }
    if ACCUMULATORS.contains(&name) {
        let single = Document::from_iter([(name.to_string(), argument.clone())]);
        // Output paths may be dotted, which `$group` field names may not.
        let name_for_messages = field.rsplit('.').next().unwrap_or(field);
        let acc = Accumulator::parse(name_for_messages, &Bson::Document(single), vars)?;
        return Ok((Function::Accumulate(acc), Needs::Window));
    }
    let expr = |value: &Bson| Expression::parse_in(value, scope);
    let sorted_only = |function: Function| -> Result<(Function, Needs)> {
        if has_window {
            return Err(failed(format!("{name} does not accept a 'window' field")));
        }
        Ok((function, Needs::Sorted))
    };
    match name {
        "$stdDevPop" | "$stdDevSamp" => Ok((
            Function::StdDev {
                input: expr(argument)?,
                sample: name == "$stdDevSamp",
            },
            Needs::Window,
        )),
        "$covariancePop" | "$covarianceSamp" => {
            let (x, y) = match argument {
                Bson::Array(items) if items.len() == 2 => (expr(&items[0])?, expr(&items[1])?),
                _ => {
                    return Err(failed(format!(
                        "{name} requires an array of two expressions"
                    )));
                }
            };
            Ok((
                Function::Covariance {
                    x,
                    y,
                    sample: name == "$covarianceSamp",
                },
                Needs::Window,
            ))
        }
        "$rank" | "$denseRank" | "$documentNumber" => {
            if has_window {
                return Err(MongoError::location(
                    5371601,
                    "Rank style window functions take no other arguments",
                ));
            }
            if !matches!(argument, Bson::Document(d) if d.is_empty()) {
                return Err(MongoError::location(
                    5371603,
                    format!("{name} must be specified with '{{}}' as the value"),
                ));
            }
            if !sorted_by_one_field {
                return Err(MongoError::location(
                    5371602,
                    format!(
                        "{name} must be specified with a top level sortBy expression with exactly one element"
                    ),
                ));
            }
            let function = match name {
                "$documentNumber" => Function::DocumentNumber,
                _ => Function::Rank {
                    dense: name == "$denseRank",
                },
            };
            Ok((function, Needs::Sorted))
        }
        "$shift" => {
            if !has_sort {
                return Err(failed("$shift requires a sortBy"));
            }
            sorted_only(parse_shift(argument, scope)?)
        }
        "$locf" => sorted_only(Function::Locf(expr(argument)?)),
        "$linearFill" => {
            if !sorted_by_one_field {
                return Err(MongoError::location(
                    605001,
                    "$linearFill must be specified with a top level sortBy expression with exactly one element",
                ));
            }
            sorted_only(Function::LinearFill(expr(argument)?))
        }
        "$derivative" | "$integral" => {
            let Bson::Document(args) = argument else {
                return Err(failed(format!(
                    "{name} expects an object, but got a {}",
                    crate::expression::value::bson_type_name(argument)
                )));
            };
            let mut input = None;
            let mut unit = None;
            for (key, value) in args {
                match key.as_str() {
                    "input" => input = Some(expr(value)?),
                    "unit" => {
                        let Bson::String(u) = value else {
                            return Err(failed("'unit' must be a string"));
                        };
                        unit = Some(TimeUnit::parse(u)?);
                    }
                    other => {
                        return Err(failed(format!("{name} got unexpected argument: {other}")));
                    }
                }
            }
            let input =
                input.ok_or_else(|| failed(format!("{name} requires an 'input' expression")))?;
            if !sorted_by_one_field {
                return Err(failed(format!(
                    "{name} requires a sortBy that is a single field"
                )));
            }
            if name == "$derivative" {
                if !has_window {
                    return Err(failed("$derivative requires explicit window bounds"));
                }
                Ok((Function::Derivative { input, unit }, Needs::ExplicitWindow))
            } else {
                Ok((Function::Integral { input, unit }, Needs::Window))
            }
        }
        "$expMovingAvg" => {
            if has_window {
                return Err(failed(
                    "$expMovingAvg must have exactly one argument that is an object",
                ));
            }
            sorted_only(parse_exp_moving_avg(argument, has_sort, scope)?)
        }
        _ => Err(failed(format!("Unrecognized window function, {name}"))),
    }
}

fn parse_shift(argument: &Bson, scope: &Scope) -> Result<Function> {
    let Bson::Document(args) = argument else {
        return Err(failed("Argument to $shift must be an object"));
    };
    let (mut output, mut by, mut default) = (None, None, None);
    for (key, value) in args {
        match key.as_str() {
            "output" => output = Some(Expression::parse_in(value, scope)?),
            "by" => {
                let exact = match value {
                    Bson::Int32(v) => Some(i64::from(*v)),
                    Bson::Int64(v) => i32::try_from(*v).ok().map(i64::from),
                    Bson::Double(v) if v.fract() == 0.0 && v.abs() <= f64::from(i32::MAX) => {
                        Some(*v as i64)
                    }
                    _ => None,
                };
                by = Some(exact.ok_or_else(|| {
                    failed(format!(
                        "'$shift:by' field must be an integer, but found by: {}",
                        crate::expression::value::render(Some(value))
                    ))
                })?);
            }
            "default" => {
                let expr = Expression::parse_in(value, scope)?;
                if expr.depends_on_document() {
                    return Err(failed(
                        "'$shift:default' expression must yield a constant value.",
                    ));
                }
                default = Some(expr);
            }
            other => {
                return Err(failed(format!("Unknown argument in $shift: {other}")));
            }
        }
    }
    let output = output.ok_or_else(|| failed("$shift requires an 'output' expression."))?;
    let by = by.ok_or_else(|| failed("$shift requires 'by' as an integer value."))?;
    let default = match default {
        Some(expr) => expr
            .evaluate(&crate::expression::Variables::new(
                &Document::new(),
                bson::DateTime::from_millis(0),
            ))?
            .unwrap_or(Bson::Null),
        None => Bson::Null,
    };
    Ok(Function::Shift {
        output,
        by,
        default,
    })
}

fn parse_exp_moving_avg(argument: &Bson, has_sort: bool, scope: &Scope) -> Result<Function> {
    let two_fields = "$expMovingAvg sub object must have exactly two fields: An 'input' field, and either an 'N' field or an 'alpha' field";
    let Bson::Document(args) = argument else {
        return Err(failed(
            "$expMovingAvg must have exactly one argument that is an object",
        ));
    };
    let Some(input) = args.get("input").filter(|_| args.len() == 2) else {
        return Err(failed(two_fields));
    };
    if !has_sort {
        return Err(failed("$expMovingAvg requires an explicit 'sortBy'"));
    }
    let input = Expression::parse_in(input, scope)?;
    let alpha = if let Some(n) = args.get("N") {
        if !is_number(n) || to_f64(n).fract() != 0.0 {
            return Err(failed("'N' field must be an integer"));
        }
        let n = to_f64(n);
        if n <= 0.0 {
            return Err(failed(format!("'N' must be greater than zero. Got {n}")));
        }
        2.0 / (n + 1.0)
    } else if let Some(alpha) = args.get("alpha") {
        if !is_number(alpha) {
            return Err(failed("'alpha' must be a number"));
        }
        let alpha = to_f64(alpha);
        if !(alpha > 0.0 && alpha < 1.0) {
            return Err(failed(format!(
                "'alpha' must be between 0 and 1 (exclusive), found alpha: {alpha}"
            )));
        }
        alpha
    } else {
        return Err(failed(format!(
            "Got unrecognized field in $expMovingAvg{two_fields}"
        )));
    };
    Ok(Function::ExpMovingAvg { input, alpha })
}

/// One sorted partition: its documents and, when `sortBy` has one key, each document's value
/// of that key (dates as milliseconds where a function computes with them).
pub struct Partition<'a> {
    pub docs: &'a [&'a Document],
    pub sort_values: &'a [Value],
}

impl Function {
    /// The function's value for each document; `windows[i]` is document `i`'s window as an
    /// inclusive index range (`None`: empty).
    pub fn compute(
        &self,
        part: &Partition,
        windows: &[Option<(usize, usize)>],
        ctx: &RunContext,
    ) -> Result<Vec<Bson>> {
        let eval_all = |expr: &Expression| -> Result<Vec<Value>> {
            part.docs
                .iter()
                .map(|doc| expr.evaluate(&ctx.variables(doc)))
                .collect()
        };
        let n = part.docs.len();
        Ok(match self {
            Function::Accumulate(acc) => {
                let inputs = eval_all(acc.argument())?;
                // A window has no group key for an `n` argument to read.
                let no_key = Document::new();
                let key_vars = ctx.variables(&no_key);
                windows
                    .iter()
                    .map(|window| {
                        let mut state = acc.start(&key_vars)?;
                        if let Some((lo, hi)) = *window {
                            for input in &inputs[lo..=hi] {
                                state.process(input.clone())?;
                            }
                        }
                        Ok(state.finish())
                    })
                    .collect::<Result<Vec<_>>>()?
            }
            Function::StdDev { input, sample } => {
                let inputs = eval_all(input)?;
                windows
                    .iter()
                    .map(|window| {
                        let xs: Vec<f64> = numbers(&inputs, *window);
                        std_dev(&xs, *sample)
                    })
                    .collect()
            }
            Function::Covariance { x, y, sample } => {
                let (xs, ys) = (eval_all(x)?, eval_all(y)?);
                windows
                    .iter()
                    .map(|window| covariance(&xs, &ys, *window, *sample))
                    .collect()
            }
            Function::Rank { dense } => {
                let mut out = Vec::with_capacity(n);
                let (mut rank, mut distinct) = (0_i64, 0_i64);
                for i in 0..n {
                    let tied = i > 0
                        && same_key(
                            &part.sort_values[i - 1],
                            &part.sort_values[i],
                            ctx.vars.collation(),
                        );
                    if !tied {
                        rank = i as i64 + 1;
                        distinct += 1;
                    }
                    let value = if *dense { distinct } else { rank };
                    out.push(int(value));
                }
                out
            }
            Function::DocumentNumber => (1..=n as i64).map(int).collect(),
            Function::Shift {
                output,
                by,
                default,
            } => {
                let values = eval_all(output)?;
                (0..n as i64)
                    .map(|i| {
                        usize::try_from(i + by)
                            .ok()
                            .and_then(|j| values.get(j))
                            .map_or_else(|| default.clone(), |v| v.clone().unwrap_or(Bson::Null))
                    })
                    .collect()
            }
            Function::Locf(input) => {
                let mut last = Bson::Null;
                let mut out = Vec::with_capacity(n);
                for value in eval_all(input)? {
                    if !is_nullish(value.as_ref()) {
                        last = value.unwrap_or(Bson::Null);
                    }
                    out.push(last.clone());
                }
                out
            }
            Function::LinearFill(input) => linear_fill(&eval_all(input)?, part.sort_values)?,
            Function::Derivative { input, unit } => {
                let ys = eval_all(input)?;
                let xs = positions(part.sort_values, *unit)?;
                windows
                    .iter()
                    .map(|window| match *window {
                        Some((lo, hi)) if hi > lo => {
                            match (xs[lo], xs[hi], num(&ys[lo]), num(&ys[hi])) {
                                (Some(x0), Some(x1), Some(y0), Some(y1)) if x1 != x0 => {
                                    Bson::Double((y1 - y0) / (x1 - x0))
                                }
                                _ => Bson::Null,
                            }
                        }
                        _ => Bson::Null,
                    })
                    .collect()
            }
            Function::Integral { input, unit } => {
                let ys = eval_all(input)?;
                let xs = positions(part.sort_values, *unit)?;
                windows
                    .iter()
                    .map(|window| {
                        let Some((lo, hi)) = *window else {
                            return Bson::Null;
                        };
                        let mut area = 0.0;
                        let points: Vec<(f64, f64)> = (lo..=hi)
                            .filter_map(|k| Some((xs[k]?, num(&ys[k])?)))
                            .collect();
                        for pair in points.windows(2) {
                            if let [(x0, y0), (x1, y1)] = pair {
                                area += (x1 - x0) * (y0 + y1) / 2.0;
                            }
                        }
                        Bson::Double(area)
                    })
                    .collect()
            }
            Function::ExpMovingAvg { input, alpha } => {
                let mut average: Option<f64> = None;
                let mut out = Vec::with_capacity(n);
                for value in eval_all(input)? {
                    if let Some(x) = num(&value) {
                        average = Some(average.map_or(x, |a| alpha * x + (1.0 - alpha) * a));
                    }
                    out.push(average.map_or(Bson::Null, Bson::Double));
                }
                out
            }
        })
    }
}

fn int(value: i64) -> Bson {
    i32::try_from(value).map_or(Bson::Int64(value), Bson::Int32)
}

/// Whether two `sortBy` values tie (equal under the command's collation, as the sort ordered
/// them).
fn same_key(a: &Value, b: &Value, collation: Option<&Collation>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => {
            compare_collated(a, b, collation).is_eq()
                || (is_nullish(Some(a)) && is_nullish(Some(b)))
        }
        (a, b) => is_nullish(a.as_ref()) && is_nullish(b.as_ref()),
    }
}
