//! MongoDB's total order over BSON values (the order of sort, `$gt`/`$lt`, chunk bounds and
//! index keys): first by canonical type, then by value within the type.

use super::collation::Collation;
use super::numeric::{self, Number};
use crate::depth::recurse;
use bson::{Binary, Bson, Document, spec::BinarySubtype};
use std::borrow::Cow;
use std::cmp::Ordering;

/// The canonical type rank MongoDB compares first; types with equal rank compare by value
/// (all numbers share one rank, as do string and symbol).
pub fn canonical_rank(value: &Bson) -> u8 {
    match value {
        Bson::MinKey => 0,
        Bson::Undefined => 1,
        Bson::Null => 2,
        Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_) => 3,
        Bson::String(_) | Bson::Symbol(_) => 4,
        Bson::Document(_) => 5,
        Bson::Array(_) => 6,
        Bson::Binary(_) => 7,
        Bson::ObjectId(_) => 8,
        Bson::Boolean(_) => 9,
        Bson::DateTime(_) => 10,
        Bson::Timestamp(_) => 11,
        Bson::RegularExpression(_) => 12,
        Bson::DbPointer(_) => 13,
        Bson::JavaScriptCode(_) => 14,
        Bson::JavaScriptCodeWithScope(_) => 15,
        Bson::MaxKey => 16,
    }
}

/// Compares two values in MongoDB's order.
pub fn compare_values(a: &Bson, b: &Bson) -> Ordering {
    compare_collated(a, b, None)
}

/// Compares two values in MongoDB's order with strings (and symbols) anywhere in them, inside
/// arrays and embedded documents too, compared by `collation` (`None`: the simple collation,
/// bytewise). Field names always compare bytewise, as in MongoDB.
pub fn compare_collated(a: &Bson, b: &Bson, collation: Option<&Collation>) -> Ordering {
    let by_rank = canonical_rank(a).cmp(&canonical_rank(b));
    if by_rank != Ordering::Equal {
        return by_rank;
    }
    match (a, b) {
        (Bson::String(x) | Bson::Symbol(x), Bson::String(y) | Bson::Symbol(y)) => match collation {
            Some(collation) => collation.compare(x, y),
            None => x.as_bytes().cmp(y.as_bytes()),
        },
        (Bson::Document(x), Bson::Document(y)) => recurse(|| documents(x, y, collation)),
        (Bson::Array(x), Bson::Array(y)) => recurse(|| compare_arrays(x, y, collation)),
        (Bson::Binary(x), Bson::Binary(y)) => {
            let (px, py) = (binary_payload(x), binary_payload(y));
            px.len()
                .cmp(&py.len())
                .then_with(|| u8::from(x.subtype).cmp(&u8::from(y.subtype)))
                .then_with(|| px.cmp(&py))
        }
        (Bson::ObjectId(x), Bson::ObjectId(y)) => x.bytes().cmp(&y.bytes()),
        (Bson::Boolean(x), Bson::Boolean(y)) => x.cmp(y),
        (Bson::DateTime(x), Bson::DateTime(y)) => x.timestamp_millis().cmp(&y.timestamp_millis()),
        (Bson::Timestamp(x), Bson::Timestamp(y)) => {
            (x.time, x.increment).cmp(&(y.time, y.increment))
        }
        (Bson::RegularExpression(x), Bson::RegularExpression(y)) => x
            .pattern
            .as_bytes()
            .cmp(y.pattern.as_bytes())
            .then_with(|| x.options.as_bytes().cmp(y.options.as_bytes())),
        (Bson::DbPointer(_), Bson::DbPointer(_)) => {
            // MongoDB compares the value sizes, then the bytes: namespace length, namespace, id.
            let (nx, ix) = db_pointer_parts(a).unwrap_or_default();
            let (ny, iy) = db_pointer_parts(b).unwrap_or_default();
            nx.len()
                .cmp(&ny.len())
                .then_with(|| nx.cmp(&ny))
                .then_with(|| ix.cmp(&iy))
        }
        (Bson::JavaScriptCode(x), Bson::JavaScriptCode(y)) => x.as_bytes().cmp(y.as_bytes()),
        (Bson::JavaScriptCodeWithScope(x), Bson::JavaScriptCodeWithScope(y)) => x
            .code
            .as_bytes()
            .cmp(y.code.as_bytes())
            .then_with(|| recurse(|| documents(&x.scope, &y.scope, None))),
        _ => match (Number::from_bson(a), Number::from_bson(b)) {
            (Some(x), Some(y)) => numeric::compare(x, y),
            // Same rank and not a number: MinKey, MaxKey, null, undefined.
            _ => Ordering::Equal,
        },
    }
}

