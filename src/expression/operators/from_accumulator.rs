//! The expression forms of accumulators: `$sum`, `$avg`, `$min`, `$max`, `$stdDevPop` and
//! `$stdDevSamp` over their arguments (one array argument is the list of inputs), and
//! `$median` and `$percentile` over an `input` that evaluates to a number or an array. Each
//! runs the `$group` accumulator's state over the values, so non-numeric inputs are ignored
//! exactly as a group ignores them.

use super::{Args, Expression, Scope, Variables};
use super::{Arity, Operator, nary};
use crate::error::{MongoError, Result};
use crate::expression::fold::{Fold, percentiles, quantile_spec};
use crate::expression::numeric::to_f64;
use crate::expression::value::{Value, is_number, render};
use bson::{Bson, DateTime, Document};

pub(super) static OPERATORS: &[Operator] = &[
    Operator {
        name: "$avg",
        arity: Arity::Any,
        parse: nary,
        eval: avg,
    },
    Operator {
        name: "$max",
        arity: Arity::Any,
        parse: nary,
        eval: max,
    },
    Operator {
        name: "$median",
        arity: Arity::Exactly(1),
        parse: parse_median,
        eval: median,
    },
    Operator {
        name: "$min",
        arity: Arity::Any,
        parse: nary,
        eval: min,
    },
    Operator {
        name: "$percentile",
        arity: Arity::Exactly(2),
        parse: parse_percentile,
        eval: percentile,
    },
    Operator {
        name: "$stdDevPop",
        arity: Arity::Any,
        parse: nary,
        eval: std_dev_pop,
    },
    Operator {
        name: "$stdDevSamp",
        arity: Arity::Any,
        parse: nary,
        eval: std_dev_samp,
    },
    Operator {
        name: "$sum",
        arity: Arity::Any,
        parse: nary,
        eval: sum,
    },
];

/// One argument that evaluates to an array accumulates its elements; any other single value,
/// or each of several arguments, accumulates as it is (an array among several is one input).
fn accumulate(name: &str, args: &Args) -> Result<Value> {
    let Some(mut state) = Fold::for_expression(name) else {
        unreachable!("{name} has no expression form");
    };
    if args.len() == 1 {
        match args.eval(0)? {
            Some(Bson::Array(items)) => {
                for item in items {
                    state.add(Some(item));
                }
            }
            single => state.add(single),
        }
    } else {
        for index in 0..args.len() {
            state.add(args.eval(index)?);
        }
    }
    Ok(Some(state.finish()))
}

fn sum(args: &Args) -> Result<Value> {
    accumulate("$sum", args)
}

fn avg(args: &Args) -> Result<Value> {
    accumulate("$avg", args)
}

fn min(args: &Args) -> Result<Value> {
    accumulate("$min", args)
}

fn max(args: &Args) -> Result<Value> {
    accumulate("$max", args)
}

fn std_dev_pop(args: &Args) -> Result<Value> {
    accumulate("$stdDevPop", args)
}

fn std_dev_samp(args: &Args) -> Result<Value> {
    accumulate("$stdDevSamp", args)
}

/// `{input, method}`: the same specification as the accumulator, with the expression's own
/// code for an operand that is not an object.
fn parse_median(name: &'static str, argument: &Bson, scope: &Scope) -> Result<Vec<Expression>> {
    let (input, _) = quantile_spec(name, argument, 7436201)?;
    Ok(vec![Expression::parse_in(input, scope)?])
}

/// `{input, p, method}` becomes `[input, p]`. `p` must not read the document; when it reads
/// no variable either it is checked now, otherwise (a `let` variable) when evaluated.
fn parse_percentile(name: &'static str, argument: &Bson, scope: &Scope) -> Result<Vec<Expression>> {
    let (input, p) = quantile_spec(name, argument, 7436200)?;
    let p = p.unwrap_or(&Bson::Null);
    let mut ps = Expression::parse_in(p, scope)?;
    if ps.depends_on_document() {
        return Err(MongoError::location(
            7750300,
            format!(
                "The $percentile 'p' field must be an array of constant values, but found value: {}.",
                render(Some(p))
            ),
        ));
    }
    if !reads_variables(&ps) {
        let empty = Document::new();
        let value = ps.evaluate(&Variables::new(&empty, DateTime::from_millis(0)))?;
        let checked = percentiles(value)?;
        ps = Expression::Constant(Bson::Array(checked.into_iter().map(Bson::Double).collect()));
    }
    Ok(vec![Expression::parse_in(input, scope)?, ps])
}

fn reads_variables(expr: &Expression) -> bool {
    match expr {
        Expression::Constant(_) => false,
        Expression::Path { .. } | Expression::Meta(_) => true,
        Expression::Object(fields) => fields.iter().any(|(_, e)| reads_variables(e)),
        Expression::Array(items) | Expression::Operator { args: items, .. } => {
            items.iter().any(reads_variables)
        }
    }
}

fn median(args: &Args) -> Result<Value> {
    quantiles(args, None)
}

