//! The `collation` argument. Only the simple collation (binary comparison of strings) exists
//! here; any other answers NotImplemented rather than being ignored, since ignoring it would
//! silently give different answers than MongoDB.

use crate::error::{ErrorCode, MongoError, Result};
use bson::Bson;

/// Accepts an absent collation or `{locale: "simple"}`.
pub fn check_collation(value: Option<&Bson>) -> Result<()> {
    match value {
        None | Some(Bson::Null) => Ok(()),
        Some(Bson::Document(collation)) => match collation.get("locale") {
            Some(Bson::String(locale)) if locale == "simple" => Ok(()),
            Some(Bson::String(_)) => Err(MongoError::new(
                ErrorCode::NotImplemented,
                "only the simple collation is supported",
            )),
            Some(_) => Err(MongoError::type_mismatch(
                "BSON field 'locale' is the wrong type, expected type 'string'",
            )),
            None => Err(MongoError::new(
                ErrorCode::IDLFailedToParse,
                "BSON field 'locale' is missing but a required field",
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
    }
}
