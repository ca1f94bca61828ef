//! Chunk migrations through the router: `moveChunk` and `moveRange` move documents between
//! shards with the writes made meanwhile, routers follow, the donor's copies stay invisible and
//! are deleted (at once with `_waitForDelete`, or by `cleanupOrphaned`), and MongoDB's errors.

use crate::harness::{
    ProcessCluster, admin, all_by_id, both_modes, direct_client, error_code, failure, shard_names,
};
use mongodb::Client;
use mongodb::bson::{Document, doc};

/// `ns` sharded on `{a: 1}` with `n` documents `{_id: i, a: i}`, split at `split`; returns
/// the shard owning the upper chunk and the other one.
async fn sharded_with_split(client: &Client, ns: &str, n: i32, split: i32) -> (String, String) {
    admin(client, doc! {"shardCollection": ns, "key": {"a": 1}})
        .await
        .unwrap();
    let (db, coll) = ns.split_once('.').unwrap();
    let docs: Vec<Document> = (0..n).map(|i| doc! {"_id": i, "a": i, "v": 0}).collect();
    client
        .database(db)
        .collection::<Document>(coll)
        .insert_many(docs)
        .await
        .unwrap();
    admin(client, doc! {"split": ns, "middle": {"a": split}})
        .await
        .unwrap();
    let owner = chunk_owner(client, ns, split).await;
    let other = shard_names(client)
        .await
        .into_iter()
        .find(|s| *s != owner)
        .unwrap();
    (owner, other)
}

/// The shard owning the chunk that holds `a`.
async fn chunk_owner(client: &Client, ns: &str, a: i32) -> String {
    let entry = client
        .database("config")
        .collection::<Document>("collections")
        .find_one(doc! {"_id": ns})
        .await
        .unwrap()
        .unwrap();
    let uuid = entry.get("uuid").unwrap().clone();
    let chunks = client.database("config").collection::<Document>("chunks");
    let mut cursor = chunks.find(doc! {"uuid": uuid}).await.unwrap();
    use futures::StreamExt;
    while let Some(chunk) = cursor.next().await {
        let chunk = chunk.unwrap();
        let lo = chunk.get_document("min").unwrap().get("a").unwrap();
        let hi = chunk.get_document("max").unwrap().get("a").unwrap();
        let above =
            matches!(lo, mongodb::bson::Bson::MinKey) || lo.as_i32().is_some_and(|m| m <= a);
        let below = matches!(hi, mongodb::bson::Bson::MaxKey) || hi.as_i32().is_some_and(|m| a < m);
        if above && below {
            return chunk.get_str("shard").unwrap().to_string();
        }
    }
    panic!("no chunk holds a = {a}");
}

async fn a_chunk_moves_with_its_documents(client: &Client) {
    let ns = "mig1.c";
    let (owner, other) = sharded_with_split(client, ns, 1000, 500).await;
    let reply = admin(
        client,
        doc! {"moveChunk": ns, "find": {"a": 600}, "to": &other, "_waitForDelete": true},
    )
    .await
    .unwrap();
    assert!(reply.get("millis").is_some(), "{reply}");
    assert_eq!(chunk_owner(client, ns, 600).await, other);
    assert_eq!(chunk_owner(client, ns, 100).await, owner);
    let coll = client.database("mig1").collection::<Document>("c");
    let all = all_by_id(&coll).await;
    assert_eq!(all.len(), 1000);
    assert!(
        all.iter()
            .enumerate()
            .all(|(i, d)| d.get_i32("a").unwrap() == i as i32)
    );
    // Writes reach the new owner.
    coll.update_one(doc! {"a": 700}, doc! {"$set": {"v": 1}})
        .await
        .unwrap();
    assert_eq!(
        coll.find_one(doc! {"a": 700})
            .await
            .unwrap()
            .unwrap()
            .get_i32("v")
            .unwrap(),
        1
    );
    // And back again (the recipient of a range it gave away waits for its deletion first).
    admin(
        client,
        doc! {"moveRange": ns, "toShard": &owner, "min": {"a": 500}, "max": {"a": mongodb::bson::Bson::MaxKey}, "waitForDelete": true},
    )
    .await
    .unwrap();
    assert_eq!(chunk_owner(client, ns, 600).await, owner);
    assert_eq!(all_by_id(&coll).await.len(), 1000);
    assert_eq!(coll.count_documents(doc! {"v": 1}).await.unwrap(), 1);
}

