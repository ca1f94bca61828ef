//! Unit tests of projections: inclusion, exclusion, `$slice`, `$elemMatch`, positional `$`,
//! computed fields and parse errors.

use super::*;
use crate::error::ErrorCode;
use bson::{Bson, doc};

fn p(spec: Document, doc: Document) -> Document {
    Projection::parse(&spec)
        .unwrap_or_else(|e| panic!("{spec}: {e}"))
        .apply(&doc)
}

fn perr(spec: Document) -> MongoError {
    Projection::parse(&spec).expect_err("should fail")
}

#[test]
fn inclusion_keeps_id_and_document_order() {
    let d = doc! {"_id": 1, "a": 1, "b": 2, "c": 3};
    assert_eq!(
        p(doc! {"c": 1, "a": 1}, d.clone()),
        doc! {"_id": 1, "a": 1, "c": 3}
    );
    assert_eq!(p(doc! {"a": 1, "_id": 0}, d.clone()), doc! {"a": 1});
    assert_eq!(p(doc! {"_id": 1}, d.clone()), doc! {"_id": 1});
    assert_eq!(p(doc! {"a": true}, d.clone()), doc! {"_id": 1, "a": 1});
    assert_eq!(p(doc! {"a": 5}, d.clone()), doc! {"_id": 1, "a": 1});
    assert_eq!(p(doc! {"zz": 1}, d.clone()), doc! {"_id": 1});
    assert_eq!(p(doc! {}, d.clone()), d);
}

/// `{<prefix>f0: v, <prefix>f1: v, ...}`.
fn fields(n: usize, prefix: &str, value: Bson) -> Document {
    (0..n)
        .map(|i| (format!("{prefix}f{i}"), value.clone()))
        .collect()
}

#[test]
fn projections_naming_100000_fields() {
    // Each name is found in constant time, parsing and projecting alike.
    let n = 100_000;
    let wide = fields(n, "", Bson::Int32(7));
    let inclusion = fields(n, "", Bson::Int32(1));
    assert_eq!(p(inclusion.clone(), wide.clone()), wide);
    assert_eq!(
        p(inclusion, doc! {"_id": 1, "f5": 5, "g": 1}),
        doc! {"_id": 1, "f5": 5}
    );
    let mut exclusion = fields(n, "", Bson::Int32(0));
    exclusion.insert("_id", 0);
    assert_eq!(
        p(exclusion, doc! {"_id": 1, "f5": 5, "g": 1}),
        doc! {"g": 1}
    );
    let dotted = fields(n, "a.", Bson::Boolean(true));
    assert_eq!(
        p(
            dotted,
            doc! {"_id": 1, "a": [{"f1": 1, "x": 2}, {"f99999": 3}]}
        ),
        doc! {"_id": 1, "a": [{"f1": 1}, {"f99999": 3}]}
    );
    let mut computed = fields(n, "", Bson::Int32(1));
    computed.insert("sum", doc! {"$add": ["$f1", 1]});
    assert_eq!(
        p(computed, doc! {"_id": 1, "f1": 1, "g": 2}),
        doc! {"_id": 1, "f1": 1, "sum": 2}
    );
}

#[test]
fn exclusion() {
    let d = doc! {"_id": 1, "a": 1, "b": {"c": 1, "d": 2}};
    assert_eq!(
        p(doc! {"a": 0}, d.clone()),
        doc! {"_id": 1, "b": {"c": 1, "d": 2}}
    );
    assert_eq!(
        p(doc! {"b.c": 0}, d.clone()),
        doc! {"_id": 1, "a": 1, "b": {"d": 2}}
    );
    assert_eq!(
        p(doc! {"_id": 0}, d.clone()),
        doc! {"a": 1, "b": {"c": 1, "d": 2}}
    );
    assert_eq!(
        p(doc! {"_id": 1, "a": 0}, d.clone()),
        doc! {"_id": 1, "b": {"c": 1, "d": 2}}
    );
    assert_eq!(
        p(doc! {"b": {"c": false}}, d),
        doc! {"_id": 1, "a": 1, "b": {"d": 2}}
    );
}

