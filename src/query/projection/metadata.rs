//! `{$meta: ...}` fields of a `find` projection: top-level fields set to a document's metadata,
//! appended after the projected fields in specification order, as MongoDB's find projects
//! them. The text score is computed from the find's filter; the rest (the `$near` distance and
//! point, the record id, the index key, the sort key) come from the executor that found the
//! document ([`FindMetadata`]). A find never draws a random value, so `randVal` is missing.

use super::Projection;
use crate::error::Result;
use crate::expression::meta::MetaKind;
use crate::query::filter::Filter;
use bson::{Bson, Document};

/// What the executor knows about one document beyond its fields (`None`: not available, the
/// field is then left out, as MongoDB leaves out missing metadata).
#[derive(Debug, Default)]
pub struct FindMetadata {
    pub record_id: Option<i64>,
    /// The key of the index scan the document came from.
    pub index_key: Option<Document>,
    /// The document's key under the find's sort.
    pub sort_key: Option<Vec<Bson>>,
    /// The `$near` distance (in the query's units) and the location measured to.
    pub distance: Option<f64>,
    pub point: Option<Bson>,
}

/// The kind a projection value `{$meta: <name>}` names; `None` for any other value or an
/// argument `$meta` refuses (parsed as an expression, which raises MongoDB's error).
pub(super) fn meta_kind(value: &Bson) -> Option<MetaKind> {
    match value {
        Bson::Document(d) if d.len() == 1 => MetaKind::parse(d.get("$meta")?).ok(),
        _ => None,
    }
}

/// Whether `kind` is answered as a top-level field of this projection, with MongoDB's error
/// (40218) when the query does not produce it; `Ok(false)` leaves the field to the expression
/// parser, which refuses what is not supported. `find_metadata`: the caller is a `find`, whose
/// executor supplies every kind (other commands only have the text score).
pub(super) fn accepts(kind: MetaKind, query: Option<&Filter>, find_metadata: bool) -> Result<bool> {
    let available = match kind {
        MetaKind::TextScore => query.is_some_and(Filter::has_text),
        MetaKind::GeoNearDistance | MetaKind::GeoNearPoint if find_metadata => {
            query.is_some_and(|q| q.near().is_some())
        }
        MetaKind::RandVal | MetaKind::SortKey | MetaKind::RecordId | MetaKind::IndexKey
            if find_metadata =>
        {
            true
        }
        _ => return Ok(false),
    };
    if !available {
        return Err(kind.unavailable());
    }
    Ok(true)
}

impl Projection {
    /// The kinds of metadata the projection's `{$meta}` fields read.
    pub fn meta_kinds(&self) -> impl Iterator<Item = MetaKind> + '_ {
        self.meta_fields.iter().map(|(_, kind)| *kind)
    }

    /// The names of the `{$meta}` fields reading `kind`.
    pub fn meta_field_names(&self, kind: MetaKind) -> impl Iterator<Item = &str> + '_ {
        self.meta_fields
            .iter()
            .filter(move |(_, k)| *k == kind)
            .map(|(name, _)| name.as_str())
    }

    /// Whether a `{$meta}` field reads `kind`.
    pub fn reads_meta(&self, kind: MetaKind) -> bool {
        self.meta_kinds().any(|k| k == kind)
    }

    /// Projects a document that matched `filter` (positional `$`, text score) and appends its
    /// metadata fields from `meta`.
    pub fn apply_with_metadata(
        &self,
        doc: &Document,
        filter: Option<&Filter>,
        meta: &FindMetadata,
    ) -> Result<Document> {
        let mut out = match filter {
            Some(filter) => self.apply_positional(doc, filter)?,
            None => self.try_apply(doc)?,
        };
        self.append_metadata(&mut out, doc, filter, meta)?;
        Ok(out)
    }

    /// Appends the `{$meta}` fields to a projected document `out` of `doc`.
    pub fn append_metadata(
        &self,
        out: &mut Document,
        doc: &Document,
        filter: Option<&Filter>,
        meta: &FindMetadata,
    ) -> Result<()> {
        for (name, kind) in &self.meta_fields {
            let value = match kind {
                MetaKind::TextScore => match filter {
                    Some(filter) => Some(Bson::Double(filter.text_score(doc)?.unwrap_or(0.0))),
                    None => None,
                },
                MetaKind::GeoNearDistance => meta.distance.map(Bson::Double),
                MetaKind::GeoNearPoint => meta.point.clone(),
                MetaKind::RecordId => meta.record_id.map(Bson::Int64),
                MetaKind::IndexKey => meta.index_key.clone().map(Bson::Document),
                MetaKind::SortKey => meta.sort_key.clone().map(Bson::Array),
                MetaKind::RandVal | MetaKind::Other(_) => None,
            };
            if let Some(value) = value {
                out.insert(name.clone(), value);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    fn find_projection(spec: Document, filter: Document) -> Result<Projection> {
        let filter = Filter::parse(&filter).unwrap();
        Projection::parse_for_find(&spec, &filter, &Projection::no_variables())
    }

    #[test]
    fn metadata_fields_are_appended_in_order() {
        let p = find_projection(
            doc! {"k": {"$meta": "sortKey"}, "a": 1, "r": {"$meta": "recordId"}, "i": {"$meta": "indexKey"}, "v": {"$meta": "randVal"}},
            doc! {},
        )
        .unwrap();
        assert!(p.is_inclusion());
        let meta = FindMetadata {
            record_id: Some(7),
            sort_key: Some(vec![Bson::Int32(1)]),
            ..FindMetadata::default()
        };
        let out = p
            .apply_with_metadata(&doc! {"_id": 1, "a": 2, "b": 3}, None, &meta)
            .unwrap();
        assert_eq!(out, doc! {"_id": 1, "a": 2, "k": [1], "r": 7_i64});
    }

    #[test]
    fn metadata_only_keeps_the_document() {
        let p = find_projection(
            doc! {"d": {"$meta": "geoNearDistance"}},
            doc! {"loc": {"$near": [0, 0]}},
        )
        .unwrap();
        let meta = FindMetadata {
            distance: Some(1.5),
            point: Some(Bson::Array(vec![Bson::Int32(1), Bson::Int32(1)])),
            ..FindMetadata::default()
        };
        let out = p
            .apply_with_metadata(&doc! {"_id": 1, "loc": [1, 1]}, None, &meta)
            .unwrap();
        assert_eq!(out, doc! {"_id": 1, "loc": [1, 1], "d": 1.5});
    }

    #[test]
    fn unavailable_metadata() {
        let err = find_projection(doc! {"d": {"$meta": "geoNearPoint"}}, doc! {}).unwrap_err();
        assert_eq!(
            (err.code().code(), err.message()),
            (
                40218,
                "query requires $geoNear point metadata, but it is not available"
            )
        );
        // Other commands than find have only the text score.
        let filter = Filter::parse(&doc! {}).unwrap();
        let err =
            Projection::parse_with_filter(&doc! {"r": {"$meta": "recordId"}}, &filter).unwrap_err();
        assert_eq!(err.code().code(), 238);
    }
}
