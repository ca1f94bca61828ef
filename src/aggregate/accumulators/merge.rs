//! Partial groups and their merging, for a `$group` split over shards: each shard's `$group`
//! (`$willBeMerged`) outputs every accumulator's [`State::partial`] instead of its final
//! value, and the router's `$group` (`$doingMerge`) folds those partials into one state per
//! group with [`State::merge`], whose final value is what one `$group` over every document
//! would give. The partial shapes are the server's (`$sum`: `[type, sum, addend, decimal?]`,
//! `$avg`: `{count, ps}`, `$stdDev*`: `{m2, mean, count}`, `$top*`/`$bottom*`:
//! `[{generatedSortKey, output}]`, the rest their final value), except `$percentile`/`$median`,
//! computed exactly here, whose partial is their numeric inputs.

use super::State;
use super::basic::{add_to_set, merge_into};
use super::n_results::partial_items;
use crate::error::{MongoError, Result};
use crate::expression::fold::keep_extreme;
use crate::expression::value::{Value, render};
use bson::{Bson, doc};
use std::cmp::Ordering;

impl State {
    /// The state as a shard sends it to the merging `$group`.
    pub fn partial(self) -> Bson {
        match self {
            State::Sum(sum) => sum.partial(),
            State::Avg(sum, count) => Bson::Document(doc! {
                "count": i64::try_from(count).unwrap_or(i64::MAX),
                "ps": sum.partial(),
            }),
            State::StdDev(state) => state.partial(),
            State::Percentile(state) => state.partial(),
            State::Bounded(state) => state.partial(),
            other => other.finish(),
        }
    }

    /// Folds in one shard's partial of the same group (made by [`State::partial`]).
    pub fn merge(&mut self, partial: Value) -> Result<()> {
        let partial = partial.as_ref();
        match self {
            State::Sum(sum) => sum.merge_partial(partial)?,
            State::Avg(sum, count) => {
                let Some(Bson::Document(fields)) = partial else {
                    return Err(malformed("$avg", "an object", partial));
                };
                sum.merge_partial(fields.get("ps"))?;
                *count += match fields.get("count") {
                    Some(Bson::Int64(n)) => u64::try_from(*n).unwrap_or(0),
                    Some(Bson::Int32(n)) => u64::try_from(*n).unwrap_or(0),
                    _ => return Err(malformed("$avg", "{count, ps}", partial)),
                };
            }
            State::Min(best, c) => {
                keep_extreme(best, partial.cloned(), Ordering::Less, c.as_deref())
            }
            State::Max(best, c) => {
                keep_extreme(best, partial.cloned(), Ordering::Greater, c.as_deref())
            }
            State::First(first) => {
                if first.is_none() {
                    *first = Some(partial.cloned());
                }
            }
            State::Last(last) => *last = Some(partial.cloned()),
            State::Push(values) => values.extend(partial_items(partial)?),
            State::AddToSet(values, c) => {
                for value in partial_items(partial)? {
                    add_to_set(values, Some(value), c.as_deref());
                }
            }
            State::MergeObjects(merged) => merge_into(merged, partial.cloned())?,
            State::StdDev(state) => state.merge_partial(partial)?,
            State::Percentile(state) => state.merge_partial(partial)?,
            State::FirstN(state) => {
                for value in partial_items(partial)? {
                    state.add(Some(value));
                }
            }
            State::LastN(state) => {
                for value in partial_items(partial)? {
                    state.add(Some(value));
                }
            }
            State::Bounded(state) => state.merge_partial(partial)?,
        }
        Ok(())
    }
}

fn malformed(name: &str, expected: &str, found: Option<&Bson>) -> MongoError {
    MongoError::type_mismatch(format!(
        "a partial {name} must be {expected}, found {}",
        render(found)
    ))
}

#[cfg(test)]
mod tests {
    use super::super::Accumulator;
    use crate::aggregate::stages::no_variables;
    use crate::expression::Variables;
    use bson::{Bson, DateTime, Decimal128, Document, bson, doc};

