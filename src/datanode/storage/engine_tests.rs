//! Storage engine tests on a temporary directory.

use super::*;
use bson::{Bson, doc, rawdoc};

async fn open() -> (tempfile::TempDir, Arc<Storage>) {
    let dir = tempfile::tempdir().unwrap();
    let storage = Storage::open(dir.path(), Default::default()).await.unwrap();
    (dir, storage)
}

#[tokio::test]
async fn inserts_reads_and_reports_duplicates() {
    let (_dir, storage) = open().await;
    let db = storage.database_or_create("app").await.unwrap();
    let coll = db.ensure_collection("c").await.unwrap();
    let docs: Vec<_> = (0..1200).map(|i| rawdoc! {"_id": i, "v": i * 2}).collect();
    let refs: Vec<_> = docs.iter().map(|d| d.as_ref()).collect();
    let mut txn = db.write().await.unwrap();
    txn.insert(&coll, &refs).await.unwrap();
    // 1.0 equals the existing _id 1: the batch stops there, the first document stays.
    let dup = [
        rawdoc! {"_id": 5000},
        rawdoc! {"_id": 1.0},
        rawdoc! {"_id": 5001},
    ];
    let dup_refs: Vec<_> = dup.iter().map(|d| d.as_ref()).collect();
    let (done, err) = txn.insert(&coll, &dup_refs).await.unwrap_err();
    assert_eq!(done, 1);
    assert_eq!(err.code(), crate::error::ErrorCode::DuplicateKey);
    assert_eq!(
        err.extra().unwrap().get_document("keyValue").unwrap(),
        &doc! {"_id": 1.0}
    );
    txn.commit().await.unwrap();
    assert_eq!(db.stats(&coll).count, 1201);
    let mut read = db.read().await.unwrap();
    let (_, found) = read
        .fetch_by_id(&coll, &Bson::Int64(7))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(found.to_document().unwrap(), doc! {"_id": 7, "v": 14});
    let first = read.scan(&coll, 0, 10).await.unwrap();
    assert_eq!(first.len(), 10);
    let next = read
        .scan(&coll, first.last().unwrap().0, 5000)
        .await
        .unwrap();
    assert_eq!(first.len() + next.len(), 1201);
}

#[tokio::test]
async fn replace_delete_rollback_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let storage = Storage::open(dir.path(), Default::default()).await.unwrap();
        let db = storage.database_or_create("app").await.unwrap();
        let coll = db.ensure_collection("c").await.unwrap();
        let mut txn = db.write().await.unwrap();
        for i in 0..3 {
            txn.insert_one(&coll, &rawdoc! {"_id": i, "v": "x"})
                .await
                .unwrap();
        }
        let (rid, old) = txn
            .fetch_by_id(&coll, &Bson::Int32(1))
            .await
            .unwrap()
            .unwrap();
        txn.replace(&coll, rid, &old, &rawdoc! {"_id": 1, "v": "longer value"})
            .await
            .unwrap();
        let (rid, old) = txn
            .fetch_by_id(&coll, &Bson::Int32(2))
            .await
            .unwrap()
            .unwrap();
        txn.delete(&coll, rid, &old).await.unwrap();
        let seq = txn.commit().await.unwrap();
        db.wait_durable(seq).await.unwrap();
        let mut txn = db.write().await.unwrap();
        txn.insert_one(&coll, &rawdoc! {"_id": 99}).await.unwrap();
        txn.rollback().await.unwrap();
        // An abandoned transaction is rolled back by the next writer.
        let mut abandoned = db.write().await.unwrap();
        abandoned
            .insert_one(&coll, &rawdoc! {"_id": 98})
            .await
            .unwrap();
        drop(abandoned);
        db.write().await.unwrap().commit().await.unwrap();
        db.create_collection("other", doc! {}).await.unwrap();
        db.rename_collection("other", "renamed", false)
            .await
            .unwrap();
    }
    let storage = Storage::open(dir.path(), Default::default()).await.unwrap();
    let db = storage.database("app").await.unwrap();
    let coll = db.collection("c").unwrap();
    assert_eq!(db.stats(&coll).count, 2);
    let mut read = db.read().await.unwrap();
    let (_, one) = read
        .fetch_by_id(&coll, &Bson::Int32(1))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        one.to_document().unwrap().get_str("v").unwrap(),
        "longer value"
    );
    assert!(
        read.fetch_by_id(&coll, &Bson::Int32(99))
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        read.fetch_by_id(&coll, &Bson::Int32(98))
            .await
            .unwrap()
            .is_none()
    );
    drop(read);
    assert!(db.collection("renamed").is_some() && db.collection("other").is_none());
    assert_eq!(storage.database_names().await, vec!["app".to_string()]);
    assert!(db.drop_collection("c").await.unwrap());
    assert!(storage.drop_database("app").await.unwrap());
    assert!(storage.database("app").await.is_none());
    assert!(!dir.path().join("app.sqlite").exists());
}

#[tokio::test]
async fn database_names_differing_only_in_case_are_refused() {
    let (_dir, storage) = open().await;
    storage.database_or_create("Shop").await.unwrap();
    let err = storage.database_or_create("shop").await.err().unwrap();
    assert_eq!(err.code(), crate::error::ErrorCode::DatabaseDifferCase);
}

