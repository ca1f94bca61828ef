//! Wildcard index specifications (`{"$**": 1}`, `{"a.b.$**": 1}`, `wildcardProjection`):
//! MongoDB's validation with its errors, and the paths the index covers (the projection that
//! picks them, `_id` excluded unless projected in).

use crate::error::{ErrorCode, MongoError, Result};
use bson::{Bson, Document};

/// The key-pattern field of a wildcard index: `$**` or a path ending in `.$**`.
pub fn is_wildcard_field(path: &str) -> bool {
    path == "$**" || path.ends_with(".$**")
}

/// What a wildcard index indexes: the paths its projection keeps.
#[derive(Clone, Debug, PartialEq)]
pub struct WildcardSpec {
    /// Keep only these paths (and what lies below them), or keep everything but these.
    pub inclusion: bool,
    pub paths: Vec<String>,
    /// The values are indexed in descending order (`{"$**": -1}`).
    pub descending: bool,
}

/// How a path stands in the projection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Projected {
    /// The path and everything below it are kept.
    Whole,
    /// The path is dropped with everything below it.
    Dropped,
    /// Some paths below it are kept, others not.
    Partly,
}

fn on_path(prefix: &str, path: &str) -> bool {
    path == prefix || path.starts_with(prefix) && path.as_bytes().get(prefix.len()) == Some(&b'.')
}

impl WildcardSpec {
    /// The wildcard part of a validated key pattern with its `wildcardProjection`, when the
    /// key is a wildcard index's; a compound wildcard index's regular fields are checked
    /// against it (`super::wildcard_compound`).
    pub fn parse(key: &Document, spec: &Document) -> Result<Option<WildcardSpec>> {
        let wildcard: Vec<(&String, &Bson)> =
            key.iter().filter(|(k, _)| is_wildcard_field(k)).collect();
        let projection = spec.get("wildcardProjection");
        let Some((field, value)) = wildcard.first() else {
            if projection.is_some() {
                return Err(MongoError::bad_value(
                    "The field 'wildcardProjection' is only allowed in 'wildcard' indexes",
                ));
            }
            return Ok(None);
        };
        if wildcard.len() > 1 {
            return Err(MongoError::location(
                7246201,
                "Index Key can contain only one wildcard index field",
            ));
        }
        let descending =
            crate::document::numeric::Number::from_bson(value).is_some_and(|n| n.to_f64() < 0.0);
        let root = field.strip_suffix("$**").unwrap_or_default();
        let projection = match projection {
            None => None,
            Some(Bson::Document(p)) => Some(p),
            Some(other) => {
                return Err(MongoError::type_mismatch(format!(
                    "The field 'wildcardProjection' must be a non-empty object, but got {}",
                    crate::document::types::type_name(other)
                )));
            }
        };
        if projection.is_some() && !key.contains_key("$**") {
            return Err(MongoError::failed_to_parse(
                "The field 'wildcardProjection' is only allowed when 'key' is {\"$**\": ±1} or {\"$**\": \"columnstore\"}",
            ));
        }
        if projection.is_some_and(Document::is_empty) {
            return Err(MongoError::failed_to_parse(
                "The 'wildcardProjection' field can't be an empty object",
            ));
        }
        // Nested objects name dotted paths (`{a: {b: 1}}` is `{"a.b": 1}`); the spec keeps them
        // as given.
        let projection = projection.map(flattened).transpose()?;
        let projection = projection.as_ref();
        if key.len() > 1 {
            super::wildcard_compound::validate(key, field.as_str(), projection)?;
        }
        let parsed = match projection {
            Some(p) => parse_projection(p)?,
            // `a.b.$**` keeps the subtree; `$**` everything but `_id`.
            None if !root.is_empty() => WildcardSpec {
                inclusion: true,
                paths: vec![root.trim_end_matches('.').to_string()],
                descending,
            },
            None => WildcardSpec {
                inclusion: false,
                paths: vec!["_id".to_string()],
                descending,
            },
        };
        Ok(Some(WildcardSpec {
            descending,
            ..parsed
        }))
    }

    /// How `path` (a dotted path of the document) stands in the projection.
    pub fn projected(&self, path: &str) -> Projected {
        if self.paths.iter().any(|p| on_path(p, path)) {
            return if self.inclusion {
                Projected::Whole
            } else {
                Projected::Dropped
            };
        }
        if self.paths.iter().any(|p| on_path(path, p)) {
            return Projected::Partly;
        }
        if self.inclusion {
            Projected::Dropped
        } else {
            Projected::Whole
        }
    }

    /// Whether the index holds every value of `path` (and of the paths below it), so that a
    /// query on it may use the index.
    pub fn covers(&self, path: &str) -> bool {
        self.projected(path) == Projected::Whole
    }
}

fn projection_error(code: i32, message: String) -> MongoError {
    MongoError::location(
        code,
        format!("Failed to parse projection: wildcardProjection :: caused by :: {message}"),
    )
}

