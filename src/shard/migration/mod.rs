//! Chunk migrations on a shard, as the design's live migration protocol runs them: the donor
//! (`donor`: MongoDB's MigrationSourceManager and MigrationCoordinator) serves the range's
//! documents and the writes made since (`source`: the chunk cloner), the recipient (`recipient`:
//! the MigrationDestinationManager) pulls them, and the range deleter (`range_deleter`) removes
//! the copies a shard no longer owns. `Migrations` is the ActiveMigrationsRegistry: one
//! migration at a time per shard, as donor or recipient.
//!
//! Both sides persist what recovery needs on the shard's own `config` database:
//! `config.migrationCoordinators` (the donor's migration and, once known, its decision) and
//! `config.rangeDeletions` (each side's range to delete, pending until the outcome is known).

pub(super) mod coordinator;
pub(super) mod donor;
pub(super) mod range_choice;
pub(super) mod range_deleter;
pub(super) mod recipient;
pub(super) mod sessions;
pub(super) mod source;

use crate::catalog::ShardKeyPattern;
use crate::datanode::storage::{CollectionMeta, DatabaseStore, IndexMeta, IndexRange};
use crate::document::display::render_doc;
use crate::error::{ErrorCode, MongoError, Result};
use bson::{Bson, Document, RawDocument, doc};
use std::sync::{Arc, Mutex};

/// Where both sides persist their migration state (the shard's own `config` database).
pub(super) const CONFIG_DB: &str = "config";
pub(super) const COORDINATORS: &str = "migrationCoordinators";
pub(super) const RANGE_DELETIONS: &str = "rangeDeletions";

/// A range of a sharded collection: `[min, max)` of its shard key.
#[derive(Clone, Debug)]
pub(crate) struct KeyRange {
    pub ns: String,
    pub key: ShardKeyPattern,
    pub min: Document,
    pub max: Document,
    min_key: Vec<u8>,
    max_key: Vec<u8>,
}

impl KeyRange {
    pub fn new(ns: &str, key: ShardKeyPattern, min: Document, max: Document) -> KeyRange {
        let (min_key, max_key) = (key.encode(&min), key.encode(&max));
        KeyRange {
            ns: ns.to_string(),
            key,
            min,
            max,
            min_key,
            max_key,
        }
    }

    pub fn min_key(&self) -> &[u8] {
        &self.min_key
    }

    pub fn max_key(&self) -> &[u8] {
        &self.max_key
    }

    pub fn contains_key(&self, encoded: &[u8]) -> bool {
        self.min_key.as_slice() <= encoded && encoded < self.max_key.as_slice()
    }

    /// Whether `doc`'s shard key lies in the range (a document without an extractable key,
    /// written directly to a shard, lies in no range).
    pub fn contains(&self, doc: &RawDocument) -> bool {
        let Ok(doc) = Document::try_from(doc) else {
            return false;
        };
        self.key
            .extract(&doc)
            .is_ok_and(|key| self.contains_key(&self.key.encode(&key)))
    }

    pub fn overlaps(&self, other: &KeyRange) -> bool {
        self.min_key < other.max_key && other.min_key < self.max_key
    }

    /// `{min, max}`, as `config.rangeDeletions` and the migration commands carry a range.
    pub fn bounds(&self) -> Document {
        doc! {"min": self.min.clone(), "max": self.max.clone()}
    }

    /// The entries of the range in `index` (one that serves the shard key), `limit` at a time.
    pub fn scan<'a>(&'a self, index: &'a IndexMeta, limit: i64) -> IndexRange<'a> {
        IndexRange {
            index,
            low: &self.min_key,
            high: Some(&self.max_key),
            resume: None,
            reverse: false,
            limit,
        }
    }

    pub fn display(&self) -> String {
        format!("[{}, {})", render_doc(&self.min), render_doc(&self.max))
    }
}

/// A migration id as `config.rangeDeletions` and `config.migrationCoordinators` key it.
pub(super) fn uuid_bson(id: &uuid::Uuid) -> Bson {
    Bson::Binary(bson::Binary {
        subtype: bson::spec::BinarySubtype::Uuid,
        bytes: id.as_bytes().to_vec(),
    })
}

