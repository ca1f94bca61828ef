//! Reading index keys back into values (for covered queries): each component of a key made by
//! `keystring` is parsed to its end, and yields its value only when the bytes determine it.
//!
//! The encoding keeps equal values identical, so it drops what MongoDB's comparison ignores:
//! a number's BSON type (1, 1.0, NumberLong(1) and Decimal("1.00") share bytes), String
//! against Symbol, and whether a top-level null was a null or a missing field. Components of
//! those kinds decode to `None` (the caller must read the document instead); every other type
//! is written whole and decodes exactly, nested documents and arrays included when their
//! contents do.

use super::order::canonical_rank;
use bson::{
    Binary, Bson, DateTime, Document, JavaScriptCodeWithScope, Regex, Timestamp, oid::ObjectId,
    spec::BinarySubtype,
};

const ELEMENT: u8 = 0x01;
const END: u8 = 0x00;
const NUMBER_NAN: u8 = 0x01;
const NUMBER_ZERO: u8 = 0x03;
const MAGNITUDE_TAIL: u8 = 0x01;

/// The values of a key's components, `None` where the bytes do not determine the value;
/// `descending` says, per component, whether its bytes are inverted. `None` overall when the
/// bytes are not a key of that many components.
pub fn decode_key(key: &[u8], descending: &[bool]) -> Option<Vec<Option<Bson>>> {
    let mut reader = Reader {
        bytes: key,
        pos: 0,
        mask: 0,
    };
    let mut out = Vec::with_capacity(descending.len());
    for &inverted in descending {
        reader.mask = if inverted { 0xff } else { 0 };
        let tag = reader.byte()?;
        let value = reader.body(tag)?;
        // A top-level null is also what a missing field indexes as.
        out.push(value.filter(|v| !matches!(v, Bson::Null)));
    }
    (reader.pos == key.len()).then_some(out)
}

/// The tag `keystring` writes for a value of this canonical rank.
fn tag_of(value: &Bson) -> u8 {
    0x10 + canonical_rank(value) * 8
}

struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
    /// XORed into every byte read: 0xff inside a descending component.
    mask: u8,
}

