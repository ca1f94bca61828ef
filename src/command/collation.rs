//! The `collation` argument: parsed and validated with MongoDB's errors
//! (`document::collation`) into the collation a command compares strings by.

use crate::document::collation::Collation;
use crate::error::{ErrorCode, MongoError, Result};
use bson::Bson;
use std::sync::Arc;

/// The collation a command (or one statement of it) asks for: `None` when absent (the
/// collection's default applies), the simple one for `{locale: "simple"}`; MongoDB's error for
/// a malformed one.
pub fn parse_collation(value: Option<&Bson>) -> Result<Option<Arc<Collation>>> {
    match value {
        None | Some(Bson::Null) => Ok(None),
        Some(Bson::Document(spec)) => Ok(Some(Arc::new(Collation::parse(spec)?))),
        Some(_) => Err(MongoError::type_mismatch(
            "BSON field 'collation' is the wrong type, expected type 'object'",
        )),
    }
}

/// Validates a `collation` argument where only the simple collation is applied yet (index
/// and collection defaults): a valid non-simple one is NotImplemented rather than ignored,
/// which would silently give other answers than MongoDB.
pub fn check_collation(value: Option<&Bson>) -> Result<()> {
    match parse_collation(value)? {
        Some(collation) if !collation.is_simple() => Err(MongoError::new(
            ErrorCode::NotImplemented,
            "only the simple collation is supported for indexes and collection defaults",
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{Bson, doc};

    #[test]
    fn parsed_with_mongodb_errors() {
        assert!(parse_collation(None).unwrap().is_none());
        let simple = Bson::Document(doc! {"locale": "simple"});
        assert!(parse_collation(Some(&simple)).unwrap().unwrap().is_simple());
        let fr = Bson::Document(doc! {"locale": "fr", "strength": 2});
        assert!(!parse_collation(Some(&fr)).unwrap().unwrap().is_simple());
        assert_eq!(
            check_collation(Some(&fr)).unwrap_err().code(),
            ErrorCode::NotImplemented
        );
        assert_eq!(
            check_collation(Some(&Bson::Int32(1))).unwrap_err().code(),
            ErrorCode::TypeMismatch
        );
        let bad = Bson::Document(doc! {"locale": "en", "strength": 9});
        assert_eq!(
            check_collation(Some(&bad)).unwrap_err().code().code(),
            51024
        );
        let unknown = Bson::Document(doc! {"locale": "fr", "bogus": true});
        assert_eq!(
            check_collation(Some(&unknown)).unwrap_err().code(),
            ErrorCode::IDLUnknownField
        );
    }
}
