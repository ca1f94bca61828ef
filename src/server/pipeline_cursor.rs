//! An aggregation cursor between batches, wherever a pipeline runs over batches — a data node
//! over its collection, a router over the shards' cursors (the merger's part of a split
//! pipeline) or over its own cursor of a pipeline's first part (before a `$lookup`): the pipeline
//! run, the source of its input, and the output computed beyond the last batch. Each batch
//! reads only as much input as it needs and pushes it through the pipeline (the blocking stages
//! finishing once the input ends, their output then coming out a batch at a time), so that a
//! cursor holds about a batch of output plus the state of its blocking stages, never the whole
//! result.

use crate::aggregate::PipelineRun;
use crate::aggregate::foreign::{Host, HostCursor};
use crate::command::{MAX_BATCH_BYTES, fill_batch};
use crate::error::{MongoError, Result};
use crate::query::filter::Filter;
use bson::{Document, RawDocumentBuf};
use futures::future::BoxFuture;
use std::collections::VecDeque;
use std::time::Duration;

/// The most documents one step asks its source for (a storage statement's rows, a `getMore`'s
/// batch): reads start at about what a batch still needs and double while they come up short.
pub const MAX_READ: usize = 1000;

/// Where a pipeline's input comes from.
pub trait PipelineSource: Send {
    /// Up to `max` more documents (fewer is fine), or `None` once the input has ended.
    /// `filter` is the pipeline's leading `$match`, which a source may use to choose what it
    /// reads (the pipeline matches what it gets again). `host` is there when the run has one.
    fn read<'a>(
        &'a mut self,
        max: usize,
        filter: &'a Filter,
        host: Option<&'a Host<'a>>,
    ) -> BoxFuture<'a, Result<Option<Vec<Document>>>>;

    /// Releases what the source holds elsewhere (a cursor on other nodes), when the run stops
    /// reading before the input ends.
    fn close<'a>(&'a mut self, _host: Option<&'a Host<'a>>) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }
}

/// The output of another aggregation as input (a router's pipeline over its first part, run
/// through the router's own routing): read a `getMore` at a time.
impl PipelineSource for HostCursor {
    fn read<'a>(
        &'a mut self,
        max: usize,
        _filter: &'a Filter,
        host: Option<&'a Host<'a>>,
    ) -> BoxFuture<'a, Result<Option<Vec<Document>>>> {
        Box::pin(async move {
            let host = host.ok_or_else(|| MongoError::internal("a cursor read without a host"))?;
            if self.exhausted() {
                return Ok(None);
            }
            self.next_batch(host, Some(max)).await.map(Some)
        })
    }

    fn close<'a>(&'a mut self, host: Option<&'a Host<'a>>) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            if let Some(host) = host {
                HostCursor::close(self, host).await;
            }
        })
    }
}

/// A pipeline run as its output is asked for.
pub struct PipelineState {
    run: PipelineRun,
    /// The input still to read (`None` for pipelines that make their own, and once the input
    /// has ended).
    input: Option<Box<dyn PipelineSource>>,
    /// Whether the input has ended (the blocking stages emit their output).
    ended: bool,
    /// Whether the output is complete.
    done: bool,
    /// Input documents read so far: finishing blocking stages over many is work to hand off.
    read: usize,
    /// Output computed and not yet returned, and its size in bytes.
    out: VecDeque<RawDocumentBuf>,
    out_bytes: usize,
    /// Whether the pipeline reaches other collections (each step then needs a host).
    needs_host: bool,
    /// The database the pipeline runs in (where its host reaches other collections).
    pub db_name: String,
    /// What is left of the command's `maxTimeMS` for the batches still to compute: as in
    /// MongoDB, a cursor's `getMore`s spend the time its command did not use.
    pub time_left: Option<Duration>,
}

impl PipelineState {
    pub fn new(
        run: PipelineRun,
        input: Option<Box<dyn PipelineSource>>,
        needs_host: bool,
        db_name: String,
    ) -> PipelineState {
        PipelineState {
            run,
            input,
            ended: false,
            done: false,
            read: 0,
            out: VecDeque::new(),
            out_bytes: 0,
            needs_host,
            db_name,
            time_left: None,
        }
    }

    /// Whether the next steps need a [`Host`] (stages that reach other collections).
    pub fn needs_host(&self) -> bool {
        self.needs_host
    }

    /// Whether every output document has been returned.
    pub fn exhausted(&self) -> bool {
        self.done && self.out.is_empty()
    }

    /// Output documents computed and not yet returned (what the cursor holds beyond the
    /// state of the blocking stages).
    pub fn buffered(&self) -> usize {
        self.out.len()
    }

    /// The bytes of [`PipelineState::buffered`].
    pub fn buffered_bytes(&self) -> usize {
        self.out_bytes
    }

    /// Input documents read so far.
    pub fn documents_read(&self) -> usize {
        self.read
    }

