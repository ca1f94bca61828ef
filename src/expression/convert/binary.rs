//! `$convert` between strings and binary data, as MongoDB 8.0 converts them: the `format` of
//! the string (`base64`, `base64url`, `hex`, `utf8`, `uuid`, and `auto` for output only), the
//! `subtype` a string becomes, and binData to binData of the same subtype.

use crate::error::{ErrorCode, MongoError, Result};
use crate::expression::numeric::to_f64;
use crate::expression::value::{bson_type_name, is_number};
use bson::spec::BinarySubtype;
use bson::{Binary, Bson};

/// How a string represents binary data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// binData to string only: a UUID as its UUID string, anything else as base64.
    Auto,
    Base64,
    Base64Url,
    Hex,
    Utf8,
    Uuid,
}

impl Format {
    const NAMES: [(&'static str, Format); 6] = [
        ("auto", Format::Auto),
        ("base64", Format::Base64),
        ("base64url", Format::Base64Url),
        ("hex", Format::Hex),
        ("utf8", Format::Utf8),
        ("uuid", Format::Uuid),
    ];

    /// The evaluated `format` argument; `None` when it is null or missing. Its errors are not
    /// conversion failures, so `onError` does not cover them.
    pub fn parse(value: Option<&Bson>) -> Result<Option<Format>> {
        let value = match value {
            None | Some(Bson::Null) | Some(Bson::Undefined) => return Ok(None),
            Some(value) => value,
        };
        let Bson::String(name) = value else {
            return Err(MongoError::location(
                4341114,
                format!(
                    "$convert requires that 'format' be a string, found: {} with value {}",
                    bson_type_name(value),
                    crate::document::display::render(value)
                ),
            ));
        };
        Format::NAMES
            .iter()
            .find(|(known, _)| known == name)
            .map(|(_, format)| Some(*format))
            .ok_or_else(|| {
                MongoError::location(
                    4341125,
                    format!("Invalid 'format' argument for $convert: {name}"),
                )
            })
    }

    fn name(self) -> &'static str {
        Format::NAMES
            .iter()
            .find(|(_, format)| *format == self)
            .map_or("", |(name, _)| name)
    }
}

fn failure(message: String) -> MongoError {
    MongoError::new(ErrorCode::ConversionFailure, message)
}

/// String and binData conversions need a `format`; leaving it out is a usage error rather than
/// a conversion failure.
fn require(format: Option<Format>, from: &str, to: &str) -> Result<Format> {
    format.ok_or_else(|| {
        MongoError::location(
            4341115,
            // "speficied" is MongoDB's spelling.
            format!("Format must be speficied when converting from '{from}' to '{to}'"),
        )
    })
}

/// The `subtype` of `to: {type: "binData", subtype}` (0 when not given): a BinData subtype
/// number, predefined (0 to 8) or user defined (128 to 255).
pub fn subtype(value: &Bson) -> Result<BinarySubtype> {
    if !is_number(value) {
        return Err(MongoError::location(
            4341108,
            format!(
                "For BinData, $convert's 'subtype' argument must be a number, but is {}",
                bson_type_name(value)
            ),
        ));
    }
    let number = to_f64(value);
    if number.fract() != 0.0 || !number.is_finite() {
        return Err(MongoError::location(
            4341106,
            "In $convert, numeric 'subtype' argument is not an integer",
        ));
    }
    let code = number as i64;
    match u8::try_from(code) {
        Ok(code) if code <= 8 || code >= 128 => Ok(BinarySubtype::from(code)),
        _ => Err(MongoError::location(
            4341107,
            format!(
                "In $convert, numeric value for 'subtype' does not correspond to a BinData type: {code}"
            ),
        )),
    }
}

