//! Parsing one operator's argument into an [`Op`]: numeric checks for `$inc`/`$mul`, the
//! `$rename` target, `$currentDate` types, `$push` modifiers (`$each`, `$slice`, `$sort`,
//! `$position`), `$addToSet`'s `$each`, `$pop`, `$pull` conditions and `$bit` operations.

use super::parse::parse_update_path;
use super::upsert::is_path_prefix;
use super::{BitOp, Comp, Op, Pull, Push, PushSort};
use crate::error::{MongoError, Result};
use crate::expression::LetVariables;
use crate::query::filter::Filter;
use crate::query::values::{integer_to_i64, is_number, render_doc, render_element, type_name};
use bson::{Bson, doc};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

pub(super) fn parse_op(
    name: &str,
    path: &str,
    value: &Bson,
    filters: &HashMap<String, Filter>,
    used: &mut HashSet<String>,
    vars: &Arc<LetVariables>,
) -> Result<Op> {
    let element = || render_element(path, value);
    Ok(match name {
        "$set" => Op::Set(value.clone()),
        "$setOnInsert" => Op::SetOnInsert(value.clone()),
        "$unset" => Op::Unset,
        "$inc" | "$mul" => {
            if !is_number(value) {
                let verb = if name == "$inc" {
                    "increment"
                } else {
                    "multiply"
                };
                return Err(MongoError::type_mismatch(format!(
                    "Cannot {verb} with non-numeric argument: {{{}}}",
                    element()
                )));
            }
            if name == "$inc" {
                Op::Inc(value.clone())
            } else {
                Op::Mul(value.clone())
            }
        }
        "$min" => Op::Min(value.clone()),
        "$max" => Op::Max(value.clone()),
        "$currentDate" => Op::CurrentDate {
            timestamp: parse_current_date(value)?,
        },
        "$rename" => {
            let Bson::String(to) = value else {
                return Err(MongoError::bad_value(format!(
                    "The 'to' field for $rename must be a string: {}",
                    element()
                )));
            };
            let to_comps = parse_update_path(to, filters, used)?;
            let from_comps = parse_update_path(path, filters, used)?;
            if path == to {
                return Err(MongoError::bad_value(format!(
                    "The source and target field for $rename must differ: {}",
                    element()
                )));
            }
            if is_path_prefix(path, to) || is_path_prefix(to, path) {
                return Err(MongoError::bad_value(format!(
                    "The source and target field for $rename must not be on the same path: {}",
                    element()
                )));
            }
            if from_comps.iter().any(|c| !matches!(c, Comp::Field(_))) {
                return Err(MongoError::bad_value(format!(
                    "The source field for $rename may not be dynamic: {path}"
                )));
            }
            if to_comps.iter().any(|c| !matches!(c, Comp::Field(_))) {
                return Err(MongoError::bad_value(format!(
                    "The destination field for $rename may not be dynamic: {to}"
                )));
            }
            return Ok(Op::Rename {
                from: path.to_string(),
                from_parts: path.split('.').map(String::from).collect(),
            });
        }
        "$push" => Op::Push(parse_push(value)?),
        "$addToSet" => {
            let values = match value {
                Bson::Document(d) if d.keys().next().map(String::as_str) == Some("$each") => {
                    if d.len() > 1 {
                        return Err(MongoError::bad_value(format!(
                            "Found unexpected fields after $each in $addToSet: {}",
                            render_doc(d)
                        )));
                    }
                    match d.get("$each") {
                        Some(Bson::Array(items)) => items.clone(),
                        Some(other) => {
                            return Err(MongoError::type_mismatch(format!(
                                "The argument to $each in $addToSet must be an array but it was of type {}",
                                type_name(other)
                            )));
                        }
                        None => Vec::new(),
                    }
                }
                other => vec![other.clone()],
            };
            Op::AddToSet(values)
        }
        "$pop" => {
            let n = integer_to_i64(path, value)?;
            if n != 1 && n != -1 {
                return Err(MongoError::failed_to_parse(format!(
                    "$pop expects 1 or -1, found: {n}"
                )));
            }
            Op::Pop { first: n == -1 }
        }
        "$pull" => Op::Pull(parse_pull(value, vars)?),
        "$pullAll" => {
            let Bson::Array(items) = value else {
                return Err(MongoError::bad_value(format!(
                    "$pullAll requires an array argument but was given a {}",
                    type_name(value)
                )));
            };
            Op::PullAll(items.clone())
        }
        "$bit" => Op::Bit(parse_bit(value)?),
        _ => {
            return Err(MongoError::internal(format!(
                "unhandled update modifier {name}"
            )));
        }
    })
}

