//! Unit tests of filters: parsing and its errors, array and dotted-path matching, type
//! bracketing and each operator family.

use super::*;
use crate::error::{ErrorCode, MongoError};
use bson::{Binary, Regex as BsonRegex, doc, spec::BinarySubtype};

fn m(filter: Document, doc: Document) -> bool {
    Filter::parse(&filter)
        .unwrap_or_else(|e| panic!("{filter}: {e}"))
        .matches(&doc)
}

fn err(filter: Document) -> MongoError {
    Filter::parse(&filter).expect_err(&format!("{filter} should not parse"))
}

#[test]
fn equality_on_scalars_documents_and_arrays() {
    assert!(m(doc! {"a": 1}, doc! {"a": 1.0}));
    assert!(m(doc! {"a": 1}, doc! {"a": [0, 1]}));
    assert!(m(doc! {"a": [0, 1]}, doc! {"a": [0, 1]}));
    assert!(m(doc! {"a": [0, 1]}, doc! {"a": [[0, 1], 2]}));
    assert!(!m(doc! {"a": [0, 1]}, doc! {"a": [1, 0]}));
    assert!(!m(doc! {"a": 0}, doc! {"a": [[0, 1]]}));
    assert!(m(
        doc! {"a": {"b": 1, "c": 2}},
        doc! {"a": {"b": 1, "c": 2}}
    ));
    assert!(!m(
        doc! {"a": {"b": 1, "c": 2}},
        doc! {"a": {"c": 2, "b": 1}}
    ));
    assert!(!m(doc! {"a": {"b": 1}}, doc! {"a": {"b": 1, "c": 2}}));
    assert!(m(doc! {"a": "x"}, doc! {"a": "x"}));
    assert!(!m(doc! {"a": "1"}, doc! {"a": 1}));
}

#[test]
fn dotted_paths_through_arrays() {
    assert!(m(doc! {"a.b": 1}, doc! {"a": [{"b": 1}, {"b": 2}]}));
    assert!(m(doc! {"a.b": 2}, doc! {"a": [{"b": 1}, {"b": 2}]}));
    assert!(!m(doc! {"a.b": 3}, doc! {"a": [{"b": 1}, {"b": 2}]}));
    assert!(m(doc! {"a.b": 2}, doc! {"a": [{"b": [1, 2]}]}));
    assert!(m(doc! {"a.b.c": 1}, doc! {"a": {"b": [{"c": 1}]}}));
    assert!(m(doc! {"a.0": 5}, doc! {"a": [5, 6]}));
    assert!(!m(doc! {"a.1": 5}, doc! {"a": [5, 6]}));
    assert!(m(doc! {"a.0.b": 1}, doc! {"a": [{"b": 1}]}));
    // numeric components also match field names "0"
    assert!(m(doc! {"a.0": 7}, doc! {"a": {"0": 7}}));
    assert!(m(doc! {"a.0.b": 3}, doc! {"a": [{"0": {"b": 3}}]}));
    assert!(m(doc! {"a.0.1": 6}, doc! {"a": [[5, 6]]}));
    assert!(m(doc! {"a.b": 1}, doc! {"a": [[{"b": 0}], {"b": 1}]}));
    assert!(!m(doc! {"a.b": 0}, doc! {"a": [[{"b": 0}]]}));
}

#[test]
fn null_matches_missing_and_null_and_paths_arrays_leave_missing() {
    assert!(m(doc! {"a": null}, doc! {}));
    assert!(m(doc! {"a": null}, doc! {"a": null}));
    assert!(m(doc! {"a": null}, doc! {"a": [1, null]}));
    assert!(!m(doc! {"a": null}, doc! {"a": [1]}));
    assert!(!m(doc! {"a": null}, doc! {"a": 0}));
    assert!(m(doc! {"a.b": null}, doc! {"a": 5}));
    assert!(m(doc! {"a.b": null}, doc! {"a": [{"c": 1}]}));
    // An array yielding nothing for the rest of the path leaves it missing, as in MongoDB's
    // null_query_semantics.js; one yielding values compares those.
    assert!(m(doc! {"a.b": null}, doc! {"a": [1, 2]}));
    assert!(m(doc! {"a.b": null}, doc! {"a": []}));
    assert!(m(doc! {"a.b": null}, doc! {"a": [[]]}));
    assert!(!m(doc! {"a.b": null}, doc! {"a": [{"b": 1}, {"b": 3}]}));
    assert!(m(doc! {"a.b": null}, doc! {"a": [{"b": 3}, {}]}));
    assert!(!m(doc! {"a.b": {"$ne": null}}, doc! {"a": [1, 2]}));
    assert!(!m(doc! {"a.b": {"$nin": [null, 75]}}, doc! {"a": []}));
    // `a.1` past the end of `a` is missing: null, `$lte`/`$gte: null` and `$in: [null]` match.
    for filter in [
        doc! {"a.1": null},
        doc! {"a.1": {"$eq": null}},
        doc! {"a.1": {"$lte": null}},
        doc! {"a.1": {"$gte": null}},
        doc! {"a.1": {"$in": [null, 7]}},
        doc! {"a.1": {"$exists": false}},
    ] {
        assert!(m(filter.clone(), doc! {"a": [5]}), "{filter}");
        assert!(m(filter.clone(), doc! {"a": []}), "{filter}");
        assert!(!m(filter.clone(), doc! {"a": [5, 6]}), "{filter}");
    }
    assert!(m(doc! {"a.1": null}, doc! {"a": [5, null]}));
    assert!(!m(doc! {"a.1": {"$ne": null}}, doc! {"a": [5]}));
    assert!(!m(doc! {"a.1": {"$lt": null}}, doc! {"a": [5]}));
    assert!(!m(doc! {"a.1": {"$gt": null}}, doc! {"a": [5]}));
    assert!(!m(doc! {"a.1": {"$exists": true}}, doc! {"a": [5]}));
    assert!(m(doc! {"a.1.b": null}, doc! {"a": [5, 6]}));
    assert!(m(doc! {"a": {"$exists": false}}, doc! {"b": 1}));
    assert!(m(doc! {"a": {"$gte": null}}, doc! {}));
    assert!(!m(doc! {"a": {"$gt": null}}, doc! {}));
    assert!(m(doc! {"a": null}, doc! {"a": Bson::Undefined}));
}

