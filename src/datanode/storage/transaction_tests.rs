//! Multi-document transactions on storage: snapshots, reads of a transaction's own writes,
//! conflicts, commits, prepares.

use super::*;
use crate::error::ErrorCode;
use bson::{Bson, Document, RawDocumentBuf, doc, rawdoc};
use std::time::Duration;

async fn open() -> (tempfile::TempDir, Arc<Storage>) {
    let dir = tempfile::tempdir().unwrap();
    let storage = Storage::open(dir.path(), Default::default()).await.unwrap();
    (dir, storage)
}

/// `app.c` with `{_id: i, g: i % 5}` for i in 0..n and an index on `g`.
async fn seeded(storage: &Storage, n: i32) -> Arc<DatabaseStore> {
    let db = storage.database_or_create("app").await.unwrap();
    let coll = db.ensure_collection("c").await.unwrap();
    let docs: Vec<_> = (0..n).map(|i| rawdoc! {"_id": i, "g": i % 5}).collect();
    let refs: Vec<_> = docs.iter().map(|d| d.as_ref()).collect();
    let mut txn = db.write().await.unwrap();
    txn.insert(&coll, &refs).await.unwrap();
    txn.commit().await.unwrap();
    let spec = crate::datanode::index::IndexSpec::parse(&doc! {"key": {"g": 1}}).unwrap();
    db.create_index("c", spec).await.unwrap();
    db
}

fn coll(db: &DatabaseStore) -> Arc<CollectionMeta> {
    db.collection("c").unwrap()
}

fn docs(rows: Vec<(RecordId, RawDocumentBuf)>) -> Vec<Document> {
    rows.into_iter()
        .map(|(_, d)| d.to_document().unwrap())
        .collect()
}

/// Every document in record order (reverse when asked), read `chunk` at a time the way the
/// executor reads: a batch shorter than asked is the end.
async fn scan_all(
    r: &mut impl DocumentReads,
    c: &CollectionMeta,
    chunk: i64,
    reverse: bool,
) -> Vec<Document> {
    let mut out = Vec::new();
    let mut from = if reverse { RecordId::MAX } else { 0 };
    loop {
        let rows = if reverse {
            r.scan_reverse(c, from, chunk).await.unwrap()
        } else {
            r.scan(c, from, chunk).await.unwrap()
        };
        let short = (rows.len() as i64) < chunk;
        if let Some((rid, _)) = rows.last() {
            from = *rid;
        }
        out.extend(docs(rows));
        if short {
            return out;
        }
    }
}

fn g_key(g: i32) -> Vec<u8> {
    crate::document::keystring::encode_key([(&Bson::Int32(g), false)])
}

/// Index entries of `g_1` with `g` in `[low, high)`, `chunk` at a time, resumed from the last
/// one: `(key, document)` with documents, `(key, type bits)` without.
async fn index_all(
    r: &mut impl DocumentReads,
    c: &CollectionMeta,
    (low, high): (i32, i32),
    reverse: bool,
    chunk: i64,
    with_docs: bool,
) -> Vec<(Vec<u8>, Bson)> {
    let index = c.indexes.iter().find(|i| i.name == "g_1").unwrap();
    let (low, high) = (g_key(low), g_key(high));
    let mut out = Vec::new();
    let mut last: Option<(Vec<u8>, RecordId)> = None;
    loop {
        let range = IndexRange {
            index,
            low: &low,
            high: Some(&high),
            resume: last.as_ref().map(|(k, r)| (k.as_slice(), *r)),
            reverse,
            limit: chunk,
        };
        let rows: Vec<(Vec<u8>, RecordId, Bson)> = if with_docs {
            r.index_scan(c, &range)
                .await
                .unwrap()
                .into_iter()
                .map(|(k, r, d)| (k, r, Bson::Document(d.to_document().unwrap())))
                .collect()
        } else {
            r.index_keys(&range)
                .await
                .unwrap()
                .into_iter()
                .map(|(k, r, t)| (k, r, types_value(t)))
                .collect()
        };
        let short = (rows.len() as i64) < chunk;
        if let Some((k, r, _)) = rows.last() {
            last = Some((k.clone(), *r));
        }
        out.extend(rows.into_iter().map(|(k, _, d)| (k, d)));
        if short {
            return out;
        }
    }
}

/// An entry's type bits as a comparable value.
fn types_value(types: Option<Vec<u8>>) -> Bson {
    types.map_or(Bson::Null, |t| {
        Bson::Binary(bson::Binary {
            subtype: bson::spec::BinarySubtype::Generic,
            bytes: t,
        })
    })
}

/// Index entries of `g_1` in `[0, 1)` and `[2, 5)`, read as one, as [`index_all`] gives them.
async fn index_ranges(
    r: &mut impl DocumentReads,
    c: &CollectionMeta,
    reverse: bool,
    with_docs: bool,
) -> Vec<(Vec<u8>, Bson)> {
    let index = c.indexes.iter().find(|i| i.name == "g_1").unwrap();
    let keys = [g_key(0), g_key(1), g_key(2), g_key(5)];
    let ranges = IndexRanges {
        index,
        ranges: vec![(&keys[0], Some(&keys[1])), (&keys[2], Some(&keys[3]))],
        reverse,
        limit: 1000,
    };
    if with_docs {
        let rows = r.index_scan_ranges(c, &ranges).await.unwrap();
        rows.into_iter()
            .map(|(k, _, d)| (k, Bson::Document(d.to_document().unwrap())))
            .collect()
    } else {
        let rows = r.index_keys_ranges(&ranges).await.unwrap();
        rows.into_iter()
            .map(|(k, _, t)| (k, types_value(t)))
            .collect()
    }
}