fn parse_current_date(value: &Bson) -> Result<bool> {
    match value {
        Bson::Boolean(_) => Ok(false),
        Bson::Document(d) => {
            let mut timestamp = None;
            for (k, v) in d {
                if k != "$type" {
                    return Err(MongoError::bad_value(format!(
                        "Unrecognized $currentDate option: {k}"
                    )));
                }
                match v {
                    Bson::String(s) if s == "date" => timestamp = Some(false),
                    Bson::String(s) if s == "timestamp" => timestamp = Some(true),
                    _ => {}
                }
            }
            timestamp.ok_or_else(|| {
                MongoError::bad_value(
                    "The '$type' string field is required to be 'date' or 'timestamp': {$currentDate: {field : {$type: 'date'}}}",
                )
            })
        }
        other => Err(MongoError::bad_value(format!(
            "{} is not valid type for $currentDate. Please use a boolean ('true') or a $type expression ({{$type: 'timestamp/date'}}).",
            type_name(other)
        ))),
    }
}

fn parse_push(value: &Bson) -> Result<Push> {
    let Bson::Document(d) = value else {
        return Ok(Push {
            values: vec![value.clone()],
            slice: None,
            sort: None,
            position: None,
        });
    };
    if !d.contains_key("$each") {
        return Ok(Push {
            values: vec![value.clone()],
            slice: None,
            sort: None,
            position: None,
        });
    }
    for key in d.keys() {
        if !matches!(key.as_str(), "$each" | "$slice" | "$sort" | "$position") {
            return Err(MongoError::bad_value(format!(
                "Unrecognized clause in $push: {key}"
            )));
        }
    }
    let values = match d.get("$each") {
        Some(Bson::Array(items)) => items.clone(),
        Some(other) => {
            return Err(MongoError::bad_value(format!(
                "The argument to $each in $push must be an array but it was of type: {}",
                type_name(other)
            )));
        }
        None => Vec::new(),
    };
    let slice = match d.get("$slice") {
        Some(v) => Some(integer_to_i64("$slice", v).map_err(|_| {
            MongoError::bad_value(format!(
                "The value for $slice must be an integer value but was given type: {}",
                type_name(v)
            ))
        })?),
        None => None,
    };
    let sort = match d.get("$sort") {
        None => None,
        Some(Bson::Document(pattern)) => {
            if pattern.is_empty() {
                return Err(MongoError::bad_value(
                    "The $sort pattern is empty when it should be a set of fields.",
                ));
            }
            let mut fields = Vec::with_capacity(pattern.len());
            for (field, dir) in pattern {
                let dir = if is_number(dir) {
                    crate::query::values::as_f64(dir)
                } else {
                    0.0
                };
                if dir != 1.0 && dir != -1.0 {
                    return Err(MongoError::bad_value(
                        "The $sort element value must be either 1 or -1",
                    ));
                }
                if field.is_empty() {
                    return Err(MongoError::bad_value("The $sort field cannot be empty"));
                }
                if field.split('.').any(str::is_empty) {
                    return Err(MongoError::bad_value(format!(
                        "The $sort field is a dotted field but has an empty part: {field}"
                    )));
                }
                fields.push((field.clone(), dir > 0.0));
            }
            Some(PushSort::Fields(fields))
        }
        Some(v) if is_number(v) => {
            let dir = crate::query::values::as_f64(v);
            if dir != 1.0 && dir != -1.0 {
                return Err(MongoError::bad_value(
                    "The $sort element value must be either 1 or -1",
                ));
            }
            Some(PushSort::Whole(dir > 0.0))
        }
        Some(_) => {
            return Err(MongoError::bad_value(
                "The $sort is invalid: use 1/-1 to sort the whole element, or {field:1/-1} to sort embedded fields",
            ));
        }
    };
    let position = match d.get("$position") {
        Some(v) => Some(integer_to_i64("$position", v).map_err(|_| {
            MongoError::bad_value(format!(
                "The value for $position must be an integer value, not of type: {}",
                type_name(v)
            ))
        })?),
        None => None,
    };
    Ok(Push {
        values,
        slice,
        sort,
        position,
    })
}

