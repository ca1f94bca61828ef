//! A data node's profiler: after each command (`NodeState::after_command`) the entry of an
//! operation its database profiles (`server::profiling`) goes to `<db>.system.profile`, a
//! capped collection of 1 MiB made on first need, with MongoDB's fields (`op`, `ns`, `command`,
//! `keysExamined`, `docsExamined`, the outcome's counts, `millis`, the plan's `execStats`, `ts`,
//! `client`, `user`...).

use super::DataNode;
use crate::error::{ErrorCode, MongoError, Result};
use crate::server::operations::Operation;
use bson::{Bson, Document, RawBsonRef, RawDocumentBuf, doc};
use futures::future::BoxFuture;
use std::sync::Arc;

/// The profile collection's name and size, as MongoDB makes it.
pub const PROFILE_COLLECTION: &str = "system.profile";
const PROFILE_SIZE: i64 = 1024 * 1024;

/// The write of `op`'s entry when its database profiles it; `None` otherwise.
pub fn record<'a, S: DataNode>(
    state: &'a S,
    op: &'a Operation,
    outcome: &'a Result<RawDocumentBuf>,
) -> Option<BoxFuture<'a, ()>> {
    let profiling = &state.node().profiling;
    let profile = profiling.database(op.database());
    if profile.level == 0 {
        return None;
    }
    let millis = op.millis();
    let entry = entry(op, outcome, millis);
    if !profiling.profiles(&profile, millis, &entry) {
        return None;
    }
    Some(Box::pin(async move {
        // As MongoDB's, a profile write that fails is logged, never the operation's failure.
        if let Err(e) = write(state, op.database(), &entry).await {
            tracing::warn!(ns = %entry.get_str("ns").unwrap_or(""), error = %e, "profile write failed");
        }
    }))
}

/// The entry of `op`, which answered `outcome` after `millis`.
pub fn entry(op: &Operation, outcome: &Result<RawDocumentBuf>, millis: i64) -> Document {
    let mut entry = op.profile_fields();
    match outcome {
        Ok(reply) => {
            outcome_counts(op, reply, &mut entry);
            entry.insert("numYield", 0);
            entry.insert("locks", Document::new());
            entry.insert("responseLength", reply.as_bytes().len() as i32);
        }
        Err(e) => {
            entry.insert("numYield", 0);
            entry.insert("locks", Document::new());
            entry.insert("ok", 0.0);
            entry.insert("errMsg", e.message());
            entry.insert("errName", e.code().name().into_owned());
            entry.insert("errCode", e.code().code());
        }
    }
    entry.insert("protocol", "op_msg");
    entry.insert("millis", millis);
    if let Some(plan) = op.plan() {
        entry.insert("planSummary", plan.summary.as_str());
        if let Some((query_hash, plan_cache_key)) = &plan.hashes {
            entry.insert("queryHash", query_hash.as_str());
            entry.insert("planCacheKey", plan_cache_key.as_str());
        }
    }
    if let Some(stats) = op.exec_stats() {
        entry.insert("execStats", stats.clone());
    }
    entry.insert("ts", crate::server::profiling::now());
    entry.extend(op.client_fields());
    let (all_users, user) = match op.runs_as() {
        Some(runs_as) => (
            vec![Bson::Document(runs_as.user.to_document())],
            runs_as.user.to_string(),
        ),
        None => (Vec::new(), String::new()),
    };
    entry.insert("allUsers", Bson::Array(all_users));
    entry.insert("user", user);
    entry
}

/// What the reply tells of the work: documents returned and the cursor, or a write's counts.
fn outcome_counts(op: &Operation, reply: &RawDocumentBuf, entry: &mut Document) {
    let number = |name: &str| match reply.get(name) {
        Ok(Some(RawBsonRef::Int32(n))) => Some(i64::from(n)),
        Ok(Some(RawBsonRef::Int64(n))) => Some(n),
        Ok(Some(RawBsonRef::Double(n))) => Some(n as i64),
        _ => None,
    };
    let command = op.command_name();
    match command {
        "insert" => entry.insert("ninserted", number("n").unwrap_or(0)),
        "delete" => entry.insert("ndeleted", number("n").unwrap_or(0)),
        "update" => {
            let upserted = matches!(reply.get("upserted"), Ok(Some(RawBsonRef::Array(_))));
            entry.insert("nMatched", number("n").unwrap_or(0));
            entry.insert("nModified", number("nModified").unwrap_or(0));
            entry.insert("upsert", upserted)
        }
        _ => None,
    };
    if let Ok(Some(cursor)) = reply.get_document("cursor").map(Some) {
        let batch = cursor
            .get_array("firstBatch")
            .or_else(|_| cursor.get_array("nextBatch"));
        let returned = batch.map(|b| b.into_iter().count()).unwrap_or(0);
        if let Ok(id) = cursor.get_i64("id") {
            if id != 0 {
                entry.insert("cursorid", id);
            } else {
                entry.insert("cursorExhausted", true);
            }
        }
        entry.insert("nreturned", returned as i64);
    } else if command == "count" {
        entry.insert("nreturned", 1i64);
    }
}

/// Inserts `entry` into `db`'s profile collection, made capped when missing.
async fn write<S: DataNode>(state: &S, db: &str, entry: &Document) -> Result<()> {
    let store = state.storage().database_or_create(db).await?;
    let coll = profile_collection(&store).await?;
    // MongoDB's profile collection has no `_id` index; every collection here has one, so the
    // entry carries an `_id`, last, where readers of the entry's other fields never look.
    let mut entry = entry.clone();
    entry.insert("_id", bson::oid::ObjectId::new());
    let raw = RawDocumentBuf::from_document(&entry)?;
    let mut txn = store.write().await?;
    txn.insert_one(&coll, &raw).await?;
    txn.commit().await?;
    Ok(())
}

