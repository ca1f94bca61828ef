//! Migrations interrupted by `kill -9`: a donor killed before its critical section, inside it
//! before the commit, or after the commit before it persisted the decision completes the
//! migration after its restart by the decision the config server's chunks show — nothing lost,
//! nothing visible twice, the collection writable again; a recipient killed while cloning
//! makes the migration abort and its copies go.

use crate::ddl_faults::TEST_COMMANDS;
use crate::harness::{
    ProcessCluster, admin, all_by_id, assert_metadata_consistent, direct_client, shard_names,
};
use mongodb::Client;
use mongodb::bson::{Document, doc};
use std::time::{Duration, Instant};

const NS: &str = "migfault.c";

/// `NS` sharded on `{a: 1}`, 400 documents, split at 200; the owner of `[200, MaxKey)` and the
/// other shard, as cluster indexes.
async fn setup(cluster: &ProcessCluster, client: &Client) -> (usize, usize, String) {
    admin(client, doc! {"shardCollection": NS, "key": {"a": 1}})
        .await
        .unwrap();
    let docs: Vec<Document> = (0..400).map(|i| doc! {"_id": i, "a": i, "v": 0}).collect();
    coll(client).insert_many(docs).await.unwrap();
    admin(client, doc! {"split": NS, "middle": {"a": 200}})
        .await
        .unwrap();
    let shards = admin(client, doc! {"listShards": 1}).await.unwrap();
    let hosts: Vec<(String, String)> = shards
        .get_array("shards")
        .unwrap()
        .iter()
        .map(|s| {
            let s = s.as_document().unwrap();
            (
                s.get_str("_id").unwrap().into(),
                s.get_str("host").unwrap().into(),
            )
        })
        .collect();
    let owner = owner_of(client, 300).await;
    let donor = hosts.iter().find(|(n, _)| *n == owner).unwrap();
    let recipient = hosts.iter().find(|(n, _)| *n != owner).unwrap();
    (
        cluster.shard_index(&donor.1),
        cluster.shard_index(&recipient.1),
        recipient.0.clone(),
    )
}

fn coll(client: &Client) -> mongodb::Collection<Document> {
    client.database("migfault").collection("c")
}

async fn owner_of(client: &Client, a: i32) -> String {
    let entry = crate::harness::collection_entry(client, NS).await.unwrap();
    let chunks = crate::harness::cursor_documents(
        &client.database("config"),
        doc! {"find": "chunks", "filter": {"uuid": entry.get("uuid").unwrap().clone()}},
    )
    .await
    .unwrap();
    chunks
        .iter()
        .find(|c| {
            let lo = c.get_document("min").unwrap().get("a").unwrap();
            lo.as_i32().is_none_or(|m| m <= a)
                && c.get_document("max")
                    .unwrap()
                    .get("a")
                    .unwrap()
                    .as_i32()
                    .is_none_or(|m| a < m)
        })
        .unwrap()
        .get_str("shard")
        .unwrap()
        .to_string()
}

