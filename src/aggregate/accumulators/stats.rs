//! Parsing the statistics accumulators, `$percentile` and `$median` (`{input, p, method:
//! "approximate"}`); their states (and `$stdDevPop`/`$stdDevSamp`'s) are the expression layer's
//! folds ([`crate::expression::fold`]). For the percentiles the server's t-digest is exact on
//! small inputs; the fold computes the discrete percentile exactly at any size: the sample at
//! 0-based rank `ceil(p * n) - 1` of the sorted inputs.

use super::{Kind, Parsed};
use crate::error::{MongoError, Result};
use crate::expression::fold::{percentiles, quantile_spec};
use crate::expression::value::render;
use crate::expression::{Expression, LetVariables};
use bson::{Bson, Document};

/// `{input, p, method}`.
pub fn parse_percentile(
    name: &'static str,
    argument: &Bson,
    vars: &LetVariables,
) -> Result<Parsed> {
    let (input, p) = parse_spec(name, argument, 7429703, vars)?;
    let ps = parse_p(p.unwrap_or(&Bson::Null), vars)?;
    Ok(Parsed {
        kind: Kind::Percentile(Some(ps)),
        argument: input,
        n: None,
    })
}

/// `{input, method}`.
pub fn parse_median(name: &'static str, argument: &Bson, vars: &LetVariables) -> Result<Parsed> {
    let (input, _) = parse_spec(name, argument, 7436100, vars)?;
    Ok(Parsed {
        kind: Kind::Percentile(None),
        argument: input,
        n: None,
    })
}

/// The specification object, checked by [`quantile_spec`]. Returns the parsed `input` and, for
/// `$percentile`, the raw `p`.
fn parse_spec<'a>(
    name: &str,
    argument: &'a Bson,
    not_object: i32,
    vars: &LetVariables,
) -> Result<(Expression, Option<&'a Bson>)> {
    let (input, p) = quantile_spec(name, argument, not_object)?;
    Ok((Expression::parse_in(input, vars.scope())?, p))
}

/// `p`: an expression that must be constant (it may read the command's `let` variables) and
/// evaluate to a non-empty array of numbers in [0, 1].
fn parse_p(p: &Bson, vars: &LetVariables) -> Result<Vec<f64>> {
    let expr = Expression::parse_in(p, vars.scope())?;
    if expr.depends_on_document() {
        return Err(MongoError::location(
            7750300,
            format!(
                "The $percentile 'p' field must be an array of constant values, but found value: {}.",
                render(Some(p))
            ),
        ));
    }
    let empty = Document::new();
    percentiles(expr.evaluate(&vars.variables(&empty))?)
}

#[cfg(test)]
mod tests {
    use super::super::Accumulator;
    use super::super::tests::{code, group, group_error};
    use crate::expression::LetVariables;
    use bson::{Bson, DateTime, Document, bson, doc};

    fn quiz_scores() -> Vec<Document> {
        vec![
            doc! {"_id": 1, "name": "dave123", "quiz": 1, "score": 85},
            doc! {"_id": 2, "name": "dave2", "quiz": 1, "score": 90},
            doc! {"_id": 3, "name": "ahn", "quiz": 1, "score": 71},
            doc! {"_id": 4, "name": "li", "quiz": 2, "score": 96},
            doc! {"_id": 5, "name": "annT", "quiz": 2, "score": 77},
            doc! {"_id": 6, "name": "ty", "quiz": 2, "score": 82},
        ]
    }

    fn test_scores() -> Vec<Document> {
        vec![
            doc! {"studentId": "2345", "test01": 62, "test02": 81, "test03": 80},
            doc! {"studentId": "2356", "test01": 60, "test02": 83, "test03": 79},
            doc! {"studentId": "2358", "test01": 67, "test02": 82, "test03": 78},
            doc! {"studentId": "2367", "test01": 64, "test02": 72, "test03": 77},
            doc! {"studentId": "2369", "test01": 60, "test02": 53, "test03": 72},
        ]
    }

    fn close(value: &Bson, expected: f64) -> bool {
        matches!(value, Bson::Double(v) if (v - expected).abs() < 1e-12)
    }

    #[test]
    fn std_dev_pop_documented_example() {
        let out = group(
            bson!({"_id": "$quiz", "stdDev": {"$stdDevPop": "$score"}}),
            &quiz_scores(),
        )
        .unwrap();
        assert_eq!(out.len(), 2);
        for group in &out {
            assert!(
                close(group.get("stdDev").unwrap(), 8.04155872120988),
                "{group}"
            );
        }
    }

    #[test]
    fn std_dev_samp_and_undefined_cases() {
        let out = group(
            bson!({"_id": "$quiz", "samp": {"$stdDevSamp": "$score"}}),
            &quiz_scores(),
        )
        .unwrap();
        // The population deviation scaled by sqrt(n / (n - 1)).
        let expected = 8.041_558_721_209_88 * (3.0_f64 / 2.0).sqrt();
        assert!(close(out[0].get("samp").unwrap(), expected), "{:?}", out[0]);
        let docs = [
            doc! {"v": "x"},
            doc! {"v": 4_i64},
            doc! {},
            doc! {"v": null},
        ];
        let out = group(
            bson!({"_id": null,
                   "pop": {"$stdDevPop": "$v"},
                   "samp": {"$stdDevSamp": "$v"},
                   "none": {"$stdDevPop": "$missing"}}),
            &docs,
        )
        .unwrap();
        assert_eq!(
            out,
            vec![doc! {"_id": null, "pop": 0.0, "samp": null, "none": null}]
        );
        let decimals = [
            doc! {"v": Bson::Decimal128("1".parse().unwrap())},
            doc! {"v": 3.0},
        ];
        assert_eq!(
            group(bson!({"_id": null, "s": {"$stdDevSamp": "$v"}}), &decimals).unwrap(),
            vec![doc! {"_id": null, "s": std::f64::consts::SQRT_2}]
        );
    }

