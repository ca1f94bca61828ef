//! Object operators (`$mergeObjects $getField $setField $unsetField`) and the expression forms
//! of the accumulators (`$sum $avg $min $max $stdDevPop $stdDevSamp $median $percentile`) over
//! arrays and argument lists: mixed numeric types, nulls and non-numbers skipped, empty inputs.

use super::{Case, ErrorCase, absent, constant, dec, fails, long, on};
use mongodb::bson::{Bson, bson, doc};

pub fn cases() -> Vec<Case> {
    let mut cases = objects();
    cases.extend(accumulator_forms());
    cases
}

fn objects() -> Vec<Case> {
    vec![
        on(
            "mergeObjects manual",
            doc! {"item": "abc", "price": 12, "ordered": 2,
            "fromItems": {"item": "abc", "description": "product 1", "instock": 120}},
            bson!({"$mergeObjects": ["$fromItems", {"price": "$price", "ordered": "$ordered"}]}),
            bson!({"item": "abc", "description": "product 1", "instock": 120, "price": 12, "ordered": 2}),
        ),
        on(
            "mergeObjects overwrites in place",
            doc! {"a": {"b": 1, "c": 1}},
            bson!({"$mergeObjects": ["$a", {"b": 2}]}),
            bson!({"b": 2, "c": 1}),
        ),
        constant(
            "mergeObjects null",
            bson!({"$mergeObjects": [{"a": 1}, null]}),
            bson!({"a": 1}),
        ),
        constant(
            "mergeObjects only nulls",
            bson!({"$mergeObjects": [null, null]}),
            bson!({}),
        ),
        on(
            "mergeObjects missing",
            doc! {},
            bson!({"$mergeObjects": "$a"}),
            bson!({}),
        ),
        constant(
            "getField dotted name",
            bson!({"$getField": {"field": "price.usd", "input": {"$literal": {"price.usd": 45}}}}),
            45,
        ),
        constant(
            "getField dollar name",
            bson!({"$getField": {"field": {"$literal": "$price"}, "input": {"$literal": {"$price": 7}}}}),
            7,
        ),
        on(
            "getField shorthand",
            doc! {"qty": 3},
            bson!({"$getField": "qty"}),
            3,
        ),
        absent("getField missing", doc! {}, bson!({"$getField": "qty"})),
        on(
            "getField null input",
            doc! {},
            bson!({"$getField": {"field": "a", "input": null}}),
            Bson::Null,
        ),
        constant(
            "setField adds",
            bson!({"$setField": {"field": "price.usd", "input": {"$literal": {"item": "x"}}, "value": 50}}),
            bson!({"item": "x", "price.usd": 50}),
        ),
        constant(
            "setField replaces",
            bson!({"$setField": {"field": "a", "input": {"a": 1, "b": 2}, "value": 3}}),
            bson!({"a": 3, "b": 2}),
        ),
        constant(
            "setField removes",
            bson!({"$setField": {"field": "a", "input": {"a": 1, "b": 2}, "value": "$$REMOVE"}}),
            bson!({"b": 2}),
        ),
        on(
            "setField null input",
            doc! {},
            bson!({"$setField": {"field": "a", "input": "$x", "value": 1}}),
            Bson::Null,
        ),
        constant(
            "unsetField dotted name",
            bson!({"$unsetField": {"field": "price.usd", "input": {"$literal": {"item": "x", "price.usd": 1}}}}),
            bson!({"item": "x"}),
        ),
        constant(
            "unsetField absent field",
            bson!({"$unsetField": {"field": "z", "input": {"a": 1}}}),
            bson!({"a": 1}),
        ),
    ]
}