/// A `wildcardProjection` with its nested objects read as the dotted paths they name, as
/// MongoDB's projection parser reads them: an object whose first field is an operator stays a
/// value (refused later as a computed field), an empty one is refused.
fn flattened(projection: &Document) -> Result<Document> {
    let mut out = Document::new();
    flatten_into(projection, "", &mut out)?;
    Ok(out)
}

// Recursion is bounded by the depth every incoming message is held to (`crate::depth`).
fn flatten_into(spec: &Document, prefix: &str, out: &mut Document) -> Result<()> {
    for (key, value) in spec {
        let path = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        match value {
            Bson::Document(sub) if sub.is_empty() => {
                return Err(projection_error(
                    51270,
                    format!(
                        "An empty sub-projection is not a valid value. Found empty object at path {path}"
                    ),
                ));
            }
            Bson::Document(sub) if !sub.keys().next().is_some_and(|k| k.starts_with('$')) => {
                flatten_into(sub, &path, out)?;
            }
            other => {
                if out.contains_key(&path) {
                    return Err(projection_error(31250, format!("Path collision at {path}")));
                }
                out.insert(path, other.clone());
            }
        }
    }
    Ok(())
}

/// A `wildcardProjection`: inclusions or exclusions of paths (`_id` may be included in
/// either), values numbers or booleans, paths not overlapping.
fn parse_projection(projection: &Document) -> Result<WildcardSpec> {
    let mut included = Vec::new();
    let mut excluded = Vec::new();
    let mut id: Option<bool> = None;
    for (path, value) in projection {
        if path.is_empty() || path.starts_with('$') || path.split('.').any(str::is_empty) {
            return Err(projection_error(
                31249,
                format!("Invalid projection path '{path}' in wildcardProjection"),
            ));
        }
        let keep = match value {
            Bson::Boolean(b) => *b,
            Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_) => {
                crate::document::numeric::Number::from_bson(value)
                    .is_some_and(|n| n.to_f64() != 0.0)
            }
            other => {
                return Err(projection_error(
                    51271,
                    format!(
                        "Bad projection specification, cannot use computed fields when parsing a spec in kBanComputedFields mode: {}",
                        crate::document::display::render_element(path, other)
                    ),
                ));
            }
        };
        let all: Vec<&String> = included.iter().chain(&excluded).collect();
        if let Some(other) = all.iter().find(|p| on_path(p, path) || on_path(path, p)) {
            return Err(projection_error(
                31250,
                format!("Path collision at {path} remaining portion {other}"),
            ));
        }
        if path == "_id" {
            id = Some(keep);
        }
        if keep {
            included.push(path.clone());
        } else {
            excluded.push(path.clone());
        }
    }
    // The first field other than `_id` makes the projection an inclusion or an exclusion;
    // a later one of the other kind is refused, as MongoDB's projection parser does.
    let mut kind: Option<bool> = None;
    for (path, value) in projection.iter().filter(|(p, _)| *p != "_id") {
        let keep = truthy(value);
        match kind {
            None => kind = Some(keep),
            Some(true) if !keep => {
                return Err(projection_error(
                    31254,
                    format!("Cannot do exclusion on field {path} in inclusion projection"),
                ));
            }
            Some(false) if keep => {
                return Err(projection_error(
                    31253,
                    format!("Cannot do inclusion on field {path} in exclusion projection"),
                ));
            }
            _ => {}
        }
    }
    let inclusion =
        included.iter().any(|p| p != "_id") || (excluded.is_empty() && id == Some(true));
    let paths = if inclusion {
        included
    } else {
        // `_id` is left out unless projected in.
        let mut paths = excluded;
        if id.is_none() {
            paths.push("_id".to_string());
        }
        paths.retain(|p| p != "_id" || id != Some(true));
        paths
    };
    Ok(WildcardSpec {
        inclusion,
        paths,
        descending: false,
    })
}

fn truthy(value: &Bson) -> bool {
    match value {
        Bson::Boolean(b) => *b,
        other => {
            crate::document::numeric::Number::from_bson(other).is_some_and(|n| n.to_f64() != 0.0)
        }
    }
}

