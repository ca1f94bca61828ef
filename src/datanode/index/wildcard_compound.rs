//! MongoDB's checks of a compound wildcard index (7.0+: one wildcard field among regular
//! fields): the wildcard part may not overlap a regular field, and a `wildcardProjection`
//! must exclude every regular field, with MongoDB's codes (7246200, 7246204, 7246208..7246211,
//! 67) in MongoDB's order.

use crate::error::{ErrorCode, MongoError, Result};
use bson::{Bson, Document};

/// A dotted path as its components, ordered as MongoDB orders its field references: part by
/// part, a path before the paths below it.
type Parts<'a> = Vec<&'a str>;

fn parts(path: &str) -> Parts<'_> {
    path.split('.').collect()
}

fn prefix_or_equal(prefix: &Parts<'_>, path: &Parts<'_>) -> bool {
    path.starts_with(prefix)
}

/// What a projection value does: MongoDB's truth value of the element.
fn keeps(value: &Bson) -> bool {
    match value {
        Bson::Boolean(b) => *b,
        Bson::Null | Bson::Undefined => false,
        other => {
            crate::document::numeric::Number::from_bson(other).is_none_or(|n| n.to_f64() != 0.0)
        }
    }
}

/// Checks the compound wildcard key `key` (more than one field, exactly one of them
/// `wildcard`) and its `projection`, before the projection itself is parsed.
pub fn validate(key: &Document, wildcard: &str, projection: Option<&Document>) -> Result<()> {
    let regular: Vec<Parts<'_>> = key
        .keys()
        .filter(|k| k.as_str() != wildcard)
        .map(|k| parts(k))
        .collect();
    let Some(projection) = projection else {
        if wildcard == "$**" {
            return Err(MongoError::new(
                ErrorCode::CannotCreateIndex,
                "a compound wildcard index on '$**' requires a 'wildcardProjection' that excludes its regular fields",
            ));
        }
        // The subtree the wildcard field indexes may not hold a regular field.
        let root = parts(wildcard.trim_end_matches(".$**"));
        if let Some(field) = regular.iter().find(|f| prefix_or_equal(&root, f)) {
            return Err(MongoError::location(
                7246204,
                format!(
                    "A wildcard index field should not overlap with and index key fields if wildcard projection is empty, however '{}' is overlapping with the wildcard index field.",
                    field.join(".")
                ),
            ));
        }
        return Ok(());
    };
    validate_projection(regular, projection)
}

