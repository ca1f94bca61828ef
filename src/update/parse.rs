//! Parsing an operator document: the modifier names, each update path with its positional
//! parts (`$`, `$[]`, `$[<id>]`) and `arrayFilters`, conflicts between paths, and path order.

use super::parse_op::parse_op;
use super::{Comp, Entry, Kind, UpdateSpec};
use crate::error::{ErrorCode, MongoError, Result};
use crate::expression::LetVariables;
use crate::query::filter::Filter;
use crate::query::values::{array_index, render_doc, render_element, type_name};
use bson::{Bson, Document};
use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// `vars`: the command's, whose collation array filters and `$pull` conditions compare by.
pub(super) fn parse_modifiers(
    update: &Document,
    array_filters: &[Document],
    vars: &Arc<LetVariables>,
) -> Result<UpdateSpec> {
    let filters = parse_array_filters(array_filters, vars)?;
    let mut used = HashSet::new();
    let mut trie = ConflictTrie::default();
    let mut entries = Vec::new();
    for (name, arg) in update {
        if !matches!(
            name.as_str(),
            "$set"
                | "$setOnInsert"
                | "$unset"
                | "$inc"
                | "$mul"
                | "$min"
                | "$max"
                | "$currentDate"
                | "$rename"
                | "$push"
                | "$addToSet"
                | "$pop"
                | "$pull"
                | "$pullAll"
                | "$bit"
        ) {
            return Err(MongoError::failed_to_parse(format!(
                "Unknown modifier: {name}. Expected a valid update modifier or pipeline-style update specified as an array"
            )));
        }
        let Bson::Document(fields) = arg else {
            return Err(MongoError::failed_to_parse(format!(
                "Modifiers operate on fields but we found type {} instead. For example: {{$mod: {{<field>: ...}}}} not {{{}}}",
                type_name(arg),
                render_element(name, arg)
            )));
        };
        for (path, value) in fields {
            let (comps, op, target) = if name == "$rename" {
                // The entry lives at the destination; the source travels with the operator.
                let op = parse_op(name, path, value, &filters, &mut used, vars)?;
                let target = value.as_str().unwrap_or_default();
                trie.add(path)?;
                (parse_update_path(target, &filters, &mut used)?, op, target)
            } else {
                let comps = parse_update_path(path, &filters, &mut used)?;
                (
                    comps,
                    parse_op(name, path, value, &filters, &mut used, vars)?,
                    path.as_str(),
                )
            };
            trie.add(target)?;
            entries.push(Entry { comps, op });
        }
    }
    let mut ids: Vec<&String> = filters.keys().collect();
    ids.sort();
    for id in ids {
        if !used.contains(id) {
            return Err(MongoError::failed_to_parse(format!(
                "The array filter for identifier '{id}' was not used in the update {}",
                render_doc(update)
            )));
        }
    }
    entries.sort_by(|a, b| compare_comps(&a.comps, &b.comps));
    Ok(UpdateSpec {
        kind: Kind::Modifiers {
            entries,
            array_filters: filters,
        },
    })
}

fn parse_array_filters(
    filters: &[Document],
    vars: &Arc<LetVariables>,
) -> Result<HashMap<String, Filter>> {
    let mut out = HashMap::new();
    for spec in filters {
        let filter = Filter::parse_with_variables(spec, vars)?;
        let mut id: Option<String> = None;
        for path in filter.leaf_paths() {
            let first = path.split('.').next().unwrap_or("").to_string();
            match &id {
                None => id = Some(first),
                Some(existing) if *existing != first => {
                    return Err(MongoError::failed_to_parse(format!(
                        "Error parsing array filter :: caused by :: Expected a single top-level field name, found '{existing}' and '{first}'"
                    )));
                }
                _ => {}
            }
        }
        let Some(id) = id else {
            return Err(MongoError::failed_to_parse(
                "Cannot use an expression without a top-level field name in arrayFilters",
            ));
        };
        let valid = id.chars().next().is_some_and(|c| c.is_ascii_lowercase())
            && id.chars().all(|c| c.is_ascii_alphanumeric());
        if !valid {
            return Err(MongoError::bad_value(format!(
                "Error parsing array filter :: caused by :: The top-level field name must be an alphanumeric string beginning with a lowercase letter, found '{id}'"
            )));
        }
        if out.contains_key(&id) {
            return Err(MongoError::failed_to_parse(format!(
                "Found multiple array filters with the same top-level field name {id}"
            )));
        }
        out.insert(id, filter);
    }
    Ok(out)
}

