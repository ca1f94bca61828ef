//! Unit tests of updates: operators, paths and their errors, positional updates and array
//! filters, replacements and upsert seeds.

use super::*;
use bson::doc;

fn ctx() -> UpdateContext<'static> {
    UpdateContext {
        is_upsert_insert: false,
        now: bson::DateTime::from_millis(1_700_000_000_000),
        matched_filter: None,
        collation: None,
    }
}

fn up(doc: Document, update: Document) -> (Document, bool) {
    let spec = UpdateSpec::parse(&Bson::Document(update.clone()), None)
        .unwrap_or_else(|e| panic!("{update}: {e}"));
    let mut d = doc;
    let modified = spec
        .apply(&mut d, &ctx())
        .unwrap_or_else(|e| panic!("{update}: {e}"));
    (d, modified)
}

fn up_err(doc: Document, update: Document) -> MongoError {
    match UpdateSpec::parse(&Bson::Document(update), None) {
        Err(e) => e,
        Ok(spec) => {
            let mut d = doc.clone();
            let e = spec.apply(&mut d, &ctx()).expect_err("update should fail");
            assert_eq!(d, doc, "failed updates leave the document alone");
            e
        }
    }
}

#[test]
fn set_creates_paths_in_field_order_and_tracks_modification() {
    assert_eq!(
        up(doc! {"_id": 1}, doc! {"$set": {"b": 1, "a": 2}}),
        (doc! {"_id": 1, "a": 2, "b": 1}, true)
    );
    assert_eq!(
        up(doc! {"_id": 1, "a": 1}, doc! {"$set": {"a": 1}}),
        (doc! {"_id": 1, "a": 1}, false)
    );
    assert!(up(doc! {"_id": 1, "a": 1}, doc! {"$set": {"a": 1.0}}).1);
    assert_eq!(
        up(doc! {"_id": 1}, doc! {"$set": {"a.b.c": 1}}).0,
        doc! {"_id": 1, "a": {"b": {"c": 1}}}
    );
    assert_eq!(
        up(doc! {"_id": 1, "a": [1, 2]}, doc! {"$set": {"a.1": 5}}).0,
        doc! {"_id": 1, "a": [1, 5]}
    );
    assert_eq!(
        up(doc! {"_id": 1, "a": [1]}, doc! {"$set": {"a.3": 5}}).0,
        doc! {"_id": 1, "a": [1, null, null, 5]}
    );
    assert_eq!(
        up(doc! {"_id": 1}, doc! {"$set": {"a.0": 5}}).0,
        doc! {"_id": 1, "a": {"0": 5}}
    );
    assert!(
        up(
            doc! {"_id": 1, "x": {"b": 1, "a": 1}},
            doc! {"$set": {"x": {"a": 1, "b": 1}}}
        )
        .1
    );
    assert_eq!(
        up(doc! {"_id": 1}, doc! {"$set": {"10": 1, "9": 1}})
            .0
            .keys()
            .cloned()
            .collect::<Vec<_>>(),
        vec!["_id", "9", "10"]
    );
    assert_eq!(
        up(doc! {"_id": 1}, doc! {"$set": {}}),
        (doc! {"_id": 1}, false)
    );
}

