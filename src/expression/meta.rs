//! Document metadata — what `{$meta: "<name>"}` reads — and how a document carries it through
//! a pipeline: under MongoDB's own reserved field names (`$textScore`, `$dis`, `$pt`,
//! `$randVal`, `$sortKey`, `$indexKey`), the names
//! MongoDB's shards use when they send documents with their metadata to the merging router
//! (`Document::toBsonWithMetaData`). A document's metadata is set where the collection is read
//! (a leading `$match` with `$text`, a leading `$geoNear`, the index scan a leading `$match`
//! chose) or by `$sample` and `$sort`, kept by
//! every stage that keeps or
//! replaces the document (`$project`, `$replaceRoot`...; the stages copy these fields as they
//! copy the document) and left behind by those that make new ones (`$group`). It is removed
//! before documents leave a pipeline, except for a router that merges them, and is never part
//! of `$$ROOT`. Only a pipeline whose first stage attaches metadata treats these fields so
//! (`LetVariables::carries_metadata`); elsewhere they are the document's own.

use crate::error::{ErrorCode, MongoError, Result};
use bson::{Bson, Document};

/// A kind of metadata a `{$meta: ...}` may name in MongoDB 8.0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetaKind {
    TextScore,
    GeoNearDistance,
    GeoNearPoint,
    /// A random double in [0, 1).
    RandVal,
    /// The key of the sort the document came through, as an array of its values.
    SortKey,
    /// The identifier of the document's record.
    RecordId,
    /// The index key the document was found by.
    IndexKey,
    /// Kinds MongoDB has that this server does not attach to documents.
    Other(&'static str),
}

/// The names `$meta` accepts that this server does not attach (NotImplemented).
const NOT_ATTACHED: &[&str] = &[
    "searchScore",
    "searchHighlights",
    "searchScoreDetails",
    "searchSequenceToken",
    "vectorSearchScore",
    "score",
    "scoreDetails",
];

/// Every field that carries metadata.
pub const CARRIER_FIELDS: [&str; 6] = [
    TEXT_SCORE_FIELD,
    GEO_NEAR_DISTANCE_FIELD,
    GEO_NEAR_POINT_FIELD,
    RAND_VAL_FIELD,
    SORT_KEY_FIELD,
    INDEX_KEY_FIELD,
];

/// Where a document carries its text score.
pub const TEXT_SCORE_FIELD: &str = "$textScore";
/// Where a document carries its `$geoNear` distance (before `distanceMultiplier`).
pub const GEO_NEAR_DISTANCE_FIELD: &str = "$dis";
/// Where a document carries the location `$geoNear` measured to.
pub const GEO_NEAR_POINT_FIELD: &str = "$pt";
/// Where a document carries the random value `$sample` drew for it.
pub const RAND_VAL_FIELD: &str = "$randVal";
/// Where a document carries its key under the last `$sort` it went through (an array).
pub const SORT_KEY_FIELD: &str = "$sortKey";
/// Where a document carries the key of the index scan that read it from its collection.
pub const INDEX_KEY_FIELD: &str = "$indexKey";

impl MetaKind {
    /// The argument of `{$meta: <argument>}`, with MongoDB's errors.
    pub fn parse(argument: &Bson) -> Result<MetaKind> {
        let Bson::String(name) = argument else {
            return Err(MongoError::location(
                17307,
                "$meta only supports string arguments",
            ));
        };
        match name.as_str() {
            "textScore" => Ok(MetaKind::TextScore),
            "geoNearDistance" => Ok(MetaKind::GeoNearDistance),
            "geoNearPoint" => Ok(MetaKind::GeoNearPoint),
            "randVal" => Ok(MetaKind::RandVal),
            "sortKey" => Ok(MetaKind::SortKey),
            "recordId" => Ok(MetaKind::RecordId),
            "indexKey" => Ok(MetaKind::IndexKey),
            other => match NOT_ATTACHED.iter().find(|known| **known == other) {
                Some(known) => Ok(MetaKind::Other(known)),
                None => Err(MongoError::location(
                    17308,
                    format!("Unsupported argument to $meta: {other}"),
                )),
            },
        }
    }

