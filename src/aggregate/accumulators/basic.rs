//! The accumulators that keep one value (or one collection) per group: `$sum` and `$avg` (with
//! the server's widening of the result type), `$min`, `$max`, `$first`, `$last`, `$push`,
//! `$addToSet` and `$mergeObjects`.

use crate::aggregate::decimal::Dec;
use crate::aggregate::numeric::{DoubleDouble, Width, int_or_long, width};
use crate::aggregate::value::{Value, compare, is_nullish, render, type_name};
use crate::document::order::values_equal;
use crate::error::{MongoError, Result};
use bson::{Bson, Document};
use std::cmp::Ordering;

/// `$min`/`$max` ignore null, undefined and missing; ties keep the earlier value.
pub fn keep_extreme(best: &mut Option<Bson>, input: Value, wanted: Ordering) {
    let Some(value) = input.filter(|v| !is_nullish(Some(v))) else {
        return;
    };
    if best
        .as_ref()
        .is_none_or(|current| compare(Some(&value), Some(current)) == wanted)
    {
        *best = Some(value);
    }
}

/// `$addToSet` keeps the first of equal values (by MongoDB equality, so `1` and `1.0` are one
/// value) and ignores missing.
pub fn add_to_set(values: &mut Vec<Bson>, input: Value) {
    if let Some(value) = input {
        if !values.iter().any(|seen| values_equal(seen, &value)) {
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

/// `$sum` as the server computes it: integers and doubles in a double-double sum, decimals in
/// a separate decimal sum, and the result in the widest type seen (narrowed back to an int when
/// an int-only sum fits).
#[derive(Clone, Debug)]
pub struct Sum {
    widest: Width,
    /// The widest type among the non-decimal inputs: a partial sum reports it with its
    /// double-double total.
    non_decimal_widest: Width,
    non_decimal: DoubleDouble,
    decimal: Dec,
}

impl Default for Sum {
    fn default() -> Self {
        Sum {
            widest: Width::Int,
            non_decimal_widest: Width::Int,
            non_decimal: DoubleDouble::default(),
            decimal: Dec::ZERO,
        }
    }
}

impl Sum {
    /// Adds a number; anything else is ignored. Returns whether the input counted.
    pub fn add(&mut self, input: Option<&Bson>) -> bool {
        let Some(input) = input else {
            return false;
        };
        let Some(input_width) = width(input) else {
            return false;
        };
        self.widest = self.widest.max(input_width);
        if input_width != Width::Decimal {
            self.non_decimal_widest = self.non_decimal_widest.max(input_width);
        }
        match input {
            Bson::Int32(v) => self.non_decimal.add_double(f64::from(*v)),
            Bson::Int64(v) => self.non_decimal.add_long(*v),
            Bson::Double(v) => self.non_decimal.add_double(*v),
            Bson::Decimal128(d) => self.decimal = self.decimal.plus(Dec::decode(*d)),
            _ => return false,
        }
        true
    }

    pub fn total(&self) -> Bson {
        match self.widest {
            Width::Int if self.non_decimal.fits_long() => int_or_long(self.non_decimal.get_long()),
            Width::Int | Width::Long if self.non_decimal.fits_long() => {
                Bson::Int64(self.non_decimal.get_long())
            }
            Width::Int | Width::Long | Width::Double => Bson::Double(self.non_decimal.get_double()),
            Width::Decimal => Bson::Decimal128(self.decimal_total().encode()),
        }
    }

    fn decimal_total(&self) -> Dec {
        self.decimal.plus(self.non_decimal.get_decimal())
    }

    /// The sum as a shard sends it to be merged, the server's partial sum:
    /// `[<non-decimal type code>, sum, addend]` of the double-double total, and the decimal
    /// total as a fourth element when any input was a decimal. The whole state travels so that
    /// the merged total rounds as a single sum would.
    pub fn partial(&self) -> Bson {
        let (sum, addend) = self.non_decimal.parts();
        let mut parts = vec![
            Bson::Int32(type_code(self.non_decimal_widest)),
            Bson::Double(sum),
            Bson::Double(addend),
        ];
        if self.widest == Width::Decimal {
            parts.push(Bson::Decimal128(self.decimal.encode()));
        }
        Bson::Array(parts)
    }

    /// Adds a partial sum made by [`Sum::partial`].
    pub fn merge_partial(&mut self, partial: Option<&Bson>) -> Result<()> {
        let malformed = || {
            MongoError::type_mismatch(format!(
                "a partial sum must be [type, sum, addend, decimal?], found {}",
                render(partial)
            ))
        };
        let Some(Bson::Array(parts)) = partial else {
            return Err(malformed());
        };
        let (Some(Bson::Int32(code)), Some(Bson::Double(sum)), Some(Bson::Double(addend))) =
            (parts.first(), parts.get(1), parts.get(2))
        else {
            return Err(malformed());
        };
        let non_decimal = width_of_code(*code).ok_or_else(malformed)?;
        self.non_decimal_widest = self.non_decimal_widest.max(non_decimal);
        self.widest = self.widest.max(non_decimal);
        self.non_decimal.add_double(*sum);
        // An infinite sum carries a NaN addend that a single sum would never have added.
        if sum.is_finite() || !addend.is_nan() {
            self.non_decimal.add_double(*addend);
        }
        match parts.get(3) {
            None => {}
            Some(Bson::Decimal128(decimal)) => {
                self.widest = Width::Decimal;
                self.decimal = self.decimal.plus(Dec::decode(*decimal));
            }
            Some(_) => return Err(malformed()),
        }
        Ok(())
    }

    /// `$avg`: null without numeric input, a decimal if any input was one, else a double.
    pub fn average(&self, count: u64) -> Bson {
        if count == 0 {
            return Bson::Null;
        }
        if self.widest == Width::Decimal {
            let count = Dec::from_i64(i64::try_from(count).unwrap_or(i64::MAX));
            return Bson::Decimal128(self.decimal_total().divided_by(count).encode());
        }
        Bson::Double(self.non_decimal.get_double() / count as f64)
    }
}

/// BSON's type numbers, which a partial sum names its type with.
fn type_code(width: Width) -> i32 {
    match width {
        Width::Int => 16,
        Width::Long => 18,
        Width::Double => 1,
        Width::Decimal => 19,
    }
}

fn width_of_code(code: i32) -> Option<Width> {
    match code {
        16 => Some(Width::Int),
        18 => Some(Width::Long),
        1 => Some(Width::Double),
        19 => Some(Width::Decimal),
        _ => None,
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
            let doc_vars =
                crate::aggregate::expression::Variables::new(&doc, DateTime::from_millis(0));
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
