//! `$setWindowFields` through whole pipelines: the manual's examples and the parse and run
//! errors.

use crate::aggregate::Pipeline;
use bson::{Bson, DateTime, Document, bson, doc};

pub(super) fn date(text: &str) -> DateTime {
    DateTime::parse_rfc3339_str(text).unwrap()
}

/// The `cakeSales` collection of MongoDB's window function examples.
pub(super) fn cake_sales() -> Vec<Document> {
    vec![
        doc! {"_id": 0, "type": "chocolate", "orderDate": date("2020-05-18T14:10:30Z"), "state": "CA", "price": 13, "quantity": 120},
        doc! {"_id": 1, "type": "chocolate", "orderDate": date("2021-03-20T11:30:05Z"), "state": "WA", "price": 14, "quantity": 140},
        doc! {"_id": 2, "type": "vanilla", "orderDate": date("2021-01-11T06:31:15Z"), "state": "CA", "price": 12, "quantity": 145},
        doc! {"_id": 3, "type": "vanilla", "orderDate": date("2020-02-08T13:13:23Z"), "state": "WA", "price": 13, "quantity": 104},
        doc! {"_id": 4, "type": "strawberry", "orderDate": date("2019-05-18T16:09:01Z"), "state": "CA", "price": 41, "quantity": 162},
        doc! {"_id": 5, "type": "strawberry", "orderDate": date("2019-01-08T06:12:03Z"), "state": "WA", "price": 43, "quantity": 134},
    ]
}

fn run(spec: Bson, docs: Vec<Document>) -> crate::error::Result<Vec<Document>> {
    Pipeline::parse(&[doc! {"$setWindowFields": spec}])?.run(docs)
}

/// `(_id, field)` of each output document, in output order.
fn column(out: &[Document], field: &str) -> Vec<(i32, Bson)> {
    out.iter()
        .map(|d| {
            (
                d.get_i32("_id").unwrap(),
                d.get(field).cloned().unwrap_or(Bson::Null),
            )
        })
        .collect()
}

fn code(spec: Bson) -> i32 {
    Pipeline::parse(&[doc! {"$setWindowFields": spec}])
        .err()
        .map_or(0, |e| e.code().code())
}

#[test]
fn manual_cumulative_quantity_per_state() {
    let out = run(
        bson!({"partitionBy": "$state", "sortBy": {"orderDate": 1}, "output": {
            "cumulativeQuantityForState": {"$sum": "$quantity", "window": {"documents": ["unbounded", "current"]}}
        }}),
        cake_sales(),
    )
    .unwrap();
    assert_eq!(
        column(&out, "cumulativeQuantityForState"),
        vec![
            (4, bson!(162)),
            (0, bson!(282)),
            (2, bson!(427)),
            (5, bson!(134)),
            (3, bson!(238)),
            (1, bson!(378))
        ]
    );
    assert_eq!(out[0].get_str("type").unwrap(), "strawberry");
}

#[test]
fn moving_average_and_partition_total() {
    let out = run(
        bson!({"partitionBy": "$state", "sortBy": {"orderDate": 1}, "output": {
            "averageQuantity": {"$avg": "$quantity", "window": {"documents": [-1, 0]}},
            "total": {"$sum": "$quantity"}
        }}),
        cake_sales(),
    )
    .unwrap();
    assert_eq!(
        column(&out, "averageQuantity"),
        vec![
            (4, bson!(162.0)),
            (0, bson!(141.0)),
            (2, bson!(132.5)),
            (5, bson!(134.0)),
            (3, bson!(119.0)),
            (1, bson!(122.0))
        ]
    );
    assert_eq!(out[0].get("total"), Some(&bson!(427)));
    assert_eq!(out[5].get("total"), Some(&bson!(378)));
}