/// string to binData.
pub fn from_string(text: &str, format: Option<Format>, subtype_value: &Bson) -> Result<Bson> {
    let format = require(format, "string", "binData")?;
    let subtype = subtype(subtype_value)?;
    let decoded = decode(text, format, subtype).map_err(|reason| {
        failure(format!(
            "Failed to parse BinData '{text}' in $convert with no onError value: {reason}"
        ))
    })?;
    Ok(Bson::Binary(Binary {
        subtype,
        bytes: decoded,
    }))
}

fn decode(
    text: &str,
    format: Format,
    subtype: BinarySubtype,
) -> std::result::Result<Vec<u8>, String> {
    if (format == Format::Uuid) != (subtype == BinarySubtype::Uuid) {
        return Err("Only the 'uuid' format is allowed with the UUID subtype".into());
    }
    match format {
        Format::Base64 => decode_base64(text, false),
        Format::Base64Url => decode_base64(text, true),
        Format::Hex => decode_hex(text),
        Format::Utf8 => Ok(text.as_bytes().to_vec()),
        Format::Uuid => parse_uuid(text).ok_or_else(|| format!("Invalid UUID string: {text}")),
        Format::Auto => Err(format!("Invalid format '{}'", format.name())),
    }
}

/// binData to string.
pub fn to_string(binary: &Binary, format: Option<Format>) -> Result<String> {
    let format = require(format, "binData", "string")?;
    let is_uuid = binary.subtype == BinarySubtype::Uuid && binary.bytes.len() == 16;
    let shown = || {
        format!(
            "BinData({}, {})",
            u8::from(binary.subtype),
            encode_hex(&binary.bytes)
        )
    };
    let failed = |reason: &str| {
        failure(format!(
            "Failed to convert '{}' to string in $convert with no onError value: {reason}",
            shown()
        ))
    };
    Ok(match format {
        Format::Auto if is_uuid => format_uuid(&binary.bytes),
        Format::Auto | Format::Base64 => encode_base64(&binary.bytes, false),
        Format::Base64Url => encode_base64(&binary.bytes, true),
        Format::Hex => encode_hex(&binary.bytes),
        Format::Utf8 => String::from_utf8(binary.bytes.clone())
            .map_err(|_| failed("BinData does not represent a valid UTF-8 string"))?,
        Format::Uuid if is_uuid => format_uuid(&binary.bytes),
        Format::Uuid => return Err(failed("BinData does not represent a valid UUID")),
    })
}

/// binData to binData: only to its own subtype.
pub fn to_binary(binary: &Binary, subtype_value: &Bson) -> Result<Bson> {
    if subtype(subtype_value)? != binary.subtype {
        return Err(failure(
            "Conversions between different BinData subtypes are not supported".into(),
        ));
    }
    Ok(Bson::Binary(binary.clone()))
}

const BASE64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const BASE64_URL: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// base64 pads to a multiple of four characters; base64url leaves the padding out.
pub fn encode_base64(bytes: &[u8], url: bool) -> String {
    let alphabet = if url { BASE64_URL } else { BASE64 };
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, &b)| acc | (u32::from(b) << (16 - 8 * i)));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(alphabet[((n >> (18 - 6 * i)) & 0x3f) as usize]));
            } else if !url {
                out.push('=');
            }
        }
    }
    out
}

/// base64 needs whole groups of four characters (padded with `=`); base64url may leave the
/// padding out.
fn decode_base64(text: &str, url: bool) -> std::result::Result<Vec<u8>, String> {
    let alphabet = if url { BASE64_URL } else { BASE64 };
    let bytes = text.as_bytes();
    let body = text.trim_end_matches('=');
    let padding = bytes.len() - body.len();
    let complete = bytes.len() % 4 == 0;
    if padding > 2 || (!url && !complete) || (padding > 0 && !complete) || body.len() % 4 == 1 {
        return Err(if url {
            "invalid base64url"
        } else {
            "invalid base64"
        }
        .into());
    }
    let mut out = Vec::with_capacity(body.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for &c in body.as_bytes() {
        let Some(value) = alphabet.iter().position(|&a| a == c) else {
            return Err(format!("Invalid base64 character: {}", char::from(c)));
        };
        acc = (acc << 6) | value as u32;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Ok(out)
}

/// Upper case, as MongoDB prints binary data.
pub fn encode_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02X}")).collect()
}