/// Every read shape, as comparable values: scans both ways and index reads with and without
/// documents, whole and in small chunks (which must agree).
async fn every_read(r: &mut impl DocumentReads, c: &CollectionMeta) -> Vec<Bson> {
    let mut out = Vec::new();
    for reverse in [false, true] {
        let whole = scan_all(r, c, 1000, reverse).await;
        assert_eq!(scan_all(r, c, 3, reverse).await, whole, "reverse {reverse}");
        out.push(Bson::from(
            whole.into_iter().map(Bson::Document).collect::<Vec<_>>(),
        ));
        for with_docs in [false, true] {
            for bounds in [(0, 5), (1, 3)] {
                let whole = index_all(r, c, bounds, reverse, 1000, with_docs).await;
                let pieces = index_all(r, c, bounds, reverse, 2, with_docs).await;
                assert_eq!(
                    pieces, whole,
                    "reverse {reverse} docs {with_docs} {bounds:?}"
                );
                if bounds == (0, 5) {
                    // The two disjoint ranges [0, 1) and [2, 5) read as one match the ranges
                    // read one by one (the whole [0, 5) without g = 1).
                    let one = g_key(1);
                    let apart: Vec<_> = whole
                        .iter()
                        .filter(|(k, _)| k.as_slice() != one.as_slice())
                        .cloned()
                        .collect();
                    assert_eq!(
                        index_ranges(r, c, reverse, with_docs).await,
                        apart,
                        "ranges, reverse {reverse} docs {with_docs}"
                    );
                }
                out.push(Bson::from(
                    whole
                        .into_iter()
                        .map(|(k, d)| {
                            Bson::from(vec![
                                Bson::Binary(bson::Binary {
                                    subtype: bson::spec::BinarySubtype::Generic,
                                    bytes: k,
                                }),
                                d,
                            ])
                        })
                        .collect::<Vec<_>>(),
                ));
            }
        }
    }
    for id in [0, 1, 2, 3, 100, 101, 102] {
        let found = r.fetch_by_id(c, &Bson::Int32(id)).await.unwrap();
        if let Some((rid, doc)) = &found {
            assert_eq!(r.fetch_by_rid(c, *rid).await.unwrap().as_ref(), Some(doc));
        }
        out.push(found.map_or(Bson::Null, |(_, d)| {
            Bson::Document(d.to_document().unwrap())
        }));
    }
    out
}

#[tokio::test]
async fn a_transaction_reads_its_snapshot_and_its_own_writes_and_commits_them() {
    let (_dir, storage) = open().await;
    let db = seeded(&storage, 40).await;
    let c = coll(&db);
    let txn = StorageTransaction::new();
    let seen = txn
        .scope(async {
            let mut w = db.writes().await.unwrap();
            let (rid, old) = w.fetch_by_id(&c, &Bson::Int32(1)).await.unwrap().unwrap();
            w.delete(&c, rid, &old).await.unwrap();
            let (rid, old) = w.fetch_by_id(&c, &Bson::Int32(2)).await.unwrap().unwrap();
            w.replace(&c, rid, &old, &rawdoc! {"_id": 2, "g": 4, "new": true})
                .await
                .unwrap();
            let (rid, old) = w.fetch_by_id(&c, &Bson::Int32(7)).await.unwrap().unwrap();
            w.replace(&c, rid, &old, &rawdoc! {"_id": 7, "g": [1, 3]})
                .await
                .unwrap();
            let inserted = [
                rawdoc! {"_id": 100, "g": 2},
                rawdoc! {"_id": 101, "g": 0},
                rawdoc! {"_id": 102, "g": 3},
            ];
            let refs: Vec<_> = inserted.iter().map(|d| d.as_ref()).collect();
            w.insert(&c, &refs).await.unwrap();
            // An inserted document replaced and another deleted, all in the transaction.
            let (rid, old) = w.fetch_by_id(&c, &Bson::Int32(101)).await.unwrap().unwrap();
            assert!(
                rid >= 1 << 62,
                "inserted documents have temporary record ids"
            );
            w.delete(&c, rid, &old).await.unwrap();
            let (rid, old) = w.fetch_by_id(&c, &Bson::Int32(102)).await.unwrap().unwrap();
            w.replace(&c, rid, &old, &rawdoc! {"_id": 102, "g": 1})
                .await
                .unwrap();
            // Deleted and inserted again with its `_id`.
            let (rid, old) = w.fetch_by_id(&c, &Bson::Int32(3)).await.unwrap().unwrap();
            w.delete(&c, rid, &old).await.unwrap();
            w.insert_one(&c, &rawdoc! {"_id": 3, "g": 0, "again": 1})
                .await
                .unwrap();
            drop(w);
            let mut read = db.read().await.unwrap();
            every_read(&mut read, &c).await
        })
        .await;
    // Nothing is visible outside the transaction before its commit.
    let mut plain = db.read().await.unwrap();
    assert!(
        plain
            .fetch_by_id(&c, &Bson::Int32(100))
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        plain
            .fetch_by_id(&c, &Bson::Int32(1))
            .await
            .unwrap()
            .is_some()
    );
    drop(plain);
    assert!(txn.has_writes());
    let committed = txn.commit().await.unwrap();
    assert_eq!(committed.len(), 1);
    db.wait_durable(committed[0].1).await.unwrap();
    // The committed state reads as the transaction read itself (indexes included).
    let c = coll(&db);
    let mut plain = db.read().await.unwrap();
    assert_eq!(every_read(&mut plain, &c).await, seen);
    // One deleted, two inserted (a third inserted and deleted), one deleted and inserted again.
    assert_eq!(db.stats(&c).count, 40 - 1 + 2);
    let g = c.indexes.iter().find(|i| i.name == "g_1").unwrap();
    assert!(g.multikey, "the commit marks the index multikey");
    assert!(!db.locks.any(), "the commit releases the locks");
}

#[tokio::test]
async fn a_snapshot_does_not_see_later_commits_and_an_abort_discards_everything() {
    let (_dir, storage) = open().await;
    let db = seeded(&storage, 10).await;
    let c = coll(&db);
    let txn = StorageTransaction::new();
    txn.scope(async {
        assert_eq!(
            scan_all(&mut db.read().await.unwrap(), &c, 100, false)
                .await
                .len(),
            10
        );
    })
    .await;
    let mut w = db.write().await.unwrap();
    w.insert_one(&c, &rawdoc! {"_id": 50, "g": 1})
        .await
        .unwrap();
    w.commit().await.unwrap();
    txn.scope(async {
        let mut read = db.read().await.unwrap();
        assert_eq!(scan_all(&mut read, &c, 100, false).await.len(), 10);
        assert!(
            read.fetch_by_id(&c, &Bson::Int32(50))
                .await
                .unwrap()
                .is_none()
        );
        drop(read);
        let mut w = db.writes().await.unwrap();
        w.insert_one(&c, &rawdoc! {"_id": 60, "g": 1})
            .await
            .unwrap();
    })
    .await;
    txn.abort().await;
    txn.abort().await;
    let mut read = db.read().await.unwrap();
    assert!(
        read.fetch_by_id(&c, &Bson::Int32(60))
            .await
            .unwrap()
            .is_none()
    );
    assert_eq!(scan_all(&mut read, &c, 100, false).await.len(), 11);
    assert!(!db.locks.any());
    let after = txn
        .scope(async { db.read().await.err().unwrap().code() })
        .await;
    assert_eq!(after, ErrorCode::NoSuchTransaction);
}

