//! Spilled runs: records written back to back to a file under the spill directory, read back
//! in the same order, and removed once dropped. A record starts with its own length (four bytes,
//! little-endian, counting themselves), as a BSON document does, so documents are records.

use crate::error::{MongoError, Result};
use bson::{Document, RawDocumentBuf};
use std::borrow::Borrow;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// A run on disk; the file goes when the run (or the reader that took it) is dropped.
pub struct RunFile {
    path: PathBuf,
}

static RUN_COUNTER: AtomicU64 = AtomicU64::new(0);

impl RunFile {
    /// Writes `docs` in order to a new file in `dir` (created when missing).
    pub fn write<D: Borrow<Document>>(
        dir: &Path,
        docs: impl IntoIterator<Item = D>,
    ) -> Result<RunFile> {
        let mut run = RunWriter::create(dir)?;
        for doc in docs {
            run.push(RawDocumentBuf::from_document(doc.borrow())?.as_bytes())?;
        }
        run.finish()
    }

    /// Reads the run from its start.
    pub fn into_reader(self) -> Result<RunReader> {
        let file = File::open(&self.path)
            .map_err(|e| MongoError::internal(format!("cannot read a spill file: {e}")))?;
        Ok(RunReader {
            input: BufReader::with_capacity(64 * 1024, file),
            _run: self,
        })
    }
}

/// A run being written: records pushed in order, then `finish`ed into its file.
pub struct RunWriter {
    out: BufWriter<File>,
    run: RunFile,
}

impl RunWriter {
    /// A new, empty run file in `dir` (created when missing).
    pub fn create(dir: &Path) -> Result<RunWriter> {
        let io = |e: std::io::Error| {
            MongoError::internal(format!(
                "cannot write a spill file in {}: {e}",
                dir.display()
            ))
        };
        std::fs::create_dir_all(dir).map_err(io)?;
        let n = RUN_COUNTER.fetch_add(1, Ordering::Relaxed);
        let run = RunFile {
            path: dir.join(format!("extsort-{}-{n}", std::process::id())),
        };
        let out = BufWriter::new(File::create(&run.path).map_err(io)?);
        Ok(RunWriter { out, run })
    }

    /// Appends a record (starting with its length, see the module).
    pub fn push(&mut self, record: &[u8]) -> Result<()> {
        self.out.write_all(record).map_err(write_error)
    }

    pub fn finish(mut self) -> Result<RunFile> {
        self.out.flush().map_err(write_error)?;
        Ok(self.run)
    }
}

fn write_error(e: std::io::Error) -> MongoError {
    MongoError::internal(format!("cannot write a spill file: {e}"))
}

impl Drop for RunFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// A run being read back.
pub struct RunReader {
    input: BufReader<File>,
    _run: RunFile,
}

impl RunReader {
    /// The next document, `None` at the end of the run.
    pub fn next_doc(&mut self) -> Result<Option<Document>> {
        match self.next_record()? {
            Some(bytes) => Ok(Some(RawDocumentBuf::from_bytes(bytes)?.to_document()?)),
            None => Ok(None),
        }
    }

    /// The next record with its length prefix, `None` at the end of the run.
    pub fn next_record(&mut self) -> Result<Option<Vec<u8>>> {
        let io = |e: std::io::Error| MongoError::internal(format!("cannot read a spill file: {e}"));
        let mut len = [0u8; 4];
        match self.input.read_exact(&mut len) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
            Err(e) => return Err(io(e)),
        }
        let size = (u32::from_le_bytes(len) as usize).max(4);
        let mut bytes = Vec::with_capacity(size);
        bytes.extend_from_slice(&len);
        bytes.resize(size, 0);
        self.input.read_exact(&mut bytes[4..]).map_err(io)?;
        Ok(Some(bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    #[test]
    fn documents_come_back_in_order_and_the_file_goes() {
        let dir = tempfile::tempdir().unwrap();
        let docs: Vec<Document> = (0..100)
            .map(|i| doc! {"i": i, "s": "x".repeat(i as usize)})
            .collect();
        let run = RunFile::write(&dir.path().join("_tmp"), &docs).unwrap();
        let mut reader = run.into_reader().unwrap();
        let mut back = Vec::new();
        while let Some(doc) = reader.next_doc().unwrap() {
            back.push(doc);
        }
        assert_eq!(back, docs);
        drop(reader);
        assert_eq!(
            std::fs::read_dir(dir.path().join("_tmp")).unwrap().count(),
            0
        );
    }
}
