//! BSON values rendered the way MongoDB prints them in error messages
//! (`{ _id: ObjectId('…'), a: "x" }`).

use bson::{Bson, Document};

/// A value as MongoDB's `BSONElement::toString` shows it.
pub fn value_to_string(value: &Bson) -> String {
    match value {
        Bson::Double(v) => {
            if v.is_finite() && v.fract() == 0.0 && v.abs() < 1e16 {
                format!("{v:.1}")
            } else if v.is_nan() {
                "nan.0".into()
            } else if v.is_infinite() {
                if *v > 0.0 {
                    "inf.0".into()
                } else {
                    "-inf.0".into()
                }
            } else {
                v.to_string()
            }
        }
        Bson::String(s) => format!("{s:?}"),
        Bson::Document(d) => document_to_string(d),
        Bson::Array(items) => {
            if items.is_empty() {
                return "[]".into();
            }
            let parts: Vec<String> = items.iter().map(value_to_string).collect();
            format!("[ {} ]", parts.join(", "))
        }
        Bson::ObjectId(oid) => format!("ObjectId('{oid}')"),
        Bson::Boolean(b) => b.to_string(),
        Bson::Null => "null".into(),
        Bson::Int32(v) => v.to_string(),
        Bson::Int64(v) => v.to_string(),
        Bson::Decimal128(d) => format!("{d}"),
        Bson::DateTime(d) => format!("new Date({})", d.timestamp_millis()),
        Bson::Timestamp(ts) => format!("Timestamp({}, {})", ts.time, ts.increment),
        Bson::RegularExpression(re) => format!("/{}/{}", re.pattern, re.options),
        Bson::MinKey => "MinKey".into(),
        Bson::MaxKey => "MaxKey".into(),
        Bson::Undefined => "undefined".into(),
        Bson::Binary(b) => format!("BinData({}, {})", u8::from(b.subtype), hex(&b.bytes)),
        other => other.to_string(),
    }
}

/// A document as MongoDB prints it: `{ a: 1, b: "x" }`, `{}` when empty.
pub fn document_to_string(doc: &Document) -> String {
    if doc.is_empty() {
        return "{}".into();
    }
    let parts: Vec<String> = doc
        .iter()
        .map(|(k, v)| format!("{k}: {}", value_to_string(v)))
        .collect();
    format!("{{ {} }}", parts.join(", "))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02X}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    #[test]
    fn prints_like_mongodb() {
        assert_eq!(document_to_string(&doc! {"_id": 1}), "{ _id: 1 }");
        assert_eq!(
            document_to_string(&doc! {"_id": "a", "b": 2.0}),
            "{ _id: \"a\", b: 2.0 }"
        );
        assert_eq!(
            document_to_string(&doc! {"a": {"b": [1, 2]}}),
            "{ a: { b: [ 1, 2 ] } }"
        );
    }
}