#[test]
fn comparisons_bracket_by_type() {
    assert!(m(doc! {"a": {"$gt": 1}}, doc! {"a": [0, 5]}));
    assert!(!m(doc! {"a": {"$gt": 5}}, doc! {"a": [0, 5]}));
    assert!(m(doc! {"a": {"$gt": 1, "$lt": 3}}, doc! {"a": [0, 5]}));
    assert!(!m(
        doc! {"a": {"$elemMatch": {"$gt": 1, "$lt": 3}}},
        doc! {"a": [0, 5]}
    ));
    assert!(m(
        doc! {"a": {"$elemMatch": {"$gt": 1, "$lt": 3}}},
        doc! {"a": [0, 2]}
    ));
    assert!(!m(doc! {"a": {"$gt": 1}}, doc! {"a": "x"}));
    assert!(!m(doc! {"a": {"$lt": "a"}}, doc! {"a": 1}));
    assert!(m(doc! {"a": {"$lt": "b"}}, doc! {"a": "a"}));
    assert!(m(doc! {"a": {"$gt": Bson::MinKey}}, doc! {"a": "x"}));
    assert!(m(doc! {"a": {"$gt": Bson::MinKey}}, doc! {}));
    assert!(m(doc! {"a": {"$lt": Bson::MaxKey}}, doc! {"a": {"b": 1}}));
    assert!(!m(doc! {"a": {"$lt": Bson::MinKey}}, doc! {"a": 1}));
    assert!(m(doc! {"a": {"$gte": [1, 2]}}, doc! {"a": [1, 2]}));
    assert!(m(doc! {"a": {"$lte": 2.5}}, doc! {"a": 2i64}));
    assert!(m(doc! {"a": {"$gte": {"b": 1}}}, doc! {"a": {"b": 2}}));
}

#[test]
fn nan_only_equals_nan() {
    assert!(m(doc! {"a": f64::NAN}, doc! {"a": f64::NAN}));
    assert!(!m(doc! {"a": {"$lt": 0}}, doc! {"a": f64::NAN}));
    assert!(!m(doc! {"a": {"$gt": f64::NAN}}, doc! {"a": 1}));
    assert!(m(doc! {"a": {"$gte": f64::NAN}}, doc! {"a": f64::NAN}));
    assert!(m(doc! {"a": {"$in": [f64::NAN]}}, doc! {"a": f64::NAN}));
}

#[test]
fn ne_and_nin_against_arrays_and_missing() {
    assert!(!m(doc! {"a": {"$ne": 1}}, doc! {"a": [1, 2]}));
    assert!(m(doc! {"a": {"$ne": 3}}, doc! {"a": [1, 2]}));
    assert!(m(doc! {"a": {"$ne": 1}}, doc! {}));
    assert!(!m(doc! {"a": {"$ne": null}}, doc! {}));
    assert!(m(doc! {"a": {"$ne": null}}, doc! {"a": 1}));
    assert!(!m(doc! {"a": {"$nin": [null]}}, doc! {}));
    assert!(!m(doc! {"a": {"$nin": [null, 5]}}, doc! {"a": [1, null]}));
    assert!(m(doc! {"a": {"$nin": [null, 5]}}, doc! {"a": [1, 2]}));
    assert!(m(doc! {"a": {"$nin": []}}, doc! {}));
    assert!(m(doc! {"a.b": {"$ne": 1}}, doc! {"a": [1, 2]}));
}

#[test]
fn in_with_many_values_of_mixed_types() {
    // 100,000 values looked up by binary search in MongoDB's order: numbers across types, NaN,
    // strings, documents and arrays still compare as equality does.
    let mut values: Vec<Bson> = (0..100_000i64).rev().map(|i| Bson::Int64(i * 2)).collect();
    values.extend([
        Bson::Double(f64::NAN),
        Bson::String("s".into()),
        Bson::Document(doc! {"x": 1}),
        Bson::Array(vec![Bson::Int32(7), Bson::Int32(8)]),
        Bson::Int32(4),
    ]);
    let f = Filter::parse(&doc! {"a": {"$in": values}}).unwrap();
    for (doc, expected) in [
        (doc! {"a": 199_998}, true),
        (doc! {"a": 3}, false),
        (doc! {"a": 4.0}, true),
        (doc! {"a": bson::Decimal128::from_bytes([0; 16])}, true),
        (doc! {"a": f64::NAN}, true),
        (doc! {"a": "s"}, true),
        (doc! {"a": {"x": 1.0}}, true),
        (doc! {"a": [7, 8]}, true),
        (doc! {"a": [1, 3, 5]}, false),
        (doc! {"a": [1, 3, 6]}, true),
        (doc! {}, false),
    ] {
        assert_eq!(f.matches(&doc), expected, "{doc}");
    }
}

