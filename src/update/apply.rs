//! Applying a parsed update to a document: a replacement (keeping `_id`), or the operators at
//! their resolved paths in path order, with `_id` immutability and MongoDB's notion of change.

use super::arith_ops;
use super::array_ops;
use super::field_ops::{self, apply_rename};
use super::path::{Slot, Target, expand, locate};
use super::upsert::{id_first, is_path_prefix};
use super::{Comp, Entry, Op, UpdateContext};
use crate::document::order::compare_values;
use crate::error::{ErrorCode, MongoError, Result};
use crate::query::filter::Filter;
use crate::query::values::{render_element, type_name};
use bson::{Bson, Document, doc};
use std::cmp::Ordering;
use std::collections::HashMap;

pub(super) fn apply_replacement(
    doc: &mut Document,
    replacement: &Document,
    ctx: &UpdateContext,
) -> Result<bool> {
    let mut new = replacement.clone();
    if let Some(old_id) = doc.get("_id") {
        match new.get("_id") {
            None => {
                let mut with_id = doc! {"_id": old_id.clone()};
                with_id.extend(new);
                new = with_id;
            }
            Some(new_id)
                if !ctx.is_upsert_insert && compare_values(new_id, old_id) != Ordering::Equal =>
            {
                return Err(MongoError::new(
                    ErrorCode::ImmutableField,
                    format!(
                        "After applying the update, the (immutable) field '_id' was found to have been altered to {}",
                        render_element("_id", new_id)
                    ),
                ));
            }
            Some(_) => {}
        }
    }
    validate_id(&new)?;
    let modified = !identical_docs(doc, &new);
    *doc = new;
    Ok(modified)
}

pub(super) fn apply_modifiers(
    doc: &mut Document,
    entries: &[Entry],
    filters: &HashMap<String, Filter>,
    ctx: &UpdateContext,
) -> Result<bool> {
    let id_text = id_text(doc);
    let original_id = doc.get("_id").cloned();
    let position = match ctx.matched_filter {
        Some(f) if entries.iter().any(|e| e.comps.contains(&Comp::Positional)) => {
            f.matches_with_position(doc).1
        }
        _ => None,
    };
    let mut work: Vec<(Vec<String>, &Entry)> = Vec::new();
    let mut dynamic = false;
    for entry in entries {
        if matches!(entry.op, Op::SetOnInsert(_)) && !ctx.is_upsert_insert {
            continue;
        }
        dynamic |= entry.comps.iter().any(|c| !matches!(c, Comp::Field(_)));
        let mut paths = Vec::new();
        let mut prefix = Vec::new();
        expand(
            Some(&Bson::Document(Document::new())),
            Some(doc),
            &entry.comps,
            &mut prefix,
            &mut paths,
            position,
            filters,
        )?;
        work.extend(paths.into_iter().map(|p| (p, entry)));
    }
    if dynamic {
        let mut joined: Vec<String> = work.iter().map(|(p, _)| p.join(".")).collect();
        joined.sort();
        for pair in joined.windows(2) {
            if pair[0] == pair[1] || is_path_prefix(&pair[0], &pair[1]) {
                return Err(MongoError::new(
                    ErrorCode::ConflictingUpdateOperators,
                    format!("Update created a conflict at '{}'", pair[0]),
                ));
            }
        }
    }
    let mut modified = false;
    for (parts, entry) in work {
        let changed = match &entry.op {
            Op::Rename { from, from_parts } => {
                apply_rename(doc, from, from_parts, &parts, &id_text)?
            }
            op => apply_op(doc, &parts, op, ctx, &id_text)?,
        };
        if changed && !ctx.is_upsert_insert && original_id.is_some() {
            let touches_id = parts[0] == "_id"
                || matches!(&entry.op, Op::Rename { from_parts, .. } if from_parts[0] == "_id");
            if touches_id {
                let path = match &entry.op {
                    Op::Rename { from_parts, .. } if from_parts[0] == "_id" => from_parts.join("."),
                    _ => parts.join("."),
                };
                return Err(MongoError::new(
                    ErrorCode::ImmutableField,
                    format!(
                        "Performing an update on the path '{path}' would modify the immutable field '_id'"
                    ),
                ));
            }
        }
        modified |= changed;
    }
    if ctx.is_upsert_insert {
        *doc = id_first(std::mem::take(doc));
    }
    if modified || ctx.is_upsert_insert {
        validate_id(doc)?;
    }
    Ok(modified)
}

