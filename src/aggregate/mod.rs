//! The aggregation pipeline on one node: stages over a stream of documents, evaluating the
//! expression language of [`crate::expression`]. The caller supplies the input documents, all at
//! once or in batches ([`PipelineRun`]); the only side effect is blocking stages spilling to the
//! directory the [`MemoryLimits`] name. A run shares the parsed stages and borrows nothing, so a
//! cursor keeps it between batches and takes its output a part at a time.
//!
//! - [`stages`]: stage names, specification parsing, execution as a stream of batches;
//! - [`accumulators`]: `$group`'s accumulators;
//! - [`foreign`]: the stages that reach other collections, through a host;
//! - [`limits`]: pipeline length and sub-pipeline nesting limits;
//! - [`update_pipeline`]: the restricted pipeline a pipeline-style update runs on one document.

mod accumulators;
/// Public so that the router and the nodes can give pipelines their [`foreign::Host`].
pub mod foreign;
/// Public so that the server parameters of the same names can set them.
pub mod limits;
pub mod metadata;
pub mod request;
mod stages;
mod update_pipeline;

use crate::error::{MongoError, Result};
use crate::expression::LetVariables;
use crate::query::filter::Filter;
use bson::{DateTime, Document};
use stages::{Flow, RunContext, Stage};
use std::collections::VecDeque;
use std::sync::Arc;

pub use stages::MemoryLimits;
pub use stages::geo_near::GeoNearSpec;
pub use update_pipeline::UpdatePipeline;

/// A parsed pipeline, with the variables its expressions read and the memory its blocking
/// stages may use (unlimited unless [`Pipeline::with_limits`] says otherwise).
pub struct Pipeline {
    stages: Arc<[Stage]>,
    vars: Arc<LetVariables>,
    limits: MemoryLimits,
    /// A leading `$geoNear`, which whoever reads the collection runs (the stages after it
    /// are `stages`).
    geo_near: Option<Arc<GeoNearSpec>>,
    /// Whether the output keeps the documents' metadata (for a router that merges it).
    keep_metadata: bool,
}

impl Pipeline {
    /// Parses and validates every stage; `$$NOW` is the time of parsing.
    pub fn parse(stages: &[Document]) -> Result<Pipeline> {
        Self::parse_with_variables(stages, Arc::new(LetVariables::empty(DateTime::now())))
    }

    /// Parses a pipeline of a command with a `let` document (already evaluated), so that its
    /// expressions read those variables and the command's `$$NOW`.
    pub fn parse_with_variables(stages: &[Document], vars: Arc<LetVariables>) -> Result<Pipeline> {
        check_pipeline(stages)?;
        metadata::check_sort_key(stages)?;
        metadata::check_index_key(stages)?;
        // Documents carry metadata fields only when the first stage attaches metadata (or the
        // caller says the input carries it); elsewhere fields of those names are their own.
        let vars = if metadata::Produced::by(stages).any() && !vars.carries_metadata() {
            Arc::new(vars.carrying_metadata())
        } else {
            vars
        };
        let mut parsed = Vec::with_capacity(stages.len());
        let mut geo_near = None;
        for (i, spec) in stages.iter().enumerate() {
            match spec.get("$geoNear") {
                Some(value) if i == 0 && spec.len() == 1 => {
                    geo_near = Some(Arc::new(stages::geo_near::parse(value)?));
                }
                _ => parsed.extend(stages::parse(spec, &vars)?),
            }
        }
        limits::check_parsed_length(parsed.len())?;
        // Only the first stage reads the collection, where its text index is.
        if parsed
            .iter()
            .skip(1)
            .any(|stage| stage.as_match().is_some_and(Filter::has_text))
        {
            return Err(MongoError::location(
                17313,
                "$match with $text is only allowed as the first pipeline stage",
            ));
        }
        Ok(Pipeline {
            stages: parsed.into(),
            vars,
            limits: MemoryLimits::unlimited(),
            geo_near,
            keep_metadata: false,
        })
    }

    /// The pipeline with its output keeping the documents' metadata (`$textScore`, `$dis`,
    /// `$pt`): a shard's part of a split pipeline (`needsMerge`), whose merger reads it.
    pub fn keeping_metadata(mut self) -> Pipeline {
        self.keep_metadata = true;
        self
    }

    /// The leading `$geoNear`, which the reader of the collection must run: the pipeline's
    /// stages are those after it.
    pub fn geo_near(&self) -> Option<&GeoNearSpec> {
        self.geo_near.as_deref()
    }

    /// The pipeline with its blocking stages held to `limits`.
    pub fn with_limits(mut self, limits: MemoryLimits) -> Pipeline {
        self.limits = limits;
        self
    }