    /// One accumulator `spec` over `docs` in one place, and split: each part accumulated
    /// on its own into a partial, the partials merged in order. Returns both final values.
    fn whole_and_merged(spec: Bson, parts: &[Vec<Document>]) -> (Bson, Bson) {
        let vars = no_variables();
        let acc = Accumulator::parse("f", &spec, &vars).unwrap();
        let empty = Document::new();
        let key_vars = vars.variables(&empty);
        let mut whole = acc.start(&key_vars).unwrap();
        let mut merged = acc.start(&key_vars).unwrap();
        for part in parts {
            let mut partial = acc.start(&key_vars).unwrap();
            for doc in part {
                let doc_vars = Variables::new(doc, DateTime::from_millis(0));
                let value = acc.argument().evaluate(&doc_vars).unwrap();
                whole.process(value.clone()).unwrap();
                partial.process(value).unwrap();
            }
            // The partial travels as a document field, as from a shard to the router.
            let sent = bson::to_vec(&doc! {"f": partial.partial()}).unwrap();
            let received = bson::from_slice::<Document>(&sent).unwrap();
            merged.merge(received.get("f").cloned()).unwrap();
        }
        (whole.finish(), merged.finish())
    }

    /// `v` values as documents, in parts.
    fn parts(values: &[&[Bson]]) -> Vec<Vec<Document>> {
        values
            .iter()
            .map(|part| {
                part.iter()
                    .map(|v| doc! {"v": v.clone(), "o": {"x": v.clone()}})
                    .collect()
            })
            .collect()
    }

    fn dec(text: &str) -> Bson {
        Bson::Decimal128(text.parse::<Decimal128>().unwrap())
    }

    fn assert_same(spec: Bson, values: &[&[Bson]]) -> Bson {
        let (whole, merged) = whole_and_merged(spec.clone(), &parts(values));
        assert_eq!(whole, merged, "{spec}");
        merged
    }

    fn mixed() -> Vec<Vec<Bson>> {
        vec![
            vec![
                Bson::Int32(3),
                Bson::Null,
                bson!("s"),
                Bson::Int64(7),
                Bson::Double(2.5),
            ],
            vec![],
            vec![dec("1.25"), Bson::Int32(-4), bson!([1, 2]), Bson::Int32(3)],
            vec![Bson::Double(0.5), Bson::Boolean(true), Bson::Int64(-9)],
        ]
    }

    fn mixed_refs(values: &[Vec<Bson>]) -> Vec<&[Bson]> {
        values.iter().map(Vec::as_slice).collect()
    }

    #[test]
    fn sums_keep_their_type_across_parts() {
        let ints = [Bson::Int32(i32::MAX), Bson::Int32(1)];
        // int32 parts whose total overflows become a long, as one sum would.
        let merged = assert_same(bson!({"$sum": "$v"}), &[&ints[..1], &ints[1..]]);
        assert_eq!(merged, Bson::Int64(2_147_483_648));
        let longs = [Bson::Int64(i64::MAX), Bson::Int64(1), Bson::Int32(5)];
        let merged = assert_same(
            bson!({"$sum": "$v"}),
            &[&longs[..1], &longs[1..2], &longs[2..]],
        );
        assert!(matches!(merged, Bson::Double(_)), "{merged}");
        let small = [Bson::Int32(1), Bson::Int64(2)];
        assert_eq!(
            assert_same(bson!({"$sum": "$v"}), &[&small[..1], &small[1..]]),
            Bson::Int64(3)
        );
        assert_eq!(
            assert_same(bson!({"$sum": "$v"}), &[&[], &[]]),
            Bson::Int32(0)
        );
        // Decimals and doubles that cancel: the full state travels, so nothing is lost.
        let cancel = [
            Bson::Double(1e34),
            dec("0.1"),
            dec("0.11"),
            Bson::Double(-1e34),
        ];
        let merged = assert_same(bson!({"$sum": "$v"}), &[&cancel[..2], &cancel[2..]]);
        assert_eq!(merged.to_string(), dec("0.21").to_string());
        let infinite = [Bson::Double(f64::INFINITY), Bson::Int32(1)];
        assert_eq!(
            assert_same(bson!({"$sum": "$v"}), &[&infinite[..1], &infinite[1..]]),
            Bson::Double(f64::INFINITY)
        );
        assert_eq!(
            assert_same(bson!({"$count": {}}), &[&small[..1], &[], &small]),
            Bson::Int32(3)
        );
        let values = mixed();
        assert_same(bson!({"$sum": "$v"}), &mixed_refs(&values));
    }

    #[test]
    fn averages_of_mixed_types() {
        let values = mixed();
        let merged = assert_same(bson!({"$avg": "$v"}), &mixed_refs(&values));
        assert!(matches!(merged, Bson::Decimal128(_)), "{merged}");
        let doubles = [Bson::Int32(1), Bson::Int64(2), Bson::Double(4.5)];
        assert_eq!(
            assert_same(bson!({"$avg": "$v"}), &[&doubles[..1], &doubles[1..]]),
            Bson::Double(2.5)
        );
        assert_eq!(
            assert_same(bson!({"$avg": "$v"}), &[&[bson!("x")], &[]]),
            Bson::Null
        );
    }