#[tokio::test]
async fn concurrent_durability_waits_share_one_fsync() {
    let (_dir, storage) = open().await;
    let db = storage.database_or_create("app").await.unwrap();
    let coll = db.ensure_collection("c").await.unwrap();
    let mut seqs = Vec::new();
    for i in 0..10 {
        let mut txn = db.write().await.unwrap();
        txn.insert_one(&coll, &rawdoc! {"_id": i}).await.unwrap();
        seqs.push(txn.commit().await.unwrap());
    }
    let waits = seqs.iter().map(|seq| db.wait_durable(*seq));
    for result in futures::future::join_all(waits).await {
        result.unwrap();
    }
    assert_eq!(
        db.fsyncs(),
        1,
        "every waiter was covered by the first fsync"
    );
    let mut txn = db.write().await.unwrap();
    txn.insert_one(&coll, &rawdoc! {"_id": 99}).await.unwrap();
    let seq = txn.commit().await.unwrap();
    db.wait_durable(seq).await.unwrap();
    assert_eq!(db.fsyncs(), 2, "a later commit needs its own fsync");
}

#[tokio::test]
async fn secondary_indexes_build_persist_and_follow_writes() {
    let dir = tempfile::tempdir().unwrap();
    {
        let storage = Storage::open(dir.path(), Default::default()).await.unwrap();
        let db = storage.database_or_create("app").await.unwrap();
        let coll = db.ensure_collection("c").await.unwrap();
        let docs: Vec<_> = (0..2500)
            .map(|i| rawdoc! {"_id": i, "tag": i % 10})
            .collect();
        let refs: Vec<_> = docs.iter().map(|d| d.as_ref()).collect();
        let mut txn = db.write().await.unwrap();
        txn.insert(&coll, &refs).await.unwrap();
        txn.commit().await.unwrap();
        let spec = crate::datanode::index::IndexSpec::parse(&doc! {"key": {"tag": 1}}).unwrap();
        db.create_index("c", spec).await.unwrap();
        let coll = db.collection("c").unwrap();
        let index = coll.indexes.iter().find(|i| i.name == "tag_1").unwrap();
        assert!(index.ready && !index.multikey);
        let mut txn = db.write().await.unwrap();
        txn.insert_one(&coll, &rawdoc! {"_id": "arr", "tag": [1, 2]})
            .await
            .unwrap();
        txn.commit().await.unwrap();
        assert!(
            db.collection("c")
                .unwrap()
                .indexes
                .iter()
                .any(|i| i.name == "tag_1" && i.multikey)
        );
        let unique = crate::datanode::index::IndexSpec::parse(
            &doc! {"key": {"tag": 1}, "unique": true, "name": "u"},
        )
        .unwrap();
        let err = db.create_index("c", unique).await.unwrap_err();
        assert_eq!(err.code(), crate::error::ErrorCode::DuplicateKey);
        assert!(
            db.collection("c")
                .unwrap()
                .indexes
                .iter()
                .all(|i| i.name != "u"),
            "a failed build leaves nothing"
        );
    }
    let storage = Storage::open(dir.path(), Default::default()).await.unwrap();
    let db = storage.database("app").await.unwrap();
    let coll = db.collection("c").unwrap();
    let names: Vec<_> = coll
        .indexes
        .iter()
        .map(|i| (i.name.clone(), i.multikey))
        .collect();
    assert_eq!(
        names,
        vec![("_id_".to_string(), false), ("tag_1".to_string(), true)]
    );
    db.drop_index("c", "tag_1").await.unwrap();
    assert_eq!(db.collection("c").unwrap().indexes.len(), 1);
}

