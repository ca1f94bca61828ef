//! The metadata a pipeline's documents carry (see [`crate::expression::meta`]): a leading
//! `$match` with `$text` gives each document its text score, a leading `$geoNear` its distance
//! and point, the index scan of a leading `$match` its index key, `$sample` its random value and `$sort` its sort key (when a stage reads them). A pipeline over a collection that reads metadata its first stage does not
//! produce fails as MongoDB's does (40218, its dependency analysis), before any document is
//! read.

use crate::error::Result;
use crate::expression::meta::{MetaKind, kinds_read};
use bson::{Bson, Document};

/// What the first stage of `stages` attaches to the documents it reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Produced {
    pub text_score: bool,
    pub geo_near: bool,
    /// A stage reads `{$meta: "randVal"}`, which `$sample` then attaches (MongoDB does not
    /// check that one precedes: without it the value is missing).
    pub rand_val: bool,
    /// A stage reads `{$meta: "sortKey"}`, which each `$sort` then attaches.
    pub sort_key: bool,
    /// A stage reads `{$meta: "indexKey"}`, which the collection's read attaches when it scans
    /// an index (MongoDB does not check that one is scanned: without it the key is missing).
    pub index_key: bool,
}

impl Produced {
    /// The metadata the first stage of `stages` produces.
    pub fn by(stages: &[Document]) -> Produced {
        let Some(first) = stages.first() else {
            return Produced::default();
        };
        let mut kinds = Vec::new();
        for stage in stages {
            for value in stage.values() {
                kinds_read(value, &mut kinds);
            }
        }
        Produced {
            text_score: first.get_document("$match").is_ok_and(has_text),
            geo_near: first.contains_key("$geoNear"),
            rand_val: kinds.contains(&MetaKind::RandVal),
            sort_key: kinds.contains(&MetaKind::SortKey),
            index_key: kinds.contains(&MetaKind::IndexKey),
        }
    }

    /// Whether documents carry any metadata.
    pub fn any(self) -> bool {
        self.text_score || self.geo_near || self.rand_val || self.sort_key || self.index_key
    }

    fn has(self, kind: MetaKind) -> bool {
        match kind {
            MetaKind::TextScore => self.text_score,
            MetaKind::GeoNearDistance | MetaKind::GeoNearPoint => self.geo_near,
            // Never attached: reading one fails when the stage is parsed.
            _ => true,
        }
    }
}

/// Whether a filter has `$text` where MongoDB lets it be (the top level, a top-level `$and`,
/// or a top-level `$or`'s branch).
fn has_text(filter: &Document) -> bool {
    filter
        .iter()
        .any(|(name, value)| match (name.as_str(), value) {
            ("$text", _) => true,
            ("$and" | "$or", Bson::Array(branches)) => branches
                .iter()
                .any(|branch| matches!(branch, Bson::Document(b) if has_text(b))),
            _ => false,
        })
}

/// Refuses `{$meta: "sortKey"}` in a stage no `$sort` of the same pipeline precedes
/// (NotImplemented: MongoDB's answer there depends on how it pushes stages down).
pub fn check_sort_key(stages: &[Document]) -> Result<()> {
    let mut sorted = false;
    for stage in stages {
        let mut kinds = Vec::new();
        for value in stage.values() {
            kinds_read(value, &mut kinds);
        }
        if !sorted && kinds.contains(&MetaKind::SortKey) {
            return Err(crate::error::MongoError::new(
                crate::error::ErrorCode::NotImplemented,
                "{$meta: \"sortKey\"} without a $sort before it is not supported yet",
            ));
        }
        sorted |= stage.contains_key("$sort");
    }
    Ok(())
}

/// Refuses `{$meta: "indexKey"}` where this server's read may differ from MongoDB's plan:
/// after a leading `$match` with `$text` or a `$geoNear` (whose keys MongoDB gives in its own
/// form), and when a `$sort` follows the leading `$match` stages (or leads), which MongoDB's
/// query layer answers with the match and may answer by scanning an index this server,
/// planning from the `$match` alone, does not (NotImplemented).
pub fn check_index_key(stages: &[Document]) -> Result<()> {
    let produced = Produced::by(stages);
    if !produced.index_key {
        return Ok(());
    }
    let refuse = |why: &str| {
        Err(crate::error::MongoError::new(
            crate::error::ErrorCode::NotImplemented,
            format!("{{$meta: \"indexKey\"}} {why} is not supported yet"),
        ))
    };
    if produced.text_score || produced.geo_near {
        return refuse("after $text or $geoNear");
    }
    let pushed_sort = stages
        .iter()
        .find(|stage| !stage.contains_key("$match"))
        .is_some_and(|stage| stage.contains_key("$sort"));
    if pushed_sort {
        return refuse("after a $sort that leads the pipeline (or follows its leading $match)");
    }
    Ok(())
}

