//! `$planCacheStats`: the entries of the collection's plan cache. docgrid plans every query
//! afresh (`exec::plan` keeps nothing between queries), so every collection's plan cache is
//! empty and the stage yields no documents — what MongoDB yields for an empty cache.

use super::super::super::DataNode;
use crate::document::types::type_name;
use crate::error::{MongoError, Result};
use bson::{Bson, Document};

pub(super) async fn documents<S: DataNode>(
    state: &S,
    db: &str,
    coll: &str,
    spec: &Bson,
) -> Result<Vec<Document>> {
    let Bson::Document(options) = spec else {
        return Err(MongoError::failed_to_parse(format!(
            "$planCacheStats value must be an object. Found: {}",
            type_name(spec)
        )));
    };
    for (name, value) in options {
        match (name.as_str(), value) {
            // Which hosts a router asks: every docgrid shard is one host.
            ("allHosts", Bson::Boolean(_)) => {}
            ("allHosts", other) => {
                return Err(MongoError::type_mismatch(format!(
                    "BSON field '$planCacheStats.allHosts' is the wrong type '{}', expected type 'bool'",
                    type_name(other)
                )));
            }
            (other, _) => {
                return Err(MongoError::location(
                    40415,
                    format!("BSON field '$planCacheStats.{other}' is an unknown field."),
                ));
            }
        }
    }
    if state.storage().collection(db, coll).await.is_none() {
        return Err(MongoError::location(
            50933,
            format!("collection '{db}.{coll}' does not exist"),
        ));
    }
    Ok(Vec::new())
}
