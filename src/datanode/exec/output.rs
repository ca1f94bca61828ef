//! What a find returns for each matching document: the document through its projection (with
//! the metadata its `{$meta}` fields read: record id, index key, sort key, `$near` distance and
//! point), with `$recordId` appended (`showRecordId`), or only the index key it was found by
//! (`returnKey`); with `$sortKey` appended when a router merging several shards' results asked
//! for it.

use super::plan::{AccessPath, IndexScanPlan};
use crate::datanode::index::FieldKind;
use crate::datanode::storage::RecordId;
use crate::document::{hashed, keystring};
use crate::error::Result;
use crate::expression::meta::MetaKind;
use crate::query::filter::Filter;
use crate::query::projection::{FindMetadata, Projection};
use crate::query::sort::{GEO_NEAR_DISTANCE_FIELD, SortSpec, TEXT_SCORE_FIELD};
use bson::{Bson, Document, RawDocumentBuf};
use std::sync::Arc;

/// The field `showRecordId` adds, and that carries the record id through a blocking sort.
pub const RECORD_ID_FIELD: &str = "$recordId";

/// The field a router asks for with `{$sortKey: {$meta: "sortKey"}}` in the projection: the
/// document's sort key as `{"": v1, "": v2, ...}`, which the router merges shard streams by.
pub const SORT_KEY_FIELD: &str = "$sortKey";

/// Takes the router's `$sortKey` request out of a projection (an empty projection then means
/// none); returns whether it was there.
pub fn take_sort_key_request(projection: &mut Option<Document>) -> bool {
    let Some(p) = projection else { return false };
    let requested = matches!(
        p.get(SORT_KEY_FIELD),
        Some(Bson::Document(meta)) if meta.len() == 1 && meta.get_str("$meta") == Ok("sortKey")
    );
    if requested {
        p.remove(SORT_KEY_FIELD);
        if p.is_empty() {
            *projection = None;
        }
    }
    requested
}

/// Most key combinations tried when looking for the key a multikey index found a document by.
const MAX_KEY_COMBINATIONS: usize = 1000;

/// How returned documents are shaped.
pub struct FindOutput {
    pub projection: Option<Projection>,
    /// The query, kept when the projection has a positional `$` (which projects the array
    /// element the query matched).
    positional_query: Option<Filter>,
    pub show_record_id: bool,
    /// `returnKey`: only the index key is returned.
    pub return_key: bool,
    /// The index the documents come from (`None`: a collection scan, whose `returnKey` keys
    /// are empty documents), when `returnKey` or `{$meta: "indexKey"}` asks for keys.
    key_source: Option<KeySource>,
    /// The sort whose key is appended as [`SORT_KEY_FIELD`].
    pub sort_key: Option<SortSpec>,
    /// The find's sort, whose keys `{$meta: "sortKey"}` reads.
    meta_sort: Option<SortSpec>,
    /// Documents carry their `$near` distance under [`GEO_NEAR_DISTANCE_FIELD`] for a sort by
    /// `{$meta: "geoNearDistance"}` (left out of what is returned).
    carries_distance: bool,
}

/// What a `$near` measured for one document.
pub struct NearMetadata {
    pub distance: f64,
    pub point: Option<Bson>,
}

pub enum KeySource {
    Id,
    /// The scans the documents come from (several for a union: the first that holds a key of
    /// the document is the one that found it).
    Indexes(Vec<Arc<IndexScanPlan>>),
    None,
}

impl KeySource {
    /// Where the keys of documents read through `path` come from.
    pub fn of_path(path: &AccessPath) -> KeySource {
        match path {
            AccessPath::IdPoint(_) => KeySource::Id,
            AccessPath::IndexScan(plan) => KeySource::Indexes(vec![plan.clone()]),
            AccessPath::Union(plans) => KeySource::Indexes(plans.as_ref().clone()),
            AccessPath::CollScan { .. } => KeySource::None,
        }
    }

    /// The key of the index scan that found `doc` (`None` for any other read), what
    /// `{$meta: "indexKey"}` reads.
    pub fn scanned_key(&self, doc: &Document) -> Option<Document> {
        matches!(self, KeySource::Indexes(_)).then(|| key_document(self, doc))
    }
}

impl FindOutput {
    pub fn new(
        projection: Option<Projection>,
        query: &Filter,
        show_record_id: bool,
        return_key: bool,
        path: &AccessPath,
    ) -> FindOutput {
        let wants_keys = return_key
            || projection
                .as_ref()
                .is_some_and(|p| p.reads_meta(MetaKind::IndexKey));
        let key_source = wants_keys.then(|| KeySource::of_path(path));
        let positional_query = projection
            .as_ref()
            .is_some_and(Projection::needs_query)
            .then(|| query.clone());
        FindOutput {
            projection,
            positional_query,
            show_record_id,
            return_key,
            key_source,
            sort_key: None,
            meta_sort: None,
            carries_distance: false,
        }
    }

