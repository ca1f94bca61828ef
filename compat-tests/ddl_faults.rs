//! Crash safety of coordinated DDL, with every role a separate process: the config server is
//! killed (SIGKILL) while a `drop` or `dropDatabase` coordinator waits before each of its
//! phases (the router that sent it too, so nothing sends it again), or a participant shard is
//! killed while the coordinator drops on the shards. After the restart the operation finishes
//! on its own, the metadata is consistent, no other collection or database is touched, and a
//! client sending the same DDL again gets its outcome.

use crate::harness::{
    ProcessCluster, admin, assert_metadata_consistent, database_entry, find_all, shard_documents,
    shard_host,
};
use futures::TryStreamExt;
use mongodb::Client;
use mongodb::bson::{Document, doc};

pub(crate) const TEST_COMMANDS: &[&str] = &["--enable-test-commands"];
pub(crate) const DB: &str = "faults";

/// `faults.keep` (unsharded), `faults.skeep` (sharded over both shards), the collections a
/// test drops (`faults.gone` unsharded, `faults.sgone` sharded), and `untouched.data`.
pub(crate) async fn populate(client: &Client) {
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

pub(crate) async fn names(client: &Client, db: &str) -> Vec<String> {
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
    assert_no_chunk_outlives_its_collection(&config).await;
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
    assert_metadata_consistent(&client, true, operation).await;
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

/// Fails if `config.chunks` holds chunks of a collection `config.collections` no longer has.
pub(crate) async fn assert_no_chunk_outlives_its_collection(config: &mongodb::Database) {
    let uuids: Vec<_> = find_all(&config.collection::<Document>("collections"), doc! {})
        .await
        .into_iter()
        .filter_map(|c| c.get("uuid").cloned())
        .collect();
    let orphaned = config
        .collection::<Document>("chunks")
        .count_documents(doc! {"uuid": {"$nin": uuids}})
        .await
        .unwrap();
    assert_eq!(orphaned, 0, "chunks of dropped collections");
}

pub(crate) async fn pause_before(config: &Client, operation: &str, phase: &str) {
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

pub(crate) async fn wait_paused(config: &Client) {
    admin(
        config,
        doc! {"waitForFailPoint": "hangBeforeDdlPhase", "timesEntered": 1, "maxTimeMS": 30000},
    )
    .await
    .unwrap();
}

/// Waits until the config server has no DDL coordinator left (a restarted one resumes them by
/// itself).
pub(crate) async fn wait_for_coordinators(cluster: &ProcessCluster) {
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
}

/// Sends `ddl` through the router and kills the config server — with the router, so nothing
/// sends the DDL again — while its coordinator waits before `phase`; once the restarted config
/// server has finished it by itself, sends it again through a new router: the retry gets the
/// outcome.
pub(crate) async fn crash_config_server_during<F, Fut, T>(
    cluster: &mut ProcessCluster,
    operation: &str,
    phase: &str,
    ddl: F,
) where
    F: Fn(Client) -> Fut,
    Fut: std::future::Future<Output = mongodb::error::Result<T>> + Send + 'static,
    T: Send + 'static,
{
    let config = cluster.config_client().await;
    pause_before(&config, operation, phase).await;
    let first = tokio::spawn(ddl(cluster.client().await));
    wait_paused(&config).await;
    cluster.stop_router();
    cluster.restart_config();
    assert!(first.await.unwrap().is_err(), "its router was killed");
    wait_for_coordinators(cluster).await;
    cluster.start_router_again();
    if let Err(e) = ddl(cluster.client().await).await {
        panic!("{operation} sent again after a crash before {phase}: {e}");
    }
}

/// Kills the config server while the coordinator waits before `phase`.
async fn config_server_killed_before(operation: &'static str, phase: &str) {
    let mut cluster = ProcessCluster::start_with(2, TEST_COMMANDS).await;
    populate(&cluster.client().await).await;
    crash_config_server_during(&mut cluster, operation, phase, |client| {
        run_ddl(client, operation)
    })
    .await;
    check_converged(&cluster, operation).await;
}

/// The process indexes of the database's primary shard and of the other shard.
pub(crate) async fn primary_and_other(cluster: &ProcessCluster) -> (usize, usize) {
    let config = cluster.config_client().await;
    let entry = database_entry(&config, DB).await;
    let host = shard_host(&config, entry.get_str("primary").unwrap()).await;
    let primary = cluster.shard_index(&host);
    (primary, 1 - primary)
}

/// Kills the database's primary shard while the coordinator is about to drop on the shards,
/// and starts it again while the coordinator retries.
async fn primary_shard_killed_during(operation: &'static str) {
    let mut cluster = ProcessCluster::start_with(2, TEST_COMMANDS).await;
    let client = cluster.client().await;
    populate(&client).await;
    let config = cluster.config_client().await;
    let (index, _) = primary_and_other(&cluster).await;
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

/// `shardCollection` of the empty `faults.fresh` on a hashed key: one chunk per shard.
async fn shard_fresh(client: Client) -> mongodb::error::Result<Document> {
    client
        .database("admin")
        .run_command(doc! {"shardCollection": format!("{DB}.fresh"), "key": {"k": "hashed"}})
        .await
}

/// After `shardCollection` of `faults.fresh`, wherever it crashed: sharded once, a chunk on
/// each shard, consistent, and usable.
async fn check_sharded(cluster: &ProcessCluster) {
    let client = cluster.client().await;
    let config = client.database("config");
    let entry = config
        .collection::<Document>("collections")
        .find_one(doc! {"_id": format!("{DB}.fresh")})
        .await
        .unwrap()
        .expect("sharded");
    let chunks = find_all(
        &config.collection::<Document>("chunks"),
        doc! {"uuid": entry.get("uuid").unwrap()},
    )
    .await;
    assert_eq!(chunks.len(), 2, "{chunks:?}");
    assert_metadata_consistent(&client, true, "shardCollection").await;
    let fresh = client.database(DB).collection::<Document>("fresh");
    fresh
        .insert_many((0..100).map(|i| doc! {"k": i}))
        .await
        .unwrap();
    assert_eq!(fresh.count_documents(doc! {}).await.unwrap(), 100);
    for i in 0..2 {
        let local = cluster
            .shard_client(i)
            .await
            .database(DB)
            .collection::<Document>("fresh")
            .count_documents(doc! {})
            .await
            .unwrap();
        assert!(
            local > 0,
            "shard {i} got no document of a hashed collection"
        );
    }
    assert_eq!(
        names(&client, DB).await,
        vec!["fresh", "gone", "keep", "sgone", "skeep"]
    );
}

#[tokio::test]
async fn shard_collection_survives_a_config_server_crash() {
    let mut cluster = ProcessCluster::start_with(2, TEST_COMMANDS).await;
    populate(&cluster.client().await).await;
    crash_config_server_during(&mut cluster, "shardCollection", "onPrimary", shard_fresh).await;
    check_sharded(&cluster).await;
}

/// Sends `ddl` through the router and kills the database's primary shard, which does the
/// coordinator's work, while it waits just before its commit (the other shard already holds
/// its copy); starts it again: the config server's coordinator sends the step again and the
/// client's request answers.
async fn crash_primary_before_commit<Fut, T>(
    cluster: &mut ProcessCluster,
    operation: &str,
    ddl: Fut,
) where
    Fut: std::future::Future<Output = mongodb::error::Result<T>> + Send + 'static,
    T: Send + 'static,
{
    let (primary, _) = primary_and_other(cluster).await;
    let on_primary = cluster.shard_client(primary).await;
    pause_before(&on_primary, operation, "commit").await;
    let ddl = tokio::spawn(ddl);
    wait_paused(&on_primary).await;
    cluster.stop_shard(primary);
    cluster.start_shard_again(primary);
    if let Err(e) = ddl.await.unwrap() {
        panic!("{operation} after its primary restarted: {e}");
    }
}

#[tokio::test]
async fn shard_collection_survives_a_crash_of_its_coordinating_shard() {
    let mut cluster = ProcessCluster::start_with(2, TEST_COMMANDS).await;
    let client = cluster.client().await;
    populate(&client).await;
    crash_primary_before_commit(&mut cluster, "shardCollection", shard_fresh(client)).await;
    check_sharded(&cluster).await;
}

#[tokio::test]
async fn shard_collection_survives_a_participant_crash() {
    let mut cluster = ProcessCluster::start_with(2, TEST_COMMANDS).await;
    let client = cluster.client().await;
    populate(&client).await;
    let (_, other) = primary_and_other(&cluster).await;
    let config = cluster.config_client().await;
    pause_before(&config, "shardCollection", "onPrimary").await;
    let ddl = tokio::spawn(shard_fresh(client.clone()));
    wait_paused(&config).await;
    cluster.stop_shard(other);
    admin(
        &config,
        doc! {"configureFailPoint": "hangBeforeDdlPhase", "mode": "off"},
    )
    .await
    .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(
        !ddl.is_finished(),
        "the coordinator waits for the other shard"
    );
    cluster.start_shard_again(other);
    ddl.await
        .unwrap()
        .expect("shardCollection after a participant restarted");
    check_sharded(&cluster).await;
}

/// `renameCollection` of `faults.keep` to `faults.kept`.
async fn rename_keep(client: Client) -> mongodb::error::Result<Document> {
    client
        .database("admin")
        .run_command(doc! {"renameCollection": format!("{DB}.keep"), "to": format!("{DB}.kept")})
        .await
}

async fn check_renamed(cluster: &ProcessCluster) {
    let client = cluster.client().await;
    assert_eq!(
        names(&client, DB).await,
        vec!["gone", "kept", "sgone", "skeep"]
    );
    let kept = client.database(DB).collection::<Document>("kept");
    assert_eq!(kept.count_documents(doc! {}).await.unwrap(), 100);
    assert_metadata_consistent(&client, false, "renameCollection").await;
    let locked: Vec<Document> = cluster
        .config_client()
        .await
        .database("config")
        .collection::<Document>("locks")
        .find(doc! {"state": 2})
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert!(locked.is_empty(), "DDL locks left held: {locked:?}");
}

#[tokio::test]
async fn rename_survives_a_crash_of_the_primary_shard_holding_the_lock() {
    // The default lease (15 minutes): only the restart can free the lock in time.
    let mut cluster = ProcessCluster::start_with(2, TEST_COMMANDS).await;
    let client = cluster.client().await;
    populate(&client).await;
    let (primary, _) = primary_and_other(&cluster).await;
    let on_primary = cluster.shard_client(primary).await;
    pause_before(&on_primary, "renameCollection", "rename").await;
    let ddl = tokio::spawn(rename_keep(client.clone()));
    wait_paused(&on_primary).await;
    cluster.stop_shard(primary);
    assert!(ddl.await.unwrap().is_err(), "its primary shard died");
    cluster.start_shard_again(primary);
    // The restarted shard registers again, which releases its previous run's lock; the
    // rename never happened, and the client's retry does it.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        match rename_keep(client.clone()).await {
            Ok(_) => break,
            Err(e) => {
                assert!(
                    std::time::Instant::now() < deadline,
                    "rename kept failing: {e}"
                );
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        }
    }
    check_renamed(&cluster).await;
}

#[tokio::test]
async fn rename_survives_a_config_server_crash_while_a_shard_holds_the_lock() {
    let mut cluster = ProcessCluster::start_with(2, TEST_COMMANDS).await;
    let client = cluster.client().await;
    populate(&client).await;
    let (primary, _) = primary_and_other(&cluster).await;
    let on_primary = cluster.shard_client(primary).await;
    pause_before(&on_primary, "renameCollection", "rename").await;
    let ddl = tokio::spawn(rename_keep(client.clone()));
    wait_paused(&on_primary).await;
    cluster.restart_config();
    // The restarted config server still knows the shard holds the lock: a conflicting DDL
    // waits for it.
    let locks = cluster.config_client().await.database("config");
    let held = locks
        .collection::<Document>("locks")
        .find_one(doc! {"_id": format!("{DB}.keep"), "state": 2})
        .await
        .unwrap();
    assert!(
        held.is_some(),
        "the shard's lock survives the config server's restart"
    );
    let drop = tokio::spawn({
        let client = client.clone();
        async move {
            client
                .database(DB)
                .collection::<Document>("keep")
                .drop()
                .await
        }
    });
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(!drop.is_finished(), "the drop waits for the rename's lock");
    admin(
        &on_primary,
        doc! {"configureFailPoint": "hangBeforeDdlPhase", "mode": "off"},
    )
    .await
    .unwrap();
    ddl.await.unwrap().expect("the rename finishes");
    drop.await
        .unwrap()
        .expect("then the drop (of a name that no longer exists)");
    check_renamed(&cluster).await;
}

/// `movePrimary` of `faults` to the shard `to`.
async fn move_faults(client: Client, to: String) -> mongodb::error::Result<Document> {
    client
        .database("admin")
        .run_command(doc! {"movePrimary": DB, "to": to})
        .await
}

/// The name of the shard process `index`, as the routing table knows it.
async fn shard_name(cluster: &ProcessCluster, index: usize) -> String {
    shard_documents(&cluster.config_client().await)
        .await
        .into_iter()
        .find(|s| cluster.shard_index(s.get_str("host").unwrap()) == index)
        .unwrap()
        .get_str("_id")
        .unwrap()
        .to_string()
}

/// After `movePrimary` of `faults` from shard process `donor` to `recipient` (named `to`),
/// wherever it crashed: the new primary recorded, every collection readable from its new
/// place, nothing left behind on the donor but its parts of the sharded collections.
async fn check_moved(cluster: &ProcessCluster, donor: usize, recipient: usize, to: &str) {
    let client = cluster.client().await;
    let entry = client
        .database("config")
        .collection::<Document>("databases")
        .find_one(doc! {"_id": DB})
        .await
        .unwrap()
        .unwrap();
    assert_eq!(entry.get_str("primary"), Ok(to));
    assert_eq!(
        names(&client, DB).await,
        vec!["gone", "keep", "sgone", "skeep"]
    );
    for name in ["gone", "keep", "sgone", "skeep"] {
        let n = client
            .database(DB)
            .collection::<Document>(name)
            .count_documents(doc! {})
            .await
            .unwrap();
        assert_eq!(n, 100, "{DB}.{name} after the move");
    }
    assert_eq!(
        names(&cluster.shard_client(donor).await, DB).await,
        vec!["sgone", "skeep"]
    );
    let on_recipient = names(&cluster.shard_client(recipient).await, DB).await;
    assert_eq!(on_recipient, vec!["gone", "keep", "sgone", "skeep"]);
    assert_metadata_consistent(&client, true, "movePrimary").await;
}

/// Kills the config server while the movePrimary coordinator waits before `phase`.
async fn move_primary_with_config_server_killed_before(phase: &str) {
    let mut cluster = ProcessCluster::start_with(2, TEST_COMMANDS).await;
    let client = cluster.client().await;
    populate(&client).await;
    let (donor, recipient) = primary_and_other(&cluster).await;
    let to = shard_name(&cluster, recipient).await;
    crash_config_server_during(&mut cluster, "movePrimary", phase, |client| {
        move_faults(client, to.clone())
    })
    .await;
    check_moved(&cluster, donor, recipient, &to).await;
}

#[tokio::test]
async fn move_primary_survives_a_config_server_crash_before_the_move() {
    move_primary_with_config_server_killed_before("moveOnDonor").await;
}

#[tokio::test]
async fn move_primary_survives_a_config_server_crash_before_the_cleanup() {
    move_primary_with_config_server_killed_before("cleanupDonor").await;
}

#[tokio::test]
async fn move_primary_survives_a_crash_of_the_donor_before_its_commit() {
    let mut cluster = ProcessCluster::start_with(2, TEST_COMMANDS).await;
    let client = cluster.client().await;
    populate(&client).await;
    let (donor, recipient) = primary_and_other(&cluster).await;
    let to = shard_name(&cluster, recipient).await;
    // The recipient holds every copy when the donor dies.
    crash_primary_before_commit(&mut cluster, "movePrimary", move_faults(client, to.clone())).await;
    check_moved(&cluster, donor, recipient, &to).await;
}

/// A read routed to a database's primary shard while it holds the database's critical section
/// (its movePrimary paused before the commit) waits for the section; with `maxTimeMS` it gives
/// up with MaxTimeMSExpired in about that time, keeping no place in the section's queue.
#[tokio::test]
async fn max_time_ms_bounds_waiting_behind_a_critical_section() {
    use std::time::{Duration, Instant};
    let cluster = ProcessCluster::start_with(2, TEST_COMMANDS).await;
    let client = cluster.client().await;
    populate(&client).await;
    let (donor, recipient) = primary_and_other(&cluster).await;
    let to = shard_name(&cluster, recipient).await;
    let on_primary = cluster.shard_client(donor).await;
    pause_before(&on_primary, "movePrimary", "commit").await;
    let moved = tokio::spawn(move_faults(client.clone(), to.clone()));
    wait_paused(&on_primary).await;

    // Through the router, and sent to the shard directly as a router would (the shard's own
    // deadline: the router's would end the first one anyway).
    let version = database_entry(&cluster.config_client().await, DB)
        .await
        .get_document("version")
        .unwrap()
        .clone();
    let versioned =
        doc! {"find": "keep", "filter": {}, "databaseVersion": version, "maxTimeMS": 200};
    for (to, find) in [
        (
            &client,
            doc! {"find": "keep", "filter": {}, "maxTimeMS": 200},
        ),
        (&on_primary, versioned),
    ] {
        let started = Instant::now();
        let expired = to.database(DB).run_command(find).await.unwrap_err();
        let waited = started.elapsed();
        assert_eq!(crate::harness::error_code(&expired), Some(50), "{expired}");
        assert!(
            expired
                .to_string()
                .contains("operation exceeded time limit"),
            "{expired}"
        );
        assert!(waited < Duration::from_secs(3), "answered after {waited:?}");
    }

    // Without maxTimeMS the read waits, and once the move has committed it is answered from
    // the database's new primary.
    let waiting = tokio::spawn({
        let keep = client.database(DB).collection::<Document>("keep");
        async move { keep.count_documents(doc! {}).await }
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!waiting.is_finished(), "the read waits for the section");
    admin(
        &on_primary,
        doc! {"configureFailPoint": "hangBeforeDdlPhase", "mode": "off"},
    )
    .await
    .unwrap();
    moved.await.unwrap().expect("the move commits");
    assert_eq!(waiting.await.unwrap().unwrap(), 100);
    check_moved(&cluster, donor, recipient, &to).await;
}

/// Refines `faults.skeep`'s key `{_id: "hashed"}` to `{_id: "hashed", v: 1}` (after the index it
/// needs).
async fn refine_skeep(client: Client) -> mongodb::error::Result<Document> {
    client
        .database("admin")
        .run_command(doc! {
            "refineCollectionShardKey": format!("{DB}.skeep"),
            "key": {"_id": "hashed", "v": 1},
        })
        .await
}

async fn prepare_refine(client: &Client) {
    populate(client).await;
    client
        .database(DB)
        .collection::<Document>("skeep")
        .create_index(
            mongodb::IndexModel::builder()
                .keys(doc! {"_id": "hashed", "v": 1})
                .build(),
        )
        .await
        .unwrap();
}

async fn check_refined(cluster: &ProcessCluster) {
    let client = cluster.client().await;
    let entry = client
        .database("config")
        .collection::<Document>("collections")
        .find_one(doc! {"_id": format!("{DB}.skeep")})
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        entry.get_document("key").unwrap(),
        &doc! {"_id": "hashed", "v": 1}
    );
    let skeep = client.database(DB).collection::<Document>("skeep");
    assert_eq!(skeep.count_documents(doc! {}).await.unwrap(), 100);
    assert_eq!(skeep.count_documents(doc! {"v": 7}).await.unwrap(), 1);
    assert_metadata_consistent(&client, true, "refineCollectionShardKey").await;
}

#[tokio::test]
async fn refine_survives_a_config_server_crash() {
    let mut cluster = ProcessCluster::start_with(2, TEST_COMMANDS).await;
    let client = cluster.client().await;
    prepare_refine(&client).await;
    crash_config_server_during(
        &mut cluster,
        "refineCollectionShardKey",
        "onPrimary",
        refine_skeep,
    )
    .await;
    check_refined(&cluster).await;
}

#[tokio::test]
async fn refine_survives_a_crash_of_its_coordinating_shard() {
    let mut cluster = ProcessCluster::start_with(2, TEST_COMMANDS).await;
    let client = cluster.client().await;
    prepare_refine(&client).await;
    crash_primary_before_commit(
        &mut cluster,
        "refineCollectionShardKey",
        refine_skeep(client),
    )
    .await;
    check_refined(&cluster).await;
}

#[tokio::test]
async fn coll_mod_survives_a_config_server_crash() {
    let mut cluster = ProcessCluster::start_with(2, TEST_COMMANDS).await;
    let client = cluster.client().await;
    populate(&client).await;
    let validator = doc! {"collMod": "skeep", "validator": {"v": {"$type": "int"}}};
    crash_config_server_during(&mut cluster, "collMod", "onShards", |client| {
        let validator = validator.clone();
        async move { client.database(DB).run_command(validator).await }
    })
    .await;
    let client = cluster.client().await;
    // Both shards enforce it: documents hashed to either are refused.
    let skeep = client.database(DB).collection::<Document>("skeep");
    for i in 1000..1010 {
        let refused = skeep
            .insert_one(doc! {"_id": i, "v": "not an int"})
            .await
            .unwrap_err();
        assert_eq!(crate::harness::error_code(&refused), Some(121), "{refused}");
    }
    for i in 0..2 {
        let options = crate::harness::collection_options(
            &cluster.shard_client(i).await.database(DB),
            "skeep",
        )
        .await;
        assert!(options.contains_key("validator"), "shard {i}: {options}");
    }
    assert_metadata_consistent(&client, true, "collMod").await;
}
