//! Command `let` variables through the router: evaluated once per command and read as `$$name`
//! by `$expr` filters, projections, aggregation pipelines, pipeline-style updates (with the
//! statement's `c` constants) and `findAndModify`; evaluation errors fail the command.

use crate::harness::{both_modes, error_code};
use futures::TryStreamExt;
use mongodb::Client;
use mongodb::bson::{Bson, Document, doc};
use mongodb::options::ReturnDocument;

async fn seeded(client: &Client, name: &str) -> mongodb::Collection<Document> {
    let coll = client.database("letvars").collection::<Document>(name);
    coll.insert_many(vec![
        doc! {"_id": 1, "qty": 5, "item": "pen", "tags": [1, 2]},
        doc! {"_id": 2, "qty": 15, "item": "ink", "tags": [7, 8, 9]},
        doc! {"_id": 3, "qty": 25, "item": "cap", "tags": []},
    ])
    .await
    .unwrap();
    coll
}

async fn ids(cursor: mongodb::Cursor<Document>) -> Vec<i32> {
    let docs: Vec<Document> = cursor.try_collect().await.unwrap();
    docs.iter().map(|d| d.get_i32("_id").unwrap()).collect()
}

async fn let_in_reads(client: &Client) {
    let coll = seeded(client, "reads").await;
    let vars = doc! {"low": 10, "label": {"$concat": ["qty", "="]}};
    let found: Vec<Document> = coll
        .find(doc! {"$expr": {"$gt": ["$qty", "$$low"]}})
        .projection(doc! {"_id": 1, "shown": {"$concat": ["$$label", {"$toString": "$qty"}]}})
        .sort(doc! {"_id": 1})
        .let_vars(vars.clone())
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(
        found,
        vec![
            doc! {"_id": 2, "shown": "qty=15"},
            doc! {"_id": 3, "shown": "qty=25"}
        ]
    );
    // `$$NOW` is one value for the whole command.
    let out: Vec<Document> = coll
        .aggregate(vec![
            doc! {"$match": {"$expr": {"$lte": ["$qty", "$$low"]}}},
            doc! {"$project": {"_id": 1, "doubled": {"$multiply": ["$qty", "$$factor"]}, "at": "$$NOW"}},
        ])
        .let_vars(doc! {"low": 15, "factor": 2})
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(out.len(), 2);
    assert_eq!(out[0].get_i32("doubled").unwrap(), 10);
    assert_eq!(out[1].get_i32("doubled").unwrap(), 30);
    assert_eq!(out[0].get("at"), out[1].get("at"));
    assert!(matches!(out[0].get("at"), Some(Bson::DateTime(_))));
    // `$group` keys and accumulators see the variables too.
    let grouped: Vec<Document> = coll
        .aggregate(vec![
            doc! {"$group": {"_id": {"$gte": ["$qty", "$$cut"]}, "n": {"$sum": "$$one"}}},
            doc! {"$sort": {"_id": 1}},
        ])
        .let_vars(doc! {"cut": 15, "one": 1})
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(
        grouped,
        vec![doc! {"_id": false, "n": 1}, doc! {"_id": true, "n": 2}]
    );
}

async fn let_in_writes(client: &Client) {
    let coll = seeded(client, "writes").await;
    let result = coll
        .update_one(
            doc! {"$expr": {"$eq": ["$_id", "$$id"]}},
            vec![doc! {"$set": {"item": "$$name", "qty": {"$add": ["$qty", "$$step"]}}}],
        )
        .let_vars(doc! {"id": 1, "name": "marker", "step": 1})
        .await
        .unwrap();
    assert_eq!((result.matched_count, result.modified_count), (1, 1));
    assert_eq!(
        coll.find_one(doc! {"_id": 1}).await.unwrap(),
        Some(doc! {"_id": 1, "qty": 6, "item": "marker", "tags": [1, 2]})
    );
    let result = coll
        .update_many(
            doc! {"$expr": {"$gte": ["$qty", "$$min"]}},
            doc! {"$set": {"big": true}},
        )
        .let_vars(doc! {"min": 15})
        .await
        .unwrap();
    assert_eq!(result.modified_count, 2);
    // The statement's `c` holds literal constants, shadowing `let`.
    let reply = client
        .database("letvars")
        .run_command(doc! {
            "update": "writes",
            "updates": [{
                "q": {"_id": 2},
                "u": [{"$set": {"note": "$$note", "level": "$$level"}}],
                "c": {"note": {"$literal": "kept as written"}},
            }],
            "let": {"note": "from let", "level": {"$add": [1, 1]}},
        })
        .await
        .unwrap();
    assert_eq!(reply.get_i32("nModified").unwrap(), 1);
    let two = coll.find_one(doc! {"_id": 2}).await.unwrap().unwrap();
    assert_eq!(
        two.get_document("note").unwrap(),
        &doc! {"$literal": "kept as written"}
    );
    assert_eq!(two.get_i32("level").unwrap(), 2);
    let deleted = coll
        .delete_many(doc! {"$expr": {"$in": ["$_id", "$$doomed"]}})
        .let_vars(doc! {"doomed": [2, 3]})
        .await
        .unwrap();
    assert_eq!(deleted.deleted_count, 2);
    assert_eq!(ids(coll.find(doc! {}).await.unwrap()).await, vec![1]);
}