    fn context(&self) -> RunContext {
        RunContext::new(Arc::clone(&self.vars), self.limits.clone())
    }

    /// Starts a run that takes its input in batches. The run shares the parsed stages and
    /// borrows nothing, so that a cursor can keep it between batches.
    pub fn start(&self) -> PipelineRun {
        // Stages from the first one that reaches other collections run through a host.
        let local = self
            .stages
            .iter()
            .position(Stage::reaches_other_collections)
            .unwrap_or(self.stages.len());
        let ctx = self.context();
        let flow = Flow::new(&self.stages[..local], &ctx);
        PipelineRun {
            stages: Arc::clone(&self.stages),
            local,
            flow,
            ctx,
            held: VecDeque::new(),
            ended: false,
            part_len: 1,
            keep_metadata: self.keeps_output_fields(),
        }
    }

    /// The filter of a leading `$match`, which the caller may use to choose an access path.
    pub fn leading_match(&self) -> Option<&Filter> {
        self.stages.first().and_then(Stage::as_match)
    }

    /// The leading `$match` of a pipeline not yet started, for the data node to bind its
    /// `$text` to the collection's text index.
    pub fn leading_match_mut(&mut self) -> Option<&mut Filter> {
        match Arc::get_mut(&mut self.stages)?.first_mut()? {
            Stage::Match(filter) => Some(filter),
            _ => None,
        }
    }

    /// Runs the pipeline over `input` (the collection's documents, or nothing for
    /// collection-less pipelines) and returns its output.
    pub fn run(&self, input: Vec<Document>) -> Result<Vec<Document>> {
        Ok(self.run_counted(input)?.0)
    }

    /// Runs the pipeline over `input`, reaching other collections (`$lookup`, `$out`...)
    /// through `host`.
    pub async fn run_with(
        &self,
        input: Vec<Document>,
        host: &foreign::Host<'_>,
    ) -> Result<Vec<Document>> {
        let mut run = self.start();
        let mut out = run.push(input)?;
        run.finish_with_into(host, |batch| {
            out.extend(batch);
            Ok(())
        })
        .await?;
        Ok(out)
    }

    /// Whether the pipeline reads or writes other collections, so that it must run where a
    /// [`foreign::Host`] reaches them.
    pub fn reaches_other_collections(&self) -> bool {
        self.stages.iter().any(Stage::reaches_other_collections)
    }

    /// Whether the pipeline starts with `$documents`, which makes its own input.
    pub fn makes_its_input(&self) -> bool {
        matches!(self.stages.first(), Some(Stage::Documents(_)))
    }

    /// Runs the pipeline and also returns how many documents each stage output (for
    /// `explain`), one count per stage after parsing (some stages expand into several).
    pub fn run_counted(&self, input: Vec<Document>) -> Result<(Vec<Document>, Vec<u64>)> {
        let (out, counts) =
            stages::run_counted(&self.stages, input, &self.context()).map_err(executor_error)?;
        Ok((self.output(out), counts))
    }

    /// Output documents as they leave the pipeline: without their metadata unless a merger
    /// reads it.
    fn output(&self, out: Vec<Document>) -> Vec<Document> {
        output(self.keeps_output_fields(), out)
    }

    /// Whether the output keeps every field: a merger reads the metadata, or the documents
    /// carry none (fields of the carriers' names are then the documents' own).
    fn keeps_output_fields(&self) -> bool {
        self.keep_metadata || !self.vars.carries_metadata()
    }

    /// Stages after parsing.
    pub fn len(&self) -> usize {
        self.stages.len()
    }

    pub fn is_empty(&self) -> bool {
        self.stages.is_empty()
    }
}

/// A pipeline taking its input in batches: [`PipelineRun::push`] each batch (while
/// [`PipelineRun::wants_input`]), then [`PipelineRun::end_input`]; what is not returned by
/// `push` comes from [`PipelineRun::next_output`] (or [`PipelineRun::next_output_with`] for
/// stages that reach other collections) a part at a time, so that a caller takes only as much
/// output as it has room for (a cursor: a batch) and the rest is computed when asked for.
pub struct PipelineRun {
    stages: Arc<[Stage]>,
    /// `stages[..local]` run as a flow; the rest (the tail, from the first stage that reaches
    /// other collections) through a host.
    local: usize,
    flow: Flow,
    ctx: RunContext,
    /// The flow's output, when a tail is to run over it.
    held: VecDeque<Document>,
    /// Whether the input has ended.
    ended: bool,
    /// Documents the next part of a tail of per-document stages takes.
    part_len: usize,
    /// Whether the output keeps the documents' metadata ([`Pipeline::keeping_metadata`]).
    keep_metadata: bool,
}

