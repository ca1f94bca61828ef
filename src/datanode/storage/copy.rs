//! Renaming a collection into another database: the two databases are two SQLite files, so
//! the collection is copied (options, indexes, documents) into a temporary collection of the
//! target database, which then takes the target's name, and the source is dropped — the
//! steps MongoDB takes too. A crash part-way leaves at most a temporary collection, dropped
//! when the node starts again (its name is reserved: users cannot write `system.*` names).

use super::{DatabaseStore, DocumentReads, Storage};
use crate::error::{ErrorCode, MongoError, Result};

/// The prefix of the temporary collections a cross-database rename copies into.
const TEMP_PREFIX: &str = "system.docgrid_rename.";
/// Documents per storage read and write while copying.
const BATCH: i64 = 1_000;

impl Storage {
    /// Renames `from_db.from` to `to_db.to` across databases (creating `to_db`), replacing an
    /// existing target when `drop_target` is set.
    pub async fn rename_across_databases(
        &self,
        (from_db, from): (&str, &str),
        (to_db, to): (&str, &str),
        drop_target: bool,
    ) -> Result<()> {
        let source_db = self.database(from_db).await;
        let Some((source_db, source)) = source_db.and_then(|db| {
            let coll = db.collection(from)?;
            Some((db, coll))
        }) else {
            return Err(MongoError::namespace_not_found(format!(
                "Source collection {from_db}.{from} does not exist"
            )));
        };
        let target_db = self.database_or_create(to_db).await?;
        if target_db.collection(to).is_some() && !drop_target {
            return Err(MongoError::new(
                ErrorCode::NamespaceExists,
                "target namespace exists",
            ));
        }
        let temp = format!("{TEMP_PREFIX}{}", uuid::Uuid::new_v4().simple());
        let copied = copy_collection(&source_db, from, &target_db, &temp).await;
        if let Err(e) = copied {
            let _ = target_db.drop_collection(&temp).await;
            return Err(e);
        }
        target_db.rename_collection(&temp, to, true).await?;
        source_db.drop_collection(&source.name).await?;
        Ok(())
    }

    /// Drops the temporary collections a crash left: those of cross-database renames and of
    /// `$out` stages.
    pub(super) async fn drop_rename_leftovers(&self) -> Result<()> {
        let dbs: Vec<_> = self.dbs.read().await.values().cloned().collect();
        for db in dbs {
            for coll in db.collections() {
                let temporary = coll.name.starts_with(TEMP_PREFIX)
                    || coll
                        .name
                        .starts_with(crate::aggregate::foreign::OUT_TEMP_PREFIX);
                if temporary {
                    tracing::info!(db = %db.name(), collection = %coll.name, "dropping the leftover of an interrupted rename or $out");
                    db.drop_collection(&coll.name).await?;
                }
            }
        }
        Ok(())
    }
}

/// Creates `to.name` with the options and indexes of `from.coll` (empty, so its indexes are
/// built as the documents arrive) and copies every document into it.
async fn copy_collection(
    from: &DatabaseStore,
    coll: &str,
    to: &DatabaseStore,
    name: &str,
) -> Result<()> {
    let source = from
        .collection(coll)
        .ok_or_else(|| MongoError::namespace_not_found(format!("{coll} disappeared")))?;
    let target = to.create_collection(name, source.options.clone()).await?;
    for index in source.indexes.iter().filter_map(|i| i.parsed.as_deref()) {
        to.create_index(name, index.clone()).await?;
    }
    let mut after = 0;
    loop {
        let batch = from.read().await?.scan(&source, after, BATCH).await?;
        let Some((last, _)) = batch.last() else {
            return Ok(());
        };
        after = *last;
        let docs: Vec<_> = batch.iter().map(|(_, doc)| doc.as_ref()).collect();
        let mut txn = to.write().await?;
        txn.insert(&target, &docs).await.map_err(|(_, e)| e)?;
        txn.commit().await?;
    }
}
