//! Unit tests of pipeline-style updates: parsing checks and their order, which output counts
//! as a change, the `_id` rules for updates and upserts, and variables.

use super::*;
use crate::expression::LetVariables;
use bson::{bson, doc};

fn ctx() -> UpdateContext<'static> {
    UpdateContext {
        is_upsert_insert: false,
        now: bson::DateTime::from_millis(1_700_000_000_000),
        matched_filter: None,
        collation: None,
    }
}

fn insert() -> UpdateContext<'static> {
    UpdateContext {
        is_upsert_insert: true,
        ..ctx()
    }
}

fn pipeline(stages: Bson) -> UpdateSpec {
    UpdateSpec::parse(&stages, None).unwrap_or_else(|e| panic!("{stages}: {e}"))
}

/// Applies `stages` to `doc`: the document after, and whether it changed.
fn run(doc: Document, stages: Bson) -> (Document, bool) {
    let mut d = doc;
    let modified = pipeline(stages.clone())
        .apply(&mut d, &ctx())
        .unwrap_or_else(|e| panic!("{stages}: {e}"));
    (d, modified)
}

fn run_err(doc: Document, stages: Bson, ctx: &UpdateContext) -> MongoError {
    let mut d = doc.clone();
    let e = pipeline(stages).apply(&mut d, ctx).unwrap_err();
    assert_eq!(d, doc, "failed updates leave the document alone");
    e
}

fn parse_err(stages: Bson, filters: Option<&[Document]>, constants: UpdateConstants) -> MongoError {
    UpdateSpec::parse_with_constants(&stages, filters, constants).unwrap_err()
}

#[test]
fn stages_transform_the_document() {
    assert_eq!(
        run(
            doc! {"_id": 1, "a": 2},
            bson!([{"$set": {"b": {"$multiply": ["$a", 10]}}}])
        ),
        (doc! {"_id": 1, "a": 2, "b": 20}, true)
    );
    assert_eq!(
        run(
            doc! {"_id": 1, "x": 1, "y": [{"z": 1, "foo": 1}]},
            bson!([{"$unset": ["x", "y.z"]}])
        )
        .0,
        doc! {"_id": 1, "y": [{"foo": 1}]}
    );
    assert_eq!(
        run(
            doc! {"_id": 1, "x": 1, "y": 1},
            bson!([{"$project": {"x": 1}}])
        )
        .0,
        doc! {"_id": 1, "x": 1}
    );
    assert_eq!(
        run(
            doc! {"_id": 1, "x": 1, "t": {"u": {"v": 1}}},
            bson!([{"$replaceWith": "$t"}])
        )
        .0,
        doc! {"_id": 1, "u": {"v": 1}}
    );
    assert_eq!(
        run(
            doc! {"_id": 1, "a": 1},
            bson!([{"$addFields": {"b": "$a"}}, {"$replaceRoot": {"newRoot": {"c": "$b"}}}])
        )
        .0,
        doc! {"_id": 1, "c": 1}
    );
}

#[test]
fn only_a_different_output_is_a_change() {
    let d = doc! {"_id": 1, "a": 1, "b": [1, 2]};
    assert_eq!(run(d.clone(), bson!([])), (d.clone(), false));
    assert_eq!(
        run(d.clone(), bson!([{"$set": {"a": 1}}])),
        (d.clone(), false)
    );
    assert_eq!(
        run(d.clone(), bson!([{"$project": {"a": 1, "b": 1}}])),
        (d.clone(), false)
    );
    // Same value, other type.
    assert_eq!(
        run(d.clone(), bson!([{"$set": {"a": 1.0}}])),
        (doc! {"_id": 1, "a": 1.0, "b": [1, 2]}, true)
    );
    // Same fields, other order.
    assert_eq!(
        run(
            d.clone(),
            bson!([{"$replaceWith": {"_id": 1, "b": "$b", "a": "$a"}}])
        ),
        (doc! {"_id": 1, "b": [1, 2], "a": 1}, true)
    );
    // MongoDB compares the pipeline's output before restoring `_id`: dropping it is a
    // change even though the stored document comes out the same.
    assert_eq!(run(d.clone(), bson!([{"$unset": "_id"}])), (d, true));
}

