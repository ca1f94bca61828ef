//! How the router splits an aggregation over several shards (mongos's `splitPipeline`): the
//! shards run the leading stages that transform documents one at a time — they give the same
//! result on each shard's documents as on their union —, then a `$sort` (each shard sorts its
//! part) and, when a `$skip`/`$limit` run follows, only the documents that run can keep. The
//! router runs the rest over the shards' output, the `$sort`, `$skip` and `$limit` included,
//! so the answer is the same as on one node.
//!
//! A `$group` there (also as `$count` or `$sortByCount`, which are one) runs in two halves as
//! in MongoDB: each shard groups its documents into partial states (`$willBeMerged: true`),
//! the router groups those by `_id` again, merging the states (`$doingMerge: true`, each
//! accumulator reading `$$ROOT.<field>`). A group keeps running whole on the router when an
//! accumulator's answer depends on the order the shards' outputs arrive in (`$first`,
//! `$last`, `$firstN`, `$lastN`), or when the stage does not parse without the command (a bad
//! specification, or one reading `let` variables): the merger's parse reports the former.

use crate::aggregate::Pipeline;
use crate::aggregate::limits::documents_needed;
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

impl SplitPipeline {
    /// The shards' part as mongos's explain shows it: a partial `$group` without the
    /// `$willBeMerged` flag (a shard infers it from the request there).
    pub fn shards_part_explained(&self) -> Vec<Document> {
        self.shards_part
            .iter()
            .map(|stage| match stage.get("$group") {
                Some(Bson::Document(spec)) if spec.contains_key(WILL_BE_MERGED) => {
                    let mut spec = spec.clone();
                    spec.remove(WILL_BE_MERGED);
                    doc! {"$group": spec}
                }
                _ => stage.clone(),
            })
            .collect()
    }
}

const WILL_BE_MERGED: &str = "$willBeMerged";