impl Reader<'_> {
    fn byte(&mut self) -> Option<u8> {
        let b = *self.bytes.get(self.pos)?;
        self.pos += 1;
        Some(b ^ self.mask)
    }

    fn take<const N: usize>(&mut self) -> Option<[u8; N]> {
        let mut out = [0u8; N];
        for b in &mut out {
            *b = self.byte()?;
        }
        Some(out)
    }

    /// An escaped byte string up to its `00 00` terminator.
    fn bytes_escaped(&mut self) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        loop {
            match self.byte()? {
                0 => match self.byte()? {
                    0 => return Some(out),
                    0xff => out.push(0),
                    _ => return None,
                },
                b => out.push(b),
            }
        }
    }

    fn string(&mut self) -> Option<String> {
        String::from_utf8(self.bytes_escaped()?).ok()
    }

    fn length(&mut self) -> Option<usize> {
        let n = usize::from(self.byte()?);
        if n > 8 {
            return None;
        }
        let mut len = 0u64;
        for _ in 0..n {
            len = (len << 8) | u64::from(self.byte()?);
        }
        usize::try_from(len).ok()
    }

    /// The body after `tag`: `Some(None)` when parsed but undetermined, `None` when malformed.
    fn body(&mut self, tag: u8) -> Option<Option<Bson>> {
        let exact = |v: Bson| Some(Some(v));
        match tag {
            t if t == tag_of(&Bson::MinKey) => exact(Bson::MinKey),
            t if t == tag_of(&Bson::MaxKey) => exact(Bson::MaxKey),
            t if t == tag_of(&Bson::Undefined) => exact(Bson::Undefined),
            t if t == tag_of(&Bson::Null) => exact(Bson::Null),
            t if t == tag_of(&Bson::Int32(0)) => {
                self.skip_number()?;
                Some(None)
            }
            t if t == tag_of(&Bson::String(String::new())) => {
                // String or Symbol: the bytes are the same.
                self.bytes_escaped()?;
                Some(None)
            }
            t if t == tag_of(&Bson::Document(Document::new())) => {
                Some(self.document()?.map(Bson::Document))
            }
            t if t == tag_of(&Bson::Array(Vec::new())) => {
                let mut items = Some(Vec::new());
                loop {
                    match self.byte()? {
                        END => return Some(items.map(Bson::Array)),
                        ELEMENT => {
                            let tag = self.byte()?;
                            let item = self.body(tag)?;
                            items = items.zip(item).map(|(mut all, item)| {
                                all.push(item);
                                all
                            });
                        }
                        _ => return None,
                    }
                }
            }
            t if t == tag_of(&Bson::Boolean(false)) => match self.byte()? {
                0 => exact(Bson::Boolean(false)),
                1 => exact(Bson::Boolean(true)),
                _ => None,
            },
            t if t == tag_of(&Bson::ObjectId(ObjectId::from_bytes([0; 12]))) => {
                exact(Bson::ObjectId(ObjectId::from_bytes(self.take::<12>()?)))
            }
            t if t == tag_of(&Bson::DateTime(DateTime::from_millis(0))) => {
                let ordered = u64::from_be_bytes(self.take::<8>()?);
                let millis = (ordered ^ (1 << 63)) as i64;
                exact(Bson::DateTime(DateTime::from_millis(millis)))
            }
            t if t
                == tag_of(&Bson::Timestamp(Timestamp {
                    time: 0,
                    increment: 0,
                })) =>
            {
                let time = u32::from_be_bytes(self.take::<4>()?);
                let increment = u32::from_be_bytes(self.take::<4>()?);
                exact(Bson::Timestamp(Timestamp { time, increment }))
            }
            t if t
                == tag_of(&Bson::Binary(Binary {
                    subtype: BinarySubtype::Generic,
                    bytes: Vec::new(),
                })) =>
            {
                let len = self.length()?;
                let subtype = BinarySubtype::from(self.byte()?);
                let mut bytes = Vec::with_capacity(len);
                for _ in 0..len {
                    bytes.push(self.byte()?);
                }
                // The old binary subtype is keyed with its inner length in front.
                if subtype == BinarySubtype::BinaryOld {
                    return Some(None);
                }
                exact(Bson::Binary(Binary { subtype, bytes }))
            }
            t if t
                == tag_of(&Bson::RegularExpression(Regex {
                    pattern: String::new(),
                    options: String::new(),
                })) =>
            {
                let pattern = self.string()?;
                let options = self.string()?;
                exact(Bson::RegularExpression(Regex { pattern, options }))
            }
            t if t == tag_of(&Bson::JavaScriptCode(String::new())) => {
                exact(Bson::JavaScriptCode(self.string()?))
            }
            t if t
                == tag_of(&Bson::JavaScriptCodeWithScope(JavaScriptCodeWithScope {
                    code: String::new(),
                    scope: Document::new(),
                })) =>
            {
                let code = self.string()?;
                let scope = self.document()?;
                Some(scope.map(|scope| {
                    Bson::JavaScriptCodeWithScope(JavaScriptCodeWithScope { code, scope })
                }))
            }
            t if t == tag_of(&Bson::MinKey) + 13 * 8 => {
                // DBPointer: skipped, the bson crate cannot build one directly.
                let len = self.length()?;
                for _ in 0..len + 12 {
                    self.byte()?;
                }
                Some(None)
            }
            _ => None,
        }
    }

    /// A document's elements: `Some(None)` when one of its values is undetermined.
    fn document(&mut self) -> Option<Option<Document>> {
        let mut doc = Some(Document::new());
        loop {
            match self.byte()? {
                END => return Some(doc),
                ELEMENT => {
                    let tag = self.byte()?;
                    let name = self.string()?;
                    let value = self.body(tag)?;
                    doc = doc.zip(value).map(|(mut d, v)| {
                        d.insert(name, v);
                        d
                    });
                }
                _ => return None,
            }
        }
    }

    /// A number's class byte, magnitude and optional decimal tail.
    fn skip_number(&mut self) -> Option<()> {
        let class = self.byte()?;
        if class == NUMBER_NAN || class == NUMBER_ZERO {
            return Some(());
        }
        // Negative magnitudes are inverted once more; only the tail marker's value matters,
        // and inversion maps exact (00) and tail (01) to distinct bytes.
        let negative = class == 0x02;
        let flip = if negative { 0xff } else { 0 };
        self.take::<8>()?;
        if self.byte()? ^ flip != MAGNITUDE_TAIL {
            return Some(());
        }
        self.take::<2>()?;
        // Digits one per nibble, closed by a zero nibble.
        loop {
            let b = self.byte()? ^ flip;
            if b >> 4 == 0 || b & 0x0f == 0 {
                return Some(());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::keystring::tests::arb_bson;
    use crate::document::keystring::{encode_key, encode_value};
    use bson::doc;
    use proptest::prelude::*;

    fn round_trip(value: &Bson, descending: bool) -> Option<Bson> {
        let mut key = Vec::new();
        encode_value(value, descending, &mut key);
        decode_key(&key, &[descending]).unwrap().pop().unwrap()
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
    fn lossy_kinds_are_undetermined() {
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
    fn compound_keys_split_into_components() {
        let oid = Bson::ObjectId(ObjectId::from_bytes([1; 12]));
        let key = encode_key([
            (&Bson::Decimal128("1.5".parse().unwrap()), false),
            (&oid, true),
            (&Bson::String("z\0".into()), false),
            (&Bson::Boolean(true), true),
        ]);
        let decoded = decode_key(&key, &[false, true, false, true]).unwrap();
        assert_eq!(
            decoded,
            vec![None, Some(oid), None, Some(Bson::Boolean(true))]
        );
        assert!(decode_key(&key, &[false, true, false]).is_none());
    }

    proptest! {
        /// Whatever decodes, decodes to a value with exactly the original's key.
        #[test]
        fn decoded_values_re_encode_identically(
            values in prop::collection::vec((arb_bson(), any::<bool>()), 1..4)
        ) {
            let key = encode_key(values.iter().map(|(v, d)| (v, *d)));
            let descending: Vec<bool> = values.iter().map(|(_, d)| *d).collect();
            let decoded = decode_key(&key, &descending).expect("a well-formed key");
            for ((value, desc), back) in values.iter().zip(&decoded) {
                if let Some(back) = back {
                    let mut a = Vec::new();
                    encode_value(value, *desc, &mut a);
                    let mut b = Vec::new();
                    encode_value(back, *desc, &mut b);
                    prop_assert_eq!(a, b);
                    prop_assert_eq!(back.element_type(), value.element_type());
                }
            }
        }
    }
}
