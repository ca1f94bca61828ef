//! Running stages as documents flow through them in batches. Per-document stages (`$match`,
//! `$project` and its kin, `$replaceRoot`, `$unwind`, `$redact`, `$skip`, `$limit`) pass each
//! batch on; blocking stages take their input in and emit at the end: `$sort` and `$group`
//! incrementally, within their memory limits (spilling when disk use is allowed), the others
//! (`$bucketAuto`, `$facet`, `$sample`, `$setWindowFields`, `$densify`, `$documents`) over all
//! of it at once. A satisfied `$limit` with only per-document stages before it ends the input,
//! and the draining of a blocking stage before it. A `$sort` followed by a `$limit` (with a
//! `$skip` between or not) keeps only the documents the limit lets through (top-k), as MongoDB
//! coalesces them.

use super::group_run::{GroupOutput, GroupRun};
use super::{RunContext, Stage};
use crate::error::Result;
use crate::spill::{BlockingSort, SortedDocs, approximate_document_size};
use bson::Document;

/// Documents a blocking stage emits at a time once its input is complete.
const DRAIN_BATCH: usize = 1000;

/// Stages being run.
pub struct Flow<'a> {
    steps: Vec<Step<'a>>,
    /// Documents each stage has output so far.
    counts: Vec<u64>,
}

enum Step<'a> {
    PerDocument(&'a Stage),
    /// Documents still to skip.
    Skip(u64),
    /// Documents still to let through.
    Limit(u64),
    Sort(Box<BlockingSort>),
    Group(Box<GroupRun<'a>>),
    /// A blocking stage that runs over its whole input at the end.
    Whole(&'a Stage, Vec<Document>),
    /// A blocking stage that has emitted its output.
    Finished,
}

impl<'a> Step<'a> {
    fn new(stage: &'a Stage, after: &[Stage], ctx: &RunContext) -> Step<'a> {
        match stage {
            Stage::Match(_)
            | Stage::Shape(_)
            | Stage::ReplaceRoot(_)
            | Stage::Unwind(_)
            | Stage::Redact(_) => Step::PerDocument(stage),
            Stage::Skip(n) => Step::Skip(*n),
            Stage::Limit(n) => Step::Limit(*n),
            Stage::Sort(spec) => Step::Sort(Box::new(BlockingSort::new(
                spec.clone(),
                top_k(after),
                ctx.limits.sort_limits(),
            ))),
            Stage::Group(group) => Step::Group(Box::new(GroupRun::new(group))),
            _ => Step::Whole(stage, Vec::new()),
        }
    }

    fn is_blocking(&self) -> bool {
        matches!(self, Step::Sort(_) | Step::Group(_) | Step::Whole(..))
    }

    /// Whether the stage builds documents (and so may nest them deeper than its input).
    fn builds_documents(&self) -> bool {
        match self {
            Step::PerDocument(stage) | Step::Whole(stage, _) => stage.builds_documents(),
            Step::Group(_) => true,
            _ => false,
        }
    }

    /// Takes a batch in; returns what passes on now.
    fn push(&mut self, docs: Vec<Document>, ctx: &RunContext) -> Result<Vec<Document>> {
        match self {
            Step::PerDocument(stage) => stage.run_batch(docs, ctx),
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
                for doc in &docs {
                    group.push(doc, ctx)?;
                }
                Ok(Vec::new())
            }
            Step::Whole(_, held) => {
                held.extend(docs);
                Ok(Vec::new())
            }
            Step::Finished => Ok(Vec::new()),
        }
    }

    /// A blocking stage's output, now that its input is complete.
    fn finish(self, ctx: &RunContext) -> Result<Drain<'a>> {
        Ok(match self {
            Step::Sort(sort) => Drain::Sorted(sort.finish()?),
            Step::Group(group) => Drain::Groups(group.finish(ctx)?),
            Step::Whole(stage, held) => Drain::Memory(stage.run_batch(held, ctx)?.into_iter()),
            _ => Drain::Memory(Vec::new().into_iter()),
        })
    }
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
enum Drain<'a> {
    Memory(std::vec::IntoIter<Document>),
    Sorted(SortedDocs),
    Groups(GroupOutput<'a>),
}

impl Drain<'_> {
    fn next_batch(&mut self, ctx: &RunContext) -> Result<Vec<Document>> {
        let mut batch = Vec::new();
        while batch.len() < DRAIN_BATCH {
            let next = match self {
                Drain::Memory(docs) => docs.next(),
                Drain::Sorted(sorted) => sorted.next_doc()?,
                Drain::Groups(groups) => groups.next_doc(ctx)?,
            };
            let Some(doc) = next else {
                break;
            };
            batch.push(doc);
        }
        Ok(batch)
    }
}

impl<'a> Flow<'a> {
    pub fn new(stages: &'a [Stage], ctx: &RunContext) -> Flow<'a> {
        let steps = stages
            .iter()
            .enumerate()
            .map(|(i, stage)| Step::new(stage, &stages[i + 1..], ctx))
            .collect();
        Flow {
            steps,
            counts: vec![0; stages.len()],
        }
    }

    /// Feeds a batch of input; returns the documents that came out of the last stage.
    pub fn push(&mut self, docs: Vec<Document>, ctx: &RunContext) -> Result<Vec<Document>> {
        self.feed(0, docs, ctx)
    }

    fn feed(
        &mut self,
        from: usize,
        mut docs: Vec<Document>,
        ctx: &RunContext,
    ) -> Result<Vec<Document>> {
        for i in from..self.steps.len() {
            if docs.is_empty() {
                break;
            }
            let builds = self.steps[i].builds_documents();
            docs = self.steps[i].push(docs, ctx)?;
            if builds {
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

    /// Ends the input: each blocking stage in turn emits its output through the stages after
    /// it; what comes out of the last one goes to `sink`. Returns each stage's output count.
    pub fn finish(
        mut self,
        ctx: &RunContext,
        sink: &mut dyn FnMut(Vec<Document>) -> Result<()>,
    ) -> Result<Vec<u64>> {
        for i in 0..self.steps.len() {
            if !self.steps[i].is_blocking() {
                continue;
            }
            let builds = self.steps[i].builds_documents();
            let step = std::mem::replace(&mut self.steps[i], Step::Finished);
            let mut drain = step.finish(ctx)?;
            while !self.satisfied_from(i + 1) {
                let batch = drain.next_batch(ctx)?;
                if batch.is_empty() {
                    break;
                }
                if builds {
                    check_depth(&batch)?;
                }
                self.counts[i] += batch.len() as u64;
                let out = self.feed(i + 1, batch, ctx)?;
                if !out.is_empty() {
                    sink(out)?;
                }
            }
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
    let mut out = flow.push(docs, ctx)?;
    let counts = flow.finish(ctx, &mut |batch| {
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
