//! Unit tests of `$jsonSchema`: each keyword's matching, MongoDB's restriction semantics and
//! its parse errors.

use super::*;
use crate::error::{ErrorCode, MongoError};
use bson::{Bson, doc};

fn m(schema: Document, doc: Document) -> bool {
    JsonSchema::parse(&schema)
        .unwrap_or_else(|e| panic!("{schema}: {e}"))
        .matches(&doc)
}

/// Matches `{a: value}` against `{properties: {a: schema}}`.
fn prop(schema: Document, value: Bson) -> bool {
    m(doc! {"properties": {"a": schema}}, doc! {"a": value})
}

fn err(schema: Document) -> MongoError {
    JsonSchema::parse(&schema).expect_err(&format!("{schema} should not parse"))
}

#[test]
fn empty_schema_matches_everything() {
    assert!(m(doc! {}, doc! {}));
    assert!(m(doc! {"title": "t", "description": "d"}, doc! {"a": 1}));
}

#[test]
fn bson_type_and_type() {
    assert!(prop(doc! {"bsonType": "int"}, Bson::Int32(1)));
    assert!(!prop(doc! {"bsonType": "int"}, Bson::Int64(1)));
    assert!(prop(
        doc! {"bsonType": "number"},
        Bson::Decimal128("1".parse().unwrap())
    ));
    assert!(prop(doc! {"bsonType": ["string", "null"]}, Bson::Null));
    assert!(prop(
        doc! {"bsonType": "objectId"},
        Bson::ObjectId(Default::default())
    ));
    assert!(prop(doc! {"type": "number"}, Bson::Double(1.5)));
    assert!(prop(doc! {"type": "boolean"}, Bson::Boolean(false)));
    assert!(!prop(doc! {"type": "object"}, bson::bson!([1])));
    // Arrays are not traversed: [1] is an array, not a number.
    assert!(!prop(doc! {"type": "number"}, bson::bson!([1])));
    assert!(prop(doc! {"type": "array"}, bson::bson!([1])));
    // A missing optional property is not checked.
    assert!(m(doc! {"properties": {"a": {"type": "string"}}}, doc! {}));
    // Top level: documents are objects.
    assert!(m(doc! {"type": "object"}, doc! {}));
    assert!(!m(doc! {"bsonType": "string"}, doc! {}));
}

#[test]
fn numeric_keywords_only_constrain_numbers() {
    let min = doc! {"minimum": 2};
    assert!(prop(min.clone(), Bson::Int32(2)));
    assert!(!prop(min.clone(), Bson::Double(1.5)));
    assert!(prop(min.clone(), Bson::String("x".into())));
    assert!(prop(min.clone(), bson::bson!([0])));
    assert!(!prop(min, Bson::Double(f64::NAN)));
    let exclusive =
        doc! {"minimum": 2, "exclusiveMinimum": true, "maximum": 5, "exclusiveMaximum": true};
    assert!(!prop(exclusive.clone(), Bson::Int32(2)));
    assert!(prop(exclusive.clone(), Bson::Int64(3)));
    assert!(!prop(exclusive, Bson::Int32(5)));
    assert!(prop(doc! {"maximum": 5}, Bson::Int32(5)));
    // Minimum at the top level constrains nothing (documents are not numbers).
    assert!(m(doc! {"minimum": 5}, doc! {}));
}

#[test]
fn multiple_of_in_decimal() {
    assert!(prop(doc! {"multipleOf": 3}, Bson::Int32(9)));
    assert!(!prop(doc! {"multipleOf": 3}, Bson::Int32(10)));
    assert!(prop(doc! {"multipleOf": 0.1}, Bson::Double(0.3)));
    assert!(prop(doc! {"multipleOf": 0.01}, Bson::Double(19.99)));
    assert!(!prop(doc! {"multipleOf": 0.1}, Bson::Double(0.35)));
    assert!(prop(doc! {"multipleOf": 2.5}, Bson::Int64(10)));
    assert!(prop(
        doc! {"multipleOf": Bson::Decimal128("0.5".parse().unwrap())},
        Bson::Decimal128("2.5".parse().unwrap())
    ));
    assert!(!prop(doc! {"multipleOf": 2}, Bson::Double(f64::INFINITY)));
    assert!(prop(doc! {"multipleOf": 2}, Bson::String("x".into())));
}