async fn move_range_splits_and_refuses_what_mongodb_refuses(client: &Client) {
    let ns = "mig2.c";
    let (owner, other) = sharded_with_split(client, ns, 200, 100).await;
    // A sub-range of a chunk: split first, then moved.
    admin(
        client,
        doc! {"moveRange": ns, "toShard": &other, "min": {"a": 120}, "max": {"a": 150}},
    )
    .await
    .unwrap();
    assert_eq!(chunk_owner(client, ns, 130).await, other);
    assert_eq!(chunk_owner(client, ns, 110).await, owner);
    assert_eq!(chunk_owner(client, ns, 160).await, owner);
    let coll = client.database("mig2").collection::<Document>("c");
    assert_eq!(all_by_id(&coll).await.len(), 200);
    // Moving a range to the shard that has it: nothing to do.
    admin(
        client,
        doc! {"moveRange": ns, "toShard": &other, "min": {"a": 120}, "max": {"a": 150}},
    )
    .await
    .unwrap();
    let err = admin(
        client,
        doc! {"moveRange": ns, "toShard": "nosuchshard", "min": {"a": 10}},
    )
    .await
    .unwrap_err();
    assert_eq!(failure(&err).1, "ShardNotFound");
    let err = admin(client, doc! {"moveRange": ns, "toShard": &other})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(2), "{err}");
    let err = admin(client, doc! {"moveChunk": ns, "to": &other})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(2), "{err}");
    let err = admin(
        client,
        doc! {"moveRange": ns, "toShard": &other, "min": {"a": 10}, "bogus": 1},
    )
    .await
    .unwrap_err();
    assert_eq!(failure(&err).1, "IDLUnknownField", "{err}");
    let err = admin(
        client,
        doc! {"moveRange": "mig2.unsharded", "toShard": &other, "min": {"a": 10}},
    )
    .await
    .unwrap_err();
    assert_eq!(failure(&err).1, "NamespaceNotSharded");
    // setAllowMigrations: false stops migrations; true lets them run again.
    admin(
        client,
        doc! {"setAllowMigrations": ns, "allowMigrations": false},
    )
    .await
    .unwrap();
    let entry = crate::harness::collection_entry(client, ns).await.unwrap();
    assert_eq!(entry.get_bool("permitMigrations").ok(), Some(false));
    let err = admin(
        client,
        doc! {"moveRange": ns, "toShard": &other, "min": {"a": 10}, "max": {"a": 20}},
    )
    .await
    .unwrap_err();
    assert_eq!(failure(&err).1, "ConflictingOperationInProgress");
    admin(
        client,
        doc! {"setAllowMigrations": ns, "allowMigrations": true},
    )
    .await
    .unwrap();
    let entry = crate::harness::collection_entry(client, ns).await.unwrap();
    assert!(entry.get("permitMigrations").is_none(), "{entry}");
    admin(
        client,
        doc! {"moveRange": ns, "toShard": &other, "min": {"a": 10}, "max": {"a": 20}},
    )
    .await
    .unwrap();
    assert_eq!(chunk_owner(client, ns, 15).await, other);
    assert_eq!(all_by_id(&coll).await.len(), 200);
}

/// Writes to the moving range while it moves: every acknowledged write is there afterwards,
/// nothing deleted comes back.
async fn writes_during_a_migration_are_kept(client: &Client) {
    let ns = "mig3.c";
    let (_, other) = sharded_with_split(client, ns, 3000, 1000).await;
    let coll = client.database("mig3").collection::<Document>("c");
    let writer = {
        let coll = coll.clone();
        tokio::spawn(async move {
            for round in 0..300 {
                let a = 1000 + (round * 7) % 2000;
                coll.update_one(doc! {"a": a}, doc! {"$inc": {"v": 1}})
                    .await
                    .unwrap();
                coll.insert_one(doc! {"_id": 10_000 + round, "a": 1000 + round, "v": 0})
                    .await
                    .unwrap();
                if round % 3 == 0 {
                    coll.delete_one(doc! {"_id": 10_000 + round}).await.unwrap();
                }
            }
        })
    };
    admin(
        client,
        doc! {"moveChunk": ns, "find": {"a": 2000}, "to": &other},
    )
    .await
    .unwrap();
    writer.await.unwrap();
    assert_eq!(chunk_owner(client, ns, 2000).await, other);
    let all = all_by_id(&coll).await;
    assert_eq!(all.len(), 3000 + 200, "inserts kept, deletes gone");
    let increments: i32 = all.iter().map(|d| d.get_i32("v").unwrap()).sum();
    assert_eq!(increments, 300);
    for round in 0..300 {
        let present = all
            .iter()
            .any(|d| d.get_i32("_id").unwrap() == 10_000 + round);
        assert_eq!(present, round % 3 != 0, "document {}", 10_000 + round);
    }
}

