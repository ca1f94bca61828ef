//! Tests of reading keys back, with and without type bits.

use super::*;
use crate::document::keystring::tests::{arb_bson, db_pointer};
use crate::document::keystring::{encode_key, encode_value};
use crate::document::type_bits::TypeBits;
use bson::doc;
use proptest::prelude::*;

fn round_trip(value: &Bson, descending: bool) -> Option<Bson> {
    let mut key = Vec::new();
    encode_value(value, descending, &mut key);
    match decode_key(&key, &[descending], None)
        .unwrap()
        .pop()
        .unwrap()
    {
        KeyValue::Value(v) => Some(v),
        _ => None,
    }
}

/// A key of `values` with its type bits, read back.
fn typed_round_trip(values: &[(&Bson, bool)]) -> Vec<KeyValue> {
    let key = encode_key(values.iter().map(|(v, d)| (*v, *d)));
    let mut bits = TypeBits::new();
    for (value, _) in values {
        bits.push_component(value, false);
    }
    let descending: Vec<bool> = values.iter().map(|(_, d)| *d).collect();
    decode_key(&key, &descending, Some(&bits.into_bytes())).expect("a well-formed key")
}

/// Identical values: same types, doubles bit for bit (-0.0 is not 0.0, NaN payloads
/// count), decimals byte for byte (exponents count).
fn identical(a: &Bson, b: &Bson) -> bool {
    match (a, b) {
        (Bson::Double(x), Bson::Double(y)) => x.to_bits() == y.to_bits(),
        (Bson::Decimal128(x), Bson::Decimal128(y)) => x.bytes() == y.bytes(),
        (Bson::Document(x), Bson::Document(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((kx, vx), (ky, vy))| kx == ky && identical(vx, vy))
        }
        (Bson::Array(x), Bson::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| identical(x, y))
        }
        (Bson::JavaScriptCodeWithScope(x), Bson::JavaScriptCodeWithScope(y)) => {
            x.code == y.code
                && identical(
                    &Bson::Document(x.scope.clone()),
                    &Bson::Document(y.scope.clone()),
                )
        }
        _ => a == b,
    }
}

fn dec(s: &str) -> Bson {
    Bson::Decimal128(s.parse().unwrap())
}

#[test]
fn exact_types_come_back_whole() {
    let values = vec![
        Bson::ObjectId(ObjectId::from_bytes([7; 12])),
        Bson::Boolean(true),
        Bson::DateTime(DateTime::from_millis(-5)),
        Bson::DateTime(DateTime::from_millis(1_700_000_000_000)),
        Bson::Timestamp(Timestamp {
            time: 3,
            increment: 9,
        }),
        Bson::MinKey,
        Bson::MaxKey,
        Bson::Undefined,
        Bson::Binary(Binary {
            subtype: BinarySubtype::Uuid,
            bytes: vec![0, 1, 0xff],
        }),
        Bson::RegularExpression(Regex {
            pattern: "a\0b".into(),
            options: "i".into(),
        }),
        Bson::JavaScriptCode("x".into()),
        Bson::Document(doc! {"d": DateTime::from_millis(1), "n": null, "e": {}}),
        Bson::Array(vec![Bson::Boolean(false), Bson::Document(doc! {})]),
    ];
    for value in values {
        for descending in [false, true] {
            assert_eq!(
                round_trip(&value, descending),
                Some(value.clone()),
                "{value:?}"
            );
        }
    }
}

#[test]
fn lossy_kinds_without_type_bits_are_unknown() {
    for value in [
        Bson::Int32(1),
        Bson::Double(-2.5),
        Bson::Int64(i64::MAX),
        Bson::String("s".into()),
        Bson::Symbol("s".into()),
        Bson::Null,
        Bson::Document(doc! {"a": 1}),
        Bson::Array(vec![Bson::String("x".into())]),
    ] {
        for descending in [false, true] {
            assert_eq!(round_trip(&value, descending), None, "{value:?}");
        }
    }
}

