//! The TTL monitor: every `ttlMonitorSleepSecs` (60 s, as MongoDB) it deletes the documents
//! whose TTL-indexed date (the earliest, for an array of dates) is older than the index's
//! `expireAfterSeconds`. Deletions go through the TTL index in batches of their own
//! transactions, so writers are never held up for long.

use super::DataNode;
use super::exec::{Position, QueryShape};
use super::storage::{CollectionMeta, DatabaseStore, IndexMeta};
use crate::error::Result;
use crate::query::filter::Filter;
use crate::server::asserts::contained;
use crate::server::stats::Stats;
use bson::{Bson, DateTime, Document, doc};
use std::sync::{Arc, Weak};
use std::time::Duration;

/// Documents deleted per transaction.
const BATCH: usize = 1000;

/// Starts the monitor; it stops when the node goes away.
pub fn spawn_ttl_monitor<S: DataNode>(state: Weak<S>) {
    tokio::spawn(async move {
        loop {
            let period = match state.upgrade() {
                Some(s) => s
                    .node()
                    .params
                    .get_i64("ttlMonitorSleepSecs")
                    .unwrap_or(60)
                    .max(1),
                None => break,
            };
            tokio::time::sleep(Duration::from_secs(period as u64)).await;
            let Some(state) = state.upgrade() else { break };
            if !state.node().params.get_bool("ttlMonitorEnabled") {
                continue;
            }
            match contained("TTL monitor", run_pass(&*state, DateTime::now())).await {
                Some(Ok(0)) | None => {}
                Some(Ok(deleted)) => {
                    tracing::info!(deleted, "TTL monitor deleted expired documents")
                }
                Some(Err(e)) => tracing::warn!(error = %e, "TTL pass failed"),
            }
        }
    });
}

/// One pass over every TTL index as of `now`; returns the number of documents deleted.
pub async fn run_pass<S: DataNode>(state: &S, now: DateTime) -> Result<u64> {
    let storage = state.storage();
    let mut deleted = 0;
    for name in storage.database_names().await {
        let Some(db) = storage.database(&name).await else {
            continue;
        };
        for coll in db.collections() {
            for index in coll.indexes.iter().filter(|i| i.ready) {
                let Some(seconds) = expire_after(index) else {
                    continue;
                };
                match expire(&db, &coll, index, seconds, now).await {
                    Ok(n) => deleted += n,
                    // A collection dropped or changed mid-pass: the next pass sees the new state.
                    Err(e) => tracing::debug!(
                        ns = %format!("{name}.{}", coll.name), index = %index.name, error = %e,
                        "TTL deletion skipped"
                    ),
                }
            }
        }
    }
    let stats = &state.node().stats;
    Stats::add(&stats.ttl_passes, 1);
    Stats::add(&stats.ttl_deleted_documents, deleted as i64);
    Ok(deleted)
}

/// `expireAfterSeconds` of a TTL index: single-field, not hashed.
fn expire_after(index: &IndexMeta) -> Option<i64> {
    let spec = index.parsed.as_ref()?;
    let seconds = spec.expire_after_seconds?;
    (spec.fields.len() == 1 && spec.fields[0].kind != crate::datanode::index::FieldKind::Hashed)
        .then_some(seconds)
}

async fn expire(
    db: &Arc<DatabaseStore>,
    coll: &CollectionMeta,
    index: &IndexMeta,
    seconds: i64,
    now: DateTime,
) -> Result<u64> {
    let spec = index.parsed.as_ref().expect("TTL indexes are parsed");
    let cutoff = now
        .timestamp_millis()
        .saturating_sub(seconds.saturating_mul(1000));
    // `$lt` on a date only matches dates (type bracketing), and on an array matches when any
    // element, hence the earliest date, is older: MongoDB's TTL rule.
    let mut filter: Document =
        doc! {spec.fields[0].path.clone(): {"$lt": DateTime::from_millis(cutoff)}};
    if let Some((partial, _)) = &spec.partial_filter {
        filter = doc! {"$and": [filter, partial.clone()]};
    }
    let matcher = Filter::parse(&filter)?;
    let hint = Bson::String(index.name.clone());
    let mut total = 0;
    loop {
        let mut txn = db.write().await?;
        let mut position = Position::plan(
            coll,
            &QueryShape {
                hint: Some(&hint),
                ..QueryShape::filter(&filter)
            },
        )?;
        let mut deleted = 0;
        'batch: while !position.done() {
            for candidate in position.next_matches(&mut txn, coll, &matcher).await? {
                txn.delete(coll, candidate.rid, &candidate.raw).await?;
                deleted += 1;
                if deleted >= BATCH {
                    break 'batch;
                }
            }
        }
        txn.commit().await?;
        total += deleted as u64;
        if deleted < BATCH {
            return Ok(total);
        }
    }
}