/// What an operator does to the value at its path.
pub(super) enum Outcome {
    NoOp,
    Set(Bson),
    Remove,
}

fn creates(op: &Op) -> bool {
    !matches!(
        op,
        Op::Unset | Op::Pop { .. } | Op::Pull(_) | Op::PullAll(_) | Op::Rename { .. }
    )
}

pub(super) fn apply_op(
    doc: &mut Document,
    parts: &[String],
    op: &Op,
    ctx: &UpdateContext,
    id_text: &str,
) -> Result<bool> {
    let path = parts.join(".");
    match locate(Slot::Doc(doc), parts, "") {
        Target::Existing(mut slot, key) => {
            let existing = slot.get(&key).cloned();
            match compute(op, existing.as_ref(), ctx, &path, &key, id_text)? {
                Outcome::NoOp => Ok(false),
                Outcome::Set(v) => {
                    slot.set(&key, v);
                    Ok(true)
                }
                Outcome::Remove => {
                    slot.remove(&key);
                    Ok(true)
                }
            }
        }
        Target::Missing(mut slot, rest) => {
            if !creates(op) {
                return Ok(false);
            }
            let field = parts.last().map(String::as_str).unwrap_or("");
            let Outcome::Set(mut value) = compute(op, None, ctx, &path, field, id_text)? else {
                return Ok(false);
            };
            if let Some(bad) = rest.iter().find(|p| p.starts_with('$')) {
                return Err(MongoError::new(
                    ErrorCode::DollarPrefixedFieldName,
                    format!(
                        "The dollar ($) prefixed field '{bad}' in '{path}' is not valid for storage."
                    ),
                ));
            }
            for name in rest[1..].iter().rev() {
                value = Bson::Document(doc! {name.as_str(): value});
            }
            slot.set(&rest[0], value);
            Ok(true)
        }
        Target::Blocked { field, element } => {
            if creates(op) {
                Err(MongoError::new(
                    ErrorCode::PathNotViable,
                    format!("Cannot create field '{field}' in element {{{element}}}"),
                ))
            } else {
                Ok(false)
            }
        }
    }
}

/// What `op` does to `existing`, the value at its path (`None` when the path is missing).
fn compute(
    op: &Op,
    existing: Option<&Bson>,
    ctx: &UpdateContext,
    path: &str,
    field: &str,
    id_text: &str,
) -> Result<Outcome> {
    match op {
        Op::Set(_)
        | Op::SetOnInsert(_)
        | Op::Unset
        | Op::Min(_)
        | Op::Max(_)
        | Op::CurrentDate { .. }
        | Op::Rename { .. } => field_ops::compute(op, existing, ctx),
        Op::Inc(_) | Op::Mul(_) | Op::Bit(_) => arith_ops::compute(op, existing, field, id_text),
        Op::Push(_) | Op::AddToSet(_) | Op::Pop { .. } | Op::Pull(_) | Op::PullAll(_) => {
            array_ops::compute(op, existing, path, field, id_text, ctx.collation)
        }
    }
}

fn id_text(doc: &Document) -> String {
    match doc.get("_id") {
        Some(id) => format!("{{{}}}", render_element("_id", id)),
        None => "{no id}".to_string(),
    }
}

pub(super) fn validate_id(doc: &Document) -> Result<()> {
    match doc.get("_id") {
        Some(v @ (Bson::Array(_) | Bson::RegularExpression(_) | Bson::Undefined)) => {
            Err(MongoError::new(
                ErrorCode::InvalidIdField,
                format!("The '_id' value cannot be of type {}", type_name(v)),
            ))
        }
        _ => Ok(()),
    }
}

/// Same type and value, field order included (MongoDB's binary equality of values).
pub(super) fn identical(a: &Bson, b: &Bson) -> bool {
    match (a, b) {
        (Bson::Document(x), Bson::Document(y)) => identical_docs(x, y),
        (Bson::Array(x), Bson::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| identical(p, q))
        }
        (Bson::Double(x), Bson::Double(y)) => x.to_bits() == y.to_bits(),
        _ => a == b,
    }
}

pub(super) fn identical_docs(a: &Document, b: &Document) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b.iter())
            .all(|((ka, va), (kb, vb))| ka == kb && identical(va, vb))
}
