//! Catalog changes `collMod` makes: a collection's options (validation) and an index's
//! specification (TTL, hidden), persisted and then published to the in-memory catalog.

use super::database::{DatabaseStore, begin_catalog_txn};
use super::sql_error;
use crate::datanode::index::IndexSpec;
use crate::error::{ErrorCode, MongoError, Result};
use bson::Document;
use std::sync::Arc;

impl DatabaseStore {
    /// Replaces a collection's options.
    pub async fn set_collection_options(&self, collection: &str, options: Document) -> Result<()> {
        let mut writer = self.writer.lock().await;
        let coll = self.collection(collection).ok_or_else(|| {
            MongoError::namespace_not_found(format!(
                "ns does not exist: {}.{collection}",
                self.name()
            ))
        })?;
        let bytes = bson::to_vec(&options)?;
        let saved = async {
            let mut txn = begin_catalog_txn(&mut writer).await?;
            sqlx::query("UPDATE docgrid_collections SET options = ? WHERE ident = ?")
                .bind(bytes)
                .bind(coll.ident)
                .execute(&mut *txn)
                .await?;
            txn.commit().await
        };
        saved
            .await
            .map_err(|e| sql_error("changing collection options", e))?;
        self.update_collection(coll.ident, |c| c.options = options);
        Ok(())
    }

    /// Replaces the specification of a secondary index (options that do not change its keys).
    pub async fn set_index_spec(
        &self,
        collection: &str,
        index: &str,
        spec: Document,
    ) -> Result<()> {
        let parsed = Arc::new(IndexSpec::from_catalog(&spec)?);
        let mut writer = self.writer.lock().await;
        let coll = self.collection(collection).ok_or_else(|| {
            MongoError::namespace_not_found(format!(
                "ns does not exist: {}.{collection}",
                self.name()
            ))
        })?;
        let meta = coll
            .indexes
            .iter()
            .find(|i| i.name == index && i.parsed.is_some())
            .ok_or_else(|| {
                MongoError::new(
                    ErrorCode::IndexNotFound,
                    format!(
                        "cannot find index {index} for ns {}.{collection}",
                        self.name()
                    ),
                )
            })?;
        let ident = meta.ident;
        let bytes = bson::to_vec(&spec)?;
        let saved = async {
            let mut txn = begin_catalog_txn(&mut writer).await?;
            sqlx::query("UPDATE docgrid_indexes SET spec = ? WHERE ident = ?")
                .bind(bytes)
                .bind(ident)
                .execute(&mut *txn)
                .await?;
            txn.commit().await
        };
        saved.await.map_err(|e| sql_error("changing an index", e))?;
        self.update_collection(coll.ident, |c| {
            if let Some(i) = c.indexes.iter_mut().find(|i| i.ident == ident) {
                i.spec = spec;
                i.parsed = Some(parsed);
            }
        });
        Ok(())
    }
}
