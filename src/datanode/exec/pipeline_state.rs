//! An aggregation cursor between batches: the pipeline run, where its read of the collection
//! stands, and the output computed beyond the last batch. Each batch reads only as much input
//! as it needs and pushes it through the pipeline (the blocking stages finishing once the input
//! ends, their output then coming out a batch at a time), so that a cursor holds about a batch
//! of output plus the state of its blocking stages, never the whole result.

use super::{MAX_BATCH_BYTES, Position, SCAN_CHUNK, fill_batch};
use crate::aggregate::PipelineRun;
use crate::aggregate::foreign::Host;
use crate::datanode::storage::{CollectionMeta, DatabaseStore};
use crate::error::Result;
use crate::query::filter::Filter;
use bson::{Document, RawDocumentBuf};
use std::collections::VecDeque;
use std::sync::Arc;

/// The collection a pipeline reads, and where the read stands.
pub struct PipelineInput {
    pub db: Arc<DatabaseStore>,
    pub coll: Arc<CollectionMeta>,
    pub position: Position,
}

/// A pipeline run as its output is asked for.
pub struct PipelineState {
    run: PipelineRun,
    /// The collection still to read (`None` for collection-less pipelines, and once the input
    /// has ended).
    input: Option<PipelineInput>,
    /// Whether the input has ended (the blocking stages emit their output).
    ended: bool,
    /// Whether the output is complete.
    done: bool,
    /// Documents read so far: finishing blocking stages over many is work to hand off.
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
    pub time_left: Option<std::time::Duration>,
}

impl PipelineState {
    pub fn new(
        run: PipelineRun,
        input: Option<PipelineInput>,
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

    /// Documents read from the collection so far.
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
        if self.run.wants_input() {
            if let Some(input) = self.input.as_mut().filter(|input| !input.position.done()) {
                let all = Filter::match_all();
                let filter = self.run.leading_match().unwrap_or(&all);
                input
                    .position
                    .set_chunk(i64::try_from(chunk).unwrap_or(SCAN_CHUNK));
                let mut read = input.db.read().await?;
                let batch: Vec<Document> = input
                    .position
                    .next_matches(&mut read, &input.coll, filter)
                    .await?
                    .into_iter()
                    .map(|c| c.doc)
                    .collect();
                drop(read);
                self.read += batch.len();
                let out = self.run.push(batch)?;
                return self.emit(out);
            }
        }
        self.run.end_input();
        self.ended = true;
        self.input = None;
        Ok(())
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
    /// while reads come up short, up to [`SCAN_CHUNK`]).
    pub async fn fill(&mut self, max_docs: usize, host: Option<&Host<'_>>) -> Result<()> {
        let mut chunk = max_docs
            .saturating_sub(self.out.len())
            .clamp(1, SCAN_CHUNK as usize);
        while !self.done && self.out.len() < max_docs && self.out_bytes < MAX_BATCH_BYTES {
            self.step(host, chunk).await?;
            chunk = (chunk * 2).min(SCAN_CHUNK as usize);
        }
        Ok(())
    }

    /// The next batch: at most `max_docs` documents and 16 MB (at least one document).
    /// Computes what is missing first; after a non-empty batch, runs on until more output is
    /// ready or the output is complete, so that a cursor with nothing more says so.
    pub async fn next_batch(
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
                chunk = (chunk * 2).min(SCAN_CHUNK as usize);
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
            self.step(host, SCAN_CHUNK as usize).await?;
            if !self.out.is_empty() {
                self.out_bytes = 0;
                sink(self.out.drain(..).collect())?;
            }
        }
        Ok(())
    }
}