#[test]
fn dotted_paths_through_arrays() {
    let d = doc! {"_id": 1, "a": [{"b": 1, "c": 2}, 5, [{"b": 3, "c": 4}], {"c": 6}], "x": {"y": 1, "z": 2}};
    assert_eq!(
        p(doc! {"a.b": 1, "_id": 0}, d.clone()),
        doc! {"a": [{"b": 1}, [{"b": 3}], {}]}
    );
    assert_eq!(
        p(doc! {"a.b": 0, "x": 0}, d.clone()),
        doc! {"_id": 1, "a": [{"c": 2}, 5, [{"c": 4}], {"c": 6}]}
    );
    assert_eq!(
        p(doc! {"x.z": 1}, d.clone()),
        doc! {"_id": 1, "x": {"z": 2}}
    );
    assert_eq!(
        p(doc! {"x": {"y": 1}}, d.clone()),
        doc! {"_id": 1, "x": {"y": 1}}
    );
    assert_eq!(p(doc! {"q.r": 1}, doc! {"_id": 1, "q": 5}), doc! {"_id": 1});
    assert_eq!(
        p(doc! {"q.r": 1}, doc! {"_id": 1, "q": {"s": 1}}),
        doc! {"_id": 1, "q": {}}
    );
}

#[test]
fn slice_forms() {
    let d = doc! {"_id": 1, "a": [1, 2, 3, 4, 5], "b": 1};
    assert_eq!(
        p(doc! {"a": {"$slice": 2}}, d.clone()),
        doc! {"_id": 1, "a": [1, 2], "b": 1}
    );
    assert_eq!(
        p(doc! {"a": {"$slice": -2}}, d.clone()),
        doc! {"_id": 1, "a": [4, 5], "b": 1}
    );
    assert_eq!(
        p(doc! {"a": {"$slice": [1, 2]}}, d.clone()),
        doc! {"_id": 1, "a": [2, 3], "b": 1}
    );
    assert_eq!(
        p(doc! {"a": {"$slice": [-2, 5]}}, d.clone()),
        doc! {"_id": 1, "a": [4, 5], "b": 1}
    );
    assert_eq!(
        p(doc! {"a": {"$slice": [10, 2]}}, d.clone()),
        doc! {"_id": 1, "a": [], "b": 1}
    );
    assert_eq!(
        p(doc! {"a": {"$slice": 1}, "b": 1}, d.clone()),
        doc! {"_id": 1, "a": [1], "b": 1}
    );
    assert_eq!(
        p(doc! {"a": {"$slice": 1}, "_id": 1}, d.clone()),
        doc! {"_id": 1, "a": [1]}
    );
    assert_eq!(p(doc! {"b": {"$slice": 1}}, d.clone()), d.clone());
    // Not find() syntax, but valid syntax for the $slice aggregation expression.
    assert_eq!(
        perr(doc! {"a": {"$slice": [1, 0]}}).code(),
        ErrorCode::NotImplemented
    );
    assert_eq!(perr(doc! {"a": {"$slice": [1]}}).code().code(), 28667);
    assert_eq!(perr(doc! {"a": {"$slice": "x"}}).code().code(), 28667);
}

