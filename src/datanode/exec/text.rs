//! `$text` on a data node: the filter's search bound to the collection's one text index (a
//! filter naming `$text` without one, or on a collection that does not exist, fails with
//! IndexNotFound as in MongoDB), and the scan of the text index's keys under the search's
//! terms that finds the candidates. Each fetched document is then matched and scored from its
//! own text by the index's specification: the score its keys hold.

use super::plan::{AccessPath, IndexScanPlan, QueryShape, fields_of, key_parts};
use crate::datanode::index::stored_term;
use crate::datanode::storage::{CollectionMeta, IndexMeta};
use crate::error::{ErrorCode, MongoError, Result};
use crate::query::bounds::{FieldBounds, field_bounds};
use crate::query::filter::Filter;
use crate::query::key_intervals::key_intervals;
use crate::query::text::{TextIndex, TextSearch};
use bson::{Bson, Document, doc};
use std::borrow::Cow;
use std::sync::Arc;

/// The collection's text index, with its catalog entry (not while it builds, nor hidden).
fn usable_text_index(coll: &CollectionMeta) -> Option<(&IndexMeta, Arc<TextIndex>)> {
    coll.indexes.iter().find_map(|index| {
        let spec = index.parsed.as_ref()?;
        let text = spec.text.clone()?;
        (index.ready && !spec.hidden).then_some((index, text))
    })
}

/// The collection's text index.
pub fn text_index(coll: &CollectionMeta) -> Option<Arc<TextIndex>> {
    usable_text_index(coll).map(|(_, text)| text)
}

/// Binds the filter's `$text` (if any) to `coll`'s text index; `None`: the collection does not
/// exist.
pub fn bind_text(filter: &mut Filter, coll: Option<&CollectionMeta>) -> Result<()> {
    if !filter.has_text() {
        return Ok(());
    }
    match coll {
        Some(coll) => filter.bind_text(text_index(coll)),
        None => Err(MongoError::new(
            ErrorCode::IndexNotFound,
            "text index required for $text query (no such collection)",
        )),
    }
}

/// The filter with its `$text` (if any) bound to `coll`'s text index: the filter itself when
/// it has none.
pub fn bound_text<'a>(filter: &'a Filter, coll: &CollectionMeta) -> Result<Cow<'a, Filter>> {
    if !filter.has_text() {
        return Ok(Cow::Borrowed(filter));
    }
    let mut bound = filter.clone();
    bind_text(&mut bound, Some(coll))?;
    Ok(Cow::Owned(bound))
}

/// The value of the filter's `$text` (top level, or in a top-level `$and`).
fn text_argument(filter: &Document) -> Option<&Bson> {
    filter.get("$text").or_else(|| match filter.get("$and") {
        Some(Bson::Array(branches)) => branches.iter().find_map(|branch| match branch {
            Bson::Document(branch) => text_argument(branch),
            _ => None,
        }),
        _ => None,
    })
}

/// How a `$text` query reads, as MongoDB's text plan does: the keys of the text index under
/// each of the search's terms (after the equalities its prefix fields must have), each
/// document once; the filter then checks phrases, negations and the other predicates on the
/// fetched documents. `None` when the filter has no `$text` or the collection no text index
/// (binding the filter reports that).
pub(super) fn text_scan(
    coll: &CollectionMeta,
    shape: &QueryShape<'_>,
) -> Result<Option<AccessPath>> {
    let Some(argument) = text_argument(shape.filter) else {
        return Ok(None);
    };
    let Some((index, text)) = usable_text_index(coll) else {
        return Ok(None);
    };
    if shape.hint.is_some() {
        return Err(MongoError::bad_value(
            "text and hint not allowed in same query",
        ));
    }
    let query = TextSearch::parse(argument)?.against(&text);
    let mut bounding = Document::new();
    for path in &text.prefix {
        match field_bounds(shape.filter, path, false) {
            Some(FieldBounds::Points(points)) if points.len() == 1 => {
                bounding.insert(path.clone(), doc! {"$eq": points[0].clone()});
            }
            _ => {
                return Err(MongoError::new(
                    ErrorCode::NoQueryExecutionPlans,
                    "error processing query: planner returned error :: caused by :: failed to use text index to satisfy $text query (if text index is compound, are equality predicates given for all prefix fields?)",
                ));
            }
        }
    }
    let terms: Vec<Bson> = query
        .terms_for_bounds
        .iter()
        .map(|term| Bson::String(stored_term(term)))
        .collect();
    bounding.insert("_fts", doc! {"$in": terms});
    let fields = fields_of(index);
    // A text index compounds only with ascending and descending fields.
    let no_intervals =
        || MongoError::new(ErrorCode::InternalError, "no key intervals for a text scan");
    let parts = key_parts(&fields).ok_or_else(no_intervals)?;
    let intervals = key_intervals(&parts, &bounding, false).ok_or_else(no_intervals)?;
    Ok(Some(AccessPath::IndexScan(Arc::new(IndexScanPlan {
        index: index.clone(),
        intervals: intervals.intervals,
        reverse: false,
        provides_sort: false,
        bounds: intervals.bounds,
        wildcard: None,
    }))))
}
