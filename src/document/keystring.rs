//! Order-preserving key encoding: byte strings whose memcmp order is MongoDB's value order, used
//! for index keys (SQLite compares BLOBs with memcmp), chunk bounds and shard keys.
//!
//! # Design
//!
//! Every component is self-delimiting: no component's encoding is a proper prefix of another's.
//! That one property carries the rest. Concatenated components compare lexicographically (the
//! first differing byte lies inside the first differing component), and inverting every byte of
//! a component reverses its order (two distinct encodings differ at a byte both contain, and
//! inversion flips that byte's comparison), which is all `descending` does. A key made of fewer
//! components sorts before a longer key it begins.
//!
//! A component is a type tag (increasing with [`canonical_rank`], so types order first) and a
//! body. Equal values must produce identical bytes (the `_id` unique index is a byte-equality
//! check), so every body is a canonical form of the value, never of its BSON type:
//!
//! * Strings, symbols, code, regex parts, field names: the bytes with `00` escaped as `00 FF`,
//!   then `00 00`. The terminator sorts below every byte and every escape, so a string sorts
//!   before its extensions, and embedded NULs order as the byte 0 they are.
//! * Documents and arrays: per element `01`, the element's type tag, (for documents) the field
//!   name, the body; then `00`. That is `compare_documents`/`compare_arrays` verbatim: type
//!   rank, name, value, and a prefix before its extensions.
//! * Lengths (binary data, DBPointer namespaces) are written as a byte count then big-endian
//!   bytes, so they order by value and fix where the payload ends.
//!
//! # Numbers
//!
//! int64, double and decimal128 must order exactly by value across types, and equal values
//! (1, 1.0, NumberLong(1), Decimal("1.00")) must encode alike. A common decimal-digit form
//! would be exact but costly: a typical fractional double has ~50 significant digits, and tiny
//! ones over 700. A common binary form cannot hold 0.1 (decimal) exactly. So a number is
//! encoded by the double that bounds it from below plus, only when that double is not the
//! value itself, an exact decimal tail:
//!
//! * a class byte: NaN < negative < zero < positive (-0.0, 0 and every zero decimal are zero;
//!   ±Infinity are the largest magnitudes of their sign);
//! * the magnitude `|x|` as `F` = the largest double `<= |x|`, as 8 big-endian bytes of its bit
//!   pattern (for non-negative doubles the bit pattern orders like the value, Infinity last);
//! * `00` if `|x| == F` (every double, every integer below 2^53, decimals equal to a double),
//!   or `01` then the exact value of `|x|` in decimal: the exponent of its leading digit as a
//!   biased big-endian u16, then its significant digits without trailing zeros, one per nibble
//!   as digit+1, closed by a zero nibble.
//!
//! Two magnitudes with different floors order by the floors. With the same floor `F`, an exact
//! one is `F` itself and sorts first (`00` < `01`); two inexact ones both lie strictly between
//! `F` and the next double and order by their exact decimal tails. Only int64 above 2^53 and
//! decimals that are not doubles carry a tail (at most 34 digits), so a double costs 11 bytes.
//! Negative numbers write the same magnitude bytes inverted, so larger magnitudes sort lower.

use super::numeric::{self, DecimalParts, Number};
use super::order::{binary_payload, canonical_rank, db_pointer_parts};
use crate::depth::recurse;
use bson::{Bson, Document};

/// Appends one key component; `descending` reverses this component's order only.
pub fn encode_value(value: &Bson, descending: bool, out: &mut Vec<u8>) {
    let start = out.len();
    write_value(value, out);
    if descending {
        invert(&mut out[start..]);
    }
}

/// A compound key: each value with whether its component is descending.
pub fn encode_key<'a>(parts: impl IntoIterator<Item = (&'a Bson, bool)>) -> Vec<u8> {
    let mut out = Vec::new();
    for (value, descending) in parts {
        encode_value(value, descending, &mut out);
    }
    out
}

/// A single ascending component.
pub fn encode_one(value: &Bson) -> Vec<u8> {
    let mut out = Vec::new();
    encode_value(value, false, &mut out);
    out
}

const ELEMENT: u8 = 0x01;
const END: u8 = 0x00;

const NUMBER_NAN: u8 = 0x01;
const NUMBER_NEGATIVE: u8 = 0x02;
const NUMBER_ZERO: u8 = 0x03;
const NUMBER_POSITIVE: u8 = 0x04;