#[test]
fn id_is_kept_moved_first_and_immutable() {
    let d = doc! {"_id": 1, "a": 1};
    assert_eq!(
        run(d.clone(), bson!([{"$replaceWith": {"x": "$a"}}])).0,
        doc! {"_id": 1, "x": 1}
    );
    assert_eq!(
        run(d.clone(), bson!([{"$project": {"_id": 0, "a": 1}}])).0,
        d
    );
    assert_eq!(
        run(
            d.clone(),
            bson!([{"$replaceWith": {"x": 2, "_id": "$_id"}}])
        )
        .0,
        doc! {"_id": 1, "x": 2}
    );
    // Equal as numbers is the same `_id`.
    assert_eq!(
        run(d.clone(), bson!([{"$set": {"_id": 1.0}}])).0,
        doc! {"_id": 1.0, "a": 1}
    );
    let e = run_err(d.clone(), bson!([{"$set": {"_id": 2}}]), &ctx());
    assert_eq!(
        (e.code(), e.message()),
        (
            ErrorCode::ImmutableField,
            "After applying the update, the (immutable) field '_id' was found to have been altered to _id: 2"
        )
    );
    let e = run_err(d, bson!([{"$set": {"_id": [1]}}]), &ctx());
    assert_eq!(
        (e.code(), e.message()),
        (
            ErrorCode::InvalidIdField,
            "The '_id' value cannot be of type array"
        )
    );
}

#[test]
fn upserts_run_the_pipeline_on_the_seed() {
    let upsert = |query: Document, stages: Bson| {
        let mut d = upsert_seed(&query).unwrap();
        pipeline(stages).apply(&mut d, &insert()).unwrap();
        d
    };
    assert_eq!(
        upsert(doc! {"_id": 1, "x": 1}, bson!([{"$set": {"foo": 4}}])),
        doc! {"_id": 1, "x": 1, "foo": 4}
    );
    assert_eq!(
        upsert(doc! {"_id": 1, "x": 1}, bson!([{"$project": {"x": "foo"}}])),
        doc! {"_id": 1, "x": "foo"}
    );
    assert_eq!(
        upsert(doc! {"_id": 1, "x": 1, "y": 1}, bson!([{"$unset": ["x"]}])),
        doc! {"_id": 1, "y": 1}
    );
    assert_eq!(
        upsert(doc! {"k": {"$gt": 1}}, bson!([{"$set": {"n": 1}}])),
        doc! {"n": 1}
    );
    // Without an `_id` from the query the pipeline may choose one (it is moved first).
    assert_eq!(
        upsert(doc! {"k": 1}, bson!([{"$set": {"_id": "chosen"}}])),
        doc! {"_id": "chosen", "k": 1}
    );
    // With one, it is immutable.
    let seed = upsert_seed(&doc! {"_id": 1}).unwrap();
    let e = run_err(seed.clone(), bson!([{"$set": {"_id": 2}}]), &insert());
    assert_eq!(e.code(), ErrorCode::ImmutableField);
    let e = run_err(seed, bson!([{"$set": {"_id": [1]}}]), &insert());
    assert_eq!(
        (e.code(), e.message()),
        (
            ErrorCode::NotSingleValueField,
            "After applying the update to the document, the (immutable) field '_id' was found to be an array or array descendant."
        )
    );
    // `$setOnInsert` is an update operator, not a stage.
    let e = UpdateSpec::parse(&bson!([{"$setOnInsert": {"a": 1}}]), None).unwrap_err();
    assert_eq!(e.code().code(), 40324);
}

#[test]
fn system_variables() {
    // `$$NOW` is the command's, fixed when its `let` was evaluated.
    let vars = Arc::new(LetVariables::empty(ctx().now));
    let constants = UpdateConstants {
        statement: None,
        command_let: Some(&vars),
    };
    let stages = bson!([{"$set": {"at": "$$NOW", "copy": "$$ROOT", "a2": "$$CURRENT.a"}}]);
    let mut d = doc! {"_id": 1, "a": 1};
    UpdateSpec::parse_with_constants(&stages, None, constants)
        .unwrap()
        .apply(&mut d, &ctx())
        .unwrap();
    assert_eq!(
        d,
        doc! {"_id": 1, "a": 1, "at": ctx().now, "copy": {"_id": 1, "a": 1}, "a2": 1}
    );
    let e = run_err(
        doc! {"_id": 1},
        bson!([{"$set": {"t": "$$CLUSTER_TIME"}}]),
        &ctx(),
    );
    assert_eq!(e.code().code(), 51144);
    // Errors raised while evaluating carry no executor prefix.
    let e = run_err(
        doc! {"_id": 1},
        bson!([{"$set": {"t": {"$divide": [1, 0]}}}]),
        &ctx(),
    );
    assert_eq!(e.message(), "can't $divide by zero");
}

