//! Every accumulator in `$group`: the manual's examples (sales, game scores, test scores) and
//! the edge cases: result types of mixed numeric inputs (also when shards' partial results are merged),
//! null and missing values, empty groups of values.

use super::{PipelineCase, PipelineError, dec, long};
use mongodb::bson::{Bson, Document, bson, doc};

pub(super) fn case(
    name: &'static str,
    docs: Vec<Document>,
    pipeline: Vec<Document>,
    expected: Vec<Document>,
) -> PipelineCase {
    PipelineCase {
        name,
        docs,
        pipeline,
        expected,
    }
}

pub(super) fn error(name: &'static str, pipeline: Vec<Document>, code: i32) -> PipelineError {
    PipelineError {
        name,
        pipeline,
        code,
    }
}

/// `$group` with `accumulators` by `key`, in input order (the runner's `_id`s follow the
/// listed documents), output sorted by group key.
fn grouped(key: impl Into<Bson>, accumulators: Document) -> Vec<Document> {
    let mut group = doc! {"_id": key.into()};
    group.extend(accumulators);
    vec![
        doc! {"$sort": {"_id": 1}},
        doc! {"$group": group},
        doc! {"$sort": {"_id": 1}},
    ]
}

fn sales() -> Vec<Document> {
    [
        ("abc", "10", 2),
        ("jkl", "20", 1),
        ("xyz", "5", 10),
        ("xyz", "5", 20),
        ("abc", "10", 10),
        ("def", "7.5", 5),
        ("def", "7.5", 10),
        ("abc", "10", 5),
    ]
    .into_iter()
    .map(|(item, price, quantity)| doc! {"item": item, "price": dec(price), "quantity": quantity})
    .collect()
}

fn game_scores() -> Vec<Document> {
    [
        ("PlayerA", "G1", 31),
        ("PlayerB", "G1", 33),
        ("PlayerC", "G1", 99),
        ("PlayerD", "G1", 1),
        ("PlayerA", "G2", 10),
        ("PlayerB", "G2", 14),
        ("PlayerC", "G2", 66),
        ("PlayerD", "G2", 80),
    ]
    .into_iter()
    .map(|(player, game, score)| doc! {"playerId": player, "gameId": game, "score": score})
    .collect()
}

/// Values of `n` of several numeric types, each group named by `k`.
fn typed_values() -> Vec<Document> {
    vec![
        doc! {"k": "a int", "n": 1},
        doc! {"k": "a int", "n": 2},
        doc! {"k": "b long", "n": 1},
        doc! {"k": "b long", "n": long(2)},
        doc! {"k": "c double", "n": 1},
        doc! {"k": "c double", "n": 0.5},
        doc! {"k": "d decimal", "n": 1},
        doc! {"k": "d decimal", "n": dec("0.5")},
        doc! {"k": "e overflow", "n": 2147483647},
        doc! {"k": "e overflow", "n": 1},
        doc! {"k": "f nullish", "n": null},
        doc! {"k": "f nullish"},
        doc! {"k": "g mixed", "n": "a"},
        doc! {"k": "g mixed", "n": 3},
        doc! {"k": "g mixed", "n": null},
    ]
}