#[test]
fn string_keywords() {
    let s = |v: &str| Bson::String(v.into());
    assert!(prop(doc! {"minLength": 2, "maxLength": 3}, s("ab")));
    assert!(!prop(doc! {"minLength": 2}, s("a")));
    assert!(!prop(doc! {"maxLength": 3}, s("abcd")));
    // Code points, not bytes.
    assert!(prop(doc! {"maxLength": 2}, s("éé")));
    assert!(prop(doc! {"pattern": "^a+$"}, s("aaa")));
    assert!(!prop(doc! {"pattern": "^a+$"}, s("ab")));
    assert!(prop(doc! {"pattern": "^a+$"}, Bson::Int32(1)));
}

#[test]
fn array_keywords() {
    let a = |v: Bson| v;
    assert!(prop(
        doc! {"minItems": 1, "maxItems": 2},
        a(bson::bson!([1]))
    ));
    assert!(!prop(doc! {"minItems": 1}, a(bson::bson!([]))));
    assert!(!prop(doc! {"maxItems": 1}, a(bson::bson!([1, 2]))));
    assert!(prop(doc! {"uniqueItems": true}, a(bson::bson!([1, 2]))));
    assert!(!prop(doc! {"uniqueItems": true}, a(bson::bson!([1, 1.0]))));
    // Documents compare without regard to field order.
    assert!(!prop(
        doc! {"uniqueItems": true},
        a(bson::bson!([{"x": 1, "y": 2}, {"y": 2, "x": 1}]))
    ));
    assert!(prop(doc! {"uniqueItems": false}, a(bson::bson!([1, 1]))));
    assert!(prop(
        doc! {"items": {"type": "number"}},
        a(bson::bson!([1, 2.5]))
    ));
    assert!(!prop(
        doc! {"items": {"type": "number"}},
        a(bson::bson!([1, "x"]))
    ));
    let tuple = doc! {"items": [{"type": "number"}, {"type": "string"}]};
    assert!(prop(tuple.clone(), a(bson::bson!([1, "x", true]))));
    assert!(prop(tuple.clone(), a(bson::bson!([1]))));
    assert!(!prop(tuple.clone(), a(bson::bson!(["x"]))));
    let closed = doc! {"items": [{"type": "number"}], "additionalItems": false};
    assert!(prop(closed.clone(), a(bson::bson!([1]))));
    assert!(!prop(closed, a(bson::bson!([1, 2]))));
    let typed = doc! {"items": [{}], "additionalItems": {"type": "string"}};
    assert!(prop(typed.clone(), a(bson::bson!([1, "x"]))));
    assert!(!prop(typed, a(bson::bson!([1, 2]))));
    // additionalItems without a list of items imposes nothing.
    assert!(prop(
        doc! {"additionalItems": false},
        a(bson::bson!([1, 2]))
    ));
    assert!(prop(doc! {"minItems": 5}, Bson::Int32(1)));
}

#[test]
fn object_keywords() {
    assert!(m(doc! {"required": ["a", "b"]}, doc! {"a": 1, "b": null}));
    assert!(!m(doc! {"required": ["a", "b"]}, doc! {"a": 1}));
    let closed = doc! {"properties": {"_id": {}, "a": {}}, "additionalProperties": false};
    assert!(m(closed.clone(), doc! {"_id": 1, "a": 1}));
    assert!(!m(closed, doc! {"_id": 1, "a": 1, "b": 1}));
    // _id is a property like any other.
    assert!(!m(
        doc! {"properties": {"a": {}}, "additionalProperties": false},
        doc! {"_id": 1, "a": 1}
    ));
    let typed = doc! {"properties": {"a": {}}, "additionalProperties": {"type": "string"}};
    assert!(m(typed.clone(), doc! {"a": 1, "b": "x"}));
    assert!(!m(typed, doc! {"a": 1, "b": 2}));
    let patterns = doc! {
        "patternProperties": {"^s_": {"type": "string"}, "^n_": {"type": "number"}},
        "additionalProperties": false
    };
    assert!(m(patterns.clone(), doc! {"s_x": "v", "n_y": 2}));
    assert!(!m(patterns.clone(), doc! {"s_x": 1}));
    assert!(!m(patterns, doc! {"other": 1}));
    // A listed property must also satisfy matching patterns.
    assert!(!m(
        doc! {"properties": {"s_a": {}}, "patternProperties": {"^s_": {"type": "string"}}},
        doc! {"s_a": 1}
    ));
    assert!(m(
        doc! {"minProperties": 1, "maxProperties": 2},
        doc! {"a": 1}
    ));
    assert!(!m(doc! {"minProperties": 2}, doc! {"a": 1}));
    assert!(!m(doc! {"maxProperties": 1}, doc! {"a": 1, "b": 2}));
    let nested =
        doc! {"properties": {"a": {"required": ["x"], "properties": {"x": {"enum": [1]}}}}};
    assert!(m(nested.clone(), doc! {"a": {"x": 1}}));
    assert!(!m(nested.clone(), doc! {"a": {"x": 2}}));
    assert!(!m(nested.clone(), doc! {"a": {}}));
    // Object keywords do not constrain non-objects.
    assert!(m(nested, doc! {"a": 5}));
}

