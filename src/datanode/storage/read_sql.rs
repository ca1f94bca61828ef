//! The statements that read documents and index entries, built once for both connections that
//! run them: the writer (sqlx, inside its transaction) and the readers (synchronous, on the
//! calling thread). Each read is a statement, its parameters and the decoding of its rows.

use super::catalog::{CollectionMeta, IndexMeta};
use super::keys::id_key;
use crate::error::{MongoError, Result};
use bson::{Bson, RawDocumentBuf};

/// The storage-internal identity of a document within its collection.
pub type RecordId = i64;

/// A bound parameter.
#[derive(Clone, Copy, Debug)]
pub enum Param<'a> {
    Int(i64),
    Blob(&'a [u8]),
}

/// A read statement with its parameters.
pub struct ReadQuery<'a> {
    pub sql: String,
    pub params: Vec<Param<'a>>,
}

/// Index entries in `[low, high)` after `resume` (a `(key, record id)` position), with their
/// documents, in key order (descending when `reverse`).
pub struct IndexRange<'a> {
    pub index: &'a IndexMeta,
    pub low: &'a [u8],
    pub high: Option<&'a [u8]>,
    pub resume: Option<(&'a [u8], RecordId)>,
    pub reverse: bool,
    pub limit: i64,
}

#[cfg(test)]
impl<'a> IndexRange<'a> {
    /// Every entry of `index`, in key order.
    pub fn whole(index: &'a IndexMeta) -> IndexRange<'a> {
        IndexRange {
            index,
            low: &[],
            high: None,
            resume: None,
            reverse: false,
            limit: i64::MAX,
        }
    }
}

/// Several sorted, disjoint ranges of one index read as one: their entries in key order
/// (descending when `reverse`), at most `limit`. A scan of many small ranges (a `$near`
/// round's cells and their ancestors, a long `$in`) then costs one statement rather than one
/// per range, each with its own trip through the runtime.
pub struct IndexRanges<'a> {
    pub index: &'a IndexMeta,
    /// `[low, high)` each, in ascending order; only the last may have no upper bound.
    pub ranges: Vec<(&'a [u8], Option<&'a [u8]>)>,
    pub reverse: bool,
    pub limit: i64,
}

/// The most ranges one statement reads: each is a term of a compound SELECT (SQLite allows
/// 500), and the statement's text is cached per count.
pub const RANGES_PER_STATEMENT: usize = 64;

impl<'a> IndexRanges<'a> {
    /// The ranges in scan order, each as a one-range scan, for a source that reads them one
    /// by one.
    pub fn one_by_one(&self) -> Vec<IndexRange<'a>> {
        let mut out: Vec<_> = self
            .ranges
            .iter()
            .map(|&(low, high)| IndexRange {
                index: self.index,
                low,
                high,
                resume: None,
                reverse: self.reverse,
                limit: self.limit,
            })
            .collect();
        if self.reverse {
            out.reverse();
        }
        out
    }
}

/// One index entry with its document.
pub type IndexEntry = (Vec<u8>, RecordId, RawDocumentBuf);

/// One index entry without its document: key, record id and type bits (`None`: written
/// before type bits were recorded).
pub type KeyEntry = (Vec<u8>, RecordId, Option<Vec<u8>>);

/// The document whose `_id` index key is `key`: rows of `(rid, doc)`.
pub(super) fn by_id<'a>(coll: &CollectionMeta, key: &'a [u8]) -> ReadQuery<'a> {
    ReadQuery {
        sql: format!(
            "SELECT c.rid, c.doc FROM {} i JOIN {} c ON c.rid = i.rid WHERE i.key = ?",
            coll.id_index().table(),
            coll.table()
        ),
        params: vec![Param::Blob(key)],
    }
}

/// The document at `rid`: rows of `(doc)`.
pub(super) fn by_rid(coll: &CollectionMeta, rid: RecordId) -> ReadQuery<'static> {
    ReadQuery {
        sql: format!("SELECT doc FROM {} WHERE rid = ?", coll.table()),
        params: vec![Param::Int(rid)],
    }
}

/// Up to `limit` documents after `from` in record-id order, or before it in reverse order:
/// rows of `(rid, doc)`.
pub(super) fn scan(
    coll: &CollectionMeta,
    from: RecordId,
    limit: i64,
    reverse: bool,
) -> ReadQuery<'static> {
    let sql = if reverse {
        format!(
            "SELECT rid, doc FROM {} WHERE rid < ? ORDER BY rid DESC LIMIT ?",
            coll.table()
        )
    } else {
        format!(
            "SELECT rid, doc FROM {} WHERE rid > ? ORDER BY rid LIMIT ?",
            coll.table()
        )
    };
    ReadQuery {
        sql,
        params: vec![Param::Int(from), Param::Int(limit)],
    }
}