/// A `$pull` condition compares by the command's collation (in `vars`).
fn parse_pull(value: &Bson, vars: &Arc<LetVariables>) -> Result<Pull> {
    match value {
        Bson::Document(d) => {
            let first_is_operator = d
                .keys()
                .next()
                .is_some_and(|k| is_path_accepting_operator(k));
            if !first_is_operator {
                Ok(Pull::Object(Box::new(Filter::parse_with_variables(
                    d, vars,
                )?)))
            } else {
                let wrapped = doc! {"": value.clone()};
                Ok(Pull::Wrapped(Box::new(Filter::parse_with_variables(
                    &wrapped, vars,
                )?)))
            }
        }
        Bson::RegularExpression(_) => Ok(Pull::Wrapped(Box::new(Filter::parse_with_variables(
            &doc! {"": value.clone()},
            vars,
        )?))),
        other => Ok(Pull::Equal(other.clone())),
    }
}

fn is_path_accepting_operator(name: &str) -> bool {
    matches!(
        name,
        "$eq"
            | "$lt"
            | "$lte"
            | "$gte"
            | "$gt"
            | "$in"
            | "$ne"
            | "$size"
            | "$all"
            | "$nin"
            | "$exists"
            | "$mod"
            | "$type"
            | "$regex"
            | "$options"
            | "$elemMatch"
            | "$not"
            | "$near"
            | "$geoNear"
            | "$within"
            | "$geoWithin"
            | "$nearSphere"
            | "$geoIntersects"
            | "$bitsAllSet"
            | "$bitsAllClear"
            | "$bitsAnySet"
            | "$bitsAnyClear"
    )
}

fn parse_bit(value: &Bson) -> Result<Vec<(BitOp, Bson)>> {
    let Bson::Document(d) = value else {
        return Err(MongoError::bad_value(format!(
            "The $bit modifier is not compatible with a {}. You must pass in an embedded document: {{$bit: {{field: {{and/or/xor: #}}}}",
            type_name(value)
        )));
    };
    let mut ops = Vec::with_capacity(d.len());
    for (name, operand) in d {
        let op = match name.as_str() {
            "and" => BitOp::And,
            "or" => BitOp::Or,
            "xor" => BitOp::Xor,
            _ => {
                return Err(MongoError::bad_value(format!(
                    "The $bit modifier only supports 'and', 'or', and 'xor', not '{name}' which is an unknown operator: {{{}}}",
                    render_element(name, operand)
                )));
            }
        };
        if !matches!(operand, Bson::Int32(_) | Bson::Int64(_)) {
            return Err(MongoError::bad_value(format!(
                "The $bit modifier field must be an Integer(32/64 bit); a '{}' is not supported here: {{{}}}",
                type_name(operand),
                render_element(name, operand)
            )));
        }
        ops.push((op, operand.clone()));
    }
    if ops.is_empty() {
        return Err(MongoError::bad_value(
            "You must pass in at least one bitwise operation. The format is: {$bit: {field: {and/or/xor: #}}}",
        ));
    }
    Ok(ops)
}