    #[test]
    fn extremes_sets_arrays_and_objects() {
        let values = mixed();
        let values = mixed_refs(&values);
        assert_eq!(assert_same(bson!({"$min": "$v"}), &values), Bson::Int64(-9));
        assert_eq!(
            assert_same(bson!({"$max": "$v"}), &values),
            Bson::Boolean(true)
        );
        assert_eq!(
            assert_same(bson!({"$min": "$v"}), &[&[Bson::Null], &[]]),
            Bson::Null
        );
        assert_same(bson!({"$push": "$v"}), &values);
        assert_same(bson!({"$push": "$missing"}), &values);
        let repeated = [
            Bson::Int32(1),
            Bson::Double(1.0),
            Bson::Int64(2),
            Bson::Int32(2),
        ];
        assert_eq!(
            assert_same(
                bson!({"$addToSet": "$v"}),
                &[&repeated[..1], &repeated[1..]]
            ),
            bson!([1, 2_i64])
        );
        assert_same(bson!({"$mergeObjects": "$o"}), &values);
        assert_same(bson!({"$first": "$v"}), &values);
        assert_same(bson!({"$last": "$v"}), &values);
    }

    #[test]
    fn standard_deviations_and_percentiles() {
        let values = mixed();
        let values = mixed_refs(&values);
        for spec in [bson!({"$stdDevPop": "$v"}), bson!({"$stdDevSamp": "$v"})] {
            let (whole, merged) = whole_and_merged(spec, &parts(&values));
            let (Bson::Double(whole), Bson::Double(merged)) = (whole, merged) else {
                panic!("doubles");
            };
            assert!((whole - merged).abs() < 1e-12, "{whole} {merged}");
        }
        let one = [Bson::Int32(4)];
        assert_eq!(
            assert_same(bson!({"$stdDevSamp": "$v"}), &[&one, &[]]),
            Bson::Null
        );
        assert_eq!(
            assert_same(bson!({"$stdDevPop": "$v"}), &[&one, &[], &one]),
            Bson::Double(0.0)
        );
        assert_same(
            bson!({"$percentile": {"input": "$v", "p": [0.1, 0.5, 0.9], "method": "approximate"}}),
            &values,
        );
        assert_same(
            bson!({"$median": {"input": "$v", "method": "approximate"}}),
            &values,
        );
    }

    #[test]
    fn bounded_accumulators() {
        let values = mixed();
        let values = mixed_refs(&values);
        for spec in [
            bson!({"$minN": {"input": "$v", "n": 3}}),
            bson!({"$maxN": {"input": "$v", "n": 2}}),
            bson!({"$firstN": {"input": "$v", "n": 4}}),
            bson!({"$lastN": {"input": "$v", "n": 4}}),
            bson!({"$topN": {"output": "$o", "sortBy": {"v": 1}, "n": 3}}),
            bson!({"$bottomN": {"output": "$o", "sortBy": {"v": -1}, "n": 3}}),
            bson!({"$top": {"output": "$v", "sortBy": {"v": -1}}}),
            bson!({"$bottom": {"output": "$v", "sortBy": {"v": 1}}}),
        ] {
            assert_same(spec, &values);
        }
    }

    #[test]
    fn malformed_partials_are_type_mismatches() {
        let vars = no_variables();
        let empty = Document::new();
        for (spec, partial) in [
            (bson!({"$sum": "$v"}), bson!(5)),
            (bson!({"$sum": "$v"}), bson!([16, 1.0])),
            (bson!({"$avg": "$v"}), bson!({"count": 1})),
            (bson!({"$push": "$v"}), bson!("x")),
            (bson!({"$stdDevPop": "$v"}), bson!({"m2": 1.0})),
            (
                bson!({"$topN": {"output": "$v", "sortBy": {"v": 1}, "n": 1}}),
                bson!([1]),
            ),
        ] {
            let acc = Accumulator::parse("f", &spec, &vars).unwrap();
            let mut state = acc.start(&vars.variables(&empty)).unwrap();
            let err = state.merge(Some(partial)).unwrap_err();
            assert_eq!(err.code().code(), 14, "{spec}");
        }
    }
}