#[test]
fn every_number_and_string_comes_back_exactly_with_type_bits() {
    let values = vec![
        Bson::Int32(0),
        Bson::Int32(-1),
        Bson::Int32(i32::MIN),
        Bson::Int32(i32::MAX),
        Bson::Int64(0),
        Bson::Int64(1),
        Bson::Int64(i64::MIN),
        Bson::Int64(i64::MAX),
        Bson::Int64(9_007_199_254_740_993),
        Bson::Int64(-9_007_199_254_740_993),
        Bson::Double(0.0),
        Bson::Double(-0.0),
        Bson::Double(1.0),
        Bson::Double(-1.5),
        Bson::Double(0.1),
        Bson::Double(5e-324),
        Bson::Double(f64::MAX),
        Bson::Double(-1e300),
        Bson::Double(f64::INFINITY),
        Bson::Double(f64::NEG_INFINITY),
        Bson::Double(f64::NAN),
        Bson::Double(-f64::NAN),
        Bson::Double(f64::from_bits(0x7ff0_0000_0000_0001)),
        dec("1"),
        dec("1.00"),
        dec("0.001E+3"),
        dec("-0"),
        dec("0E-6176"),
        dec("0E+6111"),
        dec("-0.3"),
        dec("0.1000000000000000055511151231257828"),
        dec("9007199254740993.000"),
        dec("-1.000000000000000000000000000000001"),
        dec("9.999999999999999999999999999999999E+6144"),
        dec("NaN"),
        dec("-sNaN"),
        dec("Infinity"),
        dec("-Infinity"),
        Bson::String(String::new()),
        Bson::String("a\0b".into()),
        Bson::Symbol("a\0b".into()),
        Bson::Document(doc! {"a": 1, "b": [2.0, Bson::Int64(3), "s"], "c": {"d": -0.0}}),
        Bson::Array(vec![Bson::Symbol("x".into()), dec("2.50")]),
        Bson::JavaScriptCodeWithScope(JavaScriptCodeWithScope {
            code: "f".into(),
            scope: doc! {"x": Bson::Int64(4), "y": 4.0},
        }),
    ];
    for value in &values {
        for descending in [false, true] {
            // Alone, and between two other components whose records it must not disturb.
            let alone = typed_round_trip(&[(value, descending)]);
            assert_eq!(alone.len(), 1);
            let KeyValue::Value(back) = &alone[0] else {
                panic!("{value:?} is {alone:?}");
            };
            assert!(identical(back, value), "{value:?} vs {back:?}");
            let three = typed_round_trip(&[
                (&Bson::Int64(7), !descending),
                (value, descending),
                (&Bson::Symbol("z".into()), false),
            ]);
            assert_eq!(three[0], KeyValue::Value(Bson::Int64(7)));
            let KeyValue::Value(back) = &three[1] else {
                panic!("{value:?} is {three:?}");
            };
            assert!(identical(back, value), "{value:?} vs {back:?}");
            assert_eq!(three[2], KeyValue::Value(Bson::Symbol("z".into())));
        }
    }
}

#[test]
fn a_top_level_null_is_a_null_or_a_missing_field() {
    let key = encode_key([(&Bson::Null, false), (&Bson::Null, true)]);
    let mut bits = TypeBits::of_component(&Bson::Null, true);
    bits.append(&TypeBits::of_component(&Bson::Null, false));
    let decoded = decode_key(&key, &[false, true], Some(&bits.into_bytes())).unwrap();
    assert_eq!(
        decoded,
        vec![KeyValue::Missing, KeyValue::Value(Bson::Null)]
    );
    // Empty type bits: a present null.
    assert_eq!(
        decode_key(&key, &[false, true], Some(&[])).unwrap(),
        vec![KeyValue::Value(Bson::Null), KeyValue::Value(Bson::Null)]
    );
    assert_eq!(
        decode_key(&key, &[false, true], None).unwrap(),
        vec![KeyValue::Unknown, KeyValue::Unknown]
    );
}

