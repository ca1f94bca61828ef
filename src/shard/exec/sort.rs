//! The blocking sort, for orders no index delivers: documents are sorted in memory up to
//! `internalQueryMaxBlockingSortMemoryUsageBytes`; past it the sort writes sorted runs to files
//! under the data directory's `_tmp` and merges them (when disk use is allowed, MongoDB's
//! default since 6.0) or fails with QueryExceededMemoryLimitNoDiskUseAllowed. With a limit only
//! the best `skip + limit` documents are kept (top-k).

use crate::error::{ErrorCode, MongoError, Result};
use crate::query::sort::SortSpec;
use bson::{Bson, Document, RawDocumentBuf};
use std::cmp::Ordering;
use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};

/// Where and how far a blocking sort may go.
#[derive(Clone, Debug)]
pub struct SortLimits {
    /// Most bytes of documents held in memory.
    pub max_bytes: usize,
    pub allow_disk_use: bool,
    /// Directory for spilled runs (created when first needed).
    pub spill_dir: PathBuf,
}

struct Entry {
    key: Vec<Bson>,
    doc: Document,
    size: usize,
}

/// A sort in progress.
pub struct BlockingSort {
    spec: SortSpec,
    /// Keep only this many best documents (`skip + limit`).
    keep: Option<usize>,
    limits: SortLimits,
    entries: Vec<Entry>,
    bytes: usize,
    runs: Vec<Run>,
}

impl BlockingSort {
    pub fn new(spec: SortSpec, keep: Option<usize>, limits: SortLimits) -> BlockingSort {
        BlockingSort {
            spec,
            keep,
            limits,
            entries: Vec::new(),
            bytes: 0,
            runs: Vec::new(),
        }
    }

    /// Adds a document (`size`: its BSON size).
    pub fn push(&mut self, doc: Document, size: usize) -> Result<()> {
        let key = self.spec.sort_key(&doc);
        self.entries.push(Entry { key, doc, size });
        self.bytes += size;
        if let Some(keep) = self.keep {
            // Top-k: trim back to the best `keep` once the buffer doubles.
            if self.entries.len() > keep.max(1000) * 2 {
                self.sort_and_trim();
            }
        }
        if self.bytes > self.limits.max_bytes {
            self.sort_and_trim();
            if self.bytes > self.limits.max_bytes {
                if !self.limits.allow_disk_use {
                    return Err(MongoError::new(
                        ErrorCode::QueryExceededMemoryLimitNoDiskUseAllowed,
                        format!(
                            "Executor error during find command :: caused by :: Sort exceeded memory limit of {} bytes, but did not opt in to external sorting.",
                            self.limits.max_bytes
                        ),
                    ));
                }
                self.spill()?;
            }
        }
        Ok(())
    }

    fn sort_and_trim(&mut self) {
        let spec = &self.spec;
        self.entries
            .sort_by(|a, b| spec.compare_keys(&a.key, &b.key));
        if let Some(keep) = self.keep {
            if self.entries.len() > keep {
                self.entries.truncate(keep);
                self.bytes = self.entries.iter().map(|e| e.size).sum();
            }
        }
    }

    fn spill(&mut self) -> Result<()> {
        self.sort_and_trim();
        let run = Run::write(&self.limits.spill_dir, &self.entries)?;
        self.runs.push(run);
        self.entries.clear();
        self.bytes = 0;
        Ok(())
    }

    /// The documents in order (at most `keep`).
    pub fn finish(mut self) -> Result<SortedDocs> {
        if self.runs.is_empty() {
            self.sort_and_trim();
            return Ok(SortedDocs {
                memory: self.entries.into_iter().map(|e| e.doc).collect(),
                merge: None,
                remaining: self.keep,
            });
        }
        if !self.entries.is_empty() {
            self.spill()?;
        }
        let mut readers = Vec::with_capacity(self.runs.len());
        for run in self.runs {
            readers.push(RunReader::open(run, &self.spec)?);
        }
        Ok(SortedDocs {
            memory: VecDeque::new(),
            merge: Some(Merge {
                spec: self.spec,
                readers,
            }),
            remaining: self.keep,
        })
    }
}