#[test]
fn in_with_values_null_and_regexes() {
    assert!(m(doc! {"a": {"$in": [1, 2]}}, doc! {"a": 2.0}));
    assert!(m(doc! {"a": {"$in": [null]}}, doc! {}));
    assert!(m(doc! {"a": {"$in": [[1, 2]]}}, doc! {"a": [1, 2]}));
    assert!(m(
        doc! {"a": {"$in": [BsonRegex { pattern: "^ab".into(), options: "".into() }]}},
        doc! {"a": ["x", "abc"]}
    ));
    assert!(!m(doc! {"a": {"$in": []}}, doc! {"a": 1}));
    assert_eq!(err(doc! {"a": {"$in": 1}}).message(), "$in needs an array");
    assert_eq!(
        err(doc! {"a": {"$nin": {}}}).message(),
        "$nin needs an array"
    );
    assert_eq!(
        err(doc! {"a": {"$in": [{"$gt": 1}]}}).message(),
        "cannot nest $ under $in"
    );
}

#[test]
fn logical_operators() {
    assert!(m(doc! {"$or": [{"a": 1}, {"b": 2}]}, doc! {"b": 2}));
    assert!(!m(doc! {"$and": [{"a": 1}, {"b": 2}]}, doc! {"b": 2}));
    assert!(m(doc! {"$nor": [{"a": 1}, {"b": 3}]}, doc! {"b": 2}));
    assert!(m(doc! {"a": {"$not": {"$gt": 5}}}, doc! {"a": 3}));
    assert!(m(doc! {"a": {"$not": {"$gt": 5}}}, doc! {}));
    assert!(!m(
        doc! {"a": {"$not": {"$gt": 1, "$lt": 5}}},
        doc! {"a": [0, 5]}
    ));
    assert!(m(
        doc! {"a": {"$not": BsonRegex { pattern: "^x".into(), options: "".into() }}},
        doc! {"a": "y"}
    ));
    assert!(m(doc! {"$alwaysTrue": 1}, doc! {}));
    assert!(!m(doc! {"$alwaysFalse": 1}, doc! {}));
    assert!(m(doc! {"$comment": "hello", "a": 1}, doc! {"a": 1}));
    assert_eq!(
        err(doc! {"$and": []}).message(),
        "$and/$or/$nor must be a nonempty array"
    );
    assert_eq!(err(doc! {"$or": {}}).message(), "$or must be an array");
    assert_eq!(
        err(doc! {"$nor": [1]}).message(),
        "$or/$and/$nor entries need to be full objects"
    );
    assert_eq!(
        err(doc! {"a": {"$not": 1}}).message(),
        "$not needs a regex or a document"
    );
    assert_eq!(
        err(doc! {"a": {"$not": {}}}).message(),
        "$not cannot be empty"
    );
    assert_eq!(
        err(doc! {"$alwaysTrue": 2}).message(),
        "$alwaysTrue must be an integer value of 1"
    );
}

#[test]
fn exists_type_size() {
    assert!(m(doc! {"a": {"$exists": true}}, doc! {"a": null}));
    assert!(m(doc! {"a": {"$exists": true}}, doc! {"a": []}));
    assert!(!m(doc! {"a": {"$exists": 0}}, doc! {"a": 1}));
    assert!(m(doc! {"a.b": {"$exists": false}}, doc! {"a": [1]}));
    assert!(m(doc! {"a.b": {"$exists": true}}, doc! {"a": [{"b": 1}]}));
    assert!(m(doc! {"a": {"$type": "string"}}, doc! {"a": ["x", 1]}));
    assert!(m(doc! {"a": {"$type": "array"}}, doc! {"a": []}));
    assert!(m(doc! {"a": {"$type": "number"}}, doc! {"a": 1i64}));
    assert!(m(doc! {"a": {"$type": [2, "int"]}}, doc! {"a": 5}));
    assert!(m(doc! {"a": {"$type": 10}}, doc! {"a": null}));
    assert!(!m(doc! {"a": {"$type": "null"}}, doc! {}));
    assert!(m(doc! {"a": {"$type": -1}}, doc! {"a": Bson::MinKey}));
    assert!(m(doc! {"a": {"$size": 0}}, doc! {"a": []}));
    assert!(!m(doc! {"a": {"$size": 0}}, doc! {}));
    assert!(m(doc! {"a": {"$size": 1}}, doc! {"a": [[1, 2]]}));
    assert!(!m(doc! {"a": {"$size": 2}}, doc! {"a": [[1, 2]]}));
    assert!(m(
        doc! {"a.b": {"$size": 2}},
        doc! {"a": [{"b": [1]}, {"b": [1, 2]}]}
    ));
    assert!(m(doc! {"a": {"$size": 2.0}}, doc! {"a": [1, 2]}));
    assert_eq!(
        err(doc! {"a": {"$type": "String"}}).message(),
        "Unknown type name alias: String"
    );
    assert_eq!(
        err(doc! {"a": {"$type": 100}}).message(),
        "Invalid numerical type code: 100"
    );
    assert_eq!(
        err(doc! {"a": {"$type": 1.5}}).message(),
        "Invalid numerical type code: 1.5"
    );
    assert_eq!(
        err(doc! {"a": {"$type": []}}).message(),
        "a must match at least one type"
    );
    assert_eq!(
        err(doc! {"a": {"$type": {}}}).code(),
        ErrorCode::TypeMismatch
    );
    assert_eq!(
        err(doc! {"a": {"$size": -1}}).message(),
        "Failed to parse $size. Expected a positive number in: $size: -1"
    );
    assert_eq!(
        err(doc! {"a": {"$size": 1.5}}).message(),
        "Failed to parse $size. Expected an integer: $size: 1.5"
    );
    assert_eq!(
        err(doc! {"a": {"$size": "x"}}).message(),
        "Failed to parse $size. Expected a number in: $size: \"x\""
    );
    assert_eq!(err(doc! {"a": {"$size": "x"}}).code(), ErrorCode::BadValue);
}

