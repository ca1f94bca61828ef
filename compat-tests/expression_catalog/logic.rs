//! Comparison, boolean and conditional operators, variables (`$$ROOT $$CURRENT $$NOW $$REMOVE`,
//! `$let`), `$literal` and `$rand`: the manual's examples, comparisons across
//! types, null and missing operands.

use super::{Case, ErrorCase, absent, constant, dec, fails, long, on};
use mongodb::bson::{Bson, bson, doc};

pub fn cases() -> Vec<Case> {
    let qty = |n: i32| doc! {"item": "abc1", "description": "product 1", "qty": n};
    let grades = |scores: Vec<i32>| doc! {"scores": scores};
    let grade_switch = bson!({"$switch": {"branches": [
        {"case": {"$gte": [{"$avg": "$scores"}, 90]}, "then": "Doing great!"},
        {"case": {"$and": [{"$gte": [{"$avg": "$scores"}, 80]}, {"$lt": [{"$avg": "$scores"}, 90]}]},
            "then": "Doing pretty well."},
        {"case": {"$lt": [{"$avg": "$scores"}, 80]}, "then": "Needs improvement."},
    ], "default": "No scores found."}});
    let order = |price: f64, tax: f64, discount: bool| {
        doc! {"price": price, "tax": tax, "applyDiscount": discount}
    };
    let final_total = bson!({"$let": {
        "vars": {
            "total": {"$add": ["$price", "$tax"]},
            "discounted": {"$cond": {"if": "$applyDiscount", "then": 0.9, "else": 1}},
        },
        "in": {"$multiply": ["$$total", "$$discounted"]},
    }});
    vec![
        // comparison
        on("cmp greater", qty(300), bson!({"$cmp": ["$qty", 250]}), 1),
        on("cmp less", qty(200), bson!({"$cmp": ["$qty", 250]}), -1),
        on("cmp equal", qty(250), bson!({"$cmp": ["$qty", 250]}), 0),
        constant("cmp number string", bson!({"$cmp": [1, "a"]}), -1),
        constant("cmp null number", bson!({"$cmp": [null, 0]}), -1),
        on("eq manual", qty(250), bson!({"$eq": ["$qty", 250]}), true),
        on("ne manual", qty(250), bson!({"$ne": ["$qty", 250]}), false),
        on("gt manual", qty(300), bson!({"$gt": ["$qty", 250]}), true),
        on("gte manual", qty(250), bson!({"$gte": ["$qty", 250]}), true),
        on("lt manual", qty(200), bson!({"$lt": ["$qty", 250]}), true),
        on(
            "lte manual",
            qty(300),
            bson!({"$lte": ["$qty", 250]}),
            false,
        ),
        constant("eq int double", bson!({"$eq": [1, 1.0]}), true),
        constant(
            "eq int long decimal",
            bson!({"$eq": [long(1), dec("1.0")]}),
            true,
        ),
        constant("eq arrays", bson!({"$eq": [[1, 2], [1, 2]]}), true),
        on(
            "eq missing null",
            doc! {},
            bson!({"$eq": ["$missing", null]}),
            false,
        ),
        on(
            "lt missing null",
            doc! {},
            bson!({"$lt": ["$missing", null]}),
            true,
        ),
        constant("gt string number", bson!({"$gt": ["a", 99]}), true),
        // boolean
        on(
            "and manual",
            qty(200),
            bson!({"$and": [{"$gt": ["$qty", 100]}, {"$lt": ["$qty", 250]}]}),
            true,
        ),
        constant("and truthy values", bson!({"$and": [1, "green"]}), true),
        constant("and empty", bson!({"$and": []}), true),
        constant("and null", bson!({"$and": [null, true]}), false),
        constant("and zero", bson!({"$and": [0, true]}), false),
        on(
            "or manual",
            qty(300),
            bson!({"$or": [{"$gt": ["$qty", 250]}, {"$lt": ["$qty", 200]}]}),
            true,
        ),
        constant("or empty", bson!({"$or": []}), false),
        on(
            "or falsy",
            doc! {},
            bson!({"$or": [null, 0, "$missing"]}),
            false,
        ),
        on(
            "not manual",
            qty(300),
            bson!({"$not": [{"$gt": ["$qty", 250]}]}),
            false,
        ),
        constant("not array", bson!({"$not": [[false]]}), false),
        constant("not null", bson!({"$not": [null]}), true),
        on("not missing", doc! {}, bson!({"$not": ["$x"]}), true),
        // conditional
        on(
            "cond object",
            qty(300),
            bson!({"$cond": {"if": {"$gte": ["$qty", 250]}, "then": 30, "else": 20}}),
            30,
        ),
        on(
            "cond array",
            qty(200),
            bson!({"$cond": [{"$gte": ["$qty", 250]}, 30, 20]}),
            20,
        ),
        on("cond null", doc! {}, bson!({"$cond": [null, 1, 2]}), 2),
        on(
            "ifNull null",
            doc! {"description": null},
            bson!({"$ifNull": ["$description", "Unspecified"]}),
            "Unspecified",
        ),
        on(
            "ifNull missing",
            doc! {},
            bson!({"$ifNull": ["$description", "Unspecified"]}),
            "Unspecified",
        ),
        on(
            "ifNull present",
            qty(1),
            bson!({"$ifNull": ["$description", "Unspecified"]}),
            "product 1",
        ),
        on(
            "ifNull several",
            doc! {"value": null, "fallback": 7},
            bson!({"$ifNull": ["$value", "$nothing", "$fallback", 0]}),
            7,
        ),
        on(
            "switch manual pretty well",
            grades(vec![87, 86, 78]),
            grade_switch.clone(),
            "Doing pretty well.",
        ),
        on(
            "switch manual needs improvement",
            grades(vec![71, 64, 75]),
            grade_switch.clone(),
            "Needs improvement.",
        ),
        on(
            "switch great",
            grades(vec![94, 88, 92]),
            grade_switch,
            "Doing great!",
        ),
        // variables
        on("ROOT", doc! {"a": {"b": 3}}, bson!("$$ROOT.a.b"), 3),
        on("CURRENT", doc! {"a": 4}, bson!("$$CURRENT.a"), 4),
        absent("REMOVE", doc! {}, bson!("$$REMOVE")),
        on("NOW", doc! {}, bson!({"$type": "$$NOW"}), "date"),
        on(
            "let manual discounted",
            order(10.0, 0.5, true),
            final_total.clone(),
            9.450000000000001,
        ),
        on(
            "let manual full price",
            order(10.0, 0.25, false),
            final_total,
            10.25,
        ),
        on(
            "let shadows",
            doc! {"x": 1},
            bson!({"$let": {"vars": {"x": 10}, "in": {"$let": {"vars": {"x": 20}, "in": {"$add": ["$$x", "$x"]}}}}}),
            21,
        ),
        constant("literal dollar string", bson!({"$literal": "$1"}), "$1"),
        constant(
            "literal expression",
            bson!({"$literal": {"$add": [2, 3]}}),
            bson!({"$add": [2, 3]}),
        ),
        constant("rand type", bson!({"$type": {"$rand": {}}}), "double"),
        constant(
            "rand range",
            bson!({"$let": {"vars": {"r": {"$rand": {}}}, "in": {"$and": [{"$gte": ["$$r", 0]}, {"$lt": ["$$r", 1]}]}}}),
            true,
        ),
        constant("null literal", Bson::Null, Bson::Null),
    ]
}

pub fn errors() -> Vec<ErrorCase> {
    vec![
        fails(
            "switch without match",
            doc! {"x": 1},
            bson!({"$switch": {"branches": [{"case": {"$eq": ["$x", 2]}, "then": 1}]}}),
            40066,
        ),
        fails(
            "cond without if",
            doc! {},
            bson!({"$cond": {"then": 1, "else": 2}}),
            17080,
        ),
        fails(
            "undefined variable",
            doc! {},
            bson!({"$add": ["$$nope", 1]}),
            17276,
        ),
        fails(
            "unknown operator",
            doc! {},
            bson!({"$add": [{"$frobnicate": 1}]}),
            168,
        ),
        fails("eq arity", doc! {}, bson!({"$eq": [1]}), 16020),
    ]
}
