//! `$sample`: `size` documents chosen at random, without replacement: each document gets a
//! random key and the `size` least keys are kept, through the spilling sort (top-k), as
//! MongoDB samples a collection it does not read at random.

use super::keyed_sort::KeyedSort;
use super::{RunContext, Stage};
use crate::error::{MongoError, Result};
use crate::expression::LetVariables;
use crate::expression::numeric::to_i64;
use crate::expression::value::is_number;
use bson::{Bson, Document};
use std::cell::Cell;
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;

pub fn parse(_name: &str, spec: &Bson, _vars: &Arc<LetVariables>) -> Result<Vec<Stage>> {
    let Bson::Document(spec) = spec else {
        return Err(MongoError::location(
            28745,
            "the $sample stage specification must be an object",
        ));
    };
    let mut size = None;
    for (name, value) in spec {
        if name != "size" {
            return Err(MongoError::location(
                28748,
                format!("unrecognized option to $sample: {name}"),
            ));
        }
        if !is_number(value) {
            return Err(MongoError::location(
                28746,
                "size argument to $sample must be a number",
            ));
        }
        let n = to_i64(value);
        if n < 0 {
            return Err(MongoError::location(
                28747,
                "size argument to $sample must not be negative",
            ));
        }
        size = Some(n.unsigned_abs());
    }
    let size =
        size.ok_or_else(|| MongoError::location(28749, "$sample stage must specify a size"))?;
    Ok(vec![Stage::Sample(size)])
}

/// The sort the stage's input goes into: by a random value, keeping the `size` first (top-k),
/// as MongoDB runs `$sample` (a `$sort` on `{$meta: "randVal"}` with a limit): within
/// `internalQueryMaxBlockingSortMemoryUsageBytes`, spilling with `allowDiskUse`.
pub fn sort(size: u64, ctx: &RunContext) -> KeyedSort {
    let keep = usize::try_from(size).unwrap_or(usize::MAX);
    let limits = &ctx.limits;
    KeyedSort::new(
        1,
        None,
        Some(keep),
        limits.sort_limits(limits.max_sort_bytes),
        None,
    )
}

/// A sampled document with the random value it was drawn by as its `randVal` metadata, when
/// the pipeline's documents carry metadata (a stage reads it).
pub fn with_rand_val(key: Vec<Bson>, mut doc: Document, ctx: &RunContext) -> Document {
    if ctx.vars.carries_metadata() {
        if let Some(value) = key.into_iter().next() {
            doc.insert(crate::expression::meta::RAND_VAL_FIELD, value);
        }
    }
    doc
}

/// Takes one input document into `sort` with its random key (nothing is kept for a size of 0).
pub fn push(sort: &mut KeyedSort, size: u64, doc: Document) -> Result<()> {
    if size == 0 {
        return Ok(());
    }
    let key = RNG.with(|rng| {
        let mut state = rng.get();
        let key = state.unit();
        rng.set(state);
        key
    });
    sort.push(vec![Bson::Double(key)], doc)
}

thread_local! {
    static RNG: Cell<Rng> = Cell::new(Rng::seeded());
}

/// xorshift64*, seeded from the process's random hasher keys.
#[derive(Clone, Copy)]
struct Rng(u64);

impl Rng {
    fn seeded() -> Rng {
        let mut hasher = RandomState::new().build_hasher();
        hasher.write_u64(0x9E37_79B9_7F4A_7C15);
        Rng(hasher.finish() | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A double in [0, 1), from the top 53 bits.
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use crate::aggregate::Pipeline;
    use bson::{Bson, Document, bson, doc};
    use std::collections::HashSet;

    fn code(spec: Bson) -> i32 {
        Pipeline::parse(&[doc! {"$sample": spec}])
            .err()
            .map_or(0, |e| e.code().code())
    }

    fn sample(size: i32, n: i32) -> Vec<Document> {
        let docs = (0..n).map(|i| doc! {"_id": i}).collect();
        Pipeline::parse(&[doc! {"$sample": {"size": size}}])
            .unwrap()
            .run(docs)
            .unwrap()
    }

    #[test]
    fn samples_without_replacement() {
        let out = sample(3, 10);
        assert_eq!(out.len(), 3);
        let ids: HashSet<i32> = out.iter().map(|d| d.get_i32("_id").unwrap()).collect();
        assert_eq!(ids.len(), 3);
        assert!(ids.iter().all(|id| (0..10).contains(id)));
        assert_eq!(sample(20, 5).len(), 5);
        assert!(sample(0, 5).is_empty());
        // Every document can be chosen.
        let mut seen = HashSet::new();
        for _ in 0..200 {
            seen.extend(sample(1, 4).iter().map(|d| d.get_i32("_id").unwrap()));
        }
        assert_eq!(seen.len(), 4);
    }

    /// `$sample` keeps only its size of the input (top-k of random keys): a small sample fits
    /// any input; a large one past `internalQueryMaxBlockingSortMemoryUsageBytes` spills with
    /// disk use and fails without.
    #[test]
    fn samples_within_the_sort_memory_limit() {
        use crate::aggregate::MemoryLimits;
        let docs: Vec<Document> = (0..2000)
            .map(|i| doc! {"_id": i, "pad": "x".repeat(100)})
            .collect();
        let dir = tempfile::tempdir().unwrap();
        let limited = |allow| MemoryLimits {
            max_sort_bytes: 20_000,
            ..MemoryLimits::spilling_to(dir.path(), allow)
        };
        let run = |size: i32, allow: bool| {
            Pipeline::parse(&[doc! {"$sample": {"size": size}}])
                .unwrap()
                .with_limits(limited(allow))
                .run(docs.clone())
        };
        assert_eq!(run(10, false).unwrap().len(), 10);
        let err = run(1500, false).unwrap_err();
        assert_eq!(err.code().code(), 292);
        assert!(
            err.message().ends_with(
                "Sort exceeded memory limit of 20000 bytes, but did not opt in to external sorting."
            ),
            "{err}"
        );
        let out = run(1500, true).unwrap();
        assert!(dir.path().join("_tmp").exists(), "the sort spilled");
        let ids: HashSet<i32> = out.iter().map(|d| d.get_i32("_id").unwrap()).collect();
        assert_eq!((out.len(), ids.len()), (1500, 1500));
        // Random order: not the input order.
        let in_order = out
            .windows(2)
            .all(|w| w[0].get_i32("_id").unwrap() < w[1].get_i32("_id").unwrap());
        assert!(!in_order);
    }

    #[test]
    fn specification_errors() {
        assert_eq!(code(bson!(1)), 28745);
        assert_eq!(code(bson!({"size": "a"})), 28746);
        assert_eq!(code(bson!({"size": -1})), 28747);
        assert_eq!(code(bson!({"size": 1, "x": 1})), 28748);
        assert_eq!(code(bson!({})), 28749);
        assert_eq!(code(bson!({"size": 2.0})), 0);
    }
}
