//! Document semantics of the query language, independent of storage: filters, projections and
//! sort orders over `bson::Document`s, on the expression language ([`crate::expression`]). Pure
//! functions, no IO.
//!
//! - [`filter`]: match expressions (`find`/`update`/`delete` filters) and their evaluation,
//!   including `$expr` and `$jsonSchema` ([`JsonSchema`], also for collection validators).
//! - [`projection`]: `find` projections (inclusion, exclusion, `$slice`, `$elemMatch`, `$`,
//!   computed fields that are aggregation expressions). A command's `let` values reach filters
//!   and projections as [`crate::expression::LetVariables`].
//! - [`sort`]: sort specifications and MongoDB's sort order over documents (also the router's
//!   merge order).
//! - [`bounds`] and [`key_intervals`]: the values and encoded key intervals a filter allows for
//!   key fields (index scans, and the catalog's shard targeting).
//! - [`text`]: text search: languages, the tokenizer, text index specifications and scores,
//!   `$text` searches.
//! - [`geo`]: geometries (GeoJSON, legacy pairs), `$geoWithin`/`$geoIntersects` operands and
//!   their spherical (S2) and plane predicates.
//! - `values`: type names, MongoDB's rendering of values in messages, shared coercions (also
//!   for the update language above).

pub mod bounds;
pub mod filter;
pub mod geo;
pub mod key_intervals;
pub mod projection;
pub mod sort;
pub mod text;
pub(crate) mod values;

pub use filter::{Filter, JsonSchema};
pub use projection::Projection;
pub use sort::SortSpec;

#[cfg(test)]
pub(crate) mod robustness {
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

    pub(crate) fn document() -> impl Strategy<Value = Document> {
        value().prop_map(|v| match v {
            Bson::Document(d) => d,
            other => bson::doc! {"a": other},
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        #[test]
        fn nothing_panics(spec in document(), target in document()) {
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
        }
    }
}
