//! The field operators: `$set`, `$setOnInsert`, `$unset`, `$min`, `$max`, `$currentDate` and
//! `$rename` (which moves a value between two paths rather than changing one).

use super::apply::{Outcome, apply_op, identical};
use super::path::canonical_index;
use super::{Op, UpdateContext};
use crate::document::order::compare_collated;
use crate::error::{ErrorCode, MongoError, Result};
use crate::query::values::render_element;
use bson::{Bson, Document};
use std::cmp::Ordering;

/// What a field operator does to `existing`, the value at its path.
pub(super) fn compute(op: &Op, existing: Option<&Bson>, ctx: &UpdateContext) -> Result<Outcome> {
    let set_if_changed = |new: Bson| match existing {
        Some(old) if identical(old, &new) => Outcome::NoOp,
        _ => Outcome::Set(new),
    };
    Ok(match op {
        Op::Set(v) | Op::SetOnInsert(v) => set_if_changed(v.clone()),
        Op::Unset => {
            if existing.is_some() {
                Outcome::Remove
            } else {
                Outcome::NoOp
            }
        }
        Op::Min(v) | Op::Max(v) => match existing {
            None => Outcome::Set(v.clone()),
            Some(old) => {
                let ord = compare_collated(old, v, ctx.collation);
                let replace = if matches!(op, Op::Min(_)) {
                    ord == Ordering::Greater
                } else {
                    ord == Ordering::Less
                };
                if replace {
                    Outcome::Set(v.clone())
                } else {
                    Outcome::NoOp
                }
            }
        },
        Op::CurrentDate { timestamp } => Outcome::Set(if *timestamp {
            let secs = (ctx.now.timestamp_millis() / 1000).clamp(0, u32::MAX as i64) as u32;
            Bson::Timestamp(bson::Timestamp {
                time: secs,
                increment: 1,
            })
        } else {
            Bson::DateTime(ctx.now)
        }),
        Op::Rename { .. } => Outcome::NoOp,
        _ => {
            return Err(MongoError::internal(format!(
                "not a field update operator: {op:?}"
            )));
        }
    })
}

pub(super) fn apply_rename(
    doc: &mut Document,
    from: &str,
    from_parts: &[String],
    to_parts: &[String],
    id_text: &str,
) -> Result<bool> {
    let id = id_text
        .trim_start_matches('{')
        .trim_end_matches('}')
        .to_string();
    // Find the source, refusing paths that cross scalars or go through arrays.
    let mut current: &Document = doc;
    let mut value: Option<&Bson> = None;
    for (i, part) in from_parts.iter().enumerate() {
        let Some(v) = current.get(part) else {
            return Ok(false);
        };
        if i + 1 == from_parts.len() {
            value = Some(v);
            break;
        }
        match v {
            Bson::Document(d) => current = d,
            Bson::Array(items) => {
                if canonical_index(&from_parts[i + 1]).is_some_and(|idx| idx < items.len()) {
                    return Err(MongoError::bad_value(format!(
                        "The source field cannot be an array element, '{from}' in doc with {id} has an array field called '{part}'"
                    )));
                }
                if canonical_index(&from_parts[i + 1]).is_some() {
                    return Ok(false);
                }
                return Err(MongoError::new(
                    ErrorCode::PathNotViable,
                    format!(
                        "cannot use the part ({part} of {from}) to traverse the element ({{{}}})",
                        render_element(part, v)
                    ),
                ));
            }
            other => {
                return Err(MongoError::new(
                    ErrorCode::PathNotViable,
                    format!(
                        "cannot use the part ({part} of {from}) to traverse the element ({{{}}})",
                        render_element(part, other)
                    ),
                ));
            }
        }
    }
    let Some(value) = value.cloned() else {
        return Ok(false);
    };
    // The destination may not go through arrays either.
    let to = to_parts.join(".");
    let mut current: &Document = doc;
    for part in &to_parts[..to_parts.len() - 1] {
        match current.get(part) {
            Some(Bson::Document(d)) => current = d,
            Some(Bson::Array(_)) => {
                return Err(MongoError::bad_value(format!(
                    "The destination field cannot be an array element, '{to}' in doc with {id} has an array field called '{part}'"
                )));
            }
            _ => break,
        }
    }
    // Set the destination first so a non-viable destination leaves the source in place.
    apply_op(
        doc,
        to_parts,
        &Op::Set(value),
        &UpdateContext {
            is_upsert_insert: false,
            now: bson::DateTime::from_millis(0),
            matched_filter: None,
            collation: None,
        },
        id_text,
    )?;
    let mut container: &mut Document = doc;
    for part in &from_parts[..from_parts.len() - 1] {
        container = match container.get_mut(part) {
            Some(Bson::Document(d)) => d,
            _ => return Ok(true),
        };
    }
    container.remove(&from_parts[from_parts.len() - 1]);
    Ok(true)
}
