//! Dotted field paths in the aggregation language: validation with MongoDB's errors, the lookup
//! behind `$a.b` (which fans out over arrays), and the plain nested access stages like `$unwind`
//! use (documents only).

use super::value::Value;
use crate::error::{ErrorCode, MongoError, Result};
use bson::{Bson, Document};

/// MongoDB's maximum BSON nesting depth, which also bounds a path's length.
const MAX_COMPONENTS: usize = 200;

/// Field names that may start with `$` because DBRefs use them.
const DOLLAR_FIELD_NAMES: [&str; 3] = ["$id", "$ref", "$db"];

/// A validated dotted path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldPath {
    parts: Vec<String>,
}

impl FieldPath {
    /// Validates `path` as the server's `FieldPath` constructor does.
    pub fn parse(path: &str) -> Result<FieldPath> {
        if path.is_empty() {
            return Err(MongoError::location(
                40352,
                "FieldPath cannot be constructed with empty string",
            ));
        }
        if path.ends_with('.') {
            return Err(MongoError::location(
                40353,
                "FieldPath must not end with a '.'.",
            ));
        }
        let parts: Vec<String> = path.split('.').map(String::from).collect();
        if parts.len() > MAX_COMPONENTS {
            return Err(MongoError::new(
                ErrorCode::Overflow,
                "FieldPath is too long",
            ));
        }
        for part in &parts {
            validate_field_name(part)?;
        }
        Ok(FieldPath { parts })
    }

    pub fn parts(&self) -> &[String] {
        &self.parts
    }

    pub fn full(&self) -> String {
        self.parts.join(".")
    }

    /// Every component after the first, as the server names "the remaining portion".
    pub fn tail(&self) -> String {
        self.parts[1.min(self.parts.len())..].join(".")
    }
}

/// One component of a path.
pub fn validate_field_name(name: &str) -> Result<()> {
    if name.is_empty() {
        return Err(MongoError::location(
            15998,
            "FieldPath field names may not be empty strings.",
        ));
    }
    if name.starts_with('$') && !DOLLAR_FIELD_NAMES.contains(&name) {
        return Err(MongoError::location(
            16410,
            "FieldPath field names may not start with '$'. Consider using $getField or $setField.",
        ));
    }
    if name.contains('\0') {
        return Err(MongoError::location(
            16411,
            "FieldPath field names may not contain '\0'.",
        ));
    }
    Ok(())
}

/// A field name that must not be a path (object expression keys).
pub fn validate_plain_field_name(name: &str) -> Result<()> {
    validate_field_name(name)?;
    if name.contains('.') {
        return Err(MongoError::location(
            16412,
            "FieldPath field names may not contain '.'. Consider using $getField or $setField.",
        ));
    }
    Ok(())
}

/// `$a.b.c` evaluated against a document: arrays along the way yield the array of each
/// element's value (elements that are not documents, or lack the field, are skipped).
pub fn lookup(doc: &Document, parts: &[String]) -> Value {
    let (first, rest) = parts.split_first()?;
    let value = doc.get(first)?;
    if rest.is_empty() {
        return Some(value.clone());
    }
    lookup_in(value, rest)
}

/// The rest of a path below `value` (a variable's value or an intermediate field).
pub fn lookup_in(value: &Bson, parts: &[String]) -> Value {
    if parts.is_empty() {
        return Some(value.clone());
    }
    match value {
        Bson::Document(doc) => lookup(doc, parts),
        Bson::Array(items) => Some(Bson::Array(
            items
                .iter()
                .filter_map(|item| match item {
                    Bson::Document(doc) => lookup(doc, parts),
                    _ => None,
                })
                .collect(),
        )),
        _ => None,
    }
}

/// The value at `parts` through documents only (no array traversal, no positions).
pub fn get_nested<'a>(doc: &'a Document, parts: &[String]) -> Option<&'a Bson> {
    let (first, rest) = parts.split_first()?;
    let value = doc.get(first)?;
    if rest.is_empty() {
        return Some(value);
    }
    match value {
        Bson::Document(sub) => get_nested(sub, rest),
        _ => None,
    }
}