/// Compares documents element by element: canonical type, then field name, then value; a
/// document that is a prefix of another sorts first.
pub fn compare_documents(a: &Document, b: &Document) -> Ordering {
    documents(a, b, None)
}

fn documents(a: &Document, b: &Document, collation: Option<&Collation>) -> Ordering {
    let mut left = a.iter();
    let mut right = b.iter();
    loop {
        match (left.next(), right.next()) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some((ka, va)), Some((kb, vb))) => {
                let ord = canonical_rank(va)
                    .cmp(&canonical_rank(vb))
                    .then_with(|| ka.as_bytes().cmp(kb.as_bytes()))
                    .then_with(|| compare_collated(va, vb, collation));
                if ord != Ordering::Equal {
                    return ord;
                }
            }
        }
    }
}

/// Arrays compare like documents whose keys are their indexes.
fn compare_arrays(a: &[Bson], b: &[Bson], collation: Option<&Collation>) -> Ordering {
    for (x, y) in a.iter().zip(b.iter()) {
        let ord = canonical_rank(x)
            .cmp(&canonical_rank(y))
            .then_with(|| compare_collated(x, y, collation));
        if ord != Ordering::Equal {
            return ord;
        }
    }
    a.len().cmp(&b.len())
}

/// The binary payload as MongoDB sees it after the subtype byte: the old binary subtype (2)
/// carries its own length in front of the bytes, which the bson crate strips when it parses.
pub fn binary_payload(value: &Binary) -> Cow<'_, [u8]> {
    if value.subtype == BinarySubtype::BinaryOld {
        let inner = i32::try_from(value.bytes.len()).unwrap_or(i32::MAX);
        let mut payload = Vec::with_capacity(value.bytes.len() + 4);
        payload.extend_from_slice(&inner.to_le_bytes());
        payload.extend_from_slice(&value.bytes);
        Cow::Owned(payload)
    } else {
        Cow::Borrowed(&value.bytes)
    }
}

/// The namespace bytes and id of a DBPointer; `None` for any other value. The bson crate keeps
/// both fields private, so they are read back from the value's BSON encoding.
pub fn db_pointer_parts(value: &Bson) -> Option<(Vec<u8>, [u8; 12])> {
    if !matches!(value, Bson::DbPointer(_)) {
        return None;
    }
    let mut encoded = Vec::new();
    bson::doc! {"": value.clone()}
        .to_writer(&mut encoded)
        .ok()?;
    // Layout: document length (4), type (1), empty key's NUL (1), namespace length including
    // its NUL (4), namespace, NUL, id (12), document terminator.
    let ns_len = u32::from_le_bytes(encoded.get(6..10)?.try_into().ok()?) as usize;
    let ns_end = 10 + ns_len.checked_sub(1)?;
    let namespace = encoded.get(10..ns_end)?.to_vec();
    let id: [u8; 12] = encoded.get(ns_end + 1..ns_end + 13)?.try_into().ok()?;
    Some((namespace, id))
}

/// Equality in MongoDB's sense (`1 == 1.0`, `{a: 1} != {a: 1, b: 2}`).
pub fn values_equal(a: &Bson, b: &Bson) -> bool {
    compare_values(a, b) == Ordering::Equal
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{doc, oid::ObjectId};

    #[test]
    fn types_order_before_values() {
        let ordered = [
            Bson::MinKey,
            Bson::Null,
            Bson::Double(f64::NAN),
            Bson::Int32(-5),
            Bson::Double(1.5),
            Bson::Int64(2),
            Bson::String("a".into()),
            Bson::String("b".into()),
            Bson::Document(doc! {}),
            Bson::Array(vec![]),
            Bson::ObjectId(ObjectId::from_bytes([0; 12])),
            Bson::Boolean(false),
            Bson::Boolean(true),
            Bson::DateTime(bson::DateTime::from_millis(-1)),
            Bson::Timestamp(bson::Timestamp {
                time: 1,
                increment: 0,
            }),
            Bson::MaxKey,
        ];
        for w in ordered.windows(2) {
            assert_eq!(
                compare_values(&w[0], &w[1]),
                Ordering::Less,
                "{:?} < {:?}",
                w[0],
                w[1]
            );
        }
    }

    #[test]
    fn documents_compare_by_type_then_name_then_value() {
        assert_eq!(
            compare_documents(&doc! {"a": 1}, &doc! {"a": 1.0}),
            Ordering::Equal
        );
        assert_eq!(
            compare_documents(&doc! {"a": 1}, &doc! {"b": 0}),
            Ordering::Less
        );
        assert_eq!(
            compare_documents(&doc! {"a": 1}, &doc! {"a": "x"}),
            Ordering::Less
        );
        assert_eq!(
            compare_documents(&doc! {"a": 1}, &doc! {"a": 1, "b": 1}),
            Ordering::Less
        );
    }
}
