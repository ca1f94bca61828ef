//! The aggregation stages' memory limits through the router: a `$group` past
//! `internalDocumentSourceGroupMaxMemoryBytes` and a `$sort` past
//! `internalQueryMaxBlockingSortMemoryUsageBytes` spill to disk and give the whole answer with
//! `allowDiskUse: true` (and by default), and fail with QueryExceededMemoryLimitNoDiskUseAllowed
//! with `allowDiskUse: false`; a `$sort` followed by a `$limit` keeps only the top documents
//! and stays within the limit. On an unsharded and a sharded collection, in one process and
//! across processes.
//!
//! The other blocking stages, with their limits lowered to 64 KiB (and `$densify`'s table of
//! partitions to 500 bytes): `$bucketAuto` and `$sample` sort through the spilling sort,
//! `$setWindowFields` and `$densify` sort before they read their partitions, `$facet` runs
//! its sub-pipelines' own limits, each the same answer with `allowDiskUse` and
//! QueryExceededMemoryLimitNoDiskUseAllowed without; a `$setWindowFields` partition past its
//! limit (5414201, whatever `allowDiskUse`), `$densify`'s partitions (6007200) and a `$facet`
//! document (4031700) are refused. Through the router a sharded collection's blocking stages
//! run in the router's merger part, under the same limits (spilling to a temporary directory
//! with `allowDiskUse`).

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

/// Two shards, a config server and a router, each process started with `parameters`.
async fn processes_with(parameters: &[(&str, &str)]) -> ProcessCluster {
    let args: Vec<String> = parameters
        .iter()
        .flat_map(|(name, value)| ["--setParameter".to_string(), format!("{name}={value}")])
        .collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    ProcessCluster::start_with(2, &args).await
}

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
    let cluster = processes_with(&LIMITS).await;
    limits_hold(&cluster.client().await, "aggmem_process").await;
}

/// The other blocking stages' limits, and the sort's, at 64 KiB; `$densify`'s partition table
/// at 500 bytes (50 partitions need about 850).
const STAGE_LIMITS: [(&str, &str); 5] = [
    ("internalQueryMaxBlockingSortMemoryUsageBytes", "65536"),
    ("internalDocumentSourceBucketAutoMaxMemoryBytes", "65536"),
    (
        "internalDocumentSourceSetWindowFieldsMaxMemoryBytes",
        "65536",
    ),
    ("internalDocumentSourceDensifyMaxMemoryBytes", "500"),
    ("internalQueryFacetMaxOutputDocSizeBytes", "65536"),
];

/// Runs `stages` with `allowDiskUse` true and unset (same `expected` answer), and false
/// (QueryExceededMemoryLimitNoDiskUseAllowed: on a sharded collection from the router's
/// merger part, which holds the stage).
async fn spills_or_fails(
    coll: &Collection<Document>,
    sharded: bool,
    stages: Vec<Document>,
    expected: &[Document],
) {
    let name = coll.name();
    for allow in [Some(true), None] {
        let out = aggregate(coll, stages.clone(), allow).await.unwrap();
        assert_eq!(
            out, expected,
            "{name}: {stages:?} with allowDiskUse {allow:?}"
        );
    }
    let err = aggregate(coll, stages.clone(), Some(false))
        .await
        .unwrap_err();
    assert_eq!(
        error_code(&err),
        Some(292),
        "{name} (sharded: {sharded}): {stages:?}: {err}"
    );
    assert!(
        err.to_string().contains(
            "Sort exceeded memory limit of 65536 bytes, but did not opt in to external sorting."
        ),
        "{name}: {err}"
    );
}

/// A refusal with `code` and a message containing `message`, whatever `allowDiskUse` says.
async fn refused(coll: &Collection<Document>, stages: Vec<Document>, code: i32, message: &str) {
    for allow in [Some(true), Some(false), None] {
        let err = aggregate(coll, stages.clone(), allow).await.unwrap_err();
        assert_eq!(error_code(&err), Some(code), "{stages:?} {allow:?}: {err}");
        assert!(err.to_string().contains(message), "{err}");
    }
}