pub(super) fn parse_update_path(
    path: &str,
    filters: &HashMap<String, Filter>,
    used: &mut HashSet<String>,
) -> Result<Vec<Comp>> {
    if path.is_empty() {
        return Err(MongoError::new(
            ErrorCode::EmptyFieldName,
            "An empty update path is not valid.",
        ));
    }
    let parts: Vec<&str> = path.split('.').collect();
    if parts.iter().any(|p| p.is_empty()) {
        return Err(MongoError::new(
            ErrorCode::EmptyFieldName,
            format!("The update path '{path}' contains an empty field name, which is not allowed."),
        ));
    }
    if parts.iter().filter(|p| **p == "$").count() > 1 {
        return Err(MongoError::bad_value(format!(
            "Too many positional (i.e. '$') elements found in path '{path}'"
        )));
    }
    if parts[0] == "$" {
        return Err(MongoError::bad_value(format!(
            "Cannot have positional (i.e. '$') element in the first position in path '{path}'"
        )));
    }
    let mut comps = Vec::with_capacity(parts.len());
    for (i, part) in parts.iter().enumerate() {
        let comp = if *part == "$" {
            Comp::Positional
        } else if let Some(inner) = part.strip_prefix("$[").and_then(|p| p.strip_suffix(']')) {
            if i == 0 {
                return Err(MongoError::bad_value(format!(
                    "Cannot have array filter identifier (i.e. '$[<id>]') element in the first position in path '{path}'"
                )));
            }
            if inner.is_empty() {
                Comp::All
            } else {
                if !filters.contains_key(inner) {
                    return Err(MongoError::bad_value(format!(
                        "No array filter found for identifier '{inner}' in path '{path}'"
                    )));
                }
                used.insert(inner.to_string());
                Comp::Filtered(inner.to_string())
            }
        } else {
            Comp::Field(part.to_string())
        };
        comps.push(comp);
    }
    Ok(comps)
}

/// Detects two update paths where one is a prefix of (or equal to) the other.
#[derive(Default)]
struct ConflictTrie {
    children: HashMap<String, ConflictTrie>,
    leaf: bool,
}

impl ConflictTrie {
    fn add(&mut self, path: &str) -> Result<()> {
        let parts: Vec<&str> = path.split('.').collect();
        let conflict = |at: &str| {
            MongoError::new(
                ErrorCode::ConflictingUpdateOperators,
                format!("Updating the path '{path}' would create a conflict at '{at}'"),
            )
        };
        let mut node = self;
        for (i, part) in parts.iter().enumerate() {
            let last = i + 1 == parts.len();
            if last && node.children.contains_key(*part) {
                return Err(conflict(path));
            }
            node = node.children.entry(part.to_string()).or_default();
            if node.leaf && !last {
                return Err(conflict(&parts[..=i].join(".")));
            }
        }
        node.leaf = true;
        Ok(())
    }
}

fn compare_comps(a: &[Comp], b: &[Comp]) -> Ordering {
    let rank = |c: &Comp| match c {
        Comp::Field(_) => 0,
        Comp::Positional => 1,
        Comp::All => 2,
        Comp::Filtered(_) => 3,
    };
    for (x, y) in a.iter().zip(b) {
        let ord = match (x, y) {
            (Comp::Field(p), Comp::Field(q)) => compare_field_names(p, q),
            (Comp::Filtered(p), Comp::Filtered(q)) => p.cmp(q),
            _ => rank(x).cmp(&rank(y)),
        };
        if ord != Ordering::Equal {
            return ord;
        }
    }
    a.len().cmp(&b.len())
}

/// Field names in update order: numeric names numerically, others bytewise.
fn compare_field_names(a: &str, b: &str) -> Ordering {
    match (array_index(a), array_index(b)) {
        (Some(x), Some(y)) => x.cmp(&y).then_with(|| a.cmp(b)),
        _ => a.as_bytes().cmp(b.as_bytes()),
    }
}