#[test]
fn path_errors() {
    let e = up_err(doc! {"_id": 1, "a": 5}, doc! {"$set": {"a.b": 1}});
    assert_eq!(
        (e.code(), e.message()),
        (
            ErrorCode::PathNotViable,
            "Cannot create field 'b' in element {a: 5}"
        )
    );
    let e = up_err(doc! {"_id": 1, "a": [1]}, doc! {"$inc": {"a.b": 1}});
    assert_eq!(e.message(), "Cannot create field 'b' in element {a: [ 1 ]}");
    assert!(!up(doc! {"_id": 1, "a": 5}, doc! {"$unset": {"a.b": 1}}).1);
    let e = up_err(doc! {"_id": 1}, doc! {"$set": {"a..b": 1}});
    assert_eq!(
        (e.code(), e.message()),
        (
            ErrorCode::EmptyFieldName,
            "The update path 'a..b' contains an empty field name, which is not allowed."
        )
    );
    assert_eq!(
        up_err(doc! {}, doc! {"$set": {"": 1}}).message(),
        "An empty update path is not valid."
    );
    let e = up_err(doc! {}, doc! {"$set": {"a": 1}, "$inc": {"a.b": 1}});
    assert_eq!(
        (e.code(), e.message()),
        (
            ErrorCode::ConflictingUpdateOperators,
            "Updating the path 'a.b' would create a conflict at 'a'"
        )
    );
    let e = up_err(doc! {}, doc! {"$set": {"a.b": 1}, "$unset": {"a": 1}});
    assert_eq!(
        e.message(),
        "Updating the path 'a' would create a conflict at 'a'"
    );
    let e = up_err(doc! {}, doc! {"$foo": {"a": 1}});
    assert_eq!(
        (e.code(), e.message()),
        (
            ErrorCode::FailedToParse,
            "Unknown modifier: $foo. Expected a valid update modifier or pipeline-style update specified as an array"
        )
    );
    let e = up_err(doc! {}, doc! {"$set": 1});
    assert_eq!(
        e.message(),
        "Modifiers operate on fields but we found type int instead. For example: {$mod: {<field>: ...}} not {$set: 1}"
    );
    let e = up_err(doc! {}, doc! {"$set": {"a": 1}, "b": 1});
    assert_eq!(e.code(), ErrorCode::FailedToParse);
    assert_eq!(
        up_err(doc! {}, doc! {"$set": {"$.a": 1}}).code(),
        ErrorCode::BadValue
    );
}

#[test]
fn id_is_immutable() {
    let e = up_err(doc! {"_id": 1, "a": 1}, doc! {"$set": {"_id": 2}});
    assert_eq!(
        (e.code(), e.message()),
        (
            ErrorCode::ImmutableField,
            "Performing an update on the path '_id' would modify the immutable field '_id'"
        )
    );
    assert!(!up(doc! {"_id": 1}, doc! {"$set": {"_id": 1}}).1);
    assert_eq!(
        up_err(doc! {"_id": {"x": 1}}, doc! {"$set": {"_id.x": 2}}).code(),
        ErrorCode::ImmutableField
    );
    assert_eq!(
        up_err(doc! {"_id": 1}, doc! {"$rename": {"_id": "x"}}).code(),
        ErrorCode::ImmutableField
    );
}

