//! The document an upsert inserts before its update applies: the query's equality fields in
//! the order of their paths, with dotted paths expanded into embedded documents and `_id` first.

use crate::error::{ErrorCode, MongoError, Result};
use crate::query::filter::Filter;
use bson::{Bson, Document};

/// The document an upsert inserts before the update applies: the query's equality fields
/// (dotted paths expanded into embedded documents), `_id` first, then in the byte order of
/// their full paths whatever the filter's order: MongoDB keeps them in a map keyed by path.
pub fn upsert_seed(filter: &Document) -> Result<Document> {
    let parsed = Filter::parse(filter)?;
    let mut equalities = parsed.upsert_equalities();
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
    equalities.sort_by_key(|(path, _)| *path);
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

pub(super) fn is_path_prefix(prefix: &str, path: &str) -> bool {
    path.len() > prefix.len() && path.starts_with(prefix) && path.as_bytes()[prefix.len()] == b'.'
}

pub(super) fn id_first(doc: Document) -> Document {
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
