//! Updates: operator documents (`$set`, `$inc`, `$push`, ... with positional `$`, `$[]` and
//! `$[<id>]`), replacement documents, and the document an upsert starts from. Parsing reports
//! MongoDB's errors; applying works on a copy and reports whether the document changed
//! (MongoDB's `nModified`: setting a field to the value it already has is no change).
//!
//! Like MongoDB 5.0+, operators apply to fields in path order (numeric components numerically),
//! so new fields appear in that order whatever order the update document lists them in.

use super::filter::Filter;
use super::values::{
    array_index, format_g, integer_to_i64, is_number, not_implemented, render_doc, render_element,
    type_name,
};
use crate::document::order::{compare_values, values_equal};
use crate::document::path::get_path;
use crate::error::{ErrorCode, MongoError, Result};
use bson::{Bson, Document, doc};
use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};

/// What an update needs to know about the write it is part of.
#[derive(Clone, Copy, Debug)]
pub struct UpdateContext<'a> {
    /// The document is being created by an upsert (`$setOnInsert` applies, `_id` may be set).
    pub is_upsert_insert: bool,
    /// The time `$currentDate` writes.
    pub now: bson::DateTime,
    /// The filter that selected the document, for the positional `$`.
    pub matched_filter: Option<&'a Filter>,
}

/// A parsed update: operators or a replacement document.
#[derive(Clone, Debug)]
pub struct UpdateSpec {
    kind: Kind,
}

#[derive(Clone, Debug)]
enum Kind {
    Replacement(Document),
    Modifiers {
        entries: Vec<Entry>,
        array_filters: HashMap<String, Filter>,
    },
}

#[derive(Clone, Debug)]
struct Entry {
    comps: Vec<Comp>,
    op: Op,
}

#[derive(Clone, Debug, PartialEq)]
enum Comp {
    Field(String),
    /// `$`: the array position the query matched.
    Positional,
    /// `$[]`: every element.
    All,
    /// `$[<id>]`: the elements the array filter `<id>` matches.
    Filtered(String),
}

#[derive(Clone, Debug)]
enum Op {
    Set(Bson),
    SetOnInsert(Bson),
    Unset,
    Inc(Bson),
    Mul(Bson),
    Min(Bson),
    Max(Bson),
    CurrentDate {
        timestamp: bool,
    },
    Rename {
        from: String,
        from_parts: Vec<String>,
    },
    Push(Push),
    AddToSet(Vec<Bson>),
    Pop {
        first: bool,
    },
    Pull(Pull),
    PullAll(Vec<Bson>),
    Bit(Vec<(BitOp, Bson)>),
}

#[derive(Clone, Debug)]
struct Push {
    values: Vec<Bson>,
    slice: Option<i64>,
    sort: Option<PushSort>,
    position: Option<i64>,
}

#[derive(Clone, Debug)]
enum PushSort {
    Whole(bool),
    Fields(Vec<(String, bool)>),
}

#[derive(Clone, Debug)]
enum Pull {
    /// A plain value: elements equal to it.
    Equal(Bson),
    /// A query over the fields of document elements.
    Object(Box<Filter>),
    /// An operator condition or regex applied to each element itself.
    Wrapped(Box<Filter>),
}

#[derive(Clone, Copy, Debug)]
enum BitOp {
    And,
    Or,
    Xor,
}

impl UpdateSpec {
    /// Parses the `u` of an update statement: an operator document, a replacement document or
    /// (not yet supported) a pipeline.
    pub fn parse(update: &Bson, array_filters: Option<&[Document]>) -> Result<UpdateSpec> {
        match update {
            Bson::Array(_) => {
                if array_filters.is_some_and(|f| !f.is_empty()) {
                    return Err(MongoError::failed_to_parse(
                        "arrayFilters may not be specified for pipeline-style updates",
                    ));
                }
                Err(not_implemented(
                    "pipeline-style updates are not supported yet",
                ))
            }
            Bson::Document(d) if d.keys().next().is_some_and(|k| k.starts_with('$')) => {
                parse_modifiers(d, array_filters.unwrap_or(&[]))
            }
            Bson::Document(d) => {
                for key in d.keys() {
                    if key.starts_with('$') {
                        return Err(MongoError::new(
                            ErrorCode::DollarPrefixedFieldName,
                            format!(
                                "The dollar ($) prefixed field '{key}' in '{key}' is not allowed in the context of an update's replacement document. Consider using an aggregation pipeline with $replaceWith."
                            ),
                        ));
                    }
                }
                Ok(UpdateSpec {
                    kind: Kind::Replacement(d.clone()),
                })
            }
            other => Err(MongoError::failed_to_parse(format!(
                "Update argument must be either an object or an array, not {}",
                type_name(other)
            ))),
        }
    }

    /// Whether this is a replacement document (as opposed to update operators).
    pub fn is_replacement(&self) -> bool {
        matches!(self.kind, Kind::Replacement(_))
    }

    /// Whether applying needs `UpdateContext::matched_filter` (a positional `$` path).
    pub fn is_positional(&self) -> bool {
        match &self.kind {
            Kind::Modifiers { entries, .. } => {
                entries.iter().any(|e| e.comps.contains(&Comp::Positional))
            }
            Kind::Replacement(_) => false,
        }
    }

    /// Applies the update to `doc`; returns whether the document changed. On error `doc` is
    /// left as it was.
    pub fn apply(&self, doc: &mut Document, ctx: &UpdateContext) -> Result<bool> {
        match &self.kind {
            Kind::Replacement(replacement) => apply_replacement(doc, replacement, ctx),
            Kind::Modifiers {
                entries,
                array_filters,
            } => {
                let mut work = doc.clone();
                let modified = apply_modifiers(&mut work, entries, array_filters, ctx)?;
                if modified || ctx.is_upsert_insert {
                    *doc = work;
                }
                Ok(modified)
            }
        }
    }
}

