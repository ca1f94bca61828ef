//! An index scan of many intervals reads them several at a time in one statement: whatever
//! the chunk, the direction, or an interval without an upper bound, it returns exactly what a
//! scan interval by interval returns, in the same order.

use super::Position;
use super::plan::{AccessPath, IndexScanPlan, KeyInterval};
use crate::datanode::storage::{RANGES_PER_STATEMENT, Storage};
use crate::document::keystring::encode_key;
use crate::query::filter::Filter;
use bson::{Bson, doc, rawdoc};
use std::sync::Arc;

fn key(g: i32) -> Vec<u8> {
    encode_key([(&Bson::Int32(g), false)])
}

#[tokio::test]
async fn batched_intervals_read_as_one_by_one() {
    let dir = tempfile::tempdir().unwrap();
    let storage = Storage::open(dir.path(), Default::default()).await.unwrap();
    let db = storage.database_or_create("app").await.unwrap();
    let coll = db.ensure_collection("c").await.unwrap();
    let groups = 2 * RANGES_PER_STATEMENT as i32 + 10;
    let docs: Vec<_> = (0..4 * groups)
        .map(|i| rawdoc! {"_id": i, "g": i % groups})
        .collect();
    let refs: Vec<_> = docs.iter().map(|d| d.as_ref()).collect();
    let mut txn = db.write().await.unwrap();
    txn.insert(&coll, &refs).await.unwrap();
    txn.commit().await.unwrap();
    let spec = crate::datanode::index::IndexSpec::parse(&doc! {"key": {"g": 1}}).unwrap();
    db.create_index("c", spec).await.unwrap();
    let coll = db.collection("c").unwrap();
    let index = coll.indexes.iter().find(|i| i.name == "g_1").unwrap();
    // Every group but each third one, one interval per group, and an open last interval.
    let chosen: Vec<i32> = (0..groups - 5).filter(|g| g % 3 != 0).collect();
    let mut intervals: Vec<KeyInterval> = chosen
        .iter()
        .map(|&g| KeyInterval {
            low: key(g),
            high: Some(key(g + 1)),
        })
        .collect();
    intervals.push(KeyInterval {
        low: key(groups - 2),
        high: None,
    });
    let filter = Filter::parse(&doc! {}).unwrap();
    for reverse in [false, true] {
        let mut expected: Vec<(i32, i32)> = (0..4 * groups)
            .map(|i| (i % groups, i))
            .filter(|(g, _)| chosen.contains(g) || *g >= groups - 2)
            .collect();
        expected.sort();
        if reverse {
            expected.reverse();
        }
        for chunk in [1, 3, 7, 1000] {
            let plan = IndexScanPlan {
                index: index.clone(),
                intervals: intervals.clone(),
                reverse,
                provides_sort: true,
                bounds: Vec::new(),
                wildcard: None,
            };
            let mut position =
                Position::with_path(AccessPath::IndexScan(Arc::new(plan))).with_chunk(chunk);
            let mut read = db.read().await.unwrap();
            let mut got = Vec::new();
            while !position.done() {
                for found in position
                    .next_matches(&mut read, &coll, &filter)
                    .await
                    .unwrap()
                {
                    got.push((
                        found.doc.get_i32("g").unwrap(),
                        found.doc.get_i32("_id").unwrap(),
                    ));
                }
            }
            assert_eq!(got, expected, "reverse {reverse}, chunk {chunk}");
            assert_eq!(position.examined().keys, expected.len() as u64);
        }
    }
}
