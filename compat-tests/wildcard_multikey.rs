//! A wildcard index's multikey paths end to end, as MongoDB tracks them: each queried path is
//! planned by the arrays met at it or above it — a sort on a path without them comes from the
//! scan, its range predicates intersect into one interval, and explain's `isMultiKey` and
//! `multiKeyPaths` are that path's — on unsharded and sharded collections, through writes,
//! transactions and a restart of the shard.

use crate::harness::{ProcessCluster, both_modes, find_all, first_batch};
use crate::wildcard_indexes::{ids, ids_in_order, ixscan, setup};
use mongodb::Client;
use mongodb::bson::{Bson, Document, doc};

async fn explain(db: &mongodb::Database, name: &str, filter: Document, sort: Document) -> Document {
    let mut find = doc! {"find": name, "filter": filter};
    if !sort.is_empty() {
        find.insert("sort", sort);
    }
    db.run_command(doc! {"explain": find}).await.unwrap()
}

fn blocking(reply: &Document) -> bool {
    reply.to_string().contains("\"SORT\"")
}

async fn sorted_ids(
    db: &mongodb::Database,
    name: &str,
    filter: Document,
    sort: Document,
) -> Vec<i32> {
    let reply = db
        .run_command(doc! {"find": name, "filter": filter, "sort": sort})
        .await
        .unwrap();
    ids_in_order(&first_batch(&reply))
}

/// `isMultiKey` and `multiKeyPaths` of the unsharded IXSCAN.
fn multikey_of(reply: &Document) -> (bool, Document) {
    let scan = ixscan(reply).unwrap();
    let paths = scan.get_document("multiKeyPaths").unwrap().clone();
    (scan.get_bool("isMultiKey").unwrap(), paths)
}

async fn paths_are_planned_by_their_own_arrays(client: &Client) {
    let db = setup(client, "wildcard_multikey", doc! {"key": {"$**": 1}}).await;
    for name in ["plain", "sharded"] {
        let coll = db.collection::<Document>(name);
        coll.insert_many([
            doc! {"_id": 1, "a": [1, 2], "b": 3, "c": {"d": 1}},
            doc! {"_id": 70, "a": 5, "b": 1, "c": {"d": [4]}, "e": {"f": 2}},
            doc! {"_id": 2, "b": 2, "g": [{"h": 1}], "e": {"f": 1}},
        ])
        .await
        .unwrap();
        // Sorts on paths without arrays come from the scan, those with one are blocking.
        for (path, sorted) in [("b", true), ("e.f", true), ("a", false), ("g.h", false)] {
            let reply = explain(&db, name, doc! {path: {"$gt": 0}}, doc! {path: 1}).await;
            assert_eq!(blocking(&reply), !sorted, "{name} {path}: {reply}");
        }
        let b = sorted_ids(&db, name, doc! {"b": {"$gt": 0}}, doc! {"b": -1}).await;
        assert_eq!(b, [1, 2, 70], "{name}");
        let a = sorted_ids(&db, name, doc! {"a": {"$gt": 0}}, doc! {"a": 1}).await;
        assert_eq!(a, [1, 70], "{name}");
        // `{a: [1, 2]}` matches `{$gt: 1, $lt: 2}` through two elements: the scan of the
        // multikey path is bounded by one predicate only.
        let found = find_all(&coll, doc! {"a": {"$gt": 1, "$lt": 2}}).await;
        assert_eq!(ids(&found), [1], "{name}");
        let found = find_all(&coll, doc! {"b": {"$gt": 1, "$lt": 3}}).await;
        assert_eq!(ids(&found), [2], "{name}");
    }

    let plain = |filter: Document, sort: Document| explain(&db, "plain", filter, sort);
    let range = plain(doc! {"b": {"$gt": 1, "$lt": 5}}, doc! {}).await;
    let bounds = ixscan(&range)
        .unwrap()
        .get_document("indexBounds")
        .unwrap()
        .clone();
    assert_eq!(bounds, doc! {"$_path": ["[\"b\", \"b\"]"], "b": ["(1, 5)"]});
    assert_eq!(multikey_of(&range), (false, doc! {"$_path": [], "b": []}));
    let range = plain(doc! {"a": {"$gt": 1, "$lt": 5}}, doc! {}).await;
    let scan = ixscan(&range).unwrap();
    let bounds = scan
        .get_document("indexBounds")
        .unwrap()
        .get_array("a")
        .unwrap();
    let one_side = [Bson::from("(1, inf.0]"), Bson::from("[-inf.0, 5)")];
    assert!(
        bounds.len() == 1 && one_side.contains(&bounds[0]),
        "{range}"
    );
    assert_eq!(multikey_of(&range), (true, doc! {"$_path": [], "a": ["a"]}));
    let below = plain(doc! {"g.h": 1}, doc! {}).await;
    assert_eq!(
        multikey_of(&below),
        (true, doc! {"$_path": [], "g.h": ["g"]})
    );

    // Writes add paths; removing the arrays leaves them multikey, as in MongoDB.
    for name in ["plain", "sharded"] {
        let coll = db.collection::<Document>(name);
        coll.insert_one(doc! {"_id": 3, "b": [0, 9]}).await.unwrap();
        let reply = explain(&db, name, doc! {"b": {"$gt": 0}}, doc! {"b": 1}).await;
        assert!(blocking(&reply), "{name}: {reply}");
        let found = find_all(&coll, doc! {"b": {"$gt": 1, "$lt": 3}}).await;
        assert_eq!(ids(&found), [2, 3], "{name}");
        coll.delete_one(doc! {"_id": 3}).await.unwrap();
        let reply = explain(&db, name, doc! {"b": {"$gt": 0}}, doc! {"b": 1}).await;
        assert!(blocking(&reply), "{name}: {reply}");

        // A transaction's reads see the arrays its writes put in; others once it commits.
        let mut session = client.start_session().await.unwrap();
        session.start_transaction().await.unwrap();
        coll.insert_one(doc! {"_id": 4, "e": {"f": [0, 3]}})
            .session(&mut session)
            .await
            .unwrap();
        let mine = db
            .run_command(doc! {
                "find": name, "filter": {"e.f": {"$gt": 1, "$lt": 3}}, "sort": {"e.f": 1}
            })
            .session(&mut session)
            .await
            .unwrap();
        assert_eq!(ids(&first_batch(&mine)), [4, 70], "{name}");
        session.commit_transaction().await.unwrap();
        let reply = explain(&db, name, doc! {"e.f": {"$gt": 0}}, doc! {"e.f": 1}).await;
        assert!(blocking(&reply), "{name}: {reply}");
        let found = find_all(&coll, doc! {"e.f": {"$gt": 1, "$lt": 3}}).await;
        assert_eq!(ids(&found), [4, 70], "{name}");
    }
}