#[tokio::test]
async fn the_first_writer_of_a_document_wins() {
    let (_dir, storage) = open().await;
    let db = seeded(&storage, 10).await;
    let c = coll(&db);
    let update = |t: Arc<StorageTransaction>, id: i32, v: i32| {
        let (db, c) = (db.clone(), c.clone());
        async move {
            t.scope(async {
                let mut w = db.writes().await?;
                let (rid, old) = w.fetch_by_id(&c, &Bson::Int32(id)).await?.unwrap();
                w.replace(&c, rid, &old, &rawdoc! {"_id": id, "g": v}).await
            })
            .await
        }
    };
    let (a, b) = (StorageTransaction::new(), StorageTransaction::new());
    update(a.clone(), 1, 10).await.unwrap();
    let e = update(b.clone(), 1, 20).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::WriteConflict);
    b.abort().await;

    // A plain write of the locked document conflicts, and so does its commit: nothing of it
    // is applied, not even the write before the conflict.
    let mut w = db.write().await.unwrap();
    w.insert_one(&c, &rawdoc! {"_id": 70, "g": 1})
        .await
        .unwrap();
    let (rid, old) = w.fetch_by_id(&c, &Bson::Int32(1)).await.unwrap().unwrap();
    let e = w.delete(&c, rid, &old).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::WriteConflict);
    let batch = [rawdoc! {"_id": 71}, rawdoc! {"_id": 1}, rawdoc! {"_id": 72}];
    let refs: Vec<_> = batch.iter().map(|d| d.as_ref()).collect();
    let (done, e) = w.insert(&c, &refs).await.unwrap_err();
    assert_eq!((done, e.code()), (1, ErrorCode::WriteConflict));
    assert_eq!(
        w.commit().await.unwrap_err().code(),
        ErrorCode::WriteConflict
    );
    let mut read = db.read().await.unwrap();
    for id in [70, 71] {
        assert!(
            read.fetch_by_id(&c, &Bson::Int32(id))
                .await
                .unwrap()
                .is_none()
        );
    }
    drop(read);

    // A waiting plain writer is woken by the commit that releases the lock.
    let waiter = {
        let db = db.clone();
        tokio::spawn(async move {
            let started = std::time::Instant::now();
            db.wait_for_document_locks().await;
            started.elapsed()
        })
    };
    tokio::time::sleep(Duration::from_millis(5)).await;
    a.commit().await.unwrap();
    assert!(waiter.await.unwrap() < Duration::from_secs(1));
    db.wait_for_document_locks().await;
    let mut read = db.read().await.unwrap();
    let (_, doc) = read
        .fetch_by_id(&c, &Bson::Int32(1))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(doc.to_document().unwrap(), doc! {"_id": 1, "g": 10});
}

#[tokio::test]
async fn a_document_changed_since_the_snapshot_is_a_write_conflict() {
    let (_dir, storage) = open().await;
    let db = seeded(&storage, 10).await;
    let c = coll(&db);
    let txn = StorageTransaction::new();
    let (rid, old) = txn
        .scope(async {
            db.read()
                .await
                .unwrap()
                .fetch_by_id(&c, &Bson::Int32(4))
                .await
                .unwrap()
                .unwrap()
        })
        .await;
    let mut w = db.write().await.unwrap();
    w.replace(&c, rid, &old, &rawdoc! {"_id": 4, "g": 9})
        .await
        .unwrap();
    w.insert_one(&c, &rawdoc! {"_id": 80}).await.unwrap();
    w.commit().await.unwrap();
    txn.scope(async {
        let mut w = db.writes().await.unwrap();
        let e = w
            .replace(&c, rid, &old, &rawdoc! {"_id": 4, "g": 8})
            .await
            .unwrap_err();
        assert_eq!(e.code(), ErrorCode::WriteConflict);
        // Inserted by someone else since the snapshot: the snapshot has no such `_id`.
        let e = w.insert_one(&c, &rawdoc! {"_id": 80}).await.unwrap_err();
        assert_eq!(e.code(), ErrorCode::WriteConflict);
    })
    .await;
    txn.abort().await;

    // A change committed after the write (the lock taken) but before the commit: the plain
    // write meets the lock, so a commit validation can only fail through the writer; here
    // a write that skipped the lock check is simulated by the document's deletion by a
    // transaction that owns nothing, and the commit reports the conflict.
    let t = StorageTransaction::new();
    t.scope(async {
        let mut w = db.writes().await.unwrap();
        let (rid, old) = w.fetch_by_id(&c, &Bson::Int32(5)).await.unwrap().unwrap();
        w.replace(&c, rid, &old, &rawdoc! {"_id": 5, "g": 0})
            .await
            .unwrap();
    })
    .await;
    let mut w = db.write().await.unwrap();
    w.lock_owner = t.id();
    let (rid, old) = w.fetch_by_id(&c, &Bson::Int32(5)).await.unwrap().unwrap();
    w.delete(&c, rid, &old).await.unwrap();
    w.commit().await.unwrap();
    assert_eq!(
        t.commit().await.err().unwrap().code(),
        ErrorCode::WriteConflict
    );
    assert!(!db.locks.any());
}

