//! The blocking sort, for orders nothing delivers: documents are sorted in memory up to a byte
//! limit (`internalQueryMaxBlockingSortMemoryUsageBytes`); past it the sort writes sorted runs
//! to files under the spill directory and merges them (when disk use is allowed, MongoDB's
//! default since 6.0) or fails with QueryExceededMemoryLimitNoDiskUseAllowed. With a limit only
//! the best `keep` documents are kept (top-k). Ties keep their arrival order, so the sort is
//! stable, spilled or not.

use super::run::{RunFile, RunReader};
use crate::error::{ErrorCode, MongoError, Result};
use crate::query::sort::SortSpec;
use bson::{Bson, Document};
use std::cmp::Ordering;
use std::collections::VecDeque;
use std::path::PathBuf;

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
    runs: Vec<RunFile>,
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

    /// Adds a document (`size`: its size in bytes, exact or approximate). Past the memory
    /// limit without disk use, fails with MongoDB's message (callers add their executor's
    /// context).
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
                            "Sort exceeded memory limit of {} bytes, but did not opt in to external sorting.",
                            self.limits.max_bytes
                        ),
                    ));
                }
                self.spill()?;
            }
        }
        Ok(())
    }

    /// Whether sorted runs were written to disk.
    pub fn spilled(&self) -> bool {
        !self.runs.is_empty()
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
        let run = RunFile::write(&self.limits.spill_dir, self.entries.iter().map(|e| &e.doc))?;
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
        let mut heads = Vec::with_capacity(self.runs.len());
        for run in self.runs {
            heads.push(Head::open(run.into_reader()?, &self.spec)?);
        }
        Ok(SortedDocs {
            memory: VecDeque::new(),
            merge: Some(Merge {
                spec: self.spec,
                heads,
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

struct Merge {
    spec: SortSpec,
    heads: Vec<Head>,
}

impl Merge {
    fn next(&mut self) -> Result<Option<Document>> {
        // Few runs (data size / memory limit): a linear scan for the smallest head is enough.
        // Strictly smaller wins, so among equal keys the earlier run (arrival order) goes first.
        let mut best: Option<usize> = None;
        for (i, head) in self.heads.iter().enumerate() {
            let Some((key, _)) = &head.current else {
                continue;
            };
            let better = match best {
                None => true,
                Some(b) => {
                    let (best_key, _) = self.heads[b].current.as_ref().expect("has a head");
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
        let head = &mut self.heads[i];
        let (_, doc) = head.current.take().expect("has a head");
        head.advance(&self.spec)?;
        Ok(Some(doc))
    }
}

/// A run's reader with its next document and that document's sort key.
struct Head {
    reader: RunReader,
    current: Option<(Vec<Bson>, Document)>,
}

impl Head {
    fn open(reader: RunReader, spec: &SortSpec) -> Result<Head> {
        let mut head = Head {
            reader,
            current: None,
        };
        head.advance(spec)?;
        Ok(head)
    }

    fn advance(&mut self, spec: &SortSpec) -> Result<()> {
        self.current = self
            .reader
            .next_doc()?
            .map(|doc| (spec.sort_key(&doc), doc));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{RawDocumentBuf, doc};
    use std::path::Path;

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
    fn spilled_ties_keep_arrival_order() {
        let dir = tempfile::tempdir().unwrap();
        let spec = SortSpec::parse(&doc! {"k": 1}).unwrap();
        let mut sort = BlockingSort::new(spec, None, limits(dir.path(), 2_000, true));
        for i in 0..500 {
            sort.push(doc! {"k": i % 3, "i": i}, 40).unwrap();
        }
        assert!(sort.spilled());
        let mut docs = sort.finish().unwrap();
        let mut seen = Vec::new();
        while let Some(d) = docs.next_doc().unwrap() {
            seen.push((d.get_i32("k").unwrap(), d.get_i32("i").unwrap()));
        }
        let mut expected = seen.clone();
        expected.sort();
        assert_eq!(seen, expected);
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
        assert_eq!(
            err.message(),
            "Sort exceeded memory limit of 10000 bytes, but did not opt in to external sorting."
        );
    }
}