/// Two fields of one kind of a projection may not lie on each other's path.
fn no_overlap(fields: &[Parts<'_>]) -> Result<()> {
    for pair in fields.windows(2) {
        if prefix_or_equal(&pair[0], &pair[1]) || prefix_or_equal(&pair[1], &pair[0]) {
            return Err(MongoError::location(
                7246200,
                format!(
                    "Fields in Wildcard Projection cannot overlap, however '{}' is overlapped with '{}'",
                    pair[0].join("."),
                    pair[1].join(".")
                ),
            ));
        }
    }
    Ok(())
}

fn not_excluded(code: i32, field: &Parts<'_>) -> MongoError {
    MongoError::location(
        code,
        format!(
            "wildcardProjection paths must exclude all regular index fields, however '{}'is not excluded.",
            field.join(".")
        ),
    )
}

/// MongoDB's walk of the sorted regular fields beside the sorted included, then excluded,
/// projection paths.
fn validate_projection(mut regular: Vec<Parts<'_>>, projection: &Document) -> Result<()> {
    let mut included: Vec<Parts<'_>> = Vec::new();
    let mut excluded: Vec<Parts<'_>> = Vec::new();
    for (path, value) in projection {
        if keeps(value) {
            included.push(parts(path));
        } else {
            excluded.push(parts(path));
        }
    }
    // `_id` may be included in an exclusion, or excluded in an inclusion: it then takes no
    // part in the checks of the other kind.
    let is_id = |p: &Parts<'_>| *p == ["_id"];
    let exclusion = excluded.iter().any(|p| !is_id(p));
    let inclusion = included.iter().any(|p| !is_id(p));
    if exclusion && inclusion {
        return Err(MongoError::location(
            7246211,
            "Inclusion and exclusion statements cannot combine in the wildcardProjection with an exception of explicitly including _id field",
        ));
    }
    if exclusion {
        included.clear();
    }
    if inclusion {
        excluded.clear();
    }
    regular.sort();
    included.sort();
    excluded.sort();
    no_overlap(&included)?;
    no_overlap(&excluded)?;
    // No included path may hold a regular field.
    let (mut r, mut p) = (0, 0);
    while r < regular.len() && p < included.len() {
        if prefix_or_equal(&included[p], &regular[r]) {
            return Err(MongoError::location(
                7246208,
                format!(
                    "Index Key and Wildcard Projection cannot contain overlapping fields, however '{}' index field is ovverlapping with '{}' wildcardProjection path.",
                    regular[r].join("."),
                    included[p].join(".")
                ),
            ));
        }
        if included[p] < regular[r] {
            p += 1;
        } else {
            r += 1;
        }
    }
    // An exclusion must exclude every regular field.
    if !excluded.is_empty() {
        let (mut r, mut p) = (0, 0);
        while r < regular.len() && p < excluded.len() {
            if prefix_or_equal(&excluded[p], &regular[r]) {
                r += 1;
            } else if excluded[p] < regular[r] {
                p += 1;
            } else {
                return Err(not_excluded(7246209, &regular[r]));
            }
        }
        if let Some(field) = regular.get(r) {
            return Err(not_excluded(7246210, field));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    fn code(key: Document, projection: Option<Document>) -> i32 {
        let wildcard = key
            .keys()
            .find(|k| super::super::wildcard::is_wildcard_field(k))
            .unwrap()
            .clone();
        match validate(&key, &wildcard, projection.as_ref()) {
            Ok(()) => 0,
            Err(e) => e.code().code(),
        }
    }

    #[test]
    fn mongodb_compound_wildcard_rules() {
        // Cases and codes from MongoDB's compound_wildcard_index_validation.js.
        for (key, projection, expected) in [
            (doc! {"a": 1, "b.$**": 1}, None, 0),
            (
                doc! {"a": 1, "$**": -1, "b": 1},
                Some(doc! {"a": 0, "b": 0}),
                0,
            ),
            (
                doc! {"$**": 1, "other": 1},
                Some(doc! {"_id": 0, "a": 1}),
                0,
            ),
            (
                doc! {"$**": 1, "x": 1},
                Some(doc! {"_id": 1, "a": 0, "x": 0}),
                0,
            ),
            (doc! {"$**": 1, "x": 1}, Some(doc! {"_id": 1}), 0),
            (doc! {"a": 1, "a.$**": 1}, None, 7246204),
            (doc! {"a.b.c": 1, "a.b.$**": 1}, None, 7246204),
            (
                doc! {"$**": 1, "c": 1},
                Some(doc! {"a.b": 1, "a.b.c": 1}),
                7246200,
            ),
            (doc! {"a": 1, "$**": 1}, None, 67),
            (
                doc! {"a": 1, "$**": 1},
                Some(doc! {"a": 1, "b": 1}),
                7246208,
            ),
            (doc! {"_id": 1, "$**": 1}, Some(doc! {"_id": 1}), 7246208),
            (
                doc! {"$**": 1, "c": 1},
                Some(doc! {"_id": 0, "a": 0, "b": 1}),
                7246211,
            ),
            (
                doc! {"$**": 1, "c": 1},
                Some(doc! {"_id": 1, "a": 0, "b": 1}),
                7246211,
            ),
            (
                doc! {"$**": 1, "_id": 1, "e": 1},
                Some(doc! {"_id": 1, "e": 0}),
                7246209,
            ),
            (doc! {"a": 1, "$**": 1}, Some(doc! {"_id": 0}), 7246210),
            (doc! {"_id": 1, "$**": 1}, Some(doc! {"_id": 0}), 0),
            (
                doc! {"a": 1, "b": 1, "$**": 1},
                Some(doc! {"b": 0}),
                7246209,
            ),
            (
                doc! {"b": 1, "$**": 1},
                Some(doc! {"_id": 0, "a": 0}),
                7246210,
            ),
            (
                doc! {"$**": 1, "d": 1},
                Some(doc! {"_id": 1, "e": 0}),
                7246209,
            ),
            (
                doc! {"_id": 1, "a.b": 1, "$**": 1},
                Some(doc! {"_id": 0, "a": 0}),
                0,
            ),
            (
                doc! {"a": 1, "$**": 1},
                Some(doc! {"_id": 0, "a.b": 0}),
                7246209,
            ),
            (
                doc! {"$**": 1, "e": 1},
                Some(doc! {"_id": 1, "e.b": 0}),
                7246209,
            ),
            (
                doc! {"$**": 1, "e.c": 1},
                Some(doc! {"_id": 1, "e.b": 0}),
                7246210,
            ),
        ] {
            assert_eq!(
                code(key.clone(), projection.clone()),
                expected,
                "{key} {projection:?}"
            );
        }
    }
}