    /// The field carrying this metadata; NotImplemented for kinds never attached.
    pub fn field(self) -> Result<&'static str> {
        match self {
            MetaKind::TextScore => Ok(TEXT_SCORE_FIELD),
            MetaKind::GeoNearDistance => Ok(GEO_NEAR_DISTANCE_FIELD),
            MetaKind::GeoNearPoint => Ok(GEO_NEAR_POINT_FIELD),
            MetaKind::RandVal => Ok(RAND_VAL_FIELD),
            MetaKind::SortKey => Ok(SORT_KEY_FIELD),
            MetaKind::IndexKey => Ok(INDEX_KEY_FIELD),
            // MongoDB's releases differ on whether a pipeline's documents have one.
            MetaKind::RecordId => Err(MongoError::new(
                ErrorCode::NotImplemented,
                "$meta: \"recordId\" outside a find projection is not supported yet",
            )),
            other => Err(MongoError::new(
                ErrorCode::NotImplemented,
                format!("$meta: \"{}\" is not supported yet", other.name()),
            )),
        }
    }

    /// The name `{$meta: <name>}` gives.
    pub fn name(self) -> &'static str {
        match self {
            MetaKind::TextScore => "textScore",
            MetaKind::GeoNearDistance => "geoNearDistance",
            MetaKind::GeoNearPoint => "geoNearPoint",
            MetaKind::RandVal => "randVal",
            MetaKind::SortKey => "sortKey",
            MetaKind::RecordId => "recordId",
            MetaKind::IndexKey => "indexKey",
            MetaKind::Other(name) => name,
        }
    }

    /// What MongoDB calls the metadata in its "not available" error.
    pub fn description(self) -> &'static str {
        match self {
            MetaKind::TextScore => "text score",
            MetaKind::GeoNearDistance => "$geoNear distance",
            MetaKind::GeoNearPoint => "$geoNear point",
            MetaKind::RandVal => "rand val",
            MetaKind::SortKey => "sortKey",
            MetaKind::RecordId => "record ID",
            MetaKind::IndexKey => "index key",
            MetaKind::Other(name) => name,
        }
    }

    /// MongoDB's error when a pipeline reads metadata its source does not produce (40218).
    pub fn unavailable(self) -> MongoError {
        MongoError::location(
            40218,
            format!(
                "query requires {} metadata, but it is not available",
                self.description()
            ),
        )
    }
}

/// Whether the document carries any metadata.
pub fn carries_metadata(doc: &Document) -> bool {
    CARRIER_FIELDS.iter().any(|field| doc.contains_key(field))
}

/// Removes the document's metadata (before it leaves a pipeline).
pub fn strip(doc: &mut Document) {
    if carries_metadata(doc) {
        for field in CARRIER_FIELDS {
            doc.remove(field);
        }
    }
}

/// The document without its metadata (a copy only when it has some).
pub fn without_metadata(doc: &Document) -> std::borrow::Cow<'_, Document> {
    if carries_metadata(doc) {
        let mut plain = doc.clone();
        strip(&mut plain);
        std::borrow::Cow::Owned(plain)
    } else {
        std::borrow::Cow::Borrowed(doc)
    }
}

/// Copies `from`'s metadata onto `to` (a stage that replaces the document keeps it).
pub fn copy(from: &Document, to: &mut Document) {
    for field in CARRIER_FIELDS {
        if let Some(value) = from.get(field) {
            to.insert(field, value.clone());
        }
    }
}

/// The kinds of metadata a stage specification (or any part of one) reads through
/// `{$meta: ...}` objects, outside the sub-pipelines of stages that read other collections
/// (which read their own).
pub fn kinds_read(value: &Bson, out: &mut Vec<MetaKind>) {
    crate::depth::recurse(|| match value {
        Bson::Document(doc) => {
            if let (1, Some(argument)) = (doc.len(), doc.get("$meta")) {
                if let Ok(kind) = MetaKind::parse(argument) {
                    out.push(kind);
                }
                return;
            }
            for (name, inner) in doc {
                if matches!(
                    name.as_str(),
                    "$lookup" | "$unionWith" | "$graphLookup" | "$literal"
                ) {
                    continue;
                }
                kinds_read(inner, out);
            }
        }
        Bson::Array(items) => items.iter().for_each(|item| kinds_read(item, out)),
        _ => {}
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{bson, doc};

    #[test]
    fn names_and_errors() {
        assert_eq!(
            MetaKind::parse(&bson!("textScore")).unwrap(),
            MetaKind::TextScore
        );
        assert_eq!(MetaKind::parse(&bson!(1)).unwrap_err().code().code(), 17307);
        let err = MetaKind::parse(&bson!("bogus")).unwrap_err();
        assert_eq!(err.message(), "Unsupported argument to $meta: bogus");
        assert_eq!(MetaKind::RandVal.field().unwrap(), "$randVal");
        let other = MetaKind::parse(&bson!("recordId")).unwrap();
        assert_eq!(other.field().unwrap_err().code().code(), 238);
        assert_eq!(MetaKind::IndexKey.field().unwrap(), "$indexKey");
        assert_eq!(
            MetaKind::GeoNearPoint.unavailable().message(),
            "query requires $geoNear point metadata, but it is not available"
        );
    }

    #[test]
    fn metadata_is_stripped_and_copied() {
        let mut doc = doc! {"a": 1, "$textScore": 1.5, "$dis": 2.0};
        let mut other = doc! {"b": 1};
        copy(&doc, &mut other);
        assert_eq!(other, doc! {"b": 1, "$textScore": 1.5, "$dis": 2.0});
        strip(&mut doc);
        assert_eq!(doc, doc! {"a": 1});
    }

    #[test]
    fn kinds_read_skip_foreign_pipelines() {
        let mut kinds = Vec::new();
        let stages = bson!([
            {"$project": {"s": {"$meta": "textScore"}}},
            {"$lookup": {"from": "x", "pipeline": [{"$project": {"d": {"$meta": "geoNearDistance"}}}], "as": "y"}},
            {"$sort": {"p": {"$meta": "geoNearPoint"}}}
        ]);
        kinds_read(&stages, &mut kinds);
        assert_eq!(kinds, [MetaKind::TextScore, MetaKind::GeoNearPoint]);
    }
}
