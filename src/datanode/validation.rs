//! Document validation (`validator`, `validationLevel`, `validationAction`): the collection
//! options that declare it, and the check every insert, update and upsert makes unless the
//! command sets `bypassDocumentValidation`.

use super::storage::CollectionMeta;
use crate::error::{ErrorCode, MongoError, Result};
use crate::query::filter::Filter;
use bson::{Bson, Document, doc};

/// Operators MongoDB refuses inside a validator.
const FORBIDDEN: [&str; 4] = ["$near", "$nearSphere", "$text", "$where"];

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Level {
    Off,
    Strict,
    /// Updates to documents that already fail validation are not checked.
    Moderate,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Action {
    Error,
    /// Accept the document and log a warning.
    Warn,
}

/// Checks the validation options of `create`/`collMod` and returns them normalized into
/// `options` (MongoDB records the level and action next to a validator).
pub fn apply_options(options: &mut Document, changes: &Document) -> Result<()> {
    if let Some(validator) = changes.get("validator") {
        let Bson::Document(validator) = validator else {
            return Err(MongoError::type_mismatch(
                "BSON field 'validator' is the wrong type, expected type 'object'",
            ));
        };
        check_validator(validator)?;
        if validator.is_empty() {
            options.remove("validator");
        } else {
            options.insert("validator", validator.clone());
        }
    }
    if let Some(level) = changes.get("validationLevel") {
        parse_level(level)?;
        options.insert("validationLevel", level.clone());
    }
    if let Some(action) = changes.get("validationAction") {
        parse_action(action)?;
        options.insert("validationAction", action.clone());
    }
    if options.contains_key("validator") {
        if !options.contains_key("validationLevel") {
            options.insert("validationLevel", "strict");
        }
        if !options.contains_key("validationAction") {
            options.insert("validationAction", "error");
        }
    }
    Ok(())
}

fn check_validator(validator: &Document) -> Result<()> {
    fn walk(doc: &Document) -> Result<()> {
        for (key, value) in doc {
            if FORBIDDEN.contains(&key.as_str()) {
                return Err(MongoError::new(
                    ErrorCode::QueryFeatureNotAllowed,
                    format!("{key} is not allowed in collection validators"),
                ));
            }
            match value {
                Bson::Document(d) => walk(d)?,
                Bson::Array(items) => {
                    for item in items {
                        if let Bson::Document(d) = item {
                            walk(d)?;
                        }
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }
    walk(validator)?;
    Filter::parse(validator).map(|_| ())
}

fn enum_error(field: &str, value: &Bson) -> MongoError {
    match value {
        Bson::String(s) => MongoError::bad_value(format!(
            "Enumeration value '{s}' for field '{field}' is not a valid value."
        )),
        _ => MongoError::type_mismatch(format!(
            "BSON field '{field}' is the wrong type, expected type 'string'"
        )),
    }
}

fn parse_level(value: &Bson) -> Result<Level> {
    match value.as_str() {
        Some("off") => Ok(Level::Off),
        Some("strict") => Ok(Level::Strict),
        Some("moderate") => Ok(Level::Moderate),
        _ => Err(enum_error("validationLevel", value)),
    }
}

fn parse_action(value: &Bson) -> Result<Action> {
    match value.as_str() {
        Some("error") => Ok(Action::Error),
        Some("warn") => Ok(Action::Warn),
        _ => Err(enum_error("validationAction", value)),
    }
}

/// A collection's validator, ready to check documents.
pub struct DocumentValidator {
    ns: String,
    filter: Filter,
    level: Level,
    action: Action,
}

impl DocumentValidator {
    /// The validator of `coll`, unless it has none, validation is off, or the command bypasses
    /// it.
    pub fn for_collection(
        db: &str,
        coll: &CollectionMeta,
        bypass: bool,
    ) -> Result<Option<DocumentValidator>> {
        let Some(Bson::Document(validator)) = coll.options.get("validator") else {
            return Ok(None);
        };
        let level = match coll.options.get("validationLevel") {
            Some(level) => parse_level(level)?,
            None => Level::Strict,
        };
        if bypass || level == Level::Off {
            return Ok(None);
        }
        let action = match coll.options.get("validationAction") {
            Some(action) => parse_action(action)?,
            None => Action::Error,
        };
        Ok(Some(DocumentValidator {
            ns: format!("{db}.{}", coll.name),
            filter: Filter::parse(validator)?,
            level,
            action,
        }))
    }

    /// Checks a new document (`before`: the document it replaces, for updates).
    pub fn check(&self, doc: &Document, before: Option<&Document>) -> Result<()> {
        if self.filter.matches(doc) {
            return Ok(());
        }
        // Moderate: documents that were already invalid may stay so.
        if self.level == Level::Moderate && before.is_some_and(|b| !self.filter.matches(b)) {
            return Ok(());
        }
        let id = doc.get("_id").cloned().unwrap_or(Bson::Null);
        if self.action == Action::Warn {
            tracing::warn!(ns = %self.ns, id = %id, "Document would fail validation");
            return Ok(());
        }
        Err(MongoError::new(
            ErrorCode::DocumentValidationFailure,
            "Document failed validation",
        )
        .with_extra(doc! {"errInfo": {"failingDocumentId": id}}))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(options: Document) -> CollectionMeta {
        CollectionMeta {
            name: "c".into(),
            ident: 1,
            uuid: uuid::Uuid::nil(),
            options,
            indexes: Vec::new(),
        }
    }

    #[test]
    fn options_are_checked_and_completed() {
        let mut options = Document::new();
        apply_options(&mut options, &doc! {"validator": {"a": {"$gt": 1}}}).unwrap();
        assert_eq!(
            options,
            doc! {"validator": {"a": {"$gt": 1}}, "validationLevel": "strict", "validationAction": "error"}
        );
        let bad = apply_options(&mut options, &doc! {"validationLevel": "loose"}).unwrap_err();
        assert_eq!(bad.code(), ErrorCode::BadValue);
        let forbidden = apply_options(&mut options, &doc! {"validator": {"$where": "x"}});
        assert_eq!(
            forbidden.unwrap_err().code(),
            ErrorCode::QueryFeatureNotAllowed
        );
        let unknown = apply_options(&mut options, &doc! {"validator": {"a": {"$nope": 1}}});
        assert_eq!(unknown.unwrap_err().code(), ErrorCode::BadValue);
    }

    #[test]
    fn levels_and_actions() {
        let strict = meta(doc! {"validator": {"a": {"$exists": true}}});
        let v = DocumentValidator::for_collection("db", &strict, false)
            .unwrap()
            .unwrap();
        assert!(v.check(&doc! {"_id": 1, "a": 1}, None).is_ok());
        let err = v.check(&doc! {"_id": 2}, None).unwrap_err();
        assert_eq!(err.code(), ErrorCode::DocumentValidationFailure);
        assert!(
            DocumentValidator::for_collection("db", &strict, true)
                .unwrap()
                .is_none()
        );

        let moderate =
            meta(doc! {"validator": {"a": {"$exists": true}}, "validationLevel": "moderate"});
        let v = DocumentValidator::for_collection("db", &moderate, false)
            .unwrap()
            .unwrap();
        assert!(v.check(&doc! {"_id": 1}, Some(&doc! {"_id": 1})).is_ok());
        assert!(
            v.check(&doc! {"_id": 1}, Some(&doc! {"_id": 1, "a": 1}))
                .is_err()
        );

        let warn = meta(doc! {"validator": {"a": 1}, "validationAction": "warn"});
        let v = DocumentValidator::for_collection("db", &warn, false)
            .unwrap()
            .unwrap();
        assert!(v.check(&doc! {"_id": 1}, None).is_ok());
    }
}