#[test]
fn type_bits_that_do_not_fit_the_key_are_refused() {
    let key = encode_key([(&Bson::Int32(1), false)]);
    // Records left over.
    assert!(decode_key(&key, &[false], Some(&[type_bits::INT64, type_bits::INT64])).is_none());
    // A double record for an integer's key beyond any double: unknown, never a wrong value.
    let key = encode_key([(&Bson::Int64(9_007_199_254_740_993), false)]);
    assert_eq!(
        decode_key(&key, &[false], Some(&[type_bits::DOUBLE])).unwrap(),
        vec![KeyValue::Unknown]
    );
    // An int32 record for a value beyond int32.
    let key = encode_key([(&Bson::Int64(1 << 40), false)]);
    assert_eq!(
        decode_key(&key, &[false], Some(&[])).unwrap(),
        vec![KeyValue::Unknown]
    );
    // A value the bson crate cannot build stays unknown, and later records still line up.
    let pointer = db_pointer("db.c", [1; 12]);
    let doc = Bson::Document(doc! {"p": pointer, "n": Bson::Int64(2)});
    let decoded = typed_round_trip(&[(&doc, false), (&Bson::Double(2.0), false)]);
    assert_eq!(
        decoded,
        vec![KeyValue::Unknown, KeyValue::Value(Bson::Double(2.0))]
    );
}

#[test]
fn compound_keys_split_into_components() {
    let oid = Bson::ObjectId(ObjectId::from_bytes([1; 12]));
    let key = encode_key([
        (&Bson::Decimal128("1.5".parse().unwrap()), false),
        (&oid, true),
        (&Bson::String("z\0".into()), false),
        (&Bson::Boolean(true), true),
    ]);
    let decoded = decode_key(&key, &[false, true, false, true], None).unwrap();
    assert_eq!(
        decoded,
        vec![
            KeyValue::Unknown,
            KeyValue::Value(oid),
            KeyValue::Unknown,
            KeyValue::Value(Bson::Boolean(true))
        ]
    );
    assert!(decode_key(&key, &[false, true, false], None).is_none());
}

/// Whether the bson crate can build every value inside (no DBPointer, no old binary).
fn buildable(value: &Bson) -> bool {
    match value {
        Bson::DbPointer(_) => false,
        Bson::Binary(b) => b.subtype != BinarySubtype::BinaryOld,
        Bson::Document(d) => d.values().all(buildable),
        Bson::Array(items) => items.iter().all(buildable),
        Bson::JavaScriptCodeWithScope(c) => c.scope.values().all(buildable),
        _ => true,
    }
}

proptest! {
    /// Without type bits, whatever decodes decodes to a value with exactly the original's
    /// key; with them, every value the bson crate can build comes back byte for byte.
    #[test]
    fn decoded_values_are_the_originals(
        values in prop::collection::vec((arb_bson(), any::<bool>()), 1..4)
    ) {
        let key = encode_key(values.iter().map(|(v, d)| (v, *d)));
        let descending: Vec<bool> = values.iter().map(|(_, d)| *d).collect();
        let decoded = decode_key(&key, &descending, None).expect("a well-formed key");
        for ((value, desc), back) in values.iter().zip(&decoded) {
            if let KeyValue::Value(back) = back {
                let mut a = Vec::new();
                encode_value(value, *desc, &mut a);
                let mut b = Vec::new();
                encode_value(back, *desc, &mut b);
                prop_assert_eq!(a, b);
                prop_assert_eq!(back.element_type(), value.element_type());
            }
        }
        let typed: Vec<(&Bson, bool)> = values.iter().map(|(v, d)| (v, *d)).collect();
        for ((value, _), back) in values.iter().zip(typed_round_trip(&typed)) {
            match back {
                KeyValue::Value(back) => prop_assert!(identical(&back, value), "{:?} vs {:?}", value, back),
                other => prop_assert!(!buildable(value), "{:?} is {:?}", value, other),
            }
        }
    }
}

proptest! {
    /// A key splits into its components' own encodings, whatever their types and directions.
    #[test]
    fn keys_split_into_their_components(
        values in prop::collection::vec((arb_bson(), any::<bool>()), 1..4)
    ) {
        let key = encode_key(values.iter().map(|(v, d)| (v, *d)));
        let descending: Vec<bool> = values.iter().map(|(_, d)| *d).collect();
        let lengths = component_lengths(&key, &descending).expect("a well-formed key");
        let mut at = 0;
        for ((value, desc), len) in values.iter().zip(lengths) {
            let mut one = Vec::new();
            encode_value(value, *desc, &mut one);
            prop_assert_eq!(&key[at..at + len], one.as_slice());
            at += len;
        }
        prop_assert!(component_lengths(&key, &descending[1..]).is_none());
    }
}
