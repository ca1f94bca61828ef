//! Target `aggregate`: an `aggregate` command through the shard's parser, its pipeline
//! parsed with the command's `let` and run over documents with the shard's memory limits
//! (stages that reach other collections answered by a stand-in host that serves the same
//! documents), and split as the router splits it for shards. The output is read a part at a
//! time, as a node's cursor reads it, up to a cap.

use super::command;
use bson::{Bson, Document, doc};
use docgrid::aggregate::foreign::{CommandRunner, Host};
use docgrid::aggregate::{MemoryLimits, Pipeline};
use docgrid::command::CommandRequest;
use docgrid::datanode::commands::parsers;
use docgrid::error::Result;
use docgrid::router::pipeline_split;
use docgrid::spill::approximate_document_size;
use futures::future::BoxFuture;

/// MongoDB's 100 MB for `$sort` and `$group`, as the shard runs them (no disk here).
const LIMIT_BYTES: usize = 100 * 1024 * 1024;

/// Answers the commands `$lookup`, `$unionWith`, `$out`... send, from the input documents.
struct StandIn {
    docs: Vec<Document>,
}

impl CommandRunner for StandIn {
    fn run_command<'a>(
        &'a self,
        _db: &'a str,
        command: Document,
    ) -> BoxFuture<'a, Result<Document>> {
        Box::pin(async move {
            let batch: Vec<Bson> = self.docs.iter().cloned().map(Bson::Document).collect();
            Ok(match command.keys().next().map(String::as_str) {
                Some("aggregate" | "find") => {
                    doc! {"cursor": {"firstBatch": batch, "id": 0_i64, "ns": "fuzz.c"}, "ok": 1}
                }
                _ => doc! {"n": 0, "ok": 1},
            })
        })
    }
}

pub fn run(data: &[u8]) {
    let Some(cmd) = command(data) else {
        return;
    };
    let Ok(req) = CommandRequest::new("fuzz", cmd.body) else {
        return;
    };
    let _ = parsers::aggregate(&req);
    let args = req.args();
    let Ok(vars) = args.let_variables() else {
        return;
    };
    let Ok(Some(stages)) = args.array("pipeline") else {
        return;
    };
    let stages: Vec<Document> = stages
        .into_iter()
        .filter_map(|s| match s {
            Bson::Document(d) => Some(d),
            _ => None,
        })
        .collect();
    let split = pipeline_split::split(&stages);
    let _ = split.shards_part_explained();
    let _ = pipeline_split::router_part_start(&stages);
    let Ok(pipeline) = Pipeline::parse_with_variables(&stages, vars) else {
        return;
    };
    let pipeline = pipeline.with_limits(MemoryLimits {
        max_sort_bytes: LIMIT_BYTES,
        max_group_bytes: LIMIT_BYTES,
        max_bucket_auto_bytes: LIMIT_BYTES,
        max_window_bytes: LIMIT_BYTES,
        max_densify_bytes: LIMIT_BYTES,
        max_facet_output_bytes: LIMIT_BYTES,
        allow_disk_use: false,
        spill_dir: None,
    });
    let _ = pipeline.leading_match();
    let runner = StandIn {
        docs: cmd.docs.clone(),
    };
    let host = Host {
        db: "fuzz",
        runner: &runner,
        write_concern: None,
        bypass_document_validation: false,
    };
    let input = if pipeline.makes_its_input() {
        Vec::new()
    } else {
        cmd.docs
    };
    futures::executor::block_on(drain(&pipeline, input, &host));
}

/// Output a run reads before it stops: a cursor's client may stop reading, so what matters is
/// that each part comes in bounded time and memory, not that a legitimate result of a gigabyte
/// is computed whole.
const OUTPUT_CAP_BYTES: usize = 64 * 1024 * 1024;

/// Runs the pipeline as a node's cursor does, a part at a time, until the output ends or
/// [`OUTPUT_CAP_BYTES`] of it has come out.
async fn drain(pipeline: &Pipeline, input: Vec<Document>, host: &Host<'_>) {
    let mut run = pipeline.start();
    let Ok(first) = run.push(input) else {
        return;
    };
    run.end_input();
    let mut bytes: usize = first.iter().map(approximate_document_size).sum();
    while bytes < OUTPUT_CAP_BYTES {
        match run.next_output_with(host).await {
            Ok(Some(out)) => bytes += out.iter().map(approximate_document_size).sum::<usize>(),
            Ok(None) | Err(_) => return,
        }
    }
}
