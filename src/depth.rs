//! How deep documents may nest — MongoDB's `maxBSONDepth` and the storage limit below it — and
//! the stack that recursion over nested values needs.
//!
//! Incoming messages are refused past `maxBSONDepth` when they are read, and stored documents
//! past [`max_depth_for_user_storage`], so every walk over client input is bounded by those
//! depths. Values computed while a command runs (a pipeline wrapping documents stage after stage,
//! a `$reduce` nesting its accumulator) can go deeper: the walks over them grow their stack on
//! the heap ([`recurse`]) instead of overflowing it, and [`check_output`] refuses a result deeper
//! than a client may receive, as MongoDB refuses to turn such a value into BSON.

use crate::error::{ErrorCode, MongoError, Result};
use bson::{Bson, Document, RawBsonRef, RawDocument};
use futures::future::BoxFuture;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};

/// MongoDB's default `maxBSONDepth`: nested objects a document may have below its top level.
pub const DEFAULT_MAX_BSON_DEPTH: usize = 200;
/// The levels MongoDB keeps above the storage limit for what it wraps around a stored document
/// (commands, oplog entries, replies): the storage limit is `maxBSONDepth` less these.
pub const EXTRA_SYSTEM_DEPTH_LEVELS: usize = 20;
/// The smallest `maxBSONDepth` MongoDB starts with (the storage limit stays at least 1).
pub const MIN_MAX_BSON_DEPTH: usize = EXTRA_SYSTEM_DEPTH_LEVELS + 1;
/// The largest `maxBSONDepth` MongoDB 8.0 starts with.
pub const MAX_MAX_BSON_DEPTH: usize = 250;

static MAX_BSON_DEPTH: AtomicUsize = AtomicUsize::new(DEFAULT_MAX_BSON_DEPTH);

/// The process's `maxBSONDepth`: how many levels of nested documents and arrays a message may
/// have.
pub fn max_bson_depth() -> usize {
    MAX_BSON_DEPTH.load(Ordering::Relaxed)
}

/// Sets `maxBSONDepth` (a startup parameter, as in MongoDB); refuses values outside MongoDB's
/// range.
pub fn set_max_bson_depth(depth: usize) -> std::result::Result<(), String> {
    if !(MIN_MAX_BSON_DEPTH..=MAX_MAX_BSON_DEPTH).contains(&depth) {
        return Err(format!(
            "maxBSONDepth must be between {MIN_MAX_BSON_DEPTH} and {MAX_MAX_BSON_DEPTH}, inclusive"
        ));
    }
    MAX_BSON_DEPTH.store(depth, Ordering::Relaxed);
    Ok(())
}

/// How many levels a stored document may have (180 by default).
pub fn max_depth_for_user_storage() -> usize {
    max_bson_depth() - EXTRA_SYSTEM_DEPTH_LEVELS
}

/// Stack a recursive step needs free before it runs: enough for the frames between two guarded
/// steps, including a library's own recursion over a value no deeper than `maxBSONDepth`
/// (serializing or dropping it) from a leaf, in an unoptimized build.
const RED_ZONE: usize = 1024 * 1024;
/// The segment allocated when less than [`RED_ZONE`] is left.
const SEGMENT: usize = 8 * 1024 * 1024;

/// Runs one step of a recursion over nested values: on the current stack while at least
/// [`RED_ZONE`] is left, otherwise on a new segment allocated on the heap. Recursions over
/// input call it where they descend into a nested document, array or expression, so that
/// nesting the stack of a thread cannot hold (computed values, a thread with a small stack)
/// costs memory, never the process.
#[inline]
pub fn recurse<R>(step: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(RED_ZONE, SEGMENT, step)
}

