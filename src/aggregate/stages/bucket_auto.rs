//! `$bucketAuto`: documents sorted by the `groupBy` value and cut into `buckets` groups of
//! about equal size; equal values stay in one bucket, and a `granularity` rounds the
//! boundaries to a preferred number series. As in MongoDB the input goes through the spilling
//! sort (`internalDocumentSourceBucketAutoMaxMemoryBytes`, 100 MB: sorted runs spill with
//! `allowDiskUse`, else QueryExceededMemoryLimitNoDiskUseAllowed), and the buckets are made one
//! at a time as the sorted documents are read back.

use super::granularity::Rounder;
use super::keyed_sort::{KeyedDocs, KeyedSort};
use super::{RunContext, Stage};
use crate::aggregate::accumulators::{Accumulator, State};
use crate::document::order::{compare_collated, values_equal};
use crate::error::{MongoError, Result};
use crate::expression::numeric::to_f64;
use crate::expression::value::{bson_type_name, compare, format_double_g, is_number, render};
use crate::expression::{Expression, LetVariables};
use bson::{Bson, Document, doc};
use std::cmp::Ordering;
use std::sync::Arc;

pub struct BucketAuto {
    group_by: Expression,
    buckets: usize,
    accumulators: Vec<Accumulator>,
    granularity: Option<Rounder>,
}

pub fn parse(_name: &str, spec: &Bson, vars: &Arc<LetVariables>) -> Result<Vec<Stage>> {
    let Bson::Document(spec) = spec else {
        return Err(MongoError::location(
            40240,
            format!(
                "The argument to $bucketAuto must be an object, but found type: {}",
                bson_type_name(spec)
            ),
        ));
    };
    let scope = vars.scope();
    let mut group_by = None;
    let mut buckets = None;
    let mut accumulators = Vec::new();
    let mut granularity = None;
    for (name, value) in spec {
        match name.as_str() {
            "groupBy" => {
                let is_expression = match value {
                    Bson::Document(d) => d.keys().next().is_some_and(|k| k.starts_with('$')),
                    Bson::String(s) => s.len() > 1 && s.starts_with('$'),
                    _ => false,
                };
                if !is_expression {
                    return Err(MongoError::location(
                        40239,
                        format!(
                            "The $bucketAuto 'groupBy' field must be defined as a $-prefixed path or an expression object, but found: {}",
                            render(Some(value))
                        ),
                    ));
                }
                group_by = Some(Expression::parse_in(value, scope)?);
            }
            "buckets" => buckets = Some(parse_buckets(value)?),
            "output" => {
                let Bson::Document(fields) = value else {
                    return Err(MongoError::location(
                        40244,
                        format!(
                            "The $bucketAuto 'output' field must be an object, but found type: {}",
                            bson_type_name(value)
                        ),
                    ));
                };
                for (field, acc) in fields {
                    accumulators.push(Accumulator::parse(field, acc, vars)?);
                }
            }
            "granularity" => {
                let Bson::String(name) = value else {
                    return Err(MongoError::location(
                        40261,
                        format!(
                            "The $bucketAuto 'granularity' field must be a string, but found type: {}",
                            bson_type_name(value)
                        ),
                    ));
                };
                granularity = Some(Rounder::parse(name)?);
            }
            other => {
                return Err(MongoError::location(
                    40245,
                    format!("Unrecognized option to $bucketAuto: {other}"),
                ));
            }
        }
    }
    let (Some(group_by), Some(buckets)) = (group_by, buckets) else {
        return Err(MongoError::location(
            40246,
            "$bucketAuto requires 'groupBy' and 'buckets' to be specified",
        ));
    };
    if buckets <= 0 {
        return Err(MongoError::location(
            40243,
            format!("The $bucketAuto 'buckets' field must be greater than 0, but found: {buckets}"),
        ));
    }
    if accumulators.is_empty() {
        accumulators.push(Accumulator::count("count"));
    }
    Ok(vec![Stage::BucketAuto(BucketAuto {
        group_by,
        buckets: usize::try_from(buckets).unwrap_or(usize::MAX),
        accumulators,
        granularity,
    })])
}