#[test]
fn manual_time_range_with_unit() {
    let out = run(
        bson!({"partitionBy": "$state", "sortBy": {"orderDate": 1}, "output": {
            "recentOrders": {"$push": "$orderDate", "window": {"range": ["unbounded", 10], "unit": "month"}}
        }}),
        cake_sales(),
    )
    .unwrap();
    let d = |s: &str| Bson::DateTime(date(s));
    assert_eq!(
        column(&out, "recentOrders"),
        vec![
            (4, Bson::Array(vec![d("2019-05-18T16:09:01Z")])),
            (
                0,
                Bson::Array(vec![
                    d("2019-05-18T16:09:01Z"),
                    d("2020-05-18T14:10:30Z"),
                    d("2021-01-11T06:31:15Z")
                ])
            ),
            (
                2,
                Bson::Array(vec![
                    d("2019-05-18T16:09:01Z"),
                    d("2020-05-18T14:10:30Z"),
                    d("2021-01-11T06:31:15Z")
                ])
            ),
            (5, Bson::Array(vec![d("2019-01-08T06:12:03Z")])),
            (
                3,
                Bson::Array(vec![d("2019-01-08T06:12:03Z"), d("2020-02-08T13:13:23Z")])
            ),
            (
                1,
                Bson::Array(vec![
                    d("2019-01-08T06:12:03Z"),
                    d("2020-02-08T13:13:23Z"),
                    d("2021-03-20T11:30:05Z")
                ])
            ),
        ]
    );
}

#[test]
fn numeric_range_windows() {
    let docs = vec![
        doc! {"_id": 1, "x": 1, "v": 1},
        doc! {"_id": 2, "x": 2, "v": 10},
        doc! {"_id": 3, "x": 2, "v": 100},
        doc! {"_id": 4, "x": 5, "v": 1000},
    ];
    let out = run(
        bson!({"sortBy": {"x": 1}, "output": {
            "near": {"$sum": "$v", "window": {"range": [-1, 1]}},
            "ties": {"$sum": "$v", "window": {"range": ["current", "current"]}},
            "n": {"$count": {}, "window": {"range": [-10, "current"]}}
        }}),
        docs,
    )
    .unwrap();
    assert_eq!(
        column(&out, "near"),
        vec![
            (1, bson!(111)),
            (2, bson!(111)),
            (3, bson!(111)),
            (4, bson!(1000))
        ]
    );
    assert_eq!(
        column(&out, "ties"),
        vec![
            (1, bson!(1)),
            (2, bson!(110)),
            (3, bson!(110)),
            (4, bson!(1000))
        ]
    );
    assert_eq!(
        column(&out, "n"),
        vec![(1, bson!(1)), (2, bson!(3)), (3, bson!(3)), (4, bson!(4))]
    );
    let err = run(
        bson!({"sortBy": {"x": 1}, "output": {"s": {"$sum": 1, "window": {"range": [-1, 1]}}}}),
        vec![doc! {"_id": 1, "x": "a"}],
    )
    .unwrap_err();
    assert_eq!(err.code().code(), 5429414);
}

#[test]
fn manual_rank_dense_rank_document_number() {
    let out = run(
        bson!({"partitionBy": "$state", "sortBy": {"quantity": -1}, "output": {
            "rankQuantityForState": {"$rank": {}},
            "n": {"$documentNumber": {}}
        }}),
        cake_sales(),
    )
    .unwrap();
    assert_eq!(
        column(&out, "rankQuantityForState"),
        vec![
            (4, bson!(1)),
            (2, bson!(2)),
            (0, bson!(3)),
            (1, bson!(1)),
            (5, bson!(2)),
            (3, bson!(3))
        ]
    );
    let docs = vec![
        doc! {"_id": 1, "s": 5},
        doc! {"_id": 2, "s": 5},
        doc! {"_id": 3, "s": 7},
        doc! {"_id": 4},
    ];
    let out = run(
        bson!({"sortBy": {"s": 1}, "output": {
            "rank": {"$rank": {}}, "dense": {"$denseRank": {}}, "n": {"$documentNumber": {}}
        }}),
        docs,
    )
    .unwrap();
    assert_eq!(
        column(&out, "rank"),
        vec![(4, bson!(1)), (1, bson!(2)), (2, bson!(2)), (3, bson!(4))]
    );
    assert_eq!(
        column(&out, "dense"),
        vec![(4, bson!(1)), (1, bson!(2)), (2, bson!(2)), (3, bson!(3))]
    );
    assert_eq!(
        column(&out, "n"),
        vec![(4, bson!(1)), (1, bson!(2)), (2, bson!(3)), (3, bson!(4))]
    );
}