#[test]
fn unset_inc_mul_min_max() {
    assert_eq!(
        up(doc! {"_id": 1, "a": 1, "b": 2}, doc! {"$unset": {"a": ""}}),
        (doc! {"_id": 1, "b": 2}, true)
    );
    assert!(!up(doc! {"_id": 1}, doc! {"$unset": {"a": ""}}).1);
    assert_eq!(
        up(doc! {"_id": 1, "a": [1, 2]}, doc! {"$unset": {"a.0": 1}}).0,
        doc! {"_id": 1, "a": [null, 2]}
    );
    assert_eq!(
        up(doc! {"_id": 1, "a": 1}, doc! {"$inc": {"a": 2}}).0,
        doc! {"_id": 1, "a": 3}
    );
    assert_eq!(
        up(doc! {"_id": 1}, doc! {"$inc": {"a": 2i64}}).0,
        doc! {"_id": 1, "a": 2i64}
    );
    assert_eq!(
        up(doc! {"_id": 1, "a": i32::MAX}, doc! {"$inc": {"a": 1}}).0,
        doc! {"_id": 1, "a": i32::MAX as i64 + 1}
    );
    assert_eq!(
        up(doc! {"_id": 1, "a": 1}, doc! {"$inc": {"a": 0.5}}).0,
        doc! {"_id": 1, "a": 1.5}
    );
    assert_eq!(
        up(doc! {"_id": 1, "a": 1}, doc! {"$inc": {"a": 1i64}}).0,
        doc! {"_id": 1, "a": 2i64}
    );
    assert!(!up(doc! {"_id": 1, "a": 1}, doc! {"$inc": {"a": 0}}).1);
    assert_eq!(
        up(doc! {"_id": 1, "a": 3}, doc! {"$mul": {"a": 2}}).0,
        doc! {"_id": 1, "a": 6}
    );
    assert_eq!(
        up(doc! {"_id": 1}, doc! {"$mul": {"a": 2i64}}).0,
        doc! {"_id": 1, "a": 0i64}
    );
    assert_eq!(
        up(doc! {"_id": 1, "a": 65536}, doc! {"$mul": {"a": 65536}}).0,
        doc! {"_id": 1, "a": 4294967296i64}
    );
    let e = up_err(doc! {"_id": "x", "a": i64::MAX}, doc! {"$inc": {"a": 1}});
    assert_eq!(
        (e.code(), e.message()),
        (
            ErrorCode::BadValue,
            "Failed to apply $inc operations to current value ((NumberLong)9223372036854775807) for document {_id: \"x\"}"
        )
    );
    let e = up_err(doc! {"_id": 1, "a": "s"}, doc! {"$inc": {"a": 1}});
    assert_eq!(
        (e.code(), e.message()),
        (
            ErrorCode::TypeMismatch,
            "Cannot apply $inc to a value of non-numeric type. {_id: 1} has the field 'a' of non-numeric type string"
        )
    );
    let e = up_err(doc! {"_id": 1}, doc! {"$inc": {"a": "s"}});
    assert_eq!(
        e.message(),
        "Cannot increment with non-numeric argument: {a: \"s\"}"
    );
    assert_eq!(
        up(doc! {"_id": 1, "a": 5}, doc! {"$min": {"a": 3}}).0,
        doc! {"_id": 1, "a": 3}
    );
    assert!(!up(doc! {"_id": 1, "a": 5}, doc! {"$min": {"a": 7}}).1);
    assert_eq!(
        up(doc! {"_id": 1, "a": 5}, doc! {"$max": {"a": "x"}}).0,
        doc! {"_id": 1, "a": "x"}
    );
    assert!(!up(doc! {"_id": 1, "a": 5}, doc! {"$max": {"a": 5.0}}).1);
    assert_eq!(
        up(doc! {"_id": 1}, doc! {"$min": {"a": 1}}).0,
        doc! {"_id": 1, "a": 1}
    );
}

fn dec(s: &str) -> Bson {
    Bson::Decimal128(s.parse().unwrap())
}

#[test]
fn inc_and_mul_with_decimals() {
    let a = |v: Bson| doc! {"_id": 1, "a": v};
    // A decimal on either side makes a decimal; integers convert exactly.
    assert_eq!(
        up(a(dec("1.5")), doc! {"$inc": {"a": 1}}),
        (a(dec("2.5")), true)
    );
    assert_eq!(
        up(a(Bson::Int64(i64::MAX)), doc! {"$inc": {"a": dec("1")}}).0,
        a(dec("9223372036854775808"))
    );
    assert_eq!(
        up(a(Bson::Int32(3)), doc! {"$mul": {"a": dec("1.10")}}).0,
        a(dec("3.30"))
    );
    // Doubles are rounded to 15 significant digits first.
    assert_eq!(
        up(a(dec("1")), doc! {"$inc": {"a": 0.1}}).0,
        a(dec("1.100000000000000"))
    );
    assert_eq!(
        up(a(Bson::Double(0.1)), doc! {"$inc": {"a": dec("0.2")}}).0,
        a(dec("0.300000000000000"))
    );
    // 34 significant digits, ties rounded to even.
    assert_eq!(
        up(
            a(dec("1234567890123456789012345678901235")),
            doc! {"$inc": {"a": dec("0.5")}}
        )
        .0,
        a(dec("1234567890123456789012345678901236"))
    );
    assert_eq!(
        up(
            a(dec("9999999999999999999999999999999999")),
            doc! {"$inc": {"a": 1}}
        )
        .0,
        a(dec("1.000000000000000000000000000000000E+34"))
    );
    // No change when the result equals the stored number, whatever its representation:
    // the stored value is kept (rounding back to `…234` is no change either).
    assert_eq!(
        up(a(dec("1.0")), doc! {"$inc": {"a": dec("0.00")}}),
        (a(dec("1.0")), false)
    );
    assert_eq!(
        up(a(dec("2")), doc! {"$mul": {"a": dec("1.000")}}),
        (a(dec("2")), false)
    );
    assert!(
        !up(
            a(dec("1234567890123456789012345678901234")),
            doc! {"$inc": {"a": dec("0.5")}}
        )
        .1
    );
    // NaN equals nothing, so it is always a change.
    let (d, modified) = up(a(dec("NaN")), doc! {"$inc": {"a": 1}});
    assert!(modified && d == a(dec("NaN")));
    // `$mul` on a missing field multiplies the operand by int32 0: type, sign and exponent.
    assert_eq!(
        up(doc! {"_id": 1}, doc! {"$mul": {"a": dec("2.50")}}).0,
        a(dec("0.00"))
    );
    assert_eq!(
        up(doc! {"_id": 1}, doc! {"$mul": {"a": dec("-2")}}).0,
        a(dec("-0"))
    );
    assert_eq!(
        up(doc! {"_id": 1}, doc! {"$inc": {"a": dec("2.50")}}).0,
        a(dec("2.50"))
    );
}