#[test]
fn elem_match_projection() {
    let d = doc! {"_id": 1, "zip": 5, "s": [{"school": 1, "n": "a"}, {"school": 2, "n": "b"}, {"school": 2, "n": "c"}]};
    assert_eq!(
        p(doc! {"s": {"$elemMatch": {"school": 2}}}, d.clone()),
        doc! {"_id": 1, "s": [{"school": 2, "n": "b"}]}
    );
    assert_eq!(
        p(doc! {"s": {"$elemMatch": {"school": 9}}}, d.clone()),
        doc! {"_id": 1}
    );
    assert_eq!(
        p(
            doc! {"s": {"$elemMatch": {"school": 2}}, "zip": 1},
            doc! {"_id": 1, "s": [{"school": 2}], "zip": 5}
        ),
        doc! {"_id": 1, "zip": 5, "s": [{"school": 2}]}
    );
    assert_eq!(perr(doc! {"a.b": {"$elemMatch": {}}}).code().code(), 31275);
    assert_eq!(perr(doc! {"a": {"$elemMatch": 1}}).code().code(), 31274);
}

#[test]
fn positional_projection_uses_the_filter_match() {
    let filter = Filter::parse(&doc! {"a.b": 2}).unwrap();
    let proj = Projection::parse_with_filter(&doc! {"a.$": 1}, &filter).unwrap();
    let d = doc! {"_id": 1, "a": [{"b": 1}, {"b": 2}], "c": 1};
    assert_eq!(
        proj.apply_with_filter(&d, &filter).unwrap(),
        doc! {"_id": 1, "a": [{"b": 2}]}
    );
    let filter = Filter::parse(&doc! {"a": {"$gte": 3}}).unwrap();
    let proj = Projection::parse_with_filter(&doc! {"a.$": 1}, &filter).unwrap();
    assert_eq!(
        proj.apply_with_filter(&doc! {"_id": 1, "a": [1, 3, 5]}, &filter)
            .unwrap(),
        doc! {"_id": 1, "a": [3]}
    );
    assert_eq!(
        Projection::parse(&doc! {"a.$": 1})
            .unwrap_err()
            .code()
            .code(),
        51050
    );
    assert_eq!(
        Projection::parse_with_filter(&doc! {"b.$": 1}, &filter)
            .unwrap_err()
            .code()
            .code(),
        31277
    );
    let filter = Filter::parse(&doc! {"a": 1}).unwrap();
    let proj = Projection::parse_with_filter(&doc! {"a.$": 1}, &filter).unwrap();
    assert_eq!(
        proj.apply_with_filter(&doc! {"a": 1}, &filter)
            .unwrap_err()
            .code()
            .code(),
        51246
    );
}

#[test]
fn computed_fields() {
    let d = doc! {"_id": 1, "a": {"b": 5}, "c": [{"d": 1}, {"d": 2}, 3]};
    assert_eq!(p(doc! {"x": "$a.b"}, d.clone()), doc! {"_id": 1, "x": 5});
    assert_eq!(
        p(doc! {"x": "$c.d"}, d.clone()),
        doc! {"_id": 1, "x": [1, 2]}
    );
    assert_eq!(p(doc! {"x": "lit", "_id": 0}, d.clone()), doc! {"x": "lit"});
    assert_eq!(
        p(doc! {"x": {"$literal": 1}, "_id": 0}, d.clone()),
        doc! {"x": 1}
    );
    assert_eq!(p(doc! {"x": "$missing"}, d.clone()), doc! {"_id": 1});
    assert_eq!(
        p(doc! {"x": ["$a.b", 1, "$nope"], "_id": 0}, d.clone()),
        doc! {"x": [5, 1, null]}
    );
    assert_eq!(
        p(doc! {"a.z": "$a.b", "_id": 0}, d.clone()),
        doc! {"a": {"z": 5}}
    );
    assert_eq!(
        p(doc! {"a.b": 1, "a.z": {"$literal": 7}, "_id": 0}, d.clone()),
        doc! {"a": {"b": 5, "z": 7}}
    );
    assert_eq!(
        p(doc! {"x": "$$ROOT.a", "_id": 0}, d.clone()),
        doc! {"x": {"b": 5}}
    );
    assert_eq!(p(doc! {"x": null, "_id": 0}, d), doc! {"x": null});
    assert_eq!(
        perr(doc! {"x": {"$function": {"body": "", "args": [], "lang": "js"}}}).code(),
        ErrorCode::NotImplemented
    );
    assert_eq!(perr(doc! {"x": {"$bogus": 1}}).code().code(), 31325);
    assert_eq!(perr(doc! {"x": "$$foo"}).code().code(), 17276);
    assert_eq!(perr(doc! {"a": 0, "x": "$y"}).code().code(), 31310);
    assert_eq!(
        perr(doc! {"a": 0, "x": {"$literal": 1}}).code().code(),
        31252
    );
    assert_eq!(
        perr(doc! {"x": {"$meta": "textScore"}}).code().code(),
        40218
    );
}

