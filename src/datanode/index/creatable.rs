//! Rules only a new index must follow (specs already in the catalog were accepted when they
//! were created): the reserved name `*`, no uniqueness on hashed or `_id` keys, and only the
//! predicates MongoDB supports in a `partialFilterExpression`.

use super::spec::{FieldKind, IndexSpec};
use crate::error::{ErrorCode, MongoError, Result};
use bson::{Bson, Document};

/// Operators a partial filter may use on a field.
const PARTIAL_FIELD_OPERATORS: [&str; 7] =
    ["$eq", "$exists", "$gt", "$gte", "$lt", "$lte", "$type"];

impl IndexSpec {
    /// Checks the rules `createIndexes` applies on top of parsing.
    pub fn check_creatable(&self) -> Result<()> {
        if self.name == "*" {
            return Err(MongoError::bad_value("The index name '*' is not valid."));
        }
        if self.unique && self.fields.iter().any(|f| f.kind == FieldKind::Hashed) {
            return Err(MongoError::location(
                16764,
                "Currently hashed indexes cannot guarantee uniqueness. Use a regular index.",
            ));
        }
        if self.unique && self.fields.len() == 1 && self.fields[0].path == "_id" {
            return Err(MongoError::new(
                ErrorCode::InvalidIndexSpecificationOption,
                format!(
                    "The field 'unique' is not valid for an _id index specification. Specification: {}",
                    crate::document::display::render_doc(&self.document)
                ),
            ));
        }
        if let Some((expr, _)) = &self.partial_filter {
            check_partial(expr, 0)?;
        }
        Ok(())
    }
}

fn unsupported(expr: &Document) -> MongoError {
    MongoError::new(
        ErrorCode::CannotCreateIndex,
        format!(
            "Expression not supported in partial index: {}",
            crate::document::display::render_doc(expr)
        ),
    )
}

/// Equality, `$exists: true`, ranges, `$type` and `$in` on fields, combined with `$and` and
/// `$or`.
fn check_partial(expr: &Document, depth: usize) -> Result<()> {
    for (key, value) in expr {
        match (key.as_str(), value) {
            ("$and" | "$or", Bson::Array(branches)) if depth < 4 => {
                for branch in branches {
                    match branch {
                        Bson::Document(d) => check_partial(d, depth + 1)?,
                        _ => return Err(unsupported(expr)),
                    }
                }
            }
            (k, _) if k.starts_with('$') => return Err(unsupported(expr)),
            (_, Bson::RegularExpression(_)) => return Err(unsupported(expr)),
            (_, Bson::Document(ops)) if ops.keys().next().is_some_and(|k| k.starts_with('$')) => {
                for (op, arg) in ops {
                    let allowed = match op.as_str() {
                        "$exists" => {
                            matches!(arg, Bson::Boolean(true))
                                || matches!(arg, Bson::Int32(n) if *n != 0)
                        }
                        "$in" => matches!(arg, Bson::Array(items)
                            if items.iter().all(|i| !matches!(i, Bson::RegularExpression(_)))),
                        op => PARTIAL_FIELD_OPERATORS.contains(&op),
                    };
                    if !allowed {
                        return Err(unsupported(expr));
                    }
                }
            }
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    fn check(spec: Document) -> Result<()> {
        IndexSpec::parse(&spec)?.check_creatable()
    }

    #[test]
    fn new_indexes_follow_mongodb_rules() {
        assert!(check(doc! {"key": {"a": 1}, "partialFilterExpression": {"a": {"$gt": 1}, "$or": [{"b": 1}, {"c": {"$exists": true}}]}}).is_ok());
        let code = |spec| check(spec).unwrap_err().code().code();
        assert_eq!(code(doc! {"key": {"a": 1}, "name": "*"}), 2);
        assert_eq!(code(doc! {"key": {"a": "hashed"}, "unique": true}), 16764);
        assert_eq!(code(doc! {"key": {"_id": 1}, "unique": true}), 197);
        assert_eq!(
            code(doc! {"key": {"a": 1}, "partialFilterExpression": {"a": {"$regex": "x"}}}),
            67
        );
        assert_eq!(
            code(doc! {"key": {"a": 1}, "partialFilterExpression": {"a": {"$ne": 1}}}),
            67
        );
        assert_eq!(
            code(doc! {"key": {"a": 1}, "partialFilterExpression": {"a": {"$exists": false}}}),
            67
        );
        assert_eq!(
            code(doc! {"key": {"a": 1}, "partialFilterExpression": {"$nor": [{"a": 1}]}}),
            67
        );
    }
}