/// A compound wildcard index plans its queried path by that path's arrays too (its regular
/// fields never hold one).
async fn compound_paths_are_planned_by_their_own_arrays(client: &Client) {
    let index = doc! {"key": {"r": 1, "$**": 1}, "wildcardProjection": {"r": 0}};
    let db = setup(client, "wildcard_multikey_compound", index).await;
    let coll = db.collection::<Document>("plain");
    coll.insert_many([
        doc! {"_id": 1, "r": 1, "x": [1, 2], "y": 3},
        doc! {"_id": 2, "r": 1, "x": 5, "y": 2},
    ])
    .await
    .unwrap();
    let plain = |filter: Document| explain(&db, "plain", filter, doc! {});
    let range = plain(doc! {"r": 1, "y": {"$gt": 1, "$lt": 5}}).await;
    let scan = ixscan(&range).unwrap();
    let bounds = scan.get_document("indexBounds").unwrap();
    assert_eq!(
        bounds.get_array("y").unwrap(),
        &vec![Bson::from("(1, 5)")],
        "{range}"
    );
    let expected = doc! {"r": [], "$_path": [], "y": []};
    assert_eq!(multikey_of(&range), (false, expected));
    let range = plain(doc! {"r": 1, "x": {"$gt": 1, "$lt": 2}}).await;
    let scan = ixscan(&range).unwrap();
    let bounds = scan.get_document("indexBounds").unwrap();
    let one_side = [Bson::from("(1, inf.0]"), Bson::from("[-inf.0, 2)")];
    let x = bounds.get_array("x").unwrap();
    assert!(x.len() == 1 && one_side.contains(&x[0]), "{range}");
    let expected = doc! {"r": [], "$_path": [], "x": ["x"]};
    assert_eq!(multikey_of(&range), (true, expected));
    let found = find_all(&coll, doc! {"r": 1, "x": {"$gt": 1, "$lt": 2}}).await;
    assert_eq!(ids(&found), [1]);
}

/// The paths are recorded with the data: a restarted shard plans as before it stopped.
#[tokio::test]
async fn multikey_paths_survive_a_restart() {
    let mut cluster = ProcessCluster::start(1).await;
    let client = cluster.client().await;
    let db = client.database("wildcard_multikey_restart");
    db.run_command(doc! {"createIndexes": "c", "indexes": [{"key": {"$**": 1}, "name": "w"}]})
        .await
        .unwrap();
    let coll = db.collection::<Document>("c");
    coll.insert_many([doc! {"_id": 1, "a": [1, 2]}, doc! {"_id": 2, "b": 3}])
        .await
        .unwrap();
    cluster.stop_shard(0);
    cluster.start_shard_again(0);
    let client = cluster.client().await;
    let db = client.database("wildcard_multikey_restart");
    let mut reply = None;
    // The router's connections to the killed shard may fail once.
    for _ in 0..20 {
        let explained = db
            .run_command(
                doc! {"explain": {"find": "c", "filter": {"a": {"$gt": 0}}, "sort": {"a": 1}}},
            )
            .await;
        if let Ok(explained) = explained {
            reply = Some(explained);
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    let reply = reply.expect("the restarted shard answers");
    assert!(blocking(&reply), "{reply}");
    assert_eq!(multikey_of(&reply), (true, doc! {"$_path": [], "a": ["a"]}));
    let reply = explain(&db, "c", doc! {"b": {"$gt": 0}}, doc! {"b": 1}).await;
    assert!(!blocking(&reply), "{reply}");
    assert_eq!(multikey_of(&reply), (false, doc! {"$_path": [], "b": []}));
}

both_modes!(
    paths_are_planned_by_their_own_arrays,
    compound_paths_are_planned_by_their_own_arrays
);