pub fn group_cases() -> Vec<PipelineCase> {
    let mut cases = vec![
        case(
            "sum avg count manual",
            sales(),
            grouped(
                "$item",
                doc! {
                    "totalSaleAmount": {"$sum": {"$multiply": ["$price", "$quantity"]}},
                    "averageQuantity": {"$avg": "$quantity"},
                    "count": {"$sum": 1},
                },
            ),
            vec![
                doc! {"_id": "abc", "totalSaleAmount": dec("170"), "averageQuantity": 5.666666666666667, "count": 3},
                doc! {"_id": "def", "totalSaleAmount": dec("112.5"), "averageQuantity": 7.5, "count": 2},
                doc! {"_id": "jkl", "totalSaleAmount": dec("20"), "averageQuantity": 1.0, "count": 1},
                doc! {"_id": "xyz", "totalSaleAmount": dec("150"), "averageQuantity": 15.0, "count": 2},
            ],
        ),
        case(
            "group by null manual",
            sales(),
            grouped(
                Bson::Null,
                doc! {
                    "totalSaleAmount": {"$sum": {"$multiply": ["$price", "$quantity"]}},
                    "averageQuantity": {"$avg": "$quantity"},
                    "count": {"$count": {}},
                },
            ),
            vec![
                doc! {"_id": null, "totalSaleAmount": dec("452.5"), "averageQuantity": 7.875, "count": 8},
            ],
        ),
        case(
            "sum avg min max by numeric type",
            typed_values(),
            grouped(
                "$k",
                doc! {"sum": {"$sum": "$n"}, "avg": {"$avg": "$n"}, "min": {"$min": "$n"}, "max": {"$max": "$n"}},
            ),
            vec![
                doc! {"_id": "a int", "sum": 3, "avg": 1.5, "min": 1, "max": 2},
                doc! {"_id": "b long", "sum": long(3), "avg": 1.5, "min": 1, "max": long(2)},
                doc! {"_id": "c double", "sum": 1.5, "avg": 0.75, "min": 0.5, "max": 1},
                doc! {"_id": "d decimal", "sum": dec("1.5"), "avg": dec("0.75"), "min": dec("0.5"), "max": 1},
                doc! {"_id": "e overflow", "sum": long(2147483648), "avg": 1073741824.0, "min": 1, "max": 2147483647},
                doc! {"_id": "f nullish", "sum": 0, "avg": null, "min": null, "max": null},
                doc! {"_id": "g mixed", "sum": 3, "avg": 3.0, "min": 3, "max": "a"},
            ],
        ),
        case(
            "first last push",
            vec![doc! {"n": 1}, doc! {"n": null}, doc! {}, doc! {"n": 3}],
            grouped(
                Bson::Null,
                doc! {"first": {"$first": "$n"}, "last": {"$last": "$n"}, "all": {"$push": "$n"},
                "missingFirst": {"$first": "$nothing"}},
            ),
            vec![
                doc! {"_id": null, "first": 1, "last": 3, "all": [1, null, 3], "missingFirst": null},
            ],
        ),
        case(
            "push documents",
            sales(),
            grouped("$item", doc! {"sold": {"$push": {"q": "$quantity"}}}),
            vec![
                doc! {"_id": "abc", "sold": [{"q": 2}, {"q": 10}, {"q": 5}]},
                doc! {"_id": "def", "sold": [{"q": 5}, {"q": 10}]},
                doc! {"_id": "jkl", "sold": [{"q": 1}]},
                doc! {"_id": "xyz", "sold": [{"q": 10}, {"q": 20}]},
            ],
        ),
        case(
            "addToSet",
            sales(),
            vec![
                doc! {"$group": {"_id": "$item", "prices": {"$addToSet": "$price"},
                "quantities": {"$addToSet": "$quantity"}}},
                doc! {"$project": {"prices": 1, "quantities": {"$sortArray": {"input": "$quantities", "sortBy": 1}}}},
                doc! {"$sort": {"_id": 1}},
            ],
            vec![
                doc! {"_id": "abc", "prices": [dec("10")], "quantities": [2, 5, 10]},
                doc! {"_id": "def", "prices": [dec("7.5")], "quantities": [5, 10]},
                doc! {"_id": "jkl", "prices": [dec("20")], "quantities": [1]},
                doc! {"_id": "xyz", "prices": [dec("5")], "quantities": [10, 20]},
            ],
        ),
        case(
            "addToSet equal numbers of mixed types",
            vec![
                doc! {"n": 1},
                doc! {"n": 1.0},
                doc! {"n": long(1)},
                doc! {"n": 2},
                doc! {},
            ],
            vec![
                doc! {"$group": {"_id": null, "set": {"$addToSet": "$n"}}},
                doc! {"$project": {"size": {"$size": "$set"}}},
            ],
            vec![doc! {"_id": null, "size": 2}],
        ),
        case(
            "count empty input",
            vec![doc! {"n": 1}],
            vec![
                doc! {"$match": {"n": 2}},
                doc! {"$group": {"_id": null, "count": {"$count": {}}}},
            ],
            vec![],
        ),
        case(
            "stdDevPop manual",
            vec![
                doc! {"quiz": 1, "score": 85},
                doc! {"quiz": 1, "score": 90},
                doc! {"quiz": 1, "score": 71},
                doc! {"quiz": 2, "score": 82},
                doc! {"quiz": 2, "score": 64},
            ],
            grouped("$quiz", doc! {"stdDev": {"$stdDevPop": "$score"}}),
            vec![
                doc! {"_id": 1, "stdDev": 8.04155872120988},
                doc! {"_id": 2, "stdDev": 9.0},
            ],
        ),
        case(
            "stdDevSamp",
            vec![
                doc! {"k": "a", "n": 2},
                doc! {"k": "a", "n": long(4)},
                doc! {"k": "a", "n": "skipped"},
                doc! {"k": "b", "n": 1},
                doc! {"k": "c"},
            ],
            grouped(
                "$k",
                doc! {"samp": {"$stdDevSamp": "$n"}, "pop": {"$stdDevPop": "$n"}},
            ),
            vec![
                doc! {"_id": "a", "samp": std::f64::consts::SQRT_2, "pop": 1.0},
                doc! {"_id": "b", "samp": null, "pop": 0.0},
                doc! {"_id": "c", "samp": null, "pop": null},
            ],
        ),
        case(
            "mergeObjects manual",
            vec![
                doc! {"year": 2017, "item": "A", "quantity": {"2017Q1": 500, "2017Q2": 500}},
                doc! {"year": 2016, "item": "A", "quantity": {"2016Q1": 400, "2016Q2": 300, "2016Q3": 0, "2016Q4": 0}},
                doc! {"year": 2017, "item": "B", "quantity": {"2017Q1": 300}},
                doc! {"year": 2016, "item": "B", "quantity": {"2016Q3": 100, "2016Q4": 250}},
                doc! {"year": 2015, "item": "B", "quantity": null},
            ],
            grouped(
                "$item",
                doc! {"mergedSales": {"$mergeObjects": "$quantity"}},
            ),
            vec![
                doc! {"_id": "A", "mergedSales": {"2017Q1": 500, "2017Q2": 500, "2016Q1": 400, "2016Q2": 300, "2016Q3": 0, "2016Q4": 0}},
                doc! {"_id": "B", "mergedSales": {"2017Q1": 300, "2016Q3": 100, "2016Q4": 250}},
            ],
        ),
        case(
            "median percentile manual",
            [62, 60, 67, 64, 60]
                .into_iter()
                .map(|score| doc! {"test01": score})
                .collect(),
            grouped(
                Bson::Null,
                doc! {
                    "median": {"$median": {"input": "$test01", "method": "approximate"}},
                    "percentiles": {"$percentile": {"input": "$test01", "p": [0.5, 0.75, 0.9, 0.95], "method": "approximate"}},
                },
            ),
            vec![doc! {"_id": null, "median": 62.0, "percentiles": [62.0, 64.0, 67.0, 67.0]}],
        ),
        case(
            "median of nothing numeric",
            vec![doc! {"n": "a"}, doc! {}],
            grouped(
                Bson::Null,
                doc! {"median": {"$median": {"input": "$n", "method": "approximate"}}},
            ),
            vec![doc! {"_id": null, "median": null}],
        ),
    ];
    cases.extend(n_cases());
    cases
}