#[test]
fn manual_shift() {
    let out = run(
        bson!({"partitionBy": "$state", "sortBy": {"quantity": -1}, "output": {
            "shiftQuantityForState": {"$shift": {"output": "$quantity", "by": 1, "default": "Not available"}}
        }}),
        cake_sales(),
    )
    .unwrap();
    assert_eq!(
        column(&out, "shiftQuantityForState"),
        vec![
            (4, bson!(145)),
            (2, bson!(120)),
            (0, bson!("Not available")),
            (1, bson!(134)),
            (5, bson!(104)),
            (3, bson!("Not available"))
        ]
    );
    let out = run(
        bson!({"sortBy": {"_id": 1}, "output": {"prev": {"$shift": {"output": "$_id", "by": -1}}}}),
        vec![doc! {"_id": 1}, doc! {"_id": 2}],
    )
    .unwrap();
    assert_eq!(column(&out, "prev"), vec![(1, Bson::Null), (2, bson!(1))]);
}

#[test]
fn first_last_min_max_push_add_to_set_std_dev() {
    let docs = (1..=4).map(|i| doc! {"_id": i, "v": i % 3}).collect();
    let out = run(
        bson!({"sortBy": {"_id": 1}, "output": {
            "first": {"$first": "$v", "window": {"documents": [-1, 1]}},
            "last": {"$last": "$v", "window": {"documents": [-1, 1]}},
            "min": {"$min": "$v"},
            "max": {"$max": "$v", "window": {"documents": ["unbounded", "current"]}},
            "set": {"$addToSet": "$v", "window": {"documents": [0, 1]}},
            "pushed": {"$push": "$v", "window": {"documents": [1, 2]}},
            "sd": {"$stdDevPop": "$v", "window": {"documents": [0, 1]}},
            "sds": {"$stdDevSamp": "$v", "window": {"documents": [0, 0]}}
        }}),
        docs,
    )
    .unwrap();
    assert_eq!(
        out[0],
        doc! {"_id": 1, "v": 1, "first": 1, "last": 2, "min": 0, "max": 1, "set": [1, 2], "pushed": [2, 0], "sd": 0.5, "sds": null}
    );
    assert_eq!(
        out[3],
        doc! {"_id": 4, "v": 1, "first": 0, "last": 1, "min": 0, "max": 2, "set": [1], "pushed": [], "sd": 0.0, "sds": null}
    );
}

#[test]
fn manual_linear_fill_and_locf() {
    let hour = |h: u32| date(&format!("2021-03-08T{h:02}:00:00Z"));
    let docs = vec![
        doc! {"_id": 1, "time": hour(9), "price": 500},
        doc! {"_id": 2, "time": hour(10)},
        doc! {"_id": 3, "time": hour(11), "price": 515},
        doc! {"_id": 4, "time": hour(12)},
        doc! {"_id": 5, "time": hour(13)},
        doc! {"_id": 6, "time": hour(14), "price": 485},
        doc! {"_id": 7, "time": hour(15), "price": null},
    ];
    let out = run(
        bson!({"sortBy": {"time": 1}, "output": {
            "linear": {"$linearFill": "$price"},
            "locf": {"$locf": "$price"}
        }}),
        docs,
    )
    .unwrap();
    assert_eq!(
        column(&out, "linear"),
        vec![
            (1, bson!(500)),
            (2, bson!(507.5)),
            (3, bson!(515)),
            (4, bson!(505.0)),
            (5, bson!(495.0)),
            (6, bson!(485)),
            (7, Bson::Null)
        ]
    );
    assert_eq!(
        column(&out, "locf"),
        vec![
            (1, bson!(500)),
            (2, bson!(500)),
            (3, bson!(515)),
            (4, bson!(515)),
            (5, bson!(515)),
            (6, bson!(485)),
            (7, bson!(485))
        ]
    );
}

