//! Crash safety of renaming a sharded collection (the config server's rename coordinator),
//! every role a separate process: `faults.skeep` (sharded) is renamed onto `faults.sgone`
//! (sharded, `dropTarget`) while the config server is killed before each phase, or while a
//! shard — the database's primary or the other one — is killed inside the rename's critical
//! section, before renaming its data. After the restart the rename finishes on its own: the
//! target holds the source's UUID and documents, no critical section, coordinator or lock is
//! left, the metadata is consistent and other collections are untouched.

use crate::ddl_faults::{
    DB, TEST_COMMANDS, assert_no_chunk_outlives_its_collection, crash_config_server_during, names,
    pause_before, populate, primary_and_other, wait_for_coordinators, wait_paused,
};
use crate::harness::{
    ProcessCluster, admin, assert_metadata_consistent, collection_entry, error_code,
};
use mongodb::Client;
use mongodb::bson::{Bson, Document, doc};

async fn rename_skeep(client: Client) -> mongodb::error::Result<Document> {
    admin(
        &client,
        doc! {
            "renameCollection": format!("{DB}.skeep"),
            "to": format!("{DB}.sgone"),
            "dropTarget": true,
        },
    )
    .await
}

/// The rename sent again once it finished: the source is gone, so MongoDB's answer is
/// NamespaceNotFound (a rename is not a retryable write); anything else is a failure.
async fn rename_skeep_again(client: Client) -> mongodb::error::Result<Document> {
    match rename_skeep(client).await {
        Err(e) if error_code(&e) == Some(26) => Ok(doc! {}),
        other => other,
    }
}

async fn uuid_of(cluster: &ProcessCluster, ns: &str) -> Option<Bson> {
    collection_entry(&cluster.config_client().await, ns)
        .await
        .and_then(|entry| entry.get("uuid").cloned())
}

async fn count(cluster: &ProcessCluster, db: &str, coll: &str) -> u64 {
    cluster
        .client()
        .await
        .database(db)
        .collection::<Document>(coll)
        .count_documents(doc! {})
        .await
        .unwrap()
}

async fn check_renamed(cluster: &ProcessCluster, source_uuid: &Bson) {
    let client = cluster.client().await;
    let config = cluster.config_client().await.database("config");
    assert_eq!(uuid_of(cluster, &format!("{DB}.skeep")).await, None);
    assert_eq!(
        uuid_of(cluster, &format!("{DB}.sgone")).await.as_ref(),
        Some(source_uuid),
        "the target is the renamed source"
    );
    assert_no_chunk_outlives_its_collection(&config).await;
    for (collection, filter) in [
        ("system.sharding_ddl_coordinators", doc! {}),
        ("locks", doc! {"state": 2}),
    ] {
        let left = config
            .collection::<Document>(collection)
            .count_documents(filter)
            .await
            .unwrap();
        assert_eq!(left, 0, "left in config.{collection}");
    }
    for i in 0..2 {
        let sections = cluster
            .shard_client(i)
            .await
            .database("config")
            .collection::<Document>("collection_critical_sections")
            .count_documents(doc! {})
            .await
            .unwrap();
        assert_eq!(sections, 0, "shard {i} still holds a critical section");
    }
    assert_eq!(names(&client, DB).await, vec!["gone", "keep", "sgone"]);
    assert_eq!(count(cluster, DB, "sgone").await, 100);
    assert_eq!(count(cluster, DB, "keep").await, 100);
    assert_eq!(count(cluster, "untouched", "data").await, 100);
    let renamed = client.database(DB).collection::<Document>("sgone");
    renamed.insert_one(doc! {"_id": "new"}).await.unwrap();
    assert_eq!(count(cluster, DB, "sgone").await, 101);
    assert_metadata_consistent(&client, true, "renaming a sharded collection").await;
}

async fn config_server_killed_before(phase: &str) {
    let mut cluster = ProcessCluster::start_with(2, TEST_COMMANDS).await;
    populate(&cluster.client().await).await;
    let source_uuid = uuid_of(&cluster, &format!("{DB}.skeep")).await.unwrap();
    crash_config_server_during(&mut cluster, "renameCollection", phase, rename_skeep_again).await;
    check_renamed(&cluster, &source_uuid).await;
}