#[test]
fn dependencies() {
    let props = doc! {"dependencies": {"card": ["billing"]}};
    assert!(m(props.clone(), doc! {"card": 1, "billing": 2}));
    assert!(!m(props.clone(), doc! {"card": 1}));
    assert!(m(props, doc! {"billing": 2}));
    let schema = doc! {"dependencies": {"card": {"required": ["billing"]}}};
    assert!(m(schema.clone(), doc! {"card": 1, "billing": 2}));
    assert!(!m(schema.clone(), doc! {"card": 1}));
    assert!(m(schema, doc! {}));
}

#[test]
fn logical_keywords_and_enum() {
    let any = doc! {"properties": {"a": {"anyOf": [{"type": "string"}, {"minimum": 5}]}}};
    assert!(m(any.clone(), doc! {"a": "x"}));
    assert!(m(any.clone(), doc! {"a": 7}));
    assert!(!m(any, doc! {"a": 1}));
    let all = doc! {"properties": {"a": {"allOf": [{"minimum": 1}, {"maximum": 3}]}}};
    assert!(m(all.clone(), doc! {"a": 2}));
    assert!(!m(all, doc! {"a": 4}));
    let one = doc! {"properties": {"a": {"oneOf": [{"minimum": 1}, {"maximum": 3}]}}};
    assert!(m(one.clone(), doc! {"a": 0}));
    assert!(!m(one, doc! {"a": 2}));
    let not = doc! {"properties": {"a": {"not": {"type": "string"}}}};
    assert!(m(not.clone(), doc! {"a": 1}));
    assert!(!m(not, doc! {"a": "x"}));
    let e = doc! {"properties": {"a": {"enum": [1, "x", {"k": 1, "j": 2}]}}};
    assert!(m(e.clone(), doc! {"a": 1.0}));
    assert!(m(e.clone(), doc! {"a": "x"}));
    assert!(m(e.clone(), doc! {"a": {"j": 2, "k": 1}}));
    assert!(!m(e.clone(), doc! {"a": [1]}));
    assert!(!m(e, doc! {"a": 2}));
    // At the top level enum compares whole documents; non-objects never match.
    assert!(m(doc! {"enum": [{"a": 1}, 5]}, doc! {"a": 1}));
    assert!(!m(doc! {"enum": [5]}, doc! {"a": 1}));
}

