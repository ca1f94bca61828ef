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

both_modes!(profile_on_router_and_shards);
