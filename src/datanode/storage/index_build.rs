//! Building a secondary index over the documents a collection already holds, while writes go on
//! (MongoDB's hybrid build): the keys are read from read views, sorted (spilling sorted runs to
//! `_tmp` past `maxIndexBuildMemoryUsageMegabytes`), and inserted in key order in short write
//! transactions, so the index's B-tree is appended to rather than written at random — random
//! inserts rewrite a page per key once the index outgrows the page cache.
//!
//! The index exists, unready, from the start and every write maintains it; the build only
//! covers documents up to the last record id that existed then. A key read from a document that
//! a write then changed or deleted would be stale, so the writer notes every record id at or
//! below that bound it writes during the build: the sorted insert skips their keys, and the
//! last transaction indexes those documents afresh from their current content.

use super::catalog::{CollectionMeta, IndexMeta};
use super::database::DatabaseStore;
use super::keys::DocumentKeys;
use super::read_sql::DocumentReads;
use super::readers::blocking;
use super::txn::RecordId;
use crate::error::Result;
use crate::spill::{RecordSort, SortedRecords};
use std::cmp::Ordering;
use std::collections::{BTreeSet, HashSet};

/// MongoDB's `maxIndexBuildMemoryUsageMegabytes` default: the keys an index build holds in
/// memory before spilling sorted runs.
pub(super) const INDEX_BUILD_MEMORY_BYTES: usize = 200 * 1024 * 1024;

/// Documents read per read-view statement while collecting keys.
const COLLECT_CHUNK: i64 = 10_000;

/// Keys inserted per write transaction: short enough not to hold writes up for long.
const INSERT_CHUNK: usize = 10_000;

/// An index build in progress, as the writer sees it.
pub(super) struct IndexBuild {
    pub collection: i64,
    pub index: i64,
    /// The last record id the build covers.
    pub last_rid: RecordId,
    /// Record ids up to `last_rid` written since the build began.
    pub written: HashSet<RecordId>,
}

impl IndexBuild {
    pub fn new(collection: i64, index: i64, last_rid: RecordId) -> IndexBuild {
        IndexBuild {
            collection,
            index,
            last_rid,
            written: HashSet::new(),
        }
    }
}

/// What a build did, for `serverStatus.indexBulkBuilder`.
#[derive(Clone, Copy, Debug)]
pub struct IndexBuildStats {
    /// Keys of the existing documents sorted.
    pub keys_sorted: u64,
    /// Sorted runs written to disk.
    pub spilled_runs: u64,
}

/// One key of the build: `key`, `rid`, `type_bits`.
pub(super) type BuiltKey = (Vec<u8>, RecordId, Vec<u8>);

impl DatabaseStore {
    /// Builds `index` over the documents with record ids up to `last_rid`, holding at most
    /// `max_bytes` of keys in memory.
    pub(super) async fn build_index(
        &self,
        coll: &CollectionMeta,
        index: &IndexMeta,
        last_rid: RecordId,
        max_bytes: usize,
    ) -> Result<IndexBuildStats> {
        let spill_dir = self.spill_dir();
        let mut sort = RecordSort::new(entry_order, max_bytes, spill_dir);
        // The paths (for a wildcard index) of the arrays met, once one is.
        let mut multikey: Option<BTreeSet<String>> = None;
        let mut keys_sorted = 0u64;
        let mut after = 0;
        let mut entry = Vec::new();
        while after < last_rid {
            if let Some(aborted) = self.index_build_aborted(coll, index) {
                return Err(aborted);
            }
            let docs = self.read().await?.scan(coll, after, COLLECT_CHUNK).await?;
            let Some((last, _)) = docs.last() else { break };
            after = *last;
            blocking(|| {
                for (rid, doc) in docs.iter().take_while(|(rid, _)| *rid <= last_rid) {
                    let keys = DocumentKeys::new(doc).keys(index)?;
                    if keys.multikey {
                        let paths = multikey.get_or_insert_default();
                        paths.extend(keys.multikey_paths.iter().cloned());
                    }
                    for (key, types) in keys.keys.iter().zip(&keys.types) {
                        encode_entry(&mut entry, key, *rid, types);
                        sort.push(&entry)?;
                        keys_sorted += 1;
                    }
                }
                Ok::<_, crate::error::MongoError>(())
            })?;
        }
        let mut sorted = blocking(|| sort.finish())?;
        let stats = IndexBuildStats {
            keys_sorted,
            spilled_runs: sorted.spilled_runs() as u64,
        };
        loop {
            let page = blocking(|| next_page(&mut sorted))?;
            if page.is_empty() {
                break;
            }
            let mut txn = self.write().await?;
            // Checked under the writer: a drop holds it too.
            if let Some(aborted) = self.index_build_aborted(coll, index) {
                return Err(aborted);
            }
            txn.add_built_keys(coll, index, &page).await?;
            txn.commit().await?;
        }
        let mut txn = self.write().await?;
        txn.finish_index_build(coll, index, multikey).await?;
        txn.commit().await?;
        Ok(stats)
    }
}

fn next_page(sorted: &mut SortedRecords) -> Result<Vec<BuiltKey>> {
    let mut page = Vec::with_capacity(INSERT_CHUNK);
    while page.len() < INSERT_CHUNK {
        match sorted.next_record()? {
            Some(record) => page.push(decode_entry(&record)),
            None => break,
        }
    }
    Ok(page)
}

/// An entry as a sort record: the key's length (4 bytes), the key, the record id (8 bytes,
/// big-endian: record ids are positive, so their bytes sort as they do), the type bits.
fn encode_entry(out: &mut Vec<u8>, key: &[u8], rid: RecordId, types: &[u8]) {
    out.clear();
    out.extend_from_slice(&(key.len() as u32).to_le_bytes());
    out.extend_from_slice(key);
    out.extend_from_slice(&rid.to_be_bytes());
    out.extend_from_slice(types);
}

fn split_entry(record: &[u8]) -> (&[u8], &[u8], &[u8]) {
    let len = u32::from_le_bytes(record[..4].try_into().expect("4 bytes")) as usize;
    let (key, rest) = record[4..].split_at(len);
    let (rid, types) = rest.split_at(8);
    (key, rid, types)
}

fn decode_entry(record: &[u8]) -> BuiltKey {
    let (key, rid, types) = split_entry(record);
    let rid = RecordId::from_be_bytes(rid.try_into().expect("8 bytes"));
    (key.to_vec(), rid, types.to_vec())
}

/// Index order: by key, then by record id.
fn entry_order(a: &[u8], b: &[u8]) -> Ordering {
    let (a_key, a_rid, _) = split_entry(a);
    let (b_key, b_rid, _) = split_entry(b);
    a_key.cmp(b_key).then_with(|| a_rid.cmp(b_rid))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_order_by_key_then_record_id_and_come_back_whole() {
        let mut a = Vec::new();
        let mut b = Vec::new();
        encode_entry(&mut a, b"ab", 7, b"\x01");
        encode_entry(&mut b, b"abc", 2, b"");
        assert_eq!(entry_order(&a, &b), Ordering::Less, "a shorter key first");
        encode_entry(&mut b, b"ab", 300, b"");
        assert_eq!(entry_order(&a, &b), Ordering::Less, "then the record id");
        assert_eq!(decode_entry(&a), (b"ab".to_vec(), 7, vec![1]));
    }
}