/// `db`'s profile collection, made capped (1 MiB) when missing, as `profile` and the profiler
/// make it.
pub async fn profile_collection(
    store: &super::storage::DatabaseStore,
) -> Result<Arc<super::storage::CollectionMeta>> {
    if let Some(coll) = store.collection(PROFILE_COLLECTION) {
        return Ok(coll);
    }
    let options = doc! {"capped": true, "size": PROFILE_SIZE};
    match store.create_collection(PROFILE_COLLECTION, options).await {
        Err(e) if e.code() == ErrorCode::NamespaceExists => store
            .collection(PROFILE_COLLECTION)
            .ok_or_else(|| MongoError::internal("the profile collection vanished")),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::CommandRequest;
    use crate::server::RequestContext;
    use crate::server::operations::{
        Operations, PlanFacts, add_examined, run_as, set_exec_stats, set_plan,
    };
    use bson::rawdoc;

    #[tokio::test]
    async fn entries_carry_mongodb_fields() {
        let ops = Operations::default();
        let ctx = RequestContext::internal();
        let find = CommandRequest::new("app", rawdoc! {"find": "c", "filter": {"a": 1}}).unwrap();
        let guard = ops.begin(&ctx, &find, None, None);
        // Unprofiled, an operation keeps no execStats.
        run_as(Arc::clone(&guard.op), async {
            set_exec_stats(|| Some(doc! {"stage": "COLLSCAN"}));
        })
        .await;
        assert!(guard.op.exec_stats().is_none());
        guard.op.mark_profiled();
        run_as(Arc::clone(&guard.op), async {
            add_examined(2, 3);
            set_exec_stats(|| None);
            set_exec_stats(|| Some(doc! {"stage": "COLLSCAN", "nReturned": 1}));
            set_exec_stats(|| Some(doc! {"stage": "IXSCAN"}));
            let plan = |summary: &str| PlanFacts {
                summary: summary.into(),
                hashes: Some(("0A1B2C3D".into(), "4E5F6A7B".into())),
            };
            set_plan(|| plan("COLLSCAN"));
            set_plan(|| plan("IXSCAN { a: 1 }"));
        })
        .await;
        // Outside a command nothing is counted.
        add_examined(100, 100);
        let reply = rawdoc! {"cursor": {"firstBatch": [{"a": 1}], "id": 0_i64, "ns": "app.c"}};
        let e = entry(&guard.op, &Ok(reply), 3);
        assert_eq!(e.get_str("op"), Ok("query"));
        assert_eq!(e.get_str("ns"), Ok("app.c"));
        assert_eq!(
            e.get_document("command"),
            Ok(&doc! {"find": "c", "filter": {"a": 1}, "$db": "app"})
        );
        assert_eq!(
            (e.get_i64("keysExamined"), e.get_i64("docsExamined")),
            (Ok(2), Ok(3))
        );
        assert_eq!(e.get_i64("nreturned"), Ok(1));
        assert_eq!(e.get_bool("cursorExhausted"), Ok(true));
        assert_eq!(e.get_i64("millis"), Ok(3));
        // The first read's plan.
        assert_eq!(e.get_str("planSummary"), Ok("COLLSCAN"));
        assert_eq!(e.get_str("queryHash"), Ok("0A1B2C3D"));
        assert_eq!(e.get_str("planCacheKey"), Ok("4E5F6A7B"));
        // The first read's executed plan, after the plan's summary as in MongoDB's entries.
        assert_eq!(
            e.get_document("execStats"),
            Ok(&doc! {"stage": "COLLSCAN", "nReturned": 1})
        );
        let keys: Vec<&str> = e.keys().map(String::as_str).collect();
        let at = |k: &str| keys.iter().position(|x| *x == k).unwrap();
        assert!(at("planCacheKey") < at("execStats") && at("execStats") < at("ts"));
        assert!(e.get_datetime("ts").is_ok());
        assert_eq!(e.get_str("user"), Ok(""));
        let failed = entry(&guard.op, &Err(MongoError::bad_value("no")), 0);
        assert_eq!(failed.get_i32("errCode"), Ok(2));
        assert_eq!(failed.get_str("errName"), Ok("BadValue"));
        assert_eq!(failed.get_str("errMsg"), Ok("no"));

        // An operation run for a user names it.
        let runs_as = crate::server::impersonation::RunsAs {
            user: crate::server::auth::UserName::new("ann", "app"),
            roles: Vec::new(),
            run_by: None,
        };
        let guard = ops.begin(&ctx, &find, None, Some(Arc::new(runs_as)));
        let e = entry(&guard.op, &Ok(rawdoc! {"ok": 1}), 0);
        assert_eq!(e.get_str("user"), Ok("ann@app"));
        assert_eq!(
            e.get_array("allUsers"),
            Ok(&vec![doc! {"user": "ann", "db": "app"}.into()])
        );

        let update = CommandRequest::new("app", rawdoc! {"update": "c", "updates": []}).unwrap();
        let guard = ops.begin(&ctx, &update, None, None);
        let reply = rawdoc! {"n": 1, "nModified": 0, "upserted": [{"index": 0, "_id": 1}]};
        let e = entry(&guard.op, &Ok(reply), 0);
        assert_eq!(e.get_str("op"), Ok("update"));
        assert_eq!(
            (e.get_i64("nMatched"), e.get_i64("nModified")),
            (Ok(1), Ok(0))
        );
        assert_eq!(e.get_bool("upsert"), Ok(true));
        // Without a read through a plan there is no execStats.
        assert!(!e.contains_key("execStats"));
    }
}