#[tokio::test]
async fn unique_indexes_see_the_snapshot_and_the_transaction() {
    let (_dir, storage) = open().await;
    let db = seeded(&storage, 10).await;
    let unique = crate::datanode::index::IndexSpec::parse(
        &doc! {"key": {"u": 1}, "unique": true, "sparse": true},
    )
    .unwrap();
    db.create_index("c", unique).await.unwrap();
    let c = coll(&db);
    let mut w = db.write().await.unwrap();
    w.insert_one(&c, &rawdoc! {"_id": 20, "u": 1})
        .await
        .unwrap();
    w.commit().await.unwrap();
    let txn = StorageTransaction::new();
    txn.scope(async {
        let mut w = db.writes().await.unwrap();
        let e = w.insert_one(&c, &rawdoc! {"_id": 3}).await.unwrap_err();
        assert_eq!(e.code(), ErrorCode::DuplicateKey);
        assert_eq!(
            e.extra().unwrap().get_document("keyValue").unwrap(),
            &doc! {"_id": 3}
        );
        let e = w
            .insert_one(&c, &rawdoc! {"_id": 21, "u": 1})
            .await
            .unwrap_err();
        assert_eq!(e.code(), ErrorCode::DuplicateKey);
        w.insert_one(&c, &rawdoc! {"_id": 22, "u": 2})
            .await
            .unwrap();
        let e = w
            .insert_one(&c, &rawdoc! {"_id": 23, "u": 2})
            .await
            .unwrap_err();
        assert_eq!(e.code(), ErrorCode::DuplicateKey);
        // Freed by the transaction's own delete, the key may be taken again.
        let (rid, old) = w.fetch_by_id(&c, &Bson::Int32(20)).await.unwrap().unwrap();
        w.delete(&c, rid, &old).await.unwrap();
        w.insert_one(&c, &rawdoc! {"_id": 24, "u": 1})
            .await
            .unwrap();
    })
    .await;
    txn.commit().await.unwrap();
    let mut read = db.read().await.unwrap();
    assert!(
        read.fetch_by_id(&c, &Bson::Int32(24))
            .await
            .unwrap()
            .is_some()
    );
    assert!(
        read.fetch_by_id(&c, &Bson::Int32(20))
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn catalog_changes_after_the_snapshot_and_capped_collections() {
    let (_dir, storage) = open().await;
    let db = seeded(&storage, 10).await;
    let txn = StorageTransaction::new();
    txn.scope(async { drop(db.read().await.unwrap()) }).await;
    let later = db.ensure_collection("later").await.unwrap();
    let mut w = db.write().await.unwrap();
    w.insert_one(&later, &rawdoc! {"_id": 1}).await.unwrap();
    w.commit().await.unwrap();
    let spec = crate::datanode::index::IndexSpec::parse(&doc! {"key": {"h": 1}}).unwrap();
    db.create_index("c", spec).await.unwrap();
    let capped = db
        .create_collection("capped", doc! {"capped": true, "size": 4096})
        .await
        .unwrap();
    let c = coll(&db);
    txn.scope(async {
        let mut read = db.read().await.unwrap();
        assert!(read.scan(&later, 0, 10).await.unwrap().is_empty());
        assert!(read.fetch_by_id(&later, &Bson::Int32(1)).await.unwrap().is_none());
        let h = c.indexes.iter().find(|i| i.name == "h_1").unwrap();
        let e = read.index_scan(&c, &IndexRange::whole(h)).await.unwrap_err();
        assert_eq!(e.code(), ErrorCode::SnapshotUnavailable);
        drop(read);
        let mut w = db.writes().await.unwrap();
        let e = w.insert_one(&capped, &rawdoc! {"_id": 1}).await.unwrap_err();
        assert_eq!(e.code(), ErrorCode::OperationNotSupportedInTransaction);
        assert_eq!(
            e.message(),
            "Collection 'app.capped' is a capped collection. Writes in transactions are not allowed on capped collections."
        );
        // A collection the snapshot lacks takes writes, applied by the commit.
        w.insert_one(&later, &rawdoc! {"_id": 2}).await.unwrap();
        drop(w);
        let mut read = db.read().await.unwrap();
        assert_eq!(read.scan(&later, 0, 10).await.unwrap().len(), 1);
        // Re-entering the transaction's view while it is in use is refused, not a deadlock.
        assert!(db.read().await.is_err());
    })
    .await;
    txn.commit().await.unwrap();
    assert_eq!(
        db.read()
            .await
            .unwrap()
            .scan(&later, 0, 10)
            .await
            .unwrap()
            .len(),
        2
    );
}

#[tokio::test]
async fn a_prepared_transaction_holds_its_documents_until_it_ends_and_survives_a_restart() {
    let (_dir, storage) = open().await;
    let db = seeded(&storage, 10).await;
    let c = coll(&db);
    let txn = StorageTransaction::new();
    txn.scope(async {
        let mut w = db.writes().await.unwrap();
        let (rid, old) = w.fetch_by_id(&c, &Bson::Int32(1)).await.unwrap().unwrap();
        w.replace(&c, rid, &old, &rawdoc! {"_id": 1, "g": 11})
            .await
            .unwrap();
        let (rid, old) = w.fetch_by_id(&c, &Bson::Int32(2)).await.unwrap().unwrap();
        w.delete(&c, rid, &old).await.unwrap();
        w.insert_one(&c, &rawdoc! {"_id": 30, "g": 3})
            .await
            .unwrap();
    })
    .await;
    let writes = txn.prepare(true).await.unwrap();
    let ops: Vec<_> = writes
        .get_array("writes")
        .unwrap()
        .iter()
        .map(|w| {
            let w = w.as_document().unwrap();
            (
                w.get_str("op").unwrap().to_string(),
                w.get("_id").unwrap().clone(),
            )
        })
        .collect();
    assert_eq!(
        ops,
        [
            ("d".into(), Bson::Int32(2)),
            ("u".into(), Bson::Int32(1)),
            ("i".into(), Bson::Int32(30))
        ]
    );
    // A plain read of a prepared document waits for the commit; of another one it does not.
    let mut read = db.read().await.unwrap();
    assert!(
        read.fetch_by_id(&c, &Bson::Int32(5))
            .await
            .unwrap()
            .is_some()
    );
    drop(read);
    let reader = {
        let (db, c) = (db.clone(), c.clone());
        tokio::spawn(async move {
            let mut read = db.read().await.unwrap();
            read.fetch_by_id(&c, &Bson::Int32(1))
                .await
                .unwrap()
                .unwrap()
                .1
                .to_document()
                .unwrap()
        })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        !reader.is_finished(),
        "the read waits for the prepared transaction"
    );
    // The restart: the prepared transaction is restored from its writes (the in-memory one
    // aborted as a dying process would lose it).
    txn.abort().await;
    let restored = StorageTransaction::restore_prepared(&storage, &writes)
        .await
        .unwrap();
    assert_eq!(
        restored.prepare(true).await.unwrap_err().code(),
        ErrorCode::NoSuchTransaction
    );
    restored.commit().await.unwrap();
    assert_eq!(reader.await.unwrap(), doc! {"_id": 1, "g": 11});
    let mut read = db.read().await.unwrap();
    assert!(
        read.fetch_by_id(&c, &Bson::Int32(2))
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        read.fetch_by_id(&c, &Bson::Int32(30))
            .await
            .unwrap()
            .is_some()
    );
    assert_eq!(db.stats(&c).count, 10);
    assert!(!db.locks.any() && !db.locks.any_prepared());
}

#[tokio::test]
async fn an_aborted_prepared_transaction_lets_plain_scans_and_writes_go_on() {
    let (_dir, storage) = open().await;
    let db = seeded(&storage, 10).await;
    let c = coll(&db);
    let txn = StorageTransaction::new();
    txn.scope(async {
        let mut w = db.writes().await.unwrap();
        let (rid, old) = w.fetch_by_id(&c, &Bson::Int32(6)).await.unwrap().unwrap();
        w.replace(&c, rid, &old, &rawdoc! {"_id": 6, "g": 60})
            .await
            .unwrap();
    })
    .await;
    let writes = txn.prepare(true).await.unwrap();
    assert_eq!(writes.get_array("writes").unwrap().len(), 1);
    let scanner = {
        let (db, c) = (db.clone(), c.clone());
        tokio::spawn(async move {
            let mut read = db.read().await.unwrap();
            scan_all(&mut read, &c, 100, false).await
        })
    };
    // A covered read of a range holding a key the prepared transaction writes waits too; of
    // another range it does not.
    let covered = |low: i32, high: i32| {
        let (db, c) = (db.clone(), c.clone());
        tokio::spawn(async move {
            let index = c.indexes.iter().find(|i| i.name == "g_1").unwrap();
            let (low, high) = (g_key(low), g_key(high));
            let range = IndexRange {
                index,
                low: &low,
                high: Some(&high),
                resume: None,
                reverse: false,
                limit: 100,
            };
            db.read()
                .await
                .unwrap()
                .index_keys(&range)
                .await
                .unwrap()
                .len()
        })
    };
    assert_eq!(covered(2, 4).await.unwrap(), 4);
    let blocked = covered(50, 70);
    // A plain write of the prepared document conflicts (its caller waits and retries).
    let mut w = db.write().await.unwrap();
    let (rid, old) = w.fetch_by_id(&c, &Bson::Int32(6)).await.unwrap().unwrap();
    let e = w.delete(&c, rid, &old).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::WriteConflict);
    drop(w);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        !scanner.is_finished(),
        "the scan waits for the prepared transaction"
    );
    assert!(!blocked.is_finished(), "the covered read waits for it");
    txn.abort().await;
    assert_eq!(blocked.await.unwrap(), 0);
    let scanned = scanner.await.unwrap();
    assert_eq!(scanned.len(), 10);
    assert_eq!(
        scanned[6],
        doc! {"_id": 6, "g": 1},
        "the abort left the document as it was"
    );
    assert!(!db.locks.any_prepared());
}