async fn let_in_find_and_modify(client: &Client) {
    let coll = seeded(client, "fam").await;
    let after = coll
        .find_one_and_update(
            doc! {"$expr": {"$eq": ["$item", "$$which"]}},
            vec![doc! {"$set": {"qty": {"$multiply": ["$qty", "$$k"]}}}],
        )
        .let_vars(doc! {"which": "ink", "k": 3})
        .projection(doc! {"qty": 1, "k": "$$k"})
        .return_document(ReturnDocument::After)
        .await
        .unwrap();
    assert_eq!(after, Some(doc! {"_id": 2, "qty": 45, "k": 3}));
    let removed = coll
        .find_one_and_delete(doc! {"$expr": {"$lt": ["$qty", "$$max"]}})
        .let_vars(doc! {"max": 6})
        .await
        .unwrap();
    assert_eq!(removed.unwrap().get_i32("_id").unwrap(), 1);
}

async fn let_errors(client: &Client) {
    let coll = seeded(client, "errors").await;
    let find_code = |filter: Document, vars: Document| {
        let coll = coll.clone();
        async move {
            match coll.find(filter).let_vars(vars).await {
                Ok(cursor) => cursor
                    .try_collect::<Vec<_>>()
                    .await
                    .err()
                    .and_then(|e| error_code(&e)),
                Err(e) => error_code(&e),
            }
        }
    };
    // Names are checked, values may not read the document, internal names are reserved.
    assert_eq!(find_code(doc! {}, doc! {"Bad": 1}).await, Some(9));
    assert_eq!(find_code(doc! {}, doc! {"x": "$qty"}).await, Some(4890500));
    assert_eq!(find_code(doc! {}, doc! {"NOW": 1}).await, Some(4738901));
    assert_eq!(
        find_code(doc! {"$expr": "$$missing"}, doc! {"other": 1}).await,
        Some(17276)
    );
    // An expression that fails on a document fails the query, as in MongoDB.
    assert_eq!(
        find_code(
            doc! {"$expr": {"$divide": ["$qty", "$$zero"]}},
            doc! {"zero": 0}
        )
        .await,
        Some(16608)
    );
    let err = coll
        .find(doc! {})
        .projection(doc! {"bad": {"$add": ["$item", 1]}})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(14));
    // A failed statement leaves the documents as they were.
    let err = coll
        .update_many(
            doc! {},
            vec![doc! {"$set": {"qty": {"$add": ["$item", 1]}}}],
        )
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(14));
    assert_eq!(
        coll.count_documents(doc! {"qty": {"$type": "number"}})
            .await
            .unwrap(),
        3
    );
}

async fn positional_projection_in_find(client: &Client) {
    let coll = seeded(client, "positional").await;
    let found: Vec<Document> = coll
        .find(doc! {"tags": {"$gte": 8}})
        .projection(doc! {"tags.$": 1})
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(found, vec![doc! {"_id": 2, "tags": [8]}]);
}

async fn json_schema_validator_and_restricted_index_filters(client: &Client) {
    let db = client.database("letvars");
    db.run_command(doc! {
        "create": "validated",
        "validator": {"$jsonSchema": {
            "required": ["name"],
            "properties": {"name": {"bsonType": "string"}, "age": {"minimum": 0}},
        }},
    })
    .await
    .unwrap();
    let coll = db.collection::<Document>("validated");
    coll.insert_one(doc! {"name": "ada", "age": 36})
        .await
        .unwrap();
    for bad in [
        doc! {"age": 3},
        doc! {"name": 7},
        doc! {"name": "x", "age": -1},
    ] {
        let err = coll.insert_one(bad.clone()).await.unwrap_err();
        assert_eq!(error_code(&err), Some(121), "{bad}");
    }
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 1);
    // Partial index filters may not use `$expr` or `$jsonSchema`.
    for filter in [
        doc! {"$expr": {"$gt": ["$age", 1]}},
        doc! {"$jsonSchema": {"required": ["age"]}},
    ] {
        let err = db
            .run_command(doc! {
                "createIndexes": "validated",
                "indexes": [{"key": {"age": 1}, "name": "p", "partialFilterExpression": filter.clone()}],
            })
            .await
            .unwrap_err();
        assert!(
            matches!(error_code(&err), Some(224) | Some(67)),
            "{filter}: {err}"
        );
    }
}

both_modes!(
    let_in_reads,
    let_in_writes,
    let_in_find_and_modify,
    let_errors,
    positional_projection_in_find,
    json_schema_validator_and_restricted_index_filters
);
