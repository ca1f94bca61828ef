//! Query expressions through the router: `$expr` and `$jsonSchema` in filters of find, count,
//! update, delete and aggregate, and aggregation expressions in find projections.

use crate::harness::{both_modes, error_code};
use futures::TryStreamExt;
use mongodb::Client;
use mongodb::bson::{Document, doc};
use mongodb::options::FindOptions;

async fn ids(coll: &mongodb::Collection<Document>, filter: Document) -> Vec<i32> {
    let options = FindOptions::builder().sort(doc! {"_id": 1}).build();
    coll.find(filter)
        .with_options(options)
        .await
        .unwrap()
        .try_collect::<Vec<_>>()
        .await
        .unwrap()
        .iter()
        .map(|d| d.get_i32("_id").unwrap())
        .collect()
}

async fn find_error(coll: &mongodb::Collection<Document>, filter: Document) -> Option<i32> {
    let err = match coll.find(filter).await {
        Ok(cursor) => cursor.try_collect::<Vec<_>>().await.unwrap_err(),
        Err(err) => err,
    };
    error_code(&err)
}

async fn expr_in_filters(client: &Client) {
    let coll = client.database("qx").collection::<Document>("budget");
    coll.insert_many(vec![
        doc! {"_id": 1, "spent": 50, "budget": 40, "tags": [1, 2]},
        doc! {"_id": 2, "spent": 20, "budget": 40, "tags": [3]},
        doc! {"_id": 3, "spent": 10, "budget": 10, "tags": []},
        doc! {"_id": 4, "spent": "n/a", "budget": 5},
        doc! {"_id": 5, "budget": 5},
    ])
    .await
    .unwrap();
    let over = doc! {"$expr": {"$gt": ["$spent", "$budget"]}};
    // A string sorts above numbers and missing below them: the expression language's order.
    assert_eq!(ids(&coll, over.clone()).await, vec![1, 4]);
    assert_eq!(
        ids(&coll, doc! {"$expr": {"$eq": ["$spent", "$budget"]}}).await,
        vec![3]
    );
    // Truthiness: 0, null and missing are false; empty arrays are true.
    assert_eq!(
        ids(&coll, doc! {"$expr": {"$subtract": ["$budget", 40]}}).await,
        vec![3, 4, 5]
    );
    assert_eq!(ids(&coll, doc! {"$expr": "$tags"}).await, vec![1, 2, 3]);
    // Arrays are whole values for $expr, unlike query equality.
    assert_eq!(
        ids(
            &coll,
            doc! {"$expr": {"$in": [3, {"$ifNull": ["$tags", []]}]}}
        )
        .await,
        vec![2]
    );
    assert_eq!(
        ids(&coll, doc! {"$expr": {"$eq": ["$tags", 3]}}).await,
        Vec::<i32>::new()
    );
    // Inside logical operators and next to ordinary predicates.
    assert_eq!(
        ids(
            &coll,
            doc! {"budget": {"$gte": 10}, "$or": [over.clone(), {"$expr": {"$eq": [{"$size": {"$ifNull": ["$tags", []]}}, 0]}}]}
        )
        .await,
        vec![1, 3]
    );
    assert_eq!(
        ids(&coll, doc! {"$nor": [over.clone(), {"_id": 5}]}).await,
        vec![2, 3]
    );
    // With an index on a field the $expr reads, the answer is unchanged.
    coll.create_index(
        mongodb::IndexModel::builder()
            .keys(doc! {"spent": 1})
            .build(),
    )
    .await
    .unwrap();
    assert_eq!(
        ids(
            &coll,
            doc! {"spent": {"$gte": 20}, "$expr": {"$gt": ["$spent", "$budget"]}}
        )
        .await,
        vec![1]
    );
    assert_eq!(coll.count_documents(over.clone()).await.unwrap(), 2);
    let agg: Vec<Document> = coll
        .aggregate(vec![doc! {"$match": over.clone()}, doc! {"$count": "n"}])
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(agg, vec![doc! {"n": 2}]);
    let updated = coll
        .update_many(over.clone(), doc! {"$set": {"flag": true}})
        .await
        .unwrap();
    assert_eq!(updated.modified_count, 2);
    assert_eq!(ids(&coll, doc! {"flag": true}).await, vec![1, 4]);
    let deleted = coll
        .delete_many(doc! {"$expr": {"$lt": ["$spent", "$budget"]}})
        .await
        .unwrap();
    // _id 2 (20 < 40) and _id 5 (missing < 5).
    assert_eq!(deleted.deleted_count, 2);
    assert_eq!(ids(&coll, doc! {}).await, vec![1, 3, 4]);
}