/// The error MongoDB gives a wildcard index with an option it does not support.
pub fn invalid_option(option: &str) -> MongoError {
    let message = format!("Index type 'wildcard' does not support the '{option}' option");
    let message = match option {
        "expireAfterSeconds" => format!("cannot make a TTL index :: caused by :: {message}"),
        _ => message,
    };
    MongoError::new(ErrorCode::CannotCreateIndex, message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    fn parse(key: Document, projection: Option<Document>) -> Result<Option<WildcardSpec>> {
        let mut spec = doc! {"key": key.clone()};
        if let Some(p) = projection {
            spec.insert("wildcardProjection", p);
        }
        WildcardSpec::parse(&key, &spec)
    }

    fn code(key: Document, projection: Option<Document>) -> i32 {
        parse(key, projection).unwrap_err().code().code()
    }

    #[test]
    fn paths_a_wildcard_index_keeps() {
        let all = parse(doc! {"$**": 1}, None).unwrap().unwrap();
        assert!(all.covers("a") && all.covers("a.b") && !all.covers("_id"));
        let sub = parse(doc! {"a.b.$**": -1}, None).unwrap().unwrap();
        assert!(sub.descending);
        assert!(sub.covers("a.b") && sub.covers("a.b.c") && !sub.covers("a") && !sub.covers("x"));
        assert_eq!(sub.projected("a"), Projected::Partly);
        let inc = parse(doc! {"$**": 1}, Some(doc! {"a": 1, "b.c": true}))
            .unwrap()
            .unwrap();
        assert!(inc.covers("a.x") && inc.covers("b.c") && !inc.covers("b") && !inc.covers("_id"));
        let exc = parse(doc! {"$**": 1}, Some(doc! {"a": 0}))
            .unwrap()
            .unwrap();
        assert!(!exc.covers("a") && !exc.covers("_id") && exc.covers("b"));
        let with_id = parse(doc! {"$**": 1}, Some(doc! {"a": 0, "_id": 1}))
            .unwrap()
            .unwrap();
        assert!(with_id.covers("_id") && !with_id.covers("a.b"));
        let only_id = parse(doc! {"$**": 1}, Some(doc! {"_id": 1}))
            .unwrap()
            .unwrap();
        assert!(only_id.covers("_id") && !only_id.covers("a"));
        // Nested objects are the dotted paths they name.
        let nested = parse(
            doc! {"$**": 1},
            Some(doc! {"a": {"b": 1, "c": {"d": true}}}),
        )
        .unwrap()
        .unwrap();
        let dotted = parse(doc! {"$**": 1}, Some(doc! {"a.b": 1, "a.c.d": true}))
            .unwrap()
            .unwrap();
        assert_eq!(nested, dotted);
        assert!(nested.covers("a.b.x") && nested.covers("a.c.d") && !nested.covers("a.c.e"));
        let compound = parse(doc! {"a": 1, "$**": 1}, Some(doc! {"x": {"a": 0}, "a": 0}));
        assert!(!compound.unwrap().unwrap().covers("x.a"));
    }

    #[test]
    fn mongodb_errors() {
        assert_eq!(code(doc! {"$**": 1, "a.$**": 1}, None), 7246201);
        assert_eq!(code(doc! {"a.$**": 1}, Some(doc! {"b": 1})), 9);
        assert_eq!(code(doc! {"$**": 1}, Some(doc! {})), 9);
        assert_eq!(code(doc! {"$**": 1}, Some(doc! {"a": 1, "b": 0})), 31254);
        assert_eq!(code(doc! {"$**": 1}, Some(doc! {"a": 0, "b": 1})), 31253);
        assert_eq!(code(doc! {"$**": 1}, Some(doc! {"a": 1, "a.b": 1})), 31250);
        assert_eq!(code(doc! {"$**": 1}, Some(doc! {"a": "x"})), 51271);
        assert_eq!(code(doc! {"$**": 1}, Some(doc! {"a": {}})), 51270);
        assert_eq!(code(doc! {"$**": 1}, Some(doc! {"a": {"b": {}}})), 51270);
        assert_eq!(
            code(doc! {"$**": 1}, Some(doc! {"a": {"$add": [1]}})),
            51271
        );
        assert_eq!(
            code(doc! {"$**": 1}, Some(doc! {"a": {"b": 1}, "a.b": 1})),
            31250
        );
        assert_eq!(
            code(doc! {"$**": 1}, Some(doc! {"a": {"b": 1}, "a.b.c": 1})),
            31250
        );
        assert_eq!(
            code(doc! {"$**": 1}, Some(doc! {"a": {"b": 1, "c": 0}})),
            31254
        );
        // A compound index's projection is checked as its dotted paths.
        for nested in [doc! {"a": {"b": 1}}, doc! {"x": {"a": 1}, "a": {"b": 0}}] {
            let mut dotted = Document::new();
            flatten_into(&nested, "", &mut dotted).unwrap();
            let key = doc! {"a": 1, "$**": 1};
            assert_eq!(
                parse(key.clone(), Some(nested)).map_err(|e| e.code().code()),
                parse(key, Some(dotted)).map_err(|e| e.code().code())
            );
        }
        assert_eq!(code(doc! {"a": 1}, Some(doc! {"a": 1})), 2);
        assert_eq!(code(doc! {"a": 1, "$**": 1}, Some(doc! {"a": 1})), 7246208);
        assert!(parse(doc! {"a": 1, "$**": 1}, Some(doc! {"a": 0})).is_ok());
        let spec = doc! {"key": {"$**": 1}, "wildcardProjection": 5};
        assert_eq!(
            WildcardSpec::parse(&doc! {"$**": 1}, &spec)
                .unwrap_err()
                .code()
                .code(),
            14
        );
    }
}