/// Output documents without their metadata unless `keep` (for a merger).
fn output(keep: bool, out: Vec<Document>) -> Vec<Document> {
    if keep {
        out
    } else {
        stages::without_metadata(out)
    }
}

/// What a run can do next without more input.
enum Next {
    /// Output of the flow.
    Output(Vec<Document>),
    /// Documents for the tail to run over.
    Tail(Vec<Document>),
    /// Nothing: more input is needed, or (once it has ended) the output is complete.
    Nothing,
}

impl PipelineRun {
    /// Feeds a batch of input; returns the output it produced already (with a tail, none: the
    /// flow's output waits for [`PipelineRun::next_output_with`]).
    pub fn push(&mut self, batch: Vec<Document>) -> Result<Vec<Document>> {
        let out = self
            .flow
            .push(&self.stages[..self.local], batch, &self.ctx)
            .map_err(executor_error)?;
        if self.local == self.stages.len() {
            return Ok(output(self.keep_metadata, out));
        }
        self.held.extend(out);
        Ok(Vec::new())
    }

    /// False once more input cannot change the output (a `$limit` is satisfied) or the input
    /// has ended.
    pub fn wants_input(&self) -> bool {
        !self.ended && self.flow.wants_input()
    }

    /// The filter of a leading `$match`, which the caller may use to choose an access path.
    pub fn leading_match(&self) -> Option<&Filter> {
        self.stages.first().and_then(Stage::as_match)
    }

    /// Ends the input: the blocking stages may now emit their output.
    pub fn end_input(&mut self) {
        self.ended = true;
    }

    /// Whether the stages from the first that reaches other collections on are all
    /// per-document (`$lookup` and the reshaping stages around it), so that they can run over
    /// the flow's output a part at a time, even before the input ends.
    fn tail_per_document(&self) -> bool {
        self.stages[self.local..].iter().all(Stage::is_per_document)
    }

    fn next_local(&mut self) -> Result<Next> {
        let flow_stages = &self.stages[..self.local];
        if self.local == self.stages.len() {
            if !self.ended {
                return Ok(Next::Nothing);
            }
            return Ok(match self.flow.next_finished(flow_stages, &self.ctx)? {
                Some(out) => Next::Output(out),
                None => Next::Nothing,
            });
        }
        let per_document = self.tail_per_document();
        if self.ended && (self.held.is_empty() || !per_document) {
            while let Some(out) = self.flow.next_finished(flow_stages, &self.ctx)? {
                self.held.extend(out);
                if per_document {
                    break;
                }
            }
        }
        if self.held.is_empty() || !(per_document || self.ended) {
            return Ok(Next::Nothing);
        }
        let take = if per_document {
            self.part_len.min(self.held.len())
        } else {
            self.held.len()
        };
        Ok(Next::Tail(self.held.drain(..take).collect()))
    }

    /// The next output there is without more input: before [`PipelineRun::end_input`], what a
    /// tail makes of what the flow output; after it, the blocking stages' output. `None` when
    /// more input is needed, or after the end when the output is complete. Stages that reach
    /// other collections fail here (they need [`PipelineRun::next_output_with`]).
    pub fn next_output(&mut self) -> Result<Option<Vec<Document>>> {
        let out = match self.next_local().map_err(executor_error)? {
            Next::Output(out) => out,
            Next::Tail(part) => stages::run_stages(&self.stages[self.local..], part, &self.ctx)
                .map_err(executor_error)?,
            Next::Nothing => return Ok(None),
        };
        Ok(Some(output(self.keep_metadata, out)))
    }

    /// [`PipelineRun::next_output`], stages that reach other collections doing it through
    /// `host`. A tail of per-document stages (`$lookup` and the reshaping stages around it)
    /// runs over a part of the documents at a time, sized so that a part's output is about
    /// [`TAIL_PART_BYTES`]: what a join multiplies is held for a part, not for the whole
    /// result, and a caller that refuses an oversized document stops the run at the first.
    pub async fn next_output_with(
        &mut self,
        host: &foreign::Host<'_>,
    ) -> Result<Option<Vec<Document>>> {
        let part = match self.next_local().map_err(executor_error)? {
            Next::Output(out) => return Ok(Some(output(self.keep_metadata, out))),
            Next::Nothing => return Ok(None),
            Next::Tail(part) => part,
        };
        let taken = part.len();
        let out = stages::run_all(&self.stages[self.local..], part, &self.ctx, Some(host))
            .await
            .map_err(executor_error)?;
        let bytes: usize = out
            .iter()
            .map(crate::spill::approximate_document_size)
            .sum();
        let per_document = (bytes / taken.max(1)).max(1);
        self.part_len = (TAIL_PART_BYTES / per_document).clamp(1, TAIL_PART_DOCUMENTS);
        Ok(Some(output(self.keep_metadata, out)))
    }

