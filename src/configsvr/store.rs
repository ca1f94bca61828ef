//! Typed reads and writes of the config database (`config.shards`, `config.databases`, ...)
//! on the config server's own storage. Only the config server writes routing metadata.

use crate::datanode::exec::Position;
use crate::datanode::storage::{DocumentReads, Storage};
use crate::error::{ErrorCode, MongoError, Result};
use crate::query::filter::Filter;
use bson::{Bson, Document, RawDocumentBuf};

pub const CONFIG_DB: &str = "config";

/// One write of a [`ConfigStore::write_batch`].
pub enum ConfigWrite {
    /// Inserts or replaces the document with this `_id` in the collection.
    Upsert(&'static str, Document),
    /// Deletes the document with this `_id` from the collection, if there is one.
    Delete(&'static str, Bson),
}

impl ConfigWrite {
    fn collection(&self) -> &'static str {
        match self {
            ConfigWrite::Upsert(c, _) | ConfigWrite::Delete(c, _) => c,
        }
    }
}

/// The config database of the config server (or its `admin` database, where users live).
pub struct ConfigStore<'a> {
    storage: &'a Storage,
    db: &'static str,
}

impl<'a> ConfigStore<'a> {
    pub fn new(storage: &'a Storage) -> Self {
        ConfigStore {
            storage,
            db: CONFIG_DB,
        }
    }

    /// The `admin` database: `admin.system.users`.
    pub fn admin(storage: &'a Storage) -> Self {
        ConfigStore {
            storage,
            db: "admin",
        }
    }

    /// Every document of `collection` matching `filter`.
    pub async fn find(&self, collection: &str, filter: &Document) -> Result<Vec<Document>> {
        let Some(db) = self.storage.database(self.db).await else {
            return Ok(Vec::new());
        };
        let Some(coll) = db.collection(collection) else {
            return Ok(Vec::new());
        };
        let filter_doc = filter;
        let filter = Filter::parse(filter)?;
        let mut read = db.read().await?;
        let mut position = Position::for_filter(&coll, filter_doc)?;
        let mut out = Vec::new();
        while !position.done() {
            out.extend(
                position
                    .next_matches(&mut read, &coll, &filter)
                    .await?
                    .into_iter()
                    .map(|c| c.doc),
            );
        }
        Ok(out)
    }

    pub async fn find_one(&self, collection: &str, filter: &Document) -> Result<Option<Document>> {
        Ok(self.find(collection, filter).await?.into_iter().next())
    }

    /// Inserts or replaces the document with `doc`'s `_id`, durably.
    pub async fn upsert(&self, collection: &str, doc: &Document) -> Result<()> {
        let id = doc
            .get("_id")
            .ok_or_else(|| MongoError::internal("config document without _id"))?;
        let db = self.storage.database_or_create(self.db).await?;
        let coll = db.ensure_collection(collection).await?;
        let raw = RawDocumentBuf::from_document(doc)?;
        let mut txn = db.write().await?;
        match txn.fetch_by_id(&coll, id).await? {
            Some((rid, old)) => txn.replace(&coll, rid, &old, &raw).await?,
            None => {
                txn.insert_one(&coll, &raw).await?;
            }
        }
        let seq = txn.commit().await?;
        db.wait_durable(seq).await
    }

    /// Applies several writes to config collections in one durable transaction, so that a
    /// metadata change (a split's chunks, a collection entry and its first chunk) is all or
    /// nothing.
    pub async fn write_batch(&self, writes: &[ConfigWrite]) -> Result<()> {
        let db = self.storage.database_or_create(self.db).await?;
        let mut colls = std::collections::HashMap::new();
        for write in writes {
            let name = write.collection();
            if !colls.contains_key(name) {
                colls.insert(name, db.ensure_collection(name).await?);
            }
        }
        let mut txn = db.write().await?;
        for write in writes {
            let coll = &colls[write.collection()];
            match write {
                ConfigWrite::Upsert(_, doc) => {
                    let id = doc
                        .get("_id")
                        .ok_or_else(|| MongoError::internal("config document without _id"))?;
                    let raw = RawDocumentBuf::from_document(doc)?;
                    match txn.fetch_by_id(coll, id).await? {
                        Some((rid, old)) => txn.replace(coll, rid, &old, &raw).await?,
                        None => {
                            txn.insert_one(coll, &raw).await?;
                        }
                    }
                }
                ConfigWrite::Delete(_, id) => {
                    if let Some((rid, old)) = txn.fetch_by_id(coll, id).await? {
                        txn.delete(coll, rid, &old).await?;
                    }
                }
            }
        }
        let seq = txn.commit().await?;
        db.wait_durable(seq).await
    }

    /// Inserts a document; DuplicateKey if its `_id` exists.
    pub async fn insert(&self, collection: &str, doc: &Document) -> Result<()> {
        let db = self.storage.database_or_create(self.db).await?;
        let coll = db.ensure_collection(collection).await?;
        let raw = RawDocumentBuf::from_document(doc)?;
        let mut txn = db.write().await?;
        txn.insert_one(&coll, &raw).await?;
        let seq = txn.commit().await?;
        db.wait_durable(seq).await
    }

    /// Deletes the document with this `_id`; returns whether it existed.
    pub async fn delete_by_id(&self, collection: &str, id: &Bson) -> Result<bool> {
        let Some(db) = self.storage.database(self.db).await else {
            return Ok(false);
        };
        let Some(coll) = db.collection(collection) else {
            return Ok(false);
        };
        let mut txn = db.write().await?;
        let found = txn.fetch_by_id(&coll, id).await?;
        if let Some((rid, old)) = &found {
            txn.delete(&coll, *rid, old).await?;
        }
        let seq = txn.commit().await?;
        db.wait_durable(seq).await?;
        Ok(found.is_some())
    }

    /// Creates the collection when missing.
    pub async fn ensure_collection(&self, collection: &str) -> Result<()> {
        let db = self.storage.database_or_create(self.db).await?;
        match db.ensure_collection(collection).await {
            Ok(_) => Ok(()),
            Err(e) if e.code() == ErrorCode::NamespaceExists => Ok(()),
            Err(e) => Err(e),
        }
    }
}
