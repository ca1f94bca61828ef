//! The paths a wildcard index records multikey: gained by index builds, plain writes and
//! multi-document transactions, never lost, and kept across restarts.

use super::*;
use bson::{doc, rawdoc};
use std::collections::BTreeSet;

fn paths(db: &DatabaseStore) -> (bool, BTreeSet<String>) {
    let coll = db.collection("c").unwrap();
    let index = coll.indexes.iter().find(|i| i.name == "$**_1").unwrap();
    (index.multikey, (*index.multikey_paths).clone())
}

fn set(paths: &[&str]) -> BTreeSet<String> {
    paths.iter().map(|p| p.to_string()).collect()
}

#[tokio::test]
async fn wildcard_multikey_paths_grow_and_persist() {
    let dir = tempfile::tempdir().unwrap();
    {
        let storage = Storage::open(dir.path(), Default::default()).await.unwrap();
        let db = storage.database_or_create("app").await.unwrap();
        let coll = db.ensure_collection("c").await.unwrap();
        let mut txn = db.write().await.unwrap();
        let first = rawdoc! {"_id": 1, "a": [1, 2], "b": 3};
        txn.insert_one(&coll, &first).await.unwrap();
        txn.commit().await.unwrap();
        let spec = crate::datanode::index::IndexSpec::parse(&doc! {"key": {"$**": 1}}).unwrap();
        db.create_index("c", spec).await.unwrap();
        assert_eq!(paths(&db), (true, set(&["a"])), "the build records them");

        let coll = db.collection("c").unwrap();
        let mut txn = db.write().await.unwrap();
        let second = rawdoc! {"_id": 2, "c": {"d": [{"e": [1]}]}, "a": [3]};
        txn.insert_one(&coll, &second).await.unwrap();
        txn.insert_one(&coll, &rawdoc! {"_id": 3, "b": 4})
            .await
            .unwrap();
        txn.commit().await.unwrap();
        assert_eq!(paths(&db), (true, set(&["a", "c.d", "c.d.e"])));

        // Removing the arrays leaves the paths multikey, as in MongoDB.
        let coll = db.collection("c").unwrap();
        let mut txn = db.write().await.unwrap();
        let (rid, old) = txn
            .fetch_by_id(&coll, &bson::Bson::Int32(1))
            .await
            .unwrap()
            .unwrap();
        txn.replace(&coll, rid, &old, &rawdoc! {"_id": 1, "a": 1})
            .await
            .unwrap();
        txn.commit().await.unwrap();
        assert_eq!(paths(&db), (true, set(&["a", "c.d", "c.d.e"])));

        // A transaction plans with the paths its writes made multikey; others once it commits.
        let txn = StorageTransaction::new();
        txn.scope(async {
            let mut w = db.writes().await.unwrap();
            w.insert_one(&coll, &rawdoc! {"_id": 4, "f": {"g": []}})
                .await
                .unwrap();
            drop(w);
            let seen = paths(&db).1;
            assert_eq!(seen, set(&["a", "c.d", "c.d.e", "f.g"]));
        })
        .await;
        assert_eq!(paths(&db).1, set(&["a", "c.d", "c.d.e"]));
        txn.commit().await.unwrap();
        assert_eq!(paths(&db).1, set(&["a", "c.d", "c.d.e", "f.g"]));
    }
    let storage = Storage::open(dir.path(), Default::default()).await.unwrap();
    let db = storage.database("app").await.unwrap();
    assert_eq!(paths(&db), (true, set(&["a", "c.d", "c.d.e", "f.g"])));
    let coll = db.collection("c").unwrap();
    let index = coll.indexes.iter().find(|i| i.name == "$**_1").unwrap();
    assert!(index.path_is_multikey("c.d.x") && !index.path_is_multikey("b"));
    assert!(!index.path_is_multikey("c") && !index.path_is_multikey("ab"));
}

/// A wildcard index recorded multikey before its paths were has every path multikey, until it
/// is rebuilt: later arrays do not make its paths look known.
#[tokio::test]
async fn a_wildcard_index_recorded_without_paths_keeps_every_path_multikey() {
    let dir = tempfile::tempdir().unwrap();
    {
        let storage = Storage::open(dir.path(), Default::default()).await.unwrap();
        let db = storage.database_or_create("app").await.unwrap();
        db.ensure_collection("c").await.unwrap();
        let spec = crate::datanode::index::IndexSpec::parse(&doc! {"key": {"$**": 1}}).unwrap();
        db.create_index("c", spec).await.unwrap();
        let coll = db.collection("c").unwrap();
        let mut txn = db.write().await.unwrap();
        let doc = rawdoc! {"_id": 1, "a": [1]};
        txn.insert_one(&coll, &doc).await.unwrap();
        txn.commit().await.unwrap();
        // As an older catalog left it.
        let mut writer = db.writer.lock().await;
        sqlx::query("UPDATE docgrid_indexes SET multikey_paths = NULL")
            .execute(&mut writer.conn)
            .await
            .unwrap();
    }
    for round in 0..2 {
        let storage = Storage::open(dir.path(), Default::default()).await.unwrap();
        let db = storage.database("app").await.unwrap();
        assert_eq!(paths(&db), (true, set(&[])), "round {round}");
        let coll = db.collection("c").unwrap();
        let index = coll.indexes.iter().find(|i| i.name == "$**_1").unwrap();
        assert!(index.path_is_multikey("b"), "round {round}");
        let mut txn = db.write().await.unwrap();
        let doc = rawdoc! {"_id": 2 + round, "b": [1]};
        txn.insert_one(&coll, &doc).await.unwrap();
        txn.commit().await.unwrap();
        assert_eq!(paths(&db), (true, set(&[])), "round {round}");
    }
}
