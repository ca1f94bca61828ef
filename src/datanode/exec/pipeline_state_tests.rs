//! An aggregation cursor holds about a batch: each batch reads only the input it needs, a
//! blocking stage's output and a `$lookup` that multiplies come out a part at a time.

use super::{PipelineInput, PipelineState, Position, QueryShape};
use crate::aggregate::Pipeline;
use crate::aggregate::foreign::{CommandRunner, Host};
use crate::datanode::storage::Storage;
use crate::error::Result;
use bson::{Bson, Document, doc, rawdoc};
use futures::future::BoxFuture;
use std::time::{Duration, Instant};

const MB: usize = 1024 * 1024;

/// Collection `c` of database `app` with `n` documents `{_id: i, k: 1, pad}`.
async fn collection(n: i32, pad: usize) -> (tempfile::TempDir, PipelineInput) {
    let dir = tempfile::tempdir().unwrap();
    let storage = Storage::open(dir.path(), Default::default()).await.unwrap();
    let db = storage.database_or_create("app").await.unwrap();
    let coll = db.ensure_collection("c").await.unwrap();
    let docs: Vec<_> = (0..n)
        .map(|i| rawdoc! {"_id": i, "k": 1, "pad": "x".repeat(pad)})
        .collect();
    let refs: Vec<_> = docs.iter().map(|d| d.as_ref()).collect();
    let mut txn = db.write().await.unwrap();
    txn.insert(&coll, &refs).await.unwrap();
    txn.commit().await.unwrap();
    let empty = Document::new();
    let position = Position::plan(&coll, &QueryShape::filter(&empty)).unwrap();
    (
        dir,
        PipelineInput {
            db,
            coll,
            position,
            index_keys: None,
        },
    )
}

fn start(stages: Vec<Document>, input: PipelineInput) -> PipelineState {
    let pipeline = Pipeline::parse(&stages).unwrap();
    let needs_host = pipeline.reaches_other_collections();
    PipelineState::new(
        pipeline.start(),
        Some(Box::new(input)),
        needs_host,
        "app".into(),
    )
}

fn ids(batch: &[bson::RawDocumentBuf]) -> Vec<i32> {
    batch.iter().map(|d| d.get_i32("_id").unwrap()).collect()
}

#[tokio::test]
async fn a_per_document_pipeline_reads_about_a_batch_at_a_time() {
    let (_dir, input) = collection(10_000, 10).await;
    let mut run = start(vec![doc! {"$project": {"k": 1}}], input);
    let mut seen = Vec::new();
    let batch = run.next_batch(101, None).await.unwrap();
    assert_eq!(ids(&batch), (0..101).collect::<Vec<_>>());
    assert!(
        run.documents_read() <= 2 * 101,
        "read {}",
        run.documents_read()
    );
    assert!(run.buffered() <= 101, "holds {}", run.buffered());
    seen.extend(ids(&batch));
    while !run.exhausted() {
        let read_before = run.documents_read();
        let batch = run.next_batch(250, None).await.unwrap();
        assert!(batch.len() <= 250);
        assert!(run.buffered() <= 1000, "holds {}", run.buffered());
        assert!(run.documents_read() - read_before <= 2000);
        seen.extend(ids(&batch));
    }
    assert_eq!(seen, (0..10_000).collect::<Vec<_>>());
}

#[tokio::test]
async fn a_satisfied_limit_stops_the_read() {
    let (_dir, input) = collection(10_000, 10).await;
    let mut run = start(vec![doc! {"$limit": 5}], input);
    let batch = run.next_batch(101, None).await.unwrap();
    assert_eq!(ids(&batch), vec![0, 1, 2, 3, 4]);
    assert!(run.exhausted());
    assert!(run.documents_read() <= 101, "read {}", run.documents_read());
}

#[tokio::test]
async fn a_blocking_stage_output_comes_a_batch_at_a_time() {
    let (_dir, input) = collection(10_000, 10).await;
    let stages = vec![
        doc! {"$group": {"_id": "$_id", "n": {"$sum": 1}}},
        doc! {"$sort": {"_id": -1}},
    ];
    let mut run = start(stages, input);
    let batch = run.next_batch(10, None).await.unwrap();
    assert_eq!(ids(&batch), (9_990..10_000).rev().collect::<Vec<_>>());
    // The input is read whole (the stages block); their output is drained a part at a time.
    assert_eq!(run.documents_read(), 10_000);
    assert!(run.buffered() <= 1000, "holds {}", run.buffered());
    let mut n = batch.len();
    while !run.exhausted() {
        n += run.next_batch(500, None).await.unwrap().len();
        assert!(run.buffered() <= 1000, "holds {}", run.buffered());
    }
    assert_eq!(n, 10_000);
}

/// Answers every `$lookup` with every document of the collection (they all match).
struct EveryDocument {
    docs: Vec<Bson>,
}

impl CommandRunner for EveryDocument {
    fn run_command<'a>(
        &'a self,
        _db: &'a str,
        _command: Document,
    ) -> BoxFuture<'a, Result<Document>> {
        Box::pin(async move {
            Ok(
                doc! {"cursor": {"firstBatch": self.docs.clone(), "id": 0_i64, "ns": "app.c"}, "ok": 1},
            )
        })
    }
}

/// The fuzzer's `lookup-output-held-whole`: 5,000 documents that all match one another, 25
/// million joined documents in about 1 GB of output. The first batch comes at once, and the
/// cursor holds about a batch, however far it is read.
#[tokio::test]
async fn a_multiplying_lookup_is_joined_a_part_per_batch() {
    let n = 5_000;
    let (_dir, input) = collection(n, 10).await;
    let runner = EveryDocument {
        docs: (0..n)
            .map(|i| Bson::Document(doc! {"_id": i, "k": 1, "pad": "x".repeat(10)}))
            .collect(),
    };
    let host = Host {
        db: "app",
        runner: &runner,
        write_concern: None,
        bypass_document_validation: false,
    };
    let lookup = doc! {"$lookup": {"from": "c", "localField": "k", "foreignField": "k", "as": "j"}};
    let mut run = start(vec![lookup], input);
    assert!(run.needs_host());
    let started = Instant::now();
    let batch = run.next_batch(101, Some(&host)).await.unwrap();
    let bytes: usize = batch.iter().map(|d| d.as_bytes().len()).sum();
    assert!(
        !batch.is_empty() && bytes <= 16 * MB,
        "{} documents",
        batch.len()
    );
    assert_eq!(
        batch[0].get_array("j").unwrap().into_iter().count(),
        n as usize
    );
    assert!(
        run.buffered_bytes() <= 40 * MB,
        "holds {} bytes",
        run.buffered_bytes()
    );
    assert!(
        run.documents_read() <= 2 * 101,
        "read {}",
        run.documents_read()
    );
    let mut seen = ids(&batch);
    for _ in 0..5 {
        let batch = run.next_batch(50, Some(&host)).await.unwrap();
        assert!(
            run.buffered_bytes() <= 40 * MB,
            "holds {} bytes",
            run.buffered_bytes()
        );
        seen.extend(ids(&batch));
    }
    assert_eq!(seen, (0..seen.len() as i32).collect::<Vec<_>>());
    assert!(!run.exhausted());
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "{:?}",
        started.elapsed()
    );
}
