//! Dotted field paths (`a.b.0.c`): lookup and assignment without array expansion. The query
//! engine's array-aware traversal builds on these.

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
}