#[test]
fn parse_checks_in_order() {
    let none = UpdateConstants::default();
    let e = parse_err(bson!([{"$set": {"a": 1}}, 1]), None, none);
    assert_eq!(
        (e.code(), e.message()),
        (
            ErrorCode::TypeMismatch,
            "Each element of the 'pipeline' array must be an object"
        )
    );
    let filters = [doc! {"x": 1}];
    let e = parse_err(bson!([{"$set": {"a": 1}}]), Some(&filters), none);
    assert_eq!(
        (e.code(), e.message()),
        (
            ErrorCode::FailedToParse,
            "arrayFilters may not be specified for pipeline-style updates"
        )
    );
    assert!(UpdateSpec::parse(&bson!([{"$set": {"a": 1}}]), Some(&[])).is_ok());
    let e = parse_err(bson!([{"$match": {}}]), None, none);
    assert_eq!(
        (e.code(), e.message()),
        (
            ErrorCode::InvalidOptions,
            "$match is not allowed to be used within an update"
        )
    );
    // Update operators are not stages.
    let e = parse_err(bson!([{"$inc": {"a": 1}}]), None, none);
    assert_eq!(e.code().code(), 40324);
}

#[test]
fn constants_and_let() {
    let c = doc! {"foo": "bar"};
    let empty = doc! {};
    let statement = |c| UpdateConstants {
        statement: Some(c),
        command_let: None,
    };
    // Only pipelines take the statement's `c`, even an empty one; a `u` that is neither an
    // object nor an array is refused for that first.
    let e = parse_err(bson!(5), None, statement(&empty));
    assert_eq!(e.code(), ErrorCode::FailedToParse);
    for update in [bson!({"$set": {"a": 1}}), bson!({"a": 1})] {
        let e = parse_err(update, None, statement(&empty));
        assert_eq!(
            (e.code().code(), e.message()),
            (
                51198,
                "Constant values may only be specified for pipeline updates"
            )
        );
    }
    let command_let = Arc::new(
        LetVariables::parse(
            Some(&doc! {"foo": {"$concat": ["b", "az"]}, "n": 1}),
            bson::DateTime::from_millis(0),
        )
        .unwrap(),
    );
    let with_let = UpdateConstants {
        statement: None,
        command_let: Some(&command_let),
    };
    assert!(UpdateSpec::parse_with_constants(&bson!({"$set": {"a": 1}}), None, with_let).is_ok());
    assert!(UpdateSpec::parse_with_constants(&bson!([]), None, statement(&empty)).is_ok());
    let run = |set: Bson, constants| {
        let update =
            UpdateSpec::parse_with_constants(&bson!([{"$set": set}]), None, constants).unwrap();
        let mut d = doc! {"_id": 1};
        update.apply(&mut d, &ctx()).unwrap();
        d
    };
    // `let` values are evaluated expressions; `c` values are literals and shadow `let`.
    let both_fields = bson!({"a": "$$foo", "b": "$$n"});
    assert_eq!(
        run(both_fields.clone(), with_let),
        doc! {"_id": 1, "a": "baz", "b": 1}
    );
    assert_eq!(
        run(bson!({"a": "$$foo"}), statement(&c)),
        doc! {"_id": 1, "a": "bar"}
    );
    let both = UpdateConstants {
        statement: Some(&c),
        command_let: Some(&command_let),
    };
    assert_eq!(run(both_fields, both), doc! {"_id": 1, "a": "bar", "b": 1});
    let e = parse_err(bson!([{"$set": {"a": "$$undefinedVar"}}]), None, with_let);
    assert_eq!(e.code().code(), 17276);
}