#[test]
fn elem_match_forms() {
    let d = doc! {"a": [{"b": 1, "c": 2}, {"b": 2, "c": 1}]};
    assert!(m(doc! {"a": {"$elemMatch": {"b": 1, "c": 2}}}, d.clone()));
    assert!(!m(doc! {"a": {"$elemMatch": {"b": 1, "c": 1}}}, d.clone()));
    assert!(m(doc! {"a.b": 1, "a.c": 1}, d.clone()));
    assert!(m(
        doc! {"a": {"$elemMatch": {"$gte": 2, "$lt": 3}}},
        doc! {"a": [1, 2]}
    ));
    assert!(!m(doc! {"a": {"$elemMatch": {"$gt": 1}}}, doc! {"a": 5}));
    assert!(m(doc! {"a": {"$elemMatch": {}}}, doc! {"a": [1, {}]}));
    assert!(!m(doc! {"a": {"$elemMatch": {}}}, doc! {"a": [1, 2]}));
    assert!(m(
        doc! {"a": {"$elemMatch": {"$or": [{"b": 5}, {"c": 1}]}}},
        d.clone()
    ));
    assert!(m(
        doc! {"a": {"$elemMatch": {"0": 1}}},
        doc! {"a": [[1, 2]]}
    ));
    assert!(m(
        doc! {"a": {"$elemMatch": {"$elemMatch": {"$eq": 2}}}},
        doc! {"a": [[1, 2]]}
    ));
    assert_eq!(
        err(doc! {"a": {"$elemMatch": 1}}).message(),
        "$elemMatch needs an Object"
    );
    assert_eq!(
        err(doc! {"a": {"$elemMatch": {"$where": "1"}}}).message(),
        "$where can only be applied to the top-level document"
    );
    assert_eq!(
        err(doc! {"a": {"$elemMatch": {"$expr": 1}}}).message(),
        "$expr can only be applied to the top-level document"
    );
}

#[test]
fn all_operator() {
    assert!(m(doc! {"a": {"$all": [1, 2]}}, doc! {"a": [2, 3, 1]}));
    assert!(!m(doc! {"a": {"$all": [1, 4]}}, doc! {"a": [2, 3, 1]}));
    assert!(m(doc! {"a": {"$all": [1]}}, doc! {"a": 1}));
    assert!(!m(doc! {"a": {"$all": []}}, doc! {"a": [1]}));
    assert!(m(doc! {"a": {"$all": [[1, 2]]}}, doc! {"a": [[1, 2], 3]}));
    assert!(m(
        doc! {"a": {"$all": [{"$elemMatch": {"b": 1}}, {"$elemMatch": {"b": 2}}]}},
        doc! {"a": [{"b": 1}, {"b": 2}]}
    ));
    assert_eq!(
        err(doc! {"a": {"$all": 1}}).message(),
        "$all needs an array"
    );
    assert_eq!(
        err(doc! {"a": {"$all": [{"$elemMatch": {}}, 1]}}).message(),
        "$all/$elemMatch has to be consistent"
    );
    assert_eq!(
        err(doc! {"a": {"$all": [1, {"$gt": 1}]}}).message(),
        "no $ expressions in $all"
    );
}

#[test]
fn regexes() {
    let re = |p: &str, o: &str| {
        Bson::RegularExpression(BsonRegex {
            pattern: p.into(),
            options: o.into(),
        })
    };
    assert!(m(doc! {"a": re("^ab", "")}, doc! {"a": "abc"}));
    assert!(m(doc! {"a": re("B", "i")}, doc! {"a": "abc"}));
    assert!(m(
        doc! {"a": {"$regex": "b", "$options": "i"}},
        doc! {"a": ["x", "ABC"]}
    ));
    assert!(m(
        doc! {"a": {"$options": "i", "$regex": "B"}},
        doc! {"a": "abc"}
    ));
    assert!(m(doc! {"a": {"$regex": re("^x", "")}}, doc! {"a": "xy"}));
    assert!(!m(doc! {"a": re("1", "")}, doc! {"a": 1}));
    assert!(m(doc! {"a": {"$eq": re("x", "")}}, doc! {"a": re("x", "")}));
    assert!(!m(doc! {"a": {"$eq": re("x", "")}}, doc! {"a": "x"}));
    assert!(m(doc! {"a": re("x", "")}, doc! {"a": re("x", "")}));
    assert_eq!(
        err(doc! {"a": {"$options": "i"}}).message(),
        "$options needs a $regex"
    );
    assert_eq!(
        err(doc! {"a": {"$regex": 1}}).message(),
        "$regex has to be a string"
    );
    assert_eq!(
        err(doc! {"a": {"$regex": re("x", "i"), "$options": "m"}})
            .code()
            .code(),
        51075
    );
    assert_eq!(
        err(doc! {"a": {"$options": "m", "$regex": re("x", "i")}})
            .code()
            .code(),
        51074
    );
    assert_eq!(
        err(doc! {"a": {"$gt": re("x", "")}}).message(),
        "Can't have RegEx as arg to predicate over field 'a'."
    );
    assert_eq!(
        err(doc! {"a": {"$ne": re("x", "")}}).message(),
        "Can't have regex as arg to $ne."
    );
    // PCRE2: backreferences and lookaround run; an invalid pattern is MongoDB's 51091.
    assert!(m(doc! {"a": re("(a)\\1", "")}, doc! {"a": "baa"}));
    assert!(m(doc! {"a": re("^(?=.*b)a", "")}, doc! {"a": "ab"}));
    assert!(!m(doc! {"a": re("(?<!a)b", "")}, doc! {"a": "ab"}));
    assert_eq!(err(doc! {"a": re("(a", "")}).code().code(), 51091);
}

