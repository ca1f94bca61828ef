//! Secondary indexes through the router: createIndexes, listIndexes, dropIndexes, unique,
//! compound, multikey, sparse, partial and hashed indexes, with MongoDB's names and errors.

use crate::harness::{admin, both_modes, error_code};
use futures::TryStreamExt;
use mongodb::bson::{Document, doc};
use mongodb::options::IndexOptions;
use mongodb::{Client, IndexModel};

async fn index_names(client: &Client, coll: &str) -> Vec<String> {
    let mut names = client
        .database("ix")
        .collection::<Document>(coll)
        .list_index_names()
        .await
        .unwrap();
    names.sort();
    names
}

async fn create_list_and_drop(client: &Client) {
    let db = client.database("ix");
    let _ = db.drop().await;
    let reply = db.run_command(doc! {"createIndexes": "a", "indexes": [{"key": {"x": 1, "y": -1}, "name": "x_1_y_-1"}]}).await.unwrap();
    assert_eq!(reply.get_i32("numIndexesBefore").unwrap(), 1);
    assert_eq!(reply.get_i32("numIndexesAfter").unwrap(), 2);
    assert!(reply.get_bool("createdCollectionAutomatically").unwrap());
    let again = db.run_command(doc! {"createIndexes": "a", "indexes": [{"key": {"x": 1, "y": -1}, "name": "x_1_y_-1"}]}).await.unwrap();
    assert_eq!(again.get_str("note").unwrap(), "all indexes already exist");
    let coll = db.collection::<Document>("a");
    let name = coll
        .create_index(IndexModel::builder().keys(doc! {"z": "hashed"}).build())
        .await
        .unwrap()
        .index_name;
    assert_eq!(name, "z_hashed");
    assert_eq!(
        index_names(client, "a").await,
        vec!["_id_", "x_1_y_-1", "z_hashed"]
    );
    let specs = db.run_command(doc! {"listIndexes": "a"}).await.unwrap();
    let first = specs
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap()[1]
        .as_document()
        .unwrap()
        .clone();
    assert_eq!(
        first,
        doc! {"v": 2, "key": {"x": 1, "y": -1}, "name": "x_1_y_-1"}
    );

    let err = db
        .run_command(
            doc! {"createIndexes": "a", "indexes": [{"key": {"q": 1}, "name": "x_1_y_-1"}]},
        )
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(86));
    let err = db
        .run_command(
            doc! {"createIndexes": "a", "indexes": [{"key": {"x": 1, "y": -1}, "name": "other"}]},
        )
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(85));
    let err = db.run_command(doc! {"createIndexes": "a", "indexes": [{"key": {"x": 1, "y": -1}, "name": "x_1_y_-1", "unique": true}]}).await.unwrap_err();
    assert_eq!(error_code(&err), Some(85));
    let err = db
        .run_command(doc! {"createIndexes": "a", "indexes": [{"key": {"t": "text", "u": 1, "v": "text"}, "name": "t"}]})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(67));
    let err = db
        .run_command(doc! {"createIndexes": "a", "indexes": [{"key": {"t": 0}, "name": "t"}]})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(67));

    let dropped = db
        .run_command(doc! {"dropIndexes": "a", "index": {"x": 1, "y": -1}})
        .await
        .unwrap();
    assert_eq!(dropped.get_i32("nIndexesWas").unwrap(), 3);
    let err = db
        .run_command(doc! {"dropIndexes": "a", "index": "nope"})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(27));
    let err = db
        .run_command(doc! {"dropIndexes": "a", "index": "_id_"})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(72));
    coll.create_index(IndexModel::builder().keys(doc! {"w": 1}).build())
        .await
        .unwrap();
    let all = db
        .run_command(doc! {"dropIndexes": "a", "index": "*"})
        .await
        .unwrap();
    assert_eq!(
        all.get_str("msg").unwrap(),
        "non-_id indexes dropped for collection"
    );
    assert_eq!(index_names(client, "a").await, vec!["_id_"]);
    let err = db
        .run_command(doc! {"dropIndexes": "missing", "index": "*"})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(26));
    let _ = admin(client, doc! {"ping": 1}).await.unwrap();
}

