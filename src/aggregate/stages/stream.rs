//! Running stages as documents flow through them in batches. Per-document stages (`$match`,
//! `$project` and its kin, `$replaceRoot`, `$unwind`, `$redact`, `$skip`, `$limit`) pass each
//! batch on; blocking stages take their input in and emit at the end, each within its memory
//! limits: `$sort`, `$group`, and `$bucketAuto`, `$sample`, `$setWindowFields` and `$densify`
//! through a sort by their keys, spill when disk use is allowed; `$facet` runs its
//! sub-pipelines as the batches arrive. Only `$documents` makes its output at once. A satisfied `$limit` with only per-document stages before it ends the input,
//! and the draining of a blocking stage before it. A `$sort` followed by a `$limit` (with a
//! `$skip` between or not) keeps only the documents the limit lets through (top-k), as MongoDB
//! coalesces them. Once the input ends the blocking stages emit their output on demand
//! ([`Flow::next_finished`]), a batch at a time, so that a cursor asks for only what it returns.

use super::bucket_auto::BucketOutput;
use super::densify::{DensifyOutput, DensifyRun};
use super::facet::FacetRun;
use super::group_run::{GroupOutput, GroupRun};
use super::keyed_sort::{KeyedDocs, KeyedSort};
use super::window::{WindowOutput, WindowRun};
use super::{RunContext, Stage, sample};
use crate::error::Result;
use crate::spill::{BlockingSort, SortedDocs, approximate_document_size};
use bson::{Bson, Document};

/// Documents a blocking stage emits at a time once its input is complete.
const DRAIN_BATCH: usize = 1000;

/// Stages being run. The flow borrows nothing: each call takes the stages it was made for,
/// so that a run can outlive the call that started it (a cursor keeps it between batches).
pub struct Flow {
    steps: Vec<Step>,
    /// Whether each stage builds documents (and so may nest them deeper than its input).
    builds: Vec<bool>,
    /// Documents each stage has output so far.
    counts: Vec<u64>,
    /// Once the input has ended: the blocking stage emitting its output.
    draining: Option<(usize, Drain)>,
    /// Once the input has ended: where to look for the next blocking stage to finish.
    next_blocking: usize,
}

enum Step {
    PerDocument,
    /// Documents still to skip.
    Skip(u64),
    /// Documents still to let through.
    Limit(u64),
    Sort(Box<BlockingSort>),
    Group(Box<GroupRun>),
    /// `$bucketAuto` or `$sample`: the input sorted by the stage's keys.
    Keyed(Box<KeyedSort>),
    Window(Box<WindowRun>),
    Densify(Box<DensifyRun>),
    Facet(Box<FacetRun>),
    /// A blocking stage that runs over its whole input at the end.
    Whole(Vec<Document>),
    /// A blocking stage that has emitted its output (or is emitting it).
    Finished,
}

/// A step given a stage of another kind than it was made for.
fn mismatch() -> crate::error::MongoError {
    crate::error::MongoError::internal("a pipeline step runs a stage it was not made for")
}

/// The `$group` a step runs.
fn group_of(stage: &Stage) -> Result<&super::group::Group> {
    match stage {
        Stage::Group(group) => Ok(group),
        _ => Err(crate::error::MongoError::internal(
            "a $group step runs a stage that is not a $group",
        )),
    }
}

impl Step {
    fn new(stage: &Stage, after: &[Stage], ctx: &RunContext) -> Step {
        match stage {
            Stage::Match(_)
            | Stage::Shape(_)
            | Stage::ReplaceRoot(_)
            | Stage::Unwind(_)
            | Stage::Redact(_) => Step::PerDocument,
            Stage::Skip(n) => Step::Skip(*n),
            Stage::Limit(n) => Step::Limit(*n),
            Stage::Sort(spec) => Step::Sort(Box::new(BlockingSort::new(
                spec.clone(),
                top_k(after),
                ctx.limits.sort_limits(ctx.limits.max_sort_bytes),
            ))),
            Stage::Group(_) => Step::Group(Box::new(GroupRun::new())),
            Stage::BucketAuto(bucket) => Step::Keyed(Box::new(bucket.sort(ctx))),
            Stage::Sample(size) => Step::Keyed(Box::new(sample::sort(*size, ctx))),
            Stage::SetWindowFields(window) => Step::Window(Box::new(window.start(ctx))),
            Stage::Densify(densify) => Step::Densify(Box::new(densify.start(ctx))),
            Stage::Facet(facet) => Step::Facet(Box::new(facet.start(ctx))),
            _ => Step::Whole(Vec::new()),
        }
    }