#[test]
fn derivative_integral_exp_moving_avg_covariance() {
    let docs: Vec<Document> = [(0, 0), (1, 2), (2, 6), (3, 12)]
        .iter()
        .map(|&(t, y)| doc! {"_id": t, "t": t, "y": y})
        .collect();
    let out = run(
        bson!({"sortBy": {"t": 1}, "output": {
            "d": {"$derivative": {"input": "$y"}, "window": {"documents": [-1, 0]}},
            "area": {"$integral": {"input": "$y"}, "window": {"documents": ["unbounded", "current"]}},
            "ema": {"$expMovingAvg": {"input": "$y", "alpha": 0.5}},
            "cov": {"$covariancePop": ["$t", "$t"], "window": {"documents": ["unbounded", "current"]}}
        }}),
        docs,
    )
    .unwrap();
    assert_eq!(
        column(&out, "d"),
        vec![
            (0, Bson::Null),
            (1, bson!(2.0)),
            (2, bson!(4.0)),
            (3, bson!(6.0))
        ]
    );
    assert_eq!(
        column(&out, "area"),
        vec![
            (0, bson!(0.0)),
            (1, bson!(1.0)),
            (2, bson!(5.0)),
            (3, bson!(14.0))
        ]
    );
    assert_eq!(
        column(&out, "ema"),
        vec![
            (0, bson!(0.0)),
            (1, bson!(1.0)),
            (2, bson!(3.5)),
            (3, bson!(7.75))
        ]
    );
    assert_eq!(column(&out, "cov")[1], (1, bson!(0.25)));
}

#[test]
fn nested_output_paths_and_no_partition() {
    let out = run(
        bson!({"output": {"a.total": {"$sum": "$v"}}}),
        vec![doc! {"_id": 1, "v": 2}, doc! {"_id": 2, "v": 3}],
    )
    .unwrap();
    assert_eq!(
        out,
        vec![
            doc! {"_id": 1, "v": 2, "a": {"total": 5}},
            doc! {"_id": 2, "v": 3, "a": {"total": 5}}
        ]
    );
}

