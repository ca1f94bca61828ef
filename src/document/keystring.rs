//! Order-preserving binary encoding of BSON values (index keys, chunk bounds).
//! FIXME(issue 4): interim encoding, replaced by the exact one from the key-encoding work.

use super::order::canonical_rank;
use bson::Bson;

pub fn encode_value(value: &Bson, descending: bool, out: &mut Vec<u8>) {
    let start = out.len();
    out.push(canonical_rank(value));
    match value {
        Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_) => {
            let f = super::numeric::Number::from_bson(value)
                .map(|n| n.to_f64())
                .unwrap_or(0.0);
            let f = if f == 0.0 { 0.0 } else { f };
            let bits = f.to_bits();
            let ordered = if f.is_nan() {
                0
            } else if bits >> 63 == 1 {
                !bits
            } else {
                bits | (1 << 63)
            };
            out.extend_from_slice(&ordered.to_be_bytes());
        }
        Bson::String(s) | Bson::Symbol(s) => {
            out.extend_from_slice(s.as_bytes());
            out.push(0);
        }
        other => {
            let bytes = bson::to_vec(&bson::doc! {"": other.clone()}).unwrap_or_default();
            out.extend_from_slice(&bytes);
        }
    }
    if descending {
        for b in &mut out[start..] {
            *b = !*b;
        }
    }
}

pub fn encode_one(value: &Bson) -> Vec<u8> {
    let mut out = Vec::new();
    encode_value(value, false, &mut out);
    out
}

pub fn encode_key<'a>(parts: impl IntoIterator<Item = (&'a Bson, bool)>) -> Vec<u8> {
    let mut out = Vec::new();
    for (value, descending) in parts {
        encode_value(value, descending, &mut out);
    }
    out
}
