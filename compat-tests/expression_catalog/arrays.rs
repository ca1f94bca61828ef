//! Array operators: the manual's examples, empty arrays, null and missing operands, numbers of
//! mixed types compared as equal; the set operators' cases join them.

use super::{Case, ErrorCase, absent, constant, dec, fails, long, on};
use mongodb::bson::{Bson, bson, doc};

pub fn cases() -> Vec<Case> {
    let mut cases = arrays();
    cases.extend(super::sets::cases());
    cases
}

fn arrays() -> Vec<Case> {
    let favorites = doc! {"favorites": ["chocolate", "cake", "butter", "apples"]};
    let items = doc! {"items": [
        {"item_id": 43, "quantity": 2, "price": 10, "name": "pen"},
        {"item_id": 2, "quantity": 1, "price": 240, "name": "briefcase"},
    ]};
    vec![
        // element access
        on(
            "arrayElemAt first",
            favorites.clone(),
            bson!({"$arrayElemAt": ["$favorites", 0]}),
            "chocolate",
        ),
        on(
            "arrayElemAt last",
            favorites.clone(),
            bson!({"$arrayElemAt": ["$favorites", -1]}),
            "apples",
        ),
        absent(
            "arrayElemAt out of bounds",
            favorites.clone(),
            bson!({"$arrayElemAt": ["$favorites", 15]}),
        ),
        on(
            "arrayElemAt long index",
            favorites.clone(),
            bson!({"$arrayElemAt": ["$favorites", long(1)]}),
            "cake",
        ),
        on(
            "arrayElemAt null",
            doc! {},
            bson!({"$arrayElemAt": ["$favorites", 0]}),
            Bson::Null,
        ),
        on(
            "first manual",
            favorites.clone(),
            bson!({"$first": "$favorites"}),
            "chocolate",
        ),
        on(
            "last manual",
            favorites.clone(),
            bson!({"$last": "$favorites"}),
            "apples",
        ),
        absent("first empty", doc! {"a": []}, bson!({"$first": "$a"})),
        on(
            "last null",
            doc! {"a": null},
            bson!({"$last": "$a"}),
            Bson::Null,
        ),
        // higher order
        on(
            "filter manual",
            items.clone(),
            bson!({"$filter": {"input": "$items", "as": "item", "cond": {"$gte": ["$$item.price", 100]}}}),
            bson!([{"item_id": 2, "quantity": 1, "price": 240, "name": "briefcase"}]),
        ),
        constant(
            "filter limit",
            bson!({"$filter": {"input": [1, 2, 3, 4], "as": "num", "cond": {"$gt": ["$$num", 1]}, "limit": 2}}),
            bson!([2, 3]),
        ),
        constant(
            "filter empty",
            bson!({"$filter": {"input": [], "cond": true}}),
            bson!([]),
        ),
        on(
            "filter missing",
            doc! {},
            bson!({"$filter": {"input": "$a", "cond": true}}),
            Bson::Null,
        ),
        on(
            "map manual",
            doc! {"quizzes": [5, 6, 7]},
            bson!({"$map": {"input": "$quizzes", "as": "grade", "in": {"$add": ["$$grade", 2]}}}),
            bson!([7, 8, 9]),
        ),
        on(
            "map empty",
            doc! {"quizzes": []},
            bson!({"$map": {"input": "$quizzes", "in": {"$add": ["$$this", 2]}}}),
            bson!([]),
        ),
        on(
            "map missing",
            doc! {},
            bson!({"$map": {"input": "$quizzes", "in": 1}}),
            Bson::Null,
        ),
        constant(
            "map mixed numbers",
            bson!({"$map": {"input": [1, long(2), 2.5, dec("1.5")], "in": {"$multiply": ["$$this", 2]}}}),
            bson!([2, long(4), 5.0, dec("3.0")]),
        ),
        constant(
            "reduce strings",
            bson!({"$reduce": {"input": ["a", "b", "c"], "initialValue": "", "in": {"$concat": ["$$value", "$$this"]}}}),
            "abc",
        ),
        constant(
            "reduce object",
            bson!({"$reduce": {"input": [1, 2, 3, 4], "initialValue": {"sum": 5, "product": 2},
                "in": {"sum": {"$add": ["$$value.sum", "$$this"]}, "product": {"$multiply": ["$$value.product", "$$this"]}}}}),
            bson!({"sum": 15, "product": 48}),
        ),
        constant(
            "reduce arrays",
            bson!({"$reduce": {"input": [[3, 4], [5, 6]], "initialValue": [1, 2], "in": {"$concatArrays": ["$$value", "$$this"]}}}),
            bson!([1, 2, 3, 4, 5, 6]),
        ),
        constant(
            "reduce empty",
            bson!({"$reduce": {"input": [], "initialValue": 7, "in": 0}}),
            7,
        ),
        // size, slice, membership
        on(
            "size manual",
            doc! {"colors": ["blue", "black"]},
            bson!({"$size": "$colors"}),
            2,
        ),
        on(
            "size empty",
            doc! {"colors": []},
            bson!({"$size": "$colors"}),
            0,
        ),
        on(
            "slice manual",
            favorites.clone(),
            bson!({"$slice": ["$favorites", 3]}),
            bson!(["chocolate", "cake", "butter"]),
        ),
        constant(
            "slice from end",
            bson!({"$slice": [[1, 2, 3], -2]}),
            bson!([2, 3]),
        ),
        constant(
            "slice position",
            bson!({"$slice": [[1, 2, 3], 1, 1]}),
            bson!([2]),
        ),
        constant(
            "slice before start",
            bson!({"$slice": [[1, 2, 3], -5, 2]}),
            bson!([1, 2]),
        ),
        constant(
            "slice past end",
            bson!({"$slice": [[1, 2, 3], 15, 2]}),
            bson!([]),
        ),
        on(
            "slice null",
            doc! {},
            bson!({"$slice": ["$a", 1]}),
            Bson::Null,
        ),
        on(
            "in manual",
            doc! {"in_stock": ["apples", "oranges"]},
            bson!({"$in": ["bananas", "$in_stock"]}),
            false,
        ),
        constant("in mixed numbers", bson!({"$in": [2, [1, long(2)]]}), true),
        constant("in empty", bson!({"$in": [null, []]}), false),
        // building
        on(
            "concatArrays manual",
            doc! {"instock": ["chocolate"], "ordered": ["butter", "apples"]},
            bson!({"$concatArrays": ["$instock", "$ordered"]}),
            bson!(["chocolate", "butter", "apples"]),
        ),
        constant(
            "concatArrays empty",
            bson!({"$concatArrays": [[], []]}),
            bson!([]),
        ),
        on(
            "concatArrays null",
            doc! {"a": [1]},
            bson!({"$concatArrays": ["$a", "$b"]}),
            Bson::Null,
        ),
        on(
            "range manual",
            doc! {"distance": 80},
            bson!({"$range": [0, "$distance", 25]}),
            bson!([0, 25, 50, 75]),
        ),
        constant(
            "range negative step",
            bson!({"$range": [5, 0, -2]}),
            bson!([5, 3, 1]),
        ),
        constant("range empty", bson!({"$range": [0, 0]}), bson!([])),
        constant(
            "range long bounds",
            bson!({"$range": [long(0), 2]}),
            bson!([0, 1]),
        ),
        constant(
            "reverseArray",
            bson!({"$reverseArray": [[1, 2, 3]]}),
            bson!([3, 2, 1]),
        ),
        constant(
            "reverseArray empty",
            bson!({"$reverseArray": [[]]}),
            bson!([]),
        ),
        on(
            "reverseArray null",
            doc! {},
            bson!({"$reverseArray": "$a"}),
            Bson::Null,
        ),
        constant(
            "zip shortest",
            bson!({"$zip": {"inputs": [["a"], ["b"], ["c"]]}}),
            bson!([["a", "b", "c"]]),
        ),
        constant(
            "zip truncates",
            bson!({"$zip": {"inputs": [[1], [2, 3]]}}),
            bson!([[1, 2]]),
        ),
        constant(
            "zip longest",
            bson!({"$zip": {"inputs": [[1], [2, 3]], "useLongestLength": true}}),
            bson!([[1, 2], [null, 3]]),
        ),
        constant(
            "zip defaults",
            bson!({"$zip": {"inputs": [[1], [2, 3], [4]], "useLongestLength": true, "defaults": ["a", "b", "c"]}}),
            bson!([[1, 2, 4], ["a", 3, "c"]]),
        ),
        on(
            "zip null",
            doc! {},
            bson!({"$zip": {"inputs": ["$a", [1]]}}),
            Bson::Null,
        ),
        constant(
            "indexOfArray",
            bson!({"$indexOfArray": [["a", "abc"], "a"]}),
            0,
        ),
        constant(
            "indexOfArray absent",
            bson!({"$indexOfArray": [[1, 2], 5]}),
            -1,
        ),
        constant(
            "indexOfArray start",
            bson!({"$indexOfArray": [[1, 2, 3, 2], 2, 2]}),
            3,
        ),
        constant(
            "indexOfArray mixed numbers",
            bson!({"$indexOfArray": [[1, 2.0], long(2)]}),
            1,
        ),
        on(
            "indexOfArray null",
            doc! {},
            bson!({"$indexOfArray": ["$a", 1]}),
            Bson::Null,
        ),
        on(
            "isArray manual",
            doc! {"instock": ["a"]},
            bson!({"$isArray": ["$instock"]}),
            true,
        ),
        on(
            "isArray missing",
            doc! {},
            bson!({"$isArray": ["$instock"]}),
            false,
        ),
        constant(
            "arrayToObject pairs",
            bson!({"$arrayToObject": [[["item", "abc123"], ["qty", 25]]]}),
            bson!({"item": "abc123", "qty": 25}),
        ),
        constant(
            "arrayToObject k v",
            bson!({"$arrayToObject": [[{"k": "item", "v": "abc123"}, {"k": "qty", "v": 25}]]}),
            bson!({"item": "abc123", "qty": 25}),
        ),
        constant(
            "arrayToObject empty",
            bson!({"$arrayToObject": [[]]}),
            bson!({}),
        ),
        on(
            "arrayToObject null",
            doc! {},
            bson!({"$arrayToObject": "$a"}),
            Bson::Null,
        ),
        on(
            "objectToArray manual",
            doc! {"dimensions": {"l": 25, "w": 10, "uom": "cm"}},
            bson!({"$objectToArray": "$dimensions"}),
            bson!([{"k": "l", "v": 25}, {"k": "w", "v": 10}, {"k": "uom", "v": "cm"}]),
        ),
        on(
            "objectToArray null",
            doc! {},
            bson!({"$objectToArray": "$d"}),
            Bson::Null,
        ),
        // sorting and N
        constant(
            "sortArray numbers",
            bson!({"$sortArray": {"input": [1, 4, 1, 6, 12, 5], "sortBy": 1}}),
            bson!([1, 1, 4, 5, 6, 12]),
        ),
        constant(
            "sortArray mixed types",
            bson!({"$sortArray": {"input": [20, 4, {"a": "Free"}, 6, 21, 5, "Gratis", {"a": null},
                {"a": {"sale": true, "price": 19}}, dec("10.23"), {"a": "On sale"}], "sortBy": 1}}),
            bson!([4, 5, 6, dec("10.23"), 20, 21, "Gratis", {"a": null}, {"a": "Free"}, {"a": "On sale"},
                {"a": {"sale": true, "price": 19}}]),
        ),
        on(
            "sortArray by field",
            doc! {"team": [{"name": "pat", "age": 30}, {"name": "dallas", "age": 36}, {"name": "charlie", "age": 42}]},
            bson!({"$sortArray": {"input": "$team", "sortBy": {"name": 1}}}),
            bson!([{"name": "charlie", "age": 42}, {"name": "dallas", "age": 36}, {"name": "pat", "age": 30}]),
        ),
        on(
            "sortArray null",
            doc! {},
            bson!({"$sortArray": {"input": "$a", "sortBy": 1}}),
            Bson::Null,
        ),
        constant(
            "firstN",
            bson!({"$firstN": {"n": 3, "input": [1, 2, 3, 4]}}),
            bson!([1, 2, 3]),
        ),
        constant(
            "firstN more than size",
            bson!({"$firstN": {"n": 5, "input": [1, 2]}}),
            bson!([1, 2]),
        ),
        constant(
            "lastN",
            bson!({"$lastN": {"n": 2, "input": [1, 2, 3, 4]}}),
            bson!([3, 4]),
        ),
        constant(
            "lastN empty",
            bson!({"$lastN": {"n": 2, "input": []}}),
            bson!([]),
        ),
        constant(
            "maxN ignores null",
            bson!({"$maxN": {"n": 2, "input": [null, 3, 1, 2]}}),
            bson!([3, 2]),
        ),
        constant(
            "minN",
            bson!({"$minN": {"n": 2, "input": [null, 3, 1, 2]}}),
            bson!([1, 2]),
        ),
        constant(
            "maxN mixed numbers",
            bson!({"$maxN": {"n": 2, "input": [1, long(5), 2.5, dec("4")]}}),
            bson!([long(5), dec("4")]),
        ),
    ]
}

pub fn errors() -> Vec<ErrorCase> {
    vec![
        fails(
            "size not an array",
            doc! {"a": 1},
            bson!({"$size": "$a"}),
            17124,
        ),
        fails("size missing", doc! {}, bson!({"$size": "$a"}), 17124),
        fails(
            "arrayElemAt not an array",
            doc! {"a": 1},
            bson!({"$arrayElemAt": ["$a", 0]}),
            28689,
        ),
        fails(
            "concatArrays not an array",
            doc! {"a": 1},
            bson!({"$concatArrays": [[1], "$a"]}),
            28664,
        ),
        fails(
            "in not an array",
            doc! {"a": 1},
            bson!({"$in": [1, "$a"]}),
            40081,
        ),
        fails(
            "range zero step",
            doc! {"s": 0},
            bson!({"$range": [0, 5, "$s"]}),
            34449,
        ),
        fails(
            "setEquals null",
            doc! {},
            bson!({"$setEquals": [[1], "$a"]}),
            17044,
        ),
        fails(
            "slice not an array",
            doc! {"a": 1},
            bson!({"$slice": ["$a", 1]}),
            28724,
        ),
    ]
}