#[test]
fn inc_and_mul_compare_doubles_by_value() {
    let a = |v: f64| doc! {"_id": 1, "a": v};
    // -0.0 equals 0.0: no change, and the stored zero keeps its sign.
    let (d, modified) = up(a(0.0), doc! {"$mul": {"a": -1.0}});
    assert!(!modified && d.get_f64("a").unwrap().is_sign_positive());
    let (d, modified) = up(a(f64::NAN), doc! {"$inc": {"a": 1}});
    assert!(modified && d.get_f64("a").unwrap().is_nan());
    let d = up(doc! {"_id": 1}, doc! {"$mul": {"a": -2.5}}).0;
    assert!(d.get_f64("a").unwrap().is_sign_negative());
}

#[test]
fn current_date_and_rename() {
    let (d, _) = up(
        doc! {"_id": 1},
        doc! {"$currentDate": {"a": true, "b": {"$type": "timestamp"}}},
    );
    assert_eq!(
        d.get("a"),
        Some(&Bson::DateTime(bson::DateTime::from_millis(
            1_700_000_000_000
        )))
    );
    assert!(matches!(d.get("b"), Some(Bson::Timestamp(_))));
    assert_eq!(
        up_err(doc! {}, doc! {"$currentDate": {"a": 1}}).message(),
        "int is not valid type for $currentDate. Please use a boolean ('true') or a $type expression ({$type: 'timestamp/date'})."
    );
    assert_eq!(
        up(
            doc! {"_id": 1, "a": 1, "b": 2},
            doc! {"$rename": {"a": "c"}}
        ),
        (doc! {"_id": 1, "b": 2, "c": 1}, true)
    );
    assert_eq!(
        up(
            doc! {"_id": 1, "a": {"x": 1}},
            doc! {"$rename": {"a.x": "b.y"}}
        )
        .0,
        doc! {"_id": 1, "a": {}, "b": {"y": 1}}
    );
    assert!(!up(doc! {"_id": 1}, doc! {"$rename": {"a": "b"}}).1);
    assert_eq!(
        up_err(doc! {}, doc! {"$rename": {"a": "a"}}).message(),
        "The source and target field for $rename must differ: a: \"a\""
    );
    assert_eq!(
        up_err(doc! {}, doc! {"$rename": {"a": 1}}).message(),
        "The 'to' field for $rename must be a string: a: 1"
    );
    let e = up_err(
        doc! {"_id": 1, "a": [{"b": 1}]},
        doc! {"$rename": {"a.0.b": "c"}},
    );
    assert_eq!(
        e.message(),
        "The source field cannot be an array element, 'a.0.b' in doc with _id: 1 has an array field called 'a'"
    );
    let e = up_err(
        doc! {"_id": 1, "v": [{"foo": 1}]},
        doc! {"$rename": {"v.foo": "f"}},
    );
    assert_eq!(
        (e.code(), e.message()),
        (
            ErrorCode::PathNotViable,
            "cannot use the part (v of v.foo) to traverse the element ({v: [ { foo: 1 } ]})"
        )
    );
    assert_eq!(
        up_err(doc! {}, doc! {"$rename": {"a": "b"}, "$set": {"b": 1}}).code(),
        ErrorCode::ConflictingUpdateOperators
    );
}

