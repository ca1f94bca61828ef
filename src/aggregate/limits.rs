//! MongoDB's limits on a pipeline's shape: how many stages one pipeline may have
//! (`internalPipelineLengthLimit`, 1,000 in MongoDB 8.0's release builds), checked on the
//! stages as written and again once shorthands expand (`$count` is two stages), and how deeply
//! `$lookup` and `$unionWith` sub-pipelines may nest (`internalMaxSubPipelineViewDepth`, 20).
//! Each is one value per process, as MongoDB's knobs are; the server parameters of the same
//! names set them.

use crate::error::{ErrorCode, MongoError, Result};
use std::sync::atomic::{AtomicUsize, Ordering};

/// `internalPipelineLengthLimit`'s default.
pub const DEFAULT_PIPELINE_LENGTH_LIMIT: usize = 1000;

/// `internalMaxSubPipelineViewDepth`'s default.
pub const DEFAULT_MAX_SUB_PIPELINE_DEPTH: usize = 20;

static PIPELINE_LENGTH_LIMIT: AtomicUsize = AtomicUsize::new(DEFAULT_PIPELINE_LENGTH_LIMIT);
static MAX_SUB_PIPELINE_DEPTH: AtomicUsize = AtomicUsize::new(DEFAULT_MAX_SUB_PIPELINE_DEPTH);

pub fn pipeline_length_limit() -> usize {
    PIPELINE_LENGTH_LIMIT.load(Ordering::Relaxed)
}

pub fn set_pipeline_length_limit(limit: usize) {
    PIPELINE_LENGTH_LIMIT.store(limit, Ordering::Relaxed);
}

pub fn max_sub_pipeline_depth() -> usize {
    MAX_SUB_PIPELINE_DEPTH.load(Ordering::Relaxed)
}

pub fn set_max_sub_pipeline_depth(depth: usize) {
    MAX_SUB_PIPELINE_DEPTH.store(depth, Ordering::Relaxed);
}

/// A pipeline of `stages` stages as written, before any is parsed (so a pipeline of 100,000
/// stages costs no parsing).
pub fn check_length(stages: usize) -> Result<()> {
    let limit = pipeline_length_limit();
    if stages > limit {
        return Err(MongoError::location(
            7749501,
            format!("Pipeline length must be no longer than {limit} stages."),
        ));
    }
    Ok(())
}

/// A pipeline of `stages` stages once parsed (shorthands expanded).
pub fn check_parsed_length(stages: usize) -> Result<()> {
    let limit = pipeline_length_limit();
    if stages > limit {
        // MongoDB's message here has no final period.
        return Err(MongoError::location(
            5054701,
            format!("Pipeline length must be no longer than {limit} stages"),
        ));
    }
    Ok(())
}

/// A sub-pipeline opened inside a pipeline at `depth` (0 for a command's own pipeline).
pub fn check_sub_pipeline_depth(depth: usize) -> Result<()> {
    let limit = max_sub_pipeline_depth();
    if depth >= limit {
        return Err(MongoError::new(
            ErrorCode::MaxSubPipelineDepthExceeded,
            format!("Maximum number of nested sub-pipelines exceeded. Limit is {limit}"),
        ));
    }
    Ok(())
}