/// The document an upsert inserts before the update applies: the query's equality fields
/// (dotted paths expanded into embedded documents), `_id` first.
pub fn upsert_seed(filter: &Document) -> Result<Document> {
    let parsed = Filter::parse(filter)?;
    let equalities = parsed.upsert_equalities();
    for (i, (a, _)) in equalities.iter().enumerate() {
        for (b, _) in &equalities[..i] {
            if a == b {
                return Err(MongoError::new(
                    ErrorCode::NotSingleValueField,
                    format!("cannot infer query fields to set, path '{a}' is matched twice"),
                ));
            }
            if is_path_prefix(a, b) || is_path_prefix(b, a) {
                return Err(MongoError::new(
                    ErrorCode::NotSingleValueField,
                    format!(
                        "cannot infer query fields to set, both paths '{a}' and '{b}' are matched"
                    ),
                ));
            }
        }
    }
    let mut seed = Document::new();
    for (path, value) in equalities {
        let parts: Vec<&str> = path.split('.').collect();
        let mut current = &mut seed;
        for part in &parts[..parts.len() - 1] {
            if !matches!(current.get(*part), Some(Bson::Document(_))) {
                current.insert(part.to_string(), Document::new());
            }
            current = match current.get_mut(*part) {
                Some(Bson::Document(d)) => d,
                _ => return Err(MongoError::internal("upsert seed path vanished")),
            };
        }
        current.insert(parts[parts.len() - 1].to_string(), value.clone());
    }
    Ok(id_first(seed))
}

fn is_path_prefix(prefix: &str, path: &str) -> bool {
    path.len() > prefix.len() && path.starts_with(prefix) && path.as_bytes()[prefix.len()] == b'.'
}

fn id_first(doc: Document) -> Document {
    match doc.keys().position(|k| k == "_id") {
        None | Some(0) => doc,
        Some(_) => {
            let mut out = Document::new();
            if let Some(id) = doc.get("_id") {
                out.insert("_id", id.clone());
            }
            for (k, v) in doc {
                if k != "_id" {
                    out.insert(k, v);
                }
            }
            out
        }
    }
}

fn id_text(doc: &Document) -> String {
    match doc.get("_id") {
        Some(id) => format!("{{{}}}", render_element("_id", id)),
        None => "{no id}".to_string(),
    }
}

