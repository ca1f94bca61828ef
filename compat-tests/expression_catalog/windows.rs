//! The accumulators as `$setWindowFields` window functions (all but `$mergeObjects`, which
//! MongoDB does not allow there) on the manual's cake sales: running (`documents`) and `range`
//! windows, whole partitions, mixed numeric types.

use super::accumulators::{case, error};
use super::{PipelineCase, PipelineError, dec, long};
use mongodb::bson::{Bson, Document, bson, doc};

/// The manual's cake sales (in `_id` order 0 to 5).
fn cake_sales() -> Vec<Document> {
    [
        ("2020-05-18T14:10:30Z", "CA", 13, 120),
        ("2021-03-20T11:30:05Z", "WA", 14, 140),
        ("2021-01-11T06:31:15Z", "CA", 12, 145),
        ("2020-02-08T13:13:23Z", "WA", 13, 104),
        ("2019-05-18T16:09:01Z", "CA", 41, 162),
        ("2019-01-08T06:12:03Z", "WA", 43, 134),
    ]
    .into_iter()
    .map(|(date, state, price, quantity)| {
        doc! {"orderDate": super::date(date), "state": state, "price": price, "quantity": quantity}
    })
    .collect()
}

/// `$setWindowFields` by state in order date of `output` as field `r`, one value per cake in
/// `_id` order.
fn per_state(name: &'static str, output: Document, values: [Bson; 6]) -> PipelineCase {
    per_state_sorted(name, doc! {"orderDate": 1}, output, values)
}

fn per_state_sorted(
    name: &'static str,
    sort_by: Document,
    output: Document,
    values: [Bson; 6],
) -> PipelineCase {
    case(
        name,
        cake_sales(),
        vec![
            doc! {"$setWindowFields": {"partitionBy": "$state", "sortBy": sort_by, "output": {"r": output}}},
            doc! {"$sort": {"_id": 1}},
            doc! {"$project": {"_id": 0, "r": 1}},
        ],
        values.into_iter().map(|r| doc! {"r": r}).collect(),
    )
}

fn running(accumulator: Document) -> Document {
    let mut output = accumulator;
    output.insert("window", doc! {"documents": ["unbounded", "current"]});
    output
}

