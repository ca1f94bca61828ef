//! The find-only projection operators: `$slice` (`n` or `[skip, limit]`), `$elemMatch` and the
//! positional `$`, parsed from `{field: {$op: arg}}` and applied to a projected document.

use super::expression::{is_expression_name, parse_expression_object};
use super::parse::{ParseContext, add_node};
use super::{PathNode, ProjNode, Projection};
use crate::error::{MongoError, Result};
use crate::query::filter::Filter;
use crate::query::values::{not_implemented, render_doc, type_name};
use bson::{Bson, Document, doc};

/// `{field: {$op: arg}}`: the find-only operators, `$literal` and `$meta`. Returns false when
/// `$op` is not an expression name at all.
pub(super) fn parse_find_expression(
    ctx: &mut ParseContext,
    name: &str,
    key: &str,
    arg: &Bson,
    obj: &Document,
    parent: &mut PathNode,
    is_root: bool,
) -> Result<bool> {
    match key {
        "$slice" => {
            let (skip, limit) = match parse_find_slice(arg) {
                Ok(v) => v,
                Err(find_error) => {
                    let expression_error = match arg {
                        Bson::Array(items) if (2..=3).contains(&items.len()) => not_implemented(
                            "the $slice aggregation expression is not supported in projections yet",
                        ),
                        _ => {
                            let n = if let Bson::Array(items) = arg {
                                items.len()
                            } else {
                                1
                            };
                            MongoError::location(
                                28667,
                                format!(
                                    "Expression $slice takes at least 2 arguments, and at most 3, but {n} were passed in."
                                ),
                            )
                        }
                    };
                    return Err(MongoError::new(
                        expression_error.code(),
                        format!(
                            "Invalid $slice syntax. The given syntax {} did not match the find() syntax because :: {}: {} :: The given syntax did not match the expression $slice syntax. :: caused by :: {}",
                            render_doc(obj),
                            find_error.code().name(),
                            find_error.message(),
                            expression_error.message()
                        ),
                    ));
                }
            };
            add_node(parent, name, ProjNode::Slice { skip, limit })?;
            ctx.has_find_slice = true;
            Ok(true)
        }
        "$elemMatch" => {
            let Bson::Document(_) = arg else {
                return Err(MongoError::location(
                    31274,
                    format!(
                        "elemMatch: Invalid argument, object required, but got {}",
                        type_name(arg)
                    ),
                ));
            };
            if ctx.has_positional {
                return Err(MongoError::location(
                    31255,
                    "Cannot specify positional operator and $elemMatch.",
                ));
            }
            if name.contains('.') || !is_root {
                return Err(MongoError::location(
                    31275,
                    "Cannot use $elemMatch projection on a nested field.",
                ));
            }
            let elem_match = doc! {name: {"$elemMatch": arg.clone()}};
            let filter = Filter::parse_restricted_under(&elem_match, ctx.collation.clone())?;
            add_node(parent, name, ProjNode::ElemMatch(Box::new(filter)))?;
            ctx.has_elem_match = true;
            Ok(true)
        }
        _ if is_expression_name(key) => {
            let is_meta = key == "$meta";
            if ctx.inclusion == Some(false) && !is_meta {
                return Err(MongoError::location(
                    31252,
                    "Cannot use expression other than $meta in exclusion projection",
                ));
            }
            if !is_meta {
                ctx.inclusion = Some(true);
            }
            let expr = parse_expression_object(key, arg, obj, ctx.scope)?;
            add_node(parent, name, ProjNode::Expr(expr))?;
            Ok(true)
        }
        _ => Ok(false),
    }
}

fn parse_find_slice(arg: &Bson) -> Result<(Option<i32>, i32)> {
    let as_int = |v: &Bson| -> i32 {
        match v {
            Bson::Int32(n) => *n,
            Bson::Int64(n) => *n as i32,
            other => crate::query::values::as_f64(other) as i32,
        }
    };
    match arg {
        v if crate::query::values::is_number(v) => Ok((None, as_int(v))),
        Bson::Array(items) => {
            if items.len() != 2 {
                return Err(MongoError::location(
                    31272,
                    "$slice array argument should be of form [skip, limit]",
                ));
            }
            if !crate::query::values::is_number(&items[0]) {
                return Err(MongoError::location(
                    31257,
                    format!(
                        "$slice expects the skip argument to be a number, got {}",
                        type_name(&items[0])
                    ),
                ));
            }
            if !crate::query::values::is_number(&items[1]) {
                return Err(MongoError::location(
                    31258,
                    format!(
                        "$slice expects the limit argument to be a number, got {}",
                        type_name(&items[1])
                    ),
                ));
            }
            let limit = as_int(&items[1]);
            if limit <= 0 {
                return Err(MongoError::location(
                    31259,
                    format!("$slice limit must be positive, got {limit}"),
                ));
            }
            Ok((Some(as_int(&items[0])), limit))
        }
        _ => Err(MongoError::location(
            31273,
            "$slice only supports numbers and [skip, limit] arrays",
        )),
    }
}

impl Projection {
    pub(super) fn apply_elem_matches(&self, doc: &Document, out: &mut Document) {
        let elem_matches = self
            .elem_matches
            .iter()
            .filter_map(|&i| self.root.children.get_index(i));
        for (name, node) in elem_matches {
            let ProjNode::ElemMatch(filter) = node else {
                continue;
            };
            match (filter.matches_with_position(doc), doc.get(name)) {
                ((true, Some(i)), Some(Bson::Array(items))) if i < items.len() => {
                    out.insert(name.clone(), Bson::Array(vec![items[i].clone()]));
                }
                _ => {
                    out.remove(name);
                }
            }
        }
    }
}

/// Find's `$slice`: `limit` elements from the front (or back when negative), after `skip`
/// (counted from the back when negative). Non-arrays are left alone.
pub(super) fn slice(value: &Bson, skip: Option<i32>, limit: i32) -> Bson {
    let Bson::Array(items) = value else {
        return value.clone();
    };
    let len = items.len() as i64;
    let (start, end) = match skip {
        None if limit >= 0 => (0, (limit as i64).min(len)),
        None => ((len + limit as i64).max(0), len),
        Some(skip) => {
            let start = if skip < 0 {
                (len + skip as i64).max(0)
            } else {
                (skip as i64).min(len)
            };
            (start, (start + limit as i64).min(len))
        }
    };
    Bson::Array(items[start as usize..end as usize].to_vec())
}

/// Cuts the first array along `path` in the projected document down to its `position`th element.
pub(super) fn apply_positional(out: &mut Document, path: &[String], position: usize) -> Result<()> {
    let Some((first, rest)) = path.split_first() else {
        return Ok(());
    };
    let Some(value) = out.get_mut(first) else {
        return Ok(());
    };
    match value {
        Bson::Array(items) => {
            if position >= items.len() {
                return Err(MongoError::location(
                    51247,
                    "positional operator '.$' element mismatch",
                ));
            }
            let element = items[position].clone();
            *value = Bson::Array(vec![element]);
            Ok(())
        }
        Bson::Document(d) if !rest.is_empty() => apply_positional(d, rest, position),
        _ => Ok(()),
    }
}
