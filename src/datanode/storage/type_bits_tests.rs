//! Index entries carry type bits: every write path records them, and files from before they
//! existed are upgraded at open.

use super::*;
use crate::datanode::index::IndexSpec;
use crate::document::key_decode::{KeyValue, decode_key};
use bson::{Bson, Decimal128, Document, RawDocumentBuf, doc};
use sqlx::{Connection, Executor, SqliteConnection};

/// Each entry of the index `name` of `coll`: the `_id` of its document and the value its key and
/// type bits give (`None` when the entry has no type bits).
async fn entries(db: &DatabaseStore, coll: &str, name: &str) -> Vec<(Bson, Option<KeyValue>)> {
    let coll = db.collection(coll).unwrap();
    let index = coll.indexes.iter().find(|i| i.name == name).unwrap();
    let descending = matches!(
        index.key_pattern().iter().next(),
        Some((_, Bson::Int32(-1)))
    );
    let mut read = db.read().await.unwrap();
    let range = IndexRange::whole(index);
    let mut out = Vec::new();
    for (key, rid, types) in read.index_keys(&range).await.unwrap() {
        let doc = read.fetch_by_rid(&coll, rid).await.unwrap().unwrap();
        let id = doc.to_document().unwrap().get("_id").unwrap().clone();
        let value = types.map(|types| {
            decode_key(&key, &[descending], Some(&types))
                .unwrap()
                .pop()
                .unwrap()
        });
        out.push((id, value));
    }
    out.sort_by_key(|(id, _)| id.as_i32());
    out
}

/// The value an entry for `doc`'s field `a` must decode to.
fn expected(doc: &RawDocumentBuf) -> KeyValue {
    match doc.to_document().unwrap().get("a") {
        Some(value) => KeyValue::Value(value.clone()),
        None => KeyValue::Missing,
    }
}

fn raw(doc: Document) -> RawDocumentBuf {
    RawDocumentBuf::from_document(&doc).unwrap()
}

fn dec(s: &str) -> Bson {
    Bson::Decimal128(s.parse::<Decimal128>().unwrap())
}

fn docs() -> Vec<RawDocumentBuf> {
    vec![
        raw(doc! {"_id": 1, "a": 1}),
        raw(doc! {"_id": 2, "a": 1.0}),
        raw(doc! {"_id": 3, "a": Bson::Int64(1)}),
        raw(doc! {"_id": 4, "a": dec("1.00")}),
        raw(doc! {"_id": 5, "a": -0.0}),
        raw(doc! {"_id": 6, "a": dec("-0E+3")}),
        raw(doc! {"_id": 7}),
        raw(doc! {"_id": 8, "a": Bson::Null}),
        raw(doc! {"_id": 9, "a": Bson::Symbol("s".into())}),
        raw(doc! {"_id": 10, "a": "s"}),
        raw(doc! {"_id": 11, "a": {"n": Bson::Int64(2), "d": 2.0}}),
    ]
}

#[tokio::test]
async fn every_write_path_records_type_bits() {
    let dir = tempfile::tempdir().unwrap();
    let storage = Storage::open(dir.path(), Default::default()).await.unwrap();
    let db = storage.database_or_create("app").await.unwrap();
    let coll = db.ensure_collection("c").await.unwrap();
    // Maintained by the inserts (one multi-row statement, and one at a time)...
    let spec = IndexSpec::parse(&doc! {"key": {"a": -1}}).unwrap();
    db.create_index("c", spec).await.unwrap();
    let coll = db.collection(&coll.name).unwrap();
    let docs = docs();
    let (batch, one) = docs.split_at(6);
    let refs: Vec<_> = batch.iter().map(|d| d.as_ref()).collect();
    let mut txn = db.write().await.unwrap();
    txn.insert(&coll, &refs).await.unwrap();
    for doc in one {
        txn.insert_one(&coll, doc).await.unwrap();
    }
    txn.commit().await.unwrap();
    // ...and built over existing documents.
    let spec = IndexSpec::parse(&doc! {"key": {"a": 1}}).unwrap();
    db.create_index("c", spec).await.unwrap();
    for name in ["a_-1", "a_1"] {
        let found = entries(&db, "c", name).await;
        assert_eq!(found.len(), docs.len());
        for ((id, value), doc) in found.iter().zip(&docs) {
            assert_eq!(Some(id), doc.to_document().unwrap().get("_id"));
            let value = value.as_ref().expect("type bits recorded");
            match (value, expected(doc)) {
                (KeyValue::Value(Bson::Double(x)), KeyValue::Value(Bson::Double(y))) => {
                    assert_eq!(x.to_bits(), y.to_bits(), "{name} {id}")
                }
                (value, expected) => assert_eq!(value, &expected, "{name} {id}"),
            }
        }
    }
    // `_id` keeps its type too.
    let ids = entries(&db, "c", "_id_").await;
    assert!(
        ids.iter()
            .all(|(id, v)| v == &Some(KeyValue::Value(id.clone())))
    );

    // An update that changes only the type keeps the key and rewrites its type bits; one that
    // makes the field missing too.
    let coll = db.collection("c").unwrap();
    let mut txn = db.write().await.unwrap();
    for (id, new) in [
        (1, raw(doc! {"_id": 1, "a": 1.0})),
        (2, raw(doc! {"_id": 2, "a": dec("1.0")})),
        (8, raw(doc! {"_id": 8})),
    ] {
        let (rid, old) = txn
            .fetch_by_id(&coll, &Bson::Int32(id))
            .await
            .unwrap()
            .unwrap();
        txn.replace(&coll, rid, &old, &new).await.unwrap();
    }
    txn.commit().await.unwrap();
    for name in ["a_-1", "a_1"] {
        let found = entries(&db, "c", name).await;
        let value = |id: i32| {
            found
                .iter()
                .find(|(i, _)| i == &Bson::Int32(id))
                .and_then(|(_, v)| v.clone())
                .unwrap()
        };
        assert_eq!(value(1), KeyValue::Value(Bson::Double(1.0)));
        assert_eq!(value(2), KeyValue::Value(dec("1.0")));
        assert_eq!(value(8), KeyValue::Missing);
    }
}

