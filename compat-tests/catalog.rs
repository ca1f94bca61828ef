//! Databases and collections through the router: listDatabases, listCollections, create,
//! drop, dropDatabase, renameCollection, listIndexes, dbStats, collStats.

use crate::harness::{admin, both_modes, error_code};
use mongodb::Client;
use mongodb::bson::{Bson, Document, doc};

async fn databases_appear_on_first_write_and_go_with_drop_database(client: &Client) {
    let names = client.list_database_names().await.unwrap();
    assert!(names.contains(&"admin".to_string()) && names.contains(&"config".to_string()));
    assert!(!names.contains(&"app".to_string()));
    client
        .database("app")
        .collection::<Document>("users")
        .insert_one(doc! {"a": 1})
        .await
        .unwrap();
    let list = admin(client, doc! {"listDatabases": 1}).await.unwrap();
    let app = list
        .get_array("databases")
        .unwrap()
        .iter()
        .filter_map(Bson::as_document)
        .find(|d| d.get_str("name") == Ok("app"))
        .cloned()
        .expect("app is listed");
    assert!(app.get_i64("sizeOnDisk").unwrap() > 0);
    assert!(!app.get_bool("empty").unwrap());
    assert!(list.get_i64("totalSize").unwrap() > 0);
    let filtered = admin(
        client,
        doc! {"listDatabases": 1, "nameOnly": true, "filter": {"name": "app"}},
    )
    .await
    .unwrap();
    assert_eq!(
        filtered.get_array("databases").unwrap(),
        &vec![Bson::Document(doc! {"name": "app"})]
    );
    let entry = client
        .database("config")
        .collection::<Document>("databases")
        .find_one(doc! {"_id": "app"})
        .await
        .unwrap()
        .unwrap();
    assert!(entry.get_str("primary").unwrap().starts_with("shard"));
    let version = entry.get_document("version").unwrap();
    assert_eq!(version.get_i32("lastMod").unwrap(), 1);
    assert!(version.get_timestamp("timestamp").is_ok());
    client.database("app").drop().await.unwrap();
    assert!(
        !client
            .list_database_names()
            .await
            .unwrap()
            .contains(&"app".to_string())
    );
    assert!(
        client
            .database("config")
            .collection::<Document>("databases")
            .find_one(doc! {"_id": "app"})
            .await
            .unwrap()
            .is_none()
    );
}

async fn collections_create_list_rename_drop(client: &Client) {
    let db = client.database("app");
    db.create_collection("a").await.unwrap();
    db.create_collection("a").await.unwrap(); // same options: no error since 7.0
    db.collection::<Document>("b")
        .insert_one(doc! {"x": 1})
        .await
        .unwrap();
    let mut names = db.list_collection_names().await.unwrap();
    names.sort();
    assert_eq!(names, vec!["a", "b"]);
    let specs = db
        .run_command(doc! {"listCollections": 1, "filter": {"name": "b"}})
        .await
        .unwrap();
    let batch = specs
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap();
    assert_eq!(batch.len(), 1);
    let b = batch[0].as_document().unwrap();
    assert_eq!(b.get_str("type").unwrap(), "collection");
    assert!(matches!(
        b.get_document("info").unwrap().get("uuid"),
        Some(Bson::Binary(_))
    ));
    assert_eq!(
        b.get_document("idIndex").unwrap().get_str("name").unwrap(),
        "_id_"
    );
    let only_names = db
        .run_command(doc! {"listCollections": 1, "nameOnly": true})
        .await
        .unwrap();
    let first = only_names
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap()[0]
        .as_document()
        .unwrap()
        .clone();
    assert_eq!(first.keys().collect::<Vec<_>>(), vec!["name", "type"]);
    let indexes = db
        .collection::<Document>("b")
        .list_index_names()
        .await
        .unwrap();
    assert_eq!(indexes, vec!["_id_"]);
    admin(client, doc! {"renameCollection": "app.b", "to": "app.c"})
        .await
        .unwrap();
    assert_eq!(
        db.collection::<Document>("c")
            .count_documents(doc! {})
            .await
            .unwrap(),
        1
    );
    let err = admin(client, doc! {"renameCollection": "app.c", "to": "app.a"})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(48));
    admin(
        client,
        doc! {"renameCollection": "app.c", "to": "app.a", "dropTarget": true},
    )
    .await
    .unwrap();
    let err = admin(client, doc! {"renameCollection": "app.nope", "to": "app.z"})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(26));
    db.collection::<Document>("a").drop().await.unwrap();
    db.collection::<Document>("never-existed")
        .drop()
        .await
        .unwrap();
    assert!(db.list_collection_names().await.unwrap().is_empty());
    let err = db
        .collection::<Document>("gone")
        .list_index_names()
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(26));
}

async fn stats(client: &Client) {
    let db = client.database("app");
    db.collection::<Document>("s")
        .insert_many((0..10).map(|i| doc! {"i": i}))
        .await
        .unwrap();
    let stats = db.run_command(doc! {"dbStats": 1}).await.unwrap();
    assert_eq!(stats.get_str("db").unwrap(), "app");
    assert_eq!(stats.get_i64("collections").unwrap(), 1);
    assert_eq!(stats.get_i64("objects").unwrap(), 10);
    let coll = db.run_command(doc! {"collStats": "s"}).await.unwrap();
    assert_eq!(coll.get_i64("count").unwrap(), 10);
    assert!(!coll.get_bool("sharded").unwrap());
    assert!(coll.get_i64("size").unwrap() > 0);
    assert_eq!(coll.get_i32("nindexes").unwrap(), 1);
    let missing = client
        .database("nothing")
        .run_command(doc! {"dbStats": 1})
        .await
        .unwrap();
    assert_eq!(missing.get_i64("collections").unwrap(), 0);
}

async fn internal_databases_are_protected(client: &Client) {
    let err = client
        .database("admin")
        .run_command(doc! {"dropDatabase": 1})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(20));
    let err = client
        .database("config")
        .run_command(doc! {"dropDatabase": 1})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(20));
    let err = client
        .database("config")
        .collection::<Document>("shards")
        .drop()
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(20));
    let err = client
        .database("app")
        .collection::<Document>("system.foo")
        .insert_one(doc! {})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(73));
    let err = client
        .database("local")
        .collection::<Document>("x")
        .find_one(doc! {})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(20));
}

both_modes!(
    databases_appear_on_first_write_and_go_with_drop_database,
    collections_create_list_rename_drop,
    stats,
    internal_databases_are_protected
);