    fn is_blocking(&self) -> bool {
        matches!(
            self,
            Step::Sort(_)
                | Step::Group(_)
                | Step::Keyed(_)
                | Step::Window(_)
                | Step::Densify(_)
                | Step::Facet(_)
                | Step::Whole(..)
        )
    }

    /// Whether the stage builds documents (and so may nest them deeper than its input).
    fn builds_documents(&self, stage: &Stage) -> bool {
        match self {
            Step::PerDocument
            | Step::Whole(_)
            | Step::Keyed(_)
            | Step::Window(_)
            | Step::Densify(_)
            | Step::Facet(_) => stage.builds_documents(),
            Step::Group(_) => true,
            _ => false,
        }
    }

    /// Takes a batch in; returns what passes on now.
    fn push(
        &mut self,
        stage: &Stage,
        docs: Vec<Document>,
        ctx: &RunContext,
    ) -> Result<Vec<Document>> {
        match self {
            Step::PerDocument => stage.run_batch(docs, ctx),
            Step::Skip(left) => {
                let skipped = usize::try_from(*left).unwrap_or(usize::MAX).min(docs.len());
                *left -= skipped as u64;
                Ok(docs.into_iter().skip(skipped).collect())
            }
            Step::Limit(left) => {
                let mut docs = docs;
                docs.truncate(usize::try_from(*left).unwrap_or(usize::MAX));
                *left -= docs.len() as u64;
                Ok(docs)
            }
            Step::Sort(sort) => {
                for doc in docs {
                    let size = approximate_document_size(&doc);
                    sort.push(doc, size)?;
                }
                Ok(Vec::new())
            }
            Step::Group(group) => {
                let spec = group_of(stage)?;
                for doc in &docs {
                    group.push(spec, doc, ctx)?;
                }
                Ok(Vec::new())
            }
            Step::Keyed(sort) => {
                for doc in docs {
                    match stage {
                        Stage::BucketAuto(bucket) => bucket.push(sort, doc, ctx)?,
                        Stage::Sample(size) => sample::push(sort, *size, doc)?,
                        _ => return Err(mismatch()),
                    }
                }
                Ok(Vec::new())
            }
            Step::Window(run) => {
                let Stage::SetWindowFields(window) = stage else {
                    return Err(mismatch());
                };
                for doc in docs {
                    window.push(run, doc, ctx)?;
                }
                Ok(Vec::new())
            }
            Step::Densify(run) => {
                let Stage::Densify(densify) = stage else {
                    return Err(mismatch());
                };
                // Documents without a value pass on at once.
                let mut passed = Vec::new();
                for doc in docs {
                    passed.extend(densify.push(run, doc)?);
                }
                Ok(passed)
            }
            Step::Facet(run) => {
                let Stage::Facet(facet) = stage else {
                    return Err(mismatch());
                };
                run.push(facet, docs, ctx)?;
                Ok(Vec::new())
            }
            Step::Whole(held) => {
                held.extend(docs);
                Ok(Vec::new())
            }
            Step::Finished => Ok(Vec::new()),
        }
    }