fn decode_hex(text: &str) -> std::result::Result<Vec<u8>, String> {
    if text.len() % 2 != 0 {
        return Err("Hex blob with odd digit count is invalid".into());
    }
    text.as_bytes()
        .chunks(2)
        .map(|pair| {
            std::str::from_utf8(pair)
                .ok()
                .and_then(|digits| u8::from_str_radix(digits, 16).ok())
                .ok_or_else(|| format!("Invalid hex character in {text}"))
        })
        .collect()
}

pub fn format_uuid(bytes: &[u8]) -> String {
    let hex = encode_hex(bytes).to_ascii_lowercase();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// The canonical 8-4-4-4-12 form, in either case.
fn parse_uuid(text: &str) -> Option<Vec<u8>> {
    let shape_ok = text.len() == 36
        && text.char_indices().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => c == '-',
            _ => c.is_ascii_hexdigit(),
        });
    if !shape_ok {
        return None;
    }
    decode_hex(&text.replace('-', "")).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trips() {
        for (bytes, standard, url) in [
            (&b""[..], "", ""),
            (b"h", "aA==", "aA"),
            (b"hello", "aGVsbG8=", "aGVsbG8"),
            (&[0xfb, 0xff, 0xbf][..], "+/+/", "-_-_"),
        ] {
            assert_eq!(encode_base64(bytes, false), standard);
            assert_eq!(encode_base64(bytes, true), url);
            assert_eq!(decode_base64(standard, false).unwrap(), bytes);
            assert_eq!(decode_base64(url, true).unwrap(), bytes);
        }
        assert_eq!(decode_base64("aA==", true).unwrap(), b"h");
        assert!(decode_base64("aGVsbG8", false).is_err());
        assert!(decode_base64("a", true).is_err());
        assert!(decode_base64("-_-_", false).is_err());
        assert!(decode_base64("a===", false).is_err());
    }

    #[test]
    fn hex_and_uuid() {
        assert_eq!(encode_hex(&[0, 0xab, 0x10]), "00AB10");
        assert_eq!(decode_hex("00ab10").unwrap(), vec![0, 0xab, 0x10]);
        assert!(decode_hex("abc").is_err());
        assert!(decode_hex("zz").is_err());
        let uuid = "0e3b9063-8abd-4eb3-9f9f-f4c59fd30a60";
        let bytes = parse_uuid(uuid).unwrap();
        assert_eq!(format_uuid(&bytes), uuid);
        assert_eq!(parse_uuid(&uuid.to_uppercase()).unwrap(), bytes);
        assert!(parse_uuid("0e3b90638abd4eb39f9ff4c59fd30a60").is_none());
        assert!(parse_uuid("0e3b9063-8abd-4eb3-9f9f-f4c59fd30a6g").is_none());
    }

    #[test]
    fn subtypes() {
        assert_eq!(subtype(&Bson::Int32(0)).unwrap(), BinarySubtype::Generic);
        assert_eq!(subtype(&Bson::Double(4.0)).unwrap(), BinarySubtype::Uuid);
        assert_eq!(u8::from(subtype(&Bson::Int64(200)).unwrap()), 200);
        let code = |v: Bson| subtype(&v).unwrap_err().code().code();
        assert_eq!(code(Bson::Double(1.5)), 4341106);
        assert_eq!(code(Bson::Int32(9)), 4341107);
        assert_eq!(code(Bson::Int32(-1)), 4341107);
        assert_eq!(code(Bson::Int32(256)), 4341107);
        assert_eq!(code(Bson::String("newUUID".into())), 4341108);
    }
}
