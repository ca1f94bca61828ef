//! The stream runner against running each stage over all of its input: same output whatever
//! the batches, a satisfied `$limit` ending the input, and `$sort` and `$group` past their
//! memory limits spilling (or failing without disk use).

use super::{MemoryLimits, RunContext, Stage, no_variables};
use crate::aggregate::Pipeline;
use crate::error::Result;
use bson::{Bson, Document, bson, doc};
use std::path::Path;

fn stages(spec: Bson) -> Vec<Document> {
    spec.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_document().unwrap().clone())
        .collect()
}

fn parse(spec: &Bson) -> Vec<Stage> {
    stages(spec.clone())
        .iter()
        .flat_map(|s| super::parse(s, &no_variables()).unwrap())
        .collect()
}

/// Every stage over all of its input, one after the other (no top-k, no early end).
fn stage_by_stage(spec: &Bson, mut docs: Vec<Document>) -> Result<Vec<Document>> {
    let ctx = RunContext::at_epoch();
    for stage in parse(spec) {
        docs = stage.run(docs, &ctx)?;
    }
    Ok(docs)
}

/// The whole pipeline fed `docs` in batches of `size`.
fn in_batches(pipeline: &Pipeline, docs: &[Document], size: usize) -> Result<Vec<Document>> {
    let mut run = pipeline.start();
    let mut out = Vec::new();
    for batch in docs.chunks(size) {
        if !run.wants_input() {
            break;
        }
        out.extend(run.push(batch.to_vec())?);
    }
    run.finish_into(|batch| {
        out.extend(batch);
        Ok(())
    })?;
    Ok(out)
}

fn input(n: i32) -> Vec<Document> {
    (0..n)
        .map(|i| {
            doc! {"_id": i, "k": (i * 7) % 11, "g": format!("g{}", i % 5), "tags": (0..i % 3).collect::<Vec<_>>(),
            "pad": "x".repeat((i % 17) as usize)}
        })
        .collect()
}

fn limits(dir: &Path, sort: usize, group: usize, allow_disk_use: bool) -> MemoryLimits {
    MemoryLimits {
        max_sort_bytes: sort,
        max_group_bytes: group,
        allow_disk_use,
        spill_dir: Some(dir.join("_tmp")),
        ..MemoryLimits::unlimited()
    }
}

fn pipelines() -> Vec<Bson> {
    vec![
        bson!([{"$match": {"k": {"$gt": 2}}}, {"$project": {"k": 1, "g": 1}}, {"$skip": 3}, {"$limit": 20}]),
        bson!([{"$sort": {"k": -1}}, {"$skip": 2}, {"$limit": 9}, {"$set": {"twice": {"$multiply": ["$k", 2]}}}]),
        bson!([{"$unwind": "$tags"}, {"$group": {"_id": "$g", "n": {"$sum": 1}, "ids": {"$push": "$_id"}, "f": {"$first": "$k"}}}, {"$sort": {"_id": 1}}]),
        bson!([{"$sortByCount": "$k"}, {"$limit": 4}]),
        bson!([{"$limit": 40}, {"$bucketAuto": {"groupBy": "$k", "buckets": 3}}]),
        bson!([{"$facet": {"a": [{"$count": "n"}], "b": [{"$sort": {"_id": -1}}, {"$limit": 2}, {"$project": {"_id": 1}}]}}]),
        bson!([{"$setWindowFields": {"partitionBy": "$g", "sortBy": {"_id": 1}, "output": {"run": {"$sum": "$k", "window": {"documents": ["unbounded", "current"]}}}}}, {"$match": {"run": {"$gt": 20}}}]),
        bson!([{"$replaceWith": {"k": "$k", "g": "$g"}}, {"$group": {"_id": {"k": "$k"}, "gs": {"$addToSet": "$g"}}}, {"$sort": {"_id.k": 1}}, {"$skip": 1}]),
        bson!([{"$sort": {"g": 1, "k": 1}}, {"$limit": 15}, {"$sort": {"_id": -1}}, {"$count": "n"}]),
    ]
}