/// Stack a command handler gets at each poll: what a walk over a `maxBSONDepth`-deep message
/// needs in an unoptimized build, with room to spare. The server's threads have more (see
/// `THREAD_STACK_SIZE`), so this only allocates on threads it does not create (tests, embedders).
const HANDLER_STACK: usize = 4 * 1024 * 1024;
const HANDLER_SEGMENT: usize = 16 * 1024 * 1024;

/// Stack size of the threads the server's runtime creates.
pub const THREAD_STACK_SIZE: usize = 16 * 1024 * 1024;

/// A command handler's future, polled with at least [`HANDLER_STACK`] of stack.
pub struct WithStack<'a, T> {
    inner: BoxFuture<'a, T>,
}

impl<'a, T> WithStack<'a, T> {
    pub fn new(inner: BoxFuture<'a, T>) -> Self {
        WithStack { inner }
    }
}

impl<T> Future for WithStack<'_, T> {
    type Output = T;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        let inner = &mut self.inner;
        stacker::maybe_grow(HANDLER_STACK, HANDLER_SEGMENT, || inner.as_mut().poll(cx))
    }
}

/// Whether `doc` has more than `limit` levels of non-empty documents and arrays (the document
/// itself is the first; empty ones do not count, as in MongoDB's storage check). Iterative: the
/// document may be arbitrarily deep.
fn raw_exceeds(doc: &RawDocument, limit: usize) -> Result<bool> {
    enum Level<'a> {
        Doc(bson::raw::RawIter<'a>),
        Array(bson::raw::RawArrayIter<'a>),
    }
    let mut levels = vec![Level::Doc(doc.iter_elements())];
    while let Some(top) = levels.last_mut() {
        let next = match top {
            Level::Doc(iter) => iter.next().map(|e| e.and_then(|e| e.value())),
            Level::Array(iter) => iter.next(),
        };
        let Some(value) = next else {
            levels.pop();
            continue;
        };
        let child = match value? {
            RawBsonRef::Document(d) if !d.is_empty() => Level::Doc(d.iter_elements()),
            RawBsonRef::Array(a) if !a.is_empty() => Level::Array(a.into_iter()),
            _ => continue,
        };
        if levels.len() == limit {
            return Ok(true);
        }
        levels.push(child);
    }
    Ok(false)
}

/// Whether `value` has more than `limit` levels of documents and arrays, itself being the first
/// when it is one. Iterative.
fn exceeds(value: &Bson, limit: usize) -> bool {
    enum Level<'a> {
        Doc(bson::document::Iter<'a>),
        Array(std::slice::Iter<'a, Bson>),
    }
    fn level(value: &Bson) -> Option<Level<'_>> {
        match value {
            Bson::Document(d) => Some(Level::Doc(d.iter())),
            Bson::Array(a) => Some(Level::Array(a.iter())),
            _ => None,
        }
    }
    let Some(first) = level(value) else {
        return false;
    };
    if limit == 0 {
        return true;
    }
    let mut levels = vec![first];
    while let Some(top) = levels.last_mut() {
        let next = match top {
            Level::Doc(iter) => iter.next().map(|(_, v)| v),
            Level::Array(iter) => iter.next(),
        };
        let Some(value) = next else {
            levels.pop();
            continue;
        };
        let Some(child) = level(value) else {
            continue;
        };
        if levels.len() == limit {
            return true;
        }
        levels.push(child);
    }
    false
}

/// Refuses a document to insert that nests deeper than MongoDB stores.
pub fn check_insert(doc: &RawDocument) -> Result<()> {
    let limit = max_depth_for_user_storage();
    if raw_exceeds(doc, limit)? {
        return Err(MongoError::new(
            ErrorCode::Overflow,
            format!("cannot insert document because it exceeds {limit} levels of nesting"),
        ));
    }
    Ok(())
}

/// Refuses the result of an update that nests deeper than MongoDB stores.
pub fn check_update(doc: &RawDocument) -> Result<()> {
    let limit = max_depth_for_user_storage();
    if raw_exceeds(doc, limit)? {
        return Err(MongoError::new(
            ErrorCode::Overflow,
            format!("Document exceeds maximum nesting depth of {limit}"),
        ));
    }
    Ok(())
}

/// Refuses a computed document deeper than a message may be, as MongoDB refuses to convert such
/// a value to BSON.
pub fn check_output(doc: &Document) -> Result<()> {
    let limit = max_bson_depth();
    let deeper = doc.values().any(|value| exceeds(value, limit - 1));
    if deeper {
        return Err(too_deep_for_bson());
    }
    Ok(())
}

/// Whether a computed value, placed in a document, would nest deeper than a message may.
pub fn value_too_deep(value: &Bson) -> bool {
    exceeds(value, max_bson_depth() - 1)
}

/// MongoDB's error for a value too deep to become BSON.
pub fn too_deep_for_bson() -> MongoError {
    MongoError::new(
        ErrorCode::Overflow,
        format!(
            "cannot convert document to BSON because it exceeds the limit of {} levels of nesting",
            max_bson_depth()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{RawDocumentBuf, doc};

    fn nested(levels: usize, leaf: Bson) -> Document {
        let mut value = leaf;
        for _ in 1..levels {
            value = Bson::Document(doc! {"a": value});
        }
        doc! {"a": value}
    }

    #[test]
    fn storage_depth_counts_levels_as_mongodb_does() {
        let limit = max_depth_for_user_storage();
        let at_limit = RawDocumentBuf::from_document(&nested(limit, Bson::Int32(1))).unwrap();
        assert!(check_insert(&at_limit).is_ok());
        let over = RawDocumentBuf::from_document(&nested(limit + 1, Bson::Int32(1))).unwrap();
        let err = check_insert(&over).unwrap_err();
        assert_eq!(err.code(), ErrorCode::Overflow);
        assert_eq!(
            err.message(),
            "cannot insert document because it exceeds 180 levels of nesting"
        );
        assert_eq!(
            check_update(&over).unwrap_err().message(),
            "Document exceeds maximum nesting depth of 180"
        );
        // Empty documents and arrays at the next level do not count.
        let empty_below =
            RawDocumentBuf::from_document(&nested(limit, Bson::Document(doc! {}))).unwrap();
        assert!(check_insert(&empty_below).is_ok());
        let empty_array =
            RawDocumentBuf::from_document(&nested(limit, Bson::Array(vec![]))).unwrap();
        assert!(check_insert(&empty_array).is_ok());
        let array_below =
            RawDocumentBuf::from_document(&nested(limit, Bson::Array(vec![Bson::Int32(1)])))
                .unwrap();
        assert!(check_insert(&array_below).is_err());
    }

    #[test]
    fn output_depth_is_maxbsondepth() {
        let ok = nested(max_bson_depth(), Bson::Int32(1));
        assert!(check_output(&ok).is_ok());
        let over = nested(max_bson_depth() + 1, Bson::Int32(1));
        assert_eq!(
            check_output(&over).unwrap_err().message(),
            "cannot convert document to BSON because it exceeds the limit of 200 levels of nesting"
        );
    }

    #[test]
    fn recursion_deeper_than_the_thread_stack_grows_it() {
        fn depth_of(value: &Bson) -> usize {
            recurse(|| match value {
                Bson::Document(d) => 1 + d.values().map(depth_of).max().unwrap_or(0),
                _ => 0,
            })
        }
        // Built and dropped iteratively would need a custom Drop; keep it to a depth the bson
        // crate's own recursive Drop survives on a 2 MiB test thread, but far deeper than an
        // unguarded recursion with these frames would.
        let depth = 5_000;
        let value = std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(move || {
                let mut value = Bson::Int32(1);
                for _ in 0..depth {
                    value = Bson::Document(doc! {"a": value});
                }
                let measured = depth_of(&value);
                std::mem::forget(value);
                measured
            })
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(value, depth);
    }
}
