//! Document semantics of the query language, independent of storage: filters, projections,
//! sort orders and update operators over `bson::Document`s. Pure functions, no IO.
//!
//! - [`filter`]: match expressions (`find`/`update`/`delete` filters) and their evaluation,
//!   including `$expr` and `$jsonSchema` ([`JsonSchema`], also for collection validators).
//! - [`projection`]: `find` projections (inclusion, exclusion, `$slice`, `$elemMatch`, `$`,
//!   computed fields that are aggregation expressions).
//! - [`LetVariables`]: a command's `let` values and `$$NOW`, shared by its filter and
//!   projection (`Filter::parse_with_variables`, `Projection::parse_with_variables`).
//! - [`sort`]: sort specifications and MongoDB's sort order over documents (also the router's
//!   merge order).
//! - [`update`]: update operators, replacement documents and upsert seeds.
//! - [`bounds`] and [`key_intervals`]: the values and encoded key intervals a filter allows for
//!   key fields (index scans, shard targeting).
//! - `pcre`: MongoDB (PCRE) regular expressions on the `regex` crate.
//! - `values`: type names, MongoDB's rendering of values in messages, shared coercions.

pub mod bounds;
pub mod filter;
pub mod key_intervals;
pub(crate) mod pcre;
pub mod projection;
pub mod sort;
pub mod update;
mod values;

pub use crate::aggregate::expression::LetVariables;
pub use filter::{Filter, JsonSchema};
pub use projection::Projection;
pub use sort::SortSpec;
pub use update::{UpdateContext, UpdateSpec, upsert_seed};

#[cfg(test)]
mod robustness {
    //! Arbitrary operator soup must produce answers or errors, never panics.

    use super::*;
    use bson::{Bson, Document};
    use proptest::prelude::*;

    const KEYS: &[&str] = &[
        "a",
        "b",
        "a.b",
        "a.0",
        "0",
        "_id",
        "$",
        "a.$",
        "a.$[]",
        "a.$[x]",
        "",
        "$eq",
        "$ne",
        "$gt",
        "$lt",
        "$in",
        "$nin",
        "$and",
        "$or",
        "$nor",
        "$not",
        "$exists",
        "$type",
        "$all",
        "$elemMatch",
        "$size",
        "$regex",
        "$options",
        "$mod",
        "$bitsAllSet",
        "$set",
        "$unset",
        "$inc",
        "$mul",
        "$push",
        "$each",
        "$slice",
        "$sort",
        "$position",
        "$pull",
        "$pop",
        "$addToSet",
        "$rename",
        "$bit",
        "and",
        "$min",
        "$currentDate",
        "$literal",
        "$meta",
        "x",
        "x.b",
        "$expr",
        "$jsonSchema",
        "$add",
        "$cond",
        "bsonType",
        "properties",
        "required",
        "items",
        "enum",
        "minimum",
        "multipleOf",
        "additionalProperties",
    ];

    fn leaf() -> impl Strategy<Value = Bson> {
        prop_oneof![
            Just(Bson::Null),
            any::<i32>().prop_map(Bson::Int32),
            prop_oneof![Just(-1i32), Just(0), Just(1), Just(2)].prop_map(Bson::Int32),
            any::<i64>().prop_map(Bson::Int64),
            any::<f64>().prop_map(Bson::Double),
            any::<bool>().prop_map(Bson::Boolean),
            "[a-z(\\[\\]\\\\.*+?{}$^|]{0,6}".prop_map(Bson::String),
            "[a-z(\\\\.*+{}$]{0,5}".prop_map(|p| Bson::RegularExpression(bson::Regex {
                pattern: p,
                options: "i".into()
            })),
            Just(Bson::MinKey),
            Just(Bson::Undefined),
        ]
    }

    fn value() -> impl Strategy<Value = Bson> {
        leaf().prop_recursive(4, 40, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Bson::Array),
                prop::collection::vec((prop::sample::select(KEYS), inner), 0..4).prop_map(
                    |fields| {
                        let mut d = Document::new();
                        for (k, v) in fields {
                            d.insert(k, v);
                        }
                        Bson::Document(d)
                    }
                ),
            ]
        })
    }

    fn document() -> impl Strategy<Value = Document> {
        value().prop_map(|v| match v {
            Bson::Document(d) => d,
            other => bson::doc! {"a": other},
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        #[test]
        fn nothing_panics(spec in document(), target in document(), filters in prop::collection::vec(document(), 0..2)) {
            if let Ok(filter) = Filter::parse(&spec) {
                let _ = filter.matches_with_position(&target);
                let _ = filter.try_matches(&target);
                let _ = filter.equality("a");
                if let Ok(p) = Projection::parse_with_filter(&target, &filter) {
                    let _ = p.apply(&target);
                    let _ = p.apply_with_filter(&target, &filter);
                }
            }
            if let Ok(p) = Projection::parse(&spec) {
                let _ = p.apply(&target);
                let _ = p.try_apply(&target);
            }
            if let Ok(s) = SortSpec::parse(&spec) {
                let _ = s.compare(&target, &spec);
            }
            let _ = upsert_seed(&spec);
            if let Ok(u) = UpdateSpec::parse(&Bson::Document(spec.clone()), Some(&filters)) {
                let matched = Filter::parse(&target).ok();
                let ctx = UpdateContext {
                    is_upsert_insert: false,
                    now: bson::DateTime::from_millis(0),
                    matched_filter: matched.as_ref(),
                };
                let mut d = target.clone();
                let _ = u.apply(&mut d, &ctx);
            }
        }
    }
}
