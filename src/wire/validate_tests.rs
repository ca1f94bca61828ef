//! Tests of the validator against the bson crate's parser, on generated and broken documents.

use super::*;
use crate::document::keystring::tests::arb_bson;
use bson::spec::BinarySubtype;
use bson::{Binary, Bson, Document, JavaScriptCodeWithScope, RawDocumentBuf, doc, rawdoc};
use proptest::prelude::*;

fn bytes(doc: &Document) -> Vec<u8> {
    RawDocumentBuf::from_document(doc).unwrap().into_bytes()
}

fn check(bytes: &[u8]) -> Result<usize, MongoError> {
    validate_document(bytes, DEFAULT_MAX_BSON_DEPTH)
}

/// `{a: {a: ... {a: 1}}}` with `depth` nested objects.
fn nested(depth: usize, field: &str) -> Vec<u8> {
    let mut doc = rawdoc! {"a": 1};
    for _ in 0..depth {
        let mut outer = RawDocumentBuf::new();
        outer.append(field, doc);
        doc = outer;
    }
    doc.into_bytes()
}

fn error(bytes: &[u8]) -> (ErrorCode, String) {
    let err = check(bytes).unwrap_err();
    (err.code(), err.message().to_string())
}

#[test]
fn accepts_every_type_and_returns_the_length() {
    let doc = doc! {
        "_id": 1,
        "double": 1.5, "string": "é", "doc": {"x": [1, {"y": null}]}, "array": [],
        "binary": Binary {subtype: BinarySubtype::Generic, bytes: vec![1, 2]},
        "old": Binary {subtype: BinarySubtype::BinaryOld, bytes: vec![1, 2]},
        "undefined": Bson::Undefined, "oid": bson::oid::ObjectId::new(), "bool": true,
        "date": bson::DateTime::now(), "null": Bson::Null,
        "regex": bson::Regex {pattern: "a.*".into(), options: "i".into()},
        "code": Bson::JavaScriptCode("f()".into()),
        "scope": JavaScriptCodeWithScope {code: "g()".into(), scope: doc! {"v": {"w": 1}}},
        "int": 1, "ts": bson::Timestamp {time: 1, increment: 2}, "long": 2_i64,
        "decimal": "1.5".parse::<bson::Decimal128>().unwrap(),
        "min": Bson::MinKey, "max": Bson::MaxKey, "symbol": Bson::Symbol("s".into()),
    };
    let mut b = bytes(&doc);
    let len = b.len();
    assert_eq!(check(&b).unwrap(), len);
    // Bytes after the document are not the document's business.
    b.extend_from_slice(&[0xff, 0xff]);
    assert_eq!(check(&b).unwrap(), len);
}

#[test]
fn depth_is_refused_beyond_the_limit_with_mongodbs_error() {
    assert!(check(&nested(200, "a")).is_ok());
    let (code, message) = error(&nested(201, "a"));
    assert_eq!(code, ErrorCode::Overflow);
    let path = vec!["a"; 201].join(".");
    assert_eq!(
        message,
        format!(
            "BSONObj exceeds maximum nested object depth in element with field name '{path}' \
             in object with unknown _id"
        )
    );
    // The limit is the caller's (`maxBSONDepth`); arrays count as objects.
    assert!(validate_document(&nested(3, "a"), 3).is_ok());
    let err = validate_document(&nested(4, "a"), 3).unwrap_err();
    assert_eq!(err.code(), ErrorCode::Overflow);
    assert!(err.message().contains("field name 'a.a.a.a'"), "{err}");
    let mut array = doc! {"v": 1};
    for _ in 0..4 {
        array = doc! {"x": [Bson::Document(array)]};
    }
    assert_eq!(
        validate_document(&bytes(&array), 6).unwrap_err().code(),
        ErrorCode::Overflow
    );
    assert!(validate_document(&bytes(&array), 8).is_ok());
}

#[test]
fn ten_thousand_levels_are_refused_without_recursion() {
    let (code, _) = error(&nested(10_000, "a"));
    assert_eq!(code, ErrorCode::Overflow);
}