    /// A blocking stage's output, now that its input is complete.
    fn finish(self, stage: &Stage, ctx: &RunContext) -> Result<Drain> {
        Ok(match self {
            Step::Sort(sort) => Drain::Sorted(sort.finish()?),
            Step::Group(group) => Drain::Groups(group.finish(group_of(stage)?, ctx)?),
            Step::Keyed(sort) => match stage {
                Stage::BucketAuto(bucket) => Drain::Buckets(Box::new(bucket.finish(*sort)?)),
                Stage::Sample(_) => Drain::Keyed(Box::new(sort.finish()?)),
                _ => return Err(mismatch()),
            },
            Step::Window(run) => match stage {
                Stage::SetWindowFields(window) => Drain::Windows(Box::new(window.finish(*run)?)),
                _ => return Err(mismatch()),
            },
            Step::Densify(run) => match stage {
                Stage::Densify(densify) => Drain::Densified(Box::new(densify.finish(*run)?)),
                _ => return Err(mismatch()),
            },
            Step::Facet(run) => match stage {
                Stage::Facet(facet) => Drain::Memory(vec![run.finish(facet, ctx)?].into_iter()),
                _ => return Err(mismatch()),
            },
            Step::Whole(held) => Drain::Memory(stage.run_batch(held, ctx)?.into_iter()),
            _ => Drain::Memory(Vec::new().into_iter()),
        })
    }
}

/// A sorted document with its key under the sort as its `sortKey` metadata (an array, as
/// MongoDB's `{$meta: "sortKey"}` shows it), when the pipeline's documents carry metadata.
fn with_sort_key(mut doc: Document, stage: &Stage, ctx: &RunContext) -> Document {
    if let (true, Stage::Sort(spec)) = (ctx.vars.carries_metadata(), stage) {
        let key = spec.sort_key(&doc);
        doc.insert(crate::expression::meta::SORT_KEY_FIELD, Bson::Array(key));
    }
    doc
}

/// How many documents a `$sort` needs to keep when a `$limit` follows it (after a `$skip`,
/// that many more).
fn top_k(after: &[Stage]) -> Option<usize> {
    let n = match after {
        [Stage::Limit(limit), ..] => *limit,
        [Stage::Skip(skip), Stage::Limit(limit), ..] => skip.saturating_add(*limit),
        _ => return None,
    };
    Some(usize::try_from(n).unwrap_or(usize::MAX))
}

/// A finished blocking stage's output, read a batch at a time.
enum Drain {
    Memory(std::vec::IntoIter<Document>),
    Sorted(SortedDocs),
    Groups(GroupOutput),
    /// `$sample`'s documents in the order of their random keys.
    Keyed(Box<KeyedDocs>),
    Buckets(Box<BucketOutput>),
    Windows(Box<WindowOutput>),
    Densified(Box<DensifyOutput>),
}

impl Drain {
    fn next_batch(&mut self, stage: &Stage, ctx: &RunContext) -> Result<Vec<Document>> {
        let mut batch = Vec::new();
        while batch.len() < DRAIN_BATCH {
            let next = match self {
                Drain::Memory(docs) => docs.next(),
                Drain::Sorted(sorted) => {
                    sorted.next_doc()?.map(|doc| with_sort_key(doc, stage, ctx))
                }
                Drain::Groups(groups) => groups.next_doc(group_of(stage)?, ctx)?,
                Drain::Keyed(sorted) => sorted
                    .next_keyed()?
                    .map(|(key, doc)| sample::with_rand_val(key, doc, ctx)),
                Drain::Buckets(buckets) => match stage {
                    Stage::BucketAuto(bucket) => buckets.next_doc(bucket, ctx)?,
                    _ => return Err(mismatch()),
                },
                Drain::Windows(windows) => match stage {
                    Stage::SetWindowFields(window) => windows.next_doc(window, ctx)?,
                    _ => return Err(mismatch()),
                },
                Drain::Densified(out) => match stage {
                    Stage::Densify(densify) => out.next_doc(densify, ctx)?,
                    _ => return Err(mismatch()),
                },
            };
            let Some(doc) = next else {
                break;
            };
            batch.push(doc);
        }
        Ok(batch)
    }
}

impl Flow {
    pub fn new(stages: &[Stage], ctx: &RunContext) -> Flow {
        let steps: Vec<Step> = stages
            .iter()
            .enumerate()
            .map(|(i, stage)| Step::new(stage, &stages[i + 1..], ctx))
            .collect();
        let builds = steps
            .iter()
            .zip(stages)
            .map(|(step, stage)| step.builds_documents(stage))
            .collect();
        Flow {
            steps,
            builds,
            counts: vec![0; stages.len()],
            draining: None,
            next_blocking: 0,
        }
    }