#[test]
fn mod_and_bits() {
    assert!(m(doc! {"a": {"$mod": [4, 1]}}, doc! {"a": 5}));
    assert!(m(doc! {"a": {"$mod": [4, -1]}}, doc! {"a": -5}));
    assert!(m(doc! {"a": {"$mod": [4, 1]}}, doc! {"a": 5.9}));
    assert!(!m(doc! {"a": {"$mod": [4, 1]}}, doc! {"a": "5"}));
    assert!(!m(doc! {"a": {"$mod": [4, 0]}}, doc! {"a": f64::NAN}));
    assert!(m(doc! {"a": {"$mod": [-1, 0]}}, doc! {"a": i64::MIN}));
    assert_eq!(
        err(doc! {"a": {"$mod": 1}}).message(),
        "malformed mod, needs to be an array"
    );
    assert_eq!(
        err(doc! {"a": {"$mod": [1]}}).message(),
        "malformed mod, not enough elements"
    );
    assert_eq!(
        err(doc! {"a": {"$mod": [1, 2, 3]}}).message(),
        "malformed mod, too many elements"
    );
    assert_eq!(
        err(doc! {"a": {"$mod": ["a", 1]}}).message(),
        "malformed mod, divisor not a number"
    );
    assert_eq!(
        err(doc! {"a": {"$mod": [1, "a"]}}).message(),
        "malformed mod, remainder not a number"
    );
    assert_eq!(
        err(doc! {"a": {"$mod": [0, 1]}}).message(),
        "divisor cannot be 0"
    );
    assert_eq!(
        err(doc! {"a": {"$mod": [f64::NAN, 1]}}).message(),
        "malformed mod, divisor value is invalid :: caused by :: Unable to coerce NaN/Inf to integral type"
    );

    assert!(m(doc! {"a": {"$bitsAllSet": [1, 5]}}, doc! {"a": 34}));
    assert!(m(doc! {"a": {"$bitsAllSet": 34}}, doc! {"a": 35}));
    assert!(!m(doc! {"a": {"$bitsAllSet": 34}}, doc! {"a": 33}));
    assert!(m(doc! {"a": {"$bitsAnySet": [0, 7]}}, doc! {"a": 1}));
    assert!(m(doc! {"a": {"$bitsAllClear": [1]}}, doc! {"a": 5}));
    assert!(m(doc! {"a": {"$bitsAnyClear": [0, 1]}}, doc! {"a": 1}));
    assert!(m(doc! {"a": {"$bitsAllSet": [100]}}, doc! {"a": -1}));
    assert!(!m(doc! {"a": {"$bitsAllSet": [0]}}, doc! {"a": 1.5}));
    let bin = Bson::Binary(Binary {
        subtype: BinarySubtype::Generic,
        bytes: vec![0b0000_0110],
    });
    assert!(m(
        doc! {"a": {"$bitsAllSet": [1, 2]}},
        doc! {"a": bin.clone()}
    ));
    assert!(m(doc! {"a": {"$bitsAllSet": bin}}, doc! {"a": 6}));
    assert_eq!(
        err(doc! {"a": {"$bitsAllSet": -1}}).message(),
        "Expected a positive number in: $bitsAllSet: -1"
    );
    assert_eq!(
        err(doc! {"a": {"$bitsAllSet": 1.2}}).message(),
        "Expected an integer: $bitsAllSet: 1.2"
    );
    assert_eq!(
        err(doc! {"a": {"$bitsAllSet": "123"}}).message(),
        "a takes an Array, a number, or a BinData but received: $bitsAllSet: \"123\""
    );
    assert_eq!(
        err(doc! {"a": {"$bitsAnySet": [-1]}}).message(),
        "Failed to parse bit position. Expected a positive number in: 0: -1"
    );
}

#[test]
fn unsupported_and_unknown_operators() {
    assert_eq!(
        err(doc! {"$foo": 1}).message(),
        "unknown top level operator: $foo. If you have a field name that starts with a '$' symbol, consider using $getField or $setField."
    );
    assert_eq!(
        err(doc! {"a": {"$foo": 1}}).message(),
        "unknown operator: $foo"
    );
    assert_eq!(
        err(doc! {"a": {"$gt": 1, "b": 1}}).message(),
        "unknown operator: b"
    );
    assert_eq!(err(doc! {"$where": "true"}).code(), ErrorCode::BadValue);
    // `$text` parses; only a data node with the collection's text index runs it.
    let text = Filter::parse(&doc! {"$text": {"$search": "x"}}).unwrap();
    let unbound = text.try_matches(&doc! {}).unwrap_err();
    assert_eq!(
        (unbound.code(), unbound.message()),
        (
            ErrorCode::IndexNotFound,
            "text index required for $text query"
        )
    );
    assert_eq!(err(doc! {"$jsonSchema": 1}).code(), ErrorCode::TypeMismatch);
    assert_eq!(
        err(doc! {"$or": [{"a": {"$near": [0, 0]}}, {"b": 1}]}).message(),
        "geoNear must be top-level expr"
    );
    assert_eq!(
        err(doc! {"a": {"$near": [0, 0]}, "b": {"$nearSphere": [0, 0]}}).message(),
        "Too many geoNear expressions"
    );
    assert_eq!(
        err(doc! {"a": {"$elemMatch": {"b": {"$near": [0, 0]}}}}).message(),
        "geoNear must be top-level expr"
    );
    assert_eq!(
        err(doc! {"a": {"$eq": Bson::Undefined}}).message(),
        "cannot compare to undefined"
    );
    assert_eq!(
        err(doc! {"a": {"$where": "x"}}).message(),
        "$where cannot be applied to a field"
    );
}