/// Polls until `check` holds (30 s at most).
async fn eventually<F, Fut>(what: &str, check: F)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + Duration::from_secs(30);
    while !check().await {
        assert!(Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn count(client: &Client, db: &str, coll: &str, filter: Document) -> u64 {
    client
        .database(db)
        .collection::<Document>(coll)
        .count_documents(filter)
        .await
        .unwrap()
}

/// Kills the donor paused at `step`, restarts it, and checks the outcome.
async fn donor_killed_at(step: &str, moved: bool) {
    let Paused {
        mut cluster,
        client,
        donor,
        recipient,
        recipient_name,
        moving,
    } = paused_migration(step).await;
    let port = cluster.shard_port(donor);
    let (_, dir) = cluster.kill_shard(donor);
    let _ = moving.await;
    cluster.restart_shard(&dir, port).await;
    let donor_client = direct_client(port).await;
    eventually("the donor completes the migration", || async {
        count(&donor_client, "config", "migrationCoordinators", doc! {}).await == 0
    })
    .await;
    let expected = if moved {
        recipient_name.clone()
    } else {
        owner_of(&client, 100).await
    };
    assert_eq!(owner_of(&client, 300).await, expected, "after {step}");
    // Nothing lost, nothing twice, writable again.
    let all = all_by_id(&coll(&client)).await;
    assert_eq!(all.len(), 400, "after {step}");
    let updated = coll(&client)
        .update_many(doc! {}, doc! {"$inc": {"v": 1}})
        .await
        .unwrap();
    assert_eq!(updated.modified_count, 400);
    assert_metadata_consistent(&client, true, step).await;
    if !moved {
        // The recipient's copies go at once.
        let recipient_client = direct_client(cluster.shard_port(recipient)).await;
        eventually("the recipient deletes its copies", || async {
            count(&recipient_client, "migfault", "c", doc! {}).await == 0
        })
        .await;
    }
    // And the range moves when asked again.
    let to = if moved {
        shard_names(&client)
            .await
            .into_iter()
            .find(|s| *s != recipient_name)
            .unwrap()
    } else {
        recipient_name
    };
    admin(
        &client,
        doc! {"moveChunk": NS, "find": {"a": 300}, "to": &to, "_waitForDelete": true},
    )
    .await
    .unwrap();
    assert_eq!(owner_of(&client, 300).await, to);
    assert_eq!(all_by_id(&coll(&client)).await.len(), 400);
}

#[tokio::test]
async fn a_donor_killed_before_its_critical_section_aborts() {
    donor_killed_at("moveChunkHangAtStep4", false).await;
}

#[tokio::test]
async fn a_donor_killed_in_its_critical_section_aborts() {
    donor_killed_at("moveChunkHangAtStep5", false).await;
}

#[tokio::test]
async fn a_donor_killed_after_the_commit_completes_it() {
    donor_killed_at("moveChunkHangAtStep6", true).await;
}

/// A cluster whose donor is paused at a fail point, a migration of `[200, MaxKey)` under way.
struct Paused {
    cluster: ProcessCluster,
    client: Client,
    donor: usize,
    recipient: usize,
    recipient_name: String,
    moving: tokio::task::JoinHandle<mongodb::error::Result<Document>>,
}

async fn paused_migration(step: &str) -> Paused {
    let cluster = ProcessCluster::start_with(2, TEST_COMMANDS).await;
    let client = cluster.client().await;
    let (donor, recipient, recipient_name) = setup(&cluster, &client).await;
    let donor_client = direct_client(cluster.shard_port(donor)).await;
    admin(
        &donor_client,
        doc! {"configureFailPoint": step, "mode": "alwaysOn"},
    )
    .await
    .unwrap();
    let moving = {
        let client = client.clone();
        let to = recipient_name.clone();
        tokio::spawn(async move {
            admin(
                &client,
                doc! {"moveChunk": NS, "find": {"a": 300}, "to": to},
            )
            .await
        })
    };
    admin(
        &donor_client,
        doc! {"waitForFailPoint": step, "timesEntered": 1, "maxTimeMS": 30000},
    )
    .await
    .unwrap();
    Paused {
        cluster,
        client,
        donor,
        recipient,
        recipient_name,
        moving,
    }
}

/// Checks that the migration aborted: the range stayed, everything reads and writes, the
/// recipient's copies go, and the donor's coordinator document is gone.
async fn assert_aborted(cluster: &ProcessCluster, client: &Client, donor: usize, recipient: usize) {
    let donor_client = direct_client(cluster.shard_port(donor)).await;
    eventually("the donor completes the migration", || async {
        count(&donor_client, "config", "migrationCoordinators", doc! {}).await == 0
    })
    .await;
    assert_eq!(owner_of(client, 300).await, owner_of(client, 100).await);
    assert_eq!(all_by_id(&coll(client)).await.len(), 400);
    let updated = coll(client)
        .update_many(doc! {}, doc! {"$inc": {"v": 1}})
        .await
        .unwrap();
    assert_eq!(updated.modified_count, 400);
    let recipient_client = direct_client(cluster.shard_port(recipient)).await;
    eventually("the recipient deletes its copies", || async {
        count(&recipient_client, "migfault", "c", doc! {}).await == 0
    })
    .await;
    assert_metadata_consistent(client, true, "an aborted migration").await;
}

/// The recipient dies once caught up: the donor's commit cannot happen, the migration aborts,
/// and the restarted recipient learns it and deletes its copies.
#[tokio::test]
async fn a_recipient_killed_during_the_migration_aborts_it() {
    let Paused {
        mut cluster,
        client,
        donor,
        recipient,
        moving,
        ..
    } = paused_migration("moveChunkHangAtStep4").await;
    // `$currentOp` shows the migration on both sides.
    for (shard, desc, role) in [
        (donor, "MoveChunk", "donor"),
        (recipient, "migrateThread", "recipient"),
    ] {
        let node = direct_client(cluster.shard_port(shard)).await;
        let ops = crate::harness::cursor_documents(
            &node.database("admin"),
            doc! {"aggregate": 1, "pipeline": [{"$currentOp": {}}, {"$match": {"desc": desc}}], "cursor": {}},
        )
        .await
        .unwrap();
        assert_eq!(ops.len(), 1, "{desc}: {ops:?}");
        let migration = ops[0].get_document("migration").unwrap();
        assert_eq!(migration.get_str("role").unwrap(), role);
        assert_eq!(ops[0].get_str("ns").unwrap(), NS);
        if role == "recipient" {
            assert_eq!(migration.get_str("state").unwrap(), "steady", "{migration}");
            assert_eq!(
                migration
                    .get_document("counts")
                    .unwrap()
                    .get_i64("cloned")
                    .unwrap(),
                200
            );
        } else {
            assert_eq!(migration.get_i64("cloned").unwrap(), 200, "{migration}");
        }
    }
    cluster.stop_shard(recipient);
    let donor_client = direct_client(cluster.shard_port(donor)).await;
    admin(
        &donor_client,
        doc! {"configureFailPoint": "moveChunkHangAtStep4", "mode": "off"},
    )
    .await
    .unwrap();
    assert!(moving.await.unwrap().is_err(), "the migration fails");
    cluster.start_shard_again(recipient);
    assert_aborted(&cluster, &client, donor, recipient).await;
}

/// The config server dies while the donor is in its critical section: the DDL lock the
/// migration held is gone with it, so the commit is refused, and the migration aborts.
#[tokio::test]
async fn a_config_server_killed_during_the_critical_section_aborts_it() {
    let Paused {
        mut cluster,
        client,
        donor,
        recipient,
        moving,
        ..
    } = paused_migration("moveChunkHangAtStep5").await;
    cluster.restart_config();
    let donor_client = direct_client(cluster.shard_port(donor)).await;
    admin(
        &donor_client,
        doc! {"configureFailPoint": "moveChunkHangAtStep5", "mode": "off"},
    )
    .await
    .unwrap();
    let _ = moving.await;
    assert_aborted(&cluster, &client, donor, recipient).await;
}
