//! The profiler end to end: `profile` on the router as on mongos (level 0 sets `slowms`,
//! `sampleRate` and `filter`, -1 reads them, 1 and 2 are refused), and on the database's
//! primary shard, which writes its operations — sent through the router — to the capped
//! `system.profile` with MongoDB's fields; the entries read through the router too.

use crate::harness::{both_modes, client_for, database_entry, failure, find_all, shard_host};
use mongodb::Client;
use mongodb::bson::{Bson, Document, doc};

async fn profile_on_router_and_shards(client: &Client) {
    let db = client.database("profiled");
    db.drop().await.unwrap();

    // The router keeps the settings of its log only.
    let (code, name, message) = failure(&db.run_command(doc! {"profile": 1}).await.unwrap_err());
    assert_eq!((code, name.as_str()), (2, "BadValue"));
    assert!(
        message.starts_with("Profiling is not permitted on mongoS"),
        "{message}"
    );
    let reply = db
        .run_command(doc! {"profile": 0, "slowms": 50, "sampleRate": 0.5})
        .await
        .unwrap();
    assert_eq!(reply.get_i32("was"), Ok(0));
    assert_eq!(reply.get_i32("slowms"), Ok(100));
    assert_eq!(reply.get_f64("sampleRate"), Ok(1.0));
    let status = db.run_command(doc! {"profile": -1}).await.unwrap();
    assert_eq!(
        (status.get_i32("slowms"), status.get_f64("sampleRate")),
        (Ok(50), Ok(0.5))
    );
    db.run_command(doc! {"profile": 0, "slowms": 100, "sampleRate": 1.0})
        .await
        .unwrap();
    let (code, ..) = failure(
        &db.run_command(doc! {"profile": 0, "sampleRate": 1.5})
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 2);
    let (code, ..) = failure(
        &db.run_command(doc! {"profile": 0, "bogus": 1})
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 40415);

    // The primary shard profiles what the router sends it.
    let coll = db.collection::<Document>("c");
    coll.insert_many([
        doc! {"_id": 1, "a": 1},
        doc! {"_id": 2, "a": 2},
        doc! {"_id": 3, "a": 3},
    ])
    .await
    .unwrap();
    let primary = database_entry(client, "profiled").await;
    let host = shard_host(client, primary.get_str("primary").unwrap()).await;
    // Shards of an in-process cluster have no address of their own to connect to.
    let Ok(address) = host.parse() else {
        assert!(host.starts_with("inproc:"), "{host}");
        return;
    };
    let shard = client_for(address).await;
    let on_shard = shard.database("profiled");
    let reply = on_shard.run_command(doc! {"profile": 2}).await.unwrap();
    assert_eq!(reply.get_i32("was"), Ok(0));
    let options = on_shard
        .run_command(doc! {"listCollections": 1, "filter": {"name": "system.profile"}})
        .await
        .unwrap();
    let listed = options
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap();
    let profile_options = listed[0]
        .as_document()
        .unwrap()
        .get_document("options")
        .unwrap();
    assert_eq!(profile_options.get_bool("capped"), Ok(true));

    let found = find_all(&coll, doc! {"a": {"$gte": 2}}).await;
    assert_eq!(found.len(), 2);
    coll.update_one(doc! {"_id": 1}, doc! {"$set": {"b": 1}})
        .await
        .unwrap();
    coll.delete_one(doc! {"_id": 3}).await.unwrap();
    let bad = coll.find_one(doc! {"a": {"$bogus": 1}}).await.unwrap_err();
    assert_eq!(crate::harness::error_code(&bad), Some(2));
    // A cursor continued by getMore, a count, a distinct, a findAndModify and an aggregation.
    let mut cursor = coll
        .find(doc! {"a": {"$lte": 2}})
        .batch_size(1)
        .await
        .unwrap();
    let mut seen = 0;
    while cursor.advance().await.unwrap() {
        seen += 1;
    }
    assert_eq!(seen, 2);
    let mut sorted = coll
        .find(doc! {"a": {"$lt": 5}})
        .sort(doc! {"a": -1})
        .batch_size(1)
        .await
        .unwrap();
    while sorted.advance().await.unwrap() {}
    db.run_command(doc! {"count": "c", "query": {"a": 2}})
        .await
        .unwrap();
    coll.distinct("a", doc! {"a": {"$gt": 0}}).await.unwrap();
    coll.find_one_and_update(doc! {"a": 2}, doc! {"$set": {"c": 1}})
        .await
        .unwrap();
    find_all_aggregate(&coll).await;

    let profile = on_shard.collection::<Document>("system.profile");
    let entries = find_all(&profile, doc! {"ns": "profiled.c"}).await;
    let of = |op: &str| -> Vec<&Document> {
        entries
            .iter()
            .filter(|e| e.get_str("op") == Ok(op))
            .collect()
    };
    let queries = of("query");
    let query = queries
        .iter()
        .find(|e| {
            e.get_document("command").unwrap().get("filter")
                == Some(&Bson::Document(doc! {"a": {"$gte": 2}}))
        })
        .unwrap_or_else(|| panic!("the find's entry: {entries:#?}"));
    assert_eq!(query.get_str("ns"), Ok("profiled.c"));
    assert_eq!(
        query.get_document("command").unwrap().get_str("find"),
        Ok("c")
    );
    assert_eq!(query.get_i64("docsExamined"), Ok(3));
    assert_eq!(query.get_i64("keysExamined"), Ok(0));
    assert_eq!(query.get_i64("nreturned"), Ok(2));
    assert!(query.get_i64("millis").is_ok());
    assert!(query.get_datetime("ts").is_ok());
    assert!(query.get_str("client").is_ok());
    assert_eq!(query.get_str("protocol"), Ok("op_msg"));
    assert_eq!(query.get_str("planSummary"), Ok("COLLSCAN"));
    let query_hash = query.get_str("queryHash").unwrap();
    assert_eq!(query_hash.len(), 8, "{query}");
    assert!(query.get_str("planCacheKey").is_ok(), "{query}");
    let update = of("update");
    assert_eq!(update[0].get_i64("nMatched"), Ok(1));
    assert_eq!(update[0].get_i64("nModified"), Ok(1));
    assert_eq!(update[0].get_i64("keysExamined"), Ok(1));
    assert_eq!(update[0].get_str("planSummary"), Ok("IDHACK"));
    assert_eq!(of("remove")[0].get_i64("ndeleted"), Ok(1));
    let failed = queries
        .iter()
        .find(|e| e.get_i32("errCode") == Ok(2))
        .expect("the failed find's entry");
    assert_eq!(failed.get_str("errName"), Ok("BadValue"));
    assert!(!failed.contains_key("execStats"), "{failed}");
    exec_stats_of_entries(&of);

    // Level 1 with a filter profiles what the filter matches, whatever its duration.
    let reply = on_shard
        .run_command(doc! {"profile": 1, "filter": {"op": "insert"}})
        .await
        .unwrap();
    assert_eq!(reply.get_i32("was"), Ok(2));
    let before = profile.count_documents(doc! {}).await.unwrap();
    coll.insert_one(doc! {"_id": 4}).await.unwrap();
    find_all(&coll, doc! {}).await;
    let inserts = find_all(&profile, doc! {"op": "insert", "ns": "profiled.c"}).await;
    assert_eq!(inserts.last().unwrap().get_i64("ninserted"), Ok(1));
    assert_eq!(profile.count_documents(doc! {}).await.unwrap(), before + 1);
    let status = on_shard.run_command(doc! {"profile": -1}).await.unwrap();
    assert_eq!(status.get_i32("was"), Ok(1));
    assert_eq!(status.get_document("filter"), Ok(&doc! {"op": "insert"}));

    // mongos users read the shard's entries through the router.
    let through_router = find_all(&db.collection("system.profile"), doc! {"op": "insert"}).await;
    assert!(!through_router.is_empty());
    on_shard
        .run_command(doc! {"profile": 0, "filter": "unset"})
        .await
        .unwrap();
    db.drop().await.unwrap();
}