async fn expr_errors(client: &Client) {
    let coll = client.database("qx").collection::<Document>("errors");
    coll.insert_one(doc! {"_id": 1, "a": [{"b": 1}]})
        .await
        .unwrap();
    let code = find_error(
        &coll,
        doc! {"a": {"$elemMatch": {"$expr": {"$eq": ["$b", 1]}}}},
    )
    .await;
    assert_eq!(code, Some(2), "$expr inside $elemMatch");
    assert_eq!(
        find_error(&coll, doc! {"$expr": {"$eq": ["$$undefinedVar", 1]}}).await,
        Some(17276)
    );
    assert_eq!(
        find_error(&coll, doc! {"$expr": {"$noSuchOperator": 1}}).await,
        Some(168)
    );
    assert_eq!(
        find_error(&coll, doc! {"a": {"$expr": true}}).await,
        Some(2),
        "$expr is not a field operator"
    );
}

async fn json_schema_in_filters(client: &Client) {
    let coll = client.database("qx").collection::<Document>("people");
    coll.insert_many(vec![
        doc! {"_id": 1, "name": "Peter", "age": 65},
        doc! {"_id": 2, "name": "Paul", "age": 105},
        doc! {"_id": 3, "name": "Mary", "age": 10},
        doc! {"_id": 4, "name": "John", "age": "unknown"},
        doc! {"_id": 5, "name": "Mark"},
        doc! {"_id": 6},
        doc! {"_id": 7, "name": "Ann", "age": [70]},
    ])
    .await
    .unwrap();
    let seniors = doc! {"$jsonSchema": {
        "required": ["name", "age"],
        "properties": {"name": {"bsonType": "string"}, "age": {"bsonType": "number", "minimum": 65}}
    }};
    assert_eq!(ids(&coll, seniors.clone()).await, vec![1, 2]);
    // Restrictions only apply to values of their type, and absent optional fields pass.
    let age_min = doc! {"$jsonSchema": {"properties": {"age": {"minimum": 65}}}};
    assert_eq!(ids(&coll, age_min).await, vec![1, 2, 4, 5, 6, 7]);
    assert_eq!(coll.count_documents(seniors.clone()).await.unwrap(), 2);
    let closed = doc! {"$jsonSchema": {
        "properties": {"_id": {}, "name": {"type": "string", "pattern": "^M"}},
        "additionalProperties": false
    }};
    assert_eq!(ids(&coll, closed).await, vec![5, 6]);
    let typed = doc! {"$jsonSchema": {"properties": {"age": {"type": ["array", "string"]}}}, "_id": {"$gt": 1}};
    assert_eq!(ids(&coll, typed).await, vec![4, 5, 6, 7]);
    assert_eq!(
        ids(
            &coll,
            doc! {"$or": [{"$jsonSchema": {"required": ["age"], "properties": {"age": {"maximum": 10}}}}, {"_id": 6}]}
        )
        .await,
        vec![3, 4, 6, 7]
    );
    let agg: Vec<Document> = coll
        .aggregate(vec![
            doc! {"$match": seniors.clone()},
            doc! {"$project": {"name": 1, "_id": 0}},
        ])
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(agg, vec![doc! {"name": "Peter"}, doc! {"name": "Paul"}]);
    let updated = coll
        .update_many(seniors.clone(), doc! {"$set": {"senior": true}})
        .await
        .unwrap();
    assert_eq!(updated.modified_count, 2);
    let deleted = coll
        .delete_many(doc! {"$jsonSchema": {"required": ["age"], "properties": {"age": {"bsonType": "array"}}}})
        .await
        .unwrap();
    assert_eq!(deleted.deleted_count, 1);
    assert_eq!(ids(&coll, doc! {}).await, vec![1, 2, 3, 4, 5, 6]);
    // Catalog filters take $jsonSchema too.
    let db = client.database("qx");
    db.create_collection("other").await.unwrap();
    let names = db
        .list_collection_names()
        .filter(doc! {"$jsonSchema": {"properties": {"name": {"enum": ["people"]}}}})
        .await
        .unwrap();
    assert_eq!(names, vec!["people".to_string()]);
}