/// Sorted output, from memory or merged from spilled runs.
pub struct SortedDocs {
    memory: VecDeque<Document>,
    merge: Option<Merge>,
    remaining: Option<usize>,
}

impl SortedDocs {
    /// The next document in order.
    pub fn next_doc(&mut self) -> Result<Option<Document>> {
        if self.remaining == Some(0) {
            return Ok(None);
        }
        let next = match &mut self.merge {
            Some(merge) => merge.next()?,
            None => self.memory.pop_front(),
        };
        if next.is_some() {
            if let Some(r) = &mut self.remaining {
                *r -= 1;
            }
        }
        Ok(next)
    }
}

/// A sorted find between batches: skip, projection, and one document read ahead so that a
/// batch knows whether it is the last.
pub struct SortedState {
    pub docs: SortedDocs,
    pub skip: u64,
    pub output: super::output::FindOutput,
    pub ahead: Option<RawDocumentBuf>,
    pub done: bool,
}

impl SortedState {
    pub fn new(docs: SortedDocs, skip: u64, output: super::output::FindOutput) -> SortedState {
        SortedState {
            docs,
            skip,
            output,
            ahead: None,
            done: false,
        }
    }

    pub fn exhausted(&self) -> bool {
        self.done && self.ahead.is_none()
    }

    fn pull(&mut self) -> Result<Option<RawDocumentBuf>> {
        if let Some(doc) = self.ahead.take() {
            return Ok(Some(doc));
        }
        while !self.done {
            let Some(doc) = self.docs.next_doc()? else {
                self.done = true;
                break;
            };
            if self.skip > 0 {
                self.skip -= 1;
                continue;
            }
            return Ok(Some(self.output.render_sorted(doc)?));
        }
        Ok(None)
    }

    /// At most `max_docs` documents and 16 MiB (at least one document).
    pub fn next_batch(&mut self, max_docs: usize) -> Result<Vec<RawDocumentBuf>> {
        let mut batch = Vec::new();
        let mut bytes = 0;
        while batch.len() < max_docs {
            let Some(doc) = self.pull()? else {
                break;
            };
            if bytes + doc.as_bytes().len() > super::MAX_BATCH_BYTES && !batch.is_empty() {
                self.ahead = Some(doc);
                return Ok(batch);
            }
            bytes += doc.as_bytes().len();
            batch.push(doc);
        }
        if self.ahead.is_none() && !self.done {
            self.ahead = self.pull()?;
        }
        Ok(batch)
    }
}

struct Merge {
    spec: SortSpec,
    readers: Vec<RunReader>,
}

impl Merge {
    fn next(&mut self) -> Result<Option<Document>> {
        // Few runs (data size / memory limit): a linear scan for the smallest head is enough.
        let mut best: Option<usize> = None;
        for (i, reader) in self.readers.iter().enumerate() {
            let Some((key, _)) = &reader.head else {
                continue;
            };
            let better = match best {
                None => true,
                Some(b) => {
                    let (best_key, _) = self.readers[b].head.as_ref().expect("has a head");
                    self.spec.compare_keys(key, best_key) == Ordering::Less
                }
            };
            if better {
                best = Some(i);
            }
        }
        let Some(i) = best else {
            return Ok(None);
        };
        let spec = self.spec.clone();
        let reader = &mut self.readers[i];
        let (_, doc) = reader.head.take().expect("has a head");
        reader.advance(&spec)?;
        Ok(Some(doc))
    }
}

/// A sorted run on disk: BSON documents back to back; removed when dropped.
struct Run {
    path: PathBuf,
}

static RUN_COUNTER: AtomicU64 = AtomicU64::new(0);