/// A range over twice the chunk size's worth of documents is ChunkTooBig unless forced.
async fn a_range_too_big_needs_force_jumbo(client: &Client) {
    let ns = "mig5.c";
    admin(client, doc! {"shardCollection": ns, "key": {"a": 1}})
        .await
        .unwrap();
    client
        .database("config")
        .collection::<Document>("settings")
        .update_one(doc! {"_id": "chunksize"}, doc! {"$set": {"value": 1}})
        .upsert(true)
        .await
        .unwrap();
    let big = "x".repeat(100 * 1024);
    let docs: Vec<Document> = (0..30)
        .map(|i| doc! {"_id": i, "a": i, "s": &big})
        .collect();
    let coll = client.database("mig5").collection::<Document>("c");
    coll.insert_many(docs).await.unwrap();
    let owner = chunk_owner(client, ns, 0).await;
    let other = shard_names(client)
        .await
        .into_iter()
        .find(|s| *s != owner)
        .unwrap();
    let err = admin(
        client,
        doc! {"moveRange": ns, "toShard": &other, "min": {"a": mongodb::bson::Bson::MinKey}, "max": {"a": mongodb::bson::Bson::MaxKey}},
    )
    .await
    .unwrap_err();
    let (code, name, message) = failure(&err);
    assert_eq!((code, name.as_str()), (153, "ChunkTooBig"), "{message}");
    assert_eq!(chunk_owner(client, ns, 0).await, owner);
    // Only min: the range up to the chunk size moves, split off the rest.
    admin(
        client,
        doc! {"moveRange": ns, "toShard": &other, "min": {"a": mongodb::bson::Bson::MinKey}},
    )
    .await
    .unwrap();
    assert_eq!(chunk_owner(client, ns, 0).await, other);
    assert_eq!(chunk_owner(client, ns, 29).await, owner);
    admin(
        client,
        doc! {"moveChunk": ns, "find": {"a": 29}, "to": &other, "forceJumbo": true},
    )
    .await
    .unwrap();
    assert_eq!(chunk_owner(client, ns, 29).await, other);
    assert_eq!(all_by_id(&coll).await.len(), 30);
}

both_modes!(
    a_range_too_big_needs_force_jumbo,
    a_chunk_moves_with_its_documents,
    move_range_splits_and_refuses_what_mongodb_refuses,
    writes_during_a_migration_are_kept,
);

/// A node's `serverStatus.shardingStatistics`.
async fn sharding_statistics(node: &Client) -> Document {
    let status = node
        .database("admin")
        .run_command(doc! {"serverStatus": 1})
        .await
        .unwrap();
    status.get_document("shardingStatistics").unwrap().clone()
}

