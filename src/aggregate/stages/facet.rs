//! `$facet`: several sub-pipelines over the same input, whose outputs become the array fields
//! of one output document. The sub-pipelines run as the input arrives (each blocking stage in
//! them within its own limit), and the document they build holds at most
//! `internalQueryFacetMaxOutputDocSizeBytes` (100 MB) of results. Sub-pipelines that reach
//! other collections (`$lookup`...) run over the whole input at once, through the host.

use super::stream::Flow;
use super::{RunContext, Stage, with_context};
use crate::error::{MongoError, Result};
use crate::expression::LetVariables;
use crate::expression::fieldpath::validate_plain_field_name;
use crate::expression::value::{bson_type_name, render};
use bson::{Bson, Document};
use std::sync::Arc;

/// Stages whose constraints forbid them inside a `$facet` (they write, must come first, or
/// read something else than the input documents).
const NOT_ALLOWED_INSIDE: &[&str] = &[
    "$changeStream",
    "$changeStreamSplitLargeEvent",
    "$collStats",
    "$currentOp",
    "$documents",
    "$facet",
    "$geoNear",
    "$indexStats",
    "$listLocalSessions",
    "$listSampledQueries",
    "$listSearchIndexes",
    "$listSessions",
    "$merge",
    "$out",
    "$planCacheStats",
    "$search",
    "$searchMeta",
    "$vectorSearch",
];

pub struct Facet {
    facets: Vec<(String, Vec<Stage>)>,
}

pub fn parse(_name: &str, spec: &Bson, vars: &Arc<LetVariables>) -> Result<Vec<Stage>> {
    let spec = match spec {
        Bson::Document(spec) if !spec.is_empty() => spec,
        _ => {
            return Err(MongoError::location(
                40169,
                format!(
                    "the $facet specification must be a non-empty object, but found: {}",
                    render(Some(spec))
                ),
            ));
        }
    };
    let mut raw = Vec::with_capacity(spec.len());
    for (name, pipeline) in spec {
        validate_plain_field_name(name).map_err(|err| {
            with_context(
                err,
                "$facet pipeline names must follow the naming rules of field path expressions.",
            )
        })?;
        let Bson::Array(stages) = pipeline else {
            return Err(MongoError::location(
                40170,
                format!(
                    "arguments to $facet must be arrays, {name} is type {}",
                    bson_type_name(pipeline)
                ),
            ));
        };
        let mut specs = Vec::with_capacity(stages.len());
        for stage in stages {
            let Bson::Document(stage) = stage else {
                return Err(MongoError::location(
                    40171,
                    format!(
                        "elements of arrays in $facet spec must be non-empty objects, {name} argument contained an element of type {}: {}",
                        bson_type_name(stage),
                        render(Some(stage))
                    ),
                ));
            };
            specs.push(stage);
        }
        raw.push((name, specs));
    }
    let mut facets = Vec::with_capacity(raw.len());
    for (name, specs) in raw {
        crate::aggregate::limits::check_length(specs.len())?;
        if specs.is_empty() {
            return Err(MongoError::bad_value(
                "sub-pipeline in $facet stage cannot be empty",
            ));
        }
        let mut stages = Vec::with_capacity(specs.len());
        for stage in specs {
            if let Some(refused) = stage
                .keys()
                .next()
                .filter(|n| NOT_ALLOWED_INSIDE.contains(&n.as_str()))
            {
                return Err(MongoError::location(
                    40600,
                    format!("{refused} is not allowed to be used within a $facet stage"),
                ));
            }
            stages.extend(super::parse(stage, vars)?);
        }
        crate::aggregate::limits::check_parsed_length(stages.len())?;
        facets.push((name.clone(), stages));
    }
    Ok(vec![Stage::Facet(Facet { facets })])
}

impl Facet {
    pub fn reaches_other_collections(&self) -> bool {
        self.facets
            .iter()
            .any(|(_, stages)| stages.iter().any(Stage::reaches_other_collections))
    }