#[tokio::test]
async fn sharded_rename_survives_a_config_server_crash_before_its_checks() {
    config_server_killed_before("checkPreconditions").await;
}

#[tokio::test]
async fn sharded_rename_survives_a_config_server_crash_before_blocking_crud() {
    config_server_killed_before("blockCrud").await;
}

#[tokio::test]
async fn sharded_rename_survives_a_config_server_crash_before_renaming_metadata() {
    config_server_killed_before("renameMetadata").await;
}

#[tokio::test]
async fn sharded_rename_survives_a_config_server_crash_before_unblocking_crud() {
    config_server_killed_before("unblockCrud").await;
}

/// Kills the database's primary shard or the other one while it is in the rename's critical
/// section, before it renamed its data, and starts it again while the coordinator retries.
/// The primary forwarded the client's rename to the config server: killing it fails that
/// request, and the coordinator finishes without it.
async fn shard_killed_in_the_critical_section(primary: bool) {
    let mut cluster = ProcessCluster::start_with(2, TEST_COMMANDS).await;
    let client = cluster.client().await;
    populate(&client).await;
    let source_uuid = uuid_of(&cluster, &format!("{DB}.skeep")).await.unwrap();
    let (primary_index, other) = primary_and_other(&cluster).await;
    let index = if primary { primary_index } else { other };
    let shard = cluster.shard_client(index).await;
    pause_before(&shard, "renameCollectionParticipant", "rename").await;
    let ddl = tokio::spawn(rename_skeep(client.clone()));
    wait_paused(&shard).await;
    cluster.stop_shard(index);
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    if primary {
        assert!(
            ddl.await.unwrap().is_err(),
            "the shard it went through died"
        );
        cluster.start_shard_again(index);
    } else {
        assert!(!ddl.is_finished(), "the coordinator waits for the shard");
        cluster.start_shard_again(index);
        ddl.await
            .unwrap()
            .unwrap_or_else(|e| panic!("the rename with a shard restarted: {e}"));
    }
    wait_for_coordinators(&cluster).await;
    rename_skeep_again(client.clone()).await.unwrap();
    check_renamed(&cluster, &source_uuid).await;
}

#[tokio::test]
async fn sharded_rename_survives_a_crash_of_the_primary_shard() {
    shard_killed_in_the_critical_section(true).await;
}

#[tokio::test]
async fn sharded_rename_survives_a_crash_of_another_shard() {
    shard_killed_in_the_critical_section(false).await;
}

/// The critical section is recoverable: a shard restarted while it holds it (the coordinator
/// paused before renaming the metadata) still makes CRUD on the source wait, rather than
/// serving it from data it already renamed away.
#[tokio::test]
async fn a_restarted_shard_still_blocks_crud_in_the_critical_section() {
    let mut cluster = ProcessCluster::start_with(2, TEST_COMMANDS).await;
    let client = cluster.client().await;
    populate(&client).await;
    let source_uuid = uuid_of(&cluster, &format!("{DB}.skeep")).await.unwrap();
    let (_, other) = primary_and_other(&cluster).await;
    let config = cluster.config_client().await;
    pause_before(&config, "renameCollection", "renameMetadata").await;
    let ddl = tokio::spawn(rename_skeep(client.clone()));
    wait_paused(&config).await;
    cluster.stop_shard(other);
    cluster.start_shard_again(other);
    // Point reads, so that some go to the restarted shard alone.
    let reads: Vec<_> = (0..10)
        .map(|id| {
            let client = client.clone();
            tokio::spawn(async move {
                client
                    .database(DB)
                    .collection::<Document>("skeep")
                    .find_one(doc! {"_id": id})
                    .await
            })
        })
        .collect();
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    for read in &reads {
        assert!(!read.is_finished(), "every read waits for the section");
    }
    admin(
        &config,
        doc! {"configureFailPoint": "hangBeforeDdlPhase", "mode": "off"},
    )
    .await
    .unwrap();
    ddl.await.unwrap().expect("the rename finishes");
    for read in reads {
        assert_eq!(read.await.unwrap().unwrap(), None, "the source is gone");
    }
    check_renamed(&cluster, &source_uuid).await;
}