/// A number with an exact 32-bit integer value.
fn parse_buckets(value: &Bson) -> Result<i32> {
    if !is_number(value) {
        return Err(MongoError::location(
            40241,
            format!(
                "The $bucketAuto 'buckets' field must be a numeric value, but found type: {}",
                bson_type_name(value)
            ),
        ));
    }
    let number = to_f64(value);
    let exact = match value {
        Bson::Int32(v) => Some(*v),
        Bson::Int64(v) => i32::try_from(*v).ok(),
        _ if number.fract() == 0.0 && number.abs() <= f64::from(i32::MAX) => Some(number as i32),
        _ => None,
    };
    exact.ok_or_else(|| {
        MongoError::location(
            40242,
            format!(
                "The $bucketAuto 'buckets' field must be representable as a 32-bit integer, but found {}",
                format_double_g(number)
            ),
        )
    })
}

/// `$bucketAuto`'s output as it is read: its sorted input and where the bucketing is.
pub struct BucketOutput {
    sorted: KeyedDocs,
    /// The documents each bucket aims at.
    approx_size: usize,
    /// Buckets made so far.
    number: usize,
    /// The first document of the next bucket, read while closing the last one.
    carried: Option<(Bson, Document)>,
    previous_max: Option<Bson>,
}

impl BucketOutput {
    /// The next bucket of `stage` (the `$bucketAuto` this output is of).
    pub fn next_doc(&mut self, stage: &BucketAuto, ctx: &RunContext) -> Result<Option<Document>> {
        stage.next_bucket(self, ctx)
    }

    fn next(&mut self) -> Result<Option<(Bson, Document)>> {
        Ok(self
            .sorted
            .next_keyed()?
            .map(|(mut keys, doc)| (keys.pop().unwrap_or(Bson::Null), doc)))
    }
}

struct Bucket {
    min: Bson,
    max: Bson,
    states: Vec<State>,
}

impl BucketAuto {
    /// The sort the stage's input goes into: by `groupBy` value, within
    /// `internalDocumentSourceBucketAutoMaxMemoryBytes`, spilling as MongoDB's sorter does.
    pub fn sort(&self, ctx: &RunContext) -> KeyedSort {
        let limits = &ctx.limits;
        KeyedSort::new(
            1,
            None,
            None,
            limits.sort_limits(limits.max_bucket_auto_bytes),
            ctx.vars.collation_arc(),
        )
    }

    /// Takes one input document into `sort`.
    pub fn push(&self, sort: &mut KeyedSort, doc: Document, ctx: &RunContext) -> Result<()> {
        let key = self.key(&doc, ctx)?;
        sort.push(vec![key], doc)
    }

    /// The buckets over the sorted input, made one at a time as they are read.
    pub fn finish(&self, sort: KeyedSort) -> Result<BucketOutput> {
        // Each bucket aims at an equal share of the documents, so the count comes first.
        let count = usize::try_from(sort.len()).unwrap_or(usize::MAX);
        let approx_size = ((count as f64 / self.buckets as f64).round() as usize).max(1);
        Ok(BucketOutput {
            sorted: sort.finish()?,
            approx_size,
            number: 0,
            carried: None,
            previous_max: None,
        })
    }

