//! The client metadata a connection's first `hello` carries (`client`), validated as MongoDB
//! validates it: bounded in size (it is kept for the connection's life and shown by
//! `$currentOp`), with the `driver` and `os` documents drivers must send.

use crate::error::{ErrorCode, MongoError, Result};
use bson::{RawBsonRef, RawDocument};

/// MongoDB's limit on a mongod, and on a mongos (which adds its own `mongos` sub-document).
const MAX_MONGOD_BYTES: usize = 512;
const MAX_MONGOS_BYTES: usize = 1024;
/// `application.name` limit.
const MAX_APPLICATION_NAME_BYTES: usize = 128;

/// Checks `client` as MongoDB's `ClientMetadata` does; `router` selects mongos's size limit.
pub fn validate(client: &RawDocument, router: bool) -> Result<()> {
    let max = if router {
        MAX_MONGOS_BYTES
    } else {
        MAX_MONGOD_BYTES
    };
    if client.as_bytes().len() > max {
        return Err(MongoError::new(
            ErrorCode::ClientMetadataDocumentTooLarge,
            format!("The client metadata document must be less then or equal to {max} bytes"),
        ));
    }
    let (mut driver, mut os) = (false, false);
    for element in client.iter() {
        let (name, value) = element?;
        match name {
            "application" => {
                let app = sub_document(name, value)?;
                if let Some(app_name) = app.get("name")? {
                    let RawBsonRef::String(app_name) = app_name else {
                        return Err(must_be_string("application.name"));
                    };
                    if app_name.len() > MAX_APPLICATION_NAME_BYTES {
                        return Err(MongoError::new(
                            ErrorCode::ClientMetadataAppNameTooLarge,
                            format!(
                                "The 'application.name' field must be less then or equal to {MAX_APPLICATION_NAME_BYTES} bytes in the client metadata document"
                            ),
                        ));
                    }
                }
            }
            "driver" => {
                let doc = sub_document(name, value)?;
                required_string(doc, "driver", "name")?;
                required_string(doc, "driver", "version")?;
                driver = true;
            }
            "os" => {
                required_string(sub_document(name, value)?, "os", "type")?;
                os = true;
            }
            // Other fields are allowed and kept as they are.
            _ => {}
        }
    }
    for (found, field) in [(driver, "driver"), (os, "os")] {
        if !found {
            return Err(MongoError::new(
                ErrorCode::ClientMetadataMissingField,
                format!("Missing required sub-document '{field}' in the client metadata document"),
            ));
        }
    }
    Ok(())
}

fn sub_document<'a>(name: &str, value: RawBsonRef<'a>) -> Result<&'a RawDocument> {
    match value {
        RawBsonRef::Document(doc) => Ok(doc),
        _ => Err(MongoError::type_mismatch(format!(
            "The '{name}' field is required to be a BSON document in the client metadata document"
        ))),
    }
}

fn required_string(doc: &RawDocument, parent: &str, field: &str) -> Result<()> {
    match doc.get(field)? {
        Some(RawBsonRef::String(_)) => Ok(()),
        Some(_) => Err(must_be_string(&format!("{parent}.{field}"))),
        None => Err(MongoError::new(
            ErrorCode::ClientMetadataMissingField,
            format!("Missing required field '{parent}.{field}' in the client metadata document"),
        )),
    }
}

fn must_be_string(field: &str) -> MongoError {
    MongoError::type_mismatch(format!(
        "The '{field}' field must be a string in the client metadata document"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::rawdoc;

    fn code(client: bson::RawDocumentBuf, router: bool) -> Option<i32> {
        validate(&client, router).err().map(|e| e.code().code())
    }

    #[test]
    fn drivers_metadata_passes_and_bad_metadata_gets_mongodbs_errors() {
        let good = rawdoc! {
            "application": {"name": "app"},
            "driver": {"name": "nodejs|mongosh", "version": "6.0"},
            "os": {"type": "Linux", "name": "linux"},
            "platform": "Node.js v20",
        };
        assert_eq!(code(good, false), None);
        assert_eq!(
            code(rawdoc! {"driver": {"name": "d", "version": "1"}}, false),
            Some(183)
        );
        assert_eq!(
            code(
                rawdoc! {"driver": {"name": "d"}, "os": {"type": "x"}},
                false
            ),
            Some(183)
        );
        assert_eq!(
            code(
                rawdoc! {"driver": {"name": 1, "version": "1"}, "os": {"type": "x"}},
                false
            ),
            Some(14)
        );
        let long_name = "x".repeat(129);
        assert_eq!(
            code(
                rawdoc! {"application": {"name": long_name}, "driver": {"name": "d", "version": "1"}, "os": {"type": "x"}},
                false
            ),
            Some(184)
        );
        let padded = rawdoc! {"driver": {"name": "d", "version": "1"}, "os": {"type": "x"}, "pad": "y".repeat(600)};
        assert_eq!(code(padded.clone(), false), Some(185));
        assert_eq!(code(padded, true), None);
        let deep = {
            let mut value = rawdoc! {"a": 1};
            for _ in 0..150 {
                value = rawdoc! {"a": value};
            }
            rawdoc! {"driver": {"name": "d", "version": "1"}, "os": {"type": "x"}, "deep": value}
        };
        assert_eq!(code(deep, true), Some(185));
    }
}