/// Refuses a collection's pipeline that reads metadata its first stage does not produce:
/// "query requires text score metadata, but it is not available" (40218).
pub fn check_available(stages: &[Document]) -> Result<()> {
    let produced = Produced::by(stages);
    let mut kinds = Vec::new();
    for stage in stages {
        for value in stage.values() {
            kinds_read(value, &mut kinds);
        }
    }
    match kinds.into_iter().find(|kind| !produced.has(*kind)) {
        Some(kind) => Err(kind.unavailable()),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    #[test]
    fn metadata_must_come_from_the_first_stage() {
        let text = doc! {"$match": {"$text": {"$search": "x"}}};
        let score = doc! {"$project": {"s": {"$meta": "textScore"}}};
        let by_score = doc! {"$sort": {"s": {"$meta": "textScore"}}};
        assert!(check_available(&[text.clone(), score.clone(), by_score.clone()]).is_ok());
        let err = check_available(&[doc! {"$match": {}}, by_score]).unwrap_err();
        assert_eq!(
            (err.code().code(), err.message()),
            (
                40218,
                "query requires text score metadata, but it is not available"
            )
        );
        let distance = doc! {"$addFields": {"d": {"$meta": "geoNearDistance"}}};
        assert_eq!(
            check_available(&[text, distance.clone()])
                .unwrap_err()
                .message(),
            "query requires $geoNear distance metadata, but it is not available"
        );
        let near = doc! {"$geoNear": {"near": [0, 0], "distanceField": "d"}};
        assert!(check_available(&[near, distance]).is_ok());
        let nested = doc! {"$match": {"$and": [{"a": 1}, {"$text": {"$search": "x"}}]}};
        assert!(Produced::by(&[nested]).text_score);
    }

    #[test]
    fn index_keys_where_the_plan_is_this_servers() {
        let read = doc! {"$project": {"k": {"$meta": "indexKey"}}};
        let matched = doc! {"$match": {"a": 1}};
        assert!(Produced::by(&[matched.clone(), read.clone()]).index_key);
        assert!(check_index_key(&[matched.clone(), read.clone()]).is_ok());
        // A `$sort` after a `$group` is not answered by the query layer.
        let grouped = [
            matched.clone(),
            doc! {"$group": {"_id": "$a"}},
            doc! {"$sort": {"_id": 1}},
            read.clone(),
        ];
        assert!(check_index_key(&grouped).is_ok());
        let sorted = [matched, doc! {"$sort": {"a": 1}}, read.clone()];
        assert_eq!(check_index_key(&sorted).unwrap_err().code().code(), 238);
        let text = [doc! {"$match": {"$text": {"$search": "x"}}}, read];
        assert_eq!(check_index_key(&text).unwrap_err().code().code(), 238);
    }

    #[test]
    fn sort_keys_need_a_sort_before() {
        let read = doc! {"$project": {"k": {"$meta": "sortKey"}}};
        let sort = doc! {"$sort": {"a": 1}};
        assert!(check_sort_key(&[sort.clone(), doc! {"$limit": 1}, read.clone()]).is_ok());
        let err = check_sort_key(&[read.clone(), sort]).unwrap_err();
        assert_eq!(err.code().code(), 238);
        assert!(Produced::by(&[read]).sort_key);
    }

    #[test]
    fn carrier_fields_are_metadata_only_where_metadata_is_attached() {
        use crate::aggregate::Pipeline;
        use crate::expression::LetVariables;
        use std::sync::Arc;
        let stages = [doc! {"$project": {"r": "$$ROOT"}}];
        let stored = doc! {"_id": 1, "$textScore": 2, "$pt": [0, 0]};
        // A pipeline attaching none: the fields are the document's own.
        let plain = Pipeline::parse(&stages).unwrap();
        let out = plain.run(vec![stored.clone()]).unwrap();
        assert_eq!(out, [doc! {"_id": 1, "r": stored.clone()}]);
        // Reading documents that carry metadata: left out of `$$ROOT` and the output.
        let vars = Arc::new(LetVariables::empty(bson::DateTime::now()).carrying_metadata());
        let carrying = Pipeline::parse_with_variables(&stages, vars).unwrap();
        let out = carrying.run(vec![stored]).unwrap();
        assert_eq!(out, [doc! {"_id": 1, "r": {"_id": 1}}]);
    }
}
