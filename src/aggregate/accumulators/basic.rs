//! The accumulators that keep one collection per group: `$push`, `$addToSet` and
//! `$mergeObjects` (`$sum`, `$avg`, `$min` and `$max` keep the expression layer's folds,
//! [`crate::expression::fold`]); and the tests of the accumulators that keep one value.

use crate::document::collation::Collation;
use crate::document::order::compare_collated;
use crate::error::{MongoError, Result};
use crate::expression::value::{Value, is_nullish, render, type_name};
use bson::{Bson, Document};

/// `$addToSet` keeps the first of equal values (by MongoDB equality, so `1` and `1.0` are one
/// value, and strings the collation holds equal are too) and ignores missing.
pub fn add_to_set(values: &mut Vec<Bson>, input: Value, collation: Option<&Collation>) {
    if let Some(value) = input {
        if !values
            .iter()
            .any(|seen| compare_collated(seen, &value, collation).is_eq())
        {
            values.push(value);
        }
    }
}

/// `$mergeObjects`: a later document's fields replace earlier values (keeping their position);
/// null and missing are skipped, anything else is an error.
pub fn merge_into(merged: &mut Document, input: Value) -> Result<()> {
    match input {
        Some(Bson::Document(doc)) => {
            merged.extend(doc);
            Ok(())
        }
        value if is_nullish(value.as_ref()) => Ok(()),
        value => Err(MongoError::location(
            40400,
            format!(
                "$mergeObjects requires object inputs, but input {} is of type {}",
                render(value.as_ref()),
                type_name(value.as_ref())
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::super::Accumulator;
    use super::super::tests::{group, group_error};
    use crate::aggregate::stages::no_variables;
    use bson::{Bson, DateTime, Document, bson, doc};

    /// Runs one accumulator over documents whose `v` field holds `values` (`None`: no field).
    fn accumulate(spec: Bson, values: &[Option<Bson>]) -> Bson {
        let vars = no_variables();
        let acc = Accumulator::parse("f", &spec, &vars).unwrap();
        let empty = Document::new();
        let mut state = acc.start(&vars.variables(&empty)).unwrap();
        for value in values {
            let doc = value.clone().map_or_else(Document::new, |v| doc! {"v": v});
            let doc_vars = crate::expression::Variables::new(&doc, DateTime::from_millis(0));
            state
                .process(acc.argument().evaluate(&doc_vars).unwrap())
                .unwrap();
        }
        state.finish()
    }

    #[test]
    fn sum_promotes_and_ignores_non_numbers() {
        let n = |v: Bson| Some(v);
        assert_eq!(
            accumulate(bson!({"$sum": 1}), &[None, None]),
            Bson::Int32(2)
        );
        assert_eq!(accumulate(bson!({"$sum": "$v"}), &[]), Bson::Int32(0));
        assert_eq!(
            accumulate(bson!({"$sum": "$v"}), &[n(bson!("x")), None, n(Bson::Null)]),
            Bson::Int32(0)
        );
        assert_eq!(
            accumulate(
                bson!({"$sum": "$v"}),
                &[n(Bson::Int32(i32::MAX)), n(Bson::Int32(1))]
            ),
            Bson::Int64(2_147_483_648)
        );
        assert_eq!(
            accumulate(
                bson!({"$sum": "$v"}),
                &[n(Bson::Int32(1)), n(Bson::Int64(2))]
            ),
            Bson::Int64(3)
        );
        assert_eq!(
            accumulate(
                bson!({"$sum": "$v"}),
                &[n(Bson::Int64(i64::MAX - 1)), n(Bson::Int64(2))]
            ),
            Bson::Double(9.223_372_036_854_776e18)
        );
        assert_eq!(
            accumulate(
                bson!({"$sum": "$v"}),
                &[n(Bson::Int32(1)), n(Bson::Double(0.5))]
            ),
            Bson::Double(1.5)
        );
        let Bson::Double(zero) = accumulate(bson!({"$sum": "$v"}), &[n(Bson::Double(-0.0))]) else {
            panic!("a double")
        };
        assert!(zero == 0.0 && zero.is_sign_positive());
        let decimal = accumulate(
            bson!({"$sum": "$v"}),
            &[
                n(Bson::Int32(1)),
                n(Bson::Decimal128("1.5".parse().unwrap())),
            ],
        );
        assert_eq!(decimal.to_string(), "2.5");
        let negative_zero = accumulate(
            bson!({"$sum": "$v"}),
            &[n(Bson::Decimal128("-0".parse().unwrap()))],
        );
        assert_eq!(negative_zero.to_string(), "0");
    }

    #[test]
    fn avg_min_max() {
        let n = |v: i32| Some(Bson::Int32(v));
        assert_eq!(
            accumulate(bson!({"$avg": "$v"}), &[n(1), n(2), Some(bson!("x")), None]),
            Bson::Double(1.5)
        );
        assert_eq!(
            accumulate(bson!({"$avg": "$v"}), &[None, Some(bson!("x"))]),
            Bson::Null
        );
        let decimal = accumulate(
            bson!({"$avg": "$v"}),
            &[n(1), Some(Bson::Decimal128("2".parse().unwrap()))],
        );
        assert_eq!(decimal.to_string(), "1.5");
        assert_eq!(
            accumulate(
                bson!({"$min": "$v"}),
                &[n(3), None, Some(Bson::Null), n(1), Some(bson!("a"))]
            ),
            Bson::Int32(1)
        );
        assert_eq!(
            accumulate(bson!({"$max": "$v"}), &[n(3), Some(bson!("a")), n(9)]),
            bson!("a")
        );
        assert_eq!(
            accumulate(bson!({"$max": "$v"}), &[None, Some(Bson::Null)]),
            Bson::Null
        );
    }

    #[test]
    fn first_last_push_add_to_set() {
        let n = |v: i32| Some(Bson::Int32(v));
        assert_eq!(
            accumulate(bson!({"$first": "$v"}), &[None, n(2)]),
            Bson::Null
        );
        assert_eq!(
            accumulate(bson!({"$first": "$v"}), &[n(1), n(2)]),
            Bson::Int32(1)
        );
        assert_eq!(
            accumulate(bson!({"$last": "$v"}), &[n(1), None]),
            Bson::Null
        );
        assert_eq!(
            accumulate(
                bson!({"$push": "$v"}),
                &[n(1), None, Some(Bson::Null), n(1)]
            ),
            bson!([1, null, 1])
        );
        assert_eq!(
            accumulate(
                bson!({"$addToSet": "$v"}),
                &[n(1), None, Some(Bson::Double(1.0)), n(2)]
            ),
            bson!([1, 2])
        );
        assert_eq!(
            accumulate(bson!({"$count": {}}), &[None, None, None]),
            Bson::Int32(3)
        );
    }

    #[test]
    fn merge_objects_documented_example() {
        let sales = [
            doc! {"_id": 1, "year": 2017, "item": "A", "quantity": {"2017Q1": 500, "2017Q2": 500}},
            doc! {"_id": 2, "year": 2016, "item": "A",
            "quantity": {"2016Q1": 400, "2016Q2": 300, "2016Q3": 0, "2016Q4": 0}},
            doc! {"_id": 3, "year": 2017, "item": "B", "quantity": {"2017Q1": 300}},
            doc! {"_id": 4, "year": 2016, "item": "B", "quantity": {"2016Q3": 100, "2016Q4": 250}},
        ];
        let out = group(
            bson!({"_id": "$item", "mergedSales": {"$mergeObjects": "$quantity"}}),
            &sales,
        )
        .unwrap();
        assert_eq!(
            out,
            vec![
                doc! {"_id": "A", "mergedSales": {"2017Q1": 500, "2017Q2": 500, "2016Q1": 400,
                "2016Q2": 300, "2016Q3": 0, "2016Q4": 0}},
                doc! {"_id": "B", "mergedSales": {"2017Q1": 300, "2016Q3": 100, "2016Q4": 250}},
            ]
        );
    }

    #[test]
    fn merge_objects_overwrites_in_place_and_skips_null() {
        let n = |v: Bson| Some(v);
        assert_eq!(
            accumulate(
                bson!({"$mergeObjects": "$v"}),
                &[
                    n(bson!({"a": 1, "b": 2})),
                    None,
                    n(Bson::Null),
                    n(bson!({"c": 3, "a": 9}))
                ]
            ),
            bson!({"a": 9, "b": 2, "c": 3})
        );
        assert_eq!(
            accumulate(bson!({"$mergeObjects": "$v"}), &[None]),
            bson!({})
        );
        assert_eq!(
            group_error(
                bson!({"_id": null, "m": {"$mergeObjects": "$v"}}),
                &[doc! {"v": {"a": 1}}, doc! {"v": 5}]
            ),
            (
                40400,
                "$mergeObjects requires object inputs, but input 5 is of type int".into()
            )
        );
    }

    #[test]
    fn sum_avg_documented_example() {
        let sales = [
            doc! {"item": "abc", "price": 10, "quantity": 2},
            doc! {"item": "jkl", "price": 20, "quantity": 1},
            doc! {"item": "xyz", "price": 5, "quantity": 5},
            doc! {"item": "xyz", "price": 5, "quantity": 10},
            doc! {"item": "abc", "price": 10, "quantity": 10},
        ];
        let out = group(
            bson!({"_id": "$item",
                   "total": {"$sum": {"$multiply": ["$price", "$quantity"]}},
                   "avgQuantity": {"$avg": "$quantity"},
                   "count": {"$sum": 1}}),
            &sales,
        )
        .unwrap();
        assert_eq!(
            out,
            vec![
                doc! {"_id": "abc", "total": 120, "avgQuantity": 6.0, "count": 2},
                doc! {"_id": "jkl", "total": 20, "avgQuantity": 1.0, "count": 1},
                doc! {"_id": "xyz", "total": 75, "avgQuantity": 7.5, "count": 2},
            ]
        );
    }
}