    /// Ends the input; the rest of the output goes to `sink` a batch at a time. Stages that
    /// reach other collections fail here (they need [`PipelineRun::finish_with_into`]).
    pub fn finish_into(mut self, mut sink: impl FnMut(Vec<Document>) -> Result<()>) -> Result<()> {
        self.end_input();
        while let Some(out) = self.next_output()? {
            if !out.is_empty() {
                sink(out)?;
            }
        }
        Ok(())
    }

    /// Ends the input and returns the rest of the output; stages that reach other collections
    /// do it through `host`.
    pub async fn finish_with(self, host: &foreign::Host<'_>) -> Result<Vec<Document>> {
        let mut out = Vec::new();
        self.finish_with_into(host, |batch| {
            out.extend(batch);
            Ok(())
        })
        .await?;
        Ok(out)
    }

    /// Ends the input; the rest of the output goes to `sink` a part at a time (see
    /// [`PipelineRun::next_output_with`]), stages that reach other collections doing it
    /// through `host`.
    pub async fn finish_with_into(
        mut self,
        host: &foreign::Host<'_>,
        mut sink: impl FnMut(Vec<Document>) -> Result<()>,
    ) -> Result<()> {
        self.end_input();
        while let Some(out) = self.next_output_with(host).await? {
            if !out.is_empty() {
                sink(out)?;
            }
        }
        Ok(())
    }
}

/// Output a part of a tail of per-document stages aims at (about a reply batch, so that a
/// cursor holds about a batch beyond the one it returns), and the most documents a part takes
/// (see [`PipelineRun::next_output_with`]).
const TAIL_PART_BYTES: usize = 16 * 1024 * 1024;
const TAIL_PART_DOCUMENTS: usize = 256;

/// The checks on a pipeline as written, before any stage is parsed (a router makes them on the
/// whole pipeline before splitting it): its length, then where the stages that must come
/// first or last are.
pub fn check_pipeline(stages: &[Document]) -> Result<()> {
    limits::check_length(stages.len())?;
    check_positions(stages)
}

/// Refuses stages out of the place they must have: `$out` and `$merge` last, `$documents`
/// and `$geoNear` first.
fn check_positions(stages: &[Document]) -> Result<()> {
    for (i, spec) in stages.iter().enumerate() {
        let name = spec.keys().next().map(String::as_str).unwrap_or_default();
        match name {
            "$out" | "$merge" if i + 1 < stages.len() => {
                return Err(MongoError::location(
                    40601,
                    format!("{name} can only be the final stage in the pipeline"),
                ));
            }
            "$geoNear" if i > 0 => {
                return Err(MongoError::location(
                    40603,
                    "$geoNear was not the first stage in the pipeline.",
                ));
            }
            "$documents" if i > 0 => {
                return Err(MongoError::location(
                    40602,
                    "$documents is only valid as the first stage in a pipeline",
                ));
            }
            _ => {}
        }
    }
    Ok(())
}

