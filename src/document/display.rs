//! BSON values rendered the way MongoDB prints them in error messages (`BSONObj::toString`:
//! `{ _id: ObjectId('…'), a: "x" }`), and C's `%g` number formatting those messages use.

use crate::depth::recurse;
use bson::spec::BinarySubtype;
use bson::{Bson, Document};

/// `%.16g` followed by `.0` when the text has no `.`, `E` or `N` (MongoDB's `appendDoubleNice`).
pub fn double_nice(x: f64) -> String {
    let mut s = format_g(x, 16);
    if !s.contains('.') && !s.contains('E') && !s.contains('N') {
        s.push_str(".0");
    }
    s
}

/// C's `%.<precision>g`.
pub fn format_g(x: f64, precision: usize) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if x == 0.0 {
        return if x.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    let p = precision.max(1);
    let sci = format!("{:.*e}", p - 1, x);
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if exp < -4 || exp >= p as i32 {
        let mantissa = strip_zeros(mantissa);
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.abs())
    } else {
        let decimals = (p as i32 - 1 - exp).max(0) as usize;
        strip_zeros(&format!("{:.*}", decimals, x)).to_string()
    }
}

fn strip_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// A value as MongoDB's `BSONElement::toString(false)` prints it.
pub fn render(value: &Bson) -> String {
    let mut out = String::new();
    render_into(&mut out, value, 0);
    out
}

/// `name: value`, as MongoDB prints an element.
pub fn render_element(name: &str, value: &Bson) -> String {
    format!("{name}: {}", render(value))
}

/// A document as MongoDB's `BSONObj::toString()` prints it.
pub fn render_doc(doc: &Document) -> String {
    let mut out = String::new();
    render_doc_into(&mut out, doc.iter().map(|(k, v)| (k.as_str(), v)), false, 0);
    out
}

fn render_doc_into<'a>(
    out: &mut String,
    items: impl Iterator<Item = (&'a str, &'a Bson)>,
    is_array: bool,
    depth: usize,
) {
    let mut first = true;
    for (k, v) in items {
        out.push_str(if first {
            if is_array { "[ " } else { "{ " }
        } else {
            ", "
        });
        first = false;
        if !is_array {
            out.push_str(k);
            out.push_str(": ");
        }
        render_into(out, v, depth + 1);
    }
    if first {
        out.push_str(if is_array { "[]" } else { "{}" });
    } else {
        out.push_str(if is_array { " ]" } else { " }" });
    }
}

fn render_into(out: &mut String, value: &Bson, depth: usize) {
    if depth > 150 {
        out.push_str("...");
        return;
    }
    match value {
        Bson::Document(d) => {
            recurse(|| render_doc_into(out, d.iter().map(|(k, v)| (k.as_str(), v)), false, depth))
        }
        Bson::Array(items) => {
            recurse(|| render_doc_into(out, items.iter().map(|v| ("", v)), true, depth))
        }
        Bson::Double(v) => out.push_str(&double_nice(*v)),
        Bson::String(s) | Bson::Symbol(s) => {
            out.push('"');
            if s.len() > 160 {
                let mut cut = 150;
                while !s.is_char_boundary(cut) {
                    cut -= 1;
                }
                out.push_str(&s[..cut]);
                out.push_str("...\"");
            } else {
                out.push_str(s);
                out.push('"');
            }
        }
        Bson::Int32(v) => out.push_str(&v.to_string()),
        Bson::Int64(v) => out.push_str(&v.to_string()),
        Bson::Decimal128(d) => out.push_str(&d.to_string()),
        Bson::Boolean(b) => out.push_str(if *b { "true" } else { "false" }),
        Bson::Null => out.push_str("null"),
        Bson::Undefined => out.push_str("undefined"),
        Bson::MinKey => out.push_str("MinKey"),
        Bson::MaxKey => out.push_str("MaxKey"),
        Bson::ObjectId(oid) => {
            out.push_str("ObjectId('");
            out.push_str(&oid.to_hex());
            out.push_str("')");
        }
        Bson::DateTime(dt) => out.push_str(&format!("new Date({})", dt.timestamp_millis())),
        Bson::Timestamp(ts) => out.push_str(&format!("Timestamp({}, {})", ts.time, ts.increment)),
        Bson::RegularExpression(re) => {
            out.push('/');
            out.push_str(&re.pattern);
            out.push('/');
            out.push_str(&re.options);
        }
        Bson::Binary(bin) => {
            if bin.subtype == BinarySubtype::Uuid && bin.bytes.len() == 16 {
                let h = hex_lower(&bin.bytes);
                out.push_str(&format!(
                    "UUID(\"{}-{}-{}-{}-{}\")",
                    &h[0..8],
                    &h[8..12],
                    &h[12..16],
                    &h[16..20],
                    &h[20..32]
                ));
            } else {
                let shown = if bin.bytes.len() > 80 {
                    &bin.bytes[..70]
                } else {
                    &bin.bytes[..]
                };
                out.push_str(&format!(
                    "BinData({}, {}",
                    u8::from(bin.subtype),
                    hex_upper(shown)
                ));
                out.push_str(if bin.bytes.len() > 80 { "...)" } else { ")" });
            }
        }
        Bson::JavaScriptCode(code) => out.push_str(code),
        Bson::JavaScriptCodeWithScope(cws) => out.push_str(&format!(
            "CodeWScope( {}, {})",
            cws.code,
            render_doc(&cws.scope)
        )),
        Bson::DbPointer(_) => out.push_str("DBRef(...)"),
    }
}

fn hex_lower(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn hex_upper(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02X}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    #[test]
    fn doubles_print_like_mongodb() {
        assert_eq!(double_nice(1.5), "1.5");
        assert_eq!(double_nice(42.0), "42.0");
        assert_eq!(double_nice(f64::NAN), "nan.0");
        assert_eq!(double_nice(f64::INFINITY), "inf.0");
        assert_eq!(double_nice(1e20), "1e+20.0");
        assert_eq!(double_nice(0.1), "0.1");
        assert_eq!(double_nice(-0.0), "-0.0");
        assert_eq!(format_g(100.0, 6), "100");
        assert_eq!(format_g(1.5, 6), "1.5");
        assert_eq!(format_g(0.0001, 6), "0.0001");
        assert_eq!(format_g(0.00001, 6), "1e-05");
    }

    #[test]
    fn documents_render_like_bsonobj_to_string() {
        let d = doc! {"v": [{"foo": [{"bar": "hello"}]}], "e": {}, "a": []};
        assert_eq!(
            render_doc(&d),
            "{ v: [ { foo: [ { bar: \"hello\" } ] } ], e: {}, a: [] }"
        );
        assert_eq!(
            render_element("$size", &Bson::String("a".into())),
            "$size: \"a\""
        );
    }

    #[test]
    fn prints_like_mongodb() {
        assert_eq!(render_doc(&doc! {"_id": 1}), "{ _id: 1 }");
        assert_eq!(
            render_doc(&doc! {"_id": "a", "b": 2.0}),
            "{ _id: \"a\", b: 2.0 }"
        );
        assert_eq!(
            render_doc(&doc! {"a": {"b": [1, 2]}}),
            "{ a: { b: [ 1, 2 ] } }"
        );
        assert_eq!(render_doc(&doc! {}), "{}");
    }
}
