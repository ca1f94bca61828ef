//! Stored top-level fields named as the fields pipeline metadata travels in (`$textScore`,
//! `$dis`, `$pt`) are the documents' own in pipelines whose first stage attaches no metadata:
//! kept in the output, in `$$ROOT`, through `$project`, `$replaceWith`, `$facet` and `$out`,
//! on an unsharded collection and on one sharded by `_id` (through the router's merge).

use crate::harness::{aggregate_documents, both_modes};
use mongodb::Client;
use mongodb::bson::{Document, doc};

async fn stored_fields_survive(client: &Client) {
    let db = client.database("meta_fields");
    db.drop().await.unwrap();
    client
        .database("admin")
        .run_command(doc! {"shardCollection": "meta_fields.sharded", "key": {"_id": 1}})
        .await
        .unwrap();
    crate::harness::split_across_shards(
        client,
        "meta_fields.sharded",
        doc! {"_id": 2},
        [doc! {"_id": 1}, doc! {"_id": 2}],
    )
    .await;
    let docs = vec![
        doc! {"_id": 1, "$textScore": 5, "$dis": "far", "$pt": [1, 2]},
        doc! {"_id": 2, "$textScore": 6, "a": 1},
    ];
    for name in ["plain", "sharded"] {
        let coll = db.collection::<Document>(name);
        coll.insert_many(docs.clone()).await.unwrap();
        let sorted = doc! {"$sort": {"_id": 1}};
        let out = aggregate_documents(&coll, vec![sorted.clone()]).await;
        assert_eq!(out, docs, "{name}");
        let out = aggregate_documents(
            &coll,
            vec![
                sorted.clone(),
                doc! {"$project": {"root": "$$ROOT", "a": 1}},
                doc! {"$limit": 1},
            ],
        )
        .await;
        assert_eq!(out, [doc! {"_id": 1, "root": docs[0].clone()}], "{name}");
        let out = aggregate_documents(
            &coll,
            vec![
                sorted.clone(),
                doc! {"$project": {"a": 0}},
                doc! {"$replaceWith": "$$ROOT"},
            ],
        )
        .await;
        assert_eq!(
            out,
            [docs[0].clone(), doc! {"_id": 2, "$textScore": 6}],
            "{name}"
        );
        let out = aggregate_documents(
            &coll,
            vec![doc! {"$facet": {"all": [{"$sort": {"_id": 1}}]}}],
        )
        .await;
        assert_eq!(out, [doc! {"all": docs.clone()}], "{name}");
        if name == "plain" {
            aggregate_documents(&coll, vec![sorted.clone(), doc! {"$out": "copy"}]).await;
            let copied = aggregate_documents(&db.collection("copy"), vec![sorted.clone()]).await;
            assert_eq!(copied, docs, "{name}");
        }
    }
}

both_modes!(stored_fields_survive);