fn validate_id(doc: &Document) -> Result<()> {
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

// ---------------------------------------------------------------------------------------------
// Parsing operator documents

fn parse_modifiers(update: &Document, array_filters: &[Document]) -> Result<UpdateSpec> {
    let filters = parse_array_filters(array_filters)?;
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
                let op = parse_op(name, path, value, &filters, &mut used)?;
                let target = value.as_str().unwrap_or_default();
                trie.add(path)?;
                (parse_update_path(target, &filters, &mut used)?, op, target)
            } else {
                let comps = parse_update_path(path, &filters, &mut used)?;
                (
                    comps,
                    parse_op(name, path, value, &filters, &mut used)?,
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

fn parse_array_filters(filters: &[Document]) -> Result<HashMap<String, Filter>> {
    let mut out = HashMap::new();
    for spec in filters {
        let filter = Filter::parse(spec)?;
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

fn parse_update_path(
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

fn parse_op(
    name: &str,
    path: &str,
    value: &Bson,
    filters: &HashMap<String, Filter>,
    used: &mut HashSet<String>,
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
        "$pull" => Op::Pull(parse_pull(value)?),
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
                    super::values::as_f64(dir)
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
            let dir = super::values::as_f64(v);
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

fn parse_pull(value: &Bson) -> Result<Pull> {
    match value {
        Bson::Document(d) => {
            let first_is_operator = d
                .keys()
                .next()
                .is_some_and(|k| is_path_accepting_operator(k));
            if !first_is_operator {
                Ok(Pull::Object(Box::new(Filter::parse(d)?)))
            } else {
                Ok(Pull::Wrapped(Box::new(Filter::parse(
                    &doc! {"": value.clone()},
                )?)))
            }
        }
        Bson::RegularExpression(_) => Ok(Pull::Wrapped(Box::new(Filter::parse(
            &doc! {"": value.clone()},
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

// ---------------------------------------------------------------------------------------------
// Applying

fn apply_replacement(
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

fn apply_modifiers(
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

/// Resolves `$`, `$[]` and `$[<id>]` against the document into concrete paths.
fn expand(
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
enum Slot<'a> {
    Doc(&'a mut Document),
    Arr(&'a mut Vec<Bson>),
}

impl Slot<'_> {
    fn get(&self, key: &str) -> Option<&Bson> {
        match self {
            Slot::Doc(d) => d.get(key),
            Slot::Arr(items) => array_index(key).and_then(|i| items.get(i)),
        }
    }

    fn set(&mut self, key: &str, value: Bson) {
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
    fn remove(&mut self, key: &str) {
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

enum Target<'a> {
    /// The value exists at `slot[key]`.
    Existing(Slot<'a>, String),
    /// `rest[0]` is missing from `slot`; `rest[1..]` would be created below it.
    Missing(Slot<'a>, Vec<String>),
    /// The path runs into a value that cannot hold `field`.
    Blocked { field: String, element: String },
}

fn canonical_index(part: &str) -> Option<usize> {
    array_index(part).filter(|i| i.to_string() == part)
}

fn locate<'a>(slot: Slot<'a>, parts: &[String], slot_name: &str) -> Target<'a> {
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

/// What an operator does to the value at its path.
enum Outcome {
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

fn apply_op(
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

fn compute(
    op: &Op,
    existing: Option<&Bson>,
    ctx: &UpdateContext,
    path: &str,
    field: &str,
    id_text: &str,
) -> Result<Outcome> {
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
        Op::Inc(v) | Op::Mul(v) => {
            let is_inc = matches!(op, Op::Inc(_));
            let name = if is_inc { "$inc" } else { "$mul" };
            match existing {
                None => Outcome::Set(if is_inc { v.clone() } else { zero_like(v) }),
                Some(old) => {
                    if !is_number(old) {
                        return Err(MongoError::type_mismatch(format!(
                            "Cannot apply {name} to a value of non-numeric type. {id_text} has the field '{field}' of non-numeric type {}",
                            type_name(old)
                        )));
                    }
                    let Some(result) = arithmetic(old, v, is_inc)? else {
                        return Err(MongoError::bad_value(format!(
                            "Failed to apply {name} operations to current value ({}) for document {id_text}",
                            debug_number(old)
                        )));
                    };
                    set_if_changed(result)
                }
            }
        }
        Op::Min(v) | Op::Max(v) => match existing {
            None => Outcome::Set(v.clone()),
            Some(old) => {
                let ord = compare_values(old, v);
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
        Op::Push(push) => match existing {
            None => {
                let (items, _) = push_into(Vec::new(), push);
                Outcome::Set(Bson::Array(items))
            }
            Some(Bson::Array(items)) => {
                let (items, changed) = push_into(items.clone(), push);
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
                if !items.iter().any(|x| values_equal(x, v)) {
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
                    .filter(|x| !pull_matches(op, x))
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
        Op::Bit(ops) => {
            let start = match existing {
                None => Bson::Int32(0),
                Some(v @ (Bson::Int32(_) | Bson::Int64(_))) => v.clone(),
                Some(other) => {
                    let id = id_text.trim_start_matches('{').trim_end_matches('}');
                    return Err(MongoError::bad_value(format!(
                        "Cannot apply $bit to a value of non-integral type.{id} has the field {field} of non-integer type {}",
                        type_name(other)
                    )));
                }
            };
            let mut result = start;
            for (bit_op, operand) in ops {
                result = bitwise(&result, operand, *bit_op);
            }
            if existing.is_none() {
                Outcome::Set(result)
            } else {
                set_if_changed(result)
            }
        }
        Op::Rename { .. } => Outcome::NoOp,
    })
}

fn pull_matches(op: &Op, item: &Bson) -> bool {
    match op {
        Op::Pull(Pull::Equal(v)) => values_equal(item, v),
        Op::Pull(Pull::Object(filter)) => matches!(item, Bson::Document(d) if filter.matches(d)),
        Op::Pull(Pull::Wrapped(filter)) => filter.matches(&doc! {"": item.clone()}),
        Op::PullAll(values) => values.iter().any(|v| values_equal(item, v)),
        _ => false,
    }
}

/// `$push` into `items`; returns the new array and whether anything changed.
fn push_into(mut items: Vec<Bson>, push: &Push) -> (Vec<Bson>, bool) {
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
                let ord = compare_values(a, b);
                if *asc { ord } else { ord.reverse() }
            }),
            PushSort::Fields(fields) => items.sort_by(|a, b| {
                for (field, asc) in fields {
                    let key = |v: &Bson| match v {
                        Bson::Document(d) => get_path(d, field).cloned().unwrap_or(Bson::Null),
                        _ => Bson::Null,
                    };
                    let ord = compare_values(&key(a), &key(b));
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

fn zero_like(v: &Bson) -> Bson {
    match v {
        Bson::Int32(_) => Bson::Int32(0),
        Bson::Int64(_) => Bson::Int64(0),
        Bson::Decimal128(_) => {
            Bson::Decimal128("0".parse().unwrap_or(bson::Decimal128::from_bytes([0; 16])))
        }
        _ => Bson::Double(0.0),
    }
}

/// `$inc`/`$mul` arithmetic with MongoDB's promotions: int32 overflow widens to int64, any
/// double makes a double; `None` when an int64 result overflows (MongoDB refuses the update).
fn arithmetic(a: &Bson, b: &Bson, add: bool) -> Result<Option<Bson>> {
    use Bson::{Decimal128, Double, Int32, Int64};
    Ok(match (a, b) {
        (Decimal128(_), _) | (_, Decimal128(_)) => {
            return Err(not_implemented(
                "decimal128 arithmetic in $inc and $mul is not supported yet",
            ));
        }
        (Double(_), _) | (_, Double(_)) => {
            let (x, y) = (super::values::as_f64(a), super::values::as_f64(b));
            Some(Double(if add { x + y } else { x * y }))
        }
        (Int32(x), Int32(y)) => {
            let narrow = if add {
                x.checked_add(*y)
            } else {
                x.checked_mul(*y)
            };
            Some(match narrow {
                Some(v) => Int32(v),
                None => Int64(if add {
                    i64::from(*x) + i64::from(*y)
                } else {
                    i64::from(*x) * i64::from(*y)
                }),
            })
        }
        _ => {
            let as_i64 = |v: &Bson| match v {
                Int32(n) => i64::from(*n),
                Int64(n) => *n,
                _ => 0,
            };
            let (x, y) = (as_i64(a), as_i64(b));
            let result = if add {
                x.checked_add(y)
            } else {
                x.checked_mul(y)
            };
            result.map(Int64)
        }
    })
}

/// MongoDB's `SafeNum::debugString`.
fn debug_number(v: &Bson) -> String {
    match v {
        Bson::Int32(n) => format!("(NumberInt){n}"),
        Bson::Int64(n) => format!("(NumberLong){n}"),
        Bson::Double(d) => format!("(NumberDouble){}", format_g(*d, 6)),
        Bson::Decimal128(d) => format!("(NumberDecimal){d}"),
        other => super::values::render(other),
    }
}

fn bitwise(a: &Bson, b: &Bson, op: BitOp) -> Bson {
    let apply32 = |x: i32, y: i32| match op {
        BitOp::And => x & y,
        BitOp::Or => x | y,
        BitOp::Xor => x ^ y,
    };
    let apply64 = |x: i64, y: i64| match op {
        BitOp::And => x & y,
        BitOp::Or => x | y,
        BitOp::Xor => x ^ y,
    };
    match (a, b) {
        (Bson::Int32(x), Bson::Int32(y)) => Bson::Int32(apply32(*x, *y)),
        _ => {
            let as_i64 = |v: &Bson| match v {
                Bson::Int32(n) => i64::from(*n),
                Bson::Int64(n) => *n,
                _ => 0,
            };
            Bson::Int64(apply64(as_i64(a), as_i64(b)))
        }
    }
}

fn apply_rename(
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

/// Same type and value, field order included (MongoDB's binary equality of values).
fn identical(a: &Bson, b: &Bson) -> bool {
    match (a, b) {
        (Bson::Document(x), Bson::Document(y)) => identical_docs(x, y),
        (Bson::Array(x), Bson::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| identical(p, q))
        }
        (Bson::Double(x), Bson::Double(y)) => x.to_bits() == y.to_bits(),
        _ => a == b,
    }
}

fn identical_docs(a: &Document, b: &Document) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b.iter())
            .all(|((ka, va), (kb, vb))| ka == kb && identical(va, vb))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> UpdateContext<'static> {
        UpdateContext {
            is_upsert_insert: false,
            now: bson::DateTime::from_millis(1_700_000_000_000),
            matched_filter: None,
        }
    }

    fn up(doc: Document, update: Document) -> (Document, bool) {
        let spec = UpdateSpec::parse(&Bson::Document(update.clone()), None)
            .unwrap_or_else(|e| panic!("{update}: {e}"));
        let mut d = doc;
        let modified = spec
            .apply(&mut d, &ctx())
            .unwrap_or_else(|e| panic!("{update}: {e}"));
        (d, modified)
    }

    fn up_err(doc: Document, update: Document) -> MongoError {
        match UpdateSpec::parse(&Bson::Document(update), None) {
            Err(e) => e,
            Ok(spec) => {
                let mut d = doc.clone();
                let e = spec.apply(&mut d, &ctx()).expect_err("update should fail");
                assert_eq!(d, doc, "failed updates leave the document alone");
                e
            }
        }
    }

    #[test]
    fn set_creates_paths_in_field_order_and_tracks_modification() {
        assert_eq!(
            up(doc! {"_id": 1}, doc! {"$set": {"b": 1, "a": 2}}),
            (doc! {"_id": 1, "a": 2, "b": 1}, true)
        );
        assert_eq!(
            up(doc! {"_id": 1, "a": 1}, doc! {"$set": {"a": 1}}),
            (doc! {"_id": 1, "a": 1}, false)
        );
        assert!(up(doc! {"_id": 1, "a": 1}, doc! {"$set": {"a": 1.0}}).1);
        assert_eq!(
            up(doc! {"_id": 1}, doc! {"$set": {"a.b.c": 1}}).0,
            doc! {"_id": 1, "a": {"b": {"c": 1}}}
        );
        assert_eq!(
            up(doc! {"_id": 1, "a": [1, 2]}, doc! {"$set": {"a.1": 5}}).0,
            doc! {"_id": 1, "a": [1, 5]}
        );
        assert_eq!(
            up(doc! {"_id": 1, "a": [1]}, doc! {"$set": {"a.3": 5}}).0,
            doc! {"_id": 1, "a": [1, null, null, 5]}
        );
        assert_eq!(
            up(doc! {"_id": 1}, doc! {"$set": {"a.0": 5}}).0,
            doc! {"_id": 1, "a": {"0": 5}}
        );
        assert!(
            up(
                doc! {"_id": 1, "x": {"b": 1, "a": 1}},
                doc! {"$set": {"x": {"a": 1, "b": 1}}}
            )
            .1
        );
        assert_eq!(
            up(doc! {"_id": 1}, doc! {"$set": {"10": 1, "9": 1}})
                .0
                .keys()
                .cloned()
                .collect::<Vec<_>>(),
            vec!["_id", "9", "10"]
        );
        assert_eq!(
            up(doc! {"_id": 1}, doc! {"$set": {}}),
            (doc! {"_id": 1}, false)
        );
    }

    #[test]
    fn path_errors() {
        let e = up_err(doc! {"_id": 1, "a": 5}, doc! {"$set": {"a.b": 1}});
        assert_eq!(
            (e.code(), e.message()),
            (
                ErrorCode::PathNotViable,
                "Cannot create field 'b' in element {a: 5}"
            )
        );
        let e = up_err(doc! {"_id": 1, "a": [1]}, doc! {"$inc": {"a.b": 1}});
        assert_eq!(e.message(), "Cannot create field 'b' in element {a: [ 1 ]}");
        assert!(!up(doc! {"_id": 1, "a": 5}, doc! {"$unset": {"a.b": 1}}).1);
        let e = up_err(doc! {"_id": 1}, doc! {"$set": {"a..b": 1}});
        assert_eq!(
            (e.code(), e.message()),
            (
                ErrorCode::EmptyFieldName,
                "The update path 'a..b' contains an empty field name, which is not allowed."
            )
        );
        assert_eq!(
            up_err(doc! {}, doc! {"$set": {"": 1}}).message(),
            "An empty update path is not valid."
        );
        let e = up_err(doc! {}, doc! {"$set": {"a": 1}, "$inc": {"a.b": 1}});
        assert_eq!(
            (e.code(), e.message()),
            (
                ErrorCode::ConflictingUpdateOperators,
                "Updating the path 'a.b' would create a conflict at 'a'"
            )
        );
        let e = up_err(doc! {}, doc! {"$set": {"a.b": 1}, "$unset": {"a": 1}});
        assert_eq!(
            e.message(),
            "Updating the path 'a' would create a conflict at 'a'"
        );
        let e = up_err(doc! {}, doc! {"$foo": {"a": 1}});
        assert_eq!(
            (e.code(), e.message()),
            (
                ErrorCode::FailedToParse,
                "Unknown modifier: $foo. Expected a valid update modifier or pipeline-style update specified as an array"
            )
        );
        let e = up_err(doc! {}, doc! {"$set": 1});
        assert_eq!(
            e.message(),
            "Modifiers operate on fields but we found type int instead. For example: {$mod: {<field>: ...}} not {$set: 1}"
        );
        let e = up_err(doc! {}, doc! {"$set": {"a": 1}, "b": 1});
        assert_eq!(e.code(), ErrorCode::FailedToParse);
        assert_eq!(
            up_err(doc! {}, doc! {"$set": {"$.a": 1}}).code(),
            ErrorCode::BadValue
        );
    }

    #[test]
    fn id_is_immutable() {
        let e = up_err(doc! {"_id": 1, "a": 1}, doc! {"$set": {"_id": 2}});
        assert_eq!(
            (e.code(), e.message()),
            (
                ErrorCode::ImmutableField,
                "Performing an update on the path '_id' would modify the immutable field '_id'"
            )
        );
        assert!(!up(doc! {"_id": 1}, doc! {"$set": {"_id": 1}}).1);
        assert_eq!(
            up_err(doc! {"_id": {"x": 1}}, doc! {"$set": {"_id.x": 2}}).code(),
            ErrorCode::ImmutableField
        );
        assert_eq!(
            up_err(doc! {"_id": 1}, doc! {"$rename": {"_id": "x"}}).code(),
            ErrorCode::ImmutableField
        );
    }

    #[test]
    fn unset_inc_mul_min_max() {
        assert_eq!(
            up(doc! {"_id": 1, "a": 1, "b": 2}, doc! {"$unset": {"a": ""}}),
            (doc! {"_id": 1, "b": 2}, true)
        );
        assert!(!up(doc! {"_id": 1}, doc! {"$unset": {"a": ""}}).1);
        assert_eq!(
            up(doc! {"_id": 1, "a": [1, 2]}, doc! {"$unset": {"a.0": 1}}).0,
            doc! {"_id": 1, "a": [null, 2]}
        );
        assert_eq!(
            up(doc! {"_id": 1, "a": 1}, doc! {"$inc": {"a": 2}}).0,
            doc! {"_id": 1, "a": 3}
        );
        assert_eq!(
            up(doc! {"_id": 1}, doc! {"$inc": {"a": 2i64}}).0,
            doc! {"_id": 1, "a": 2i64}
        );
        assert_eq!(
            up(doc! {"_id": 1, "a": i32::MAX}, doc! {"$inc": {"a": 1}}).0,
            doc! {"_id": 1, "a": i32::MAX as i64 + 1}
        );
        assert_eq!(
            up(doc! {"_id": 1, "a": 1}, doc! {"$inc": {"a": 0.5}}).0,
            doc! {"_id": 1, "a": 1.5}
        );
        assert_eq!(
            up(doc! {"_id": 1, "a": 1}, doc! {"$inc": {"a": 1i64}}).0,
            doc! {"_id": 1, "a": 2i64}
        );
        assert!(!up(doc! {"_id": 1, "a": 1}, doc! {"$inc": {"a": 0}}).1);
        assert_eq!(
            up(doc! {"_id": 1, "a": 3}, doc! {"$mul": {"a": 2}}).0,
            doc! {"_id": 1, "a": 6}
        );
        assert_eq!(
            up(doc! {"_id": 1}, doc! {"$mul": {"a": 2i64}}).0,
            doc! {"_id": 1, "a": 0i64}
        );
        assert_eq!(
            up(doc! {"_id": 1, "a": 65536}, doc! {"$mul": {"a": 65536}}).0,
            doc! {"_id": 1, "a": 4294967296i64}
        );
        let e = up_err(doc! {"_id": "x", "a": i64::MAX}, doc! {"$inc": {"a": 1}});
        assert_eq!(
            (e.code(), e.message()),
            (
                ErrorCode::BadValue,
                "Failed to apply $inc operations to current value ((NumberLong)9223372036854775807) for document {_id: \"x\"}"
            )
        );
        let e = up_err(doc! {"_id": 1, "a": "s"}, doc! {"$inc": {"a": 1}});
        assert_eq!(
            (e.code(), e.message()),
            (
                ErrorCode::TypeMismatch,
                "Cannot apply $inc to a value of non-numeric type. {_id: 1} has the field 'a' of non-numeric type string"
            )
        );
        let e = up_err(doc! {"_id": 1}, doc! {"$inc": {"a": "s"}});
        assert_eq!(
            e.message(),
            "Cannot increment with non-numeric argument: {a: \"s\"}"
        );
        assert_eq!(
            up(doc! {"_id": 1, "a": 5}, doc! {"$min": {"a": 3}}).0,
            doc! {"_id": 1, "a": 3}
        );
        assert!(!up(doc! {"_id": 1, "a": 5}, doc! {"$min": {"a": 7}}).1);
        assert_eq!(
            up(doc! {"_id": 1, "a": 5}, doc! {"$max": {"a": "x"}}).0,
            doc! {"_id": 1, "a": "x"}
        );
        assert!(!up(doc! {"_id": 1, "a": 5}, doc! {"$max": {"a": 5.0}}).1);
        assert_eq!(
            up(doc! {"_id": 1}, doc! {"$min": {"a": 1}}).0,
            doc! {"_id": 1, "a": 1}
        );
    }

    #[test]
    fn current_date_and_rename() {
        let (d, _) = up(
            doc! {"_id": 1},
            doc! {"$currentDate": {"a": true, "b": {"$type": "timestamp"}}},
        );
        assert_eq!(
            d.get("a"),
            Some(&Bson::DateTime(bson::DateTime::from_millis(
                1_700_000_000_000
            )))
        );
        assert!(matches!(d.get("b"), Some(Bson::Timestamp(_))));
        assert_eq!(
            up_err(doc! {}, doc! {"$currentDate": {"a": 1}}).message(),
            "int is not valid type for $currentDate. Please use a boolean ('true') or a $type expression ({$type: 'timestamp/date'})."
        );
        assert_eq!(
            up(
                doc! {"_id": 1, "a": 1, "b": 2},
                doc! {"$rename": {"a": "c"}}
            ),
            (doc! {"_id": 1, "b": 2, "c": 1}, true)
        );
        assert_eq!(
            up(
                doc! {"_id": 1, "a": {"x": 1}},
                doc! {"$rename": {"a.x": "b.y"}}
            )
            .0,
            doc! {"_id": 1, "a": {}, "b": {"y": 1}}
        );
        assert!(!up(doc! {"_id": 1}, doc! {"$rename": {"a": "b"}}).1);
        assert_eq!(
            up_err(doc! {}, doc! {"$rename": {"a": "a"}}).message(),
            "The source and target field for $rename must differ: a: \"a\""
        );
        assert_eq!(
            up_err(doc! {}, doc! {"$rename": {"a": 1}}).message(),
            "The 'to' field for $rename must be a string: a: 1"
        );
        let e = up_err(
            doc! {"_id": 1, "a": [{"b": 1}]},
            doc! {"$rename": {"a.0.b": "c"}},
        );
        assert_eq!(
            e.message(),
            "The source field cannot be an array element, 'a.0.b' in doc with _id: 1 has an array field called 'a'"
        );
        let e = up_err(
            doc! {"_id": 1, "v": [{"foo": 1}]},
            doc! {"$rename": {"v.foo": "f"}},
        );
        assert_eq!(
            (e.code(), e.message()),
            (
                ErrorCode::PathNotViable,
                "cannot use the part (v of v.foo) to traverse the element ({v: [ { foo: 1 } ]})"
            )
        );
        assert_eq!(
            up_err(doc! {}, doc! {"$rename": {"a": "b"}, "$set": {"b": 1}}).code(),
            ErrorCode::ConflictingUpdateOperators
        );
    }

    #[test]
    fn push_and_add_to_set() {
        assert_eq!(
            up(doc! {"_id": 1}, doc! {"$push": {"a": 1}}).0,
            doc! {"_id": 1, "a": [1]}
        );
        assert_eq!(
            up(doc! {"_id": 1, "a": [1]}, doc! {"$push": {"a": [2]}}).0,
            doc! {"_id": 1, "a": [1, [2]]}
        );
        assert_eq!(
            up(
                doc! {"_id": 1, "a": [1, 2]},
                doc! {"$push": {"a": {"$each": [3, 4], "$position": 1}}}
            )
            .0,
            doc! {"_id": 1, "a": [1, 3, 4, 2]}
        );
        assert_eq!(
            up(
                doc! {"_id": 1, "a": [1, 2]},
                doc! {"$push": {"a": {"$each": [3], "$position": -1}}}
            )
            .0,
            doc! {"_id": 1, "a": [1, 3, 2]}
        );
        assert_eq!(
            up(
                doc! {"_id": 1, "a": [5, 1]},
                doc! {"$push": {"a": {"$each": [3], "$sort": 1, "$slice": 2}}}
            )
            .0,
            doc! {"_id": 1, "a": [1, 3]}
        );
        assert_eq!(
            up(
                doc! {"_id": 1, "a": [5, 1]},
                doc! {"$push": {"a": {"$each": [3], "$slice": -2}}}
            )
            .0,
            doc! {"_id": 1, "a": [1, 3]}
        );
        assert_eq!(
            up(
                doc! {"_id": 1, "a": [{"s": 2}, {"s": 1}]},
                doc! {"$push": {"a": {"$each": [{"s": 3}], "$sort": {"s": -1}}}}
            )
            .0,
            doc! {"_id": 1, "a": [{"s": 3}, {"s": 2}, {"s": 1}]}
        );
        assert!(
            !up(
                doc! {"_id": 1, "a": [1]},
                doc! {"$push": {"a": {"$each": []}}}
            )
            .1
        );
        let e = up_err(doc! {"_id": 1, "a": 1}, doc! {"$push": {"a": 2}});
        assert_eq!(
            e.message(),
            "The field 'a' must be an array but is of type int in document {_id: 1}"
        );
        assert_eq!(
            up_err(doc! {}, doc! {"$push": {"a": {"$each": 1}}}).message(),
            "The argument to $each in $push must be an array but it was of type: int"
        );
        assert_eq!(
            up_err(doc! {}, doc! {"$push": {"a": {"$each": [], "$foo": 1}}}).message(),
            "Unrecognized clause in $push: $foo"
        );
        assert!(!up(doc! {"_id": 1, "a": [1, 2]}, doc! {"$addToSet": {"a": 2}}).1);
        assert_eq!(
            up(
                doc! {"_id": 1, "a": [1, 2]},
                doc! {"$addToSet": {"a": {"$each": [2, 3, 3]}}}
            )
            .0,
            doc! {"_id": 1, "a": [1, 2, 3]}
        );
        assert_eq!(
            up(
                doc! {"_id": 1},
                doc! {"$addToSet": {"a": {"$each": [1, 1]}}}
            )
            .0,
            doc! {"_id": 1, "a": [1]}
        );
        let e = up_err(doc! {"_id": 1, "a": 1}, doc! {"$addToSet": {"a": 2}});
        assert_eq!(
            e.message(),
            "Cannot apply $addToSet to non-array field. Field named 'a' has non-array type int"
        );
    }

    #[test]
    fn pop_pull_pull_all_bit() {
        assert_eq!(
            up(doc! {"_id": 1, "a": [1, 2, 3]}, doc! {"$pop": {"a": 1}}).0,
            doc! {"_id": 1, "a": [1, 2]}
        );
        assert_eq!(
            up(doc! {"_id": 1, "a": [1, 2, 3]}, doc! {"$pop": {"a": -1}}).0,
            doc! {"_id": 1, "a": [2, 3]}
        );
        assert!(!up(doc! {"_id": 1, "a": []}, doc! {"$pop": {"a": 1}}).1);
        assert_eq!(
            up_err(doc! {}, doc! {"$pop": {"a": 2}}).message(),
            "$pop expects 1 or -1, found: 2"
        );
        assert_eq!(
            up_err(doc! {"_id": 1, "a": 1}, doc! {"$pop": {"a": 1}}).message(),
            "Path 'a' contains an element of non-array type 'int'"
        );
        assert_eq!(
            up(doc! {"_id": 1, "a": [1, 2, 1, 3]}, doc! {"$pull": {"a": 1}}).0,
            doc! {"_id": 1, "a": [2, 3]}
        );
        assert_eq!(
            up(
                doc! {"_id": 1, "a": [1, 5, 9]},
                doc! {"$pull": {"a": {"$gte": 5}}}
            )
            .0,
            doc! {"_id": 1, "a": [1]}
        );
        assert_eq!(
            up(
                doc! {"_id": 1, "a": [{"x": 1, "y": 1}, {"x": 2}, 3]},
                doc! {"$pull": {"a": {"x": 1}}}
            )
            .0,
            doc! {"_id": 1, "a": [{"x": 2}, 3]}
        );
        assert_eq!(
            up(
                doc! {"_id": 1, "a": [[1, 2], 1]},
                doc! {"$pull": {"a": [1, 2]}}
            )
            .0,
            doc! {"_id": 1, "a": [1]}
        );
        assert!(!up(doc! {"_id": 1, "a": [1]}, doc! {"$pull": {"a": 9}}).1);
        assert_eq!(
            up_err(doc! {"_id": 1, "a": 1}, doc! {"$pull": {"a": 1}}).message(),
            "Cannot apply $pull to a non-array value"
        );
        assert_eq!(
            up(
                doc! {"_id": 1, "a": [1, 2, 3, 1]},
                doc! {"$pullAll": {"a": [1, 3]}}
            )
            .0,
            doc! {"_id": 1, "a": [2]}
        );
        assert_eq!(
            up_err(doc! {}, doc! {"$pullAll": {"a": 1}}).message(),
            "$pullAll requires an array argument but was given a int"
        );
        assert_eq!(
            up(doc! {"_id": 1, "a": 13}, doc! {"$bit": {"a": {"and": 10}}}).0,
            doc! {"_id": 1, "a": 8}
        );
        assert_eq!(
            up(doc! {"_id": 1, "a": 13}, doc! {"$bit": {"a": {"or": 2i64}}}).0,
            doc! {"_id": 1, "a": 15i64}
        );
        assert_eq!(
            up(doc! {"_id": 1}, doc! {"$bit": {"a": {"xor": 5}}}).0,
            doc! {"_id": 1, "a": 5}
        );
        assert!(!up(doc! {"_id": 1, "a": 1}, doc! {"$bit": {"a": {"and": 1}}}).1);
        assert_eq!(
            up_err(doc! {}, doc! {"$bit": {"a": {"not": 1}}}).code(),
            ErrorCode::BadValue
        );
        assert_eq!(
            up_err(doc! {"_id": 1, "a": 1.5}, doc! {"$bit": {"a": {"and": 1}}}).message(),
            "Cannot apply $bit to a value of non-integral type._id: 1 has the field a of non-integer type double"
        );
    }

    #[test]
    fn positional_and_array_filters() {
        let filter = Filter::parse(&doc! {"a.b": 2}).unwrap();
        let spec = UpdateSpec::parse(&Bson::Document(doc! {"$set": {"a.$.c": 1}}), None).unwrap();
        let mut d = doc! {"_id": 1, "a": [{"b": 1}, {"b": 2}]};
        let c = UpdateContext {
            matched_filter: Some(&filter),
            ..ctx()
        };
        assert!(spec.apply(&mut d, &c).unwrap());
        assert_eq!(d, doc! {"_id": 1, "a": [{"b": 1}, {"b": 2, "c": 1}]});
        let e = spec.apply(&mut d.clone(), &ctx()).unwrap_err();
        assert_eq!(
            e.message(),
            "The positional operator did not find the match needed from the query."
        );

        assert_eq!(
            up(doc! {"_id": 1, "a": [1, 2]}, doc! {"$inc": {"a.$[]": 10}}).0,
            doc! {"_id": 1, "a": [11, 12]}
        );
        assert_eq!(
            up(
                doc! {"_id": 1, "a": [{"b": [1, 2]}, {"b": [3]}]},
                doc! {"$set": {"a.$[].b.$[]": 0}}
            )
            .0,
            doc! {"_id": 1, "a": [{"b": [0, 0]}, {"b": [0]}]}
        );
        assert_eq!(
            up_err(doc! {"_id": 1, "a": 1}, doc! {"$set": {"a.$[]": 1}}).message(),
            "Cannot apply array updates to non-array element a: 1"
        );
        assert_eq!(
            up_err(doc! {"_id": 1}, doc! {"$set": {"a.$[]": 1}}).message(),
            "The path 'a' must exist in the document in order to apply array updates."
        );

        let filters = [doc! {"x": {"$gte": 2}}];
        let spec = UpdateSpec::parse(
            &Bson::Document(doc! {"$set": {"a.$[x]": 0}}),
            Some(&filters),
        )
        .unwrap();
        let mut d = doc! {"_id": 1, "a": [1, 2, 3]};
        spec.apply(&mut d, &ctx()).unwrap();
        assert_eq!(d, doc! {"_id": 1, "a": [1, 0, 0]});
        let filters = [doc! {"e.k": 1}];
        let spec = UpdateSpec::parse(
            &Bson::Document(doc! {"$set": {"a.$[e].v": true}}),
            Some(&filters),
        )
        .unwrap();
        let mut d = doc! {"_id": 1, "a": [{"k": 1}, {"k": 2}]};
        spec.apply(&mut d, &ctx()).unwrap();
        assert_eq!(d, doc! {"_id": 1, "a": [{"k": 1, "v": true}, {"k": 2}]});

        let parse = |u: Document, f: Vec<Document>| {
            UpdateSpec::parse(&Bson::Document(u), Some(&f)).unwrap_err()
        };
        assert_eq!(
            parse(doc! {"$set": {"a.$[y]": 1}}, vec![doc! {"x": 1}]).message(),
            "No array filter found for identifier 'y' in path 'a.$[y]'"
        );
        assert_eq!(
            parse(doc! {"$set": {"a": 1}}, vec![doc! {"x": 1}]).message(),
            "The array filter for identifier 'x' was not used in the update { $set: { a: 1 } }"
        );
        assert_eq!(
            parse(
                doc! {"$set": {"a.$[x]": 1}},
                vec![doc! {"x": 1}, doc! {"x": 2}]
            )
            .code(),
            ErrorCode::FailedToParse
        );
        assert_eq!(
            parse(doc! {"$set": {"a.$[X]": 1}}, vec![doc! {"X": 1}]).code(),
            ErrorCode::BadValue
        );
        assert_eq!(
            up_err(
                doc! {"_id": 1, "a": [1]},
                doc! {"$set": {"a.$[]": 1, "a.0": 2}}
            )
            .code(),
            ErrorCode::ConflictingUpdateOperators
        );
    }

    #[test]
    fn replacement_and_pipelines() {
        let spec = UpdateSpec::parse(&Bson::Document(doc! {"b": 2}), None).unwrap();
        assert!(spec.is_replacement());
        let mut d = doc! {"a": 1, "_id": 7};
        assert!(spec.apply(&mut d, &ctx()).unwrap());
        assert_eq!(d, doc! {"_id": 7, "b": 2});
        assert!(!spec.apply(&mut d, &ctx()).unwrap());
        let spec = UpdateSpec::parse(&Bson::Document(doc! {"_id": 8}), None).unwrap();
        let e = spec.apply(&mut d.clone(), &ctx()).unwrap_err();
        assert_eq!(
            (e.code(), e.message()),
            (
                ErrorCode::ImmutableField,
                "After applying the update, the (immutable) field '_id' was found to have been altered to _id: 8"
            )
        );
        let e =
            UpdateSpec::parse(&Bson::Document(doc! {"a": 1, "$set": {"b": 1}}), None).unwrap_err();
        assert_eq!(e.code(), ErrorCode::DollarPrefixedFieldName);
        let e = UpdateSpec::parse(&Bson::Array(vec![]), None).unwrap_err();
        assert_eq!(
            (e.code(), e.message()),
            (
                ErrorCode::NotImplemented,
                "pipeline-style updates are not supported yet"
            )
        );
    }

    #[test]
    fn upserts() {
        let seed = upsert_seed(&doc! {"a.b": 1, "_id": 5, "c": {"$gt": 1}, "$and": [{"d": {"$eq": 2}}], "e": {"$in": [3]}}).unwrap();
        assert_eq!(seed, doc! {"_id": 5, "a": {"b": 1}, "d": 2, "e": 3});
        assert_eq!(
            upsert_seed(&doc! {"$or": [{"a": 1}, {"b": 1}]}).unwrap(),
            doc! {}
        );
        assert_eq!(
            upsert_seed(&doc! {"$or": [{"a": 1}]}).unwrap(),
            doc! {"a": 1}
        );
        let e = upsert_seed(&doc! {"a": 1, "a.b": 1}).unwrap_err();
        assert_eq!(
            (e.code(), e.message()),
            (
                ErrorCode::NotSingleValueField,
                "cannot infer query fields to set, both paths 'a.b' and 'a' are matched"
            )
        );
        let e = upsert_seed(&doc! {"$and": [{"a": 1}, {"a": 2}]}).unwrap_err();
        assert_eq!(
            e.message(),
            "cannot infer query fields to set, path 'a' is matched twice"
        );

        let insert = UpdateContext {
            is_upsert_insert: true,
            ..ctx()
        };
        let spec = UpdateSpec::parse(
            &Bson::Document(doc! {"$set": {"x": 1}, "$setOnInsert": {"y": 2}}),
            None,
        )
        .unwrap();
        let mut d = upsert_seed(&doc! {"q": 1}).unwrap();
        spec.apply(&mut d, &insert).unwrap();
        assert_eq!(d, doc! {"q": 1, "x": 1, "y": 2});
        let mut d = doc! {"_id": 1};
        spec.apply(&mut d, &ctx()).unwrap();
        assert_eq!(d, doc! {"_id": 1, "x": 1});
        let mut d = doc! {"x": 1};
        let spec = UpdateSpec::parse(&Bson::Document(doc! {"$set": {"_id": 3}}), None).unwrap();
        spec.apply(&mut d, &insert).unwrap();
        assert_eq!(d, doc! {"_id": 3, "x": 1});
        let spec = UpdateSpec::parse(&Bson::Document(doc! {"r": 1}), None).unwrap();
        let mut d = upsert_seed(&doc! {"_id": 4, "q": 1}).unwrap();
        spec.apply(&mut d, &insert).unwrap();
        assert_eq!(d, doc! {"_id": 4, "r": 1});
    }
}