async fn unique_indexes(client: &Client) {
    let db = client.database("ix_unique");
    let _ = db.drop().await;
    let users = db.collection::<Document>("users");
    users
        .insert_many(vec![
            doc! {"email": "a@x"},
            doc! {"email": "b@x"},
            doc! {"email": "a@x"},
        ])
        .await
        .unwrap();
    let unique = IndexModel::builder()
        .keys(doc! {"email": 1})
        .options(IndexOptions::builder().unique(true).build())
        .build();
    let err = users.create_index(unique.clone()).await.unwrap_err();
    assert_eq!(
        error_code(&err),
        Some(11000),
        "existing duplicates fail the build"
    );
    assert_eq!(users.list_index_names().await.unwrap(), vec!["_id_"]);
    users.delete_one(doc! {"email": "a@x"}).await.unwrap();
    users.create_index(unique).await.unwrap();
    let err = users.insert_one(doc! {"email": "b@x"}).await.unwrap_err();
    assert_eq!(error_code(&err), Some(11000));
    let reply = db
        .run_command(doc! {"insert": "users", "documents": [{"email": "b@x"}]})
        .await
        .unwrap();
    let write_error = reply.get_array("writeErrors").unwrap()[0]
        .as_document()
        .unwrap()
        .clone();
    assert_eq!(
        write_error.get_document("keyPattern").unwrap(),
        &doc! {"email": 1}
    );
    assert_eq!(
        write_error.get_document("keyValue").unwrap(),
        &doc! {"email": "b@x"}
    );
    assert!(
        write_error
            .get_str("errmsg")
            .unwrap()
            .contains("index: email_1 dup key: { email: \"b@x\" }")
    );
    // An update into an existing key is refused too, and changes nothing.
    let err = users
        .update_one(doc! {"email": "a@x"}, doc! {"$set": {"email": "b@x"}})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(11000));
    assert_eq!(
        users.count_documents(doc! {"email": "a@x"}).await.unwrap(),
        1
    );
    // Missing fields are null keys: only one document may lack the field, unless sparse.
    users.insert_one(doc! {"name": "no email"}).await.unwrap();
    assert_eq!(
        error_code(&users.insert_one(doc! {"name": "second"}).await.unwrap_err()),
        Some(11000)
    );
    let sparse = db.collection::<Document>("sparse");
    sparse
        .create_index(
            IndexModel::builder()
                .keys(doc! {"k": 1})
                .options(IndexOptions::builder().unique(true).sparse(true).build())
                .build(),
        )
        .await
        .unwrap();
    sparse
        .insert_many(vec![doc! {"a": 1}, doc! {"a": 2}, doc! {"k": 1}])
        .await
        .unwrap();
    assert_eq!(
        error_code(&sparse.insert_one(doc! {"k": 1}).await.unwrap_err()),
        Some(11000)
    );
    let partial = db.collection::<Document>("partial");
    partial
        .create_index(
            IndexModel::builder()
                .keys(doc! {"k": 1})
                .options(
                    IndexOptions::builder()
                        .unique(true)
                        .partial_filter_expression(doc! {"live": true})
                        .build(),
                )
                .build(),
        )
        .await
        .unwrap();
    partial
        .insert_many(vec![
            doc! {"k": 1, "live": false},
            doc! {"k": 1, "live": false},
            doc! {"k": 1, "live": true},
        ])
        .await
        .unwrap();
    assert_eq!(
        error_code(
            &partial
                .insert_one(doc! {"k": 1, "live": true})
                .await
                .unwrap_err()
        ),
        Some(11000)
    );
}

async fn multikey_and_parallel_arrays(client: &Client) {
    let db = client.database("ix_multi");
    let _ = db.drop().await;
    let coll = db.collection::<Document>("m");
    coll.create_index(IndexModel::builder().keys(doc! {"a": 1, "b": 1}).build())
        .await
        .unwrap();
    coll.insert_one(doc! {"a": [1, 2], "b": 3}).await.unwrap();
    let err = coll
        .insert_one(doc! {"a": [1], "b": [2]})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(171));
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 1);
    let err = coll
        .update_one(doc! {}, doc! {"$set": {"b": [4, 5]}})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(171));
    let unique_multi = db.collection::<Document>("um");
    unique_multi
        .create_index(
            IndexModel::builder()
                .keys(doc! {"tags": 1})
                .options(IndexOptions::builder().unique(true).build())
                .build(),
        )
        .await
        .unwrap();
    unique_multi
        .insert_one(doc! {"tags": ["x", "x", "y"]})
        .await
        .unwrap();
    assert_eq!(
        error_code(
            &unique_multi
                .insert_one(doc! {"tags": ["z", "y"]})
                .await
                .unwrap_err()
        ),
        Some(11000)
    );
}

both_modes!(
    create_list_and_drop,
    unique_indexes,
    multikey_and_parallel_arrays
);

/// An index build past `maxIndexBuildMemoryUsageMegabytes` (set to 1 MB at startup) sorts its
/// keys through spilled runs — the shard's `serverStatus.indexBulkBuilder` counts them — and
/// gives the same index: every document found through it, in order.
#[tokio::test]
async fn builds_past_their_memory_limit_spill_and_stay_exact() {
    let cluster = crate::harness::ProcessCluster::start_with(
        1,
        &["--setParameter", "maxIndexBuildMemoryUsageMegabytes=1"],
    )
    .await;
    let client = cluster.client().await;
    let coll = client.database("ix").collection::<Document>("big");
    let n = 60_000;
    for start in (0..n).step_by(5_000) {
        let docs = (start..start + 5_000)
            .map(|i: i64| doc! {"_id": i, "k": format!("key-{:08}", (i * 7919) % n)});
        coll.insert_many(docs).await.unwrap();
    }
    let shard = cluster.shard_client(0).await;
    let bulk_builder = || async {
        admin(&shard, doc! {"serverStatus": 1})
            .await
            .unwrap()
            .get_document("indexBulkBuilder")
            .unwrap()
            .clone()
    };
    let before = bulk_builder().await;
    coll.create_index(IndexModel::builder().keys(doc! {"k": 1}).build())
        .await
        .unwrap();
    let after = bulk_builder().await;
    let grew = |field: &str| after.get_i64(field).unwrap() - before.get_i64(field).unwrap();
    assert_eq!(grew("count"), 1);
    assert_eq!(grew("numSorted"), n);
    assert!(grew("spilledRanges") >= 2, "{after}");
    let docs: Vec<Document> = coll
        .find(doc! {})
        .hint(mongodb::options::Hint::Name("k_1".into()))
        .projection(doc! {"_id": 0, "k": 1})
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    let keys: Vec<&str> = docs.iter().map(|d| d.get_str("k").unwrap()).collect();
    assert_eq!(keys.len(), n as usize);
    assert!(
        keys.windows(2).all(|w| w[0] < w[1]),
        "in key order, no key twice"
    );
}
