//! Index builds: sorted in memory or through spilled runs, and exact while writes go on.

use super::keys::DocumentKeys;
use super::*;
use bson::{Bson, RawDocumentBuf, doc, rawdoc};
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};

async fn load(db: &DatabaseStore, docs: impl Iterator<Item = RawDocumentBuf>) {
    let coll = db.ensure_collection("c").await.unwrap();
    let docs: Vec<_> = docs.collect();
    let refs: Vec<_> = docs.iter().map(|d| d.as_ref()).collect();
    let mut txn = db.write().await.unwrap();
    txn.insert(&coll, &refs).await.unwrap();
    txn.commit().await.unwrap();
}

/// Every entry of index `name`, and the entries its documents' current content calls for.
async fn entries_and_expected(
    db: &DatabaseStore,
    name: &str,
) -> (Vec<(Vec<u8>, RecordId)>, Vec<(Vec<u8>, RecordId)>) {
    let coll = db.collection("c").unwrap();
    let index = coll.indexes.iter().find(|i| i.name == name).unwrap();
    let mut read = db.read().await.unwrap();
    let range = IndexRange::whole(index);
    let entries: Vec<_> = read
        .index_keys(&range)
        .await
        .unwrap()
        .into_iter()
        .map(|(key, rid, _)| (key, rid))
        .collect();
    let mut expected = BTreeSet::new();
    for (rid, doc) in read.scan(&coll, 0, i64::MAX).await.unwrap() {
        for key in DocumentKeys::new(&doc).keys(index).unwrap().keys {
            expected.insert((key, rid));
        }
    }
    (entries, expected.into_iter().collect())
}

#[tokio::test]
async fn spilled_builds_equal_in_memory_ones_and_leave_no_runs() {
    let dir = tempfile::tempdir().unwrap();
    let storage = Storage::open(dir.path(), Default::default()).await.unwrap();
    let db = storage.database_or_create("app").await.unwrap();
    // Arrays too: several keys per document, and the index becomes multikey.
    load(
        &db,
        (0..3000).map(|i| rawdoc! {"_id": i, "g": (i * 7919) % 3000, "a": [i % 7, i % 11]}),
    )
    .await;
    for (key, limit) in [
        ("g", usize::MAX),
        ("a", usize::MAX),
        ("g", 2048),
        ("a", 2048),
    ] {
        let name = format!("{key}_{limit}");
        let spec = crate::datanode::index::IndexSpec::parse(&doc! {"key": {key: 1}, "name": &name})
            .unwrap();
        db.create_index_within("c", spec, limit).await.unwrap();
        let (entries, expected) = entries_and_expected(&db, &name).await;
        assert!(entries.len() >= 3000, "{name}: {}", entries.len());
        assert_eq!(entries, expected, "{name}");
        let coll = db.collection("c").unwrap();
        let index = coll.indexes.iter().find(|i| i.name == name).unwrap();
        assert!(index.ready);
        assert_eq!(index.multikey, key == "a", "{name}");
    }
    let runs = std::fs::read_dir(dir.path().join("_tmp")).map_or(0, |d| d.count());
    assert_eq!(runs, 0, "spilled runs are removed");
}

#[tokio::test]
async fn unique_builds_find_duplicates_in_memory_and_spilled() {
    let (_dir, db) = {
        let dir = tempfile::tempdir().unwrap();
        let storage = Storage::open(dir.path(), Default::default()).await.unwrap();
        let db = storage.database_or_create("app").await.unwrap();
        (dir, db)
    };
    load(
        &db,
        (0..2000).map(|i| rawdoc! {"_id": i, "u": i, "d": i % 1999}),
    )
    .await;
    for limit in [usize::MAX, 1024] {
        let unique = |key: &str| {
            crate::datanode::index::IndexSpec::parse(
                &doc! {"key": {key: 1}, "unique": true, "name": format!("{key}_{limit}")},
            )
            .unwrap()
        };
        db.create_index_within("c", unique("u"), limit)
            .await
            .unwrap();
        let err = db
            .create_index_within("c", unique("d"), limit)
            .await
            .unwrap_err();
        assert_eq!(err.code(), crate::error::ErrorCode::DuplicateKey);
        assert!(err.to_string().contains("d: 0"), "{err}");
        let names: Vec<_> = db
            .collection("c")
            .unwrap()
            .indexes
            .iter()
            .map(|i| i.name.clone())
            .collect();
        assert!(!names.contains(&format!("d_{limit}")), "{names:?}");
    }
}