#[tokio::test]
async fn a_transaction_sees_the_indexes_its_writes_made_multikey() {
    let (_dir, storage) = open().await;
    let db = seeded(&storage, 10).await;
    let c = coll(&db);
    let g_multikey = |db: &DatabaseStore| {
        let c = db.collection("c").unwrap();
        c.indexes.iter().find(|i| i.name == "g_1").unwrap().multikey
    };
    let txn = StorageTransaction::new();
    txn.scope(async {
        let mut w = db.writes().await.unwrap();
        let (rid, old) = w.fetch_by_id(&c, &Bson::Int32(7)).await.unwrap().unwrap();
        w.replace(&c, rid, &old, &rawdoc! {"_id": 7, "g": [1, 3]})
            .await
            .unwrap();
        drop(w);
        assert!(
            g_multikey(&db),
            "the transaction plans with the index multikey"
        );
    })
    .await;
    assert!(!g_multikey(&db), "nobody else does before the commit");
    txn.commit().await.unwrap();
    assert!(g_multikey(&db), "the commit records it");
}

/// What every read shape returns now, outside any transaction.
async fn plain_reads(db: &DatabaseStore) -> Vec<Bson> {
    let c = coll(db);
    let mut read = db.read().await.unwrap();
    every_read(&mut read, &c).await
}

/// What every read shape returns as of `time`.
async fn reads_at(db: &DatabaseStore, time: bson::Timestamp) -> Vec<Bson> {
    let c = coll(db);
    let txn = StorageTransaction::at(time);
    let out = txn
        .scope(async {
            let mut read = db.read().await.unwrap();
            every_read(&mut read, &c).await
        })
        .await;
    txn.abort().await;
    out
}

/// Applies `change` to the document with `_id` `id` in one write transaction (`None`:
/// deletes it); inserts it when missing.
async fn commit_change(db: &DatabaseStore, id: i32, change: Option<RawDocumentBuf>) {
    let c = coll(db);
    let mut w = db.write().await.unwrap();
    match (w.fetch_by_id(&c, &Bson::Int32(id)).await.unwrap(), change) {
        (Some((rid, old)), Some(new)) => w.replace(&c, rid, &old, &new).await.unwrap(),
        (Some((rid, old)), None) => w.delete(&c, rid, &old).await.unwrap(),
        (None, Some(new)) => {
            w.insert_one(&c, &new).await.unwrap();
        }
        (None, None) => {}
    }
    w.commit().await.unwrap();
}

#[tokio::test]
async fn a_read_at_a_cluster_time_sees_the_state_at_that_time_through_every_read_shape() {
    let (_dir, storage) = open().await;
    let db = seeded(&storage, 10).await;
    let t1 = storage.clock.now();
    let at_t1 = plain_reads(&db).await;
    // After t1: `_id` 1 leaves the bounds [1, 3) of `g` (only its old version is in them),
    // 2 is deleted, 100 and 101 inserted (a batch), 3 replaced twice in one transaction.
    commit_change(&db, 1, Some(rawdoc! {"_id": 1, "g": 4, "v": 2})).await;
    commit_change(&db, 2, None).await;
    {
        let c = coll(&db);
        let mut w = db.write().await.unwrap();
        let batch = [rawdoc! {"_id": 100, "g": 1}, rawdoc! {"_id": 101, "g": 2}];
        let refs: Vec<_> = batch.iter().map(|d| d.as_ref()).collect();
        w.insert(&c, &refs).await.unwrap();
        let (rid, old) = w.fetch_by_id(&c, &Bson::Int32(3)).await.unwrap().unwrap();
        w.replace(&c, rid, &old, &rawdoc! {"_id": 3, "g": 2, "v": 2})
            .await
            .unwrap();
        let new = rawdoc! {"_id": 3, "g": [0, 1], "v": 3};
        w.replace(&c, rid, &rawdoc! {"_id": 3, "g": 2, "v": 2}, &new)
            .await
            .unwrap();
        w.commit().await.unwrap();
    }
    let t2 = storage.clock.now();
    let at_t2 = plain_reads(&db).await;
    assert_ne!(at_t1, at_t2);
    // After t2: 100 deleted, 1 changed again, 2 inserted again (a new record id), 0 changed.
    commit_change(&db, 100, None).await;
    commit_change(&db, 1, Some(rawdoc! {"_id": 1, "g": 0, "v": 3})).await;
    commit_change(&db, 2, Some(rawdoc! {"_id": 2, "g": 3, "v": 3})).await;
    commit_change(&db, 0, Some(rawdoc! {"_id": 0, "g": 1, "v": 3})).await;
    let now = plain_reads(&db).await;

    assert_eq!(reads_at(&db, t1).await, at_t1);
    assert_eq!(reads_at(&db, t2).await, at_t2);
    assert_eq!(reads_at(&db, storage.clock.now()).await, now);
    // Two reads at different times at once, each on its own transaction.
    let (a, b) = (StorageTransaction::at(t1), StorageTransaction::at(t2));
    let c = coll(&db);
    let read = |txn: Arc<StorageTransaction>, id: i32| {
        let (db, c) = (db.clone(), c.clone());
        async move {
            txn.scope(async {
                let mut r = db.read().await.unwrap();
                r.fetch_by_id(&c, &Bson::Int32(id))
                    .await
                    .unwrap()
                    .map(|(_, d)| d.to_document().unwrap())
            })
            .await
        }
    };
    assert_eq!(read(a.clone(), 1).await, Some(doc! {"_id": 1, "g": 1}));
    assert_eq!(
        read(b.clone(), 1).await,
        Some(doc! {"_id": 1, "g": 4, "v": 2})
    );
    assert_eq!(read(a.clone(), 100).await, None);
    assert_eq!(read(b.clone(), 100).await, Some(doc! {"_id": 100, "g": 1}));
    assert_eq!(read(a.clone(), 2).await, Some(doc! {"_id": 2, "g": 2}));
    assert_eq!(read(b.clone(), 2).await, None);
    a.abort().await;
    b.abort().await;
    assert!(!db.locks.any());
}