#[test]
fn structural_errors_are_invalid_bson() {
    let good = bytes(&doc! {"a": "xy", "b": 1});
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (vec![4, 0, 0], "BSON data has to be at least 5 bytes"),
        (vec![4, 0, 0, 0, 0], "BSON data has to be at least 5 bytes"),
        (
            {
                let mut b = good.clone();
                b[0] += 1;
                b
            },
            "Incorrect BSON length 23 should be less or equal to 22",
        ),
        (
            {
                let mut b = good.clone();
                let last = b.len() - 1;
                b[last] = 1;
                b
            },
            "BSON object not terminated with EOO",
        ),
        (
            {
                // The string's length claims more than the document holds.
                let mut b = good.clone();
                b[7] = 0x40;
                b
            },
            "BSON size is larger than buffer size",
        ),
        (
            {
                // "xy" loses its terminator.
                let mut b = good.clone();
                b[13] = b'z';
                b
            },
            "Not null terminated string",
        ),
        (
            {
                let mut b = good.clone();
                b[4] = 0x42;
                b
            },
            "Unrecognized BSON type 66",
        ),
    ];
    for (bad, message) in cases {
        let (code, got) = error(&bad);
        assert_eq!(code, ErrorCode::InvalidBSON, "{got}");
        assert!(
            got.starts_with(message),
            "expected {message:?}, got {got:?}"
        );
    }
    let mut bool_doc = bytes(&doc! {"t": true});
    bool_doc[7] = 2;
    assert_eq!(
        error(&bool_doc).1,
        "BSON bool is neither false nor true in element with field name 't' in object with \
         unknown _id"
    );
    // A nested length that disagrees with where the object ends.
    let mut inner = bytes(&doc! {"_id": "k", "d": {"x": 1}});
    let at = inner.len() - 1 - 12;
    inner[at] += 1;
    assert_eq!(
        error(&inner).1,
        "incorrect BSON length in element with field name 'd.x' in object with _id: \"k\""
    );
    let mut small = bytes(&doc! {"d": {}});
    small[7] = 4;
    assert!(
        error(&small)
            .1
            .starts_with("Nested BSON object has to be at least 5 bytes")
    );
}

#[test]
fn invalid_utf8_in_names_and_strings_is_refused() {
    let mut key = bytes(&doc! {"_id": 7, "ab": 1});
    let at = key.iter().rposition(|&b| b == b'a').unwrap();
    key[at] = 0xff;
    assert_eq!(
        error(&key),
        (
            ErrorCode::NonConformantBSON,
            "Found string that doesn't follow UTF-8 encoding. in element with field name \
             '\\xffb' in object with _id: 7"
                .to_string()
        )
    );
    let mut value = bytes(&doc! {"s": "ab"});
    value[11] = 0xc3;
    assert_eq!(error(&value).0, ErrorCode::NonConformantBSON);
    let mut regex = bytes(&doc! {"r": bson::Regex {pattern: "ab".into(), options: "".into()}});
    regex[7] = 0x80;
    assert_eq!(error(&regex).0, ErrorCode::NonConformantBSON);
}

#[test]
fn code_with_scope_lengths_are_checked() {
    let doc = doc! {"c": JavaScriptCodeWithScope {code: "f".into(), scope: doc! {"x": 1}}};
    let good = bytes(&doc);
    assert!(check(&good).is_ok());
    let mut bad = good.clone();
    // The whole value's length, one more than its parts.
    bad[7] += 1;
    assert_eq!(error(&bad).0, ErrorCode::InvalidBSON);
    // Two frames per code-with-scope count towards the depth.
    assert!(validate_document(&good, 1).is_err());
    assert!(validate_document(&good, 2).is_ok());
}

#[test]
fn old_binary_needs_a_matching_inner_length() {
    let mut b = bytes(&doc! {"b": Binary {subtype: BinarySubtype::BinaryOld, bytes: vec![9]}});
    assert!(check(&b).is_ok());
    // The inner length follows the subtype byte.
    b[12] = 2;
    assert_eq!(error(&b).0, ErrorCode::InvalidBSON);
}

#[test]
fn escapes_as_mongodb_prints_text() {
    assert_eq!(
        escape(b"a\0b\n\\\x01\x7f\xff"),
        "a\\0b\\n\\\\\\x01\\x7f\\xff"
    );
    assert_eq!(escape("é\u{85}".as_bytes()), "é\\xc2\\x85");
}

proptest! {
    #[test]
    fn every_encodable_document_validates(value in arb_bson()) {
        let doc = match value {
            Bson::Document(d) => d,
            other => doc! {"v": other},
        };
        // Some generated values (a regex with a 0 inside) cannot be encoded at all.
        let Ok(raw) = RawDocumentBuf::from_document(&doc) else { return Ok(()) };
        let b = raw.into_bytes();
        prop_assert_eq!(check(&b).unwrap(), b.len());
    }

    /// Whatever the bytes, validation answers without panicking, and what it accepts the
    /// `bson` crate reads in full.
    #[test]
    fn corrupted_documents_never_panic_and_accepted_ones_read(
        value in arb_bson(),
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
        cut in any::<prop::sample::Index>(),
        truncate in any::<bool>(),
    ) {
        let Ok(raw) = RawDocumentBuf::from_document(&doc! {"v": value}) else { return Ok(()) };
        let mut b = raw.into_bytes();
        for (at, byte) in flips {
            let i = at.index(b.len());
            b[i] = byte;
        }
        if truncate {
            b.truncate(cut.index(b.len()));
        }
        if let Ok(len) = check(&b) {
            let raw = RawDocumentBuf::from_bytes(b[..len].to_vec()).unwrap();
            prop_assert!(raw.to_document().is_ok());
        }
    }
}
