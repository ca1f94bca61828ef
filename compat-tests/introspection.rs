//! The introspection stages and commands through the driver: `$currentOp` (the router's own
//! operations and every shard's), `currentOp` and `killOp`, `$listLocalSessions` and the
//! session commands, `$indexStats` counting index accesses, and the empty `$planCacheStats`.

use crate::harness::{TestCluster, cursor_documents, error_code};
use mongodb::Client;
use mongodb::bson::{Bson, Document, doc};
use std::time::Duration;

async fn aggregate(client: &Client, db: &str, command: Document) -> Vec<Document> {
    cursor_documents(&client.database(db), command)
        .await
        .expect("aggregate")
}

async fn aggregate_error(client: &Client, db: &str, command: Document) -> Option<i32> {
    let err = client.database(db).run_command(command).await.unwrap_err();
    error_code(&err)
}

/// The router's own operations whose command carries `comment`, waiting until one shows.
async fn local_op_with_comment(client: &Client, comment: &str) -> Document {
    for _ in 0..500 {
        let ops = aggregate(
            client,
            "admin",
            doc! {"aggregate": 1, "pipeline": [
                {"$currentOp": {"localOps": true, "allUsers": true}},
                {"$match": {"command.comment": comment}},
            ], "cursor": {}},
        )
        .await;
        if let Some(op) = ops.into_iter().next() {
            return op;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("no operation with comment {comment} appeared");
}

#[tokio::test]
async fn current_op_sees_a_blocked_find_and_kill_op_interrupts_it() {
    let cluster = TestCluster::with_test_commands().await;
    let coll = cluster.db("app").collection::<Document>("c");
    coll.insert_one(doc! {"_id": 1}).await.unwrap();
    cluster
        .admin(
            doc! {"configureFailPoint": "failCommand", "mode": {"times": 1}, "data": {
            "failCommands": ["find"], "blockConnection": true, "blockTimeMS": 600_000,
            "appName": "blocked"}},
        )
        .await
        .unwrap();
    let blocked = Client::with_uri_str(format!("mongodb://{}/?appName=blocked", cluster.addr))
        .await
        .unwrap();
    let find = tokio::spawn(async move {
        blocked
            .database("app")
            .run_command(doc! {"find": "c", "filter": {}, "comment": "blocked-find"})
            .await
    });
    let op = local_op_with_comment(&cluster.client, "blocked-find").await;
    assert_eq!(op.get_str("type").unwrap(), "op");
    assert_eq!(op.get_str("op").unwrap(), "query");
    assert_eq!(op.get_str("ns").unwrap(), "app.c");
    assert!(op.get_bool("active").unwrap());
    assert_eq!(op.get_str("appName").unwrap(), "blocked");
    assert!(op.get_str("desc").unwrap().starts_with("conn"));
    assert!(op.get_str("client").unwrap().starts_with("127.0.0.1:"));
    assert!(op.get_i64("secs_running").is_ok());
    assert!(op.get_i64("microsecs_running").is_ok());
    assert_eq!(
        op.get_document("command").unwrap().get_str("find").unwrap(),
        "c"
    );
    assert!(
        op.get_document("clientMetadata")
            .unwrap()
            .contains_key("driver")
    );
    let opid = op.get_i32("opid").unwrap();

    // The router's `currentOp` command reports the shards' operations, as mongos's does: the
    // find blocked on the router itself is not among them.
    let listed = cluster
        .admin(doc! {"currentOp": 1, "command.comment": "blocked-find"})
        .await
        .unwrap();
    assert!(listed.get_array("inprog").unwrap().is_empty(), "{listed}");

    let killed = cluster.admin(doc! {"killOp": 1, "op": opid}).await.unwrap();
    assert_eq!(killed.get_f64("ok").unwrap(), 1.0);
    let err = find.await.unwrap().unwrap_err();
    assert_eq!(error_code(&err), Some(11601), "{err}");
    // Killing an operation that no longer runs still answers success, as MongoDB does.
    cluster.admin(doc! {"killOp": 1, "op": opid}).await.unwrap();
    assert_eq!(
        error_code(
            &cluster
                .admin(doc! {"killOp": 1, "op": "noColon"})
                .await
                .unwrap_err()
        ),
        Some(28625)
    );
    assert_eq!(
        error_code(&cluster.admin(doc! {"killOp": 1}).await.unwrap_err()),
        Some(50759)
    );
    cluster.shutdown().await;
}

#[tokio::test]
async fn current_op_through_the_router_lists_every_shard() {
    let cluster = TestCluster::start().await;
    let ops = aggregate(
        &cluster.client,
        "admin",
        doc! {"aggregate": 1, "pipeline": [
            {"$currentOp": {"allUsers": true, "idleConnections": false}},
            {"$match": {"command.aggregate": 1}},
        ], "cursor": {}},
    )
    .await;
    // Each shard is running the `$currentOp` the router sent it.
    let mut shards: Vec<&str> = ops.iter().map(|op| op.get_str("shard").unwrap()).collect();
    shards.sort();
    shards.dedup();
    assert_eq!(shards, ["shard0", "shard1"], "{ops:?}");
    for op in &ops {
        let shard = op.get_str("shard").unwrap();
        let opid = op.get_str("opid").unwrap();
        assert!(opid.starts_with(&format!("{shard}:")), "{op}");
        assert_eq!(op.keys().next().unwrap(), "shard");
        assert_eq!(op.get_str("ns").unwrap(), "admin.$cmd.aggregate");
        assert_eq!(op.get_str("host").unwrap(), format!("inproc:{shard}"));
    }

    // The `currentOp` command: the same aggregation, its other fields a filter, the
    // operations gathered in `inprog`.
    let listed = cluster
        .admin(doc! {"currentOp": 1, "$all": false, "command.aggregate": 1})
        .await
        .unwrap();
    let inprog = listed.get_array("inprog").unwrap();
    assert_eq!(inprog.len(), 2, "{listed}");
    for op in inprog {
        let op = op.as_document().unwrap();
        assert!(op.get_str("opid").unwrap().contains(':'));
        assert!(op.get_bool("active").unwrap());
    }
    assert_eq!(
        error_code(
            &cluster
                .db("app")
                .run_command(doc! {"currentOp": 1})
                .await
                .unwrap_err()
        ),
        Some(13)
    );

    // A shard's operation can be killed through the router by its qualified op id.
    let reply = cluster
        .admin(doc! {"killOp": 1, "op": "shard0:999999"})
        .await
        .unwrap();
    assert_eq!(reply.get_str("shard").unwrap(), "shard0");
    assert_eq!(reply.get_i32("shardid").unwrap(), 999_999);

    let code = |spec: Document| {
        doc! {"aggregate": 1, "pipeline": [{"$currentOp": spec}], "cursor": {}}
    };
    assert_eq!(
        aggregate_error(&cluster.client, "app", code(doc! {})).await,
        Some(73)
    );
    assert_eq!(
        aggregate_error(&cluster.client, "admin", code(doc! {"bogus": true})).await,
        Some(9)
    );
    assert_eq!(
        aggregate_error(
            &cluster.client,
            "admin",
            doc! {"aggregate": 1, "pipeline": [{"$match": {}}, {"$currentOp": {}}], "cursor": {}},
        )
        .await,
        Some(40602)
    );
    cluster.shutdown().await;
}

#[tokio::test]
async fn list_local_sessions_after_a_session_was_used() {
    let cluster = TestCluster::with_test_commands().await;
    let coll = cluster.db("app").collection::<Document>("c");
    coll.insert_one(doc! {"_id": 1}).await.unwrap();
    let mut session = cluster.client.start_session().await.unwrap();
    let lsid = session.id().clone();
    coll.find_one(doc! {}).session(&mut session).await.unwrap();
    let id = lsid.get("id").unwrap().clone();
    let mine = |docs: &[Document]| {
        docs.iter()
            .filter(|d| d.get_document("_id").unwrap().get("id") == Some(&id))
            .cloned()
            .collect::<Vec<_>>()
    };
    let listed = aggregate(
        &cluster.client,
        "app",
        doc! {"aggregate": 1, "pipeline": [{"$listLocalSessions": {"allUsers": true}}], "cursor": {}},
    )
    .await;
    let found = mine(&listed);
    assert_eq!(found.len(), 1, "{listed:?}");
    let record = &found[0];
    match record.get_document("_id").unwrap().get("uid") {
        // SHA-256 of the empty string: no authentication.
        Some(Bson::Binary(uid)) => assert_eq!(&uid.bytes[..4], &[0xe3, 0xb0, 0xc4, 0x42]),
        other => panic!("uid {other:?}"),
    }
    assert!(record.get_datetime("lastUse").is_ok());
    // Without users, the current user's sessions are all of them.
    let own = aggregate(
        &cluster.client,
        "app",
        doc! {"aggregate": 1, "pipeline": [{"$listLocalSessions": {}}], "cursor": {}},
    )
    .await;
    assert_eq!(mine(&own).len(), 1);

    // As in MongoDB, an ended session leaves the cache at the next refresh.
    cluster.admin(doc! {"endSessions": [&lsid]}).await.unwrap();
    cluster
        .admin(doc! {"refreshLogicalSessionCacheNow": 1})
        .await
        .unwrap();
    let after = aggregate(
        &cluster.client,
        "app",
        doc! {"aggregate": 1, "pipeline": [{"$listLocalSessions": {"allUsers": true}}], "cursor": {}},
    )
    .await;
    assert!(mine(&after).is_empty());
    cluster
        .admin(doc! {"refreshSessions": [&lsid]})
        .await
        .unwrap();
    let refreshed = aggregate(
        &cluster.client,
        "app",
        doc! {"aggregate": 1, "pipeline": [{"$listLocalSessions": {"allUsers": true}}], "cursor": {}},
    )
    .await;
    assert_eq!(mine(&refreshed).len(), 1);

    assert_eq!(
        aggregate_error(
            &cluster.client,
            "app",
            doc! {"aggregate": "c", "pipeline": [{"$listLocalSessions": {}}], "cursor": {}},
        )
        .await,
        Some(73)
    );
    cluster.shutdown().await;
}

fn index_ops(stats: &[Document], shard: &str, name: &str) -> i64 {
    let entry = stats
        .iter()
        .find(|s| s.get_str("name").unwrap() == name && s.get_str("shard").unwrap() == shard)
        .unwrap_or_else(|| panic!("no {name} on {shard}: {stats:?}"));
    entry
        .get_document("accesses")
        .unwrap()
        .get_i64("ops")
        .unwrap()
}

#[tokio::test]
async fn index_stats_count_accesses() {
    let cluster = TestCluster::start().await;
    let db = cluster.db("app");
    let coll = db.collection::<Document>("c");
    coll.insert_many((0..20).map(|i| doc! {"_id": i, "a": i % 5}))
        .await
        .unwrap();
    db.run_command(doc! {"createIndexes": "c", "indexes": [{"key": {"a": 1}, "name": "a_1"}]})
        .await
        .unwrap();
    let stats_command = doc! {"aggregate": "c", "pipeline": [{"$indexStats": {}}], "cursor": {}};
    let before = aggregate(&cluster.client, "app", stats_command.clone()).await;
    assert_eq!(before.len(), 2);
    let shard = before[0].get_str("shard").unwrap().to_string();
    assert_eq!(index_ops(&before, &shard, "a_1"), 0);

    for i in 0..3 {
        coll.find_one(doc! {"a": i}).await.unwrap();
    }
    coll.count_documents(doc! {"a": 4}).await.unwrap();
    coll.find_one(doc! {"_id": 3}).await.unwrap();
    coll.update_one(doc! {"a": 1}, doc! {"$set": {"b": 1}})
        .await
        .unwrap();
    // A collection scan uses no index.
    coll.find_one(doc! {"b": 1}).await.unwrap();

    let after = aggregate(&cluster.client, "app", stats_command.clone()).await;
    assert_eq!(index_ops(&after, &shard, "a_1"), 5);
    assert_eq!(index_ops(&after, &shard, "_id_"), 1);
    let a = after
        .iter()
        .find(|s| s.get_str("name").unwrap() == "a_1")
        .unwrap();
    assert_eq!(a.get_document("key").unwrap(), &doc! {"a": 1});
    assert_eq!(a.get_str("host").unwrap(), format!("inproc:{shard}"));
    assert!(
        a.get_document("accesses")
            .unwrap()
            .get_datetime("since")
            .is_ok()
    );
    assert_eq!(
        a.get_document("spec").unwrap().get_str("name").unwrap(),
        "a_1"
    );
    // The rest of the pipeline runs over the stage's documents.
    let used = aggregate(
        &cluster.client,
        "app",
        doc! {"aggregate": "c", "pipeline": [
            {"$indexStats": {}},
            {"$match": {"accesses.ops": {"$gt": 1}}},
            {"$project": {"_id": 0, "name": 1}},
        ], "cursor": {}},
    )
    .await;
    assert_eq!(used, vec![doc! {"name": "a_1"}]);

    assert_eq!(
        aggregate_error(
            &cluster.client,
            "app",
            doc! {"aggregate": "c", "pipeline": [{"$indexStats": {"x": 1}}], "cursor": {}},
        )
        .await,
        Some(28803)
    );
    assert_eq!(
        aggregate_error(
            &cluster.client,
            "app",
            doc! {"aggregate": "c", "pipeline": [{"$match": {}}, {"$indexStats": {}}], "cursor": {}},
        )
        .await,
        Some(40602)
    );
    cluster.shutdown().await;
}

#[tokio::test]
async fn index_stats_of_a_sharded_collection_come_from_every_shard() {
    let cluster = TestCluster::start().await;
    cluster
        .admin(doc! {"shardCollection": "app.s", "key": {"k": "hashed"}})
        .await
        .unwrap();
    let db = cluster.db("app");
    db.run_command(doc! {"createIndexes": "s", "indexes": [{"key": {"a": 1}, "name": "a_1"}]})
        .await
        .unwrap();
    let coll = db.collection::<Document>("s");
    coll.insert_many((0..40).map(|i| doc! {"_id": i, "k": i, "a": i % 4}))
        .await
        .unwrap();
    // Without the shard key the find reaches both shards, and each uses its `a_1`.
    let found: Vec<Document> = {
        use futures::TryStreamExt;
        coll.find(doc! {"a": 2})
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap()
    };
    assert_eq!(found.len(), 10);
    let stats = aggregate(
        &cluster.client,
        "app",
        doc! {"aggregate": "s", "pipeline": [{"$indexStats": {}}, {"$sort": {"shard": 1, "name": 1}}], "cursor": {}},
    )
    .await;
    let names: Vec<(&str, &str)> = stats
        .iter()
        .map(|s| (s.get_str("shard").unwrap(), s.get_str("name").unwrap()))
        .collect();
    assert_eq!(
        names,
        [
            ("shard0", "_id_"),
            ("shard0", "a_1"),
            ("shard0", "k_hashed"),
            ("shard1", "_id_"),
            ("shard1", "a_1"),
            ("shard1", "k_hashed"),
        ]
    );
    assert_eq!(index_ops(&stats, "shard0", "a_1"), 1);
    assert_eq!(index_ops(&stats, "shard1", "a_1"), 1);
    cluster.shutdown().await;
}

#[tokio::test]
async fn plan_cache_stats_is_empty() {
    let cluster = TestCluster::start().await;
    let coll = cluster.db("app").collection::<Document>("c");
    coll.insert_one(doc! {"a": 1}).await.unwrap();
    coll.find_one(doc! {"a": 1}).await.unwrap();
    let entries = aggregate(
        &cluster.client,
        "app",
        doc! {"aggregate": "c", "pipeline": [{"$planCacheStats": {}}], "cursor": {}},
    )
    .await;
    assert!(entries.is_empty());
    assert_eq!(
        aggregate_error(
            &cluster.client,
            "app",
            doc! {"aggregate": "missing", "pipeline": [{"$planCacheStats": {}}], "cursor": {}},
        )
        .await,
        Some(50933)
    );
    assert_eq!(
        aggregate_error(
            &cluster.client,
            "app",
            doc! {"aggregate": "c", "pipeline": [{"$planCacheStats": 1}], "cursor": {}},
        )
        .await,
        Some(9)
    );
    cluster.shutdown().await;
}

#[tokio::test]
async fn list_sessions_reads_what_the_router_flushed() {
    let cluster = TestCluster::with_test_commands().await;
    let coll = cluster.db("app").collection::<Document>("c");
    let mut session = cluster.client.start_session().await.unwrap();
    let id = session.id().get("id").unwrap().clone();
    coll.find_one(doc! {}).session(&mut session).await.unwrap();
    cluster
        .admin(doc! {"refreshLogicalSessionCacheNow": 1})
        .await
        .unwrap();
    let listed = aggregate(
        &cluster.client,
        "config",
        doc! {"aggregate": "system.sessions", "pipeline": [
            {"$listSessions": {"allUsers": true}},
            {"$match": {"_id.id": &id}},
        ], "cursor": {}},
    )
    .await;
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert!(listed[0].get_datetime("lastUse").is_ok());
    let own = aggregate(
        &cluster.client,
        "config",
        doc! {"aggregate": "system.sessions", "pipeline": [{"$listSessions": {}}], "cursor": {}},
    )
    .await;
    assert!(
        own.iter()
            .any(|r| r.get_document("_id").unwrap().get("id") == Some(&id))
    );
    // Unused sessions expire through a TTL index, as MongoDB's sessions collection.
    let indexes = aggregate(
        &cluster.client,
        "config",
        doc! {"listIndexes": "system.sessions", "cursor": {}},
    )
    .await;
    assert!(
        indexes
            .iter()
            .any(|i| i.get_str("name") == Ok("lsidTTLIndex")
                && i.get("expireAfterSeconds").is_some()),
        "{indexes:?}"
    );
    assert_eq!(
        aggregate_error(
            &cluster.client,
            "app",
            doc! {"aggregate": "c", "pipeline": [{"$listSessions": {}}], "cursor": {}},
        )
        .await,
        Some(73)
    );
    cluster.shutdown().await;
}
