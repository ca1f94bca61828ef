//! Type bits: what an index key's bytes leave out of its values, stored beside each key (as
//! MongoDB stores its KeyString TypeBits in the index entry's value), so that a covered query
//! can rebuild every value exactly without reading the document.
//!
//! `keystring` gives equal values identical bytes, so it drops a number's BSON type (1, 1.0,
//! NumberLong(1) and Decimal("1.00") share a key), String against Symbol, and whether a
//! top-level null was a null or a missing field. The type bits are one record per such value,
//! in the order the key's bytes hold the values (components in order, then depth first through
//! documents, arrays and code-with-scope scopes). A record is a tag byte, with a payload only
//! where the key cannot rebuild the value: a NaN double keeps its bit pattern, a decimal its 16
//! bytes (the key holds its value, not its exponent, trailing zeros or the sign of a zero).
//! Tag 0 is the common case of each kind (int32, string, null), and trailing 0 records are
//! dropped, so most keys have empty type bits.

use crate::depth::recurse;
use bson::Bson;

/// Number records.
pub const INT32: u8 = 0;
pub const INT64: u8 = 1;
pub const DOUBLE: u8 = 2;
/// -0.0, which the key stores as zero.
pub const DOUBLE_NEGATIVE_ZERO: u8 = 3;
/// Followed by the double's 8 bytes (little-endian bit pattern).
pub const DOUBLE_NAN: u8 = 4;
/// Followed by the decimal's 16 bytes.
pub const DECIMAL: u8 = 5;

/// String records.
pub const STRING: u8 = 0;
pub const SYMBOL: u8 = 1;

/// Top-level null records (a null inside a document or array is always a null).
pub const NULL: u8 = 0;
pub const MISSING: u8 = 1;

/// The type bits of a key being built, component by component.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TypeBits {
    /// The records up to the last one that is not 0.
    bytes: Vec<u8>,
    /// 0 records after those, written only if a record that is not 0 follows (so the common
    /// case allocates nothing).
    pending: usize,
}

impl TypeBits {
    pub fn new() -> Self {
        Self::default()
    }

    /// The type bits of one key component holding `value`; `missing` says a null stands for a
    /// missing field.
    pub fn of_component(value: &Bson, missing: bool) -> Self {
        let mut bits = TypeBits::new();
        bits.push_component(value, missing);
        bits
    }

    /// Records the next key component.
    pub fn push_component(&mut self, value: &Bson, missing: bool) {
        if matches!(value, Bson::Null) {
            self.record(if missing { MISSING } else { NULL }, &[]);
        } else {
            self.walk(value);
        }
    }

    /// Appends the records of the following components.
    pub fn append(&mut self, other: &TypeBits) {
        if !other.bytes.is_empty() {
            self.flush_pending();
            self.bytes.extend_from_slice(&other.bytes);
        }
        self.pending += other.pending;
    }

    /// The bytes to store: empty when every record is the common case.
    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }

    fn walk(&mut self, value: &Bson) {
        match value {
            Bson::Int32(_) => self.record(INT32, &[]),
            Bson::Int64(_) => self.record(INT64, &[]),
            Bson::Double(d) if d.is_nan() => self.record(DOUBLE_NAN, &d.to_bits().to_le_bytes()),
            Bson::Double(d) if *d == 0.0 && d.is_sign_negative() => {
                self.record(DOUBLE_NEGATIVE_ZERO, &[])
            }
            Bson::Double(_) => self.record(DOUBLE, &[]),
            Bson::Decimal128(d) => self.record(DECIMAL, &d.bytes()),
            Bson::String(_) => self.record(STRING, &[]),
            Bson::Symbol(_) => self.record(SYMBOL, &[]),
            Bson::Document(d) => recurse(|| d.values().for_each(|v| self.walk(v))),
            Bson::Array(items) => recurse(|| items.iter().for_each(|v| self.walk(v))),
            Bson::JavaScriptCodeWithScope(c) => {
                recurse(|| c.scope.values().for_each(|v| self.walk(v)))
            }
            _ => {}
        }
    }

    fn record(&mut self, tag: u8, payload: &[u8]) {
        if tag == 0 {
            self.pending += 1;
            return;
        }
        self.flush_pending();
        self.bytes.push(tag);
        self.bytes.extend_from_slice(payload);
    }

    fn flush_pending(&mut self) {
        self.bytes.resize(self.bytes.len() + self.pending, 0);
        self.pending = 0;
    }
}

/// Reads stored type bits back, record by record; past the end every record is 0.
pub struct TypeBitsReader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> TypeBitsReader<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        TypeBitsReader { bytes, pos: 0 }
    }

    pub fn tag(&mut self) -> u8 {
        let tag = self.bytes.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        tag
    }

    /// A record's payload; `None` when the bytes end inside it.
    pub fn payload<const N: usize>(&mut self) -> Option<[u8; N]> {
        let bytes = self.bytes.get(self.pos..self.pos + N)?;
        self.pos += N;
        bytes.try_into().ok()
    }

    /// Every stored byte was read (a reader that read more records than stored is done too).
    pub fn is_done(&self) -> bool {
        self.pos >= self.bytes.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    #[test]
    fn common_cases_store_nothing() {
        let mut bits = TypeBits::new();
        bits.push_component(&Bson::Int32(1), false);
        bits.push_component(&Bson::String("x".into()), false);
        bits.push_component(&Bson::Null, false);
        bits.push_component(&Bson::Document(doc! {"a": 1, "b": "s"}), false);
        assert!(bits.into_bytes().is_empty());
    }

    #[test]
    fn records_follow_the_key_order_and_trailing_defaults_drop() {
        let mut bits = TypeBits::of_component(&Bson::Int32(1), false);
        bits.append(&TypeBits::of_component(&Bson::Int64(2), false));
        bits.append(&TypeBits::of_component(&Bson::String("x".into()), false));
        assert_eq!(bits.into_bytes(), vec![INT32, INT64]);
        let mut bits = TypeBits::of_component(
            &Bson::Document(doc! {"a": [1.5, Bson::Symbol("s".into())], "b": 1}),
            false,
        );
        bits.append(&TypeBits::of_component(&Bson::Null, true));
        assert_eq!(bits.into_bytes(), vec![DOUBLE, SYMBOL, INT32, MISSING]);
        // A payload ending in zero bytes is kept whole.
        let decimal: bson::Decimal128 = "0".parse().unwrap();
        let bits = TypeBits::of_component(&Bson::Decimal128(decimal), false).into_bytes();
        assert_eq!(bits.len(), 17);
    }
}