async fn stage_limits_hold(client: &Client, db_name: &str) {
    let db = client.database(db_name);
    admin(
        client,
        doc! {"shardCollection": format!("{db_name}.sharded"), "key": {"_id": "hashed"}},
    )
    .await
    .unwrap();
    // About 500 KB: `k` is a permutation of 0..N, `b` 50 partitions of 40 documents (about
    // 10 KB each), `c` 5 of 400; in each `v` takes the even values 0 to 78.
    let docs: Vec<Document> = (0..N)
        .map(|i| {
            doc! {"_id": i, "b": i % 50, "c": i % 5, "k": (i * 7919) % N, "v": (i / 50) * 2,
            "pad": "x".repeat(200)}
        })
        .collect();
    for name in ["plain", "sharded"] {
        let sharded = name == "sharded";
        let coll = db.collection::<Document>(name);
        coll.insert_many(docs.clone()).await.unwrap();

        // $bucketAuto: four buckets of 500 keys.
        let buckets = vec![doc! {"$bucketAuto": {"groupBy": "$k", "buckets": 4,
        "output": {"n": {"$sum": 1}, "total": {"$sum": "$k"}}}}];
        let expected: Vec<Document> = (0..4)
            .map(|q| {
                let (min, max) = (q * 500, if q == 3 { 1999 } else { q * 500 + 500 });
                let total: i32 = (q * 500..q * 500 + 500).sum();
                doc! {"_id": {"min": min, "max": max}, "n": 500, "total": total}
            })
            .collect();
        spills_or_fails(&coll, sharded, buckets, &expected).await;

        // $sample: 1,500 documents do not fit, 5 do (top-k).
        let sample = |size: i32| {
            vec![
                doc! {"$sample": {"size": size}},
                doc! {"$group": {"_id": null, "ids": {"$addToSet": "$_id"}}},
                doc! {"$project": {"_id": 0, "distinct": {"$size": "$ids"}}},
            ]
        };
        spills_or_fails(&coll, sharded, sample(1500), &[doc! {"distinct": 1500}]).await;
        let out = aggregate(&coll, sample(5), Some(false)).await.unwrap();
        assert_eq!(out, vec![doc! {"distinct": 5}], "{name}");

        // $setWindowFields: 50 partitions of about 10 KB, after a sort of all 500 KB.
        let windows = vec![
            doc! {"$setWindowFields": {"partitionBy": "$b", "sortBy": {"k": 1},
            "output": {"n": {"$documentNumber": {}}}}},
            doc! {"$match": {"n": 1}},
            doc! {"$project": {"_id": 0, "b": 1, "k": 1}},
            doc! {"$sort": {"b": 1}},
        ];
        let expected: Vec<Document> = (0..50)
            .map(|b| {
                let least = (0..N).filter(|i| i % 50 == b).map(|i| (i * 7919) % N).min();
                doc! {"b": b, "k": least.unwrap()}
            })
            .collect();
        spills_or_fails(&coll, sharded, windows, &expected).await;
        // One partition of all 500 KB.
        let whole = vec![doc! {"$setWindowFields": {"partitionBy": "$missing",
        "sortBy": {"k": 1}, "output": {"n": {"$documentNumber": {}}}}}];
        let err = aggregate(&coll, whole.clone(), Some(true))
            .await
            .unwrap_err();
        assert_eq!(error_code(&err), Some(5414201), "{err}");
        assert!(
            err.to_string()
                .contains("Exceeded memory limit in DocumentSourceSetWindowFields, used "),
            "{err}"
        );
        assert!(
            err.to_string().contains("bytes but max allowed is 65536"),
            "{err}"
        );
        // Without partitionBy and sortBy nothing is sorted: refused whatever allowDiskUse.
        let unsorted = vec![doc! {"$setWindowFields": {"output": {"n": {"$count": {}}}}}];
        refused(
            &coll,
            unsorted,
            5414201,
            "Exceeded memory limit in DocumentSourceSetWindowFields",
        )
        .await;

        // $densify: the odd values 1 to 77 are missing in each of 5 partitions.
        let densify = |by: &str| {
            vec![
                doc! {"$densify": {"field": "v", "partitionByFields": [by],
                "range": {"step": 1, "bounds": "partition"}}},
                doc! {"$count": "n"},
            ]
        };
        spills_or_fails(&coll, sharded, densify("c"), &[doc! {"n": N + 5 * 39}]).await;
        // 50 partitions pass the table's 500 bytes once sorted.
        let err = aggregate(&coll, densify("b"), Some(true))
            .await
            .unwrap_err();
        assert_eq!(error_code(&err), Some(6007200), "{err}");
        assert!(
            err.to_string()
                .contains("$densify exceeded memory limit of 500"),
            "{err}"
        );

        // $facet: a sub-pipeline's $sort spills; its top-k fits; the document it builds is
        // bounded.
        let facet = vec![
            doc! {"$facet": {
                "top": [{"$sort": {"k": -1}}, {"$limit": 3}, {"$project": {"_id": 0, "k": 1}}],
                "n": [{"$count": "n"}],
                "sorted": [{"$sort": {"k": 1}}, {"$project": {"_id": 0, "k": 1}}],
            }},
            doc! {"$project": {"top": 1, "n": 1, "count": {"$size": "$sorted"},
            "first": {"$arrayElemAt": ["$sorted", 0]}}},
        ];
        let expected = doc! {
            "top": [{"k": N - 1}, {"k": N - 2}, {"k": N - 3}],
            "n": [{"n": N}],
            "count": N,
            "first": {"k": 0},
        };
        spills_or_fails(&coll, sharded, facet, &[expected]).await;
        let all = vec![doc! {"$facet": {"all": [{"$project": {"pad": 1}}]}}];
        refused(
            &coll,
            all,
            4031700,
            "which exceeds the limit of 65536 bytes",
        )
        .await;
    }
}

#[tokio::test]
async fn other_blocking_stages_spill_or_fail_in_process() {
    let cluster = TestCluster::with_parameters(&STAGE_LIMITS).await;
    stage_limits_hold(&cluster.client, "stagemem").await;
    cluster.shutdown().await;
}

#[tokio::test]
async fn other_blocking_stages_spill_or_fail_across_processes() {
    let cluster = processes_with(&STAGE_LIMITS).await;
    stage_limits_hold(&cluster.client().await, "stagemem_process").await;
}