/// Sets the value at `parts`, keeping the field's position when it exists and replacing
/// anything that is not a document along the way with a new document.
pub fn set_nested(doc: &mut Document, parts: &[String], value: Bson) {
    let Some((first, rest)) = parts.split_first() else {
        return;
    };
    if rest.is_empty() {
        doc.insert(first.clone(), value);
        return;
    }
    if !matches!(doc.get(first), Some(Bson::Document(_))) {
        doc.insert(first.clone(), Document::new());
    }
    if let Some(Bson::Document(sub)) = doc.get_mut(first) {
        set_nested(sub, rest, value);
    }
}

/// Removes the field at `parts` if every step down to it is a document.
pub fn remove_nested(doc: &mut Document, parts: &[String]) {
    let Some((first, rest)) = parts.split_first() else {
        return;
    };
    if rest.is_empty() {
        doc.remove(first);
    } else if let Some(Bson::Document(sub)) = doc.get_mut(first) {
        remove_nested(sub, rest);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    fn parts(path: &str) -> Vec<String> {
        path.split('.').map(String::from).collect()
    }

    fn code(path: &str) -> i32 {
        FieldPath::parse(path).unwrap_err().code().code()
    }

    #[test]
    fn validation_matches_the_server() {
        assert_eq!(code(""), 40352);
        assert_eq!(code("a."), 40353);
        assert_eq!(code("a..b"), 15998);
        assert_eq!(code(".a"), 15998);
        assert_eq!(code("$a"), 16410);
        assert_eq!(code("a.$b"), 16410);
        assert_eq!(code(&vec!["a"; 201].join(".")), 15);
        assert!(FieldPath::parse(&vec!["a"; 200].join(".")).is_ok());
        assert!(FieldPath::parse("a.$id").is_ok());
        assert_eq!(FieldPath::parse("a.b.c").unwrap().tail(), "b.c");
        assert_eq!(
            validate_plain_field_name("a.b").unwrap_err().code().code(),
            16412
        );
    }

    #[test]
    fn lookup_fans_out_over_arrays() {
        let d =
            doc! {"a": [{"b": 1}, {"c": 2}, 5, {"b": [3, 4]}, [{"b": 9}]], "x": {"y": {"z": true}}};
        assert_eq!(
            lookup(&d, &parts("a.b")),
            Some(Bson::Array(vec![Bson::Int32(1), bson::bson!([3, 4])]))
        );
        assert_eq!(lookup(&d, &parts("x.y.z")), Some(Bson::Boolean(true)));
        assert_eq!(lookup(&d, &parts("x.q")), None);
        assert_eq!(lookup(&d, &parts("x.y.z.w")), None);
        // Positions are field names to expressions, so they match nothing in an array.
        assert_eq!(lookup(&d, &parts("a.0")), Some(Bson::Array(vec![])));
        let nested = doc! {"a": [{"b": [{"c": 1}, {"c": 2}]}, {"b": {"c": 3}}]};
        assert_eq!(
            lookup(&nested, &parts("a.b.c")),
            Some(bson::bson!([[1, 2], 3]))
        );
    }

    #[test]
    fn nested_access_assignment_and_removal() {
        let mut d = doc! {"a": {"b": 1, "c": 2}, "x": 5};
        assert_eq!(get_nested(&d, &parts("a.b")), Some(&Bson::Int32(1)));
        assert_eq!(get_nested(&d, &parts("x.y")), None);
        set_nested(&mut d, &parts("a.b"), Bson::Int32(7));
        set_nested(&mut d, &parts("x.y"), Bson::Int32(8));
        set_nested(&mut d, &parts("n.m"), Bson::Null);
        assert_eq!(
            d,
            doc! {"a": {"b": 7, "c": 2}, "x": {"y": 8}, "n": {"m": null}}
        );
        remove_nested(&mut d, &parts("a.b"));
        remove_nested(&mut d, &parts("zz.q"));
        assert_eq!(d, doc! {"a": {"c": 2}, "x": {"y": 8}, "n": {"m": null}});
    }
}