#[test]
fn push_and_add_to_set() {
    assert_eq!(
        up(doc! {"_id": 1}, doc! {"$push": {"a": 1}}).0,
        doc! {"_id": 1, "a": [1]}
    );
    assert_eq!(
        up(doc! {"_id": 1, "a": [1]}, doc! {"$push": {"a": [2]}}).0,
        doc! {"_id": 1, "a": [1, [2]]}
    );
    assert_eq!(
        up(
            doc! {"_id": 1, "a": [1, 2]},
            doc! {"$push": {"a": {"$each": [3, 4], "$position": 1}}}
        )
        .0,
        doc! {"_id": 1, "a": [1, 3, 4, 2]}
    );
    assert_eq!(
        up(
            doc! {"_id": 1, "a": [1, 2]},
            doc! {"$push": {"a": {"$each": [3], "$position": -1}}}
        )
        .0,
        doc! {"_id": 1, "a": [1, 3, 2]}
    );
    assert_eq!(
        up(
            doc! {"_id": 1, "a": [5, 1]},
            doc! {"$push": {"a": {"$each": [3], "$sort": 1, "$slice": 2}}}
        )
        .0,
        doc! {"_id": 1, "a": [1, 3]}
    );
    assert_eq!(
        up(
            doc! {"_id": 1, "a": [5, 1]},
            doc! {"$push": {"a": {"$each": [3], "$slice": -2}}}
        )
        .0,
        doc! {"_id": 1, "a": [1, 3]}
    );
    assert_eq!(
        up(
            doc! {"_id": 1, "a": [{"s": 2}, {"s": 1}]},
            doc! {"$push": {"a": {"$each": [{"s": 3}], "$sort": {"s": -1}}}}
        )
        .0,
        doc! {"_id": 1, "a": [{"s": 3}, {"s": 2}, {"s": 1}]}
    );
    assert!(
        !up(
            doc! {"_id": 1, "a": [1]},
            doc! {"$push": {"a": {"$each": []}}}
        )
        .1
    );
    let e = up_err(doc! {"_id": 1, "a": 1}, doc! {"$push": {"a": 2}});
    assert_eq!(
        e.message(),
        "The field 'a' must be an array but is of type int in document {_id: 1}"
    );
    assert_eq!(
        up_err(doc! {}, doc! {"$push": {"a": {"$each": 1}}}).message(),
        "The argument to $each in $push must be an array but it was of type: int"
    );
    assert_eq!(
        up_err(doc! {}, doc! {"$push": {"a": {"$each": [], "$foo": 1}}}).message(),
        "Unrecognized clause in $push: $foo"
    );
    assert!(!up(doc! {"_id": 1, "a": [1, 2]}, doc! {"$addToSet": {"a": 2}}).1);
    assert_eq!(
        up(
            doc! {"_id": 1, "a": [1, 2]},
            doc! {"$addToSet": {"a": {"$each": [2, 3, 3]}}}
        )
        .0,
        doc! {"_id": 1, "a": [1, 2, 3]}
    );
    assert_eq!(
        up(
            doc! {"_id": 1},
            doc! {"$addToSet": {"a": {"$each": [1, 1]}}}
        )
        .0,
        doc! {"_id": 1, "a": [1]}
    );
    let e = up_err(doc! {"_id": 1, "a": 1}, doc! {"$addToSet": {"a": 2}});
    assert_eq!(
        e.message(),
        "Cannot apply $addToSet to non-array field. Field named 'a' has non-array type int"
    );
}

