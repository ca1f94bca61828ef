//! Changing a document's shard key value through the router, with MongoDB 8.0's rules: only as
//! a retryable write (IllegalOperation 20 otherwise), never in a multi-update (InvalidOptions
//! 72); a document whose new key another shard owns moves there (update, findAndModify,
//! upsert), in a batch of one only (InvalidOptions 72 otherwise).

use crate::harness::{admin, both_modes, error_code, hashed_owners as owners};
use mongodb::Client;
use mongodb::bson::{Document, doc};

async fn shard_key_changes_follow_mongodb_rules(client: &Client) {
    let ns = "skey.c";
    admin(client, doc! {"shardCollection": ns, "key": {"k": "hashed"}})
        .await
        .unwrap();
    let db = client.database("skey");
    let coll = db.collection::<Document>("c");
    coll.insert_many((0..20).map(|i| doc! {"_id": i, "k": i, "tag": "t"}))
        .await
        .unwrap();
    let placed = owners(client, ns, 0..200).await;
    let owner = |k: i32| placed.iter().find(|(v, _)| *v == k).unwrap().1.clone();
    let elsewhere = |k: i32, from: i32| {
        placed
            .iter()
            .find(|(v, s)| *v >= from && *s != owner(k))
            .unwrap()
            .0
    };
    let same_shard = |k: i32, from: i32| {
        placed
            .iter()
            .find(|(v, s)| *v >= from && *s == owner(k))
            .unwrap()
            .0
    };

    // Not a retryable write: refused, nothing changes.
    let target = elsewhere(0, 100);
    let reply = db
        .run_command(
            doc! {"update": "c", "updates": [{"q": {"k": 0}, "u": {"$set": {"k": target}}}]},
        )
        .await
        .unwrap();
    let errors = reply.get_array("writeErrors").unwrap();
    let error = errors[0].as_document().unwrap();
    assert_eq!(error.get_i32("code").unwrap(), 20, "{reply}");
    assert!(
        error
            .get_str("errmsg")
            .unwrap()
            .contains("Must run update to shard key field in a multi-statement transaction or with retryWrites: true."),
        "{reply}"
    );
    assert_eq!(coll.count_documents(doc! {"k": 0}).await.unwrap(), 1);

    // A retryable update moves the document to the shard owning its new key.
    let moved = coll
        .update_one(doc! {"k": 0}, doc! {"$set": {"k": target}})
        .await
        .unwrap();
    assert_eq!((moved.matched_count, moved.modified_count), (1, 1));
    let found: Vec<Document> = crate::harness::all_by_id(&coll)
        .await
        .into_iter()
        .filter(|d| d.get_i32("_id").unwrap() == 0)
        .collect();
    assert_eq!(found, [doc! {"_id": 0, "k": target, "tag": "t"}]);
    // A query targeted by the new key reaches only its owner, where the document now is.
    assert_eq!(coll.count_documents(doc! {"k": target}).await.unwrap(), 1);
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 20);

    // A change within one shard is a plain update (still only retryable).
    let near = same_shard(1, 100);
    let kept = coll
        .update_one(doc! {"k": 1}, doc! {"$set": {"k": near}})
        .await
        .unwrap();
    assert_eq!(kept.modified_count, 1);
    assert_eq!(coll.count_documents(doc! {"k": near}).await.unwrap(), 1);

    // findAndModify moves too, and answers with the moved document.
    let target2 = elsewhere(2, target + 1);
    let after = coll
        .find_one_and_update(doc! {"k": 2}, doc! {"$set": {"k": target2}})
        .return_document(mongodb::options::ReturnDocument::After)
        .projection(doc! {"tag": 0})
        .await
        .unwrap()
        .unwrap();
    assert_eq!(after, doc! {"_id": 2, "k": target2});
    assert_eq!(coll.count_documents(doc! {"k": target2}).await.unwrap(), 1);
    assert_eq!(coll.count_documents(doc! {"_id": 2}).await.unwrap(), 1);

    // An upsert whose new document another shard owns inserts it there.
    let absent = 150;
    let upsert_target = elsewhere(absent, 160);
    let upserted = coll
        .update_one(
            doc! {"k": absent},
            doc! {"$set": {"k": upsert_target, "tag": "u"}},
        )
        .upsert(true)
        .await
        .unwrap();
    let id = upserted.upserted_id.expect("an upsert");
    let doc = coll
        .find_one(doc! {"k": upsert_target})
        .await
        .unwrap()
        .unwrap();
    assert_eq!(doc.get("_id").unwrap(), &id);
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 21);

    // Multi-updates never change shard keys.
    let err = coll
        .update_many(doc! {"tag": "t"}, doc! {"$inc": {"k": 1000}})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(72), "{err}");

    // Moving a document is for a batch of one update.
    let reply = db
        .run_command(doc! {
            "update": "c",
            "updates": [
                {"q": {"k": 3}, "u": {"$set": {"k": elsewhere(3, 170)}}},
                {"q": {"k": 4}, "u": {"$set": {"tag": "x"}}},
            ],
            "txnNumber": 1_i64,
        })
        .await
        .unwrap();
    let error = reply.get_array("writeErrors").unwrap()[0]
        .as_document()
        .unwrap()
        .clone();
    assert_eq!(error.get_i32("code").unwrap(), 72, "{reply}");
    assert!(
        error
            .get_str("errmsg")
            .unwrap()
            .contains("must be sent with write batch of size 1")
    );
    assert_eq!(coll.count_documents(doc! {"k": 3}).await.unwrap(), 1);
}

both_modes!(shard_key_changes_follow_mongodb_rules);