impl Run {
    fn write(dir: &Path, entries: &[Entry]) -> Result<Run> {
        let io = |e: std::io::Error| {
            MongoError::internal(format!("cannot write a sort run in {}: {e}", dir.display()))
        };
        std::fs::create_dir_all(dir).map_err(io)?;
        let n = RUN_COUNTER.fetch_add(1, AtomicOrdering::Relaxed);
        let path = dir.join(format!("extsort-{}-{n}", std::process::id()));
        let run = Run { path };
        let mut out = BufWriter::new(File::create(&run.path).map_err(io)?);
        for entry in entries {
            let raw = RawDocumentBuf::from_document(&entry.doc)?;
            out.write_all(raw.as_bytes()).map_err(io)?;
        }
        out.flush().map_err(io)?;
        Ok(run)
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

struct RunReader {
    input: BufReader<File>,
    head: Option<(Vec<Bson>, Document)>,
    _run: Run,
}

impl RunReader {
    fn open(run: Run, spec: &SortSpec) -> Result<RunReader> {
        let file = File::open(&run.path)
            .map_err(|e| MongoError::internal(format!("cannot read a sort run: {e}")))?;
        let mut reader = RunReader {
            input: BufReader::with_capacity(64 * 1024, file),
            head: None,
            _run: run,
        };
        reader.advance(spec)?;
        Ok(reader)
    }

    fn advance(&mut self, spec: &SortSpec) -> Result<()> {
        let io = |e: std::io::Error| MongoError::internal(format!("cannot read a sort run: {e}"));
        let mut len = [0u8; 4];
        match self.input.read_exact(&mut len) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                self.head = None;
                return Ok(());
            }
            Err(e) => return Err(io(e)),
        }
        let size = i32::from_le_bytes(len).max(5) as usize;
        let mut bytes = Vec::with_capacity(size);
        bytes.extend_from_slice(&len);
        bytes.resize(size, 0);
        self.input.read_exact(&mut bytes[4..]).map_err(io)?;
        let doc = RawDocumentBuf::from_bytes(bytes)?.to_document()?;
        self.head = Some((spec.sort_key(&doc), doc));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    fn limits(dir: &Path, max_bytes: usize, allow_disk_use: bool) -> SortLimits {
        SortLimits {
            max_bytes,
            allow_disk_use,
            spill_dir: dir.join("_tmp"),
        }
    }

    fn drain(mut docs: SortedDocs) -> Vec<i32> {
        let mut out = Vec::new();
        while let Some(d) = docs.next_doc().unwrap() {
            out.push(d.get_i32("k").unwrap());
        }
        out
    }

    fn push_all(sort: &mut BlockingSort, n: i32) -> Result<()> {
        for i in 0..n {
            let doc = doc! {"k": (i * 7919) % n, "pad": "x".repeat(50)};
            let size = RawDocumentBuf::from_document(&doc)
                .unwrap()
                .as_bytes()
                .len();
            sort.push(doc, size)?;
        }
        Ok(())
    }

    #[test]
    fn spills_runs_and_merges_them_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let spec = SortSpec::parse(&doc! {"k": -1}).unwrap();
        let mut sort = BlockingSort::new(spec, None, limits(dir.path(), 10_000, true));
        push_all(&mut sort, 1000).unwrap();
        assert!(sort.runs.len() > 5, "the limit forces several runs");
        let out = drain(sort.finish().unwrap());
        assert_eq!(out, (0..1000).rev().collect::<Vec<_>>());
        let left = std::fs::read_dir(dir.path().join("_tmp")).unwrap().count();
        assert_eq!(left, 0, "runs are removed once read");
    }

    #[test]
    fn top_k_keeps_the_best_and_limits_refuse_without_disk_use() {
        let dir = tempfile::tempdir().unwrap();
        let spec = SortSpec::parse(&doc! {"k": 1}).unwrap();
        let mut sort = BlockingSort::new(spec.clone(), Some(3), limits(dir.path(), 10_000, false));
        push_all(&mut sort, 5000).unwrap();
        assert_eq!(drain(sort.finish().unwrap()), vec![0, 1, 2]);
        let mut sort = BlockingSort::new(spec, None, limits(dir.path(), 10_000, false));
        let err = push_all(&mut sort, 5000).unwrap_err();
        assert_eq!(
            err.code(),
            ErrorCode::QueryExceededMemoryLimitNoDiskUseAllowed
        );
    }
}