    /// [`Facet::run`] for sub-pipelines that read other collections through `host`.
    pub async fn run_with(
        &self,
        docs: Vec<Document>,
        ctx: &RunContext,
        host: &super::Host<'_>,
    ) -> Result<Vec<Document>> {
        let mut out = Output::default();
        for (name, stages) in &self.facets {
            let results = super::run_all(stages, docs.clone(), ctx, Some(host)).await?;
            out.add(name, results, ctx)?;
        }
        Ok(vec![out.doc])
    }

    /// The run of every sub-pipeline over the input as it arrives.
    pub fn start(&self, ctx: &RunContext) -> FacetRun {
        FacetRun {
            flows: self
                .facets
                .iter()
                .map(|(_, stages)| Flow::new(stages, ctx))
                .collect(),
            results: vec![Vec::new(); self.facets.len()],
            bytes: 0,
        }
    }
}

/// A `$facet` in progress: each sub-pipeline takes every input batch as it arrives (MongoDB's
/// tee buffer holds a batch at a time), and their results accumulate into the one output
/// document within `internalQueryFacetMaxOutputDocSizeBytes` (100 MB), past which the stage
/// fails with Location4031700 as MongoDB's does.
pub struct FacetRun {
    flows: Vec<Flow>,
    results: Vec<Vec<Bson>>,
    /// The results' bytes so far, over all facets.
    bytes: usize,
}

impl FacetRun {
    /// Feeds a batch to every sub-pipeline of `facet` (the stage this run is of).
    pub fn push(&mut self, facet: &Facet, docs: Vec<Document>, ctx: &RunContext) -> Result<()> {
        let last = self.flows.len().saturating_sub(1);
        let mut docs = Some(docs);
        for (i, (flow, (_, stages))) in self.flows.iter_mut().zip(&facet.facets).enumerate() {
            // The last sub-pipeline takes the batch itself, the others a copy.
            let batch = if i == last {
                docs.take().unwrap_or_default()
            } else {
                docs.clone().unwrap_or_default()
            };
            let out = flow.push(stages, batch, ctx)?;
            add_results(&mut self.results[i], &mut self.bytes, out, ctx)?;
        }
        Ok(())
    }

    /// The output document, once every sub-pipeline has finished.
    pub fn finish(self, facet: &Facet, ctx: &RunContext) -> Result<Document> {
        let FacetRun {
            flows,
            mut results,
            mut bytes,
        } = self;
        for (i, (flow, (_, stages))) in flows.into_iter().zip(&facet.facets).enumerate() {
            let results = &mut results[i];
            flow.finish(stages, ctx, &mut |out| {
                add_results(results, &mut bytes, out, ctx)
            })?;
        }
        let mut doc = Document::new();
        for ((name, _), results) in facet.facets.iter().zip(results) {
            doc.insert(name, Bson::Array(results));
        }
        Ok(doc)
    }
}

/// Adds a sub-pipeline's output to its results, counting their bytes.
fn add_results(
    results: &mut Vec<Bson>,
    bytes: &mut usize,
    out: Vec<Document>,
    ctx: &RunContext,
) -> Result<()> {
    let max_bytes = ctx.limits.max_facet_output_bytes;
    for mut doc in out {
        // A result is a value of the output document: its metadata stays behind.
        if ctx.vars.carries_metadata() {
            crate::expression::meta::strip(&mut doc);
        }
        *bytes += crate::spill::approximate_document_size(&doc);
        if *bytes > max_bytes {
            return Err(output_too_large(*bytes, max_bytes));
        }
        results.push(Bson::Document(doc));
    }
    Ok(())
}

fn output_too_large(bytes: usize, max_bytes: usize) -> MongoError {
    MongoError::location(
        4031700,
        format!(
            "document constructed by $facet is {bytes} bytes, which exceeds the limit of {max_bytes} bytes"
        ),
    )
}

/// The document `$facet` builds, and the bytes of results it holds.
#[derive(Default)]
struct Output {
    doc: Document,
    bytes: usize,
}