    /// The next bucket from `out`, `None` once the buckets or the documents are used up.
    fn next_bucket(&self, out: &mut BucketOutput, ctx: &RunContext) -> Result<Option<Document>> {
        if out.number >= self.buckets {
            return Ok(None);
        }
        out.number += 1;
        let Some((key, doc)) = out
            .carried
            .take()
            .map_or_else(|| out.next(), |c| Ok(Some(c)))?
        else {
            return Ok(None);
        };
        let min = match (self.granularity, out.previous_max.take()) {
            (Some(_), Some(previous)) => previous,
            (Some(rounder), None) => rounder.round_down(&key)?,
            (None, _) => key.clone(),
        };
        let mut bucket = Bucket {
            min,
            max: key.clone(),
            states: self.start_bucket(ctx)?,
        };
        self.add(&mut bucket, key, &doc, ctx)?;
        let is_last = out.number == self.buckets;
        let mut taken = 1;
        while taken < out.approx_size || is_last {
            let Some((key, doc)) = out.next()? else {
                break;
            };
            self.add(&mut bucket, key, &doc, ctx)?;
            taken += 1;
        }
        let mut next = out.next()?;
        if let Some(rounder) = self.granularity {
            let boundary = rounder.round_up(&bucket.max)?;
            while let Some((key, doc)) = next.take() {
                let absorbed = compare(Some(&boundary), Some(&key)) == Ordering::Greater
                    || values_equal(&bucket.max, &key);
                if !absorbed {
                    next = Some((key, doc));
                    break;
                }
                self.add(&mut bucket, key, &doc, ctx)?;
                next = out.next()?;
            }
            bucket.max = match &next {
                Some((key, _)) if to_f64(&boundary) == 0.0 => rounder.round_down(key)?,
                _ => boundary,
            };
        } else {
            // Values the pipeline's collation holds equal stay in one bucket.
            let collation = ctx.vars.collation();
            while let Some((key, doc)) = next.take() {
                if !compare_collated(&bucket.max, &key, collation).is_eq() {
                    next = Some((key, doc));
                    break;
                }
                self.add(&mut bucket, key, &doc, ctx)?;
                next = out.next()?;
            }
            if let Some((key, _)) = &next {
                bucket.max = key.clone();
            }
        }
        out.carried = next;
        out.previous_max = Some(bucket.max.clone());
        Ok(Some(self.output(bucket)))
    }

    /// The `groupBy` value (missing groups with null), checked against the granularity.
    fn key(&self, doc: &Document, ctx: &RunContext) -> Result<Bson> {
        let key = self.group_by.evaluate(&ctx.variables(doc))?;
        if self.granularity.is_some() {
            let number = key.as_ref().filter(|k| is_number(k)).ok_or_else(|| {
                MongoError::location(
                    40258,
                    format!(
                        "$bucketAuto can specify a 'granularity' with numeric boundaries only, but found a value with type: {}",
                        crate::expression::value::type_name(key.as_ref())
                    ),
                )
            })?;
            let number = to_f64(number);
            if number.is_nan() {
                return Err(MongoError::location(
                    40259,
                    "$bucketAuto can specify a 'granularity' with numeric boundaries only, but found a NaN",
                ));
            }
            if number < 0.0 {
                return Err(MongoError::location(
                    40260,
                    "$bucketAuto can specify a 'granularity' with non-negative numbers only, but found a negative number",
                ));
            }
        }
        Ok(key.unwrap_or(Bson::Null))
    }

    /// A new bucket's accumulator states (`n` arguments read no group key here: none exists).
    fn start_bucket(&self, ctx: &RunContext) -> Result<Vec<State>> {
        let empty = Document::new();
        let vars = ctx.variables(&empty);
        self.accumulators
            .iter()
            .map(|acc| acc.start(&vars))
            .collect()
    }

    fn add(&self, bucket: &mut Bucket, key: Bson, doc: &Document, ctx: &RunContext) -> Result<()> {
        bucket.max = key;
        let vars = ctx.variables(doc);
        for (acc, state) in self.accumulators.iter().zip(bucket.states.iter_mut()) {
            state.process(acc.argument().evaluate(&vars)?)?;
        }
        Ok(())
    }