#[test]
fn literal_documents_and_dbrefs_are_equalities() {
    assert!(m(
        doc! {"a": {"b": {"$gt": 1}}},
        doc! {"a": {"b": {"$gt": 1}}}
    ));
    assert!(m(
        doc! {"a": {"$ref": "c", "$id": 1}},
        doc! {"a": {"$ref": "c", "$id": 1}}
    ));
    assert!(m(doc! {"a": {}}, doc! {"a": {}}));
    assert!(m(doc! {"a.$id": 1}, doc! {"a": {"$ref": "c", "$id": 1}}));
}

#[test]
fn equality_helper_and_positions() {
    let f = Filter::parse(&doc! {"_id": 5, "x": {"$gt": 1}}).unwrap();
    assert_eq!(f.equality("_id"), Some(&Bson::Int32(5)));
    assert_eq!(f.equality("x"), None);
    let f = Filter::parse(&doc! {"$and": [{"_id": {"$eq": "k"}}, {"y": 1}]}).unwrap();
    assert_eq!(f.equality("_id"), Some(&Bson::String("k".into())));
    assert_eq!(
        Filter::parse(&doc! {"_id": [1]}).unwrap().equality("_id"),
        None
    );
    assert_eq!(
        Filter::parse(&doc! {"_id": null}).unwrap().equality("_id"),
        None
    );
    assert!(Filter::parse(&doc! {}).unwrap().is_empty());
    assert!(Filter::parse(&doc! {"$comment": "x"}).unwrap().is_empty());
    assert!(!Filter::parse(&doc! {"a": 1}).unwrap().is_empty());

    let f = Filter::parse(&doc! {"a.b": 2}).unwrap();
    assert_eq!(
        f.matches_with_position(&doc! {"a": [{"b": 1}, {"b": 2}]}),
        (true, Some(1))
    );
    let f = Filter::parse(&doc! {"a": {"$gt": 3}}).unwrap();
    assert_eq!(
        f.matches_with_position(&doc! {"a": [1, 5, 7]}),
        (true, Some(1))
    );
    let f = Filter::parse(&doc! {"a": {"$elemMatch": {"x": 1}}}).unwrap();
    assert_eq!(
        f.matches_with_position(&doc! {"a": [{"x": 0}, {"x": 1}]}),
        (true, Some(1))
    );
    let f = Filter::parse(&doc! {"a": [1, 2]}).unwrap();
    assert_eq!(f.matches_with_position(&doc! {"a": [1, 2]}), (true, None));
}

#[test]
fn null_and_arrays_of_null() {
    assert!(m(doc! {"a": null}, doc! {"a": [null]}));
    assert!(m(doc! {"a": {"$in": [null]}}, doc! {"a": [null]}));
    assert!(!m(doc! {"a": {"$ne": null}}, doc! {"a": [null, 1]}));
    assert!(m(doc! {"a.b": null}, doc! {"a": [{"b": null}, {"b": 1}]}));
    assert!(!m(doc! {"a.b": {"$exists": true}}, doc! {"a": [1, 2]}));
    assert!(m(doc! {"a": {"$all": [null]}}, doc! {}));
    assert!(m(doc! {"a": {"$type": "null"}}, doc! {"a": [null]}));
    assert!(!m(doc! {"a": {"$size": 1}}, doc! {"a": null}));
}

#[test]
fn implicit_array_matching_versus_elem_match() {
    let d = doc! {"a": [{"x": 1, "y": 2}, {"x": 2, "y": 1}]};
    assert!(m(doc! {"a.x": 1, "a.y": 1}, d.clone()));
    assert!(!m(doc! {"a": {"$elemMatch": {"x": 1, "y": 1}}}, d.clone()));
    assert!(m(doc! {"a": {"x": 1, "y": 2}}, d.clone()));
    assert!(!m(doc! {"a": {"y": 2, "x": 1}}, d.clone()));
    assert!(m(doc! {"a": {"$in": [{"x": 2, "y": 1}]}}, d.clone()));
    assert!(m(doc! {"a.x": {"$all": [1, 2]}}, d));
    assert!(m(doc! {"a": {"$gt": 5, "$lt": 1}}, doc! {"a": [0, 6]}));
    assert!(m(doc! {"a": {"$not": {"$size": 2}}}, doc! {"a": [1]}));
    assert!(m(
        doc! {"a": {"$nin": [BsonRegex { pattern: "^x".into(), options: "".into() }]}},
        doc! {"a": ["y"]}
    ));
    assert!(!m(
        doc! {"a": {"$nin": [BsonRegex { pattern: "^x".into(), options: "".into() }]}},
        doc! {"a": ["y", "xz"]}
    ));
}