/// How many documents from the start of their input a run of `$skip` and `$limit` stages can
/// keep, when the run ends in a `$limit`; `None` otherwise (or when a value is not a valid
/// count: the merger's parsing reports it).
pub fn documents_needed(stages: &[bson::Document]) -> Option<i64> {
    let mut skipped: i64 = 0;
    for stage in stages {
        let n = match stage.values().next()? {
            bson::Bson::Int32(n) => i64::from(*n),
            bson::Bson::Int64(n) => *n,
            bson::Bson::Double(n) if n.fract() == 0.0 => *n as i64,
            _ => return None,
        };
        if n < 0 {
            return None;
        }
        match stage.keys().next().map(String::as_str).unwrap_or_default() {
            "$skip" => skipped = skipped.checked_add(n)?,
            "$limit" => return skipped.checked_add(n),
            _ => return None,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aggregate::{Pipeline, UpdatePipeline};
    use crate::expression::LetVariables;
    use bson::{Document, doc};

    fn code(stages: Vec<Document>) -> i32 {
        match Pipeline::parse(&stages) {
            Ok(_) => 0,
            Err(err) => err.code().code(),
        }
    }

    /// `n` `$lookup`s, each in the sub-pipeline of the one before.
    fn nested(n: usize, stage: &str) -> Document {
        let mut spec = doc! {"$match": {}};
        for _ in 0..n {
            spec = match stage {
                "$lookup" => doc! {"$lookup": {"from": "c", "as": "x", "pipeline": [spec]}},
                _ => doc! {"$unionWith": {"coll": "c", "pipeline": [spec]}},
            };
        }
        spec
    }

    #[test]
    fn every_pipeline_is_held_to_the_length_limit() {
        let matches = |n: usize| vec![doc! {"$match": {"a": 1}}; n];
        assert_eq!(code(matches(1000)), 0);
        assert_eq!(code(matches(1001)), 7749501);
        // 100,000 stages are refused before any is parsed (an invalid one included).
        let mut many = matches(100_000);
        many[5] = doc! {"$bogus": 1};
        assert_eq!(code(many), 7749501);
        // `$count` is two stages once parsed.
        assert_eq!(code(vec![doc! {"$count": "n"}; 500]), 0);
        assert_eq!(code(vec![doc! {"$count": "n"}; 501]), 5054701);
        let facet = |n: usize| vec![doc! {"$facet": {"f": matches(n)}}];
        assert_eq!((code(facet(1000)), code(facet(1001))), (0, 7749501));
        let lookup =
            |n: usize| vec![doc! {"$lookup": {"from": "c", "as": "x", "pipeline": matches(n)}}];
        assert_eq!((code(lookup(1000)), code(lookup(1001))), (0, 7749501));
        let union = vec![doc! {"$unionWith": {"coll": "c", "pipeline": matches(1001)}}];
        assert_eq!(code(union), 7749501);
        let update: Vec<Document> = vec![doc! {"$set": {"a": 1}}; 1001];
        let err = UpdatePipeline::parse(&update, LetVariables::none()).unwrap_err();
        assert_eq!(err.code().code(), 7749501);
    }

    #[test]
    fn lookup_and_union_with_nest_twenty_deep() {
        for stage in ["$lookup", "$unionWith"] {
            assert_eq!(code(vec![nested(20, stage)]), 0, "{stage}");
            assert_eq!(code(vec![nested(21, stage)]), 232, "{stage}");
        }
        // A `$facet` opens no sub-pipeline level of its own.
        let in_facet = doc! {"$facet": {"f": [nested(20, "$lookup")]}};
        assert_eq!(code(vec![in_facet]), 0);
    }

    #[test]
    fn lengths_past_the_limit_are_refused_with_mongodb_codes() {
        assert!(check_length(DEFAULT_PIPELINE_LENGTH_LIMIT).is_ok());
        let err = check_length(DEFAULT_PIPELINE_LENGTH_LIMIT + 1).unwrap_err();
        assert_eq!(
            (err.code().code(), err.code().name().to_string()),
            (7749501, "Location7749501".to_string())
        );
        assert_eq!(
            err.message(),
            "Pipeline length must be no longer than 1000 stages."
        );
        let err = check_parsed_length(100_000).unwrap_err();
        assert_eq!(err.code().code(), 5054701);
        assert_eq!(
            err.message(),
            "Pipeline length must be no longer than 1000 stages"
        );
    }

    #[test]
    fn sub_pipelines_nest_twenty_deep() {
        assert!(check_sub_pipeline_depth(DEFAULT_MAX_SUB_PIPELINE_DEPTH - 1).is_ok());
        let err = check_sub_pipeline_depth(DEFAULT_MAX_SUB_PIPELINE_DEPTH).unwrap_err();
        assert_eq!(
            (err.code().code(), err.code().name().to_string()),
            (232, "MaxSubPipelineDepthExceeded".to_string())
        );
        assert_eq!(
            err.message(),
            "Maximum number of nested sub-pipelines exceeded. Limit is 20"
        );
    }
}