/// Runs an aggregation on `coll` to its end.
async fn find_all_aggregate(coll: &mongodb::Collection<Document>) {
    let mut cursor = coll
        .aggregate([doc! {"$match": {"a": 1}}, doc! {"$project": {"a": 1}}])
        .await
        .unwrap();
    while cursor.advance().await.unwrap() {}
}

/// The executed plans of the profiled reads (MongoDB's `execStats`, explain's
/// `executionStages` shape), with the operations' own counts.
fn exec_stats_of_entries<'a>(of: &dyn Fn(&str) -> Vec<&'a Document>) {
    let stats = |e: &Document| -> Document {
        e.get_document("execStats")
            .unwrap_or_else(|_| panic!("execStats in {e}"))
            .clone()
    };
    let number = |d: &Document, k: &str| -> i64 {
        match d.get(k) {
            Some(Bson::Int32(n)) => i64::from(*n),
            Some(Bson::Int64(n)) => *n,
            other => panic!("{k}: {other:?} in {d}"),
        }
    };
    let command = |e: &Document, name: &str| e.get_document("command").unwrap().contains_key(name);
    let queries = of("query");
    let ranged = queries
        .iter()
        .find(|e| {
            e.get_document("command").unwrap().get("filter")
                == Some(&Bson::Document(doc! {"a": {"$gte": 2}}))
        })
        .unwrap();
    let scan = stats(ranged);
    assert_eq!(scan.get_str("stage"), Ok("COLLSCAN"), "{scan}");
    assert_eq!(scan.get_document("filter"), Ok(&doc! {"a": {"$gte": 2}}));
    assert_eq!(scan.get_str("direction"), Ok("forward"));
    assert_eq!(number(&scan, "nReturned"), 2);
    assert_eq!(number(&scan, "docsExamined"), 3);
    assert!(scan.contains_key("executionTimeMillisEstimate"));

    // A cursor's plan statistics add up over its getMores.
    let batched = queries
        .iter()
        .find(|e| {
            e.get_document("command").unwrap().get("filter")
                == Some(&Bson::Document(doc! {"a": {"$lte": 2}}))
        })
        .unwrap();
    let first = stats(batched);
    assert_eq!(
        number(&first, "nReturned"),
        batched.get_i64("nreturned").unwrap()
    );
    let cursor_id = batched.get_i64("cursorid").expect("the cursor stays open");
    let get_mores: Vec<&Document> = of("getmore")
        .into_iter()
        .filter(|e| e.get_document("command").unwrap().get_i64("getMore") == Ok(cursor_id))
        .collect();
    let last = get_mores.last().expect("the cursor's getMores");
    let last_stats = stats(last);
    assert_eq!(last_stats.get_str("stage"), Ok("COLLSCAN"));
    assert_eq!(number(&last_stats, "nReturned"), 2, "{last_stats}");
    assert_eq!(last.get_bool("cursorExhausted"), Ok(true));
    // A blocking sort read every match first; above it, what was returned so far.
    let sorted = queries
        .iter()
        .find(|e| {
            e.get_document("command").unwrap().get("filter")
                == Some(&Bson::Document(doc! {"a": {"$lt": 5}}))
        })
        .unwrap();
    let sort = stats(sorted);
    assert_eq!(sort.get_str("stage"), Ok("SORT"), "{sort}");
    assert_eq!(sort.get_document("sortPattern"), Ok(&doc! {"a": -1}));
    assert_eq!(
        number(&sort, "nReturned"),
        sorted.get_i64("nreturned").unwrap()
    );
    let under = sort.get_document("inputStage").unwrap();
    assert_eq!(number(under, "nReturned"), 2);
    let sorted_id = sorted.get_i64("cursorid").expect("the cursor stays open");
    let sorted_more = of("getmore")
        .into_iter()
        .rfind(|e| e.get_document("command").unwrap().get_i64("getMore") == Ok(sorted_id))
        .expect("the sorted cursor's getMores");
    assert_eq!(number(&stats(sorted_more), "nReturned"), 2);

    let commands = of("command");
    let count = commands.iter().find(|e| command(e, "count")).unwrap();
    let count_stats = stats(count);
    assert_eq!(count_stats.get_str("stage"), Ok("COUNT"), "{count_stats}");
    assert_eq!(number(&count_stats, "nCounted"), 1);
    let input = count_stats.get_document("inputStage").unwrap();
    assert_eq!(input.get_str("stage"), Ok("COLLSCAN"));
    assert_eq!(number(input, "nReturned"), 1);
    let distinct = commands.iter().find(|e| command(e, "distinct")).unwrap();
    assert_eq!(stats(distinct).get_str("stage"), Ok("COLLSCAN"));
    let modify = commands
        .iter()
        .find(|e| command(e, "findAndModify") || command(e, "findandmodify"))
        .unwrap();
    let update_stats = stats(modify);
    assert_eq!(
        update_stats.get_str("stage"),
        Ok("UPDATE"),
        "{update_stats}"
    );
    assert_eq!(number(&update_stats, "nMatched"), 1);
    assert_eq!(number(&update_stats, "nWouldModify"), 1);
    let read = update_stats.get_document("inputStage").unwrap();
    assert_eq!(read.get_str("stage"), Ok("COLLSCAN"));
    // An aggregation's cursor has none, as on mongod.
    let aggregate = commands.iter().find(|e| command(e, "aggregate")).unwrap();
    assert!(!aggregate.contains_key("execStats"), "{aggregate}");

    // Single-document writes by `_id` run MongoDB's express stages.
    let update = stats(of("update")[0]);
    assert_eq!(update.get_str("stage"), Ok("EXPRESS_UPDATE"), "{update}");
    assert_eq!(number(&update, "keysExamined"), 1);
    assert_eq!(number(&update, "nMatched"), 1);
    let delete = stats(of("remove")[0]);
    assert_eq!(delete.get_str("stage"), Ok("EXPRESS_DELETE"), "{delete}");
    assert_eq!(number(&delete, "nWouldDelete"), 1);
}

both_modes!(profile_on_router_and_shards);