#[test]
fn numbers_compare_across_types() {
    assert!(m(doc! {"a": 1i64}, doc! {"a": 1.0}));
    assert!(m(doc! {"a": {"$lt": 2i64}}, doc! {"a": 1.5}));
    assert!(m(doc! {"a": {"$gt": i64::MAX - 1}}, doc! {"a": i64::MAX}));
    assert!(m(
        doc! {"a": {"$gt": i64::MAX}},
        doc! {"a": 9.223372036854776e18}
    ));
    assert!(m(doc! {"a": {"$lte": true}}, doc! {"a": false}));
    assert!(!m(doc! {"a": {"$lte": true}}, doc! {"a": 0}));
}

#[test]
fn deep_nesting_is_refused_not_overflowed() {
    let mut f = doc! {"a": 1};
    for _ in 0..200 {
        f = doc! {"$and": [f]};
    }
    assert_eq!(err(f).code(), ErrorCode::BadValue);
}

fn m_let(filter: Document, let_doc: Document, doc: Document) -> bool {
    Filter::parse_with_let(&filter, Some(&let_doc))
        .unwrap_or_else(|e| panic!("{filter}: {e}"))
        .matches(&doc)
}

#[test]
fn expr_uses_aggregation_truthiness() {
    for truthy in [
        bson::bson!(true),
        bson::bson!(1),
        bson::bson!(""),
        bson::bson!([]),
        bson::bson!({}),
        bson::bson!(f64::NAN),
    ] {
        assert!(m(doc! {"$expr": truthy.clone()}, doc! {}), "{truthy}");
    }
    for falsy in [
        bson::bson!(false),
        bson::bson!(0),
        bson::bson!(0.0),
        bson::bson!(null),
        Bson::Undefined,
        bson::bson!("$missing"),
    ] {
        assert!(!m(doc! {"$expr": falsy.clone()}, doc! {}), "{falsy}");
    }
    let zero = Bson::Decimal128("0.00".parse().unwrap());
    assert!(!m(doc! {"$expr": zero}, doc! {}));
    assert!(m(doc! {"$expr": "$a"}, doc! {"a": 2}));
    assert!(!m(doc! {"$expr": "$a"}, doc! {"a": 0}));
}

#[test]
fn expr_compares_like_the_expression_language() {
    let gt = doc! {"$expr": {"$gt": ["$a", "$b"]}};
    assert!(m(gt.clone(), doc! {"a": 5, "b": 3}));
    assert!(!m(gt.clone(), doc! {"a": 3, "b": 5}));
    // No type bracketing: a string sorts above every number.
    assert!(m(gt.clone(), doc! {"a": "x", "b": 5}));
    // Missing sorts below null, so {a: 1} > missing.
    assert!(m(gt, doc! {"a": 1}));
    // Arrays are whole values, not traversed.
    let eq = doc! {"$expr": {"$eq": ["$a", 1]}};
    assert!(!m(eq.clone(), doc! {"a": [1, 2]}));
    assert!(m(eq, doc! {"a": 1.0}));
    assert!(m(
        doc! {"$expr": {"$eq": ["$a", [1, 2]]}},
        doc! {"a": [1, 2]}
    ));
    // Aggregation paths through arrays of documents collect the values.
    assert!(m(
        doc! {"$expr": {"$eq": ["$a.b", [1, 2]]}},
        doc! {"a": [{"b": 1}, {"b": 2}]}
    ));
}

#[test]
fn expr_inside_logical_operators_and_with_other_predicates() {
    let f = doc! {"x": {"$gt": 0}, "$or": [{"$expr": {"$eq": ["$a", "$b"]}}, {"c": 1}]};
    assert!(m(f.clone(), doc! {"x": 1, "a": 2, "b": 2}));
    assert!(m(f.clone(), doc! {"x": 1, "a": 2, "b": 3, "c": 1}));
    assert!(!m(f.clone(), doc! {"x": 1, "a": 2, "b": 3}));
    assert!(!m(f, doc! {"x": 0, "a": 2, "b": 2}));
    assert!(m(doc! {"$nor": [{"$expr": "$a"}]}, doc! {"a": 0}));
    assert!(m(
        doc! {"$and": [{"$expr": "$a"}, {"$expr": {"$not": "$b"}}]},
        doc! {"a": 1, "b": false}
    ));
}

#[test]
fn expr_errors() {
    let e = err(doc! {"a": {"$elemMatch": {"$expr": {"$eq": [1, 1]}}}});
    assert_eq!(e.code(), ErrorCode::BadValue);
    assert_eq!(
        e.message(),
        "$expr can only be applied to the top-level document"
    );
    assert_eq!(err(doc! {"$expr": {"$bogus": 1}}).code().code(), 168);
    let e = err(doc! {"$expr": {"$eq": ["$$x", 1]}});
    assert_eq!(
        (e.code().code(), e.message()),
        (17276, "Use of undefined variable: x")
    );
    assert_eq!(
        err(doc! {"a": {"$expr": 1}}).message(),
        "unknown operator: $expr"
    );
    let restricted = Filter::parse_restricted(&doc! {"$expr": true}).unwrap_err();
    assert_eq!(restricted.code(), ErrorCode::QueryFeatureNotAllowed);
    assert_eq!(restricted.message(), "$expr is not allowed in this context");
    let restricted = Filter::parse_restricted(&doc! {"$jsonSchema": {}}).unwrap_err();
    assert_eq!(
        restricted.message(),
        "$jsonSchema is not allowed in this context"
    );
}