fn percentile(args: &Args) -> Result<Value> {
    let ps = percentiles(args.eval(1)?)?;
    quantiles(args, Some(ps))
}

/// A number is every percentile of itself; an array gives the discrete percentiles of its
/// numeric elements; anything else has none (null, or an array of nulls).
fn quantiles(args: &Args, ps: Option<Vec<f64>>) -> Result<Value> {
    let input = args.eval(0)?;
    if let Some(number) = input.as_ref().filter(|v| is_number(v)) {
        let x = Bson::Double(to_f64(number));
        return Ok(Some(match ps {
            Some(ps) => Bson::Array(vec![x; ps.len()]),
            None => x,
        }));
    }
    let mut state = Fold::quantiles(ps);
    if let Some(Bson::Array(items)) = input {
        for item in items {
            state.add(Some(item));
        }
    }
    Ok(Some(state.finish()))
}

#[cfg(test)]
mod tests {
    use crate::expression::tests::{eval, failure, value_of};
    use bson::{Bson, Document, bson, doc};

    /// The `students` documents of the manual's `$sum`/`$avg`/`$min`/`$max` examples.
    fn students() -> Vec<Document> {
        vec![
            doc! {"_id": 1, "quizzes": [10, 6, 7], "labs": [5, 8], "final": 80, "midterm": 75},
            doc! {"_id": 2, "quizzes": [9, 10], "labs": [8, 8], "final": 95, "midterm": 80},
            doc! {"_id": 3, "quizzes": [4, 5, 5], "labs": [6, 5], "final": 78, "midterm": 70},
        ]
    }

    /// `[quizzes, labs, [final, midterm]]` through `op` for each student.
    fn per_student(op: &str) -> Vec<[Bson; 3]> {
        students()
            .iter()
            .map(|d| {
                let run = |arg: Bson| eval(bson!({op: arg}), d).unwrap().unwrap();
                [
                    run(bson!("$quizzes")),
                    run(bson!("$labs")),
                    run(bson!(["$final", "$midterm"])),
                ]
            })
            .collect()
    }

    #[test]
    fn manual_sum_avg_min_max() {
        assert_eq!(
            per_student("$sum"),
            vec![
                [bson!(23), bson!(13), bson!(155)],
                [bson!(19), bson!(16), bson!(175)],
                [bson!(14), bson!(11), bson!(148)],
            ]
        );
        assert_eq!(
            per_student("$avg"),
            vec![
                [bson!(7.666666666666667), bson!(6.5), bson!(77.5)],
                [bson!(9.5), bson!(8.0), bson!(87.5)],
                [bson!(4.666666666666667), bson!(5.5), bson!(74.0)],
            ]
        );
        assert_eq!(
            per_student("$max"),
            vec![
                [bson!(10), bson!(8), bson!(80)],
                [bson!(10), bson!(8), bson!(95)],
                [bson!(5), bson!(6), bson!(78)],
            ]
        );
        assert_eq!(
            per_student("$min"),
            vec![
                [bson!(6), bson!(5), bson!(75)],
                [bson!(9), bson!(8), bson!(80)],
                [bson!(4), bson!(5), bson!(70)],
            ]
        );
    }

    #[test]
    fn argument_rules() {
        // Non-numbers are ignored; nothing to add is 0, nothing to average or compare null.
        assert_eq!(value_of(bson!({"$sum": [1, "a", null, 2.5]})), bson!(3.5));
        assert_eq!(value_of(bson!({"$sum": []})), bson!(0));
        assert_eq!(value_of(bson!({"$sum": "$missing"})), bson!(0));
        assert_eq!(value_of(bson!({"$sum": "text"})), bson!(0));
        assert_eq!(value_of(bson!({"$avg": []})), Bson::Null);
        assert_eq!(value_of(bson!({"$avg": "$missing"})), Bson::Null);
        assert_eq!(value_of(bson!({"$max": "$missing"})), Bson::Null);
        assert_eq!(value_of(bson!({"$min": [null, 4, null]})), bson!(4));
        // One array argument is the list; among several arguments an array is one value.
        assert_eq!(value_of(bson!({"$sum": [[1, 2]]})), bson!(3));
        assert_eq!(value_of(bson!({"$sum": [[1, 2], 3]})), bson!(3));
        assert_eq!(value_of(bson!({"$max": [[1, 2], 3]})), bson!([1, 2]));
        // $min and $max compare across types in BSON order.
        assert_eq!(value_of(bson!({"$max": [1, "a", null]})), bson!("a"));
        assert_eq!(value_of(bson!({"$min": [1, "a", 0.5]})), bson!(0.5));
        assert_eq!(value_of(bson!({"$max": "abc"})), bson!("abc"));
        let d = doc! {"a": [1_i64, 2], "b": 1};
        assert_eq!(
            eval(bson!({"$sum": ["$a", "$b"]}), &d).unwrap(),
            Some(bson!(1))
        );
        assert_eq!(eval(bson!({"$sum": "$a"}), &d).unwrap(), Some(bson!(3_i64)));
    }