#[test]
fn specification_errors() {
    assert_eq!(code(bson!(1)), 9);
    assert_eq!(code(bson!({"sortBy": {"a": 1}})), 40414);
    assert_eq!(code(bson!({"output": {}, "x": 1})), 40415);
    assert_eq!(code(bson!({"output": 1})), 14);
    assert_eq!(code(bson!({"output": {}, "sortBy": 1})), 14);
    assert_eq!(code(bson!({"output": {"a": {"$summ": 1}}})), 9);
    assert_eq!(code(bson!({"output": {"a": {"x": 1}}})), 9);
    assert_eq!(code(bson!({"output": {"a": {"$sum": 1, "y": 1}}})), 9);
    assert_eq!(code(bson!({"output": {"a": {"$rank": {}}}})), 5371602);
    assert_eq!(
        code(bson!({"sortBy": {"a": 1, "b": 1}, "output": {"a": {"$rank": {}}}})),
        5371602
    );
    assert_eq!(
        code(bson!({"sortBy": {"a": 1}, "output": {"a": {"$rank": 1}}})),
        5371603
    );
    assert_eq!(
        code(bson!({"sortBy": {"a": 1}, "output": {"a": {"$rank": {}, "window": {}}}})),
        5371601
    );
    assert_eq!(
        code(bson!({"output": {"a": {"$sum": 1, "window": {"documents": [-1, 0]}}}})),
        5339901
    );
    assert_eq!(
        code(
            bson!({"output": {"a": {"$sum": 1, "window": {"documents": ["unbounded", "unbounded"]}}}})
        ),
        0
    );
    assert_eq!(
        code(
            bson!({"sortBy": {"a": 1}, "output": {"a": {"$sum": 1, "window": {"documents": [1, 0]}}}})
        ),
        5339900
    );
    assert_eq!(
        code(
            bson!({"sortBy": {"a": 1}, "output": {"a": {"$sum": 1, "window": {"documents": [1, "current"]}}}})
        ),
        5339900
    );
    assert_eq!(
        code(
            bson!({"sortBy": {"a": 1}, "output": {"a": {"$sum": 1, "window": {"documents": [0.5, 1]}}}})
        ),
        9
    );
    assert_eq!(
        code(
            bson!({"sortBy": {"a": 1, "b": 1}, "output": {"a": {"$sum": 1, "window": {"range": [0, 1]}}}})
        ),
        5339902
    );
    assert_eq!(
        code(
            bson!({"sortBy": {"a": -1}, "output": {"a": {"$sum": 1, "window": {"range": [0, 1]}}}})
        ),
        8947401
    );
    assert_eq!(
        code(
            bson!({"sortBy": {"a": 1}, "output": {"a": {"$sum": 1, "window": {"range": [0, 1], "unit": "fortnight"}}}})
        ),
        9
    );
    assert_eq!(
        code(
            bson!({"sortBy": {"a": 1}, "output": {"a": {"$sum": 1, "window": {"documents": [0, 1], "range": [0, 1]}}}})
        ),
        9
    );
    assert_eq!(
        code(bson!({"output": {"a": {"$shift": {"output": 1, "by": 1}}}})),
        9
    );
    assert_eq!(
        code(bson!({"sortBy": {"a": 1}, "output": {"a": {"$shift": {"output": 1, "by": 1.5}}}})),
        9
    );
    assert_eq!(
        code(bson!({"output": {"a": {"$linearFill": "$x"}}})),
        605001
    );
    assert_eq!(
        code(bson!({"sortBy": {"a": 1}, "output": {"a": {"$derivative": {"input": "$x"}}}})),
        9
    );
    let err = run(
        bson!({"partitionBy": "$p", "output": {"n": {"$sum": 1}}}),
        vec![doc! {"p": [1]}],
    )
    .unwrap_err();
    assert_eq!(err.code().code(), 14);
}