const MAGNITUDE_EXACT: u8 = 0x00;
const MAGNITUDE_TAIL: u8 = 0x01;

fn invert(bytes: &mut [u8]) {
    for b in bytes {
        *b = !*b;
    }
}

fn type_tag(value: &Bson) -> u8 {
    // Gaps between tags leave room for types MongoDB may add between existing ranks.
    0x10 + canonical_rank(value) * 8
}

fn write_value(value: &Bson, out: &mut Vec<u8>) {
    out.push(type_tag(value));
    write_body(value, out);
}

fn write_body(value: &Bson, out: &mut Vec<u8>) {
    match value {
        Bson::MinKey | Bson::Undefined | Bson::Null | Bson::MaxKey => {}
        Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_) => {
            if let Some(n) = Number::from_bson(value) {
                write_number(n, out);
            }
        }
        Bson::String(s) | Bson::Symbol(s) | Bson::JavaScriptCode(s) => {
            write_bytes(s.as_bytes(), out)
        }
        Bson::Document(d) => recurse(|| write_document(d, out)),
        Bson::Array(items) => recurse(|| {
            for item in items {
                out.push(ELEMENT);
                write_value(item, out);
            }
            out.push(END);
        }),
        Bson::Binary(b) => {
            let payload = binary_payload(b);
            write_length(payload.len(), out);
            out.push(u8::from(b.subtype));
            out.extend_from_slice(&payload);
        }
        Bson::ObjectId(id) => out.extend_from_slice(&id.bytes()),
        Bson::Boolean(b) => out.push(u8::from(*b)),
        Bson::DateTime(d) => out.extend_from_slice(&order_i64(d.timestamp_millis())),
        Bson::Timestamp(t) => {
            out.extend_from_slice(&t.time.to_be_bytes());
            out.extend_from_slice(&t.increment.to_be_bytes());
        }
        Bson::RegularExpression(r) => {
            write_bytes(r.pattern.as_bytes(), out);
            write_bytes(r.options.as_bytes(), out);
        }
        Bson::DbPointer(_) => {
            let (namespace, id) = db_pointer_parts(value).unwrap_or_default();
            write_length(namespace.len(), out);
            out.extend_from_slice(&namespace);
            out.extend_from_slice(&id);
        }
        Bson::JavaScriptCodeWithScope(c) => {
            write_bytes(c.code.as_bytes(), out);
            recurse(|| write_document(&c.scope, out));
        }
    }
}

fn write_document(doc: &Document, out: &mut Vec<u8>) {
    for (name, value) in doc {
        out.push(ELEMENT);
        out.push(type_tag(value));
        write_bytes(name.as_bytes(), out);
        write_body(value, out);
    }
    out.push(END);
}

fn write_bytes(bytes: &[u8], out: &mut Vec<u8>) {
    for &b in bytes {
        out.push(b);
        if b == 0 {
            out.push(0xff);
        }
    }
    out.extend_from_slice(&[0, 0]);
}

/// How many bytes follow, then the length big-endian without leading zero bytes.
fn write_length(len: usize, out: &mut Vec<u8>) {
    let bytes = (len as u64).to_be_bytes();
    let skip = bytes.iter().take_while(|&&b| b == 0).count();
    out.push((bytes.len() - skip) as u8);
    out.extend_from_slice(&bytes[skip..]);
}

/// Signed integers order like unsigned ones once the sign bit is flipped.
fn order_i64(v: i64) -> [u8; 8] {
    ((v as u64) ^ (1 << 63)).to_be_bytes()
}

fn write_number(n: Number, out: &mut Vec<u8>) {
    let Some((floor, exact)) = numeric::floor_f64_of_abs(n) else {
        out.push(NUMBER_NAN);
        return;
    };
    if exact && floor == 0.0 {
        out.push(NUMBER_ZERO);
        return;
    }
    let negative = is_negative(n);
    out.push(if negative {
        NUMBER_NEGATIVE
    } else {
        NUMBER_POSITIVE
    });
    let start = out.len();
    out.extend_from_slice(&floor.to_bits().to_be_bytes());
    if exact {
        out.push(MAGNITUDE_EXACT);
    } else {
        out.push(MAGNITUDE_TAIL);
        write_decimal_tail(n, out);
    }
    if negative {
        invert(&mut out[start..]);
    }
}

