//! `$setWindowFields` with the accumulators that keep several values or a quantile (`$firstN`
//! `$lastN` `$minN` `$maxN` `$top` `$bottom` `$topN` `$bottomN` `$median` `$percentile`):
//! document and range windows over the cake sales of MongoDB's examples, and the errors for
//! misused window functions.

use crate::aggregate::Pipeline;
use bson::{Bson, Document, bson, doc};

use super::window_tests::cake_sales;

fn run(spec: Bson) -> crate::error::Result<Vec<Document>> {
    Pipeline::parse(&[doc! {"$setWindowFields": spec}])?.run(cake_sales())
}

/// `(_id, r)` of each output document of a stage with one output field `r`, partitioned by
/// state and sorted by order date unless `spec` says otherwise.
fn by_state(function: Bson) -> Vec<(i32, Bson)> {
    let out = run(
        bson!({"partitionBy": "$state", "sortBy": {"orderDate": 1}, "output": {"r": function}}),
    )
    .unwrap();
    out.iter()
        .map(|d| (d.get_i32("_id").unwrap(), d.get("r").cloned().unwrap()))
        .collect()
}

fn error(spec: Bson) -> (i32, String) {
    let err = run(spec).unwrap_err();
    (err.code().code(), err.message().to_string())
}

#[test]
fn first_n_and_last_n_over_running_windows() {
    let running = bson!({"documents": ["unbounded", "current"]});
    assert_eq!(
        by_state(bson!({"$firstN": {"input": "$quantity", "n": 2}, "window": running.clone()})),
        vec![
            (4, bson!([162])),
            (0, bson!([162, 120])),
            (2, bson!([162, 120])),
            (5, bson!([134])),
            (3, bson!([134, 104])),
            (1, bson!([134, 104])),
        ]
    );
    assert_eq!(
        by_state(bson!({"$lastN": {"input": "$quantity", "n": 2}, "window": running})),
        vec![
            (4, bson!([162])),
            (0, bson!([162, 120])),
            (2, bson!([120, 145])),
            (5, bson!([134])),
            (3, bson!([134, 104])),
            (1, bson!([104, 140])),
        ]
    );
}

#[test]
fn max_n_and_min_n_over_sliding_windows() {
    assert_eq!(
        by_state(
            bson!({"$maxN": {"input": "$quantity", "n": 2}, "window": {"documents": [-1, 1]}})
        ),
        vec![
            (4, bson!([162, 120])),
            (0, bson!([162, 145])),
            (2, bson!([145, 120])),
            (5, bson!([134, 104])),
            (3, bson!([140, 134])),
            (1, bson!([140, 104])),
        ]
    );
    // A range window over the price: the cakes within a dollar of each other.
    let out = run(
        bson!({"partitionBy": "$state", "sortBy": {"price": 1}, "output": {
            "r": {"$minN": {"input": "$quantity", "n": 1}, "window": {"range": [-1, 1]}}
        }}),
    )
    .unwrap();
    let column: Vec<(i32, Bson)> = out
        .iter()
        .map(|d| (d.get_i32("_id").unwrap(), d.get("r").cloned().unwrap()))
        .collect();
    assert_eq!(
        column,
        vec![
            (2, bson!([120])),
            (0, bson!([120])),
            (4, bson!([162])),
            (3, bson!([104])),
            (1, bson!([104])),
            (5, bson!([134])),
        ]
    );
}

#[test]
fn top_and_bottom_use_their_own_sort() {
    assert_eq!(
        by_state(bson!({"$topN": {"n": 2, "sortBy": {"quantity": -1}, "output": "$_id"}})),
        vec![
            (4, bson!([4, 2])),
            (0, bson!([4, 2])),
            (2, bson!([4, 2])),
            (5, bson!([1, 5])),
            (3, bson!([1, 5])),
            (1, bson!([1, 5])),
        ]
    );
    assert_eq!(
        by_state(
            bson!({"$bottom": {"sortBy": {"quantity": -1}, "output": "$type"},
            "window": {"documents": ["unbounded", "current"]}})
        ),
        vec![
            (4, bson!("strawberry")),
            (0, bson!("chocolate")),
            (2, bson!("chocolate")),
            (5, bson!("strawberry")),
            (3, bson!("vanilla")),
            (1, bson!("vanilla")),
        ]
    );
    assert_eq!(
        by_state(
            bson!({"$top": {"sortBy": {"price": 1}, "output": "$price"}, "window": {"documents": [0, 1]}})
        ),
        vec![
            (4, bson!(13)),
            (0, bson!(12)),
            (2, bson!(12)),
            (5, bson!(13)),
            (3, bson!(13)),
            (1, bson!(14)),
        ]
    );
    assert_eq!(
        by_state(
            bson!({"$bottomN": {"n": 2, "sortBy": {"price": 1}, "output": "$_id"},
            "window": {"documents": ["current", "unbounded"]}})
        ),
        vec![
            (4, bson!([0, 4])),
            (0, bson!([2, 0])),
            (2, bson!([2])),
            (5, bson!([1, 5])),
            (3, bson!([3, 1])),
            (1, bson!([1])),
        ]
    );
}