#[tokio::test]
async fn a_read_older_than_the_history_is_snapshot_too_old_and_the_window_evicts() {
    let (dir, storage) = open().await;
    let db = seeded(&storage, 4).await;
    let created = storage.clock.now();
    // A file this process created has all its history: as far back as the window goes.
    assert_eq!(
        db.oldest_readable_time(),
        bson::Timestamp {
            time: created.time - DEFAULT_HISTORY_WINDOW_SECS,
            increment: 0
        }
    );
    let too_old = |db: Arc<DatabaseStore>, time: bson::Timestamp| {
        let c = coll(&db);
        async move {
            let txn = StorageTransaction::at(time);
            let e = txn.scope(async { db.read().await.err().unwrap() }).await;
            txn.abort().await;
            assert_eq!(e.code(), ErrorCode::SnapshotTooOld);
            assert_eq!(
                e.message(),
                format!(
                    "Read timestamp Timestamp({}, {}) is older than the oldest available timestamp.",
                    time.time, time.increment
                )
            );
            let _ = c;
        }
    };
    // No history survives a restart: the file opened again reads from its opening on.
    let restarted = Storage::open(dir.path(), Default::default()).await.unwrap();
    let reopened = restarted.database("app").await.unwrap();
    too_old(reopened.clone(), created).await;
    let now = restarted.clock.now();
    assert_eq!(reads_at(&reopened, now).await, plain_reads(&reopened).await);
    drop((reopened, restarted));
    let t1 = storage.clock.now();
    let at_t1 = plain_reads(&db).await;
    commit_change(&db, 1, Some(rawdoc! {"_id": 1, "g": 3})).await;
    assert_eq!(reads_at(&db, t1).await, at_t1);
    // A window of 5 seconds, 10 seconds later: the history of t1 is gone.
    storage
        .history_window
        .store(5, std::sync::atomic::Ordering::Relaxed);
    storage.clock.advance(bson::Timestamp {
        time: t1.time + 10,
        increment: 0,
    });
    commit_change(&db, 2, Some(rawdoc! {"_id": 2, "g": 3})).await;
    assert!(db.oldest_readable_time().time >= t1.time + 5);
    too_old(db.clone(), t1).await;
    let now = storage.clock.now();
    assert_eq!(reads_at(&db, now).await, plain_reads(&db).await);
    assert!(db.history.inner_len() <= 1, "the entries of t1 are dropped");
}

#[tokio::test]
async fn entries_of_a_rolled_back_write_and_reused_record_ids_do_not_disturb_reads() {
    let (_dir, storage) = open().await;
    let db = seeded(&storage, 4).await;
    let c = coll(&db);
    let t0 = storage.clock.now();
    let at_t0 = plain_reads(&db).await;
    // The history takes the notes, then the COMMIT "fails": the insert's record id is
    // reused by the next insert.
    let mut w = db.write().await.unwrap();
    let lost = w
        .insert_one(&c, &rawdoc! {"_id": 100, "g": 0})
        .await
        .unwrap();
    let (rid, old) = w.fetch_by_id(&c, &Bson::Int32(1)).await.unwrap().unwrap();
    w.replace(&c, rid, &old, &rawdoc! {"_id": 1, "g": 4})
        .await
        .unwrap();
    w.append_history_and_roll_back().await.unwrap();
    let t1 = storage.clock.now();
    assert_eq!(plain_reads(&db).await, at_t0);
    let mut w = db.write().await.unwrap();
    let reused = w
        .insert_one(&c, &rawdoc! {"_id": 101, "g": 1})
        .await
        .unwrap();
    w.commit().await.unwrap();
    assert_eq!(reused, lost, "the record id is reused");
    commit_change(&db, 1, Some(rawdoc! {"_id": 1, "g": 2, "v": 1})).await;
    assert_eq!(reads_at(&db, t0).await, at_t0);
    assert_eq!(reads_at(&db, t1).await, at_t0);
}

