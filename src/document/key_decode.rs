//! Reading index keys back into values (for covered queries): each component of a key made by
//! `keystring` is parsed to its end, and yields its value when the bytes, with the entry's
//! type bits (`type_bits`), determine it.
//!
//! The encoding keeps equal values identical, so it drops what MongoDB's comparison ignores:
//! a number's BSON type (1, 1.0, NumberLong(1) and Decimal("1.00") share bytes), String
//! against Symbol, and whether a top-level null was a null or a missing field. The type bits
//! record exactly that; without them (entries written before they existed) values of those
//! kinds are unknown and the caller reads the document instead. Every other type is written
//! whole and decodes exactly, nested documents and arrays included when their contents do.

use super::order::canonical_rank;
use super::type_bits::{self, TypeBitsReader};
use crate::depth::recurse;
use bson::{
    Binary, Bson, DateTime, Decimal128, Document, JavaScriptCodeWithScope, Regex, Timestamp,
    oid::ObjectId, spec::BinarySubtype,
};

const ELEMENT: u8 = 0x01;
const END: u8 = 0x00;
const NUMBER_NAN: u8 = 0x01;
const NUMBER_NEGATIVE: u8 = 0x02;
const NUMBER_ZERO: u8 = 0x03;
const MAGNITUDE_TAIL: u8 = 0x01;

/// One key component read back.
#[derive(Clone, Debug, PartialEq)]
pub enum KeyValue {
    Value(Bson),
    /// The field the component indexes is missing from the document.
    Missing,
    /// The bytes (and type bits) do not determine the value.
    Unknown,
}

/// The values of a key's components; `descending` says, per component, whether its bytes are
/// inverted, and `types` are the entry's type bits (`None`: not recorded). `None` overall when
/// the bytes are not a key of that many components, or the type bits do not fit the key.
pub fn decode_key(key: &[u8], descending: &[bool], types: Option<&[u8]>) -> Option<Vec<KeyValue>> {
    let mut reader = Reader {
        bytes: key,
        pos: 0,
        mask: 0,
        types: types.map(TypeBitsReader::new),
    };
    let mut out = Vec::with_capacity(descending.len());
    for &inverted in descending {
        reader.mask = if inverted { 0xff } else { 0 };
        let tag = reader.byte()?;
        let value = if tag == tag_of(&Bson::Null) {
            // A top-level null is also what a missing field indexes as.
            match reader.types.as_mut().map(|t| t.tag()) {
                Some(type_bits::NULL) => KeyValue::Value(Bson::Null),
                Some(type_bits::MISSING) => KeyValue::Missing,
                _ => KeyValue::Unknown,
            }
        } else {
            match reader.body(tag)? {
                Some(value) => KeyValue::Value(value),
                None => KeyValue::Unknown,
            }
        };
        out.push(value);
    }
    let types_done = reader.types.as_ref().is_none_or(|t| t.is_done());
    (reader.pos == key.len() && types_done).then_some(out)
}