    /// Documents carry their `$near` distance for a sort by it (see `carries_distance`).
    pub fn carrying_distance(mut self, carries: bool) -> FindOutput {
        self.carries_distance = carries;
        self
    }

    /// The find's sort, for `{$meta: "sortKey"}` fields.
    pub fn with_meta_sort(mut self, sort: SortSpec) -> FindOutput {
        self.meta_sort = Some(sort);
        self
    }

    /// Whether the projection reads the record id (which a blocking sort must then carry).
    pub fn reads_record_id(&self) -> bool {
        self.projection
            .as_ref()
            .is_some_and(|p| p.reads_meta(MetaKind::RecordId))
    }

    /// Appends each document's key under `sort` as [`SORT_KEY_FIELD`].
    pub fn with_sort_key(mut self, sort: SortSpec) -> FindOutput {
        self.sort_key = Some(sort);
        self
    }

    /// Nothing to change: the stored bytes can be returned as they are.
    pub fn is_identity(&self) -> bool {
        self.projection.is_none()
            && !self.show_record_id
            && !self.return_key
            && self.sort_key.is_none()
    }

    /// The returned form of a document found at `rid`.
    pub fn render(&self, rid: RecordId, doc: &Document) -> Result<RawDocumentBuf> {
        self.render_with(rid, doc, None)
    }

    /// The returned form of a document found at `rid` by a `$near` (`near`) or another scan.
    pub fn render_with(
        &self,
        rid: RecordId,
        doc: &Document,
        near: Option<NearMetadata>,
    ) -> Result<RawDocumentBuf> {
        // A document sorted by text score (or `$near` distance) carries it for the sort key
        // only.
        let carried_distance = self.carries_distance && doc.contains_key(GEO_NEAR_DISTANCE_FIELD);
        let sorted_by_meta;
        let stored = if doc.contains_key(TEXT_SCORE_FIELD) || carried_distance {
            let mut plain = doc.clone();
            plain.remove(TEXT_SCORE_FIELD);
            if carried_distance {
                plain.remove(GEO_NEAR_DISTANCE_FIELD);
            }
            sorted_by_meta = plain;
            &sorted_by_meta
        } else {
            doc
        };
        let meta = self.metadata(rid, doc, stored, near);
        let mut out = match (&self.projection, &self.key_source) {
            (projection, Some(source)) if self.return_key => {
                // The key alone, with the sort keys the projection asks for (MongoDB's
                // returnKey keeps its `{$meta: "sortKey"}` fields and nothing else).
                let mut key = key_document(source, stored);
                if let (Some(p), Some(sort_key)) = (projection, &meta.sort_key) {
                    for name in p.meta_field_names(MetaKind::SortKey) {
                        key.insert(name, Bson::Array(sort_key.clone()));
                    }
                }
                key
            }
            // Computed fields fail the query when their evaluation fails, as in MongoDB.
            (Some(p), _) => p.apply_with_metadata(stored, self.positional_query.as_ref(), &meta)?,
            (None, _) => stored.clone(),
        };
        // With returnKey the key alone is returned (the driver specification tests expect no
        // `$recordId` beside it).
        if self.show_record_id && !self.return_key {
            out.insert(RECORD_ID_FIELD, Bson::Int64(rid));
        }
        let mut raw = RawDocumentBuf::from_document(&out)?;
        if let Some(sort) = &self.sort_key {
            // Keys are all "": a raw document, which may repeat a field name.
            let mut key = RawDocumentBuf::new();
            for value in sort.sort_key(doc) {
                key.append("", bson::RawBson::try_from(value)?);
            }
            raw.append(SORT_KEY_FIELD, key);
        }
        Ok(raw)
    }

    /// The metadata the projection reads for a document (`stored`: without a text score
    /// carried for a sort).
    fn metadata(
        &self,
        rid: RecordId,
        doc: &Document,
        stored: &Document,
        near: Option<NearMetadata>,
    ) -> FindMetadata {
        let Some(p) = &self.projection else {
            return FindMetadata::default();
        };
        if p.meta_kinds().next().is_none() {
            return FindMetadata::default();
        }
        let (distance, point) = match near {
            Some(near) => (Some(near.distance), near.point),
            None => (None, None),
        };
        FindMetadata {
            record_id: p.reads_meta(MetaKind::RecordId).then_some(rid),
            // Only an index scan has keys: not a collection scan, nor the `_id` lookup
            // (MongoDB's IDHACK), whose keys only `returnKey` asks for.
            index_key: match &self.key_source {
                Some(source @ KeySource::Indexes(_)) if p.reads_meta(MetaKind::IndexKey) => {
                    Some(key_document(source, stored))
                }
                _ => None,
            },
            sort_key: self.meta_sort.as_ref().map(|sort| sort.sort_key(doc)),
            distance,
            point,
        }
    }