impl crate::shard::ShardState {
    /// The database, collection and shard key index a range of this shard is read through;
    /// None when the collection or such an index is not here.
    pub(super) async fn range_reader(
        &self,
        range: &KeyRange,
    ) -> Option<(Arc<DatabaseStore>, Arc<CollectionMeta>, IndexMeta)> {
        let (db, coll) = range.ns.split_once('.')?;
        let (database, coll) = self.storage.collection(db, coll).await?;
        let name = crate::shard::shard_key_index::serving_index(&coll, &range.key)?;
        let index = coll.indexes.iter().find(|i| i.name == name)?.clone();
        Some((database, coll, index))
    }
}

/// What this shard is doing in the one migration it may run.
#[derive(Clone, Debug)]
pub(super) struct ActiveMigration {
    pub donating: bool,
    pub range: KeyRange,
    /// The other shard: the recipient of a donation, the donor of a receipt.
    pub other: String,
}

/// The ActiveMigrationsRegistry.
#[derive(Default)]
pub(crate) struct Migrations {
    active: Mutex<Option<ActiveMigration>>,
    pub(super) source: Mutex<Option<Arc<source::Source>>>,
    pub(super) receipt: Mutex<Option<Arc<recipient::Receipt>>>,
    pub(super) range_deleter: range_deleter::RangeDeleter,
}

/// A registered migration; dropping it lets the next one register.
pub(super) struct Registration<'a> {
    migrations: &'a Migrations,
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        *self.migrations.active.lock().expect("poisoned") = None;
    }
}

impl Migrations {
    /// Registers a migration; ConflictingOperationInProgress while another one runs.
    pub(super) fn register(&self, migration: ActiveMigration) -> Result<Registration<'_>> {
        let mut active = self.active.lock().expect("poisoned");
        if let Some(running) = active.as_ref() {
            let what = if running.donating {
                format!(
                    "this shard is currently donating range {} for namespace {} to {}",
                    running.range.display(),
                    running.range.ns,
                    running.other
                )
            } else {
                format!(
                    "this shard is currently receiving range {} for namespace {} from {}",
                    running.range.display(),
                    running.range.ns,
                    running.other
                )
            };
            return Err(MongoError::new(
                ErrorCode::ConflictingOperationInProgress,
                format!("Unable to start new migration because {what}"),
            ));
        }
        *active = Some(migration);
        Ok(Registration { migrations: self })
    }

    /// The migration running, if any.
    pub(super) fn active(&self) -> Option<ActiveMigration> {
        self.active.lock().expect("poisoned").clone()
    }

    /// The running migration as `$currentOp` lists it (MongoDB shows the donor's moveRange
    /// and the recipient's "migrateThread").
    pub(super) fn operations(&self, shard: &str) -> Vec<Document> {
        let Some(active) = self.active() else {
            return Vec::new();
        };
        let migration = if active.donating {
            let source = self.source.lock().expect("poisoned").clone();
            match source {
                Some(source) => source.report(&active.other),
                None => doc! {"role": "donor", "to": &active.other, "phase": "start"},
            }
        } else {
            let receipt = self.receipt.lock().expect("poisoned").clone();
            match receipt {
                Some(receipt) => {
                    let mut status = receipt.status();
                    status.insert("role", "recipient");
                    status
                }
                None => doc! {"role": "recipient", "from": &active.other},
            }
        };
        vec![doc! {
            "type": "op",
            "desc": if active.donating { "MoveChunk" } else { "migrateThread" },
            "active": true,
            "op": "command",
            "ns": &active.range.ns,
            "shard": shard,
            "migration": migration,
        }]
    }

    /// Ends a registration a recipient's task kept ([`Registration::detach`]).
    pub(super) fn unregister(&self) {
        *self.active.lock().expect("poisoned") = None;
    }
}

impl Registration<'_> {
    /// Keeps the registration past this guard: the recipient's task, which outlives the
    /// request that registered it, ends it with [`Migrations::unregister`].
    pub(super) fn detach(self) {
        std::mem::forget(self);
    }
}
