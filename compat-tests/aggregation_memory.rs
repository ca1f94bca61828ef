//! The aggregation stages' memory limits through the router: a `$group` past
//! `internalDocumentSourceGroupMaxMemoryBytes` and a `$sort` past
//! `internalQueryMaxBlockingSortMemoryUsageBytes` spill to disk and give the whole answer with
//! `allowDiskUse: true` (and by default), and fail with QueryExceededMemoryLimitNoDiskUseAllowed
//! with `allowDiskUse: false`; a `$sort` followed by a `$limit` keeps only the top documents
//! and stays within the limit. On an unsharded and a sharded collection, in one process and
//! across processes.

use crate::harness::{ProcessCluster, TestCluster, admin, error_code};
use futures::TryStreamExt;
use mongodb::bson::{Document, doc};
use mongodb::{Client, Collection};

/// 64 KiB per stage, against about 500 KB of documents.
const LIMITS: [(&str, &str); 2] = [
    ("internalQueryMaxBlockingSortMemoryUsageBytes", "65536"),
    ("internalDocumentSourceGroupMaxMemoryBytes", "65536"),
];
const N: i32 = 2000;

async fn aggregate(
    coll: &Collection<Document>,
    stages: Vec<Document>,
    allow_disk_use: Option<bool>,
) -> mongodb::error::Result<Vec<Document>> {
    let mut action = coll.aggregate(stages).batch_size(300);
    if let Some(allow) = allow_disk_use {
        action = action.allow_disk_use(allow);
    }
    action.await?.try_collect().await
}

async fn limits_hold(client: &Client, db_name: &str) {
    let db = client.database(db_name);
    admin(
        client,
        doc! {"shardCollection": format!("{db_name}.sharded"), "key": {"_id": "hashed"}},
    )
    .await
    .unwrap();
    let docs: Vec<Document> = (0..N)
        .map(|i| doc! {"_id": i, "b": i % 50, "k": (i * 7919) % N, "pad": "x".repeat(200)})
        .collect();
    for name in ["plain", "sharded"] {
        let coll = db.collection::<Document>(name);
        coll.insert_many(docs.clone()).await.unwrap();

        // $group: every group holds its documents' padding.
        let group = vec![
            doc! {"$group": {"_id": "$b", "ids": {"$push": "$_id"}, "pads": {"$push": "$pad"},
            "total": {"$sum": "$_id"}}},
            doc! {"$project": {"n": {"$size": "$ids"}, "total": 1, "last": {"$max": "$ids"}}},
            doc! {"$sort": {"_id": 1}},
        ];
        let expected: Vec<Document> = (0..50)
            .map(|b| doc! {"_id": b, "total": 40 * b + 39_000, "n": 40, "last": 1950 + b})
            .collect();
        for allow in [Some(true), None] {
            let out = aggregate(&coll, group.clone(), allow).await.unwrap();
            assert_eq!(out, expected, "{name}: $group with allowDiskUse {allow:?}");
        }
        let err = aggregate(&coll, group, Some(false)).await.unwrap_err();
        assert_eq!(error_code(&err), Some(292), "{name}: {err}");
        assert!(
            err.to_string().contains("Exceeded memory limit for $group"),
            "{name}: {err}"
        );
        // Few small groups fit.
        let small = vec![doc! {"$group": {"_id": "$b", "n": {"$sum": 1}}}];
        let out = aggregate(&coll, small, Some(false)).await.unwrap();
        assert_eq!(out.len(), 50, "{name}");

        // $sort: every document.
        let sort = vec![
            doc! {"$sort": {"k": 1, "_id": 1}},
            doc! {"$project": {"_id": 0, "k": 1}},
        ];
        for allow in [Some(true), None] {
            let keys: Vec<i32> = aggregate(&coll, sort.clone(), allow)
                .await
                .unwrap()
                .iter()
                .map(|d| d.get_i32("k").unwrap())
                .collect();
            assert_eq!(
                keys,
                (0..N).collect::<Vec<_>>(),
                "{name}: $sort with {allow:?}"
            );
        }
        let err = aggregate(&coll, sort, Some(false)).await.unwrap_err();
        assert_eq!(error_code(&err), Some(292), "{name}: {err}");
        assert!(
            err.to_string()
                .contains("Sort exceeded memory limit of 65536 bytes"),
            "{name}: {err}"
        );
        // $sort + $limit: the top documents only, within the limit.
        let top = vec![
            doc! {"$sort": {"k": -1}},
            doc! {"$limit": 3},
            doc! {"$project": {"_id": 0, "k": 1}},
        ];
        let out = aggregate(&coll, top, Some(false)).await.unwrap();
        assert_eq!(
            out,
            vec![doc! {"k": N - 1}, doc! {"k": N - 2}, doc! {"k": N - 3}],
            "{name}"
        );
    }
}

#[tokio::test]
async fn group_and_sort_spill_or_fail_in_process() {
    let cluster = TestCluster::with_parameters(&LIMITS).await;
    limits_hold(&cluster.client, "aggmem").await;
    cluster.shutdown().await;
}

#[tokio::test]
async fn group_and_sort_spill_or_fail_across_processes() {
    let mut args = Vec::new();
    for (name, value) in LIMITS {
        args.push("--setParameter".to_string());
        args.push(format!("{name}={value}"));
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let cluster = ProcessCluster::start_with(2, &args).await;
    limits_hold(&cluster.client().await, "aggmem_process").await;
}
