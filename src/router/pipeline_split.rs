//! How the router splits an aggregation over several shards (mongos's `splitPipeline`): the
//! shards run the leading stages that transform documents one at a time — they give the same
//! result on each shard's documents as on their union —, then a `$sort` (each shard sorts its
//! part) and, when a `$skip`/`$limit` run follows, only the documents that run can keep. The
//! router runs the rest over the shards' output, the `$sort`, `$skip` and `$limit` included,
//! so the answer is the same as on one node.

use bson::{Bson, Document, doc};

/// Stages that transform each document on its own.
const PER_DOCUMENT: &[&str] = &[
    "$match",
    "$project",
    "$addFields",
    "$set",
    "$unset",
    "$replaceRoot",
    "$replaceWith",
    "$unwind",
];

#[derive(Debug, PartialEq)]
pub struct SplitPipeline {
    pub shards_part: Vec<Document>,
    pub merger_part: Vec<Document>,
}

fn name(stage: &Document) -> &str {
    stage.keys().next().map(String::as_str).unwrap_or_default()
}

pub fn split(stages: &[Document]) -> SplitPipeline {
    // `$collStats`, `$indexStats` and `$planCacheStats` describe each shard's part of the
    // collection: they run there.
    let mut at = usize::from(
        stages
            .first()
            .is_some_and(|s| matches!(name(s), "$collStats" | "$indexStats" | "$planCacheStats")),
    );
    while at < stages.len() && PER_DOCUMENT.contains(&name(&stages[at])) {
        at += 1;
    }
    let mut shards_part = stages[..at].to_vec();
    let rest = &stages[at..];
    match rest.first() {
        Some(sort) if name(sort) == "$sort" => {
            shards_part.push(sort.clone());
            if let Some(n) = documents_needed(&rest[1..]) {
                shards_part.push(doc! {"$limit": n});
            }
        }
        _ => {
            if let Some(n) = documents_needed(rest) {
                shards_part.push(doc! {"$limit": n});
            }
        }
    }
    SplitPipeline {
        shards_part,
        merger_part: rest.to_vec(),
    }
}

/// How many documents from the start of their input a run of `$skip` and `$limit` stages can
/// keep, when the run ends in a `$limit`; `None` otherwise (or when a value is not a valid
/// count: the merger's parsing reports it).
fn documents_needed(stages: &[Document]) -> Option<i64> {
    let mut skipped: i64 = 0;
    for stage in stages {
        let n = match stage.values().next()? {
            Bson::Int32(n) => i64::from(*n),
            Bson::Int64(n) => *n,
            Bson::Double(n) if n.fract() == 0.0 => *n as i64,
            _ => return None,
        };
        if n < 0 {
            return None;
        }
        match name(stage) {
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

    fn split_of(stages: Vec<Document>) -> (Vec<Document>, usize) {
        let split = split(&stages);
        (split.shards_part, split.merger_part.len())
    }

    #[test]
    fn per_document_stages_run_on_the_shards() {
        let (shards, merger) = split_of(vec![
            doc! {"$match": {"a": 1}},
            doc! {"$project": {"a": 1}},
            doc! {"$unwind": "$a"},
            doc! {"$group": {"_id": "$a"}},
            doc! {"$match": {"_id": 1}},
        ]);
        assert_eq!(shards.len(), 3);
        assert_eq!(merger, 2);
    }

    #[test]
    fn a_sort_runs_on_both_sides_with_what_skip_and_limit_keep() {
        let (shards, merger) = split_of(vec![
            doc! {"$set": {"b": 1}},
            doc! {"$sort": {"a": 1}},
            doc! {"$skip": 5},
            doc! {"$limit": 7},
            doc! {"$limit": 100},
        ]);
        assert_eq!(
            shards,
            vec![
                doc! {"$set": {"b": 1}},
                doc! {"$sort": {"a": 1}},
                doc! {"$limit": 12_i64}
            ]
        );
        assert_eq!(merger, 4);
        let (shards, _) = split_of(vec![doc! {"$sort": {"a": 1}}, doc! {"$group": {"_id": 1}}]);
        assert_eq!(shards, vec![doc! {"$sort": {"a": 1}}]);
    }

    #[test]
    fn a_limit_without_sort_bounds_what_each_shard_sends() {
        let (shards, merger) = split_of(vec![doc! {"$skip": 2}, doc! {"$limit": 3}]);
        assert_eq!(shards, vec![doc! {"$limit": 5_i64}]);
        assert_eq!(merger, 2);
        let (shards, _) = split_of(vec![doc! {"$skip": 2}, doc! {"$count": "n"}]);
        assert!(shards.is_empty());
        let (shards, _) = split_of(vec![doc! {"$limit": -1}]);
        assert!(shards.is_empty(), "the merger reports the bad limit");
    }

    #[test]
    fn index_and_plan_cache_stats_run_on_each_shard() {
        for stage in ["$indexStats", "$planCacheStats"] {
            let (shards, merger) = split_of(vec![
                doc! {stage: {}},
                doc! {"$match": {"name": "a_1"}},
                doc! {"$group": {"_id": "$name"}},
            ]);
            assert_eq!(
                shards,
                vec![doc! {stage: {}}, doc! {"$match": {"name": "a_1"}}]
            );
            assert_eq!(merger, 1);
        }
    }

    #[test]
    fn coll_stats_runs_on_each_shard() {
        let (shards, merger) = split_of(vec![
            doc! {"$collStats": {"count": {}}},
            doc! {"$project": {"shard": 1}},
            doc! {"$group": {"_id": null}},
        ]);
        assert_eq!(shards.len(), 2);
        assert_eq!(merger, 1);
    }
}