    #[test]
    fn percentile_documented_examples() {
        let out = group(
            bson!({"_id": null, "test01_percentiles": {"$percentile": {
                "input": "$test01", "p": [0.95], "method": "approximate"}}}),
            &test_scores(),
        )
        .unwrap();
        assert_eq!(out, vec![doc! {"_id": null, "test01_percentiles": [67.0]}]);
        let spec = |field: &str| {
            bson!({"$percentile": {"input": format!("${field}"), "p": [0.5, 0.75, 0.9, 0.95],
                                   "method": "approximate"}})
        };
        let out = group(
            bson!({"_id": null,
                   "test01_percentiles": spec("test01"),
                   "test02_percentiles": spec("test02"),
                   "test03_percentiles": spec("test03")}),
            &test_scores(),
        )
        .unwrap();
        assert_eq!(
            out,
            vec![doc! {"_id": null,
            "test01_percentiles": [62.0, 64.0, 67.0, 67.0],
            "test02_percentiles": [81.0, 82.0, 83.0, 83.0],
            "test03_percentiles": [78.0, 79.0, 80.0, 80.0]}]
        );
    }

    #[test]
    fn median_documented_example_and_edges() {
        let out = group(
            bson!({"_id": null, "test01_median": {"$median": {"input": "$test01", "method": "approximate"}}}),
            &test_scores(),
        )
        .unwrap();
        assert_eq!(out, vec![doc! {"_id": null, "test01_median": 62.0}]);
        // Even counts take the lower middle; non-numbers and NaN are ignored.
        let docs = [
            doc! {"v": 4},
            doc! {"v": "x"},
            doc! {"v": 1_i64},
            doc! {"v": f64::NAN},
            doc! {"v": 3.5},
            doc! {"v": Bson::Decimal128("2".parse().unwrap())},
        ];
        let out = group(
            bson!({"_id": null,
                   "m": {"$median": {"input": "$v", "method": "approximate"}},
                   "p": {"$percentile": {"input": "$v", "p": [0, 0.25, 1], "method": "approximate"}},
                   "none": {"$median": {"input": "$w", "method": "approximate"}},
                   "nones": {"$percentile": {"input": "$w", "p": [0.1, 0.2], "method": "approximate"}}}),
            &docs,
        )
        .unwrap();
        assert_eq!(
            out,
            vec![
                doc! {"_id": null, "m": 2.0, "p": [1.0, 1.0, 4.0], "none": null,
                "nones": [null, null]}
            ]
        );
    }

    #[test]
    fn percentile_p_may_read_let_variables() {
        let vars =
            LetVariables::parse(Some(&doc! {"ps": [0.5]}), DateTime::from_millis(0)).unwrap();
        let spec = bson!({"$percentile": {"input": "$v", "p": "$$ps", "method": "approximate"}});
        assert!(Accumulator::parse("f", &spec, &vars).is_ok());
    }

    #[test]
    fn specification_errors() {
        let percentile = |spec: Bson| code(bson!({"$percentile": spec}));
        assert_eq!(percentile(bson!(1)), 7429703);
        assert_eq!(code(bson!({"$median": 1})), 7436100);
        assert_eq!(
            group_error(
                bson!({"_id": null, "m": {"$median": {"input": "$v", "method": "approximate", "p": [0.5]}}}),
                &[]
            ),
            (40415, "BSON field '$median.p' is an unknown field.".into())
        );
        assert_eq!(
            group_error(
                bson!({"_id": null, "m": {"$percentile": {"input": "$v", "method": "approximate"}}}),
                &[]
            ),
            (
                40414,
                "BSON field '$percentile.p' is missing but a required field".into()
            )
        );
        assert_eq!(percentile(bson!({"input": 1, "p": [0.5]})), 40414);
        assert_eq!(percentile(bson!({"input": 1, "p": [0.5], "method": 1})), 14);
        assert_eq!(
            group_error(
                bson!({"_id": null, "m": {"$median": {"input": "$v", "method": "discrete"}}}),
                &[]
            ),
            (
                2,
                "Currently only 'approximate' can be used as percentile 'method'.".into()
            )
        );
        let p = |p: Bson| percentile(bson!({"input": "$v", "p": p, "method": "approximate"}));
        assert_eq!(p(bson!(["$x"])), 7750300);
        assert_eq!(p(bson!("$x")), 7750300);
        assert_eq!(p(bson!(0.5)), 7750301);
        assert_eq!(p(bson!([])), 7750301);
        assert_eq!(p(bson!(["a"])), 7750302);
        assert_eq!(
            group_error(
                bson!({"_id": null, "m": {"$percentile": {"input": "$v", "p": [0.5, 1.5], "method": "approximate"}}}),
                &[]
            ),
            (
                7750303,
                "The $percentile 'p' field must be an array of numbers from [0.0, 1.0], but found: 1.5".into()
            )
        );
        assert_eq!(p(bson!([-0.1])), 7750303);
    }
}