/// The byte length of each of a key's components (`descending` per component, as for
/// [`decode_key`]): where a scan checks one component against its bounds. `None` when the
/// bytes are not a key of that many components.
pub fn component_lengths(key: &[u8], descending: &[bool]) -> Option<Vec<usize>> {
    let mut reader = Reader {
        bytes: key,
        pos: 0,
        mask: 0,
        types: None,
    };
    let mut out = Vec::with_capacity(descending.len());
    for &inverted in descending {
        reader.mask = if inverted { 0xff } else { 0 };
        let start = reader.pos;
        let tag = reader.byte()?;
        reader.body(tag)?;
        out.push(reader.pos - start);
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
    /// The entry's type bits, read as the values they describe are reached.
    types: Option<TypeBitsReader<'a>>,
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
                let number = self.number()?;
                Some(self.types.as_mut().and_then(|t| number.value(t)))
            }
            t if t == tag_of(&Bson::String(String::new())) => {
                // String or Symbol: the bytes are the same.
                let s = String::from_utf8(self.bytes_escaped()?).ok();
                let tag = self.types.as_mut().map(|t| t.tag());
                Some(s.and_then(|s| match tag {
                    Some(type_bits::STRING) => Some(Bson::String(s)),
                    Some(type_bits::SYMBOL) => Some(Bson::Symbol(s)),
                    _ => None,
                }))
            }
            t if t == tag_of(&Bson::Document(Document::new())) => {
                Some(recurse(|| self.document())?.map(Bson::Document))
            }
            t if t == tag_of(&Bson::Array(Vec::new())) => {
                let mut items = Some(Vec::new());
                loop {
                    match self.byte()? {
                        END => return Some(items.map(Bson::Array)),
                        ELEMENT => {
                            let tag = self.byte()?;
                            let item = recurse(|| self.body(tag))?;
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
    fn number(&mut self) -> Option<KeyNumber> {
        let class = self.byte()?;
        if class == NUMBER_NAN || class == NUMBER_ZERO {
            return Some(KeyNumber {
                class,
                floor: 0.0,
                tail: None,
            });
        }
        // Negative magnitudes are inverted once more.
        let negative = class == NUMBER_NEGATIVE;
        let flip = if negative { 0xff } else { 0 };
        let mut floor = self.take::<8>()?;
        floor.iter_mut().for_each(|b| *b ^= flip);
        let floor = f64::from_bits(u64::from_be_bytes(floor));
        if self.byte()? ^ flip != MAGNITUDE_TAIL {
            return Some(KeyNumber {
                class,
                floor,
                tail: None,
            });
        }
        let exponent = u16::from_be_bytes(self.take::<2>()?.map(|b| b ^ flip));
        let leading = i32::from((exponent ^ 0x8000) as i16);
        // Digits one per nibble (digit + 1), closed by a zero nibble.
        let mut digits = Vec::new();
        loop {
            let b = self.byte()? ^ flip;
            for nibble in [b >> 4, b & 0x0f] {
                if nibble == 0 {
                    return Some(KeyNumber {
                        class,
                        floor,
                        tail: Some((leading, digits)),
                    });
                }
                digits.push(nibble - 1);
            }
        }
    }
}

/// A number as its key holds it: the class (NaN, negative, zero, positive), the largest double
/// not above its magnitude and, when that double is not the magnitude, the exact decimal
/// magnitude (the exponent of its leading digit and its digits).
struct KeyNumber {
    class: u8,
    floor: f64,
    tail: Option<(i32, Vec<u8>)>,
}

impl KeyNumber {
    /// The value with the BSON type the type bits record; `None` when they do not fit the key.
    fn value(&self, types: &mut TypeBitsReader<'_>) -> Option<Bson> {
        let negative = self.class == NUMBER_NEGATIVE;
        let zero = self.class == NUMBER_ZERO;
        let nan = self.class == NUMBER_NAN;
        match types.tag() {
            type_bits::INT32 => i32::try_from(self.integer()?).ok().map(Bson::Int32),
            type_bits::INT64 => i64::try_from(self.integer()?).ok().map(Bson::Int64),
            type_bits::DOUBLE if zero => Some(Bson::Double(0.0)),
            type_bits::DOUBLE if self.tail.is_none() && !nan => Some(Bson::Double(if negative {
                -self.floor
            } else {
                self.floor
            })),
            type_bits::DOUBLE_NEGATIVE_ZERO if zero => Some(Bson::Double(-0.0)),
            type_bits::DOUBLE_NAN => {
                let d = f64::from_bits(u64::from_le_bytes(types.payload::<8>()?));
                (nan && d.is_nan()).then_some(Bson::Double(d))
            }
            type_bits::DECIMAL => Some(Bson::Decimal128(Decimal128::from_bytes(
                types.payload::<16>()?,
            ))),
            _ => None,
        }
    }

    /// The integer the key holds, if it holds one.
    fn integer(&self) -> Option<i128> {
        let magnitude = match (&self.tail, self.class) {
            (_, NUMBER_NAN) => return None,
            (_, NUMBER_ZERO) => 0,
            (None, _) => {
                // Every int64 magnitude is below 2^64, where doubles are exact integers.
                if self.floor.fract() != 0.0 || self.floor > 2f64.powi(64) {
                    return None;
                }
                self.floor as i128
            }
            (Some((leading, digits)), _) => {
                let scale = leading + 1 - digits.len() as i32;
                if !(0..=20).contains(&scale) || digits.len() > 20 {
                    return None;
                }
                let mut n: i128 = 0;
                for d in digits {
                    n = n * 10 + i128::from(*d);
                }
                n.checked_mul(10i128.checked_pow(scale as u32)?)?
            }
        };
        Some(if self.class == NUMBER_NEGATIVE {
            -magnitude
        } else {
            magnitude
        })
    }
}

#[cfg(test)]
#[path = "key_decode_tests.rs"]
mod tests;