#[test]
fn parse_errors() {
    let check = |schema: Document, code: ErrorCode, message: &str| {
        let e = err(schema.clone());
        assert_eq!((e.code(), e.message()), (code, message), "{schema}");
    };
    use ErrorCode::{BadValue, FailedToParse, TypeMismatch};
    check(
        doc! {"foo": 1},
        FailedToParse,
        "Unknown $jsonSchema keyword: foo",
    );
    check(
        doc! {"format": "email"},
        FailedToParse,
        "$jsonSchema keyword 'format' is not currently supported",
    );
    check(
        doc! {"properties": {"a": {"bogus": 1}}},
        FailedToParse,
        "Unknown $jsonSchema keyword: bogus",
    );
    check(
        doc! {"type": "integer"},
        FailedToParse,
        "$jsonSchema type 'integer' is not currently supported.",
    );
    check(
        doc! {"type": "int"},
        BadValue,
        "Unknown type name alias: int",
    );
    check(
        doc! {"bsonType": "foo"},
        BadValue,
        "Unknown type name alias: foo",
    );
    check(
        doc! {"bsonType": 2},
        TypeMismatch,
        "$jsonSchema keyword 'bsonType' must be either a string or an array of strings",
    );
    check(
        doc! {"bsonType": []},
        FailedToParse,
        "$jsonSchema keyword 'bsonType' must name at least one type",
    );
    check(
        doc! {"type": ["string", "string"]},
        FailedToParse,
        "$jsonSchema keyword 'type' has duplicate value: string",
    );
    check(
        doc! {"type": "string", "bsonType": "string"},
        FailedToParse,
        "Cannot specify both $jsonSchema keywords 'type' and 'bsonType'",
    );
    check(
        doc! {"title": 1},
        TypeMismatch,
        "$jsonSchema keyword 'title' must be of type string",
    );
    check(
        doc! {"minimum": "x"},
        TypeMismatch,
        "$jsonSchema keyword 'minimum' must be a number",
    );
    check(
        doc! {"exclusiveMaximum": true},
        FailedToParse,
        "$jsonSchema keyword 'maximum' must be a present if exclusiveMaximum is present",
    );
    check(
        doc! {"maximum": 1, "exclusiveMaximum": 1},
        TypeMismatch,
        "$jsonSchema keyword 'exclusiveMaximum' must be a boolean",
    );
    check(
        doc! {"multipleOf": 0},
        FailedToParse,
        "$jsonSchema keyword 'multipleOf' must have a positive value",
    );
    check(
        doc! {"pattern": 1},
        TypeMismatch,
        "$jsonSchema keyword 'pattern' must be a string",
    );
    assert_eq!(err(doc! {"minLength": -1}).code(), FailedToParse);
    assert_eq!(err(doc! {"maxItems": "x"}).code(), FailedToParse);
    check(
        doc! {"required": []},
        FailedToParse,
        "$jsonSchema keyword 'required' cannot be an empty array",
    );
    check(
        doc! {"required": ["a", "a"]},
        FailedToParse,
        "$jsonSchema keyword 'required' array cannot contain duplicate values",
    );
    check(
        doc! {"required": [1]},
        TypeMismatch,
        "$jsonSchema keyword 'required' must be an array of strings, but found an element of type: int",
    );
    check(
        doc! {"properties": {"a": 1}},
        TypeMismatch,
        "Nested schema for $jsonSchema property 'a' must be an object",
    );
    check(
        doc! {"additionalProperties": 1},
        TypeMismatch,
        "$jsonSchema keyword 'additionalProperties' must be an object or a boolean",
    );
    check(
        doc! {"items": 1},
        TypeMismatch,
        "$jsonSchema keyword 'items' must be an array or an object, not int",
    );
    check(
        doc! {"uniqueItems": 1},
        TypeMismatch,
        "$jsonSchema keyword 'uniqueItems' must be a boolean",
    );
    check(
        doc! {"allOf": []},
        BadValue,
        "$jsonSchema keyword 'allOf' must be a non-empty array",
    );
    check(
        doc! {"anyOf": {}},
        TypeMismatch,
        "$jsonSchema keyword 'anyOf' must be an array",
    );
    check(
        doc! {"not": []},
        TypeMismatch,
        "$jsonSchema keyword 'not' must be an object, but found an element of type array",
    );
    check(
        doc! {"enum": []},
        FailedToParse,
        "$jsonSchema keyword 'enum' cannot be an empty array",
    );
    check(
        doc! {"enum": [1, 1.0]},
        FailedToParse,
        "$jsonSchema keyword 'enum' array cannot contain duplicate values.",
    );
    check(
        doc! {"dependencies": {"a": []}},
        FailedToParse,
        "property 'a' in $jsonSchema keyword 'dependencies' cannot be an empty array",
    );
    check(
        doc! {"dependencies": {"a": 1}},
        TypeMismatch,
        "property 'a' in $jsonSchema keyword 'dependencies' must be either an object or an array",
    );
    assert_eq!(err(doc! {"encrypt": {}}).code(), ErrorCode::NotImplemented);
}