    #[test]
    fn standard_deviations() {
        // The manual's quiz scores: 85, 90 and 71.
        let d = doc! {"scores": [{"name": "dave123", "score": 85}, {"name": "dave2", "score": 90}, {"name": "ahn", "score": 71}]};
        let pop = eval(bson!({"$stdDevPop": "$scores.score"}), &d)
            .unwrap()
            .unwrap();
        assert!(
            (pop.as_f64().unwrap() - 8.04155872120988).abs() < 1e-12,
            "{pop}"
        );
        let samp = value_of(bson!({"$stdDevSamp": [1, 2, 3, 4]}));
        assert!(
            (samp.as_f64().unwrap() - 1.2909944487358056).abs() < 1e-12,
            "{samp}"
        );
        assert_eq!(value_of(bson!({"$stdDevPop": [5]})), bson!(0.0));
        assert_eq!(value_of(bson!({"$stdDevSamp": [5]})), Bson::Null);
        assert_eq!(value_of(bson!({"$stdDevPop": ["a", null]})), Bson::Null);
        assert_eq!(value_of(bson!({"$stdDevPop": [2, 4]})), bson!(1.0));
    }

    #[test]
    fn manual_median_and_percentile() {
        let d = doc! {"_id": 0, "test01": 95, "test02": 62, "test03": 81};
        let input = bson!(["$test01", "$test02", "$test03"]);
        assert_eq!(
            eval(
                bson!({"$median": {"input": input.clone(), "method": "approximate"}}),
                &d
            )
            .unwrap(),
            Some(bson!(81.0))
        );
        assert_eq!(
            eval(
                bson!({"$percentile": {"input": input, "p": [0.5, 0.95], "method": "approximate"}}),
                &d
            )
            .unwrap(),
            Some(bson!([81.0, 95.0]))
        );
        // A single number is all its percentiles; no numbers give nulls.
        assert_eq!(
            value_of(
                bson!({"$percentile": {"input": 7, "p": [0.1, 0.9], "method": "approximate"}})
            ),
            bson!([7.0, 7.0])
        );
        assert_eq!(
            value_of(bson!({"$median": {"input": "$missing", "method": "approximate"}})),
            Bson::Null
        );
        assert_eq!(
            value_of(
                bson!({"$percentile": {"input": ["a", null], "p": [0.5, 1], "method": "approximate"}})
            ),
            bson!([null, null])
        );
        assert_eq!(
            value_of(bson!({"$median": {"input": [], "method": "approximate"}})),
            Bson::Null
        );
        assert_eq!(
            value_of(bson!({"$median": {"input": [3, "x", 1, 2, 10], "method": "approximate"}})),
            bson!(2.0)
        );
        // `p` may be any constant expression.
        assert_eq!(
            value_of(
                bson!({"$percentile": {"input": [1, 2, 3], "p": {"$literal": [1]}, "method": "approximate"}})
            ),
            bson!([3.0])
        );
        assert_eq!(
            value_of(bson!({"$let": {"vars": {"q": [0.5]}, "in":
                {"$percentile": {"input": [1, 2, 3], "p": "$$q", "method": "approximate"}}}})),
            bson!([2.0])
        );
    }

    #[test]
    fn quantile_errors() {
        let code = |expr: Bson| failure(eval(expr, &doc! {}));
        assert_eq!(
            code(bson!({"$median": "$a"})),
            (
                7436201,
                "specification must be an object; found $median: \"$a\"".into()
            )
        );
        assert_eq!(code(bson!({"$percentile": [1]})).0, 7436200);
        assert_eq!(
            code(bson!({"$median": {"input": 1}})),
            (
                40414,
                "BSON field '$median.method' is missing but a required field".into()
            )
        );
        assert_eq!(
            code(bson!({"$percentile": {"input": 1, "method": "approximate"}})).0,
            40414
        );
        assert_eq!(
            code(bson!({"$median": {"input": 1, "method": "discrete"}})),
            (
                2,
                "Currently only 'approximate' can be used as percentile 'method'.".into()
            )
        );
        assert_eq!(
            code(bson!({"$median": {"input": 1, "method": "approximate", "p": [0.5]}})).0,
            40415
        );
        assert_eq!(
            code(bson!({"$percentile": {"input": 1, "p": "$a", "method": "approximate"}})),
            (7750300, "The $percentile 'p' field must be an array of constant values, but found value: \"$a\".".into())
        );
        assert_eq!(
            code(bson!({"$percentile": {"input": 1, "p": [], "method": "approximate"}})).0,
            7750301
        );
        assert_eq!(
            code(bson!({"$percentile": {"input": 1, "p": ["x"], "method": "approximate"}})).0,
            7750302
        );
        assert_eq!(
            code(bson!({"$percentile": {"input": 1, "p": [2], "method": "approximate"}})).0,
            7750303
        );
        // A `p` read from a variable is checked when it is evaluated.
        assert_eq!(
            code(bson!({"$let": {"vars": {"q": 5}, "in":
                {"$percentile": {"input": [1], "p": "$$q", "method": "approximate"}}}}))
            .0,
            7750301
        );
    }
}