#[test]
fn median_and_percentile_over_windows() {
    assert_eq!(
        by_state(
            bson!({"$median": {"input": "$quantity", "method": "approximate"},
            "window": {"documents": ["unbounded", "current"]}})
        ),
        vec![
            (4, bson!(162.0)),
            (0, bson!(120.0)),
            (2, bson!(145.0)),
            (5, bson!(134.0)),
            (3, bson!(104.0)),
            (1, bson!(134.0)),
        ]
    );
    assert_eq!(
        by_state(
            bson!({"$percentile": {"input": "$quantity", "p": [0.5, 0.9], "method": "approximate"}})
        ),
        vec![
            (4, bson!([145.0, 162.0])),
            (0, bson!([145.0, 162.0])),
            (2, bson!([145.0, 162.0])),
            (5, bson!([134.0, 140.0])),
            (3, bson!([134.0, 140.0])),
            (1, bson!([134.0, 140.0])),
        ]
    );
    // An empty window has no numbers: null, and one null per percentile.
    let out = by_state(
        bson!({"$percentile": {"input": "$quantity", "p": [0.1, 0.2], "method": "approximate"},
        "window": {"documents": [5, 6]}}),
    );
    assert!(out.iter().all(|(_, r)| *r == bson!([null, null])));
    let out = by_state(bson!({"$median": {"input": "$type", "method": "approximate"}}));
    assert!(out.iter().all(|(_, r)| *r == Bson::Null));
}

#[test]
fn misused_window_functions() {
    let spec = |function: Bson| bson!({"partitionBy": "$state", "sortBy": {"orderDate": 1}, "output": {"r": function}});
    assert_eq!(
        error(spec(bson!({"$topN": {"n": 2, "output": "$_id"}}))),
        (5788005, "Missing value for 'sortBy'".into())
    );
    assert_eq!(
        error(spec(bson!({"$firstN": {"input": "$quantity"}}))),
        (5787906, "Missing value for 'n'".into())
    );
    // `n` cannot read the document: a window evaluates it once, against nothing.
    assert_eq!(
        error(spec(
            bson!({"$lastN": {"input": "$quantity", "n": "$price"}})
        ))
        .0,
        5787902
    );
    assert_eq!(
        error(spec(bson!({"$maxN": {"input": "$quantity", "n": 0}}))).0,
        5787908
    );
    assert_eq!(
        error(spec(
            bson!({"$median": {"input": "$quantity", "method": "continuous"}})
        ))
        .0,
        2
    );
    assert_eq!(
        error(spec(
            bson!({"$percentile": {"input": "$quantity", "p": [1.5], "method": "approximate"}})
        ))
        .0,
        7750303
    );
    assert_eq!(
        error(spec(
            bson!({"$minN": {"input": "$quantity", "n": 2}, "sortBy": {"a": 1}})
        )),
        (9, "$minN got unexpected argument: sortBy".into())
    );
    // Bounded document windows need the stage's sortBy, whatever the function's own sort.
    assert_eq!(
        error(
            bson!({"output": {"r": {"$topN": {"n": 1, "sortBy": {"price": 1}, "output": "$_id"},
            "window": {"documents": [-1, 0]}}}})
        )
        .0,
        5339901
    );
    // Not a window function in MongoDB 8.0.
    assert_eq!(
        error(spec(bson!({"$mergeObjects": "$$ROOT"}))),
        (9, "Unrecognized window function, $mergeObjects".into())
    );
}
