//! The `collation` argument: parsed and validated with MongoDB's errors (`query::collation`);
//! only the simple collation (binary comparison of strings) is applied yet, any other answers
//! NotImplemented rather than being ignored, since ignoring it would silently give different
//! answers than MongoDB.

use crate::error::{ErrorCode, MongoError, Result};
use crate::query::collation::Collation;
use bson::Bson;

/// Accepts an absent collation or a valid `{locale: "simple"}`; refuses a malformed one with
/// MongoDB's error and a valid non-simple one with NotImplemented.
pub fn check_collation(value: Option<&Bson>) -> Result<()> {
    match value {
        None | Some(Bson::Null) => Ok(()),
        // Parsed and validated as MongoDB does (`query::collation`), then refused until
        // comparisons apply it.
        Some(Bson::Document(spec)) => match Collation::parse(spec)? {
            Collation::Simple => Ok(()),
            Collation::Icu(_) => Err(MongoError::new(
                ErrorCode::NotImplemented,
                "only the simple collation is supported",
            )),
        },
        Some(_) => Err(MongoError::type_mismatch(
            "BSON field 'collation' is the wrong type, expected type 'object'",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{Bson, doc};

    #[test]
    fn only_simple_passes() {
        assert!(check_collation(None).is_ok());
        assert!(check_collation(Some(&Bson::Document(doc! {"locale": "simple"}))).is_ok());
        let fr = Bson::Document(doc! {"locale": "fr", "strength": 2});
        assert_eq!(
            check_collation(Some(&fr)).unwrap_err().code(),
            ErrorCode::NotImplemented
        );
        assert_eq!(
            check_collation(Some(&Bson::Int32(1))).unwrap_err().code(),
            ErrorCode::TypeMismatch
        );
        // Validated before anything else: MongoDB's errors for a malformed collation.
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