#[test]
fn pop_pull_pull_all_bit() {
    assert_eq!(
        up(doc! {"_id": 1, "a": [1, 2, 3]}, doc! {"$pop": {"a": 1}}).0,
        doc! {"_id": 1, "a": [1, 2]}
    );
    assert_eq!(
        up(doc! {"_id": 1, "a": [1, 2, 3]}, doc! {"$pop": {"a": -1}}).0,
        doc! {"_id": 1, "a": [2, 3]}
    );
    assert!(!up(doc! {"_id": 1, "a": []}, doc! {"$pop": {"a": 1}}).1);
    assert_eq!(
        up_err(doc! {}, doc! {"$pop": {"a": 2}}).message(),
        "$pop expects 1 or -1, found: 2"
    );
    assert_eq!(
        up_err(doc! {"_id": 1, "a": 1}, doc! {"$pop": {"a": 1}}).message(),
        "Path 'a' contains an element of non-array type 'int'"
    );
    assert_eq!(
        up(doc! {"_id": 1, "a": [1, 2, 1, 3]}, doc! {"$pull": {"a": 1}}).0,
        doc! {"_id": 1, "a": [2, 3]}
    );
    assert_eq!(
        up(
            doc! {"_id": 1, "a": [1, 5, 9]},
            doc! {"$pull": {"a": {"$gte": 5}}}
        )
        .0,
        doc! {"_id": 1, "a": [1]}
    );
    assert_eq!(
        up(
            doc! {"_id": 1, "a": [{"x": 1, "y": 1}, {"x": 2}, 3]},
            doc! {"$pull": {"a": {"x": 1}}}
        )
        .0,
        doc! {"_id": 1, "a": [{"x": 2}, 3]}
    );
    assert_eq!(
        up(
            doc! {"_id": 1, "a": [[1, 2], 1]},
            doc! {"$pull": {"a": [1, 2]}}
        )
        .0,
        doc! {"_id": 1, "a": [1]}
    );
    assert!(!up(doc! {"_id": 1, "a": [1]}, doc! {"$pull": {"a": 9}}).1);
    assert_eq!(
        up_err(doc! {"_id": 1, "a": 1}, doc! {"$pull": {"a": 1}}).message(),
        "Cannot apply $pull to a non-array value"
    );
    assert_eq!(
        up(
            doc! {"_id": 1, "a": [1, 2, 3, 1]},
            doc! {"$pullAll": {"a": [1, 3]}}
        )
        .0,
        doc! {"_id": 1, "a": [2]}
    );
    assert_eq!(
        up_err(doc! {}, doc! {"$pullAll": {"a": 1}}).message(),
        "$pullAll requires an array argument but was given a int"
    );
    assert_eq!(
        up(doc! {"_id": 1, "a": 13}, doc! {"$bit": {"a": {"and": 10}}}).0,
        doc! {"_id": 1, "a": 8}
    );
    assert_eq!(
        up(doc! {"_id": 1, "a": 13}, doc! {"$bit": {"a": {"or": 2i64}}}).0,
        doc! {"_id": 1, "a": 15i64}
    );
    assert_eq!(
        up(doc! {"_id": 1}, doc! {"$bit": {"a": {"xor": 5}}}).0,
        doc! {"_id": 1, "a": 5}
    );
    assert!(!up(doc! {"_id": 1, "a": 1}, doc! {"$bit": {"a": {"and": 1}}}).1);
    assert_eq!(
        up_err(doc! {}, doc! {"$bit": {"a": {"not": 1}}}).code(),
        ErrorCode::BadValue
    );
    assert_eq!(
        up_err(doc! {"_id": 1, "a": 1.5}, doc! {"$bit": {"a": {"and": 1}}}).message(),
        "Cannot apply $bit to a value of non-integral type._id: 1 has the field a of non-integer type double"
    );
}

