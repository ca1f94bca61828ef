//! The shard identity (its name, the cluster id, where the config server is), persisted like
//! MongoDB's `admin.system.version {_id: "shardIdentity"}` document.

use crate::datanode::storage::DocumentReads;
use crate::datanode::storage::Storage;
use crate::error::{MongoError, Result};
use bson::{Bson, Document, doc, oid::ObjectId};

const ADMIN: &str = "admin";
const VERSION_COLLECTION: &str = "system.version";
const ID: &str = "shardIdentity";

#[derive(Clone, Debug, PartialEq)]
pub struct ShardIdentity {
    pub shard_name: String,
    pub cluster_id: ObjectId,
    pub config_host: String,
}

impl ShardIdentity {
    pub fn to_document(&self) -> Document {
        doc! {
            "_id": ID,
            "shardName": &self.shard_name,
            "clusterId": self.cluster_id,
            "configsvrConnectionString": &self.config_host,
        }
    }

    pub fn from_document(doc: &Document) -> Result<Self> {
        let bad = || MongoError::failed_to_parse(format!("invalid shardIdentity document: {doc}"));
        Ok(ShardIdentity {
            shard_name: doc.get_str("shardName").map_err(|_| bad())?.to_string(),
            cluster_id: doc.get_object_id("clusterId").map_err(|_| bad())?,
            config_host: doc
                .get_str("configsvrConnectionString")
                .map_err(|_| bad())?
                .to_string(),
        })
    }
}

pub(super) async fn load(storage: &Storage) -> Result<Option<ShardIdentity>> {
    let Some(db) = storage.database(ADMIN).await else {
        return Ok(None);
    };
    let Some(coll) = db.collection(VERSION_COLLECTION) else {
        return Ok(None);
    };
    let mut read = db.read().await?;
    match read.fetch_by_id(&coll, &Bson::String(ID.into())).await? {
        Some((_, raw)) => Ok(Some(ShardIdentity::from_document(&raw.to_document()?)?)),
        None => Ok(None),
    }
}

/// Persists the identity (durably: it names the shard for the rest of its life).
pub(super) async fn store(storage: &Storage, identity: &ShardIdentity) -> Result<()> {
    let id = Bson::String(ID.into());
    let document = identity.to_document();
    storage
        .put_document(ADMIN, VERSION_COLLECTION, &id, Some(&document), true)
        .await
}