/// `$top $bottom $topN $bottomN $firstN $lastN $maxN $minN` on the manual's game scores.
fn n_cases() -> Vec<PipelineCase> {
    let pair = |player: &str, score: i32| bson!([player, score]);
    let by_game = |accumulator: Document| grouped("$gameId", doc! {"r": accumulator});
    let both = |g1: Bson, g2: Bson| vec![doc! {"_id": "G1", "r": g1}, doc! {"_id": "G2", "r": g2}];
    vec![
        case(
            "top manual",
            game_scores(),
            by_game(doc! {"$top": {"output": ["$playerId", "$score"], "sortBy": {"score": -1}}}),
            both(pair("PlayerC", 99), pair("PlayerD", 80)),
        ),
        case(
            "bottom manual",
            game_scores(),
            by_game(doc! {"$bottom": {"output": ["$playerId", "$score"], "sortBy": {"score": -1}}}),
            both(pair("PlayerD", 1), pair("PlayerA", 10)),
        ),
        case(
            "topN manual",
            game_scores(),
            by_game(
                doc! {"$topN": {"output": ["$playerId", "$score"], "sortBy": {"score": -1}, "n": 3}},
            ),
            both(
                bson!([
                    pair("PlayerC", 99),
                    pair("PlayerB", 33),
                    pair("PlayerA", 31)
                ]),
                bson!([
                    pair("PlayerD", 80),
                    pair("PlayerC", 66),
                    pair("PlayerB", 14)
                ]),
            ),
        ),
        case(
            "bottomN manual",
            game_scores(),
            by_game(
                doc! {"$bottomN": {"output": ["$playerId", "$score"], "sortBy": {"score": -1}, "n": 3}},
            ),
            both(
                bson!([pair("PlayerB", 33), pair("PlayerA", 31), pair("PlayerD", 1)]),
                bson!([
                    pair("PlayerC", 66),
                    pair("PlayerB", 14),
                    pair("PlayerA", 10)
                ]),
            ),
        ),
        case(
            "firstN manual",
            game_scores(),
            by_game(doc! {"$firstN": {"input": ["$playerId", "$score"], "n": 3}}),
            both(
                bson!([
                    pair("PlayerA", 31),
                    pair("PlayerB", 33),
                    pair("PlayerC", 99)
                ]),
                bson!([
                    pair("PlayerA", 10),
                    pair("PlayerB", 14),
                    pair("PlayerC", 66)
                ]),
            ),
        ),
        case(
            "lastN manual",
            game_scores(),
            by_game(doc! {"$lastN": {"input": ["$playerId", "$score"], "n": 3}}),
            both(
                bson!([pair("PlayerB", 33), pair("PlayerC", 99), pair("PlayerD", 1)]),
                bson!([
                    pair("PlayerB", 14),
                    pair("PlayerC", 66),
                    pair("PlayerD", 80)
                ]),
            ),
        ),
        case(
            "maxN manual",
            game_scores(),
            by_game(doc! {"$maxN": {"input": ["$score", "$playerId"], "n": 3}}),
            both(
                bson!([[99, "PlayerC"], [33, "PlayerB"], [31, "PlayerA"]]),
                bson!([[80, "PlayerD"], [66, "PlayerC"], [14, "PlayerB"]]),
            ),
        ),
        case(
            "minN manual",
            game_scores(),
            by_game(doc! {"$minN": {"input": ["$score", "$playerId"], "n": 3}}),
            both(
                bson!([[1, "PlayerD"], [31, "PlayerA"], [33, "PlayerB"]]),
                bson!([[10, "PlayerA"], [14, "PlayerB"], [66, "PlayerC"]]),
            ),
        ),
        case(
            "n accumulators with null and missing",
            vec![
                doc! {"n": 2},
                doc! {"n": null},
                doc! {},
                doc! {"n": long(5)},
            ],
            grouped(
                Bson::Null,
                doc! {
                    "maxN": {"$maxN": {"input": "$n", "n": 3}},
                    "minN": {"$minN": {"input": "$n", "n": 3}},
                    "firstN": {"$firstN": {"input": "$n", "n": 3}},
                    "lastN": {"$lastN": {"input": "$n", "n": 2}},
                    "top": {"$top": {"output": "$n", "sortBy": {"_id": 1}}},
                },
            ),
            vec![
                doc! {"_id": null, "maxN": [long(5), 2], "minN": [2, long(5)],
                "firstN": [2, null, null], "lastN": [null, long(5)], "top": 2},
            ],
        ),
    ]
}

pub fn group_errors() -> Vec<PipelineError> {
    vec![
        error(
            "unknown accumulator",
            vec![doc! {"$group": {"_id": null, "x": {"$frobnicate": "$n"}}}],
            15952,
        ),
        error(
            "group without _id",
            vec![doc! {"$group": {"x": {"$sum": 1}}}],
            15955,
        ),
        error(
            "topN without sortBy",
            vec![doc! {"$group": {"_id": null, "x": {"$topN": {"output": "$n", "n": 1}}}}],
            5788005,
        ),
        error(
            "mergeObjects of a number",
            vec![doc! {"$group": {"_id": null, "x": {"$mergeObjects": "$case"}}}],
            40400,
        ),
    ]
}