/// The donor keeps its copies for `orphanCleanupDelaySecs`, invisible through the router;
/// `cleanupOrphaned` on the shard deletes them at once.
#[tokio::test]
async fn the_donor_deletes_its_orphans() {
    let cluster = ProcessCluster::start(2).await;
    let client = cluster.client().await;
    let ns = "mig4.c";
    let (owner, other) = sharded_with_split(&client, ns, 400, 200).await;
    admin(
        &client,
        doc! {"moveChunk": ns, "find": {"a": 300}, "to": &other},
    )
    .await
    .unwrap();
    let coll = client.database("mig4").collection::<Document>("c");
    assert_eq!(all_by_id(&coll).await.len(), 400);
    let ports: Vec<u16> = (0..2).map(|i| cluster.shard_port(i)).collect();
    let names = shard_names(&client).await;
    let donor_port = ports[names.iter().position(|n| *n == owner).unwrap()];
    let donor = direct_client(donor_port).await;
    let on_donor = donor.database("mig4").collection::<Document>("c");
    assert_eq!(
        on_donor.count_documents(doc! {}).await.unwrap(),
        400,
        "the orphans wait for orphanCleanupDelaySecs"
    );
    let tasks = donor
        .database("config")
        .collection::<Document>("rangeDeletions");
    let task = tasks.find_one(doc! {}).await.unwrap().unwrap();
    assert_eq!(task.get_str("nss").unwrap(), ns);
    assert!(task.get("pending").is_none(), "{task}");
    let distribution = crate::harness::cursor_documents(
        &client.database("admin"),
        doc! {"aggregate": 1, "pipeline": [{"$shardedDataDistribution": {}}, {"$match": {"ns": ns}}], "cursor": {}},
    )
    .await
    .unwrap();
    let shards = distribution[0].get_array("shards").unwrap();
    let on_owner = shards
        .iter()
        .map(|s| s.as_document().unwrap())
        .find(|s| s.get_str("shardName").unwrap() == owner)
        .unwrap();
    assert_eq!(
        on_owner.get_i32("numOrphanedDocs").unwrap(),
        200,
        "{on_owner}"
    );
    assert_eq!(
        on_owner.get_i32("numOwnedDocuments").unwrap(),
        200,
        "{on_owner}"
    );
    donor
        .database("admin")
        .run_command(doc! {"cleanupOrphaned": ns})
        .await
        .unwrap();
    assert_eq!(on_donor.count_documents(doc! {}).await.unwrap(), 200);
    assert_eq!(tasks.count_documents(doc! {}).await.unwrap(), 0);
    assert_eq!(all_by_id(&coll).await.len(), 400);
    let stats = sharding_statistics(&donor).await;
    assert_eq!(
        stats.get_i64("countDonorMoveChunkStarted").unwrap(),
        1,
        "{stats}"
    );
    assert_eq!(stats.get_i64("countDonorMoveChunkCommitted").unwrap(), 1);
    assert_eq!(stats.get_i64("countDocsClonedOnDonor").unwrap(), 200);
    assert_eq!(
        stats.get_i64("countDocsDeletedByRangeDeleter").unwrap(),
        200,
        "{stats}"
    );
    let recipient_port = ports[names.iter().position(|n| *n == other).unwrap()];
    let stats = sharding_statistics(&direct_client(recipient_port).await).await;
    assert_eq!(
        stats.get_i64("countRecipientMoveChunkStarted").unwrap(),
        1,
        "{stats}"
    );
    assert_eq!(stats.get_i64("countDocsClonedOnRecipient").unwrap(), 200);
    // The changelog tells the story as mongosh's sh.status() reads it.
    let log = client
        .database("config")
        .collection::<Document>("changelog");
    let from = log
        .find_one(doc! {"what": "moveChunk.from", "ns": ns})
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        from.get_document("details")
            .unwrap()
            .get_str("note")
            .unwrap(),
        "success"
    );
    assert!(
        log.find_one(doc! {"what": "moveChunk.commit", "ns": ns})
            .await
            .unwrap()
            .is_some()
    );
}

/// A shard left with orphans but no chunks still needs the shard key index to delete them:
/// `checkMetadataConsistency` says so when it is gone, as MongoDB's does.
#[tokio::test]
async fn a_range_deletion_without_the_shard_key_index_is_inconsistent() {
    let cluster = ProcessCluster::start(2).await;
    let client = cluster.client().await;
    let ns = "mig7.c";
    let (owner, other) = sharded_with_split(&client, ns, 400, 200).await;
    for a in [300, 0] {
        admin(
            &client,
            doc! {"moveChunk": ns, "find": {"a": a}, "to": &other},
        )
        .await
        .unwrap();
    }
    let check = || async {
        crate::harness::cursor_documents(
            &client.database("mig7"),
            doc! {"checkMetadataConsistency": 1, "cursor": {}},
        )
        .await
        .unwrap()
    };
    assert_eq!(check().await, Vec::<Document>::new());
    let names = shard_names(&client).await;
    let port = cluster.shard_port(names.iter().position(|n| *n == owner).unwrap());
    let donor = direct_client(port).await;
    donor
        .database("mig7")
        .run_command(doc! {"dropIndexes": "c", "index": "a_1"})
        .await
        .unwrap();
    let found = check().await;
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(
        found[0].get_str("type").unwrap(),
        "RangeDeletionMissingShardKeyIndex"
    );
    assert_eq!(
        found[0].get_document("details").unwrap(),
        &doc! {"namespace": ns, "shard": &owner, "shardKey": {"a": 1}}
    );
}