#[test]
fn batches_give_the_output_of_stage_by_stage_runs() {
    let docs = input(120);
    for spec in pipelines() {
        let expected = stage_by_stage(&spec, docs.clone()).unwrap();
        let pipeline = Pipeline::parse(&stages(spec.clone())).unwrap();
        assert_eq!(pipeline.run(docs.clone()).unwrap(), expected, "{spec}");
        for size in [1, 2, 7, 1000] {
            assert_eq!(
                in_batches(&pipeline, &docs, size).unwrap(),
                expected,
                "{spec} in batches of {size}"
            );
        }
    }
}

#[test]
fn a_satisfied_limit_ends_the_input() {
    let pipeline = Pipeline::parse(&stages(bson!([
        {"$match": {"ok": true}},
        {"$limit": 2},
        {"$project": {"q": {"$divide": [1, "$d"]}}}
    ])))
    .unwrap();
    let mut run = pipeline.start();
    assert!(run.wants_input());
    let out = run
        .push(vec![doc! {"ok": true, "d": 1}, doc! {"ok": false, "d": 0}])
        .unwrap();
    assert_eq!(out.len(), 1);
    assert!(run.wants_input());
    let out = run
        .push(vec![doc! {"ok": true, "d": 2}, doc! {"ok": true, "d": 0}])
        .unwrap();
    assert_eq!(out, vec![doc! {"q": 0.5}]);
    // The division by zero of the next document is never evaluated.
    assert!(!run.wants_input());
    // A blocking stage before the limit needs all of its input.
    let blocking = Pipeline::parse(&stages(bson!([{"$sort": {"a": 1}}, {"$limit": 1}]))).unwrap();
    let mut run = blocking.start();
    run.push(vec![doc! {"a": 2}, doc! {"a": 1}]).unwrap();
    assert!(run.wants_input());
    let mut out = Vec::new();
    run.finish_into(|b| {
        out.extend(b);
        Ok(())
    })
    .unwrap();
    assert_eq!(out, vec![doc! {"a": 1}]);
}

#[test]
fn groups_spill_past_the_limit_and_merge_by_key() {
    let dir = tempfile::tempdir().unwrap();
    let docs = input(600);
    for (i, spec) in [
        bson!([{"$group": {"_id": "$k", "n": {"$sum": 1}, "ids": {"$push": "$_id"}, "f": {"$first": "$_id"},
            "l": {"$last": "$_id"}, "a": {"$avg": "$_id"}, "s": {"$addToSet": "$g"}, "m": {"$max": "$pad"},
            "top": {"$topN": {"n": 2, "sortBy": {"_id": -1}, "output": "$_id"}}}}, {"$sort": {"_id": 1}}]),
        bson!([{"$group": {"_id": {"g": "$g", "k": "$k"}, "n": {"$count": {}}, "$willBeMerged": true}}, {"$sort": {"_id": 1}}]),
    ]
    .into_iter()
    .enumerate()
    {
        let expected = Pipeline::parse(&stages(spec.clone())).unwrap().run(docs.clone()).unwrap();
        let here = dir.path().join(i.to_string());
        let pipeline = Pipeline::parse(&stages(spec.clone()))
            .unwrap()
            .with_limits(limits(&here, usize::MAX, 2_000, true));
        assert_eq!(in_batches(&pipeline, &docs, 50).unwrap(), expected, "{spec}");
        assert!(here.join("_tmp").is_dir(), "the group spilled: {spec}");
        let left = std::fs::read_dir(here.join("_tmp")).unwrap().count();
        assert_eq!(left, 0, "runs are removed once merged");
    }
    // Spilled groups come out in key order.
    let pipeline = Pipeline::parse(&stages(
        bson!([{"$group": {"_id": "$k", "n": {"$sum": 1}}}]),
    ))
    .unwrap()
    .with_limits(limits(dir.path(), usize::MAX, 300, true));
    let keys: Vec<i32> = pipeline
        .run(docs.clone())
        .unwrap()
        .iter()
        .map(|d| d.get_i32("_id").unwrap())
        .collect();
    assert_eq!(keys, (0..11).collect::<Vec<_>>());
}