/// A scan resumed after its last entry, forwards and backwards, in chunks smaller than the runs
/// of equal keys, returns exactly the entries of one unbroken scan.
#[tokio::test]
async fn resumed_index_scans_continue_where_they_stopped() {
    let (_dir, storage) = open().await;
    let db = storage.database_or_create("app").await.unwrap();
    let coll = db.ensure_collection("c").await.unwrap();
    let docs: Vec<_> = (0..200).map(|i| rawdoc! {"_id": i, "g": i % 7}).collect();
    let refs: Vec<_> = docs.iter().map(|d| d.as_ref()).collect();
    let mut txn = db.write().await.unwrap();
    txn.insert(&coll, &refs).await.unwrap();
    txn.commit().await.unwrap();
    let spec = crate::datanode::index::IndexSpec::parse(&doc! {"key": {"g": 1}}).unwrap();
    db.create_index("c", spec).await.unwrap();
    let coll = db.collection("c").unwrap();
    let index = coll.indexes.iter().find(|i| i.name == "g_1").unwrap();
    let low = crate::document::keystring::encode_key([(&Bson::Int32(2), false)]);
    let high = crate::document::keystring::encode_key([(&Bson::Int32(5), false)]);
    let mut read = db.read().await.unwrap();
    for reverse in [false, true] {
        fn scan<'a>(
            index: &'a IndexMeta,
            (low, high): (&'a [u8], &'a [u8]),
            resume: Option<(&'a [u8], RecordId)>,
            reverse: bool,
            limit: i64,
        ) -> IndexRange<'a> {
            IndexRange {
                index,
                low,
                high: Some(high),
                resume,
                reverse,
                limit,
            }
        }
        let bounds = (low.as_slice(), high.as_slice());
        let whole: Vec<(Vec<u8>, RecordId)> = read
            .index_scan(&coll, &scan(index, bounds, None, reverse, 1000))
            .await
            .unwrap()
            .into_iter()
            .map(|(k, r, _)| (k, r))
            .collect();
        // g in [2, 5): 3 values × ~29 documents each.
        assert_eq!(
            whole.len(),
            (0..200).filter(|i| (2..5).contains(&(i % 7))).count()
        );
        let mut pieces = Vec::new();
        let mut last: Option<(Vec<u8>, RecordId)> = None;
        loop {
            let resume = last.as_ref().map(|(k, r)| (k.as_slice(), *r));
            let chunk = read
                .index_scan(&coll, &scan(index, bounds, resume, reverse, 4))
                .await
                .unwrap();
            let Some((k, r, _)) = chunk.last() else {
                break;
            };
            last = Some((k.clone(), *r));
            pieces.extend(chunk.into_iter().map(|(k, r, _)| (k, r)));
        }
        assert_eq!(pieces, whole, "reverse: {reverse}");
    }
}

#[tokio::test]
async fn renames_across_databases_copy_everything_and_leave_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    {
        let storage = Storage::open(dir.path(), Default::default()).await.unwrap();
        let db = storage.database_or_create("a").await.unwrap();
        let coll = db
            .create_collection("c", doc! {"validator": {"x": {"$gte": 0}}})
            .await
            .unwrap();
        let spec =
            crate::datanode::index::IndexSpec::parse(&doc! {"key": {"x": 1}, "unique": true})
                .unwrap();
        db.create_index("c", spec).await.unwrap();
        let docs: Vec<_> = (0..2500).map(|i| rawdoc! {"_id": i, "x": i}).collect();
        let refs: Vec<_> = docs.iter().map(|d| d.as_ref()).collect();
        let mut txn = db.write().await.unwrap();
        txn.insert(&coll, &refs).await.unwrap();
        txn.commit().await.unwrap();

        storage
            .rename_across_databases(("a", "c"), ("b", "d"), false)
            .await
            .unwrap();
        assert!(db.collection("c").is_none());
        let b = storage.database("b").await.unwrap();
        let moved = b.collection("d").unwrap();
        assert_eq!(b.stats(&moved).count, 2500);
        assert_eq!(moved.options, doc! {"validator": {"x": {"$gte": 0}}});
        let names: Vec<_> = moved.indexes.iter().map(|i| i.name.clone()).collect();
        assert_eq!(names, vec!["_id_", "x_1"]);
        assert_eq!(b.collections().len(), 1, "no temporary collection left");
        let missing = storage
            .rename_across_databases(("a", "c"), ("b", "e"), false)
            .await
            .unwrap_err();
        assert_eq!(missing.code(), crate::error::ErrorCode::NamespaceNotFound);

        // What a crash during a copy leaves behind.
        b.create_collection("system.docgrid_rename.0123", doc! {})
            .await
            .unwrap();
        // And one during a `$out`.
        b.create_collection("tmp.agg_out.4567", doc! {})
            .await
            .unwrap();
    }
    let storage = Storage::open(dir.path(), Default::default()).await.unwrap();
    let b = storage.database("b").await.unwrap();
    let names: Vec<_> = b.collections().iter().map(|c| c.name.clone()).collect();
    assert_eq!(names, vec!["d"]);
}

#[tokio::test]
async fn write_times_increase_across_restarts() {
    let dir = tempfile::tempdir().unwrap();
    // A clock gossiped far past the wall clock: its writes' times must not come back after a
    // restart with a fresh clock.
    let ahead = bson::Timestamp {
        time: (bson::DateTime::now().timestamp_millis() / 1000) as u32 + 3_600,
        increment: 9,
    };
    let written = {
        let clock: Arc<crate::server::clock::LogicalClock> = Default::default();
        clock.advance(ahead);
        let storage = Storage::open(dir.path(), clock).await.unwrap();
        let db = storage.database_or_create("app").await.unwrap();
        let coll = db.ensure_collection("c").await.unwrap();
        let mut txn = db.write().await.unwrap();
        let time = txn.time();
        assert!((time.time, time.increment) > (ahead.time, ahead.increment));
        txn.insert_one(&coll, &rawdoc! {"_id": 1}).await.unwrap();
        txn.commit().await.unwrap();
        time
    };
    let clock: Arc<crate::server::clock::LogicalClock> = Default::default();
    let storage = Storage::open(dir.path(), clock.clone()).await.unwrap();
    let db = storage.database("app").await.unwrap();
    let txn = db.write().await.unwrap();
    let after = txn.time();
    assert!(
        (after.time, after.increment) > (written.time, written.increment),
        "{after:?} after {written:?}"
    );
}