fn accumulator_forms() -> Vec<Case> {
    let student = doc! {"quizzes": [10, 6, 7], "labs": [5, 8], "final": 80, "midterm": 75};
    let tests = doc! {"test01": 62, "test02": 81, "test03": 80};
    vec![
        on(
            "sum array",
            student.clone(),
            bson!({"$sum": "$quizzes"}),
            23,
        ),
        on(
            "sum arguments",
            student.clone(),
            bson!({"$sum": ["$final", "$midterm"]}),
            155,
        ),
        on(
            "avg array",
            student.clone(),
            bson!({"$avg": "$quizzes"}),
            7.666666666666667,
        ),
        on(
            "max array",
            student.clone(),
            bson!({"$max": "$quizzes"}),
            10,
        ),
        on("min array", student.clone(), bson!({"$min": "$labs"}), 5),
        constant("sum int long", bson!({"$sum": [1, long(2)]}), long(3)),
        constant("sum int double", bson!({"$sum": [1, 2.5]}), 3.5),
        constant("sum decimal", bson!({"$sum": [1, dec("2.5")]}), dec("3.5")),
        constant(
            "sum int overflow",
            bson!({"$sum": [2147483647, 1]}),
            long(2147483648),
        ),
        constant("sum skips non-numbers", bson!({"$sum": [1, "a", null]}), 1),
        on("sum missing", doc! {}, bson!({"$sum": "$nothing"}), 0),
        on("sum empty array", doc! {"a": []}, bson!({"$sum": "$a"}), 0),
        on(
            "avg empty array",
            doc! {"a": []},
            bson!({"$avg": "$a"}),
            Bson::Null,
        ),
        constant("avg ints", bson!({"$avg": [1, 2]}), 1.5),
        constant("avg decimal", bson!({"$avg": [dec("1"), 2]}), dec("1.5")),
        constant("max across types", bson!({"$max": [1, "a"]}), "a"),
        constant("min skips null", bson!({"$min": [null, 1]}), 1),
        on(
            "min empty array",
            doc! {"a": []},
            bson!({"$min": "$a"}),
            Bson::Null,
        ),
        constant(
            "stdDevPop manual",
            bson!({"$stdDevPop": [[85, 90, 71]]}),
            8.04155872120988,
        ),
        constant("stdDevPop arguments", bson!({"$stdDevPop": [2, 4]}), 1.0),
        constant(
            "stdDevSamp",
            bson!({"$stdDevSamp": [2, 4]}),
            std::f64::consts::SQRT_2,
        ),
        constant("stdDevSamp single", bson!({"$stdDevSamp": [1]}), Bson::Null),
        on(
            "stdDevPop empty",
            doc! {"a": []},
            bson!({"$stdDevPop": "$a"}),
            Bson::Null,
        ),
        on(
            "median manual",
            tests.clone(),
            bson!({"$median": {"input": ["$test01", "$test02", "$test03"], "method": "approximate"}}),
            80.0,
        ),
        on(
            "percentile manual",
            tests,
            bson!({"$percentile": {"input": ["$test01", "$test02", "$test03"], "p": [0.5, 0.95], "method": "approximate"}}),
            bson!([80.0, 81.0]),
        ),
        constant(
            "median empty",
            bson!({"$median": {"input": [], "method": "approximate"}}),
            Bson::Null,
        ),
        constant(
            "percentile skips non-numbers",
            bson!({"$percentile": {"input": [1, "a", null, 3], "p": [0], "method": "approximate"}}),
            bson!([1.0]),
        ),
    ]
}

pub fn errors() -> Vec<ErrorCase> {
    vec![
        fails(
            "mergeObjects number",
            doc! {"n": 1},
            bson!({"$mergeObjects": ["$n"]}),
            40400,
        ),
        fails(
            "setField input not an object",
            doc! {"n": 1},
            bson!({"$setField": {"field": "a", "input": "$n", "value": 1}}),
            4161105,
        ),
        fails(
            "percentile p out of range",
            doc! {},
            bson!({"$percentile": {"input": [1], "p": [1.5], "method": "approximate"}}),
            7750303,
        ),
    ]
}
