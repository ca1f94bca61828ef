//! What explain shows for the plans of `$text` and `$near`, as MongoDB's classic engine: a
//! text search is TEXT_MATCH (the index, its prefix equalities and the parsed query) over
//! TEXT_OR (when the text score is wanted) or FETCH over OR, with an IXSCAN of the text index
//! per term (one term: FETCH over the IXSCAN); a `$near` is GEO_NEAR_2DSPHERE or GEO_NEAR_2D
//! on its index, under a FETCH when other predicates remain.

use super::super::plan::IndexScanPlan;
use super::super::text::text_argument;
use super::{Execution, ExplainedQuery, StageTree, conjuncts, exact, index_fields, number};
use crate::datanode::storage::IndexMeta;
use crate::expression::meta::{MetaKind, kinds_read};
use crate::query::bounds::{FieldBounds, field_bounds};
use crate::query::text::TextSearch;
use bson::{Bson, Document, doc};

/// The predicates other than `$text` (and, for a text plan, the equalities on the index's
/// prefix) that a FETCH or TEXT_OR still checks.
fn residual(filter: &Document, tight: &[String]) -> Document {
    let remaining: Vec<Document> = conjuncts(filter)
        .into_iter()
        .filter(|pred| !pred.contains_key("$text") && !pred.contains_key("$comment"))
        .filter(|pred| !exact(pred, tight, false))
        .collect();
    match remaining.len() {
        0 => Document::new(),
        1 => remaining.into_iter().next().expect("one predicate"),
        _ => doc! {"$and": remaining.into_iter().map(Bson::Document).collect::<Vec<_>>()},
    }
}

/// Whether the query wants the text score (a sort or projection by `{$meta: "textScore"}`).
fn wants_score(query: &ExplainedQuery<'_>) -> bool {
    let mut kinds = Vec::new();
    for part in [query.sort, query.projection].into_iter().flatten() {
        kinds_read(&Bson::Document(part.clone()), &mut kinds);
    }
    kinds.contains(&MetaKind::TextScore)
}

/// Pushes the stages of a text plan; false when `plan` does not read a text index.
pub(super) fn push_text(
    tree: &mut StageTree,
    plan: &IndexScanPlan,
    query: &ExplainedQuery<'_>,
    run: &Execution,
) -> bool {
    let Some(text) = plan.index.parsed.as_ref().and_then(|p| p.text.clone()) else {
        return false;
    };
    let Some(search) = text_argument(query.filter).and_then(|a| TextSearch::parse(a).ok()) else {
        return false;
    };
    let parsed = search.against(&text);
    let mut prefix = Document::new();
    for path in &text.prefix {
        if let Some(FieldBounds::Points(points)) = field_bounds(query.filter, path, false) {
            if let [value] = points.as_slice() {
                prefix.insert(path.clone(), value.clone());
            }
        }
    }
    let scans = parsed.terms_for_bounds.len();
    let mut scan = index_fields(
        Some(&plan.index),
        &plan.index.key_pattern(),
        "backward",
        Document::new(),
    );
    // A text index is multikey by nature: a key per term.
    scan.insert("isMultiKey", true);
    scan.remove("multiKeyPaths");
    let filter = residual(query.filter, &text.prefix);
    let with_filter = |mut fields: Document| {
        if !filter.is_empty() {
            fields.insert("filter", filter.clone());
        }
        fields
    };
    let fetched = run.matched + run.examined.chunk_skips;
    let keys = doc! {"keysExamined": number(run.examined.keys)};
    let docs = doc! {"docsExamined": number(run.examined.docs)};
    if scans == 1 && !wants_score(query) {
        tree.push("IXSCAN", scan, run.examined.docs, keys);
        tree.push("FETCH", with_filter(Document::new()), fetched, docs);
    } else {
        let per_scan = run.keys_per_scan.len() == scans;
        let inputs = (0..scans)
            .map(|i| {
                let plain: Document = doc! {"stage": "IXSCAN"}
                    .into_iter()
                    .chain(scan.clone())
                    .collect();
                let mut stats = doc! {"stage": "IXSCAN"};
                if per_scan {
                    let keys = run.keys_per_scan[i];
                    stats.insert("nReturned", number(keys));
                    stats.insert("executionTimeMillisEstimate", number(run.millis));
                    stats.insert("keysExamined", number(keys));
                }
                stats.extend(scan.clone());
                (plain, stats)
            })
            .collect();
        if wants_score(query) {
            tree.push("TEXT_OR", with_filter(Document::new()), fetched, docs);
            tree.set_inputs(inputs);
        } else {
            tree.push("OR", Document::new(), run.examined.docs, Document::new());
            tree.set_inputs(inputs);
            tree.push("FETCH", with_filter(Document::new()), fetched, docs);
        }
    }
    let fields = doc! {
        "indexPrefix": prefix,
        "indexName": plan.index.name.clone(),
        "parsedTextQuery": parsed.explain(),
        "textIndexVersion": 3,
    };
    let rejected = doc! {"docsRejected": number(fetched.saturating_sub(run.matched))};
    tree.push("TEXT_MATCH", fields, fetched, rejected);
    true
}

/// Pushes the stages of a `$near`: GEO_NEAR_2DSPHERE or GEO_NEAR_2D on `index`, under a FETCH
/// with the other predicates.
pub(super) fn push_near(
    tree: &mut StageTree,
    index: &IndexMeta,
    spherical: bool,
    filter: &Document,
    run: &Execution,
) {
    let name = if spherical {
        "GEO_NEAR_2DSPHERE"
    } else {
        "GEO_NEAR_2D"
    };
    let fields = doc! {
        "keyPattern": index.key_pattern(),
        "indexName": index.name.clone(),
        "indexVersion": 2,
    };
    let mut stats = doc! {"keysExamined": number(run.examined.keys)};
    stats.insert("docsExamined", number(run.examined.docs));
    let near_free: Vec<Document> = conjuncts(filter)
        .into_iter()
        .filter(|pred| !is_near(pred))
        .collect();
    let fetched = run.matched + run.examined.chunk_skips;
    tree.push(name, fields, fetched, stats);
    if !near_free.is_empty() {
        let filter = match near_free.len() {
            1 => near_free.into_iter().next().expect("one predicate"),
            _ => doc! {"$and": near_free.into_iter().map(Bson::Document).collect::<Vec<_>>()},
        };
        tree.push("FETCH", doc! {"filter": filter}, fetched, Document::new());
    }
}

/// Whether a predicate is part of the `$near`/`$nearSphere` itself (its distance bounds
/// included), which the GEO_NEAR stage answers.
fn is_near(pred: &Document) -> bool {
    const NEAR: [&str; 4] = ["$near", "$nearSphere", "$maxDistance", "$minDistance"];
    pred.values().any(|ops| {
        matches!(ops, Bson::Document(ops) if ops.keys().any(|op| NEAR.contains(&op.as_str())))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_fetch_still_checks() {
        let filter = doc! {"$text": {"$search": "x"}, "cat": 1, "n": {"$gt": 2}};
        assert_eq!(
            residual(&filter, &["cat".to_string()]),
            doc! {"n": {"$gt": 2}}
        );
        assert!(residual(&doc! {"$text": {"$search": "x"}}, &[]).is_empty());
        assert!(is_near(&doc! {"loc": {"$near": [0, 0]}}));
        assert!(is_near(&doc! {"loc": {"$maxDistance": 3}}));
        assert!(!is_near(&doc! {"_id": {"$lt": 5}}));
    }
}