#[test]
fn positional_and_array_filters() {
    let filter = Filter::parse(&doc! {"a.b": 2}).unwrap();
    let spec = UpdateSpec::parse(&Bson::Document(doc! {"$set": {"a.$.c": 1}}), None).unwrap();
    let mut d = doc! {"_id": 1, "a": [{"b": 1}, {"b": 2}]};
    let c = UpdateContext {
        matched_filter: Some(&filter),
        ..ctx()
    };
    assert!(spec.apply(&mut d, &c).unwrap());
    assert_eq!(d, doc! {"_id": 1, "a": [{"b": 1}, {"b": 2, "c": 1}]});
    let e = spec.apply(&mut d.clone(), &ctx()).unwrap_err();
    assert_eq!(
        e.message(),
        "The positional operator did not find the match needed from the query."
    );

    assert_eq!(
        up(doc! {"_id": 1, "a": [1, 2]}, doc! {"$inc": {"a.$[]": 10}}).0,
        doc! {"_id": 1, "a": [11, 12]}
    );
    assert_eq!(
        up(
            doc! {"_id": 1, "a": [{"b": [1, 2]}, {"b": [3]}]},
            doc! {"$set": {"a.$[].b.$[]": 0}}
        )
        .0,
        doc! {"_id": 1, "a": [{"b": [0, 0]}, {"b": [0]}]}
    );
    assert_eq!(
        up_err(doc! {"_id": 1, "a": 1}, doc! {"$set": {"a.$[]": 1}}).message(),
        "Cannot apply array updates to non-array element a: 1"
    );
    assert_eq!(
        up_err(doc! {"_id": 1}, doc! {"$set": {"a.$[]": 1}}).message(),
        "The path 'a' must exist in the document in order to apply array updates."
    );

    let filters = [doc! {"x": {"$gte": 2}}];
    let spec = UpdateSpec::parse(
        &Bson::Document(doc! {"$set": {"a.$[x]": 0}}),
        Some(&filters),
    )
    .unwrap();
    let mut d = doc! {"_id": 1, "a": [1, 2, 3]};
    spec.apply(&mut d, &ctx()).unwrap();
    assert_eq!(d, doc! {"_id": 1, "a": [1, 0, 0]});
    let filters = [doc! {"e.k": 1}];
    let spec = UpdateSpec::parse(
        &Bson::Document(doc! {"$set": {"a.$[e].v": true}}),
        Some(&filters),
    )
    .unwrap();
    let mut d = doc! {"_id": 1, "a": [{"k": 1}, {"k": 2}]};
    spec.apply(&mut d, &ctx()).unwrap();
    assert_eq!(d, doc! {"_id": 1, "a": [{"k": 1, "v": true}, {"k": 2}]});

    let parse = |u: Document, f: Vec<Document>| {
        UpdateSpec::parse(&Bson::Document(u), Some(&f)).unwrap_err()
    };
    assert_eq!(
        parse(doc! {"$set": {"a.$[y]": 1}}, vec![doc! {"x": 1}]).message(),
        "No array filter found for identifier 'y' in path 'a.$[y]'"
    );
    assert_eq!(
        parse(doc! {"$set": {"a": 1}}, vec![doc! {"x": 1}]).message(),
        "The array filter for identifier 'x' was not used in the update { $set: { a: 1 } }"
    );
    assert_eq!(
        parse(
            doc! {"$set": {"a.$[x]": 1}},
            vec![doc! {"x": 1}, doc! {"x": 2}]
        )
        .code(),
        ErrorCode::FailedToParse
    );
    assert_eq!(
        parse(doc! {"$set": {"a.$[X]": 1}}, vec![doc! {"X": 1}]).code(),
        ErrorCode::BadValue
    );
    assert_eq!(
        up_err(
            doc! {"_id": 1, "a": [1]},
            doc! {"$set": {"a.$[]": 1, "a.0": 2}}
        )
        .code(),
        ErrorCode::ConflictingUpdateOperators
    );
}