pub fn split(stages: &[Document]) -> SplitPipeline {
    if let Some(split) = split_geo_near(stages) {
        return split;
    }
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
    if let Some((partial, mut merger_part)) = rest.first().and_then(split_group) {
        shards_part.push(partial);
        merger_part.extend_from_slice(&rest[1..]);
        return SplitPipeline {
            shards_part,
            merger_part,
        };
    }
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

/// A leading `$geoNear`: each shard outputs its documents in distance order (only as many
/// as a following `$skip`/`$limit` run keeps), and the router merges the streams by the
/// distance field before running the rest.
fn split_geo_near(stages: &[Document]) -> Option<SplitPipeline> {
    let first = stages.first()?;
    let Some(Bson::Document(spec)) = first.get("$geoNear") else {
        return None;
    };
    let field = spec.get_str("distanceField").ok()?;
    let by_distance = doc! {"$sort": {field: 1}};
    let mut shards_part = vec![first.clone()];
    if let Some(n) = documents_needed(&stages[1..]) {
        shards_part.push(doc! {"$limit": n});
    }
    shards_part.push(by_distance.clone());
    let mut merger_part = vec![by_distance];
    merger_part.extend_from_slice(&stages[1..]);
    Some(SplitPipeline {
        shards_part,
        merger_part,
    })
}

/// A `$group`, `$count` or `$sortByCount` as the shards' partial `$group` and the merger's
/// stages (the merging `$group`, then what the shorthand adds after it); `None` when it must
/// run whole on the router.
fn split_group(stage: &Document) -> Option<(Document, Vec<Document>)> {
    let (group, after) = match (name(stage), stage.values().next()?) {
        ("$group", Bson::Document(spec)) => (spec.clone(), Vec::new()),
        ("$count", Bson::String(field)) => (
            doc! {"_id": Bson::Null, field.as_str(): {"$sum": 1}},
            vec![doc! {"$project": {"_id": 0, field.as_str(): 1}}],
        ),
        ("$sortByCount", by) => (
            doc! {"_id": by.clone(), "count": {"$sum": 1}},
            vec![doc! {"$sort": {"count": -1}}],
        ),
        _ => return None,
    };
    Pipeline::parse(std::slice::from_ref(stage)).ok()?;
    let mut merging = doc! {"_id": "$$ROOT._id"};
    for (field, spec) in &group {
        if field == "_id" {
            continue;
        }
        // Anything else (`$doingMerge` written by the client) leaves the group whole.
        let Bson::Document(spec) = spec else {
            return None;
        };
        let (operator, argument) = spec.iter().next()?;
        merging.insert(field, merging_accumulator(operator, argument, field)?);
    }
    merging.insert("$doingMerge", true);
    let mut partial = group;
    partial.insert(WILL_BE_MERGED, true);
    let mut merger = vec![doc! {"$group": merging}];
    merger.extend(after);
    Some((doc! {"$group": partial}, merger))
}

/// The merging form of `field: {operator: argument}`: the same accumulator over the
/// partials, which the shards output under `field`.
fn merging_accumulator(operator: &str, argument: &Bson, field: &str) -> Option<Document> {
    let partial = Bson::String(format!("$$ROOT.{field}"));
    let with = |name: &str| -> Option<Bson> {
        let Bson::Document(spec) = argument else {
            return None;
        };
        let mut spec = spec.clone();
        spec.insert(name, partial.clone());
        Some(Bson::Document(spec))
    };
    let argument = match operator {
        "$sum" | "$avg" | "$min" | "$max" | "$push" | "$addToSet" | "$mergeObjects"
        | "$stdDevPop" | "$stdDevSamp" => partial.clone(),
        "$count" => return Some(doc! {"$sum": partial}),
        "$top" | "$bottom" | "$topN" | "$bottomN" => with("output")?,
        "$minN" | "$maxN" | "$percentile" | "$median" => with("input")?,
        _ => return None,
    };
    Some(doc! {operator: argument})
}

/// Stages that read or write other collections.
const REACH_OTHER_COLLECTIONS: &[&str] =
    &["$lookup", "$graphLookup", "$unionWith", "$out", "$merge"];

/// Where the part of a pipeline the router runs itself starts — the router reaches other
/// collections through its own routing, wherever they are: at the first stage that reads or
/// writes one (inside a `$facet` too), or at the start of a pipeline that makes its own
/// documents (`$documents`). `None`: the shards can run it all.
pub fn router_part_start(stages: &[Document]) -> Option<usize> {
    if stages.first().is_some_and(|s| name(s) == "$documents") {
        return Some(0);
    }
    stages.iter().position(reaches_other_collections)
}

fn reaches_other_collections(stage: &Document) -> bool {
    match name(stage) {
        "$facet" => stage.get_document("$facet").is_ok_and(|facets| {
            facets.values().any(|pipeline| {
                pipeline.as_array().is_some_and(|stages| {
                    stages
                        .iter()
                        .filter_map(Bson::as_document)
                        .any(reaches_other_collections)
                })
            })
        }),
        other => REACH_OTHER_COLLECTIONS.contains(&other),
    }
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
            doc! {"$sort": {"a": 1}},
            doc! {"$match": {"_id": 1}},
        ]);
        assert_eq!(shards.len(), 4);
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
    fn the_router_runs_stages_that_reach_other_collections() {
        assert_eq!(
            router_part_start(&[
                doc! {"$match": {}},
                doc! {"$lookup": {}},
                doc! {"$out": "x"}
            ]),
            Some(1)
        );
        assert_eq!(
            router_part_start(&[doc! {"$facet": {"a": [{"$unionWith": "b"}]}}]),
            Some(0)
        );
        assert_eq!(
            router_part_start(&[doc! {"$documents": []}, doc! {"$match": {}}]),
            Some(0)
        );
        assert_eq!(
            router_part_start(&[doc! {"$facet": {"a": [{"$match": {}}]}}]),
            None
        );
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
                shards[..2],
                [doc! {stage: {}}, doc! {"$match": {"name": "a_1"}}]
            );
            assert!(shards[2].contains_key("$group"), "a partial group");
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
        assert_eq!(shards.len(), 3);
        assert_eq!(merger, 1);
    }

    #[test]
    fn a_group_runs_partially_on_the_shards_and_merges_on_the_router() {
        let split = split(&[
            doc! {"$match": {"a": 1}},
            doc! {"$group": {"_id": "$k", "s": {"$sum": "$v"}, "n": {"$count": {}},
            "t": {"$topN": {"n": 2, "output": "$v", "sortBy": {"v": -1}}},
            "p": {"$median": {"input": "$v", "method": "approximate"}}}},
            doc! {"$sort": {"_id": 1}},
        ]);
        assert_eq!(
            split.shards_part,
            vec![
                doc! {"$match": {"a": 1}},
                doc! {"$group": {"_id": "$k", "s": {"$sum": "$v"}, "n": {"$count": {}},
                "t": {"$topN": {"n": 2, "output": "$v", "sortBy": {"v": -1}}},
                "p": {"$median": {"input": "$v", "method": "approximate"}},
                "$willBeMerged": true}},
            ]
        );
        assert_eq!(
            split.merger_part,
            vec![
                doc! {"$group": {"_id": "$$ROOT._id", "s": {"$sum": "$$ROOT.s"},
                "n": {"$sum": "$$ROOT.n"},
                "t": {"$topN": {"n": 2, "output": "$$ROOT.t", "sortBy": {"v": -1}}},
                "p": {"$median": {"input": "$$ROOT.p", "method": "approximate"}},
                "$doingMerge": true}},
                doc! {"$sort": {"_id": 1}},
            ]
        );
        assert_eq!(
            split.shards_part_explained()[1],
            doc! {"$group": {"_id": "$k", "s": {"$sum": "$v"}, "n": {"$count": {}},
            "t": {"$topN": {"n": 2, "output": "$v", "sortBy": {"v": -1}}},
            "p": {"$median": {"input": "$v", "method": "approximate"}}}}
        );
    }

    #[test]
    fn count_and_sort_by_count_split_as_the_groups_they_are() {
        let split = super::split(&[doc! {"$count": "total"}]);
        assert_eq!(
            split.shards_part,
            vec![doc! {"$group": {"_id": null, "total": {"$sum": 1}, "$willBeMerged": true}}]
        );
        assert_eq!(
            split.merger_part,
            vec![
                doc! {"$group": {"_id": "$$ROOT._id", "total": {"$sum": "$$ROOT.total"}, "$doingMerge": true}},
                doc! {"$project": {"_id": 0, "total": 1}},
            ]
        );
        let split = super::split(&[doc! {"$sortByCount": "$k"}, doc! {"$limit": 2}]);
        assert_eq!(
            split.shards_part,
            vec![doc! {"$group": {"_id": "$k", "count": {"$sum": 1}, "$willBeMerged": true}}]
        );
        assert_eq!(split.merger_part.len(), 3);
        assert_eq!(split.merger_part[1], doc! {"$sort": {"count": -1}});
    }

    #[test]
    fn groups_that_cannot_split_run_whole_on_the_router() {
        for stage in [
            // Order-dependent accumulators.
            doc! {"$group": {"_id": "$k", "f": {"$first": "$v"}}},
            doc! {"$group": {"_id": "$k", "s": {"$sum": 1}, "l": {"$lastN": {"input": "$v", "n": 2}}}},
            // What the merger reports.
            doc! {"$group": {"_id": "$k", "f": {"$bogus": "$v"}}},
            doc! {"$group": {"n": {"$sum": 1}}},
            doc! {"$count": "$n"},
            doc! {"$sortByCount": "k"},
            // Variables the command's `let` defines.
            doc! {"$group": {"_id": "$$wanted"}},
            // Already a merge.
            doc! {"$group": {"_id": "$_id", "$doingMerge": true}},
        ] {
            let split = super::split(std::slice::from_ref(&stage));
            assert!(split.shards_part.is_empty(), "{stage}");
            assert_eq!(split.merger_part, vec![stage]);
        }
        // A group after a sort sees the merged sorted stream on the router.
        let (shards, merger) = split_of(vec![
            doc! {"$sort": {"v": 1}},
            doc! {"$group": {"_id": "$k", "f": {"$first": "$v"}}},
        ]);
        assert_eq!(shards, vec![doc! {"$sort": {"v": 1}}]);
        assert_eq!(merger, 2);
    }
}

