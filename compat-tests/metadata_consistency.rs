//! `checkMetadataConsistency` through the router, with every role a separate process (the
//! inconsistencies are made by writing to a shard or to the routing table directly): nothing on
//! a consistent cluster; MongoDB's inconsistency types for a collection on the wrong shard, a
//! missing shard key index, an index that differs between shards and a routing table with a
//! hole; cluster, database and collection levels.

use crate::harness::{ProcessCluster, admin};
use mongodb::Client;
use mongodb::bson::{Bson, Document, doc};

async fn inconsistencies(client: &Client, db: &str, command: Document) -> Vec<Document> {
    let reply = client.database(db).run_command(command).await.unwrap();
    let cursor = reply.get_document("cursor").unwrap();
    assert_eq!(cursor.get_i64("id"), Ok(0));
    assert_eq!(
        cursor.get_str("ns"),
        Ok(format!("{db}.$cmd.aggregate").as_str())
    );
    cursor
        .get_array("firstBatch")
        .unwrap()
        .iter()
        .map(|d| d.as_document().unwrap().clone())
        .collect()
}

fn of_type<'a>(found: &'a [Document], kind: &str) -> Vec<&'a Document> {
    found
        .iter()
        .filter(|i| i.get_str("type") == Ok(kind))
        .collect()
}

#[tokio::test]
async fn reports_what_is_inconsistent_and_nothing_else() {
    let cluster = ProcessCluster::start(2).await;
    let client = cluster.client().await;
    let db = client.database("mc");
    db.create_collection("plain").await.unwrap();
    admin(
        &client,
        doc! {"shardCollection": "mc.sharded", "key": {"_id": "hashed"}},
    )
    .await
    .unwrap();
    let sharded = db.collection::<Document>("sharded");
    sharded
        .insert_many((0..50).map(|i| doc! {"_id": i, "x": i}))
        .await
        .unwrap();
    sharded
        .create_index(mongodb::IndexModel::builder().keys(doc! {"x": 1}).build())
        .await
        .unwrap();
    let all = doc! {"checkMetadataConsistency": 1, "checkIndexes": true};
    assert_eq!(
        inconsistencies(&client, "admin", all.clone()).await,
        Vec::<Document>::new()
    );
    assert!(
        inconsistencies(&client, "mc", doc! {"checkMetadataConsistency": 1})
            .await
            .is_empty()
    );

    // The shard that is not the database's primary.
    let config = client.database("config");
    let entry = config
        .collection::<Document>("databases")
        .find_one(doc! {"_id": "mc"})
        .await
        .unwrap()
        .unwrap();
    let primary = entry.get_str("primary").unwrap().to_string();
    let shards: Vec<Document> = admin(&client, doc! {"listShards": 1})
        .await
        .unwrap()
        .get_array("shards")
        .unwrap()
        .iter()
        .map(|s| s.as_document().unwrap().clone())
        .collect();
    let other = shards
        .iter()
        .find(|s| s.get_str("_id") != Ok(primary.as_str()))
        .unwrap();
    let (other_name, other_host) = (
        other.get_str("_id").unwrap().to_string(),
        other.get_str("host").unwrap().to_string(),
    );
    let primary_host = shards
        .iter()
        .find(|s| s.get_str("_id") == Ok(primary.as_str()))
        .unwrap()
        .get_str("host")
        .unwrap()
        .to_string();
    let on_other = cluster.shard_client(cluster.shard_index(&other_host)).await;
    let on_primary = cluster
        .shard_client(cluster.shard_index(&primary_host))
        .await;

    // An unsharded collection created behind the router's back on the wrong shard.
    on_other
        .database("mc")
        .create_collection("stray")
        .await
        .unwrap();
    // An index dropped on one shard only, and the shard key index on another.
    on_other
        .database("mc")
        .collection::<Document>("sharded")
        .drop_index("x_1")
        .await
        .unwrap();
    on_primary
        .database("mc")
        .run_command(doc! {"dropIndexes": "sharded", "index": "_id_hashed"})
        .await
        .unwrap();

    let found = inconsistencies(&client, "admin", all.clone()).await;
    let misplaced = of_type(&found, "MisplacedCollection");
    assert_eq!(misplaced.len(), 1, "{found:?}");
    let details = misplaced[0].get_document("details").unwrap();
    assert_eq!(details.get_str("namespace"), Ok("mc.stray"));
    assert_eq!(details.get_str("shard"), Ok(other_name.as_str()));
    assert!(matches!(details.get("localUUID"), Some(Bson::Binary(_))));
    assert_eq!(
        misplaced[0].get_str("description"),
        Ok("Unsharded collection found on shard different from database primary shard")
    );
    let missing_key_index = of_type(&found, "MissingShardKeyIndex");
    assert_eq!(missing_key_index.len(), 1, "{found:?}");
    let details = missing_key_index[0].get_document("details").unwrap();
    assert_eq!(details.get_str("shard"), Ok(primary.as_str()));
    assert_eq!(
        details.get_document("shardKey"),
        Ok(&doc! {"_id": "hashed"})
    );
    let inconsistent = of_type(&found, "InconsistentIndex");
    let info = |name: &str| {
        inconsistent
            .iter()
            .map(|i| {
                i.get_document("details")
                    .unwrap()
                    .get_document("info")
                    .unwrap()
            })
            .find(|info| info.get_str("indexName") == Ok(name))
            .unwrap_or_else(|| panic!("no InconsistentIndex for {name}: {found:?}"))
            .clone()
    };
    assert_eq!(
        info("x_1").get_array("missingFromShards").unwrap(),
        &vec![Bson::String(other_name.clone())]
    );
    assert_eq!(
        info("_id_hashed").get_array("missingFromShards").unwrap(),
        &vec![Bson::String(primary.clone())]
    );
    // Without checkIndexes, index differences are not looked for.
    let without = inconsistencies(&client, "admin", doc! {"checkMetadataConsistency": 1}).await;
    assert!(of_type(&without, "InconsistentIndex").is_empty());
    // Levels: a collection, another database.
    assert!(
        inconsistencies(&client, "mc", doc! {"checkMetadataConsistency": "plain"})
            .await
            .is_empty()
    );
    let one = inconsistencies(&client, "mc", doc! {"checkMetadataConsistency": "stray"}).await;
    assert_eq!(one.len(), 1);
    client
        .database("clean")
        .create_collection("c")
        .await
        .unwrap();
    assert!(
        inconsistencies(&client, "clean", doc! {"checkMetadataConsistency": 1})
            .await
            .is_empty()
    );

    // A routing table with a hole: a chunk removed from config.chunks.
    let uuid = config
        .collection::<Document>("collections")
        .find_one(doc! {"_id": "mc.sharded"})
        .await
        .unwrap()
        .unwrap()
        .get("uuid")
        .cloned()
        .unwrap();
    config
        .collection::<Document>("chunks")
        .delete_one(doc! {"uuid": uuid, "shard": &other_name})
        .await
        .unwrap();
    let found = inconsistencies(&client, "mc", doc! {"checkMetadataConsistency": "sharded"}).await;
    let hole = found.iter().find(|i| {
        matches!(
            i.get_str("type"),
            Ok("RoutingTableMissingMinKey" | "RoutingTableMissingMaxKey")
        )
    });
    assert!(hole.is_some(), "{found:?}");
}