#[test]
fn expr_evaluation_errors_fail_try_matches() {
    let f = Filter::parse(&doc! {"$expr": {"$divide": ["$a", 0]}}).unwrap();
    assert!(f.has_expr());
    let e = f.try_matches(&doc! {"a": 1}).unwrap_err();
    assert_eq!(e.message(), "can't $divide by zero");
    assert!(!f.matches(&doc! {"a": 1}));
    // Short-circuiting: the failing branch is not evaluated.
    let f = Filter::parse(&doc! {"$or": [{"a": 1}, {"$expr": {"$divide": ["$a", 0]}}]}).unwrap();
    assert!(f.try_matches(&doc! {"a": 1}).unwrap());
    assert!(!Filter::parse(&doc! {"a": 1}).unwrap().has_expr());
}

#[test]
fn expr_with_let_variables() {
    let l = doc! {"target": 5, "double": {"$multiply": ["$$target", 2]}};
    assert!(m_let(
        doc! {"$expr": {"$eq": ["$a", "$$target"]}},
        l.clone(),
        doc! {"a": 5}
    ));
    assert!(!m_let(
        doc! {"$expr": {"$eq": ["$a", "$$target"]}},
        l.clone(),
        doc! {"a": 6}
    ));
    assert!(m_let(
        doc! {"$expr": {"$eq": ["$a", "$$double"]}},
        l.clone(),
        doc! {"a": 10}
    ));
    assert!(m_let(
        doc! {"$expr": {"$eq": ["$$obj.x", 1]}},
        doc! {"obj": {"x": 1}},
        doc! {}
    ));
    assert!(m_let(
        doc! {"$expr": {"$lt": ["$d", "$$NOW"]}},
        doc! {},
        doc! {"d": bson::DateTime::from_millis(0)}
    ));
    assert!(m_let(
        doc! {"$expr": {"$eq": ["$$ROOT.a", "$$CURRENT.a"]}},
        doc! {},
        doc! {"a": 1}
    ));
    // A later variable shadows nothing built in, and $$REMOVE gives missing.
    assert!(!m_let(
        doc! {"$expr": "$$gone"},
        doc! {"gone": "$$REMOVE"},
        doc! {}
    ));
    let parse_err = |l: Document| Filter::parse_with_let(&doc! {}, Some(&l)).unwrap_err();
    let e = parse_err(doc! {"x": "$a"});
    assert_eq!(e.code().code(), 4890500);
    assert_eq!(parse_err(doc! {"x": "$$ROOT"}).code().code(), 4890500);
    let e = parse_err(doc! {"X": 1});
    assert_eq!(e.code(), ErrorCode::FailedToParse);
    assert_eq!(
        e.message(),
        "Invalid 'let' parameter :: caused by :: 'X' starts with an invalid character for a user variable name"
    );
    assert_eq!(parse_err(doc! {"a-b": 1}).code(), ErrorCode::FailedToParse);
    assert_eq!(parse_err(doc! {"NOW": 1}).code().code(), 4738901);
    assert_eq!(parse_err(doc! {"y": "$$x"}).code().code(), 17276);
    assert_eq!(
        parse_err(doc! {"y": {"$divide": [1, 0]}}).message(),
        "can't $divide by zero"
    );
    let e = Filter::parse_with_let(&doc! {"$expr": "$$undefinedVar"}, Some(&doc! {"x": 1}))
        .unwrap_err();
    assert_eq!(e.message(), "Use of undefined variable: undefinedVar");
}

#[test]
fn shared_variables_give_one_now() {
    let vars = Arc::new(LetVariables::parse(None, bson::DateTime::from_millis(42)).unwrap());
    let f = Filter::parse_with_variables(&doc! {"$expr": {"$eq": ["$$NOW", "$t"]}}, &vars).unwrap();
    assert!(f.matches(&doc! {"t": bson::DateTime::from_millis(42)}));
}

#[test]
fn json_schema_in_filters() {
    let f = doc! {"$jsonSchema": {"required": ["a"], "properties": {"a": {"bsonType": "int"}}}};
    assert!(m(f.clone(), doc! {"a": 1}));
    assert!(!m(f.clone(), doc! {"a": 1.5}));
    assert!(!m(f, doc! {"b": 1}));
    let or = doc! {"$or": [{"$jsonSchema": {"properties": {"a": {"minimum": 2}}}}, {"b": 2}]};
    assert!(m(or.clone(), doc! {"a": 3}));
    assert!(m(or.clone(), doc! {"a": 1, "b": 2}));
    assert!(!m(or, doc! {"a": 1}));
    // Inside $elemMatch the schema applies to each element document.
    let em = doc! {"xs": {"$elemMatch": {"$jsonSchema": {"required": ["k"]}}}};
    assert!(m(em.clone(), doc! {"xs": [{"j": 1}, {"k": 1}]}));
    assert!(!m(em, doc! {"xs": [{"j": 1}]}));
    assert_eq!(
        err(doc! {"$jsonSchema": {"foo": 1}}).message(),
        "Unknown $jsonSchema keyword: foo"
    );
}

#[test]
fn paths_as_deep_as_a_stored_document() {
    let path = |components: usize| vec!["a"; components].join(".");
    assert!(Filter::parse(&doc! {path(180): 1}).is_ok());
    let err = Filter::parse(&doc! {path(181): 1}).unwrap_err();
    assert_eq!(err.code().code(), 5729100);
    assert_eq!(err.message(), "FieldPath is too long");
}