fn is_negative(n: Number) -> bool {
    match n {
        Number::Int(v) => v < 0,
        Number::Double(d) => d < 0.0,
        Number::Decimal(d) => match DecimalParts::from_decimal128(d) {
            DecimalParts::Infinity { negative } | DecimalParts::Finite { negative, .. } => negative,
            DecimalParts::NaN { .. } => false,
        },
    }
}

/// The exact decimal value of `|n|`. Only integers and decimals reach here: every double is
/// exactly its own floor.
fn write_decimal_tail(n: Number, out: &mut Vec<u8>) {
    let (mut coefficient, mut exponent) = match n {
        Number::Int(v) => (u128::from(v.unsigned_abs()), 0i32),
        Number::Decimal(d) => match DecimalParts::from_decimal128(d) {
            DecimalParts::Finite {
                coefficient,
                exponent,
                ..
            } => (coefficient, exponent),
            _ => (0, 0),
        },
        Number::Double(_) => (0, 0),
    };
    if coefficient == 0 {
        return;
    }
    while coefficient % 10 == 0 {
        coefficient /= 10;
        exponent += 1;
    }
    let digits = coefficient.to_string();
    // A decimal's leading-digit exponent lies in [-6176, 6144], well inside i16.
    let leading = exponent + digits.len() as i32 - 1;
    let biased = (leading.clamp(i32::from(i16::MIN), i32::from(i16::MAX)) as i16 as u16) ^ 0x8000;
    out.extend_from_slice(&biased.to_be_bytes());
    let mut nibbles = digits
        .bytes()
        .map(|d| d - b'0' + 1)
        .chain(std::iter::once(0));
    while let Some(high) = nibbles.next() {
        let low = nibbles.next().unwrap_or(0);
        out.push((high << 4) | low);
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::document::numeric::tests::{arb_clustered_number, arb_number, dec, dec_parts};
    use crate::document::order::compare_values;
    use bson::{
        Binary, JavaScriptCodeWithScope, Regex, Timestamp, doc, oid::ObjectId, spec::BinarySubtype,
    };
    use proptest::prelude::*;
    use std::cmp::Ordering;

    /// A DBPointer, built by parsing its BSON encoding (the bson crate has no constructor).
    pub(crate) fn db_pointer(namespace: &str, id: [u8; 12]) -> Bson {
        let mut body = vec![0x0c, b'p', 0];
        body.extend_from_slice(&(namespace.len() as i32 + 1).to_le_bytes());
        body.extend_from_slice(namespace.as_bytes());
        body.push(0);
        body.extend_from_slice(&id);
        body.push(0);
        let mut encoded = (body.len() as i32 + 4).to_le_bytes().to_vec();
        encoded.extend_from_slice(&body);
        let parsed = Document::from_reader(&encoded[..]).expect("valid DBPointer encoding");
        parsed.get("p").cloned().expect("field p")
    }

    fn number_bson(n: Number, narrow: bool) -> Bson {
        match n {
            Number::Int(v) if narrow => i32::try_from(v).map(Bson::Int32).unwrap_or(Bson::Int64(v)),
            Number::Int(v) => Bson::Int64(v),
            Number::Double(v) => Bson::Double(v),
            Number::Decimal(v) => Bson::Decimal128(v),
        }
    }

    fn small_string() -> impl Strategy<Value = String> {
        // Few pieces, so that equal strings and strings extending one another come up often.
        prop::collection::vec(prop::sample::select(vec!["a", "\0", "\u{1}", "é"]), 0..4)
            .prop_map(|parts| parts.concat())
    }

    fn arb_leaf() -> impl Strategy<Value = Bson> {
        let binary = (
            prop::sample::select(vec![0u8, 2, 4, 5, 0x80]),
            prop::collection::vec(0u8..3, 0..6),
        )
            .prop_map(|(subtype, bytes)| {
                Bson::Binary(Binary {
                    subtype: BinarySubtype::from(subtype),
                    bytes,
                })
            });
        let object_id = prop::collection::vec(prop::sample::select(vec![0u8, 1, 0xff]), 12)
            .prop_map(|b| Bson::ObjectId(ObjectId::from_bytes(b.try_into().unwrap_or([0; 12]))));
        let date = prop_oneof![
            prop::sample::select(vec![i64::MIN, i64::MAX, -1, 0, 1]),
            -3i64..3,
            any::<i64>()
        ]
        .prop_map(|ms| Bson::DateTime(bson::DateTime::from_millis(ms)));
        let timestamp = (
            prop::sample::select(vec![0u32, 1, u32::MAX]),
            prop::sample::select(vec![0u32, 1, u32::MAX]),
        )
            .prop_map(|(time, increment)| Bson::Timestamp(Timestamp { time, increment }));
        let regex = (
            prop::sample::select(vec!["", "a", "a\0", "ab", "b"]),
            prop::sample::select(vec!["", "i", "im", "x"]),
        )
            .prop_map(|(pattern, options)| {
                Bson::RegularExpression(Regex {
                    pattern: pattern.to_string(),
                    options: options.to_string(),
                })
            });
        let pointer = (
            prop::sample::select(vec!["", "a", "b", "ab", "db.c"]),
            prop::sample::select(vec![0u8, 1, 0xff]),
        )
            .prop_map(|(ns, fill)| db_pointer(ns, [fill; 12]));
        let code_with_scope = (
            small_string(),
            prop::sample::select(vec![
                doc! {},
                doc! {"a": 1},
                doc! {"a": 1.0},
                doc! {"a": "x"},
            ]),
        )
            .prop_map(|(code, scope)| {
                Bson::JavaScriptCodeWithScope(JavaScriptCodeWithScope { code, scope })
            });
        prop_oneof![
            1 => prop::sample::select(vec![Bson::MinKey, Bson::MaxKey, Bson::Null, Bson::Undefined]),
            4 => (arb_number(), any::<bool>()).prop_map(|(n, narrow)| number_bson(n, narrow)),
            4 => (arb_clustered_number(), any::<bool>()).prop_map(|(n, narrow)| number_bson(n, narrow)),
            3 => small_string().prop_map(Bson::String),
            1 => small_string().prop_map(Bson::Symbol),
            1 => small_string().prop_map(Bson::JavaScriptCode),
            1 => binary,
            1 => object_id,
            1 => any::<bool>().prop_map(Bson::Boolean),
            1 => date,
            1 => timestamp,
            1 => regex,
            1 => pointer,
            1 => code_with_scope,
        ]
    }

    /// Values of every type, nested up to depth 3, from small domains so that equal values and
    /// shared prefixes come up often.
    pub(crate) fn arb_bson() -> impl Strategy<Value = Bson> {
        arb_leaf().prop_recursive(3, 24, 4, |inner| {
            let field = prop::sample::select(vec!["a", "b", "", "ab"]);
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Bson::Array),
                prop::collection::vec((field, inner), 0..4).prop_map(|fields| {
                    let mut d = Document::new();
                    for (name, value) in fields {
                        d.insert(name, value);
                    }
                    Bson::Document(d)
                }),
            ]
        })
    }

    fn assert_strictly_increasing(values: &[Bson]) {
        for w in values.windows(2) {
            assert_eq!(
                compare_values(&w[0], &w[1]),
                Ordering::Less,
                "{:?} < {:?}",
                w[0],
                w[1]
            );
            assert!(
                encode_one(&w[0]) < encode_one(&w[1]),
                "encoding of {:?} < {:?}",
                w[0],
                w[1]
            );
            let mut d0 = Vec::new();
            let mut d1 = Vec::new();
            encode_value(&w[0], true, &mut d0);
            encode_value(&w[1], true, &mut d1);
            assert!(d0 > d1, "descending encoding of {:?} > {:?}", w[0], w[1]);
        }
    }

    #[test]
    fn numbers_order_exactly_across_types() {
        assert_strictly_increasing(&[
            Bson::Double(f64::NAN),
            Bson::Double(f64::NEG_INFINITY),
            Bson::Decimal128(dec("-1E+6144")),
            Bson::Double(f64::MIN),
            Bson::Int64(i64::MIN),
            Bson::Decimal128(dec("-9223372036854775807.5")),
            Bson::Int64(i64::MIN + 1),
            Bson::Int64(-9_007_199_254_740_993),
            Bson::Double(-9_007_199_254_740_992.0),
            Bson::Double(-1.5),
            Bson::Decimal128(dec("-1.0000000000000000000000000000001")),
            Bson::Int32(-1),
            Bson::Decimal128(dec("-0.3")),
            Bson::Double(-0.3),
            Bson::Decimal128(dec("-1E-6176")),
            Bson::Double(0.0),
            Bson::Decimal128(dec("1E-6176")),
            Bson::Double(5e-324),
            Bson::Double(0.1),
            Bson::Decimal128(dec("0.1000000000000000055511151231257828")),
            Bson::Decimal128(dec("0.3")),
            Bson::Int32(1),
            Bson::Decimal128(dec("1.000000000000000000000000000000001")),
            Bson::Double(1.0000000000000002),
            Bson::Double(9_007_199_254_740_992.0),
            Bson::Int64(9_007_199_254_740_993),
            Bson::Decimal128(dec("9007199254740993.5")),
            Bson::Double(9_007_199_254_740_994.0),
            Bson::Int64(i64::MAX),
            Bson::Double(9_223_372_036_854_775_808.0),
            Bson::Double(f64::MAX),
            Bson::Decimal128(dec("1E+309")),
            Bson::Decimal128(dec("9.999999999999999999999999999999999E+6144")),
            Bson::Double(f64::INFINITY),
        ]);
    }

    #[test]
    fn equal_numbers_encode_identically() {
        let groups: Vec<Vec<Bson>> = vec![
            vec![
                Bson::Int32(1),
                Bson::Int64(1),
                Bson::Double(1.0),
                Bson::Decimal128(dec("1")),
                Bson::Decimal128(dec("1.0")),
                Bson::Decimal128(dec("1.00")),
                Bson::Decimal128(dec("0.001E+3")),
            ],
            vec![
                Bson::Int32(0),
                Bson::Double(0.0),
                Bson::Double(-0.0),
                Bson::Decimal128(dec("-0")),
                Bson::Decimal128(dec("0E-6176")),
                Bson::Decimal128(dec("0E+6111")),
            ],
            vec![
                Bson::Double(f64::NAN),
                Bson::Double(-f64::NAN),
                Bson::Decimal128(dec("NaN")),
                Bson::Decimal128(dec("-sNaN")),
            ],
            vec![
                Bson::Double(f64::INFINITY),
                Bson::Decimal128(dec("Infinity")),
            ],
            vec![
                Bson::Double(f64::NEG_INFINITY),
                Bson::Decimal128(dec("-Infinity")),
            ],
            vec![
                Bson::Int64(i64::MIN),
                Bson::Double(-9_223_372_036_854_775_808.0),
                Bson::Decimal128(dec("-9223372036854775808")),
            ],
            vec![
                Bson::Int64(9_007_199_254_740_993),
                Bson::Decimal128(dec("9007199254740993.000")),
            ],
            vec![
                Bson::Double(0.5),
                Bson::Decimal128(dec("5E-1")),
                Bson::Decimal128(dec("0.50")),
            ],
            vec![
                Bson::Double(2f64.powi(100)),
                Bson::Decimal128(dec("1267650600228229401496703205376")),
            ],
            vec![
                Bson::Double(-(2f64.powi(-20))),
                Bson::Decimal128(dec_parts(true, 95_367_431_640_625, -20)),
            ],
            vec![Bson::String("x".into()), Bson::Symbol("x".into())],
            vec![
                Bson::Document(doc! {"a": 1, "b": [2.0]}),
                Bson::Document(doc! {"a": 1.0, "b": [Bson::Int64(2)]}),
            ],
        ];
        for group in groups {
            let first = encode_one(&group[0]);
            for v in &group {
                assert_eq!(
                    compare_values(&group[0], v),
                    Ordering::Equal,
                    "{:?} == {:?}",
                    group[0],
                    v
                );
                assert_eq!(encode_one(v), first, "{v:?} encodes like {:?}", group[0]);
            }
        }
    }

    #[test]
    fn types_and_values_order_like_compare_values() {
        assert_strictly_increasing(&[
            Bson::MinKey,
            Bson::Undefined,
            Bson::Null,
            Bson::Double(f64::NAN),
            Bson::Int32(5),
            Bson::String("".into()),
            Bson::String("\0".into()),
            Bson::String("\0\0".into()),
            Bson::String("\0a".into()),
            Bson::Symbol("a".into()),
            Bson::String("a\0".into()),
            Bson::String("a\u{1}".into()),
            Bson::String("ab".into()),
            Bson::String("é".into()),
            Bson::Document(doc! {}),
            Bson::Document(doc! {"a": Bson::MinKey}),
            Bson::Document(doc! {"a": 1}),
            Bson::Document(doc! {"a": 1, "": 1}),
            Bson::Document(doc! {"a": 2}),
            Bson::Document(doc! {"b": 1}),
            Bson::Document(doc! {"a": "a"}),
            Bson::Document(doc! {"a": {}}),
            Bson::Array(vec![]),
            Bson::Array(vec![Bson::Null]),
            Bson::Array(vec![Bson::Int32(1)]),
            Bson::Array(vec![Bson::Int32(1), Bson::MinKey]),
            Bson::Array(vec![Bson::Int32(2)]),
            Bson::Array(vec![Bson::String("".into())]),
            Bson::Binary(Binary {
                subtype: BinarySubtype::Generic,
                bytes: vec![9, 9],
            }),
            Bson::Binary(Binary {
                subtype: BinarySubtype::Uuid,
                bytes: vec![0, 0],
            }),
            Bson::Binary(Binary {
                subtype: BinarySubtype::Generic,
                bytes: vec![0, 0, 0],
            }),
            Bson::Binary(Binary {
                subtype: BinarySubtype::Generic,
                bytes: vec![0; 4],
            }),
            // Old binary carries a 4-byte inner length: MongoDB sees 4 + 0 bytes here.
            Bson::Binary(Binary {
                subtype: BinarySubtype::BinaryOld,
                bytes: vec![],
            }),
            Bson::Binary(Binary {
                subtype: BinarySubtype::Generic,
                bytes: vec![0; 300],
            }),
            Bson::ObjectId(ObjectId::from_bytes([0; 12])),
            Bson::ObjectId(ObjectId::from_bytes([0xff; 12])),
            Bson::Boolean(false),
            Bson::Boolean(true),
            Bson::DateTime(bson::DateTime::from_millis(i64::MIN)),
            Bson::DateTime(bson::DateTime::from_millis(-1)),
            Bson::DateTime(bson::DateTime::from_millis(0)),
            Bson::DateTime(bson::DateTime::from_millis(i64::MAX)),
            Bson::Timestamp(Timestamp {
                time: 0,
                increment: u32::MAX,
            }),
            Bson::Timestamp(Timestamp {
                time: 1,
                increment: 0,
            }),
            Bson::Timestamp(Timestamp {
                time: u32::MAX,
                increment: 0,
            }),
            Bson::RegularExpression(Regex {
                pattern: "a".into(),
                options: "".into(),
            }),
            Bson::RegularExpression(Regex {
                pattern: "a".into(),
                options: "i".into(),
            }),
            Bson::RegularExpression(Regex {
                pattern: "ab".into(),
                options: "".into(),
            }),
            db_pointer("a", [0; 12]),
            db_pointer("a", [1; 12]),
            db_pointer("b", [0; 12]),
            db_pointer("ab", [0; 12]),
            db_pointer(&"x".repeat(300), [0; 12]),
            Bson::JavaScriptCode("".into()),
            Bson::JavaScriptCode("f".into()),
            Bson::JavaScriptCodeWithScope(JavaScriptCodeWithScope {
                code: "".into(),
                scope: doc! {"z": 1},
            }),
            Bson::JavaScriptCodeWithScope(JavaScriptCodeWithScope {
                code: "f".into(),
                scope: doc! {},
            }),
            Bson::JavaScriptCodeWithScope(JavaScriptCodeWithScope {
                code: "f".into(),
                scope: doc! {"a": 1},
            }),
            Bson::MaxKey,
        ]);
    }

    #[test]
    fn compound_keys_respect_component_boundaries() {
        let key = |a: &str, b: i32, desc: bool| {
            encode_key([(&Bson::String(a.into()), desc), (&Bson::Int32(b), false)])
        };
        // "a" then anything sorts before "a\0" then anything, however large the second part.
        assert!(key("a", i32::MAX, false) < key("a\0", i32::MIN, false));
        assert!(key("a", 5, false) < key("ab", 0, false));
        assert!(key("a", i32::MAX, true) > key("a\0", i32::MIN, true));
        assert!(key("a", 5, true) > key("ab", 0, true));
        // A key that begins another sorts first.
        let short = encode_key([(&Bson::Int32(1), false)]);
        assert!(short < encode_key([(&Bson::Int32(1), false), (&Bson::MinKey, false)]));
        assert!(
            encode_key([(&Bson::Int32(1), true)])
                < encode_key([(&Bson::Int32(1), true), (&Bson::MinKey, true)])
        );
    }

    fn desc(value: &Bson) -> Vec<u8> {
        let mut out = Vec::new();
        encode_value(value, true, &mut out);
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1500))]

        #[test]
        fn encoding_orders_like_compare_values(a in arb_bson(), b in arb_bson()) {
            let expected = compare_values(&a, &b);
            // Bytewise Equal means identical bytes: equal values encode identically.
            prop_assert_eq!(encode_one(&a).cmp(&encode_one(&b)), expected, "{:?} vs {:?}", a, b);
            prop_assert_eq!(desc(&a).cmp(&desc(&b)), expected.reverse(), "descending {:?} vs {:?}", a, b);
        }

        #[test]
        fn strings_order_before_their_extensions(s in small_string(), t in small_string(), desc_first in any::<bool>()) {
            // A component's last bytes meet whatever follows it, so a string and its extensions
            // (embedded NULs included) must order in both directions and before any next part.
            let (a, b) = (Bson::String(s.clone()), Bson::String(format!("{s}{t}")));
            let expected = compare_values(&a, &b);
            prop_assert_eq!(encode_one(&a).cmp(&encode_one(&b)), expected);
            prop_assert_eq!(desc(&a).cmp(&desc(&b)), expected.reverse());
            let next = Bson::MaxKey;
            let ka = encode_key([(&a, desc_first), (&next, false)]);
            let kb = encode_key([(&b, desc_first), (&Bson::MinKey, false)]);
            let expected = if desc_first { expected.reverse() } else { expected };
            prop_assert_eq!(ka.cmp(&kb), expected.then(Ordering::Greater));
        }

        #[test]
        fn compound_keys_order_lexicographically(
            a in prop::collection::vec(arb_bson(), 1..4),
            b in prop::collection::vec(arb_bson(), 1..4),
            directions in prop::collection::vec(any::<bool>(), 3),
        ) {
            let ka = encode_key(a.iter().zip(directions.iter().copied()));
            let kb = encode_key(b.iter().zip(directions.iter().copied()));
            let mut expected = Ordering::Equal;
            for ((x, y), d) in a.iter().zip(b.iter()).zip(directions.iter()) {
                let ord = compare_values(x, y);
                let ord = if *d { ord.reverse() } else { ord };
                if ord != Ordering::Equal {
                    expected = ord;
                    break;
                }
            }
            if expected == Ordering::Equal {
                expected = a.len().cmp(&b.len());
            }
            prop_assert_eq!(ka.cmp(&kb), expected, "{:?} vs {:?} ({:?})", a, b, directions);
        }

        #[test]
        fn compare_values_is_a_total_order(a in arb_bson(), b in arb_bson(), c in arb_bson()) {
            prop_assert_eq!(compare_values(&a, &a), Ordering::Equal);
            prop_assert_eq!(compare_values(&a, &b), compare_values(&b, &a).reverse());
            let (ab, bc, ac) = (compare_values(&a, &b), compare_values(&b, &c), compare_values(&a, &c));
            if ab != Ordering::Greater && bc != Ordering::Greater {
                prop_assert_ne!(ac, Ordering::Greater, "{:?} <= {:?} <= {:?}", a, b, c);
                if ab == Ordering::Equal && bc == Ordering::Equal {
                    prop_assert_eq!(ac, Ordering::Equal);
                }
                if ab == Ordering::Less || bc == Ordering::Less {
                    prop_assert_eq!(ac, Ordering::Less);
                }
            }
        }
    }
}

/// The smallest byte string greater than every string that starts with `prefix` (`None` when
/// no such string exists: the prefix is all 0xFF). Half-open key intervals end here.
pub fn successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut out = prefix.to_vec();
    while let Some(last) = out.pop() {
        if last != 0xFF {
            out.push(last + 1);
            return Some(out);
        }
    }
    None
}

#[cfg(test)]
mod successor_tests {
    use super::*;

    #[test]
    fn successor_bounds_every_extension() {
        assert_eq!(successor(&[1, 2]), Some(vec![1, 3]));
        assert_eq!(successor(&[1, 0xFF]), Some(vec![2]));
        assert_eq!(successor(&[0xFF, 0xFF]), None);
        let key = encode_one(&Bson::Int32(5));
        let mut longer = key.clone();
        longer.extend(encode_one(&Bson::String("zzz".into())));
        assert!(longer > key && longer < successor(&key).unwrap());
    }
}