    /// Moves the run on by one step: output that needs no more input (a part of a tail, a
    /// batch out of a finishing blocking stage), else a chunk of input read (at most `chunk`
    /// rows) and pushed through, else the end of the input, else the end of the output.
    pub async fn step(&mut self, host: Option<&Host<'_>>, chunk: usize) -> Result<()> {
        if self.done {
            return Ok(());
        }
        let next = match host {
            Some(host) => self.run.next_output_with(host).await?,
            None => {
                // Blocking stages finish over all their input at once: over many documents,
                // that is work to hand off (`server::cpu`).
                let heavy = self.ended && self.read >= crate::server::cpu::HEAVY_STAGE_INPUT;
                let run = &mut self.run;
                crate::server::cpu::run_sync(heavy, || run.next_output())?
            }
        };
        if let Some(out) = next {
            return self.emit(out);
        }
        if self.ended {
            self.done = true;
            return Ok(());
        }
        if let Some(input) = self.input.as_mut() {
            if self.run.wants_input() {
                let all = Filter::match_all();
                let filter = self.run.leading_match().unwrap_or(&all);
                if let Some(batch) = input.read(chunk, filter, host).await? {
                    self.read += batch.len();
                    let out = self.run.push(batch)?;
                    return self.emit(out);
                }
            } else {
                // A satisfied `$limit`: what is left of the input is not needed.
                input.close(host).await;
            }
        }
        self.run.end_input();
        self.ended = true;
        self.input = None;
        Ok(())
    }

    /// Releases the input before the run ends (a cursor killed, failed or timed out): what
    /// its source holds elsewhere is closed.
    pub async fn close(&mut self, host: Option<&Host<'_>>) {
        if let Some(mut input) = self.input.take() {
            input.close(host).await;
        }
        self.done = true;
    }

    /// Output to return, each document within the 16 MB a reply may carry
    /// (BSONObjectTooLarge otherwise, as MongoDB refuses it).
    fn emit(&mut self, out: Vec<Document>) -> Result<()> {
        for doc in &out {
            let raw = crate::command::result_document(doc)?;
            self.out_bytes += raw.as_bytes().len();
            self.out.push_back(raw);
        }
        Ok(())
    }

    /// Runs the pipeline until `max_docs` documents (or 16 MB) are ready, or the output is
    /// complete. Input is read a chunk no larger than the documents still wanted (doubling
    /// while reads come up short, up to [`MAX_READ`]).
    pub async fn fill(&mut self, max_docs: usize, host: Option<&Host<'_>>) -> Result<()> {
        let mut chunk = max_docs.saturating_sub(self.out.len()).clamp(1, MAX_READ);
        while !self.done && self.out.len() < max_docs && self.out_bytes < MAX_BATCH_BYTES {
            self.step(host, chunk).await?;
            chunk = (chunk * 2).min(MAX_READ);
        }
        Ok(())
    }

    /// The next batch: at most `max_docs` documents and 16 MB (at least one document).
    /// Computes what is missing first; after a non-empty batch, runs on until more output is
    /// ready or the output is complete, so that a cursor with nothing more says so. The work
    /// spends what is left of [`PipelineState::time_left`] (MaxTimeMSExpired past it).
    pub async fn next_batch(
        &mut self,
        max_docs: usize,
        host: Option<&Host<'_>>,
    ) -> Result<Vec<RawDocumentBuf>> {
        let started = std::time::Instant::now();
        let left = self.time_left;
        let batch = crate::command::within(left, self.compute_batch(max_docs, host)).await?;
        if let Some(left) = &mut self.time_left {
            *left = left.saturating_sub(started.elapsed());
        }
        Ok(batch)
    }

    async fn compute_batch(
        &mut self,
        max_docs: usize,
        host: Option<&Host<'_>>,
    ) -> Result<Vec<RawDocumentBuf>> {
        self.fill(max_docs, host).await?;
        let batch = self.take_batch(max_docs);
        if max_docs > 0 {
            // Reading a row at a time at first: a batch that used all the output may have
            // used all there is.
            let mut chunk = 1;
            while !self.done && self.out.is_empty() {
                self.step(host, chunk).await?;
                chunk = (chunk * 2).min(MAX_READ);
            }
        }
        Ok(batch)
    }

    fn take_batch(&mut self, max_docs: usize) -> Vec<RawDocumentBuf> {
        let mut batch = Vec::new();
        let mut bytes = 0;
        fill_batch(&mut self.out, &mut batch, &mut bytes, max_docs);
        self.out_bytes -= bytes;
        batch
    }

    /// Runs the pipeline to its end, returning the output as it comes, to `sink`.
    pub async fn drain(
        &mut self,
        host: Option<&Host<'_>>,
        sink: &mut (dyn FnMut(Vec<RawDocumentBuf>) -> Result<()> + Send),
    ) -> Result<()> {
        while !self.exhausted() {
            self.step(host, MAX_READ).await?;
            if !self.out.is_empty() {
                self.out_bytes = 0;
                sink(self.out.drain(..).collect())?;
            }
        }
        Ok(())
    }
}