/// The rows of an index range: `(key, rid, doc)` when `coll` is given, else
/// `(key, rid, type_bits)`.
pub(super) fn index_range<'a>(
    coll: Option<&CollectionMeta>,
    range: &IndexRange<'a>,
) -> ReadQuery<'a> {
    let mut sql = match coll {
        Some(coll) => format!(
            "SELECT i.key, i.rid, c.doc FROM {} i JOIN {} c ON c.rid = i.rid WHERE ",
            range.index.table(),
            coll.table()
        ),
        None => format!(
            "SELECT i.key, i.rid, i.type_bits FROM {} i WHERE ",
            range.index.table()
        ),
    };
    // A resumed scan seeks straight to where it stopped: the resume key replaces the bound
    // on its side (it lies inside the range), so SQLite starts the B-tree walk there instead
    // of at the range's start and filtering everything read before.
    let low = match (range.resume, range.reverse) {
        (Some((key, _)), false) => key,
        _ => range.low,
    };
    let mut params = vec![Param::Blob(low)];
    sql.push_str("i.key >= ?");
    match (range.resume, range.reverse, range.high) {
        (Some((key, _)), true, _) => {
            sql.push_str(" AND i.key <= ?");
            params.push(Param::Blob(key));
        }
        (_, _, Some(high)) => {
            sql.push_str(" AND i.key < ?");
            params.push(Param::Blob(high));
        }
        _ => {}
    }
    if let Some((key, rid)) = range.resume {
        // Within the bound set by the resume key, `(key, rid)` past it is: a different key,
        // or the same key and a record id past it.
        sql.push_str(if range.reverse {
            " AND (i.key < ? OR i.rid < ?)"
        } else {
            " AND (i.key > ? OR i.rid > ?)"
        });
        params.extend([Param::Blob(key), Param::Int(rid)]);
    }
    sql.push_str(if range.reverse {
        " ORDER BY i.key DESC, i.rid DESC LIMIT ?"
    } else {
        " ORDER BY i.key, i.rid LIMIT ?"
    });
    params.push(Param::Int(range.limit));
    ReadQuery { sql, params }
}

/// The rows of several ranges of one index, in one statement: a `UNION ALL` of one range
/// scan per range, ordered by `(key, rid)`, which SQLite runs as a merge of the ranges' index
/// walks (each already in that order) and stops at the limit. The count of terms is rounded up
/// to a power of two with empty ranges, so a few statement texts serve every count.
pub(super) fn index_ranges<'a>(
    coll: Option<&CollectionMeta>,
    ranges: &IndexRanges<'a>,
) -> ReadQuery<'a> {
    let select = match coll {
        Some(coll) => format!(
            "SELECT i.key, i.rid, c.doc FROM {} i JOIN {} c ON c.rid = i.rid WHERE i.key >= ?",
            ranges.index.table(),
            coll.table()
        ),
        None => format!(
            "SELECT i.key, i.rid, i.type_bits FROM {} i WHERE i.key >= ?",
            ranges.index.table()
        ),
    };
    const EMPTY: (&[u8], Option<&[u8]>) = (&[], Some(&[]));
    let terms = ranges.ranges.len().max(1).next_power_of_two();
    let mut sql = String::with_capacity(terms * (select.len() + 30));
    let mut params = Vec::with_capacity(2 * terms + 1);
    for n in 0..terms {
        let (low, high) = ranges.ranges.get(n).copied().unwrap_or(EMPTY);
        if n > 0 {
            sql.push_str(" UNION ALL ");
        }
        sql.push_str(&select);
        params.push(Param::Blob(low));
        if let Some(high) = high {
            sql.push_str(" AND i.key < ?");
            params.push(Param::Blob(high));
        }
    }
    sql.push_str(if ranges.reverse {
        " ORDER BY 1 DESC, 2 DESC LIMIT ?"
    } else {
        " ORDER BY 1, 2 LIMIT ?"
    });
    params.push(Param::Int(ranges.limit));
    ReadQuery { sql, params }
}

/// The tables of the database file: rows of `(name)`. A transaction's snapshot is pinned by
/// this read, and what it returns tells the collections and indexes the snapshot has.
pub(super) fn tables() -> ReadQuery<'static> {
    ReadQuery {
        sql: "SELECT CAST(name AS BLOB) FROM sqlite_master WHERE type = 'table'".into(),
        params: vec![],
    }
}

/// `(name)`.
pub(super) fn name(row: &dyn ResultRow) -> Result<String> {
    String::from_utf8(row.blob(0)?).map_err(|e| column_error(0, e))
}

/// The smallest key above every key that starts with `key`'s bytes and is longer: the
/// exclusive upper bound of the range holding exactly `key` is `key` followed by a zero byte.
pub(super) fn just_after(key: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(key.len() + 1);
    out.extend_from_slice(key);
    out.push(0);
    out
}

/// The reads of a read view (`ReadTxn`) and of a write transaction (`WriteTxn`): the same
/// statements, each run by `run` on its connection kind's own executor. Generic callers (the
/// executor's access paths) read from either; the futures are `Send` so that they can.
pub trait DocumentReads: Send {
    /// Runs `q` and decodes its rows; `expected_rows` is the statement's limit.
    fn run<T: Send>(
        &mut self,
        q: ReadQuery<'_>,
        expected_rows: i64,
        context: &str,
        decode: fn(&dyn ResultRow) -> Result<T>,
    ) -> impl Future<Output = Result<Vec<T>>> + Send;