/// A retryable write sent again after its document's range moved is answered from its record
/// on the new owner: nothing applies twice.
async fn retried_writes_after_a_move_apply_once(client: &Client, addr: std::net::SocketAddr) {
    use crate::wire::RawConnection;
    use mongodb::bson::spec::BinarySubtype;
    let ns = "mig6.c";
    let (_, other) = sharded_with_split(client, ns, 400, 200).await;
    let send = |command: Document, session: u8| async move {
        let mut body = command;
        body.insert(
            "lsid",
            doc! {"id": mongodb::bson::Binary {subtype: BinarySubtype::Uuid, bytes: vec![session; 16]}},
        );
        body.insert("txnNumber", 1_i64);
        body.insert("$db", "mig6");
        RawConnection::connect(addr).await.command(body).await
    };
    let writes = [
        doc! {"update": "c", "updates": [{"q": {"a": 300}, "u": {"$inc": {"v": 1}}}]},
        doc! {"insert": "c", "documents": [{"_id": 1000, "a": 350, "v": 0}]},
        doc! {"delete": "c", "deletes": [{"q": {"a": 250}, "limit": 1}]},
        doc! {"findAndModify": "c", "query": {"a": 260}, "update": {"$inc": {"v": 1}}, "new": true},
    ];
    let mut first = Vec::new();
    for (i, write) in writes.iter().enumerate() {
        first.push(send(write.clone(), 61 + i as u8).await);
    }
    admin(
        client,
        doc! {"moveChunk": ns, "find": {"a": 300}, "to": &other},
    )
    .await
    .unwrap();
    assert_eq!(chunk_owner(client, ns, 300).await, other);
    for (i, write) in writes.iter().enumerate() {
        let again = send(write.clone(), 61 + i as u8).await;
        for field in ["ok", "n", "nModified", "value"] {
            assert_eq!(
                again.get(field),
                first[i].get(field),
                "{write}: {again} after {}",
                first[i]
            );
        }
        assert!(again.get("writeErrors").is_none(), "{again}");
    }
    let coll = client.database("mig6").collection::<Document>("c");
    let get = |a: i32| {
        let coll = coll.clone();
        async move { coll.find_one(doc! {"a": a}).await.unwrap() }
    };
    assert_eq!(get(300).await.unwrap().get_i32("v").unwrap(), 1);
    assert_eq!(get(260).await.unwrap().get_i32("v").unwrap(), 1);
    assert!(get(250).await.is_none());
    assert_eq!(coll.count_documents(doc! {"_id": 1000}).await.unwrap(), 1);
    assert_eq!(all_by_id(&coll).await.len(), 400);
}

#[tokio::test]
async fn retried_writes_after_a_move_apply_once_in_process() {
    let cluster = crate::harness::TestCluster::start().await;
    retried_writes_after_a_move_apply_once(&cluster.client, cluster.addr).await;
    cluster.shutdown().await;
}

#[tokio::test]
async fn retried_writes_after_a_move_apply_once_separate_processes() {
    let cluster = ProcessCluster::start(2).await;
    let addr = format!("127.0.0.1:{}", cluster.router_port)
        .parse()
        .unwrap();
    retried_writes_after_a_move_apply_once(&cluster.client().await, addr).await;
}

/// A recipient pacing its inserts (MongoDB's `migrateCloneInsertionBatchSize` and
/// `migrateCloneInsertionBatchDelayMS`) receives the same documents.
#[tokio::test]
async fn a_paced_recipient_receives_everything() {
    let cluster = crate::harness::TestCluster::with_parameters(&[
        ("migrateCloneInsertionBatchSize", "7"),
        ("migrateCloneInsertionBatchDelayMS", "1"),
    ])
    .await;
    writes_during_a_migration_are_kept(&cluster.client).await;
    cluster.shutdown().await;
}