/// Runs split pipelines as the cluster does — the shards' part over each shard's documents,
/// the merger's part over their outputs in shard order — against the whole pipeline over
/// every document. Shards holding consecutive runs of the documents see them in the same
/// order as one node, so even order-dependent outputs (`$push`, group order) must agree.
#[cfg(test)]
mod merge_tests {
    use super::split;
    use crate::aggregate::Pipeline;
    use bson::{Bson, Decimal128, Document, doc};

    fn documents() -> Vec<Document> {
        let numbers = [
            Bson::Int32(i32::MAX - 3),
            Bson::Int32(7),
            Bson::Int64(1 << 40),
            Bson::Double(2.5),
            Bson::Decimal128("1.25".parse::<Decimal128>().unwrap()),
            Bson::Null,
            Bson::String("x".into()),
            Bson::Int32(-12),
            Bson::Double(-0.5),
        ];
        (0..60)
            .map(|i: i32| {
                let mut doc =
                    doc! {"_id": i, "k": format!("k{}", i % 4), "o": {format!("f{}", i % 3): i}};
                if i % 11 != 5 {
                    doc.insert("v", numbers[(i as usize * 7) % numbers.len()].clone());
                }
                if i % 6 == 0 {
                    doc.insert("a", vec![Bson::Int32(i), Bson::Int32(i + 1)]);
                }
                doc
            })
            .collect()
    }