pub fn window_cases() -> Vec<PipelineCase> {
    let ca_wa = |ca: Bson, wa: Bson| [ca.clone(), wa.clone(), ca.clone(), wa.clone(), ca, wa];
    vec![
        per_state(
            "sum manual",
            running(doc! {"$sum": "$quantity"}),
            [282, 378, 427, 238, 162, 134].map(Bson::from),
        ),
        per_state(
            "avg manual",
            running(doc! {"$avg": "$quantity"}),
            [141.0, 126.0, 142.33333333333334, 119.0, 162.0, 134.0].map(Bson::from),
        ),
        per_state(
            "min running",
            running(doc! {"$min": "$quantity"}),
            [120, 104, 120, 104, 162, 134].map(Bson::from),
        ),
        per_state(
            "max running",
            running(doc! {"$max": "$quantity"}),
            [162, 140, 162, 134, 162, 134].map(Bson::from),
        ),
        per_state(
            "first",
            running(doc! {"$first": "$quantity"}),
            ca_wa(162.into(), 134.into()),
        ),
        per_state(
            "last whole partition",
            doc! {"$last": "$quantity"},
            ca_wa(145.into(), 140.into()),
        ),
        per_state(
            "push running",
            running(doc! {"$push": "$quantity"}),
            [
                bson!([162, 120]),
                bson!([134, 104, 140]),
                bson!([162, 120, 145]),
                bson!([134, 104]),
                bson!([162]),
                bson!([134]),
            ],
        ),
        case(
            "addToSet running",
            cake_sales(),
            vec![
                doc! {"$setWindowFields": {"partitionBy": "$state", "sortBy": {"orderDate": 1}, "output": {
                "r": {"$addToSet": "$price", "window": {"documents": ["unbounded", "current"]}}}}},
                doc! {"$sort": {"_id": 1}},
                doc! {"$project": {"_id": 0, "r": {"$sortArray": {"input": "$r", "sortBy": 1}}}},
            ],
            [
                bson!([13, 41]),
                bson!([13, 14, 43]),
                bson!([12, 13, 41]),
                bson!([13, 43]),
                bson!([41]),
                bson!([43]),
            ]
            .into_iter()
            .map(|r| doc! {"r": r})
            .collect(),
        ),
        per_state(
            "count running",
            running(doc! {"$count": {}}),
            [2, 3, 3, 2, 1, 1].map(Bson::from),
        ),
        per_state(
            "stdDevPop pairs",
            doc! {"$stdDevPop": "$quantity", "window": {"documents": [-1, 0]}},
            [21.0, 18.0, 12.5, 15.0, 0.0, 0.0].map(Bson::from),
        ),
        per_state(
            "stdDevSamp pairs",
            doc! {"$stdDevSamp": "$quantity", "window": {"documents": [-1, 0]}},
            [
                29.698484809834994.into(),
                25.45584412271571.into(),
                17.67766952966369.into(),
                21.213203435596427.into(),
                Bson::Null,
                Bson::Null,
            ],
        ),
        per_state(
            "top",
            doc! {"$top": {"sortBy": {"price": 1}, "output": "$price"}},
            ca_wa(12.into(), 13.into()),
        ),
        per_state(
            "bottom",
            doc! {"$bottom": {"sortBy": {"price": 1}, "output": "$price"}},
            ca_wa(41.into(), 43.into()),
        ),
        per_state(
            "topN",
            doc! {"$topN": {"n": 2, "sortBy": {"quantity": -1}, "output": "$quantity"}},
            ca_wa(bson!([162, 145]), bson!([140, 134])),
        ),
        per_state(
            "bottomN",
            doc! {"$bottomN": {"n": 2, "sortBy": {"price": 1}, "output": "$price"}},
            ca_wa(bson!([13, 41]), bson!([14, 43])),
        ),
        per_state(
            "firstN running",
            running(doc! {"$firstN": {"n": 2, "input": "$quantity"}}),
            [
                bson!([162, 120]),
                bson!([134, 104]),
                bson!([162, 120]),
                bson!([134, 104]),
                bson!([162]),
                bson!([134]),
            ],
        ),
        per_state(
            "lastN running",
            running(doc! {"$lastN": {"n": 2, "input": "$quantity"}}),
            [
                bson!([162, 120]),
                bson!([104, 140]),
                bson!([120, 145]),
                bson!([134, 104]),
                bson!([162]),
                bson!([134]),
            ],
        ),
        per_state(
            "maxN",
            doc! {"$maxN": {"n": 2, "input": "$quantity"}},
            ca_wa(bson!([162, 145]), bson!([140, 134])),
        ),
        per_state(
            "minN",
            doc! {"$minN": {"n": 2, "input": "$quantity"}},
            ca_wa(bson!([120, 145]), bson!([104, 134])),
        ),
        per_state(
            "median running",
            running(doc! {"$median": {"input": "$quantity", "method": "approximate"}}),
            [120.0, 134.0, 145.0, 104.0, 162.0, 134.0].map(Bson::from),
        ),
        per_state(
            "percentile",
            doc! {"$percentile": {"input": "$quantity", "p": [0, 1], "method": "approximate"}},
            ca_wa(bson!([120.0, 162.0]), bson!([104.0, 140.0])),
        ),
        per_state_sorted(
            "sum range window",
            doc! {"price": 1},
            doc! {"$sum": "$quantity", "window": {"range": [-1, 1]}},
            [265, 244, 265, 244, 162, 134].map(Bson::from),
        ),
        case(
            "sum and avg of mixed numeric types",
            vec![
                doc! {"n": 1},
                doc! {"n": long(2)},
                doc! {"n": dec("1.5")},
                doc! {},
            ],
            vec![
                doc! {"$setWindowFields": {"sortBy": {"_id": 1}, "output": {
                    "sum": {"$sum": "$n", "window": {"documents": ["unbounded", "current"]}},
                    "avg": {"$avg": "$n", "window": {"documents": [-1, 0]}},
                }}},
                doc! {"$project": {"_id": 0, "sum": 1, "avg": 1}},
            ],
            vec![
                doc! {"sum": 1, "avg": 1.0},
                doc! {"sum": long(3), "avg": 1.5},
                doc! {"sum": dec("4.5"), "avg": dec("1.75")},
                doc! {"sum": dec("4.5"), "avg": dec("1.5")},
            ],
        ),
    ]
}

pub fn window_errors() -> Vec<PipelineError> {
    vec![
        error(
            "topN without sortBy",
            vec![
                doc! {"$setWindowFields": {"output": {"t": {"$topN": {"n": 1, "output": "$_id"}}}}},
            ],
            5788005,
        ),
        error(
            "document window without sortBy",
            vec![
                doc! {"$setWindowFields": {"output": {"t": {"$sum": "$n", "window": {"documents": [-1, 0]}}}}},
            ],
            5339901,
        ),
    ]
}