#[tokio::test]
async fn a_write_at_a_cluster_time_conflicts_with_changes_after_it() {
    let (_dir, storage) = open().await;
    let db = seeded(&storage, 6).await;
    let c = coll(&db);
    let t = storage.clock.now();
    commit_change(&db, 1, Some(rawdoc! {"_id": 1, "g": 9})).await;
    commit_change(&db, 2, None).await;
    commit_change(&db, 50, Some(rawdoc! {"_id": 50})).await;
    let txn = StorageTransaction::at(t);
    txn.scope(async {
        let mut w = db.writes().await.unwrap();
        // Changed after t: the version as of t is not the latest.
        let (rid, old) = w.fetch_by_id(&c, &Bson::Int32(1)).await.unwrap().unwrap();
        assert_eq!(old.to_document().unwrap(), doc! {"_id": 1, "g": 1});
        let e = w
            .replace(&c, rid, &old, &rawdoc! {"_id": 1, "g": 7})
            .await
            .unwrap_err();
        assert_eq!(e.code(), ErrorCode::WriteConflict);
        // Deleted after t.
        let (rid, old) = w.fetch_by_id(&c, &Bson::Int32(2)).await.unwrap().unwrap();
        let e = w.delete(&c, rid, &old).await.unwrap_err();
        assert_eq!(e.code(), ErrorCode::WriteConflict);
        // Inserted after t: absent at t.
        assert!(w.fetch_by_id(&c, &Bson::Int32(50)).await.unwrap().is_none());
        let e = w.insert_one(&c, &rawdoc! {"_id": 50}).await.unwrap_err();
        assert_eq!(e.code(), ErrorCode::WriteConflict);
    })
    .await;
    txn.abort().await;
    // Unchanged since t: the write commits, and only it.
    let txn = StorageTransaction::at(t);
    txn.scope(async {
        let mut w = db.writes().await.unwrap();
        let (rid, old) = w.fetch_by_id(&c, &Bson::Int32(3)).await.unwrap().unwrap();
        w.replace(&c, rid, &old, &rawdoc! {"_id": 3, "g": 0})
            .await
            .unwrap();
    })
    .await;
    let before = plain_reads(&db).await;
    txn.commit().await.unwrap();
    commit_change(&db, 3, Some(rawdoc! {"_id": 3, "g": 3})).await;
    assert_eq!(
        plain_reads(&db).await,
        before,
        "the history layer is not applied"
    );
    assert_eq!(db.stats(&c).count, 6 - 1 + 1);
    assert!(!db.locks.any());
}

#[tokio::test]
async fn restoring_an_already_committed_prepared_transaction_commits_nothing() {
    let (_dir, storage) = open().await;
    let db = seeded(&storage, 10).await;
    let c = coll(&db);
    let txn = StorageTransaction::new();
    txn.scope(async {
        let mut w = db.writes().await.unwrap();
        let (rid, old) = w.fetch_by_id(&c, &Bson::Int32(1)).await.unwrap().unwrap();
        w.replace(&c, rid, &old, &rawdoc! {"_id": 1, "g": 11})
            .await
            .unwrap();
        let (rid, old) = w.fetch_by_id(&c, &Bson::Int32(2)).await.unwrap().unwrap();
        w.delete(&c, rid, &old).await.unwrap();
        let (rid, old) = w.fetch_by_id(&c, &Bson::Int32(3)).await.unwrap().unwrap();
        w.delete(&c, rid, &old).await.unwrap();
        w.insert_one(&c, &rawdoc! {"_id": 3, "g": 1, "again": true})
            .await
            .unwrap();
        w.insert_one(&c, &rawdoc! {"_id": 30, "g": 3})
            .await
            .unwrap();
    })
    .await;
    let writes = txn.prepare(true).await.unwrap();
    txn.commit().await.unwrap();
    // The crash came before the prepare record's removal: restored, committed again.
    let applied = plain_reads(&db).await;
    let count = db.stats(&c).count;
    let time = storage.clock.now();
    let restored = StorageTransaction::restore_prepared(&storage, &writes)
        .await
        .unwrap();
    assert!(!restored.has_writes());
    assert!(restored.commit().await.unwrap().is_empty());
    assert_eq!(plain_reads(&db).await, applied);
    assert_eq!(db.stats(&c).count, count);
    assert_eq!(reads_at(&db, time).await, applied, "no write happened");
    assert!(!db.locks.any() && !db.locks.any_prepared());
}

#[tokio::test]
async fn a_collection_created_in_a_transaction_exists_for_others_once_it_commits() {
    let (dir, storage) = open().await;
    let db = storage.database_or_create("app").await.unwrap();
    let spec = || crate::datanode::index::IndexSpec::parse(&doc! {"key": {"g": 1}}).unwrap();
    for commit in [false, true] {
        let txn = StorageTransaction::new();
        txn.scope(async {
            let c = db.create_collection_in_scope("new", doc! {}).await.unwrap();
            assert!(transaction::is_pending(&c));
            let e = db
                .create_collection_in_scope("new", doc! {})
                .await
                .unwrap_err();
            assert_eq!(e.code(), ErrorCode::NamespaceExists);
            let mut w = db.writes().await.unwrap();
            w.insert_one(&c, &rawdoc! {"_id": 1, "g": [1, 2]})
                .await
                .unwrap();
            drop(w);
            txn.create_index(&db, "new", spec()).await.unwrap();
            let c = db.collection("new").expect("the transaction sees it");
            let mut read = db.read().await.unwrap();
            assert!(!every_read(&mut read, &c).await.is_empty());
            let g = c.indexes.iter().find(|i| i.name == "g_1").unwrap();
            let entries = read.index_keys(&IndexRange::whole(g)).await.unwrap();
            assert_eq!(entries.len(), 2, "both keys of the array");
        })
        .await;
        assert!(db.collection("new").is_none(), "nobody else sees it");
        // Another transaction creating the name conflicts; a plain creation waits.
        let other = StorageTransaction::new();
        let e = other
            .scope(db.create_collection_in_scope("new", doc! {}))
            .await
            .unwrap_err();
        assert_eq!(e.code(), ErrorCode::WriteConflict);
        other.abort().await;
        let plain = {
            let db = db.clone();
            tokio::spawn(async move { db.ensure_collection("new").await.map(|c| c.ident) })
        };
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(
            !plain.is_finished(),
            "a plain creation waits for the transaction"
        );
        if commit {
            txn.commit().await.unwrap();
        } else {
            txn.abort().await;
        }
        let ident = plain.await.unwrap().unwrap();
        let c = db.collection("new").unwrap();
        assert_eq!(c.ident, ident);
        let g = c.indexes.iter().find(|i| i.name == "g_1");
        if commit {
            assert!(!transaction::is_pending(&c));
            assert!(g.unwrap().multikey, "the commit keeps the multikey flag");
            assert_eq!(db.stats(&c).count, 1);
        } else {
            assert!(g.is_none(), "the abort created nothing");
            assert_eq!(db.stats(&c).count, 0);
            assert!(db.drop_collection("new").await.unwrap());
        }
    }
    // The committed collection, its index and document are in the file.
    drop((db, storage));
    let restarted = Storage::open(dir.path(), Default::default()).await.unwrap();
    let db = restarted.database("app").await.unwrap();
    let c = db.collection("new").unwrap();
    assert_eq!(c.indexes.len(), 2);
    let mut read = db.read().await.unwrap();
    assert_eq!(read.scan(&c, 0, 10).await.unwrap().len(), 1);
}

