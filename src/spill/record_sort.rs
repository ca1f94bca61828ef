//! The external sort of byte records (an index build's keys): records are held back to back in
//! one buffer up to a byte limit, sorted there by the caller's order, and past the limit written
//! as sorted runs under the spill directory and merged at the end. One buffer rather than one
//! allocation per record keeps millions of small records compact and returns their memory whole.

use super::run::{RunFile, RunReader, RunWriter};
use crate::error::{MongoError, Result};
use std::cmp::Ordering;
use std::path::PathBuf;

/// The order of two records' payloads.
pub type RecordOrder = fn(&[u8], &[u8]) -> Ordering;

/// Bytes each record costs beyond its payload: its length prefix and its offset.
const RECORD_OVERHEAD: usize = 4 + std::mem::size_of::<usize>();

/// A sort in progress.
pub struct RecordSort {
    order: RecordOrder,
    max_bytes: usize,
    spill_dir: PathBuf,
    /// Records back to back, each with its length prefix.
    buffer: Vec<u8>,
    offsets: Vec<usize>,
    runs: Vec<RunFile>,
}

impl RecordSort {
    pub fn new(order: RecordOrder, max_bytes: usize, spill_dir: PathBuf) -> RecordSort {
        RecordSort {
            order,
            max_bytes,
            spill_dir,
            buffer: Vec::new(),
            offsets: Vec::new(),
            runs: Vec::new(),
        }
    }

    /// Adds a record; may write a sorted run to disk (blocking file IO).
    pub fn push(&mut self, payload: &[u8]) -> Result<()> {
        let len = u32::try_from(payload.len() + 4)
            .map_err(|_| MongoError::internal("a sort record over 4 GiB"))?;
        self.offsets.push(self.buffer.len());
        self.buffer.extend_from_slice(&len.to_le_bytes());
        self.buffer.extend_from_slice(payload);
        if self.buffer.len() + self.offsets.len() * RECORD_OVERHEAD > self.max_bytes {
            self.spill()?;
        }
        Ok(())
    }

    fn sort_buffer(&mut self) {
        let (buffer, order) = (&self.buffer, self.order);
        self.offsets
            .sort_unstable_by(|&a, &b| order(payload_at(buffer, a), payload_at(buffer, b)));
    }

    fn spill(&mut self) -> Result<()> {
        self.sort_buffer();
        let mut run = RunWriter::create(&self.spill_dir)?;
        for &offset in &self.offsets {
            run.push(record_at(&self.buffer, offset))?;
        }
        self.runs.push(run.finish()?);
        self.buffer.clear();
        self.offsets.clear();
        Ok(())
    }

    /// The records in order (blocking file IO when runs were spilled).
    pub fn finish(mut self) -> Result<SortedRecords> {
        if self.runs.is_empty() {
            self.sort_buffer();
            return Ok(SortedRecords::Memory {
                buffer: self.buffer,
                offsets: self.offsets.into_iter(),
            });
        }
        if !self.offsets.is_empty() {
            self.spill()?;
        }
        let mut heads = Vec::with_capacity(self.runs.len());
        for run in self.runs {
            let mut reader = run.into_reader()?;
            let current = reader.next_record()?;
            heads.push((reader, current));
        }
        Ok(SortedRecords::Merge {
            order: self.order,
            heads,
        })
    }
}

/// Sorted output, from the buffer or merged from spilled runs.
pub enum SortedRecords {
    Memory {
        buffer: Vec<u8>,
        offsets: std::vec::IntoIter<usize>,
    },
    Merge {
        order: RecordOrder,
        heads: Vec<(RunReader, Option<Vec<u8>>)>,
    },
}

impl SortedRecords {
    /// How many sorted runs were written to disk (0 when the records fit in memory).
    pub fn spilled_runs(&self) -> usize {
        match self {
            SortedRecords::Memory { .. } => 0,
            SortedRecords::Merge { heads, .. } => heads.len(),
        }
    }

    /// The next record's payload in order, `None` at the end.
    pub fn next_record(&mut self) -> Result<Option<Vec<u8>>> {
        match self {
            SortedRecords::Memory { buffer, offsets } => {
                Ok(offsets.next().map(|o| payload_at(buffer, o).to_vec()))
            }
            SortedRecords::Merge { order, heads } => {
                // Runs are few (data size / memory limit): a linear scan finds the smallest head.
                let mut best: Option<usize> = None;
                for (i, (_, current)) in heads.iter().enumerate() {
                    let Some(record) = current else { continue };
                    let smaller = best.is_none_or(|b| {
                        let best = heads[b].1.as_deref().expect("a current record");
                        order(&record[4..], &best[4..]) == Ordering::Less
                    });
                    if smaller {
                        best = Some(i);
                    }
                }
                let Some(i) = best else { return Ok(None) };
                let (reader, current) = &mut heads[i];
                let next = reader.next_record()?;
                let mut record = std::mem::replace(current, next).expect("a current record");
                record.drain(..4);
                Ok(Some(record))
            }
        }
    }
}

fn record_at(buffer: &[u8], offset: usize) -> &[u8] {
    let len = u32::from_le_bytes(buffer[offset..offset + 4].try_into().expect("4 bytes"));
    &buffer[offset..offset + len as usize]
}

fn payload_at(buffer: &[u8], offset: usize) -> &[u8] {
    &record_at(buffer, offset)[4..]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numbers(n: u32) -> Vec<Vec<u8>> {
        // A permutation of 0..n, each with a tail of its own length so records differ in size.
        (0..n)
            .map(|i| {
                let v = (i * 7919) % n;
                let mut r = v.to_be_bytes().to_vec();
                r.extend(std::iter::repeat_n(b'x', (v % 13) as usize));
                r
            })
            .collect()
    }

    fn drain(mut sorted: SortedRecords) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        while let Some(r) = sorted.next_record().unwrap() {
            out.push(r);
        }
        out
    }

    #[test]
    fn sorts_in_memory_and_across_spilled_runs_alike() {
        let dir = tempfile::tempdir().unwrap();
        let spill = dir.path().join("_tmp");
        let records = numbers(5000);
        let mut expected = records.clone();
        expected.sort();
        for (limit, spills) in [(1 << 20, false), (4096, true)] {
            let mut sort = RecordSort::new(|a, b| a.cmp(b), limit, spill.clone());
            for r in &records {
                sort.push(r).unwrap();
            }
            let sorted = sort.finish().unwrap();
            assert_eq!(sorted.spilled_runs() > 1, spills);
            assert_eq!(drain(sorted), expected);
        }
        assert_eq!(
            std::fs::read_dir(&spill).unwrap().count(),
            0,
            "the runs are removed once read"
        );
    }

    #[test]
    fn uses_the_callers_order() {
        let dir = tempfile::tempdir().unwrap();
        let mut sort = RecordSort::new(|a, b| b.cmp(a), 64, dir.path().join("_tmp"));
        for r in numbers(100) {
            sort.push(&r).unwrap();
        }
        let out = drain(sort.finish().unwrap());
        assert_eq!(out.len(), 100);
        assert!(out.windows(2).all(|w| w[0] >= w[1]));
    }
}
