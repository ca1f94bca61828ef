//! Crash safety of coordinated DDL, with every role a separate process: the config server is
//! killed (SIGKILL) while a `drop` or `dropDatabase` coordinator waits before each of its
//! phases (the router that sent it too, so nothing sends it again), or a participant shard is
//! killed while the coordinator drops on the shards. After the restart the operation finishes
//! on its own, the metadata is consistent, no other collection or database is touched, and a
//! client sending the same DDL again gets its outcome.

use crate::harness::{ProcessCluster, admin};
use futures::TryStreamExt;
use mongodb::Client;
use mongodb::bson::{Document, doc};

const TEST_COMMANDS: &[&str] = &["--enable-test-commands"];
const DB: &str = "faults";

/// `faults.keep` (unsharded), `faults.skeep` (sharded over both shards), the collections a
/// test drops (`faults.gone` unsharded, `faults.sgone` sharded), and `untouched.data`.
async fn populate(client: &Client) {
    let db = client.database(DB);
    for name in ["keep", "gone", "skeep", "sgone"] {
        db.create_collection(name).await.unwrap();
    }
    for name in ["skeep", "sgone"] {
        admin(
            client,
            doc! {"shardCollection": format!("{DB}.{name}"), "key": {"_id": "hashed"}},
        )
        .await
        .unwrap();
    }
    let docs: Vec<Document> = (0..100).map(|i| doc! {"_id": i, "v": i}).collect();
    for name in ["keep", "gone", "skeep", "sgone"] {
        db.collection::<Document>(name)
            .insert_many(docs.clone())
            .await
            .unwrap();
    }
    client
        .database("untouched")
        .collection::<Document>("data")
        .insert_many(docs)
        .await
        .unwrap();
}

async fn run_ddl(client: Client, operation: &str) -> mongodb::error::Result<()> {
    match operation {
        "dropCollection" => {
            let db = client.database(DB);
            db.collection::<Document>("sgone").drop().await?;
            db.collection::<Document>("gone").drop().await
        }
        _ => client.database(DB).drop().await,
    }
}

async fn names(client: &Client, db: &str) -> Vec<String> {
    let mut names = client.database(db).list_collection_names().await.unwrap();
    names.sort();
    names
}

/// What every test checks once the DDL returned: the dropped collections are gone from the
/// routing table and from every shard, nothing is left locked or half-done, and the data of
/// the other collections and databases is all there.
async fn check_converged(cluster: &ProcessCluster, operation: &str) {
    let client = cluster.client().await;
    let config = cluster.config_client().await.database("config");
    let dropped_db = operation == "dropDatabase";
    let gone: &[&str] = if dropped_db {
        &["gone", "keep", "sgone", "skeep"]
    } else {
        &["gone", "sgone"]
    };
    for name in gone {
        let ns = format!("{DB}.{name}");
        let entry = config
            .collection::<Document>("collections")
            .find_one(doc! {"_id": &ns})
            .await
            .unwrap();
        assert!(entry.is_none(), "{ns} left in config.collections");
    }
    // No chunk outlives its collection.
    let uuids: Vec<_> = config
        .collection::<Document>("collections")
        .find(doc! {})
        .await
        .unwrap()
        .try_collect::<Vec<_>>()
        .await
        .unwrap()
        .into_iter()
        .filter_map(|c| c.get("uuid").cloned())
        .collect();
    let orphaned = config
        .collection::<Document>("chunks")
        .count_documents(doc! {"uuid": {"$nin": uuids}})
        .await
        .unwrap();
    assert_eq!(orphaned, 0, "chunks of dropped collections");
    let pending = config
        .collection::<Document>("system.sharding_ddl_coordinators")
        .count_documents(doc! {})
        .await
        .unwrap();
    assert_eq!(pending, 0, "a coordinator left unfinished");
    let locked = config
        .collection::<Document>("locks")
        .count_documents(doc! {"state": 2})
        .await
        .unwrap();
    assert_eq!(locked, 0, "a DDL lock left held");
    let database_entry = config
        .collection::<Document>("databases")
        .find_one(doc! {"_id": DB})
        .await
        .unwrap();
    assert_eq!(database_entry.is_none(), dropped_db);

    for i in 0..2 {
        let shard = cluster.shard_client(i).await;
        let on_shard = names(&shard, DB).await;
        for name in gone {
            assert!(
                !on_shard.contains(&name.to_string()),
                "shard {i} still has {DB}.{name}: {on_shard:?}"
            );
        }
    }

    if !dropped_db {
        assert_eq!(names(&client, DB).await, vec!["keep", "skeep"]);
        for name in ["keep", "skeep"] {
            let n = client
                .database(DB)
                .collection::<Document>(name)
                .count_documents(doc! {})
                .await
                .unwrap();
            assert_eq!(n, 100, "{DB}.{name} lost documents");
        }
    }
    let consistency = client
        .database("admin")
        .run_command(doc! {"checkMetadataConsistency": 1, "checkIndexes": true})
        .await
        .unwrap();
    let found = consistency
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap();
    assert!(
        found.is_empty(),
        "inconsistent after {operation}: {found:?}"
    );
    let untouched = client
        .database("untouched")
        .collection::<Document>("data")
        .count_documents(doc! {})
        .await
        .unwrap();
    assert_eq!(untouched, 100);
    // The namespace works again: re-created, written and read.
    let again = client.database(DB).collection::<Document>("sgone");
    again.insert_one(doc! {"_id": "new"}).await.unwrap();
    assert_eq!(again.count_documents(doc! {}).await.unwrap(), 1);
}