#[tokio::test]
async fn a_created_collection_is_in_the_durable_record_of_a_commit_across_files() {
    let (_dir, storage) = open().await;
    let app = storage.database_or_create("app").await.unwrap();
    let other = storage.database_or_create("other").await.unwrap();
    let spec = crate::datanode::index::IndexSpec::parse(&doc! {"key": {"g": 1}}).unwrap();
    let run = |txn: Arc<StorageTransaction>| {
        let (app, other, spec) = (app.clone(), other.clone(), spec.clone());
        async move {
            txn.scope(async {
                let c = app.ensure_collection_in_scope("new").await.unwrap();
                let mut w = app.writes().await.unwrap();
                w.insert_one(&c, &rawdoc! {"_id": 1, "g": 5}).await.unwrap();
                drop(w);
                txn.create_index(&app, "new", spec).await.unwrap();
                let o = other.ensure_collection_in_scope("o").await.unwrap();
                let mut w = other.writes().await.unwrap();
                w.insert_one(&o, &rawdoc! {"_id": 1}).await.unwrap();
            })
            .await;
        }
    };
    // A two-phase commit's prepare refuses the creation.
    let txn = StorageTransaction::new();
    run(txn.clone()).await;
    let e = txn.prepare(true).await.unwrap_err();
    assert_eq!(e.code(), ErrorCode::OperationNotSupportedInTransaction);
    txn.abort().await;
    // The record of a commit across files keeps it; restored after a crash that lost the
    // commit, the commit creates the collection with its UUID and index.
    let txn = StorageTransaction::new();
    run(txn.clone()).await;
    let uuid = txn.created("app", "new").unwrap().uuid;
    let writes = txn.prepare(false).await.unwrap();
    txn.abort().await;
    assert!(app.collection("new").is_none());
    for already_committed in [false, true] {
        let restored = StorageTransaction::restore_prepared(&storage, &writes)
            .await
            .unwrap();
        assert_eq!(restored.has_writes(), !already_committed);
        restored.commit().await.unwrap();
        let c = app.collection("new").unwrap();
        assert_eq!(c.uuid, uuid);
        assert!(c.indexes.iter().any(|i| i.name == "g_1"));
        assert_eq!(app.stats(&c).count, 1, "applied once");
        let o = other.collection("o").unwrap();
        assert_eq!(other.stats(&o).count, 1, "applied once");
    }
}

/// A range watch notes every committed write of its collection once it is in place — the
/// records written and the `_id`s of before-images in its range — and not those of other
/// collections or after it is dropped.
#[tokio::test]
async fn a_range_watch_notes_committed_writes() {
    let (_dir, storage) = open().await;
    let db = seeded(&storage, 10).await;
    let c = coll(&db);
    // The range: documents whose `g` is 0 or 1.
    let in_range: super::RangePredicate =
        Box::new(|d: &bson::RawDocument| d.get_i32("g").is_ok_and(|g| g < 2));
    let guard = db.watch_range(&c, in_range).await.unwrap();
    let watch = guard.watch().clone();
    let mut txn = db.write().await.unwrap();
    let rid = txn
        .insert_one(&c, &rawdoc! {"_id": 100, "g": 0})
        .await
        .unwrap();
    txn.commit().await.unwrap();
    let mut txn = db.write().await.unwrap();
    let (moved_rid, old) = txn.fetch_by_id(&c, &Bson::Int32(1)).await.unwrap().unwrap();
    txn.replace(&c, moved_rid, &old, &rawdoc! {"_id": 1, "g": 4})
        .await
        .unwrap();
    let (deleted_rid, old) = txn.fetch_by_id(&c, &Bson::Int32(7)).await.unwrap().unwrap();
    txn.delete(&c, deleted_rid, &old).await.unwrap();
    txn.commit().await.unwrap();
    // A rolled-back write is not noted.
    let mut txn = db.write().await.unwrap();
    txn.insert_one(&c, &rawdoc! {"_id": 101, "g": 0})
        .await
        .unwrap();
    txn.rollback().await.unwrap();
    let noted = watch.take();
    assert_eq!(noted.rids.iter().copied().collect::<Vec<_>>(), {
        let mut rids = vec![rid, moved_rid, deleted_rid];
        rids.sort();
        rids
    });
    // `_id` 1 was in the range before its update; 7 (g: 2) never was.
    assert_eq!(noted.left, vec![Bson::Int32(1)]);
    assert!(watch.take().is_empty(), "taken");
    drop(guard);
    let mut txn = db.write().await.unwrap();
    txn.insert_one(&c, &rawdoc! {"_id": 102, "g": 0})
        .await
        .unwrap();
    txn.commit().await.unwrap();
    assert!(watch.take().is_empty(), "no watch, nothing noted");
}

/// Once fenced, a transaction writing the collection can neither commit nor prepare
/// (WriteConflict); a plain write still commits and is noted; other collections are free.
#[tokio::test]
async fn a_fenced_range_watch_refuses_transactions_writing_its_collection() {
    let (_dir, storage) = open().await;
    let db = seeded(&storage, 10).await;
    let c = coll(&db);
    let other = db.ensure_collection("other").await.unwrap();
    let guard = db
        .watch_range(&c, Box::new(|_: &bson::RawDocument| true))
        .await
        .unwrap();
    let write_in = |t: Arc<StorageTransaction>, target: Arc<CollectionMeta>, id: i32| {
        let db = db.clone();
        async move {
            t.scope(async {
                let mut w = db.writes().await?;
                w.insert(&target, &[rawdoc! {"_id": id, "g": 0}.as_ref()])
                    .await
                    .map_err(|(_, e)| e)
            })
            .await
        }
    };
    let (a, b, d) = (
        StorageTransaction::new(),
        StorageTransaction::new(),
        StorageTransaction::new(),
    );
    write_in(a.clone(), c.clone(), 200).await.unwrap();
    write_in(b.clone(), c.clone(), 201).await.unwrap();
    write_in(d.clone(), other.clone(), 202).await.unwrap();
    guard.watch().fence();
    db.write_barrier().await.unwrap();
    let refused = a.commit().await.err().map(|e| e.code());
    assert_eq!(refused, Some(ErrorCode::WriteConflict));
    assert_eq!(
        b.prepare(true).await.unwrap_err().code(),
        ErrorCode::WriteConflict
    );
    b.abort().await;
    d.commit().await.unwrap();
    let mut txn = db.write().await.unwrap();
    let rid = txn
        .insert_one(&c, &rawdoc! {"_id": 203, "g": 0})
        .await
        .unwrap();
    txn.commit().await.unwrap();
    assert!(guard.watch().take().rids.contains(&rid));
    assert!(
        db.read()
            .await
            .unwrap()
            .fetch_by_id(&c, &Bson::Int32(200))
            .await
            .unwrap()
            .is_none()
    );
}
