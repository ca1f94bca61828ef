//! Unit tests of `$project`, `$addFields`/`$set` and `$unset`: results and the server's errors.

use super::*;
use crate::aggregate::stages::{RunContext, Stage, no_variables};
use crate::error::{MongoError, Result};
use bson::{Bson, Document};
use bson::{bson, doc};

fn shape(stage: &str, spec: Bson) -> Result<Shape> {
    let stages = match stage {
        "$project" => parse_project(stage, &spec, &no_variables()),
        "$unset" => parse_unset(stage, &spec, &no_variables()),
        _ => parse_add_fields(stage, &spec, &no_variables()),
    }?;
    match stages.into_iter().next() {
        Some(Stage::Shape(shape)) => Ok(shape),
        _ => Err(MongoError::internal("not a shape stage")),
    }
}

fn apply(stage: &str, spec: Bson, input: Document) -> Document {
    let ctx = RunContext::at_epoch();
    shape(stage, spec).unwrap().apply(&input, &ctx).unwrap()
}

fn error(stage: &str, spec: Bson) -> (i32, String) {
    let err = shape(stage, spec).err().unwrap();
    (err.code().code(), err.message().to_string())
}

/// `{f0: value(0), f1: value(1), ...}`.
fn fields(n: usize, value: impl Fn(usize) -> Bson) -> Document {
    (0..n).map(|i| (format!("f{i}"), value(i))).collect()
}

#[test]
fn shapes_of_100000_fields() {
    // Each name is found in constant time, in the tree and in the document being built.
    let n = 100_000;
    let wide = fields(n, |i| Bson::Int64(i as i64));
    let projected = apply(
        "$project",
        Bson::Document(fields(n, |_| Bson::Int32(1))),
        wide.clone(),
    );
    assert_eq!(projected, wide);
    let mut excluded = apply(
        "$project",
        Bson::Document(fields(n - 1, |_| Bson::Int32(0))),
        wide.clone(),
    );
    assert_eq!(excluded.remove("f99999"), Some(Bson::Int64(99_999)));
    assert!(excluded.is_empty());
    // Every field replaced in place (a literal of 0 is `{$literal: 0}`'s value), on a
    // document that already has them all.
    let replaced = apply(
        "$addFields",
        Bson::Document(fields(n, |i| bson!({"$literal": -(i as i64)}))),
        wide,
    );
    assert_eq!(replaced, fields(n, |i| Bson::Int64(-(i as i64))));
    let unset: Vec<Bson> = (0..n).map(|i| Bson::String(format!("f{i}"))).collect();
    assert_eq!(
        apply("$unset", Bson::Array(unset), doc! {"f1": 1, "g": 2}),
        doc! {"g": 2}
    );
}

#[test]
fn inclusion_keeps_listed_fields_in_input_order() {
    let input = doc! {"_id": 1, "b": 2, "a": 1, "c": 3};
    assert_eq!(
        apply("$project", bson!({"a": 1, "b": true}), input.clone()),
        doc! {"_id": 1, "b": 2, "a": 1}
    );
    assert_eq!(
        apply("$project", bson!({"a": 1, "_id": 0}), input.clone()),
        doc! {"a": 1}
    );
    assert_eq!(
        apply("$project", bson!({"_id": 1}), input.clone()),
        doc! {"_id": 1}
    );
    assert_eq!(apply("$project", bson!({"x": 1}), input), doc! {"_id": 1});
}

#[test]
fn exclusion_drops_listed_fields() {
    let input = doc! {"_id": 1, "a": {"x": 1, "y": 2}, "b": [{"x": 1, "y": 2}, 5], "c": 3};
    assert_eq!(
        apply("$project", bson!({"c": 0}), input.clone()),
        doc! {"_id": 1, "a": {"x": 1, "y": 2}, "b": [{"x": 1, "y": 2}, 5]}
    );
    assert_eq!(
        apply("$project", bson!({"_id": 0}), doc! {"_id": 1, "a": 2}),
        doc! {"a": 2}
    );
    assert_eq!(
        apply(
            "$project",
            bson!({"a.x": 0, "b.y": 0, "_id": 1}),
            input.clone()
        ),
        doc! {"_id": 1, "a": {"y": 2}, "b": [{"x": 1}, 5], "c": 3}
    );
    assert_eq!(
        apply("$unset", bson!(["a", "b"]), input.clone()),
        doc! {"_id": 1, "c": 3}
    );
    assert_eq!(
        apply("$unset", bson!("a.y"), input),
        doc! {"_id": 1, "a": {"x": 1}, "b": [{"x": 1, "y": 2}, 5], "c": 3}
    );
}