impl Output {
    fn add(&mut self, name: &str, results: Vec<Document>, ctx: &RunContext) -> Result<()> {
        let mut values = Vec::with_capacity(results.len());
        add_results(&mut values, &mut self.bytes, results, ctx)?;
        self.doc.insert(name, Bson::Array(values));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::aggregate::Pipeline;
    use bson::{Bson, Document, bson, doc};

    fn pipeline(stages: Bson) -> crate::error::Result<Pipeline> {
        let stages: Vec<Document> = stages
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_document().unwrap().clone())
            .collect();
        Pipeline::parse(&stages)
    }

    fn code(spec: Bson) -> (i32, String) {
        let err = pipeline(bson!([{"$facet": spec}])).err().unwrap();
        (err.code().code(), err.message().to_string())
    }

    fn artwork() -> Vec<Document> {
        vec![
            doc! {"_id": 1, "title": "The Pillars of Society", "year": 1926, "price": 199.99, "tags": ["painting", "satire", "Expressionism", "caricature"]},
            doc! {"_id": 2, "title": "Melancholy III", "year": 1902, "price": 280.00, "tags": ["woodcut", "Expressionism"]},
            doc! {"_id": 3, "title": "Dancer", "year": 1925, "price": 76.04, "tags": ["oil", "Surrealism", "painting"]},
            doc! {"_id": 4, "title": "The Great Wave off Kanagawa", "price": 167.30, "tags": ["woodblock", "ukiyo-e"]},
            doc! {"_id": 5, "title": "The Persistence of Memory", "year": 1931, "price": 483.00, "tags": ["Surrealism", "painting", "oil"]},
            doc! {"_id": 6, "title": "Composition VII", "year": 1913, "price": 385.00, "tags": ["oil", "painting", "abstract"]},
            doc! {"_id": 7, "title": "The Scream", "year": 1893, "tags": ["Expressionism", "painting", "oil"]},
            doc! {"_id": 8, "title": "Blue Flower", "year": 1918, "price": 118.42, "tags": ["abstract", "painting"]},
        ]
    }

    /// The manual's multi-faceted artwork example (categorizedByTags and categorizedByPrice).
    #[test]
    fn manual_artwork_facets() {
        let out = pipeline(bson!([{"$facet": {
            "categorizedByTags": [
                {"$unwind": "$tags"},
                {"$sortByCount": "$tags"}
            ],
            "categorizedByPrice": [
                {"$match": {"price": {"$exists": 1}}},
                {"$bucket": {
                    "groupBy": "$price",
                    "boundaries": [0, 150, 200, 300, 400],
                    "default": "Other",
                    "output": {"count": {"$sum": 1}, "titles": {"$push": "$title"}}
                }}
            ],
            "categorizedByYears(Auto)": [
                {"$bucketAuto": {"groupBy": "$year", "buckets": 4}}
            ]
        }}]))
        .unwrap()
        .run(artwork())
        .unwrap();
        assert_eq!(out.len(), 1);
        let facet = &out[0];
        let tags = facet.get_array("categorizedByTags").unwrap();
        assert_eq!(tags.first(), Some(&bson!({"_id": "painting", "count": 6})));
        assert_eq!(tags.len(), 10);
        assert_eq!(
            facet.get("categorizedByPrice"),
            Some(&bson!([
                {"_id": 0, "count": 2, "titles": ["Dancer", "Blue Flower"]},
                {"_id": 150, "count": 2, "titles": ["The Pillars of Society", "The Great Wave off Kanagawa"]},
                {"_id": 200, "count": 1, "titles": ["Melancholy III"]},
                {"_id": 300, "count": 1, "titles": ["Composition VII"]},
                {"_id": "Other", "count": 1, "titles": ["The Persistence of Memory"]}
            ]))
        );
        assert_eq!(
            facet.get("categorizedByYears(Auto)"),
            Some(&bson!([
                {"_id": {"min": null, "max": 1902}, "count": 2},
                {"_id": {"min": 1902, "max": 1918}, "count": 2},
                {"_id": {"min": 1918, "max": 1926}, "count": 2},
                {"_id": {"min": 1926, "max": 1931}, "count": 2}
            ]))
        );
    }