    fn run(stages: &[Document], docs: Vec<Document>) -> Vec<Document> {
        Pipeline::parse(stages).unwrap().run(docs).unwrap()
    }

    fn assert_split_agrees(stages: Vec<Document>) {
        let docs = documents();
        let whole = run(&stages, docs.clone());
        let split = split(&stages);
        assert!(
            split.shards_part.iter().any(|s| s.contains_key("$group")),
            "{stages:?} did not split its group"
        );
        let mut gathered = Vec::new();
        for shard in docs.chunks(23) {
            gathered.extend(run(&split.shards_part, shard.to_vec()));
        }
        assert_eq!(run(&split.merger_part, gathered), whole, "{stages:?}");
    }

    #[test]
    fn split_groups_give_the_whole_groups_answer() {
        let accumulators = doc! {
            "sum": {"$sum": "$v"}, "count": {"$count": {}}, "avg": {"$avg": "$v"},
            "min": {"$min": "$v"}, "max": {"$max": "$v"}, "push": {"$push": "$v"},
            "set": {"$addToSet": "$v"}, "merged": {"$mergeObjects": "$o"},
            "minN": {"$minN": {"input": "$v", "n": 3}}, "maxN": {"$maxN": {"input": "$v", "n": 2}},
            "top": {"$top": {"output": "$_id", "sortBy": {"v": 1, "_id": 1}}},
            "bottomN": {"$bottomN": {"output": ["$_id", "$v"], "sortBy": {"v": -1, "_id": 1}, "n": 3}},
            "topN": {"$topN": {"output": "$o", "sortBy": {"a": 1, "_id": -1}, "n": {"$cond": [{"$eq": ["$_id", "k1"]}, 1, 4]}}},
            "median": {"$median": {"input": "$v", "method": "approximate"}},
            "pct": {"$percentile": {"input": "$v", "p": [0.2, 0.9], "method": "approximate"}},
            "pop": {"$stdDevPop": "$_id"}, "samp": {"$stdDevSamp": {"$mod": ["$_id", 7]}},
        };
        // Sharded standard deviations merge in another order of operations: compare rounded.
        let rounded =
            doc! {"$set": {"pop": {"$round": ["$pop", 9]}, "samp": {"$round": ["$samp", 9]}}};
        for id in [
            Bson::from("$k"),
            Bson::Null,
            Bson::from(doc! {"k": "$k", "n": {"$isNumber": "$v"}}),
        ] {
            let mut spec = doc! {"_id": id};
            spec.extend(accumulators.clone());
            assert_split_agrees(vec![doc! {"$group": spec}, rounded.clone()]);
        }
        assert_split_agrees(vec![
            doc! {"$match": {"v": {"$ne": null}}},
            doc! {"$unwind": {"path": "$a", "preserveNullAndEmptyArrays": true}},
            doc! {"$group": {"_id": "$a", "n": {"$sum": 1}, "v": {"$push": "$v"}}},
            doc! {"$sort": {"n": -1, "_id": 1}},
            doc! {"$limit": 5},
        ]);
        assert_split_agrees(vec![doc! {"$count": "n"}]);
        assert_split_agrees(vec![doc! {"$sortByCount": {"$type": "$v"}}]);
        assert_split_agrees(vec![
            doc! {"$group": {"_id": "$k", "s": {"$sum": "$v"}}},
            doc! {"$group": {"_id": {"$type": "$s"}, "n": {"$sum": 1}}},
        ]);
    }

    #[test]
    fn int_sums_overflow_across_shards_as_in_one_place() {
        let docs: Vec<Document> = (0..6).map(|_| doc! {"v": i32::MAX}).collect();
        let stages = vec![doc! {"$group": {"_id": null, "s": {"$sum": "$v"}, "a": {"$avg": "$v"}}}];
        let split = split(&stages);
        let mut gathered = Vec::new();
        for shard in docs.chunks(2) {
            gathered.extend(run(&split.shards_part, shard.to_vec()));
        }
        let merged = run(&split.merger_part, gathered);
        assert_eq!(merged, run(&stages, docs));
        assert_eq!(
            merged,
            vec![doc! {"_id": null, "s": 6 * i64::from(i32::MAX), "a": f64::from(i32::MAX)}]
        );
    }
}