/// The sort before the windows spills past `internalQueryMaxBlockingSortMemoryUsageBytes` with
/// disk use (same output); one partition past
/// `internalDocumentSourceSetWindowFieldsMaxMemoryBytes` is refused with Location5414201,
/// whatever `allowDiskUse` says, while many partitions each within it pass.
#[test]
fn partitions_within_the_memory_limit() {
    use crate::aggregate::MemoryLimits;
    let docs: Vec<Document> = (0..600)
        .map(|i| doc! {"_id": i, "p": i % 6, "t": (i * 7) % 600, "pad": "x".repeat(40)})
        .collect();
    let stages = [
        doc! {"$setWindowFields": {"partitionBy": "$p", "sortBy": {"t": 1},
        "output": {"cum": {"$sum": "$t", "window": {"documents": ["unbounded", "current"]}},
        "prev": {"$shift": {"output": "$_id", "by": -1}}}}},
    ];
    let expected = Pipeline::parse(&stages).unwrap().run(docs.clone()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let run = |limits: MemoryLimits| {
        Pipeline::parse(&stages)
            .unwrap()
            .with_limits(limits)
            .run(docs.clone())
    };
    // Each partition (100 documents of about 90 bytes, with outputs) fits in 20 KB.
    let sorting = |allow| MemoryLimits {
        max_sort_bytes: 10_000,
        max_window_bytes: 20_000,
        ..MemoryLimits::spilling_to(dir.path(), allow)
    };
    assert_eq!(run(sorting(false)).unwrap_err().code().code(), 292);
    assert_eq!(run(sorting(true)).unwrap(), expected);
    assert!(dir.path().join("_tmp").exists(), "the sort spilled");
    for allow in [false, true] {
        let err = run(MemoryLimits {
            max_window_bytes: 5_000,
            ..MemoryLimits::spilling_to(dir.path(), allow)
        })
        .unwrap_err();
        assert_eq!(
            (err.code().code(), err.code().name().to_string()),
            (5414201, "Location5414201".to_string())
        );
        assert!(
            err.message()
                .contains("Exceeded memory limit in DocumentSourceSetWindowFields, used 5"),
            "{err}"
        );
        assert!(
            err.message().ends_with(" bytes but max allowed is 5000"),
            "{err}"
        );
    }
}

/// Outputs computed over a partition count with it: a `$push` over an unbounded window
/// grows with the square of the partition.
#[test]
fn computed_outputs_count_against_the_partition_limit() {
    use crate::aggregate::MemoryLimits;
    let docs: Vec<Document> = (0..300).map(|i| doc! {"_id": i}).collect();
    let stages = [doc! {"$setWindowFields": {"output": {"all": {"$push": "$_id"}}}}];
    let limits = MemoryLimits {
        max_window_bytes: 100_000,
        ..MemoryLimits::unlimited()
    };
    let err = Pipeline::parse(&stages)
        .unwrap()
        .with_limits(limits)
        .run(docs)
        .unwrap_err();
    assert_eq!(err.code().code(), 5414201);
}

/// Without `partitionBy` and `sortBy` nothing is sorted (as in MongoDB): the input is one
/// partition, refused once it passes the limit, before the rest is read.
#[test]
fn one_unsorted_partition_is_held_to_the_limit() {
    use crate::aggregate::MemoryLimits;
    let docs: Vec<Document> = (0..100)
        .map(|i| doc! {"_id": i, "pad": "x".repeat(100)})
        .collect();
    let stages = [doc! {"$setWindowFields": {"output": {"n": {"$count": {}}}}}];
    let run = |limits| {
        Pipeline::parse(&stages)
            .unwrap()
            .with_limits(limits)
            .run(docs.clone())
    };
    let dir = tempfile::tempdir().unwrap();
    // The sort limit plays no part.
    let fits = MemoryLimits {
        max_sort_bytes: 100,
        max_window_bytes: 100_000,
        ..MemoryLimits::spilling_to(dir.path(), false)
    };
    let out = run(fits).unwrap();
    assert_eq!(out.len(), 100);
    assert!(out.iter().all(|d| d.get_i32("n") == Ok(100)));
    let err = run(MemoryLimits {
        max_window_bytes: 5_000,
        ..MemoryLimits::spilling_to(dir.path(), true)
    })
    .unwrap_err();
    assert_eq!(err.code().code(), 5414201);
    assert!(!dir.path().join("_tmp").exists());
}

#[test]
fn rank_ties_are_equal_under_the_collation() {
    let collation =
        crate::document::collation::Collation::parse(&doc! {"locale": "en", "strength": 2})
            .unwrap();
    let vars = crate::expression::LetVariables::empty(DateTime::now())
        .with_collation(Some(collation.into()));
    let docs = vec![
        doc! {"_id": 1, "s": "b"},
        doc! {"_id": 2, "s": "A"},
        doc! {"_id": 3, "s": "a"},
    ];
    let spec = doc! {"$setWindowFields": {"sortBy": {"s": 1}, "output": {
        "rank": {"$rank": {}}, "dense": {"$denseRank": {}}
    }}};
    let out = Pipeline::parse_with_variables(&[spec], std::sync::Arc::new(vars))
        .unwrap()
        .run(docs)
        .unwrap();
    let ranks: Vec<(i32, Bson, Bson)> = out
        .iter()
        .map(|d| {
            let id = d.get_i32("_id").unwrap();
            (
                id,
                d.get("rank").cloned().unwrap(),
                d.get("dense").cloned().unwrap(),
            )
        })
        .collect();
    // "A" and "a" tie: the same rank, and "b" after both.
    assert_eq!(ranks[2], (1, bson!(3), bson!(2)), "{ranks:?}");
    assert_eq!(
        (&ranks[0].1, &ranks[1].1),
        (&bson!(1), &bson!(1)),
        "{ranks:?}"
    );
}