#[test]
fn nested_inclusion_through_arrays() {
    let input =
        doc! {"_id": 1, "a": [{"b": 1, "c": 2}, 5, [{"b": 3}], {"c": 4}], "d": {"b": 1, "e": 2}};
    assert_eq!(
        apply("$project", bson!({"a.b": 1, "d": {"e": 1}}), input.clone()),
        doc! {"_id": 1, "a": [{"b": 1}, [{"b": 3}], {}], "d": {"e": 2}}
    );
    assert_eq!(
        apply("$project", bson!({"d.b": 1, "_id": 0}), doc! {"d": 5}),
        doc! {}
    );
}

#[test]
fn computed_fields() {
    let input = doc! {"_id": 7, "a": 1, "b": {"c": 2}};
    assert_eq!(
        apply(
            "$project",
            bson!({"x": "$a", "y": {"$add": ["$a", 1]}, "z": "lit", "n": null}),
            input.clone()
        ),
        doc! {"_id": 7, "x": 1, "y": 2, "z": "lit", "n": null}
    );
    assert_eq!(
        apply(
            "$project",
            bson!({"_id": "$a", "m": "$missing"}),
            input.clone()
        ),
        doc! {"_id": 1}
    );
    assert_eq!(
        apply(
            "$project",
            bson!({"b.d": {"$literal": 5}, "_id": 0}),
            input.clone()
        ),
        doc! {"b": {"d": 5}}
    );
    assert_eq!(
        apply("$project", bson!({"b": {"c": 1, "d": "$a"}}), input.clone()),
        doc! {"_id": 7, "b": {"c": 2, "d": 1}}
    );
    assert_eq!(
        apply(
            "$project",
            bson!({"q.r": "$a", "_id": 0}),
            doc! {"a": 1, "q": 5}
        ),
        doc! {"q": {"r": 1}}
    );
    assert_eq!(
        apply("$project", bson!({"a": 1, "b": "$$REMOVE"}), input),
        doc! {"_id": 7, "a": 1}
    );
}

#[test]
fn project_errors() {
    assert_eq!(
        error("$project", bson!(1)),
        (15969, "$project specification must be an object".into())
    );
    assert_eq!(error("$project", bson!({})), (51272, "Invalid $project :: caused by :: projection specification must have at least one field".into()));
    assert_eq!(error("$project", bson!({"a": 1, "b": 0})), (31254, "Invalid $project :: caused by :: Cannot do exclusion on field b in inclusion projection".into()));
    assert_eq!(error("$project", bson!({"a": 0, "b": 1})), (31253, "Invalid $project :: caused by :: Cannot do inclusion on field b in exclusion projection".into()));
    assert_eq!(
        error("$project", bson!({"a": 0, "b": {"$add": [1, 2]}})).0,
        31252
    );
    assert_eq!(error("$project", bson!({"a": 0, "b": "$a"})), (31310, "Invalid $project :: caused by :: Cannot use an expression b: \"$a\" in an exclusion projection".into()));
    assert_eq!(error("$project", bson!({"a": 0, "b": null})).0, 31310);
    assert_eq!(
        error("$project", bson!({"_id": {"$add": [1, 2]}, "a": 0})).0,
        31254
    );
    assert_eq!(error("$project", bson!({"a": {"x": 1, "y": 0}})).0, 31254);
    assert_eq!(
        error("$project", bson!({"a.b": 1, "a": 1})),
        (
            31250,
            "Invalid $project :: caused by :: Path collision at a".into()
        )
    );
    assert_eq!(
        error("$project", bson!({"a": 1, "a.b.c": 1})),
        (
            31249,
            "Invalid $project :: caused by :: Path collision at a.b.c remaining portion b.c".into()
        )
    );
    assert_eq!(
        error("$project", bson!({"a": {}})),
        (
            51270,
            "Invalid $project :: caused by :: Invalid empty sub-projection: a".into()
        )
    );
    assert_eq!(error("$project", bson!({"": 1})).0, 40352);
    assert_eq!(error("$project", bson!({"$bad": 1})).0, 16410);
    assert_eq!(error("$project", bson!({"$": 1})).0, 16410);
    assert_eq!(error("$project", bson!({"a.": 1})).0, 40353);
    assert_eq!(error("$project", bson!({"a..b": 1})).0, 15998);
    assert_eq!(
        error("$project", bson!({"a": {"$bogus": 1}})),
        (
            31325,
            "Invalid $project :: caused by :: Unrecognized expression '$bogus'".into()
        )
    );
    assert_eq!(
        error("$project", bson!({"a": {"$add": [1], "$subtract": [1, 2]}})).0,
        16410
    );
    assert_eq!(
        error("$project", bson!({"a": {"$elemMatch": {"x": 1}}})).0,
        168
    );
    assert_eq!(
        error("$project", bson!({"a": {"$add": [{"$bogus": 1}]}})),
        (
            168,
            "Invalid $project :: caused by :: Unrecognized expression '$bogus'".into()
        )
    );
    assert_eq!(error("$project", bson!({"a.$": 1})).0, 31324);
}

