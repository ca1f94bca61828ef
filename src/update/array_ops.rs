//! The array operators: `$push` (with `$each`, `$position`, `$sort` and `$slice`), `$addToSet`,
//! `$pop`, `$pull` and `$pullAll`.

use super::apply::Outcome;
use super::{Op, Pull, Push, PushSort};
use crate::document::collation::Collation;
use crate::document::order::compare_collated;
use crate::document::path::get_path;
use crate::error::{MongoError, Result};
use crate::query::values::type_name;
use bson::{Bson, doc};
use std::cmp::Ordering;

/// What an array operator does to `existing`, the value at its path; strings compare by the
/// statement's collation `c` (`None`: simple).
pub(super) fn compute(
    op: &Op,
    existing: Option<&Bson>,
    path: &str,
    field: &str,
    id_text: &str,
    c: Option<&Collation>,
) -> Result<Outcome> {
    Ok(match op {
        Op::Push(push) => match existing {
            None => {
                let (items, _) = push_into(Vec::new(), push, c);
                Outcome::Set(Bson::Array(items))
            }
            Some(Bson::Array(items)) => {
                let (items, changed) = push_into(items.clone(), push, c);
                if changed {
                    Outcome::Set(Bson::Array(items))
                } else {
                    Outcome::NoOp
                }
            }
            Some(other) => {
                return Err(MongoError::bad_value(format!(
                    "The field '{path}' must be an array but is of type {} in document {id_text}",
                    type_name(other)
                )));
            }
        },
        Op::AddToSet(values) => {
            let mut items = match existing {
                None => Vec::new(),
                Some(Bson::Array(items)) => items.clone(),
                Some(other) => {
                    return Err(MongoError::bad_value(format!(
                        "Cannot apply $addToSet to non-array field. Field named '{field}' has non-array type {}",
                        type_name(other)
                    )));
                }
            };
            let before = items.len();
            for v in values {
                if !items.iter().any(|x| compare_collated(x, v, c).is_eq()) {
                    items.push(v.clone());
                }
            }
            if existing.is_some() && items.len() == before {
                Outcome::NoOp
            } else {
                Outcome::Set(Bson::Array(items))
            }
        }
        Op::Pop { first } => match existing {
            None => Outcome::NoOp,
            Some(Bson::Array(items)) if items.is_empty() => Outcome::NoOp,
            Some(Bson::Array(items)) => {
                let mut items = items.clone();
                if *first {
                    items.remove(0);
                } else {
                    items.pop();
                }
                Outcome::Set(Bson::Array(items))
            }
            Some(other) => {
                return Err(MongoError::type_mismatch(format!(
                    "Path '{path}' contains an element of non-array type '{}'",
                    type_name(other)
                )));
            }
        },
        Op::Pull(_) | Op::PullAll(_) => match existing {
            None => Outcome::NoOp,
            Some(Bson::Array(items)) => {
                let kept: Vec<Bson> = items
                    .iter()
                    .filter(|x| !pull_matches(op, x, c))
                    .cloned()
                    .collect();
                if kept.len() == items.len() {
                    Outcome::NoOp
                } else {
                    Outcome::Set(Bson::Array(kept))
                }
            }
            Some(_) => {
                return Err(MongoError::bad_value(
                    "Cannot apply $pull to a non-array value",
                ));
            }
        },
        _ => {
            return Err(MongoError::internal(format!(
                "not an array update operator: {op:?}"
            )));
        }
    })
}

fn pull_matches(op: &Op, item: &Bson, c: Option<&Collation>) -> bool {
    match op {
        Op::Pull(Pull::Equal(v)) => compare_collated(item, v, c).is_eq(),
        Op::Pull(Pull::Object(filter)) => matches!(item, Bson::Document(d) if filter.matches(d)),
        Op::Pull(Pull::Wrapped(filter)) => filter.matches(&doc! {"": item.clone()}),
        Op::PullAll(values) => values.iter().any(|v| compare_collated(item, v, c).is_eq()),
        _ => false,
    }
}

/// `$push` into `items`; returns the new array and whether anything changed.
fn push_into(mut items: Vec<Bson>, push: &Push, c: Option<&Collation>) -> (Vec<Bson>, bool) {
    let mut changed = !push.values.is_empty();
    if !push.values.is_empty() {
        let len = items.len() as i64;
        let at = match push.position {
            None => len,
            Some(p) if len == 0 || p > len => len,
            Some(p) if p >= 0 => p,
            Some(p) if -p < len => len + p,
            Some(_) => 0,
        } as usize;
        let tail = items.split_off(at);
        items.extend(push.values.iter().cloned());
        items.extend(tail);
    }
    if let Some(sort) = &push.sort {
        changed = true;
        match sort {
            PushSort::Whole(asc) => items.sort_by(|a, b| {
                let ord = compare_collated(a, b, c);
                if *asc { ord } else { ord.reverse() }
            }),
            PushSort::Fields(fields) => items.sort_by(|a, b| {
                for (field, asc) in fields {
                    let key = |v: &Bson| match v {
                        Bson::Document(d) => get_path(d, field).cloned().unwrap_or(Bson::Null),
                        _ => Bson::Null,
                    };
                    let ord = compare_collated(&key(a), &key(b), c);
                    let ord = if *asc { ord } else { ord.reverse() };
                    if ord != Ordering::Equal {
                        return ord;
                    }
                }
                Ordering::Equal
            }),
        }
    }
    if let Some(slice) = push.slice {
        let keep = slice.unsigned_abs() as usize;
        if items.len() > keep {
            changed = true;
            if slice >= 0 {
                items.truncate(keep);
            } else {
                items.drain(..items.len() - keep);
            }
        }
    }
    (items, changed)
}