    fn fetch_by_id(
        &mut self,
        coll: &CollectionMeta,
        id: &Bson,
    ) -> impl Future<Output = Result<Option<(RecordId, RawDocumentBuf)>>> + Send {
        async move { self.fetch_by_id_key(coll, &id_key(coll, id)).await }
    }

    /// The document whose `_id` index key is `key`.
    fn fetch_by_id_key(
        &mut self,
        coll: &CollectionMeta,
        key: &[u8],
    ) -> impl Future<Output = Result<Option<(RecordId, RawDocumentBuf)>>> + Send {
        async move {
            let rows = self
                .run(by_id(coll, key), 1, "reading by _id", record)
                .await?;
            Ok(rows.into_iter().next())
        }
    }

    /// Index entries in the range with their documents.
    fn index_scan(
        &mut self,
        coll: &CollectionMeta,
        range: &IndexRange<'_>,
    ) -> impl Future<Output = Result<Vec<IndexEntry>>> + Send {
        let q = index_range(Some(coll), range);
        self.run(q, range.limit, "scanning an index", index_entry)
    }

    /// Index entries without their documents.
    fn index_keys(
        &mut self,
        range: &IndexRange<'_>,
    ) -> impl Future<Output = Result<Vec<KeyEntry>>> + Send {
        let q = index_range(None, range);
        self.run(q, range.limit, "scanning an index", key_entry)
    }

    /// Entries of several ranges with their documents, in one statement.
    fn index_scan_ranges(
        &mut self,
        coll: &CollectionMeta,
        ranges: &IndexRanges<'_>,
    ) -> impl Future<Output = Result<Vec<IndexEntry>>> + Send {
        let q = index_ranges(Some(coll), ranges);
        self.run(q, ranges.limit, "scanning an index", index_entry)
    }

    /// Entries of several ranges without their documents, in one statement.
    fn index_keys_ranges(
        &mut self,
        ranges: &IndexRanges<'_>,
    ) -> impl Future<Output = Result<Vec<KeyEntry>>> + Send {
        let q = index_ranges(None, ranges);
        self.run(q, ranges.limit, "scanning an index", key_entry)
    }

    fn fetch_by_rid(
        &mut self,
        coll: &CollectionMeta,
        rid: RecordId,
    ) -> impl Future<Output = Result<Option<RawDocumentBuf>>> + Send {
        async move {
            let q = by_rid(coll, rid);
            let rows = self.run(q, 1, "reading by record id", doc_only).await?;
            Ok(rows.into_iter().next())
        }
    }

    /// Up to `limit` documents with record ids above `after`, in record-id order.
    fn scan(
        &mut self,
        coll: &CollectionMeta,
        after: RecordId,
        limit: i64,
    ) -> impl Future<Output = Result<Vec<(RecordId, RawDocumentBuf)>>> + Send {
        let q = scan(coll, after, limit, false);
        self.run(q, limit, "scanning a collection", record)
    }

    /// Up to `limit` documents with record ids below `before`, newest first.
    fn scan_reverse(
        &mut self,
        coll: &CollectionMeta,
        before: RecordId,
        limit: i64,
    ) -> impl Future<Output = Result<Vec<(RecordId, RawDocumentBuf)>>> + Send {
        let q = scan(coll, before, limit, true);
        self.run(q, limit, "scanning a collection", record)
    }
}

/// A result row of either connection kind, read by column.
pub trait ResultRow {
    fn int(&self, column: usize) -> Result<i64>;
    fn blob(&self, column: usize) -> Result<Vec<u8>>;
    fn optional_blob(&self, column: usize) -> Result<Option<Vec<u8>>>;
}

/// `(rid, doc)`.
pub(super) fn record(row: &dyn ResultRow) -> Result<(RecordId, RawDocumentBuf)> {
    Ok((row.int(0)?, document(row.blob(1)?)?))
}

/// `(doc)`.
pub(super) fn doc_only(row: &dyn ResultRow) -> Result<RawDocumentBuf> {
    document(row.blob(0)?)
}

/// `(key, rid, doc)`.
pub(super) fn index_entry(row: &dyn ResultRow) -> Result<IndexEntry> {
    Ok((row.blob(0)?, row.int(1)?, document(row.blob(2)?)?))
}

/// `(key, rid, type_bits)`.
pub(super) fn key_entry(row: &dyn ResultRow) -> Result<KeyEntry> {
    Ok((row.blob(0)?, row.int(1)?, row.optional_blob(2)?))
}

pub(super) fn document(bytes: Vec<u8>) -> Result<RawDocumentBuf> {
    RawDocumentBuf::from_bytes(bytes)
        .map_err(|e| MongoError::internal(format!("corrupt document in storage: {e}")))
}

/// A column that does not have the type its statement gives it.
pub(super) fn column_error(column: usize, e: impl std::fmt::Display) -> MongoError {
    MongoError::internal(format!("storage error reading column {column}: {e}"))
}