#[test]
fn projection_paths_longer_than_maxbsondepth_are_refused() {
    // Nested or dotted, a path of 200 components is a FieldPath; 201 is too long (Overflow).
    let nested = |levels: usize| {
        let mut spec = doc! {"a": 1};
        for _ in 1..levels {
            spec = doc! {"a": spec};
        }
        spec
    };
    assert!(Projection::parse(&nested(200)).is_ok());
    assert_eq!(perr(nested(201)).code().code(), 15);
    let dotted = |components: usize| doc! {vec!["a"; components].join("."): 1};
    assert!(Projection::parse(&dotted(200)).is_ok());
    let err = perr(dotted(201));
    assert_eq!(err.code().code(), 15);
    assert_eq!(err.message(), "FieldPath is too long");
}

#[test]
fn parse_errors() {
    let e = perr(doc! {"a": 1, "b": 0});
    assert_eq!(
        (e.code().code(), e.message()),
        (
            31254,
            "Cannot do exclusion on field b in inclusion projection"
        )
    );
    let e = perr(doc! {"a": 0, "b": 1});
    assert_eq!(
        (e.code().code(), e.message()),
        (
            31253,
            "Cannot do inclusion on field b in exclusion projection"
        )
    );
    let e = perr(doc! {"a": 1, "a.b": 1});
    assert_eq!(
        (e.code().code(), e.message()),
        (31249, "Path collision at a.b remaining portion b")
    );
    let e = perr(doc! {"a.b": 1, "a": 1});
    assert_eq!(
        (e.code().code(), e.message()),
        (31250, "Path collision at a")
    );
    assert_eq!(perr(doc! {"": 1}).code().code(), 40352);
    assert_eq!(perr(doc! {"a..b": 1}).code().code(), 15998);
    assert_eq!(perr(doc! {"$a": 1}).code().code(), 16410);
    assert_eq!(perr(doc! {"a": {}}).code().code(), 51270);
    assert!(
        Projection::parse(&doc! {"_id": 0, "a": 1})
            .unwrap()
            .is_inclusion()
    );
    assert!(!Projection::parse(&doc! {"_id": 0}).unwrap().is_inclusion());
}

#[test]
fn aggregation_expressions_as_computed_fields() {
    let d = doc! {"_id": 1, "a": 2, "b": 3, "n": "ann", "arr": [1, 2, 3]};
    assert_eq!(
        p(
            doc! {"total": {"$add": ["$a", "$b"]}, "name": {"$toUpper": "$n"}},
            d.clone()
        ),
        doc! {"_id": 1, "total": 5, "name": "ANN"}
    );
    assert_eq!(
        p(
            doc! {"_id": 0, "big": {"$cond": [{"$gt": ["$a", 1]}, "yes", "no"]}, "n": 1},
            d.clone()
        ),
        doc! {"n": "ann", "big": "yes"}
    );
    assert_eq!(
        p(
            doc! {"_id": 0, "o": {"sum": {"$add": ["$a", 1]}, "s": {"$size": "$arr"}}},
            d.clone()
        ),
        doc! {"o": {"sum": 3, "s": 3}}
    );
    assert_eq!(
        p(
            doc! {"_id": 0, "x": {"$concat": ["$n", "-", {"$toString": "$a"}]}},
            d.clone()
        ),
        doc! {"x": "ann-2"}
    );
    assert_eq!(
        p(
            doc! {"_id": 0, "x": {"$ifNull": ["$nope", "$$REMOVE"]}},
            d.clone()
        ),
        doc! {}
    );
    assert_eq!(
        p(
            doc! {"_id": 0, "a.c": {"$multiply": ["$a", "$b"]}},
            d.clone()
        ),
        doc! {"a": {"c": 6}}
    );
}