#[test]
fn merging_groups_spill_too() {
    let dir = tempfile::tempdir().unwrap();
    let partial = Pipeline::parse(&stages(bson!([{"$group": {"_id": "$g", "s": {"$sum": "$k"}, "a": {"$avg": "$k"}, "$willBeMerged": true}}])))
        .unwrap()
        .run(input(300))
        .unwrap();
    let parts: Vec<Document> = [partial.clone(), partial.clone(), partial].concat();
    let merging = bson!([{"$group": {"_id": "$$ROOT._id", "s": {"$sum": "$$ROOT.s"}, "a": {"$avg": "$$ROOT.a"}, "$doingMerge": true}}, {"$sort": {"_id": 1}}]);
    let expected = Pipeline::parse(&stages(merging.clone()))
        .unwrap()
        .run(parts.clone())
        .unwrap();
    let spilled = Pipeline::parse(&stages(merging))
        .unwrap()
        .with_limits(limits(dir.path(), usize::MAX, 200, true));
    assert_eq!(in_batches(&spilled, &parts, 2).unwrap(), expected);
    assert!(dir.path().join("_tmp").is_dir());
}

#[test]
fn sorts_spill_past_the_limit_and_top_k_stays_within_it() {
    let dir = tempfile::tempdir().unwrap();
    let docs = input(500);
    let spec = bson!([{"$sort": {"k": 1, "pad": -1}}, {"$project": {"pad": 0}}]);
    let expected = Pipeline::parse(&stages(spec.clone()))
        .unwrap()
        .run(docs.clone())
        .unwrap();
    let pipeline = Pipeline::parse(&stages(spec)).unwrap().with_limits(limits(
        dir.path(),
        3_000,
        usize::MAX,
        true,
    ));
    assert_eq!(in_batches(&pipeline, &docs, 30).unwrap(), expected);
    assert!(dir.path().join("_tmp").is_dir(), "the sort spilled");
    // Sort + limit keeps only the best few: no disk needed.
    let top = Pipeline::parse(&stages(bson!([{"$sort": {"k": -1, "_id": 1}}, {"$skip": 2}, {"$limit": 3}, {"$project": {"_id": 1}}])))
        .unwrap()
        .with_limits(limits(dir.path(), 3_000, usize::MAX, false));
    assert_eq!(
        top.run(docs).unwrap(),
        vec![doc! {"_id": 25}, doc! {"_id": 36}, doc! {"_id": 47}]
    );
}

#[test]
fn past_the_limit_without_disk_use_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let docs = input(500);
    let group = Pipeline::parse(&stages(
        bson!([{"$group": {"_id": "$_id", "d": {"$push": "$$ROOT"}}}]),
    ))
    .unwrap()
    .with_limits(limits(dir.path(), usize::MAX, 2_000, false));
    let err = group.run(docs.clone()).unwrap_err();
    assert_eq!(err.code().code(), 292);
    assert_eq!(
        err.code().name(),
        "QueryExceededMemoryLimitNoDiskUseAllowed"
    );
    assert_eq!(
        err.message(),
        "PlanExecutor error during aggregation :: caused by :: Exceeded memory limit for $group, but didn't allow external sort. Pass allowDiskUse:true to opt in."
    );
    let sort = Pipeline::parse(&stages(bson!([{"$sort": {"k": 1}}])))
        .unwrap()
        .with_limits(limits(dir.path(), 3_000, usize::MAX, false));
    let err = sort.run(docs.clone()).unwrap_err();
    assert_eq!(err.code().code(), 292);
    assert_eq!(
        err.message(),
        "PlanExecutor error during aggregation :: caused by :: Sort exceeded memory limit of 3000 bytes, but did not opt in to external sorting."
    );
    // Allowed but with nowhere to spill (no data directory): the same refusal.
    let nowhere = MemoryLimits {
        spill_dir: None,
        ..limits(dir.path(), 3_000, usize::MAX, true)
    };
    let sort = Pipeline::parse(&stages(bson!([{"$sort": {"k": 1}}])))
        .unwrap()
        .with_limits(nowhere);
    assert_eq!(sort.run(docs).unwrap_err().code().code(), 292);
    assert!(!dir.path().join("_tmp").exists());
}