#[test]
fn unset_errors() {
    assert_eq!(
        error("$unset", bson!(1)),
        (
            31002,
            "$unset specification must be a string or an array".into()
        )
    );
    assert_eq!(error("$unset", bson!([])).0, 31119);
    assert_eq!(error("$unset", bson!(["a", 1])).0, 31120);
    assert_eq!(
        error("$unset", bson!(["a", "a"])),
        (
            31250,
            "Invalid $unset :: caused by :: Path collision at a".into()
        )
    );
    assert_eq!(error("$unset", bson!("")).0, 40352);
}

#[test]
fn add_fields_keeps_everything_and_merges_sub_documents() {
    let input = doc! {"_id": 1, "a": {"x": 1}, "b": 2, "arr": [{"k": 1}, 3]};
    assert_eq!(
        apply(
            "$addFields",
            bson!({"c": {"$add": ["$b", 1]}, "b": "new"}),
            input.clone()
        ),
        doc! {"_id": 1, "a": {"x": 1}, "b": "new", "arr": [{"k": 1}, 3], "c": 3}
    );
    assert_eq!(
        apply("$set", bson!({"a.y": 2, "a": {"z": true}}), input.clone()),
        doc! {"_id": 1, "a": {"x": 1, "y": 2, "z": true}, "b": 2, "arr": [{"k": 1}, 3]}
    );
    assert_eq!(
        apply("$addFields", bson!({"arr.k": 0}), input.clone()),
        doc! {"_id": 1, "a": {"x": 1}, "b": 2, "arr": [{"k": 0}, {"k": 0}]}
    );
    assert_eq!(
        apply(
            "$addFields",
            bson!({"b": "$$REMOVE", "e": {}, "f": 1, "g": true}),
            input.clone()
        ),
        doc! {"_id": 1, "a": {"x": 1}, "arr": [{"k": 1}, 3], "e": {}, "f": 1, "g": true}
    );
    assert_eq!(
        apply("$addFields", bson!({"n.m": 1}), doc! {"n": 5}),
        doc! {"n": {"m": 1}}
    );
    assert_eq!(apply("$addFields", bson!({}), input.clone()), input);
}

#[test]
fn add_fields_errors() {
    assert_eq!(
        error("$addFields", bson!(1)),
        (
            40272,
            "$addFields specification stage must be an object, got int".into()
        )
    );
    assert_eq!(
        error("$set", bson!("x")),
        (
            40272,
            "$set specification stage must be an object, got string".into()
        )
    );
    assert_eq!(
        error("$addFields", bson!({"$foo": "v"})),
        (16410, "Invalid $addFields :: caused by :: FieldPath field names may not start with '$'. Consider using $getField or $setField.".into())
    );
    assert_eq!(error("$addFields", bson!({"a": 1, "a.b": 2})).0, 40176);
    assert_eq!(
        error("$addFields", bson!({"a": {"b": 1}, "a.b": 2})).0,
        40176
    );
    assert_eq!(
        error("$addFields", bson!({"a": {"$add": [1], "b": 2}})).0,
        40181
    );
    assert_eq!(error("$addFields", bson!({"a": {"b.c": 2}})).0, 40183);
    assert_eq!(
        error("$addFields", bson!({"a": {"$bogus": 1}})),
        (
            168,
            "Invalid $addFields :: caused by :: Unrecognized expression '$bogus'".into()
        )
    );
}

#[test]
fn meta_fields_project_in_either_mode_and_alone_include() {
    let input = doc! {"_id": 1, "a": 2, "b": 3, "$textScore": 1.5};
    let scored = bson!({"s": {"$meta": "textScore"}});
    assert_eq!(
        apply("$project", scored, input.clone()),
        doc! {"_id": 1, "s": 1.5}
    );
    let without_id = bson!({"_id": 0, "s": {"$meta": "textScore"}});
    assert_eq!(
        apply("$project", without_id, input.clone()),
        doc! {"s": 1.5}
    );
    let excluding = bson!({"a": 0, "s": {"$meta": "textScore"}});
    assert_eq!(
        apply("$project", excluding, input.clone()),
        doc! {"_id": 1, "b": 3, "$textScore": 1.5, "s": 1.5}
    );
    let including = bson!({"s": {"$meta": "textScore"}, "a": 1});
    assert_eq!(
        apply("$project", including, input),
        doc! {"_id": 1, "a": 2, "s": 1.5}
    );
}