#[test]
fn expression_errors_at_parse_and_evaluation() {
    assert_eq!(
        perr(doc! {"x": {"$add": "$a", "$b": 1}}).code().code(),
        16410
    );
    assert_eq!(perr(doc! {"x": {"$cond": [1, 2]}}).code().code(), 16020);
    assert_eq!(perr(doc! {"x": {"$add": ["$$nope"]}}).code().code(), 17276);
    assert_eq!(perr(doc! {"a": 0, "x": {"$add": [1]}}).code().code(), 31252);
    assert_eq!(perr(doc! {"x": {"$add": [1]}, "a": 0}).code().code(), 31254);
    let proj = Projection::parse(&doc! {"x": {"$add": ["$s", 1]}, "y": 1}).unwrap();
    assert!(proj.has_expressions());
    let e = proj
        .try_apply(&doc! {"_id": 1, "s": "str", "y": 2})
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::TypeMismatch);
    // The lenient form leaves the failing field out.
    assert_eq!(
        proj.apply(&doc! {"_id": 1, "s": "str", "y": 2}),
        doc! {"_id": 1, "y": 2}
    );
    assert!(!Projection::parse(&doc! {"y": 1}).unwrap().has_expressions());
}

#[test]
fn let_variables_and_now_in_projections() {
    let vars = Arc::new(
        LetVariables::parse(
            Some(&doc! {"rate": 2, "label": "L"}),
            DateTime::from_millis(7),
        )
        .unwrap(),
    );
    let proj = Projection::parse_with_variables(
        &doc! {"_id": 0, "x": {"$multiply": ["$a", "$$rate"]}, "l": "$$label", "t": "$$NOW"},
        None,
        &vars,
    )
    .unwrap();
    assert_eq!(
        proj.try_apply(&doc! {"a": 4}).unwrap(),
        doc! {"x": 8, "l": "L", "t": DateTime::from_millis(7)}
    );
}

#[test]
fn json_schema_is_refused_in_elem_match_projection() {
    let e = perr(doc! {"a": {"$elemMatch": {"$jsonSchema": {}}}});
    assert_eq!(e.code(), ErrorCode::QueryFeatureNotAllowed);
    assert_eq!(e.message(), "$jsonSchema is not allowed in this context");
}

/// A projection takes every expression operator aggregation evaluates (one table of names):
/// `$toUUID` among them, which the projection's own list of names once refused.
#[test]
fn every_aggregation_operator_is_a_projection_expression() {
    let uuid = "0e3b9063-8abd-4eb3-9f9f-f4c59fd30a60";
    let d = doc! {"_id": 1, "s": uuid};
    let projected = p(doc! {"u": {"$toUUID": "$s"}, "_id": 0}, d);
    let expected = bson::Binary::from_uuid(bson::Uuid::parse_str(uuid).unwrap());
    assert_eq!(projected, doc! {"u": expected});
    for name in crate::expression::operator_names() {
        // The arguments may be wrong for the operator; the name must be known.
        if let Err(err) = Projection::parse(&doc! {"x": {name: []}}) {
            assert!(
                err.code() != ErrorCode::InvalidPipelineOperator
                    && err.code() != ErrorCode::NotImplemented
                    && err.code().code() != 31325,
                "{name}: {err}"
            );
        }
    }
    for name in crate::expression::NOT_IMPLEMENTED {
        let err = perr(doc! {"x": {*name: []}});
        assert_eq!(err.code(), ErrorCode::NotImplemented, "{name}");
    }
}