    fn output(&self, bucket: Bucket) -> Document {
        let mut out = doc! {"_id": {"min": bucket.min, "max": bucket.max}};
        for (acc, state) in self.accumulators.iter().zip(bucket.states) {
            out.insert(acc.field.clone(), state.finish());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use crate::aggregate::Pipeline;
    use bson::{Bson, Document, bson, doc};

    fn run(spec: Bson, docs: Vec<Document>) -> crate::error::Result<Vec<Document>> {
        Pipeline::parse(&[doc! {"$bucketAuto": spec}])?.run(docs)
    }

    fn code(spec: Bson) -> i32 {
        Pipeline::parse(&[doc! {"$bucketAuto": spec}])
            .err()
            .map_or(0, |e| e.code().code())
    }

    fn artwork() -> Vec<Document> {
        vec![
            doc! {"_id": 1, "title": "The Pillars of Society", "year": 1926, "price": 199.99, "dimensions": {"height": 39, "width": 21, "units": "in"}},
            doc! {"_id": 2, "title": "Melancholy III", "year": 1902, "price": 280.00, "dimensions": {"height": 49, "width": 32, "units": "in"}},
            doc! {"_id": 3, "title": "Dancer", "year": 1925, "price": 76.04, "dimensions": {"height": 25, "width": 20, "units": "in"}},
            doc! {"_id": 4, "title": "The Great Wave off Kanagawa", "price": 167.30, "dimensions": {"height": 24, "width": 36, "units": "in"}},
            doc! {"_id": 5, "title": "The Persistence of Memory", "year": 1931, "price": 483.00, "dimensions": {"height": 20, "width": 24, "units": "in"}},
            doc! {"_id": 6, "title": "Composition VII", "year": 1913, "price": 385.00, "dimensions": {"height": 30, "width": 46, "units": "in"}},
            doc! {"_id": 7, "title": "The Scream", "year": 1893, "dimensions": {"height": 24, "width": 18, "units": "in"}},
            doc! {"_id": 8, "title": "Blue Flower", "year": 1918, "price": 118.42, "dimensions": {"height": 24, "width": 20, "units": "in"}},
        ]
    }

    /// The manual's "Single Facet Aggregation" example.
    #[test]
    fn manual_price_buckets() {
        let out = run(bson!({"groupBy": "$price", "buckets": 4}), artwork()).unwrap();
        assert_eq!(
            out,
            vec![
                doc! {"_id": {"min": null, "max": 118.42}, "count": 2},
                doc! {"_id": {"min": 118.42, "max": 199.99}, "count": 2},
                doc! {"_id": {"min": 199.99, "max": 385.0}, "count": 2},
                doc! {"_id": {"min": 385.0, "max": 483.0}, "count": 2},
            ]
        );
    }

    /// The manual's year buckets with `output` accumulators.
    #[test]
    fn manual_year_buckets_with_output() {
        let out = run(
            bson!({"groupBy": "$year", "buckets": 3, "output": {"count": {"$sum": 1}, "years": {"$push": "$year"}}}),
            artwork(),
        )
        .unwrap();
        assert_eq!(
            out,
            vec![
                doc! {"_id": {"min": null, "max": 1913}, "count": 3, "years": [1893, 1902]},
                doc! {"_id": {"min": 1913, "max": 1926}, "count": 3, "years": [1913, 1918, 1925]},
                doc! {"_id": {"min": 1926, "max": 1931}, "count": 2, "years": [1926, 1931]},
            ]
        );
    }

    /// Boundaries rounded to the 1-2-5 series; the values the rounded boundary covers move
    /// into the bucket.
    #[test]
    fn granularity_rounds_boundaries() {
        let docs = (1..=10).map(|i| doc! {"v": i}).collect();
        let out = run(
            bson!({"groupBy": "$v", "buckets": 2, "granularity": "1-2-5"}),
            docs,
        )
        .unwrap();
        assert_eq!(
            out,
            vec![
                doc! {"_id": {"min": 0.5, "max": 10.0}, "count": 9},
                doc! {"_id": {"min": 10.0, "max": 20.0}, "count": 1},
            ]
        );
        let docs = (0..4).map(|i| doc! {"v": i}).collect();
        let out = run(
            bson!({"groupBy": "$v", "buckets": 2, "granularity": "POWERSOF2"}),
            docs,
        )
        .unwrap();
        assert_eq!(
            out,
            vec![
                doc! {"_id": {"min": 0, "max": 2}, "count": 2},
                doc! {"_id": {"min": 2, "max": 4}, "count": 2},
            ]
        );
    }

    #[test]
    fn equal_values_stay_together_and_few_documents() {
        let docs = vec![doc! {"v": 1}, doc! {"v": 1}, doc! {"v": 1}, doc! {"v": 2}];
        let out = run(bson!({"groupBy": "$v", "buckets": 2}), docs).unwrap();
        assert_eq!(
            out,
            vec![
                doc! {"_id": {"min": 1, "max": 2}, "count": 3},
                doc! {"_id": {"min": 2, "max": 2}, "count": 1}
            ]
        );
        let out = run(bson!({"groupBy": "$v", "buckets": 5}), vec![doc! {"v": 1}]).unwrap();
        assert_eq!(out, vec![doc! {"_id": {"min": 1, "max": 1}, "count": 1}]);
        assert!(
            run(bson!({"groupBy": "$v", "buckets": 5}), vec![])
                .unwrap()
                .is_empty()
        );
    }

    /// Past `internalDocumentSourceBucketAutoMaxMemoryBytes` the sort spills with disk use
    /// (the same buckets, positional accumulators in input order) and fails without.
    #[test]
    fn sorts_within_the_memory_limit_spilling_with_disk_use() {
        use crate::aggregate::MemoryLimits;
        let docs: Vec<Document> = (0..500)
            .map(|i| doc! {"_id": i, "v": (i * 37) % 101, "pad": "x".repeat(50)})
            .collect();
        let stages = [doc! {"$bucketAuto": {"groupBy": "$v", "buckets": 7,
        "output": {"n": {"$sum": 1}, "ids": {"$push": "$_id"}, "first": {"$first": "$_id"}}}}];
        let expected = Pipeline::parse(&stages).unwrap().run(docs.clone()).unwrap();
        assert_eq!(expected.len(), 7);
        let dir = tempfile::tempdir().unwrap();
        let limited = |allow| MemoryLimits {
            max_bucket_auto_bytes: 4_000,
            ..MemoryLimits::spilling_to(dir.path(), allow)
        };
        let err = Pipeline::parse(&stages)
            .unwrap()
            .with_limits(limited(false))
            .run(docs.clone())
            .unwrap_err();
        assert_eq!(
            (err.code().code(), err.code().name().to_string()),
            (292, "QueryExceededMemoryLimitNoDiskUseAllowed".to_string())
        );
        assert_eq!(
            err.message(),
            "PlanExecutor error during aggregation :: caused by :: Sort exceeded memory limit of 4000 bytes, but did not opt in to external sorting."
        );
        assert!(!dir.path().join("_tmp").exists());
        let out = Pipeline::parse(&stages)
            .unwrap()
            .with_limits(limited(true))
            .run(docs)
            .unwrap();
        assert!(dir.path().join("_tmp").exists(), "the sort spilled");
        assert_eq!(out, expected);
    }

    #[test]
    fn errors() {
        assert_eq!(code(bson!(1)), 40240);
        assert_eq!(code(bson!({"groupBy": "v", "buckets": 1})), 40239);
        assert_eq!(code(bson!({"groupBy": "$v", "buckets": "a"})), 40241);
        assert_eq!(code(bson!({"groupBy": "$v", "buckets": 1.5})), 40242);
        assert_eq!(code(bson!({"groupBy": "$v", "buckets": 0})), 40243);
        assert_eq!(
            code(bson!({"groupBy": "$v", "buckets": 1, "output": 1})),
            40244
        );
        assert_eq!(code(bson!({"groupBy": "$v", "buckets": 1, "x": 1})), 40245);
        assert_eq!(code(bson!({"groupBy": "$v"})), 40246);
        assert_eq!(
            code(bson!({"groupBy": "$v", "buckets": 1, "granularity": 1})),
            40261
        );
        assert_eq!(
            code(bson!({"groupBy": "$v", "buckets": 1, "granularity": "R7"})),
            40257
        );
        let run_code = |doc: Document| {
            run(
                bson!({"groupBy": "$v", "buckets": 1, "granularity": "R5"}),
                vec![doc],
            )
            .unwrap_err()
            .code()
            .code()
        };
        assert_eq!(run_code(doc! {"v": "a"}), 40258);
        assert_eq!(run_code(doc! {}), 40258);
        assert_eq!(run_code(doc! {"v": f64::NAN}), 40259);
        assert_eq!(run_code(doc! {"v": -1}), 40260);
    }
}
