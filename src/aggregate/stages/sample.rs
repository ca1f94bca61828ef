//! `$sample`: `size` documents chosen at random, without replacement.

use super::Stage;
use crate::error::{MongoError, Result};
use crate::expression::LetVariables;
use crate::expression::numeric::to_i64;
use crate::expression::value::is_number;
use bson::{Bson, Document};
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

/// A uniform sample of `size` documents, in random order (a partial Fisher-Yates shuffle).
pub fn run(mut docs: Vec<Document>, size: u64) -> Vec<Document> {
    let take = usize::try_from(size).unwrap_or(usize::MAX).min(docs.len());
    let mut rng = Rng::seeded();
    for i in 0..take {
        let j = i + rng.below(docs.len() - i);
        docs.swap(i, j);
    }
    docs.truncate(take);
    docs
}

/// xorshift64*, seeded from the process's random hasher keys.
struct Rng(u64);

impl Rng {
    fn seeded() -> Rng {
        let mut hasher = RandomState::new().build_hasher();
        hasher.write_u64(0x9E37_79B9_7F4A_7C15);
        Rng(hasher.finish() | 1)
    }

    fn below(&mut self, bound: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let x = self.0.wrapping_mul(0x2545_F491_4F6C_DD1D);
        usize::try_from(x % (bound as u64)).unwrap_or(0)
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