    #[test]
    fn empty_input_gives_empty_arrays() {
        let out = pipeline(bson!([{"$facet": {"a": [{"$match": {}}], "n": [{"$count": "n"}]}}]))
            .unwrap()
            .run(vec![])
            .unwrap();
        assert_eq!(out, vec![doc! {"a": [], "n": []}]);
    }

    #[test]
    fn specification_errors() {
        assert_eq!(code(bson!({})).0, 40169);
        assert_eq!(code(bson!(1)).0, 40169);
        assert_eq!(
            code(bson!({"a": 1})),
            (
                40170,
                "arguments to $facet must be arrays, a is type int".into()
            )
        );
        assert_eq!(code(bson!({"a": [1]})).0, 40171);
        assert_eq!(code(bson!({"a": []})).0, 2);
        assert_eq!(code(bson!({"$a": [{"$match": {}}]})).0, 16410);
        assert_eq!(code(bson!({"a.b": [{"$match": {}}]})).0, 16412);
        assert_eq!(
            code(bson!({"a": [{"$out": "x"}]})),
            (
                40600,
                "$out is not allowed to be used within a $facet stage".into()
            )
        );
        assert_eq!(code(bson!({"a": [{"$merge": "x"}]})).0, 40600);
        assert_eq!(
            code(bson!({"a": [{"$facet": {"b": [{"$match": {}}]}}]})).0,
            40600
        );
        assert_eq!(code(bson!({"a": [{"$foo": 1}]})).0, 40324);
    }

    /// The sub-pipelines run as the input arrives, each blocking stage within its own limit
    /// (a `$sort` spilling with disk use, the same output); the results the output document
    /// holds stop at `internalQueryFacetMaxOutputDocSizeBytes` (Location4031700).
    #[test]
    fn facets_within_the_memory_limits() {
        use crate::aggregate::MemoryLimits;
        let docs: Vec<Document> = (0..500)
            .map(|i| doc! {"_id": i, "k": (i * 13) % 500, "pad": "x".repeat(40)})
            .collect();
        let stages = pipeline(bson!([{"$facet": {
            "sorted": [{"$sort": {"k": -1}}, {"$project": {"k": 1}}],
            "count": [{"$count": "n"}],
            "kept": [{"$match": {"k": {"$lt": 5}}}],
        }}]))
        .unwrap();
        let expected = stages.run(docs.clone()).unwrap();
        assert_eq!(expected[0].get_array("sorted").unwrap().len(), 500);
        let dir = tempfile::tempdir().unwrap();
        let sorting = |allow| MemoryLimits {
            max_sort_bytes: 5_000,
            ..MemoryLimits::spilling_to(dir.path(), allow)
        };
        let run = |limits| {
            let stages = [doc! {"$facet": {
                "sorted": [{"$sort": {"k": -1}}, {"$project": {"k": 1}}],
                "count": [{"$count": "n"}],
                "kept": [{"$match": {"k": {"$lt": 5}}}],
            }}];
            crate::aggregate::Pipeline::parse(&stages)
                .unwrap()
                .with_limits(limits)
                .run(docs.clone())
        };
        assert_eq!(run(sorting(false)).unwrap_err().code().code(), 292);
        assert_eq!(run(sorting(true)).unwrap(), expected);
        assert!(dir.path().join("_tmp").exists(), "the sort spilled");
        let err = run(MemoryLimits {
            max_facet_output_bytes: 10_000,
            ..MemoryLimits::unlimited()
        })
        .unwrap_err();
        assert_eq!(
            (err.code().code(), err.code().name().to_string()),
            (4031700, "Location4031700".to_string())
        );
        assert!(
            err.message()
                .contains("which exceeds the limit of 10000 bytes"),
            "{err}"
        );
    }
}
