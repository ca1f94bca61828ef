//! The cluster's DDL locks, with every role a separate process: conflicting DDL waits for the
//! holder (woken when it finishes) or gives up with LockBusy, DDL on other namespaces runs
//! meanwhile, the held locks show in `config.locks`; a holder that stops pinging loses its lock
//! once its lease lapses, and its fencing term is refused afterwards.

use crate::harness::{ProcessCluster, admin, error_code, shard_names};
use mongodb::bson::{Document, doc};
use std::time::Duration;

#[tokio::test]
async fn conflicting_ddl_waits_or_is_lock_busy_others_run() {
    let cluster = ProcessCluster::start_with(
        2,
        &[
            "--enable-test-commands",
            "--setParameter",
            "ddlLockTimeoutMillis=300",
        ],
    )
    .await;
    let client = cluster.client().await;
    let config = cluster.config_client().await;
    let db = client.database("ddl");
    for name in ["a", "b"] {
        db.create_collection(name).await.unwrap();
    }
    // The drop of ddl.a stops before dropping on the shards, holding its locks.
    admin(
        &config,
        doc! {
            "configureFailPoint": "hangBeforeDdlPhase",
            "mode": {"times": 1},
            "data": {"operation": "dropCollection", "phase": "dropOnShards"},
        },
    )
    .await
    .unwrap();
    let drop_a = tokio::spawn({
        let db = db.clone();
        async move { db.collection::<Document>("a").drop().await }
    });
    admin(
        &config,
        doc! {"waitForFailPoint": "hangBeforeDdlPhase", "timesEntered": 1, "maxTimeMS": 30000},
    )
    .await
    .unwrap();
    let lock = config
        .database("config")
        .collection::<Document>("locks")
        .find_one(doc! {"_id": "ddl.a"})
        .await
        .unwrap()
        .expect("the drop's lock is persisted");
    assert_eq!(lock.get_i32("state"), Ok(2));
    assert_eq!(lock.get_str("why"), Ok("dropCollection"));
    assert_eq!(lock.get_str("process"), Ok("ConfigServer"));

    // Conflicting: the database, and the same collection created by its primary shard.
    let busy = db.drop().await.unwrap_err();
    assert_eq!(error_code(&busy), Some(46), "{busy}");
    assert!(busy.to_string().contains("dropCollection"), "{busy}");
    let busy = db.create_collection("a").await.unwrap_err();
    assert_eq!(error_code(&busy), Some(46), "{busy}");
    // Not conflicting: other collections of the same database.
    db.collection::<Document>("b").drop().await.unwrap();
    db.create_collection("c").await.unwrap();
    db.collection::<Document>("c")
        .insert_one(doc! {"x": 1})
        .await
        .unwrap();

    // A waiter is woken when the holder finishes.
    admin(
        &config,
        doc! {"setParameter": 1, "ddlLockTimeoutMillis": 60_000_i64},
    )
    .await
    .unwrap();
    let drop_db = tokio::spawn({
        let db = db.clone();
        async move { db.drop().await }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!drop_db.is_finished(), "dropDatabase waits for the drop");
    admin(
        &config,
        doc! {"configureFailPoint": "hangBeforeDdlPhase", "mode": "off"},
    )
    .await
    .unwrap();
    drop_a.await.unwrap().unwrap();
    tokio::time::timeout(Duration::from_secs(20), drop_db)
        .await
        .expect("woken when the drop finished")
        .unwrap()
        .unwrap();
    assert!(
        !client
            .list_database_names()
            .await
            .unwrap()
            .contains(&"ddl".to_string())
    );
    let held = config
        .database("config")
        .collection::<Document>("locks")
        .count_documents(doc! {"state": 2})
        .await
        .unwrap();
    assert_eq!(held, 0);
}

#[tokio::test]
async fn a_silent_holder_is_taken_over_and_fenced_off() {
    let cluster =
        ProcessCluster::start_with(2, &["--setParameter", "ddlLockLeaseMillis=800"]).await;
    let client = cluster.client().await;
    let config = cluster.config_client().await;
    client
        .database("lease")
        .create_collection("c")
        .await
        .unwrap();
    // A holder that never pings again (as a shard killed while holding the lock would).
    let granted = admin(
        &config,
        doc! {"_configsvrAcquireDdlLock": "lease", "process": "ghost:1", "reason": "movePrimary"},
    )
    .await
    .unwrap();
    let ghost_term = granted.get_i64("term").unwrap();
    assert_eq!(granted.get_i64("leaseMillis"), Ok(800));

    let drop = tokio::spawn({
        let db = client.database("lease");
        async move { db.collection::<Document>("c").drop().await }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!drop.is_finished(), "the lease has not lapsed yet");
    tokio::time::timeout(Duration::from_secs(20), drop)
        .await
        .expect("taken over once the lease lapsed")
        .unwrap()
        .unwrap();
    let locks = config.database("config").collection::<Document>("locks");
    let ghost = locks
        .find_one(doc! {"_id": "lease"})
        .await
        .unwrap()
        .unwrap();
    assert_eq!(ghost.get_i32("state"), Ok(0), "{ghost}");

    // What the lapsed holder can no longer do: commit under its term, or release the lock.
    let entry = config
        .database("config")
        .collection::<Document>("databases")
        .find_one(doc! {"_id": "lease"})
        .await
        .unwrap()
        .unwrap();
    let other = shard_names(&client)
        .await
        .into_iter()
        .find(|s| entry.get_str("primary") != Ok(s.as_str()))
        .unwrap();
    let fenced = admin(
        &config,
        doc! {
            "_configsvrCommitMovePrimary": "lease",
            "to": other,
            "expectedDatabaseVersion": entry.get_document("version").unwrap().clone(),
            "ddlLockTerm": ghost_term,
        },
    )
    .await
    .unwrap_err();
    assert_eq!(error_code(&fenced), Some(198), "{fenced}");
    let released = admin(&config, doc! {"_configsvrReleaseDdlLock": ghost_term})
        .await
        .unwrap();
    assert_eq!(released.get_bool("released"), Ok(false));

    // A holder that pings keeps its lock past the lease.
    let pinging = admin(
        &config,
        doc! {"_configsvrAcquireDdlLock": "lease.d", "process": "alive:1", "reason": "create"},
    )
    .await
    .unwrap()
    .get_i64("term")
    .unwrap();
    for _ in 0..6 {
        tokio::time::sleep(Duration::from_millis(250)).await;
        admin(&config, doc! {"_configsvrDdlLockPing": "alive:1"})
            .await
            .unwrap();
    }
    let busy = admin(
        &config,
        doc! {"_configsvrAcquireDdlLock": "lease.d", "process": "other:1", "timeoutMS": 0},
    )
    .await
    .unwrap_err();
    assert_eq!(error_code(&busy), Some(46), "{busy}");
    let pings = config
        .database("config")
        .collection::<Document>("lockpings")
        .find_one(doc! {"_id": "alive:1"})
        .await
        .unwrap();
    assert!(pings.is_some_and(|p| p.get_datetime("ping").is_ok()));
    let released = admin(&config, doc! {"_configsvrReleaseDdlLock": pinging})
        .await
        .unwrap();
    assert_eq!(released.get_bool("released"), Ok(true));
}