#[tokio::test]
async fn index_tables_without_type_bits_are_upgraded_at_open() {
    let dir = tempfile::tempdir().unwrap();
    {
        let storage = Storage::open(dir.path(), Default::default()).await.unwrap();
        let db = storage.database_or_create("app").await.unwrap();
        let coll = db.ensure_collection("c").await.unwrap();
        let spec = IndexSpec::parse(&doc! {"key": {"a": 1}}).unwrap();
        db.create_index("c", spec).await.unwrap();
        let docs = docs();
        let refs: Vec<_> = docs.iter().map(|d| d.as_ref()).collect();
        let mut txn = db.write().await.unwrap();
        txn.insert(&coll, &refs).await.unwrap();
        txn.commit().await.unwrap();
    }
    // The index tables as they were before type bits.
    let path = dir.path().join("app.sqlite");
    let mut conn = SqliteConnection::connect(&format!("sqlite://{}", path.display()))
        .await
        .unwrap();
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT name FROM sqlite_schema WHERE type = 'table' AND name GLOB 'x[0-9]*'",
    )
    .fetch_all(&mut conn)
    .await
    .unwrap();
    assert_eq!(tables.len(), 2);
    for table in &tables {
        let sql = format!("ALTER TABLE {table} DROP COLUMN type_bits");
        conn.execute(sqlx::AssertSqlSafe(sql)).await.unwrap();
    }
    conn.close().await.unwrap();

    let storage = Storage::open(dir.path(), Default::default()).await.unwrap();
    let db = storage.database("app").await.unwrap();
    let coll = db.collection("c").unwrap();
    // Old entries are unknown, and still found.
    let found = entries(&db, "c", "a_1").await;
    assert_eq!(found.len(), 11);
    assert!(found.iter().all(|(_, v)| v.is_none()));
    let mut read = db.read().await.unwrap();
    let (_, doc) = read
        .fetch_by_id(&coll, &Bson::Int32(4))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        doc.to_document().unwrap(),
        doc! {"_id": 4, "a": dec("1.00")}
    );
    drop(read);
    // Writes record type bits from now on: a new document, a changed key, a changed type.
    let mut txn = db.write().await.unwrap();
    txn.insert_one(&coll, &raw(doc! {"_id": 12, "a": Bson::Int64(7)}))
        .await
        .unwrap();
    for (id, new) in [
        (1, raw(doc! {"_id": 1, "a": 5})),
        (2, raw(doc! {"_id": 2, "a": Bson::Int64(1)})),
    ] {
        let (rid, old) = txn
            .fetch_by_id(&coll, &Bson::Int32(id))
            .await
            .unwrap()
            .unwrap();
        txn.replace(&coll, rid, &old, &new).await.unwrap();
    }
    txn.commit().await.unwrap();
    let found = entries(&db, "c", "a_1").await;
    let value = |id: i32| {
        found
            .iter()
            .find(|(i, _)| i == &Bson::Int32(id))
            .unwrap()
            .1
            .clone()
    };
    assert_eq!(value(12), Some(KeyValue::Value(Bson::Int64(7))));
    assert_eq!(value(1), Some(KeyValue::Value(Bson::Int32(5))));
    assert_eq!(value(2), Some(KeyValue::Value(Bson::Int64(1))));
    assert_eq!(value(3), None);
    // Rebuilding the index gives every entry its type bits.
    db.drop_index("c", "a_1").await.unwrap();
    let spec = IndexSpec::parse(&doc! {"key": {"a": 1}}).unwrap();
    db.create_index("c", spec).await.unwrap();
    let found = entries(&db, "c", "a_1").await;
    assert_eq!(found.len(), 12);
    assert!(found.iter().all(|(_, v)| v.is_some()));
}