#[test]
fn replacement_and_pipelines() {
    let spec = UpdateSpec::parse(&Bson::Document(doc! {"b": 2}), None).unwrap();
    assert!(spec.is_replacement());
    let mut d = doc! {"a": 1, "_id": 7};
    assert!(spec.apply(&mut d, &ctx()).unwrap());
    assert_eq!(d, doc! {"_id": 7, "b": 2});
    assert!(!spec.apply(&mut d, &ctx()).unwrap());
    let spec = UpdateSpec::parse(&Bson::Document(doc! {"_id": 8}), None).unwrap();
    let e = spec.apply(&mut d.clone(), &ctx()).unwrap_err();
    assert_eq!(
        (e.code(), e.message()),
        (
            ErrorCode::ImmutableField,
            "After applying the update, the (immutable) field '_id' was found to have been altered to _id: 8"
        )
    );
    let e = UpdateSpec::parse(&Bson::Document(doc! {"a": 1, "$set": {"b": 1}}), None).unwrap_err();
    assert_eq!(e.code(), ErrorCode::DollarPrefixedFieldName);
    let spec = UpdateSpec::parse(&Bson::Array(vec![]), None).unwrap();
    assert!(spec.is_pipeline() && !spec.is_replacement() && !spec.is_positional());
}

#[test]
fn upserts() {
    let seed = upsert_seed(
        &doc! {"a.b": 1, "_id": 5, "c": {"$gt": 1}, "$and": [{"d": {"$eq": 2}}], "e": {"$in": [3]}},
    )
    .unwrap();
    assert_eq!(seed, doc! {"_id": 5, "a": {"b": 1}, "d": 2, "e": 3});
    // Fields in the byte order of their paths, not the filter's; `_id` first.
    let seed = upsert_seed(&doc! {"z": 1, "b.y": 2, "B": 3, "_id": 0, "b.x": 4, "a-": 5}).unwrap();
    assert_eq!(
        seed,
        doc! {"_id": 0, "B": 3, "a-": 5, "b": {"x": 4, "y": 2}, "z": 1}
    );
    assert_eq!(
        upsert_seed(&doc! {"$or": [{"a": 1}, {"b": 1}]}).unwrap(),
        doc! {}
    );
    assert_eq!(
        upsert_seed(&doc! {"$or": [{"a": 1}]}).unwrap(),
        doc! {"a": 1}
    );
    let e = upsert_seed(&doc! {"a": 1, "a.b": 1}).unwrap_err();
    assert_eq!(
        (e.code(), e.message()),
        (
            ErrorCode::NotSingleValueField,
            "cannot infer query fields to set, both paths 'a.b' and 'a' are matched"
        )
    );
    let e = upsert_seed(&doc! {"$and": [{"a": 1}, {"a": 2}]}).unwrap_err();
    assert_eq!(
        e.message(),
        "cannot infer query fields to set, path 'a' is matched twice"
    );

    let insert = UpdateContext {
        is_upsert_insert: true,
        ..ctx()
    };
    let spec = UpdateSpec::parse(
        &Bson::Document(doc! {"$set": {"x": 1}, "$setOnInsert": {"y": 2}}),
        None,
    )
    .unwrap();
    let mut d = upsert_seed(&doc! {"q": 1}).unwrap();
    spec.apply(&mut d, &insert).unwrap();
    assert_eq!(d, doc! {"q": 1, "x": 1, "y": 2});
    let mut d = doc! {"_id": 1};
    spec.apply(&mut d, &ctx()).unwrap();
    assert_eq!(d, doc! {"_id": 1, "x": 1});
    let mut d = doc! {"x": 1};
    let spec = UpdateSpec::parse(&Bson::Document(doc! {"$set": {"_id": 3}}), None).unwrap();
    spec.apply(&mut d, &insert).unwrap();
    assert_eq!(d, doc! {"_id": 3, "x": 1});
    let spec = UpdateSpec::parse(&Bson::Document(doc! {"r": 1}), None).unwrap();
    let mut d = upsert_seed(&doc! {"_id": 4, "q": 1}).unwrap();
    spec.apply(&mut d, &insert).unwrap();
    assert_eq!(d, doc! {"_id": 4, "r": 1});
}