async fn json_schema_errors(client: &Client) {
    let coll = client
        .database("qx")
        .collection::<Document>("schema_errors");
    coll.insert_one(doc! {"_id": 1, "a": [{"b": 1}]})
        .await
        .unwrap();
    for (schema, code) in [
        (doc! {"invalid": {}}, 9),
        (doc! {"type": "integer"}, 9),
        (doc! {"bsonType": "nope"}, 2),
        (doc! {"properties": 1}, 14),
        (doc! {"required": []}, 9),
        (doc! {"format": "email"}, 9),
    ] {
        assert_eq!(
            find_error(&coll, doc! {"$jsonSchema": schema.clone()}).await,
            Some(code),
            "{schema}"
        );
    }
    assert_eq!(find_error(&coll, doc! {"$jsonSchema": 1}).await, Some(14));
    let err = coll
        .count_documents(doc! {"$jsonSchema": {"invalid": {}}})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(9));
    // Allowed in a filter's $elemMatch, refused in a projection's.
    assert_eq!(
        ids(
            &coll,
            doc! {"a": {"$elemMatch": {"$jsonSchema": {"required": ["b"]}}}}
        )
        .await,
        vec![1]
    );
    let err = coll
        .find(doc! {})
        .projection(doc! {"a": {"$elemMatch": {"$jsonSchema": {}}}})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(224));
}

async fn expression_projections(client: &Client) {
    let coll = client.database("qx").collection::<Document>("orders");
    coll.insert_many(vec![
        doc! {"_id": 1, "price": 10, "qty": 3, "item": "pen", "tags": ["a", "b"], "sub": {"x": 1}},
        doc! {"_id": 2, "price": 2.5, "qty": 4, "item": "ink", "tags": []},
    ])
    .await
    .unwrap();
    let projection = doc! {
        "total": {"$multiply": ["$price", "$qty"]},
        "name": {"$toUpper": "$item"},
        "label": {"$concat": ["$item", ":", {"$toString": "$qty"}]},
        "kind": {"$cond": {"if": {"$gte": ["$price", 5]}, "then": "big", "else": "small"}},
        "n": {"$size": "$tags"},
        "first": {"$arrayElemAt": ["$tags", 0]},
        "x": "$sub.x",
        "lit": {"$literal": "$notAPath"},
    };
    let found: Vec<Document> = coll
        .find(doc! {})
        .projection(projection)
        .sort(doc! {"_id": 1})
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(
        found,
        vec![
            doc! {"_id": 1, "total": 30, "name": "PEN", "label": "pen:3", "kind": "big", "n": 2, "first": "a", "x": 1, "lit": "$notAPath"},
            doc! {"_id": 2, "total": 10.0, "name": "INK", "label": "ink:4", "kind": "small", "n": 0, "lit": "$notAPath"},
        ]
    );
    // Expressions combine with $expr filters and nested computed fields.
    let found = coll
        .find_one(doc! {"$expr": {"$lt": ["$price", 5]}})
        .projection(doc! {"_id": 0, "o": {"cost": {"$add": ["$price", 1]}, "item": 1}})
        .await
        .unwrap();
    assert_eq!(found, Some(doc! {"o": {"cost": 3.5}}));
    let modified = coll
        .find_one_and_update(doc! {"_id": 1}, doc! {"$inc": {"qty": 1}})
        .projection(doc! {"_id": 0, "total": {"$multiply": ["$price", "$qty"]}})
        .return_document(mongodb::options::ReturnDocument::After)
        .await
        .unwrap();
    assert_eq!(modified, Some(doc! {"total": 40}));
    for (projection, code) in [
        (doc! {"a": 0, "t": {"$add": [1, 2]}}, 31252),
        (doc! {"t": {"$add": [1, 2]}, "a": 0}, 31254),
        (doc! {"t": {"$add": ["$$nope", 2]}}, 17276),
        (doc! {"t": {"$bogus": 1}}, 31325),
        (doc! {"t": {"$cond": [1, 2]}}, 16020),
    ] {
        let err = coll
            .find(doc! {})
            .projection(projection.clone())
            .await
            .unwrap_err();
        assert_eq!(error_code(&err), Some(code), "{projection}");
    }
}

both_modes!(
    expr_in_filters,
    expr_errors,
    json_schema_in_filters,
    json_schema_errors,
    expression_projections
);