/// Updates that change a document's key or keep it, deletes and inserts run while the index is
/// built (a small memory limit makes the build spill and take longer); the index ends with
/// exactly the keys of the documents as they are.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_during_a_build_leave_the_index_exact() {
    let dir = tempfile::tempdir().unwrap();
    let storage = Storage::open(dir.path(), Default::default()).await.unwrap();
    let db = storage.database_or_create("app").await.unwrap();
    const N: i64 = 30_000;
    load(
        &db,
        (0..N).map(|i| rawdoc! {"_id": i, "g": i % 100, "n": 0}),
    )
    .await;
    let done = Arc::new(AtomicBool::new(false));
    let writer = {
        let (db, done) = (db.clone(), done.clone());
        tokio::spawn(async move {
            let mut writes = 0;
            let mut i = 0i64;
            while !done.load(Ordering::Relaxed) {
                // Spread over the whole collection: the build reads and inserts it in pieces.
                let id = (i * 7919) % N;
                i += 1;
                let coll = db.collection("c").unwrap();
                let mut txn = db.write().await.unwrap();
                if let Some((rid, old)) = txn.fetch_by_id(&coll, &Bson::Int64(id)).await.unwrap() {
                    match i % 4 {
                        0 => txn.delete(&coll, rid, &old).await.unwrap(),
                        1 => {
                            let new = rawdoc! {"_id": id, "g": 1000 + i, "n": 1};
                            txn.replace(&coll, rid, &old, &new).await.unwrap()
                        }
                        2 => {
                            let g = old.get_i64("g").unwrap();
                            let new = rawdoc! {"_id": id, "g": g, "n": 2};
                            txn.replace(&coll, rid, &old, &new).await.unwrap()
                        }
                        _ => {
                            let new = rawdoc! {"_id": N + i, "g": -i};
                            txn.insert_one(&coll, &new).await.unwrap();
                        }
                    }
                }
                txn.commit().await.unwrap();
                writes += 1;
                tokio::task::yield_now().await;
            }
            writes
        })
    };
    let spec = crate::datanode::index::IndexSpec::parse(&doc! {"key": {"g": 1}}).unwrap();
    db.create_index_within("c", spec, 64 * 1024).await.unwrap();
    done.store(true, Ordering::Relaxed);
    let writes = writer.await.unwrap();
    assert!(writes > 10, "writes ran during the build: {writes}");
    let (entries, expected) = entries_and_expected(&db, "g_1").await;
    assert_eq!(entries.len(), expected.len());
    assert!(
        entries == expected,
        "the index holds exactly the current keys"
    );
}

/// Dropping the index, or its collection, while it is built aborts the build with
/// IndexBuildAborted, as MongoDB's drops do, and leaves no index behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drops_during_a_build_abort_it() {
    let dir = tempfile::tempdir().unwrap();
    let storage = Storage::open(dir.path(), Default::default()).await.unwrap();
    let db = storage.database_or_create("app").await.unwrap();
    for drop_collection in [false, true] {
        load(
            &db,
            (0..30_000i64).map(|i| rawdoc! {"_id": i, "g": i % 100}),
        )
        .await;
        let dropper = {
            let db = db.clone();
            tokio::spawn(async move {
                // As soon as the build has registered its (unready) index.
                while !db
                    .collection("c")
                    .is_some_and(|c| c.indexes.iter().any(|i| i.name == "g_1"))
                {
                    tokio::task::yield_now().await;
                }
                if drop_collection {
                    db.drop_collection("c").await.unwrap();
                } else {
                    db.drop_index("c", "g_1").await.unwrap();
                }
            })
        };
        let spec = crate::datanode::index::IndexSpec::parse(&doc! {"key": {"g": 1}}).unwrap();
        let err = db
            .create_index_within("c", spec, 64 * 1024)
            .await
            .unwrap_err();
        dropper.await.unwrap();
        assert_eq!(
            err.code(),
            crate::error::ErrorCode::IndexBuildAborted,
            "{err}"
        );
        let expected = if drop_collection {
            "collection dropped"
        } else {
            "index dropped"
        };
        assert!(err.to_string().contains(expected), "{err}");
        if let Some(coll) = db.collection("c") {
            assert_eq!(coll.indexes.len(), 1, "only _id_ is left");
            db.drop_collection("c").await.unwrap();
        }
    }
}
