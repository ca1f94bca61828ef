//! Dotted field paths (`a.b.0.c`): lookup without array expansion (the query engine's
//! array-aware traversal builds on it), and the array-flattening collection of values that
//! `distinct` and index keys use.

use crate::depth::recurse;
use bson::{Bson, Document};

/// The value at `path`, descending into documents and, for numeric components, array elements.
pub fn get_path<'a>(doc: &'a Document, path: &str) -> Option<&'a Bson> {
    let mut parts = path.split('.');
    let first = parts.next()?;
    let mut current = doc.get(first)?;
    for part in parts {
        current = match current {
            Bson::Document(d) => d.get(part)?,
            Bson::Array(items) => items.get(part.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(current)
}

/// The values at `path` as `distinct` and index keys see them: an array value contributes its
/// elements, and arrays on the way are traversed element by element.
pub fn values_at_path(value: &Bson, path: &[&str], out: &mut Vec<Bson>) {
    match (value, path.split_first()) {
        (Bson::Array(items), _) => {
            for item in items {
                match (item, path.is_empty()) {
                    (_, true) => out.push(item.clone()),
                    (Bson::Document(_), false) => recurse(|| values_at_path(item, path, out)),
                    _ => {}
                }
            }
        }
        (_, None) => out.push(value.clone()),
        (Bson::Document(d), Some((first, rest))) => {
            if let Some(v) = d.get(*first) {
                recurse(|| values_at_path(v, rest, out));
            }
        }
        _ => {}
    }
}

/// [`values_at_path`] for a dotted path in a document.
pub fn values_for_key(doc: &Document, path: &str, out: &mut Vec<Bson>) {
    let parts: Vec<&str> = path.split('.').collect();
    let (first, rest) = parts.split_first().expect("split yields at least one part");
    if let Some(value) = doc.get(*first) {
        values_at_path(value, rest, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    #[test]
    fn finds_nested_and_positional_values() {
        let d = doc! {"a": {"b": [10, {"c": 3}]}};
        assert_eq!(get_path(&d, "a.b.0"), Some(&Bson::Int32(10)));
        assert_eq!(get_path(&d, "a.b.1.c"), Some(&Bson::Int32(3)));
        assert_eq!(get_path(&d, "a.x"), None);
    }

    #[test]
    fn distinct_flattens_arrays_along_the_path() {
        let doc = Bson::Document(doc! {"a": [{"b": 1}, {"b": [2, 3]}, {"c": 4}], "x": [5, [6]]});
        let mut out = Vec::new();
        values_at_path(&doc, &["a", "b"], &mut out);
        assert_eq!(out, vec![Bson::Int32(1), Bson::Int32(2), Bson::Int32(3)]);
        out.clear();
        values_at_path(&doc, &["x"], &mut out);
        assert_eq!(out, vec![Bson::Int32(5), Bson::Array(vec![Bson::Int32(6)])]);
    }
}