async fn pause_before(config: &Client, operation: &str, phase: &str) {
    admin(
        config,
        doc! {
            "configureFailPoint": "hangBeforeDdlPhase",
            "mode": "alwaysOn",
            "data": {"operation": operation, "phase": phase},
        },
    )
    .await
    .unwrap();
}

async fn wait_paused(config: &Client) {
    admin(
        config,
        doc! {"waitForFailPoint": "hangBeforeDdlPhase", "timesEntered": 1, "maxTimeMS": 30000},
    )
    .await
    .unwrap();
}

/// Kills the config server while the coordinator waits before `phase`.
async fn config_server_killed_before(operation: &'static str, phase: &str) {
    let mut cluster = ProcessCluster::start_with(2, TEST_COMMANDS).await;
    let client = cluster.client().await;
    populate(&client).await;
    pause_before(&cluster.config_client().await, operation, phase).await;
    let ddl = tokio::spawn(run_ddl(client.clone(), operation));
    wait_paused(&cluster.config_client().await).await;
    cluster.stop_router();
    cluster.restart_config();
    assert!(ddl.await.unwrap().is_err(), "its router was killed");
    // Nobody sends the DDL again: the restarted config server resumes it by itself.
    let config = cluster.config_client().await.database("config");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while config
        .collection::<Document>("system.sharding_ddl_coordinators")
        .count_documents(doc! {})
        .await
        .unwrap()
        > 0
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the coordinator did not finish"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    cluster.start_router_again();
    let client = cluster.client().await;
    // A client retrying gets the outcome.
    run_ddl(client, operation)
        .await
        .unwrap_or_else(|e| panic!("{operation} again after a crash before {phase}: {e}"));
    check_converged(&cluster, operation).await;
}

/// Kills the database's primary shard while the coordinator is about to drop on the shards,
/// and starts it again while the coordinator retries.
async fn primary_shard_killed_during(operation: &'static str) {
    let mut cluster = ProcessCluster::start_with(2, TEST_COMMANDS).await;
    let client = cluster.client().await;
    populate(&client).await;
    let config = cluster.config_client().await;
    let primary = config
        .database("config")
        .collection::<Document>("databases")
        .find_one(doc! {"_id": DB})
        .await
        .unwrap()
        .unwrap()
        .get_str("primary")
        .unwrap()
        .to_string();
    let host = config
        .database("config")
        .collection::<Document>("shards")
        .find_one(doc! {"_id": &primary})
        .await
        .unwrap()
        .unwrap()
        .get_str("host")
        .unwrap()
        .to_string();
    let index = cluster.shard_index(&host);
    pause_before(&config, operation, "dropOnShards").await;
    let ddl = tokio::spawn(run_ddl(client.clone(), operation));
    wait_paused(&config).await;
    cluster.stop_shard(index);
    admin(
        &config,
        doc! {"configureFailPoint": "hangBeforeDdlPhase", "mode": "off"},
    )
    .await
    .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(!ddl.is_finished(), "the coordinator waits for the shard");
    cluster.start_shard_again(index);
    ddl.await
        .unwrap()
        .unwrap_or_else(|e| panic!("{operation} with its primary shard restarted: {e}"));
    check_converged(&cluster, operation).await;
}

#[tokio::test]
async fn drop_survives_a_config_server_crash_before_removing_metadata() {
    config_server_killed_before("dropCollection", "removeMetadata").await;
}

#[tokio::test]
async fn drop_survives_a_config_server_crash_before_dropping_on_shards() {
    config_server_killed_before("dropCollection", "dropOnShards").await;
}

#[tokio::test]
async fn drop_survives_a_participant_crash() {
    primary_shard_killed_during("dropCollection").await;
}

#[tokio::test]
async fn drop_database_survives_a_config_server_crash_before_removing_metadata() {
    config_server_killed_before("dropDatabase", "removeMetadata").await;
}

#[tokio::test]
async fn drop_database_survives_a_config_server_crash_before_dropping_on_shards() {
    config_server_killed_before("dropDatabase", "dropOnShards").await;
}

#[tokio::test]
async fn drop_database_survives_a_participant_crash() {
    primary_shard_killed_during("dropDatabase").await;
}
