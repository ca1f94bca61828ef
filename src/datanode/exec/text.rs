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
pub(super) fn text_argument(filter: &Document) -> Option<&Bson> {
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
    let under_or = text_or_branches(shape.filter);
    let argument = match under_or {
        Some((_, branches)) => branches
            .iter()
            .find_map(|b| b.as_document().and_then(text_argument)),
        None => text_argument(shape.filter),
    };
    let Some(argument) = argument else {
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
    let Some((root, branches)) = under_or else {
        let plan = text_plan(index, &text, shape.filter, argument)?;
        return Ok(Some(AccessPath::IndexScan(Arc::new(plan))));
    };
    // TEXT_OR for the `$text` branch, an index scan for each other branch, as MongoDB plans
    // it: a branch no index serves fails the query.
    let mut plans = Vec::with_capacity(branches.len());
    for branch in branches {
        let Bson::Document(branch) = branch else {
            return Err(no_text_or_plan(root));
        };
        if text_argument(branch).is_some() {
            plans.push(Arc::new(text_plan(index, &text, branch, argument)?));
            continue;
        }
        let shape = QueryShape {
            collation: shape.collation,
            ..QueryShape::filter(branch)
        };
        let plan =
            super::plan::best_index_scan(coll, &shape).ok_or_else(|| no_text_or_plan(root))?;
        plans.push(Arc::new(plan));
    }
    Ok(Some(AccessPath::Union(Arc::new(plans))))
}

/// The branches of the `$or` holding the filter's `$text` (at the top level or in a top-level
/// `$and`), and whether that `$or` is the whole filter.
fn text_or_branches(filter: &Document) -> Option<(bool, &Vec<Bson>)> {
    fn find(filter: &Document) -> Option<&Vec<Bson>> {
        filter
            .iter()
            .find_map(|(name, value)| match (name.as_str(), value) {
                ("$or", Bson::Array(branches))
                    if branches
                        .iter()
                        .any(|b| b.as_document().is_some_and(|b| text_argument(b).is_some())) =>
                {
                    Some(branches)
                }
                ("$and", Bson::Array(items)) => items
                    .iter()
                    .find_map(|item| item.as_document().and_then(find)),
                _ => None,
            })
    }
    let branches = find(filter)?;
    Some((filter.len() == 1 && filter.contains_key("$or"), branches))
}

/// MongoDB's refusal of a `$text` under `$or` beside a branch no index serves (its legible
/// message when the `$or` is the whole query).
fn no_text_or_plan(root: bool) -> MongoError {
    let reason = if root {
        "Failed to produce a solution for TEXT under OR - other non-TEXT clauses under OR have to be indexed as well."
    } else {
        "No query solutions"
    };
    MongoError::new(
        ErrorCode::NoQueryExecutionPlans,
        format!("error processing query: planner returned error :: caused by :: {reason}"),
    )
}

/// The scan of the text index's keys under the search's terms, after the equalities `filter`
/// gives its prefix fields.
fn text_plan(
    index: &IndexMeta,
    text: &TextIndex,
    filter: &Document,
    argument: &Bson,
) -> Result<IndexScanPlan> {
    let query = TextSearch::parse(argument)?.against(text);
    let mut bounding = Document::new();
    for path in &text.prefix {
        match field_bounds(filter, path, false) {
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
    Ok(IndexScanPlan {
        index: index.clone(),
        intervals: intervals.intervals,
        reverse: false,
        provides_sort: false,
        bounds: intervals.bounds,
        wildcard: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_or_holding_the_text_search() {
        let text = doc! {"$text": {"$search": "x"}};
        let root = doc! {"$or": [text.clone(), {"a": 1}]};
        let (whole, branches) = text_or_branches(&root).unwrap();
        assert!(whole);
        assert_eq!(branches.len(), 2);
        let nested = doc! {"b": 1, "$and": [{"$or": [{"a": 1}, text.clone()]}]};
        assert!(!text_or_branches(&nested).unwrap().0);
        assert!(text_or_branches(&text).is_none());
        assert!(text_or_branches(&doc! {"$or": [{"a": 1}, {"b": 1}]}).is_none());
        let err = no_text_or_plan(true);
        assert_eq!(err.code(), ErrorCode::NoQueryExecutionPlans);
        assert!(err.message().ends_with(
            "Failed to produce a solution for TEXT under OR - other non-TEXT clauses under OR have to be indexed as well."
        ));
        assert!(
            no_text_or_plan(false)
                .message()
                .ends_with("No query solutions")
        );
    }
}