/// Errors raised while documents flow carry the prefix the server's executor adds.
fn executor_error(err: MongoError) -> MongoError {
    stages::with_context(err, "PlanExecutor error during aggregation")
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{Bson, bson, doc, oid::ObjectId};

    fn pipeline(stages: Bson) -> Pipeline {
        let Bson::Array(stages) = stages else {
            panic!("pipeline must be an array")
        };
        let stages: Vec<Document> = stages
            .into_iter()
            .map(|stage| match stage {
                Bson::Document(d) => d,
                _ => panic!("stage must be a document"),
            })
            .collect();
        Pipeline::parse(&stages).unwrap()
    }

    fn run(stages: Bson, input: Vec<Document>) -> Vec<Document> {
        pipeline(stages).run(input).unwrap()
    }

    fn parse_error(stages: Bson) -> (i32, String) {
        let Bson::Array(stages) = stages else {
            panic!("pipeline must be an array")
        };
        let stages: Vec<Document> = stages
            .into_iter()
            .filter_map(|s| s.as_document().cloned())
            .collect();
        let err = Pipeline::parse(&stages).err().unwrap();
        (err.code().code(), err.message().to_string())
    }

    fn sorted_by_id(mut docs: Vec<Document>) -> Vec<Document> {
        docs.sort_by(|a, b| {
            crate::document::order::compare_values(
                a.get("_id").unwrap_or(&Bson::Null),
                b.get("_id").unwrap_or(&Bson::Null),
            )
        });
        docs
    }

    /// `sh.status()`: the mongos versions of the cluster, most common first.
    #[test]
    fn sh_status_mongos_versions() {
        let mongos = vec![
            doc! {"_id": "m1:27017", "mongoVersion": "7.0.2", "ping": DateTime::from_millis(10)},
            doc! {"_id": "m2:27017", "mongoVersion": "7.0.2", "ping": DateTime::from_millis(20)},
            doc! {"_id": "m3:27017", "mongoVersion": "6.0.1", "ping": DateTime::from_millis(30)},
            doc! {"_id": "m4:27017", "mongoVersion": "7.0.2", "ping": DateTime::from_millis(1)},
        ];
        // mongosh matches on a recent `ping` ({$gte: <date>}); which documents that selects is
        // the query engine's business, so this test selects them all.
        let out = run(
            bson!([
                {"$match": {}},
                {"$group": {"_id": "$mongoVersion", "num": {"$sum": 1}}},
                {"$sort": {"num": -1}}
            ]),
            mongos,
        );
        assert_eq!(
            out,
            vec![
                doc! {"_id": "7.0.2", "num": 3},
                doc! {"_id": "6.0.1", "num": 1}
            ]
        );
    }

    /// `sh.status()`: balancer round results from the actionlog.
    #[test]
    fn sh_status_balancer_rounds() {
        let actionlog = vec![
            doc! {"what": "balancer.round", "details": {"executionTimeMillis": 5}},
            doc! {"what": "balancer.round", "details": {"errmsg": "boom"}},
            doc! {"what": "balancer.round", "details": {}},
            doc! {"what": "balancer.round", "details": {"errmsg": "boom"}},
            doc! {"what": "balancer.round"},
        ];
        let out = run(
            bson!([
                {"$group": {"_id": {"msg": "$details.errmsg"}, "count": {"$sum": 1}}},
                {"$project": {"_id": {"$ifNull": ["$_id.msg", "Success"]}, "count": "$count"}}
            ]),
            actionlog,
        );
        assert_eq!(
            sorted_by_id(out),
            vec![
                doc! {"_id": "Success", "count": 3},
                doc! {"_id": "boom", "count": 2}
            ]
        );
    }

    /// `sh.status()`: migration results from the changelog.
    #[test]
    fn sh_status_migrations() {
        let changelog = vec![
            doc! {"what": "moveChunk.from", "details": {"from": "s0", "to": "s1", "errmsg": "aborted by balancer"}},
            doc! {"what": "moveChunk.from", "details": {"from": "s0", "to": "s1"}},
            doc! {"what": "moveChunk.from", "details": {"from": "s0", "to": "s1"}},
            doc! {"what": "moveChunk.from", "details": {"from": "s1", "to": "s0"}},
        ];
        let out = run(
            bson!([
                {"$group": {"_id": {"msg": "$details.errmsg", "from": "$details.from", "to": "$details.to"}, "count": {"$sum": 1}}},
                {"$project": {"_id": {"$ifNull": ["$_id.msg", "aborted"]}, "from": "$_id.from", "to": "$_id.to", "count": "$count"}}
            ]),
            changelog,
        );
        assert_eq!(
            out,
            vec![
                doc! {"_id": "aborted by balancer", "from": "s0", "to": "s1", "count": 1},
                doc! {"_id": "aborted", "from": "s0", "to": "s1", "count": 2},
                doc! {"_id": "aborted", "from": "s1", "to": "s0", "count": 1},
            ]
        );
    }

    /// `sh.status()`: chunks per shard for a collection.
    #[test]
    fn sh_status_chunks_per_shard() {
        let chunks = vec![
            doc! {"_id": ObjectId::new(), "shard": "shardB", "min": {"x": 0}},
            doc! {"_id": ObjectId::new(), "shard": "shardA", "min": {"x": 10}},
            doc! {"_id": ObjectId::new(), "shard": "shardB", "min": {"x": 20}},
        ];
        let out = run(
            bson!([
                {"$group": {"_id": "$shard", "cnt": {"$sum": 1}}},
                {"$project": {"_id": 0, "shard": "$_id", "nChunks": "$cnt"}},
                {"$sort": {"shard": 1}}
            ]),
            chunks,
        );
        assert_eq!(
            out,
            vec![
                doc! {"shard": "shardA", "nChunks": 1},
                doc! {"shard": "shardB", "nChunks": 2}
            ]
        );
    }

    /// The drivers' `countDocuments`.
    #[test]
    fn count_documents() {
        let docs: Vec<Document> = (0..10)
            .map(|i| doc! {"_id": i, "kind": if i % 2 == 0 { "even" } else { "odd" }})
            .collect();
        let out = run(
            bson!([{"$match": {"kind": "even"}}, {"$skip": 1}, {"$limit": 3}, {"$group": {"_id": 1, "n": {"$sum": 1}}}]),
            docs.clone(),
        );
        assert_eq!(out, vec![doc! {"_id": 1, "n": 3}]);
        let out = run(
            bson!([{"$match": {}}, {"$group": {"_id": 1, "n": {"$sum": 1}}}]),
            docs,
        );
        assert_eq!(out, vec![doc! {"_id": 1, "n": 10}]);
        // No matching document: no group, and the driver reports 0.
        let out = run(
            bson!([{"$match": {"kind": "none"}}, {"$group": {"_id": 1, "n": {"$sum": 1}}}]),
            vec![doc! {"kind": "x"}],
        );
        assert!(out.is_empty());
    }

    #[test]
    fn leading_match_is_exposed() {
        let p = pipeline(bson!([{"$match": {"a": 1}}, {"$limit": 1}]));
        assert!(
            p.leading_match()
                .is_some_and(|f| f.matches(&doc! {"a": 1}) && !f.matches(&doc! {"a": 2}))
        );
        assert!(
            pipeline(bson!([{"$limit": 1}, {"$match": {"a": 1}}]))
                .leading_match()
                .is_none()
        );
        assert!(pipeline(bson!([])).leading_match().is_none());
        assert_eq!(
            pipeline(bson!([])).run(vec![doc! {"a": 1}]).unwrap(),
            vec![doc! {"a": 1}]
        );
    }

    #[test]
    fn count_and_sort_by_count_stages() {
        let docs = vec![doc! {"t": "a"}, doc! {"t": "b"}, doc! {"t": "a"}, doc! {}];
        assert_eq!(
            run(bson!([{"$count": "total"}]), docs.clone()),
            vec![doc! {"total": 4}]
        );
        assert_eq!(
            run(bson!([{"$count": "total"}]), vec![]),
            Vec::<Document>::new()
        );
        let out = run(bson!([{"$sortByCount": "$t"}]), docs);
        assert_eq!(out[0], doc! {"_id": "a", "count": 2});
        assert_eq!(out.len(), 3);
    }

    #[test]
    fn unwind_group_and_replace_root_together() {
        let docs = vec![
            doc! {"_id": 1, "tags": ["x", "y"]},
            doc! {"_id": 2, "tags": ["y"]},
            doc! {"_id": 3},
        ];
        let out = run(
            bson!([
                {"$unwind": "$tags"},
                {"$group": {"_id": "$tags", "ids": {"$push": "$_id"}}},
                {"$sort": {"_id": 1}},
                {"$replaceWith": {"tag": "$_id", "n": {"$size": "$ids"}}}
            ]),
            docs,
        );
        assert_eq!(
            out,
            vec![doc! {"tag": "x", "n": 1}, doc! {"tag": "y", "n": 2}]
        );
    }

    #[test]
    fn now_is_fixed_for_the_whole_run() {
        let now = DateTime::from_millis(1_000);
        let stages = [doc! {"$addFields": {"t": "$$NOW", "later": {"$add": ["$$NOW", 500]}}}];
        let out = Pipeline::parse_with_variables(&stages, Arc::new(LetVariables::empty(now)))
            .unwrap()
            .run(vec![doc! {"_id": 1}, doc! {"_id": 2}])
            .unwrap();
        assert_eq!(
            out[1],
            doc! {"_id": 2, "t": now, "later": DateTime::from_millis(1_500)}
        );
    }

    #[test]
    fn parse_errors_name_the_stage() {
        assert_eq!(
            parse_error(bson!([{"$limit": 1}, {"$foo": 1}])),
            (40324, "Unrecognized pipeline stage name: '$foo'".into())
        );
        assert_eq!(
            parse_error(bson!([{"$match": {}, "$sort": {"a": 1}}])),
            (
                40323,
                "A pipeline stage specification object must contain exactly one field.".into()
            )
        );
        assert_eq!(
            parse_error(bson!([{"$project": {"a": {"$foo": [1]}}}])).0,
            31325
        );
        assert_eq!(
            parse_error(bson!([{"$group": {"_id": {"$foo": 1}}}])),
            (168, "Unrecognized expression '$foo'".into())
        );
    }

    #[test]
    fn reshaping_stages_in_sequence() {
        let docs = vec![
            doc! {"_id": 1, "item": "a", "price": 10, "qty": 2, "tags": ["x"]},
            doc! {"_id": 2, "item": "b", "price": Bson::Decimal128("2.50".parse().unwrap()), "qty": 4},
        ];
        let out = run(
            bson!([
                {"$set": {"total": {"$multiply": ["$price", "$qty"]}, "meta.seen": true}},
                {"$unset": ["tags", "qty"]},
                {"$project": {"item": {"$toUpper": "$item"}, "total": 1, "meta": 1, "cheap": {"$lt": ["$total", 15]}}}
            ]),
            docs,
        );
        assert_eq!(
            out,
            vec![
                doc! {"_id": 1, "total": 20, "meta": {"seen": true}, "item": "A", "cheap": false},
                doc! {"_id": 2, "total": Bson::Decimal128("10.00".parse().unwrap()), "meta": {"seen": true}, "item": "B", "cheap": true},
            ]
        );
    }

    #[test]
    fn group_statistics() {
        let docs = vec![
            doc! {"k": "a", "v": 1, "w": 2.5},
            doc! {"k": "b", "v": 5},
            doc! {"k": "a", "v": 3, "w": "n/a"},
            doc! {"k": "a", "v": Bson::Null},
        ];
        let out = run(
            bson!([
                {"$group": {
                    "_id": {"key": "$k"},
                    "n": {"$count": {}},
                    "sum": {"$sum": "$v"},
                    "avg": {"$avg": "$v"},
                    "wsum": {"$sum": "$w"},
                    "min": {"$min": "$v"},
                    "max": {"$max": "$v"},
                    "first": {"$first": "$v"},
                    "last": {"$last": "$v"},
                    "all": {"$push": "$v"},
                    "set": {"$addToSet": "$k"}
                }},
                {"$sort": {"_id.key": 1}}
            ]),
            docs,
        );
        assert_eq!(
            out[0],
            doc! {"_id": {"key": "a"}, "n": 3, "sum": 4, "avg": 2.0, "wsum": 2.5, "min": 1, "max": 3,
            "first": 1, "last": null, "all": [1, 3, null], "set": ["a"]}
        );
        assert_eq!(out[1].get("avg"), Some(&Bson::Double(5.0)));
    }

    #[test]
    fn group_keys_from_computed_expressions() {
        let docs = vec![
            doc! {"a": 1, "b": 2},
            doc! {"a": 2, "b": 1},
            doc! {"a": 0, "b": 0},
        ];
        let out = run(
            bson!([
                {"$group": {"_id": {"$add": ["$a", "$b"]}, "docs": {"$push": "$$ROOT"}}},
                {"$project": {"_id": 0, "sum": "$_id", "n": {"$size": "$docs"}}},
                {"$sort": {"sum": -1}}
            ]),
            docs,
        );
        assert_eq!(out, vec![doc! {"sum": 3, "n": 2}, doc! {"sum": 0, "n": 1}]);
    }

    #[test]
    fn decimal_and_date_arithmetic_in_expressions() {
        let doc = doc! {"d": Bson::Decimal128("1".parse().unwrap()), "t": DateTime::from_millis(86_400_000), "z": Bson::Decimal128("0".parse().unwrap())};
        let out = run(
            bson!([{"$project": {
                "_id": 0,
                "plus": {"$add": ["$d", 0.1]},
                "third": {"$divide": ["$d", 3]},
                "days": {"$divide": [{"$subtract": ["$t", DateTime::from_millis(0)]}, 86_400_000]},
                "when": {"$toString": {"$add": ["$t", 1]}}
            }}]),
            vec![doc.clone()],
        );
        assert_eq!(
            out,
            vec![doc! {
                "plus": Bson::Decimal128("1.100000000000000".parse().unwrap()),
                "third": Bson::Decimal128("0.3333333333333333333333333333333333".parse().unwrap()),
                "days": 1.0,
                "when": "1970-01-02T00:00:00.001Z"
            }]
        );
        let err = pipeline(bson!([{"$project": {"m": {"$mod": ["$d", "$z"]}}}]))
            .run(vec![doc])
            .unwrap_err();
        assert_eq!(err.code().code(), 5733415);
    }

    #[test]
    fn skip_and_limit_slice_the_stream() {
        let docs: Vec<Document> = (0..5).map(|i| doc! {"_id": i}).collect();
        assert_eq!(
            run(bson!([{"$skip": 3}]), docs.clone()),
            vec![doc! {"_id": 3}, doc! {"_id": 4}]
        );
        assert_eq!(
            run(bson!([{"$skip": 10}]), docs.clone()),
            Vec::<Document>::new()
        );
        assert_eq!(
            run(bson!([{"$limit": 2}]), docs.clone()),
            vec![doc! {"_id": 0}, doc! {"_id": 1}]
        );
        assert_eq!(
            run(bson!([{"$sort": {"_id": -1}}, {"$limit": 1}]), docs),
            vec![doc! {"_id": 4}]
        );
    }

    #[test]
    fn runtime_errors_carry_the_executor_prefix() {
        let err = pipeline(bson!([{"$project": {"q": {"$divide": ["$a", 0]}}}]))
            .run(vec![doc! {"a": 1}])
            .unwrap_err();
        assert_eq!(err.code().code(), 16608);
        assert_eq!(
            err.message(),
            "PlanExecutor error during aggregation :: caused by :: can't $divide by zero"
        );
        // Nothing to evaluate, nothing to fail.
        assert!(
            pipeline(bson!([{"$project": {"q": {"$divide": ["$a", 0]}}}]))
                .run(vec![])
                .unwrap()
                .is_empty()
        );
    }

    mod never_panics {
        use super::*;
        use bson::Decimal128;
        use proptest::prelude::*;

        fn name() -> impl Strategy<Value = String> {
            prop::sample::select(vec![
                "a",
                "b",
                "_id",
                "a.b",
                "",
                "$",
                "$a",
                "$add",
                "$sum",
                "$cond",
                "$ifNull",
                "$literal",
                "$size",
                "$arrayElemAt",
                "$divide",
                "$mod",
                "$multiply",
                "$subtract",
                "$abs",
                "$concat",
                "$toString",
                "$toLower",
                "$eq",
                "$cmp",
                "$and",
                "$or",
                "$not",
                "$in",
                "$type",
                "$first",
                "$last",
                "$push",
                "$addToSet",
                "$avg",
                "$min",
                "$max",
                "$count",
                "path",
                "includeArrayIndex",
                "preserveNullAndEmptyArrays",
                "if",
                "then",
                "else",
                "newRoot",
                "$bogus",
            ])
            .prop_map(String::from)
        }

        fn stage_name() -> impl Strategy<Value = String> {
            prop::sample::select(vec![
                "$match",
                "$project",
                "$addFields",
                "$set",
                "$unset",
                "$group",
                "$sort",
                "$skip",
                "$limit",
                "$count",
                "$unwind",
                "$replaceRoot",
                "$replaceWith",
                "$sortByCount",
                "$nope",
            ])
            .prop_map(String::from)
        }

        fn leaf() -> impl Strategy<Value = Bson> {
            prop_oneof![
                any::<i32>().prop_map(Bson::Int32),
                any::<i64>().prop_map(Bson::Int64),
                any::<f64>().prop_map(Bson::Double),
                any::<[u8; 16]>().prop_map(|bytes| Bson::Decimal128(Decimal128::from_bytes(bytes))),
                any::<i64>().prop_map(|ms| Bson::DateTime(DateTime::from_millis(ms))),
                any::<bool>().prop_map(Bson::Boolean),
                Just(Bson::Null),
                prop::sample::select(vec![
                    "$a",
                    "$b",
                    "$a.b",
                    "$_id",
                    "$$ROOT",
                    "$$CURRENT.a",
                    "$$REMOVE",
                    "$$NOW",
                    "x",
                    "$"
                ])
                .prop_map(|s| Bson::String(s.to_string())),
            ]
        }

        fn value() -> impl Strategy<Value = Bson> {
            leaf().prop_recursive(4, 48, 4, |inner| {
                prop_oneof![
                    prop::collection::vec(inner.clone(), 0..4).prop_map(Bson::Array),
                    prop::collection::vec((name(), inner), 0..4)
                        .prop_map(|fields| Bson::Document(fields.into_iter().collect())),
                ]
            })
        }

        fn document() -> impl Strategy<Value = Document> {
            prop::collection::vec(
                (
                    prop::sample::select(vec!["_id", "a", "b"]).prop_map(String::from),
                    value(),
                ),
                0..4,
            )
            .prop_map(|fields| fields.into_iter().collect())
        }

        proptest! {
            #[test]
            fn parsing_and_running_any_pipeline(
                stages in prop::collection::vec((stage_name(), value()), 1..4),
                docs in prop::collection::vec(document(), 0..4),
            ) {
                let stages: Vec<Document> = stages.into_iter().map(|(name, spec)| doc! {name: spec}).collect();
                if let Ok(pipeline) = Pipeline::parse(&stages) {
                    let _ = pipeline.run(docs);
                }
            }

            #[test]
            fn evaluating_any_expression(expr in value(), doc in document()) {
                let pipeline = Pipeline::parse(&[doc! {"$project": {"_id": 0, "out": expr}}]);
                if let Ok(pipeline) = pipeline {
                    let _ = pipeline.run(vec![doc]);
                }
            }
        }
    }
}