    /// Feeds a batch of input to `stages` (those the flow was made for); returns the documents
    /// that came out of the last stage.
    pub fn push(
        &mut self,
        stages: &[Stage],
        docs: Vec<Document>,
        ctx: &RunContext,
    ) -> Result<Vec<Document>> {
        self.feed(stages, 0, docs, ctx)
    }

    fn feed(
        &mut self,
        stages: &[Stage],
        from: usize,
        mut docs: Vec<Document>,
        ctx: &RunContext,
    ) -> Result<Vec<Document>> {
        let steps = self.steps.iter_mut().zip(stages).enumerate().skip(from);
        for (i, (step, stage)) in steps {
            if docs.is_empty() {
                break;
            }
            docs = step.push(stage, docs, ctx)?;
            if self.builds[i] {
                check_depth(&docs)?;
            }
            self.counts[i] += docs.len() as u64;
        }
        Ok(docs)
    }

    /// Whether more input can still change the output: false once a `$limit` is satisfied
    /// with no blocking stage before it.
    pub fn wants_input(&self) -> bool {
        !self.satisfied_from(0)
    }

    fn satisfied_from(&self, from: usize) -> bool {
        for step in &self.steps[from..] {
            match step {
                Step::Limit(0) => return true,
                step if step.is_blocking() => return false,
                _ => {}
            }
        }
        false
    }

    /// Once the input has ended: the next documents out of the last stage, as each blocking
    /// stage in turn emits its output (a batch at a time) through the stages after it; `None`
    /// at the end.
    pub fn next_finished(
        &mut self,
        stages: &[Stage],
        ctx: &RunContext,
    ) -> Result<Option<Vec<Document>>> {
        loop {
            let Some((i, mut drain)) = self.draining.take() else {
                let Some(i) =
                    (self.next_blocking..self.steps.len()).find(|&i| self.steps[i].is_blocking())
                else {
                    self.next_blocking = self.steps.len();
                    return Ok(None);
                };
                self.next_blocking = i + 1;
                let step = std::mem::replace(&mut self.steps[i], Step::Finished);
                self.draining = Some((i, step.finish(&stages[i], ctx)?));
                continue;
            };
            if self.satisfied_from(i + 1) {
                continue;
            }
            let batch = drain.next_batch(&stages[i], ctx)?;
            if batch.is_empty() {
                continue;
            }
            if self.builds[i] {
                check_depth(&batch)?;
            }
            self.counts[i] += batch.len() as u64;
            let out = self.feed(stages, i + 1, batch, ctx)?;
            self.draining = Some((i, drain));
            if !out.is_empty() {
                return Ok(Some(out));
            }
        }
    }

    /// Ends the input: the rest of the output goes to `sink`. Returns each stage's output count.
    pub fn finish(
        mut self,
        stages: &[Stage],
        ctx: &RunContext,
        sink: &mut dyn FnMut(Vec<Document>) -> Result<()>,
    ) -> Result<Vec<u64>> {
        while let Some(out) = self.next_finished(stages, ctx)? {
            sink(out)?;
        }
        Ok(self.counts)
    }
}

/// Refuses documents a stage built deeper than BSON may nest, as MongoDB refuses to turn them
/// into BSON: checking every stage that builds keeps the depth within one stage's growth of the
/// limit, however long the pipeline.
pub(super) fn check_depth(docs: &[Document]) -> Result<()> {
    docs.iter().try_for_each(crate::depth::check_output)
}

/// Runs `stages` over `docs`, and returns the output with each stage's output count.
pub fn run_counted(
    stages: &[Stage],
    docs: Vec<Document>,
    ctx: &RunContext,
) -> Result<(Vec<Document>, Vec<u64>)> {
    let mut flow = Flow::new(stages, ctx);
    let mut out = flow.push(stages, docs, ctx)?;
    let counts = flow.finish(stages, ctx, &mut |batch| {
        out.extend(batch);
        Ok(())
    })?;
    Ok((out, counts))
}

/// Runs `stages` over `docs`.
pub fn run_stages(
    stages: &[Stage],
    docs: Vec<Document>,
    ctx: &RunContext,
) -> Result<Vec<Document>> {
    Ok(run_counted(stages, docs, ctx)?.0)
}