    /// Like [`render`](Self::render) for a document that went through a blocking sort with its
    /// record id in [`RECORD_ID_FIELD`].
    pub fn render_sorted(&self, mut doc: Document) -> Result<RawDocumentBuf> {
        let rid = match doc.remove(RECORD_ID_FIELD) {
            Some(Bson::Int64(rid)) => rid,
            _ => 0,
        };
        self.render(rid, &doc)
    }
}

/// The index key `doc` was found by, as `{<field>: <value>, ...}` in key-pattern order.
fn key_document(source: &KeySource, doc: &Document) -> Document {
    let plans = match source {
        KeySource::None => return Document::new(),
        KeySource::Id => {
            let mut key = Document::new();
            key.insert("_id", doc.get("_id").cloned().unwrap_or(Bson::Null));
            return key;
        }
        KeySource::Indexes(plans) => plans,
    };
    plans
        .iter()
        .find_map(|plan| key_in_scan(plan, doc))
        .or_else(|| plans.first().map(|plan| first_key(plan, doc)))
        .unwrap_or_default()
}

/// Each key field's candidate values in `doc`: the value itself, or an array's elements.
fn candidate_values(plan: &IndexScanPlan, doc: &Document) -> Vec<Vec<Bson>> {
    plan.fields()
        .iter()
        .map(|field| {
            if let (Some(scan), "$_path") = (&plan.wildcard, field.path.as_str()) {
                if scan.path.is_empty() {
                    return vec![Bson::MinKey];
                }
                return vec![Bson::String(scan.path.clone())];
            }
            let mut values = Vec::new();
            crate::document::path::values_for_key(doc, &field.path, &mut values);
            if values.is_empty() {
                values.push(Bson::Null);
            }
            values
                .into_iter()
                .map(|v| match field.kind {
                    FieldKind::Hashed => hashed::hash_value(&v).map(Bson::Int64).unwrap_or(v),
                    _ => v,
                })
                .collect()
        })
        .collect()
}

fn key_of(plan: &IndexScanPlan, values: Vec<Bson>) -> Document {
    plan.fields()
        .into_iter()
        .zip(values)
        .map(|(field, value)| (field.path, value))
        .collect()
}

/// The key the scan met first: the smallest (largest when scanning backwards) combination of
/// the document's values inside the scan's intervals.
fn key_in_scan(plan: &IndexScanPlan, doc: &Document) -> Option<Document> {
    let fields = plan.fields();
    let per_field = candidate_values(plan, doc);
    let mut best: Option<(Vec<u8>, Vec<Bson>)> = None;
    let mut combination = vec![0usize; per_field.len()];
    for _ in 0..MAX_KEY_COMBINATIONS {
        let values: Vec<Bson> = combination
            .iter()
            .zip(&per_field)
            .map(|(i, vs)| vs[*i].clone())
            .collect();
        let mut encoded = Vec::new();
        for (value, field) in values.iter().zip(&fields) {
            keystring::encode_value(value, field.kind == FieldKind::Descending, &mut encoded);
        }
        let inside = plan
            .intervals
            .iter()
            .any(|iv| encoded >= iv.low && iv.high.as_ref().is_none_or(|h| &encoded < h))
            && plan.admits(&encoded);
        let better = match &best {
            None => true,
            Some((b, _)) if plan.reverse => encoded > *b,
            Some((b, _)) => encoded < *b,
        };
        if inside && better {
            best = Some((encoded, values));
        }
        if !advance(&mut combination, &per_field) {
            break;
        }
    }
    best.map(|(_, values)| key_of(plan, values))
}

/// The document's first key in the index, when no key lies inside the scan (it cannot
/// happen for documents the scan returned, but the output must not fail).
fn first_key(plan: &IndexScanPlan, doc: &Document) -> Document {
    let values = candidate_values(plan, doc)
        .into_iter()
        .map(|vs| vs.into_iter().next().unwrap_or(Bson::Null))
        .collect();
    key_of(plan, values)
}

/// The next combination of per-field choices; `false` after the last.
fn advance(combination: &mut [usize], per_field: &[Vec<Bson>]) -> bool {
    for i in (0..combination.len()).rev() {
        combination[i] += 1;
        if combination[i] < per_field[i].len() {
            return true;
        }
        combination[i] = 0;
    }
    false
}
