//! Update paths against a document: resolving `$`, `$[]` and `$[<id>]` into concrete paths, and
//! walking a concrete path to the container that holds (or would hold) its value.

use super::Comp;
use crate::error::{MongoError, Result};
use crate::query::filter::Filter;
use crate::query::values::{array_index, render_element};
use bson::{Bson, Document, doc};
use std::collections::HashMap;

/// Resolves `$`, `$[]` and `$[<id>]` against the document into concrete paths.
pub(super) fn expand(
    value: Option<&Bson>,
    root: Option<&Document>,
    comps: &[Comp],
    prefix: &mut Vec<String>,
    out: &mut Vec<Vec<String>>,
    position: Option<usize>,
    filters: &HashMap<String, Filter>,
) -> Result<()> {
    let Some((first, rest)) = comps.split_first() else {
        out.push(prefix.clone());
        return Ok(());
    };
    let child = |name: &str| -> Option<&Bson> {
        if let Some(doc) = root {
            return doc.get(name);
        }
        match value? {
            Bson::Document(d) => d.get(name),
            Bson::Array(items) => array_index(name)
                .filter(|i| i.to_string() == name)
                .and_then(|i| items.get(i)),
            _ => None,
        }
    };
    match first {
        Comp::Field(name) => {
            let next = child(name);
            prefix.push(name.clone());
            expand(next, None, rest, prefix, out, position, filters)?;
            prefix.pop();
        }
        Comp::Positional => {
            let Some(pos) = position else {
                return Err(MongoError::bad_value(
                    "The positional operator did not find the match needed from the query.",
                ));
            };
            let name = pos.to_string();
            let next = child(&name);
            prefix.push(name);
            expand(next, None, rest, prefix, out, position, filters)?;
            prefix.pop();
        }
        Comp::All | Comp::Filtered(_) => {
            let Some(value) = value else {
                return Err(MongoError::bad_value(format!(
                    "The path '{}' must exist in the document in order to apply array updates.",
                    prefix.join(".")
                )));
            };
            let Bson::Array(items) = value else {
                return Err(MongoError::bad_value(format!(
                    "Cannot apply array updates to non-array element {}",
                    render_element(prefix.last().map(String::as_str).unwrap_or(""), value)
                )));
            };
            for (i, item) in items.iter().enumerate() {
                if let Comp::Filtered(id) = first {
                    let matched = filters
                        .get(id)
                        .is_some_and(|f| f.matches(&doc! {id.as_str(): item.clone()}));
                    if !matched {
                        continue;
                    }
                }
                prefix.push(i.to_string());
                expand(Some(item), None, rest, prefix, out, position, filters)?;
                prefix.pop();
            }
        }
    }
    Ok(())
}

/// A container an update writes into.
pub(super) enum Slot<'a> {
    Doc(&'a mut Document),
    Arr(&'a mut Vec<Bson>),
}

impl Slot<'_> {
    pub(super) fn get(&self, key: &str) -> Option<&Bson> {
        match self {
            Slot::Doc(d) => d.get(key),
            Slot::Arr(items) => array_index(key).and_then(|i| items.get(i)),
        }
    }

    pub(super) fn set(&mut self, key: &str, value: Bson) {
        match self {
            Slot::Doc(d) => {
                d.insert(key, value);
            }
            Slot::Arr(items) => {
                if let Some(i) = array_index(key) {
                    while items.len() < i {
                        items.push(Bson::Null);
                    }
                    if i < items.len() {
                        items[i] = value;
                    } else {
                        items.push(value);
                    }
                }
            }
        }
    }

    /// `$unset` of an array element leaves null in its place, as MongoDB does.
    pub(super) fn remove(&mut self, key: &str) {
        match self {
            Slot::Doc(d) => {
                d.remove(key);
            }
            Slot::Arr(items) => {
                if let Some(slot) = array_index(key).and_then(|i| items.get_mut(i)) {
                    *slot = Bson::Null;
                }
            }
        }
    }
}

pub(super) enum Target<'a> {
    /// The value exists at `slot[key]`.
    Existing(Slot<'a>, String),
    /// `rest[0]` is missing from `slot`; `rest[1..]` would be created below it.
    Missing(Slot<'a>, Vec<String>),
    /// The path runs into a value that cannot hold `field`.
    Blocked { field: String, element: String },
}

pub(super) fn canonical_index(part: &str) -> Option<usize> {
    array_index(part).filter(|i| i.to_string() == part)
}

pub(super) fn locate<'a>(slot: Slot<'a>, parts: &[String], slot_name: &str) -> Target<'a> {
    let key = &parts[0];
    let rest = &parts[1..];
    match slot {
        Slot::Doc(d) => {
            if !d.contains_key(key) {
                return Target::Missing(Slot::Doc(d), parts.to_vec());
            }
            if rest.is_empty() {
                return Target::Existing(Slot::Doc(d), key.clone());
            }
            match d.get_mut(key) {
                Some(Bson::Document(sub)) => locate(Slot::Doc(sub), rest, key),
                Some(Bson::Array(items)) => locate(Slot::Arr(items), rest, key),
                Some(other) => Target::Blocked {
                    field: rest[0].clone(),
                    element: render_element(key, other),
                },
                None => Target::Blocked {
                    field: key.clone(),
                    element: String::new(),
                },
            }
        }
        Slot::Arr(items) => {
            let Some(i) = canonical_index(key) else {
                let element = render_element(slot_name, &Bson::Array(items.clone()));
                return Target::Blocked {
                    field: key.clone(),
                    element,
                };
            };
            if i >= items.len() {
                return Target::Missing(Slot::Arr(items), parts.to_vec());
            }
            if rest.is_empty() {
                return Target::Existing(Slot::Arr(items), key.clone());
            }
            match &mut items[i] {
                Bson::Document(sub) => locate(Slot::Doc(sub), rest, key),
                Bson::Array(inner) => locate(Slot::Arr(inner), rest, key),
                other => Target::Blocked {
                    field: rest[0].clone(),
                    element: render_element(key, other),
                },
            }
        }
    }
}
