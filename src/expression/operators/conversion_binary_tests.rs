//! `$convert` between strings and binary data (`format`, `to: {type, subtype}`) and `$toUUID`.

use crate::expression::tests::{eval, failure};
use bson::spec::BinarySubtype;
use bson::{Binary, Bson, Document, bson, doc};

fn binary(subtype: u8, bytes: &[u8]) -> Bson {
    Bson::Binary(Binary {
        subtype: BinarySubtype::from(subtype),
        bytes: bytes.to_vec(),
    })
}

/// The bytes of the manual's example UUID, 867dee52-c331-484e-92d1-c56479b8e67e.
const UUID_BYTES: [u8; 16] = [
    0x86, 0x7d, 0xee, 0x52, 0xc3, 0x31, 0x48, 0x4e, 0x92, 0xd1, 0xc5, 0x64, 0x79, 0xb8, 0xe6, 0x7e,
];
const UUID_TEXT: &str = "867dee52-c331-484e-92d1-c56479b8e67e";

fn convert(spec: Bson, doc: &Document) -> crate::error::Result<Option<Bson>> {
    eval(bson!({"$convert": spec}), doc)
}

fn converted(spec: Bson) -> Bson {
    convert(spec, &doc! {}).unwrap().unwrap()
}

fn convert_error(spec: Bson) -> (i32, String) {
    failure(convert(spec, &doc! {}))
}

#[test]
fn strings_to_bin_data_by_format() {
    assert_eq!(
        converted(
            bson!({"input": "hn3uUsMxSE6S0cVkebjmfg==", "to": "binData", "format": "base64"})
        ),
        binary(0, &UUID_BYTES)
    );
    assert_eq!(
        converted(
            bson!({"input": "hn3uUsMxSE6S0cVkebjmfg", "to": "binData", "format": "base64url"})
        ),
        binary(0, &UUID_BYTES)
    );
    assert_eq!(
        converted(
            bson!({"input": "867DEE52c331484e92d1c56479b8e67e", "to": {"type": "binData", "subtype": 5}, "format": "hex"})
        ),
        binary(5, &UUID_BYTES)
    );
    assert_eq!(
        converted(bson!({"input": "héllo", "to": 5, "format": "utf8"})),
        binary(0, "héllo".as_bytes())
    );
    assert_eq!(
        converted(
            bson!({"input": UUID_TEXT, "to": {"type": "binData", "subtype": 4}, "format": "uuid"})
        ),
        binary(4, &UUID_BYTES)
    );
    assert_eq!(
        converted(
            bson!({"input": "", "to": {"type": "binData", "subtype": 128}, "format": "base64"})
        ),
        binary(128, &[])
    );
}

#[test]
fn bin_data_to_strings_by_format() {
    let uuid = binary(4, &UUID_BYTES);
    let blob = binary(0, b"hello?>");
    let d = doc! {"uuid": uuid.clone(), "blob": blob};
    let run = |input: &str, format: &str| {
        convert(
            bson!({"input": input, "to": "string", "format": format}),
            &d,
        )
        .unwrap()
        .unwrap()
    };
    assert_eq!(run("$uuid", "uuid"), bson!(UUID_TEXT));
    assert_eq!(run("$uuid", "auto"), bson!(UUID_TEXT));
    assert_eq!(run("$uuid", "base64"), bson!("hn3uUsMxSE6S0cVkebjmfg=="));
    assert_eq!(run("$blob", "auto"), bson!("aGVsbG8/Pg=="));
    assert_eq!(run("$blob", "base64url"), bson!("aGVsbG8_Pg"));
    assert_eq!(run("$blob", "hex"), bson!("68656C6C6F3F3E"));
    assert_eq!(run("$blob", "utf8"), bson!("hello?>"));
    // $toString prints binary data as the `auto` format does.
    assert_eq!(
        eval(bson!({"$toString": "$uuid"}), &d).unwrap(),
        Some(bson!(UUID_TEXT))
    );
    // binData to binData keeps the value, and only its own subtype.
    assert_eq!(
        convert(
            bson!({"input": "$uuid", "to": {"type": "binData", "subtype": 4}}),
            &d
        )
        .unwrap(),
        Some(uuid)
    );
    assert_eq!(
        failure(convert(bson!({"input": "$uuid", "to": "binData"}), &d)),
        (
            241,
            "Conversions between different BinData subtypes are not supported".into()
        )
    );
}

#[test]
fn failed_conversions_are_covered_by_on_error() {
    let d = doc! {"blob": binary(0, &[0xff, 0xfe])};
    assert_eq!(
        failure(convert(bson!({"input": "$blob", "to": "string", "format": "uuid"}), &d)),
        (
            241,
            "Failed to convert 'BinData(0, FFFE)' to string in $convert with no onError value: BinData does not represent a valid UUID".into()
        )
    );
    assert_eq!(
        failure(convert(
            bson!({"input": "$blob", "to": "string", "format": "utf8"}),
            &d
        ))
        .0,
        241
    );
    assert_eq!(
        convert_error(bson!({"input": "abc", "to": "binData", "format": "uuid"})),
        (
            241,
            "Failed to parse BinData 'abc' in $convert with no onError value: Only the 'uuid' format is allowed with the UUID subtype".into()
        )
    );
    assert_eq!(
        convert_error(bson!({"input": "abc", "to": {"type": "binData", "subtype": 4}, "format": "uuid"})),
        (
            241,
            "Failed to parse BinData 'abc' in $convert with no onError value: Invalid UUID string: abc".into()
        )
    );
    let (code, message) =
        convert_error(bson!({"input": "a!==", "to": "binData", "format": "base64"}));
    assert_eq!(code, 241);
    assert!(
        message.starts_with("Failed to parse BinData 'a!==' in $convert with no onError value: "),
        "{message}"
    );
    assert_eq!(
        convert_error(bson!({"input": "abc", "to": "binData", "format": "hex"})).0,
        241
    );
    assert_eq!(
        convert_error(bson!({"input": "abc", "to": "binData", "format": "auto"})).0,
        241
    );
    assert_eq!(
        convert_error(bson!({"input": 5, "to": "binData", "format": "hex"})),
        (
            241,
            "Unsupported conversion from int to binData in $convert with no onError value".into()
        )
    );
    for spec in [
        bson!({"input": "abc", "to": "binData", "format": "uuid", "onError": "bad"}),
        bson!({"input": 5, "to": "binData", "onError": "bad"}),
        bson!({"input": "$blob", "to": "string", "format": "uuid", "onError": "bad"}),
    ] {
        assert_eq!(convert(spec, &d).unwrap(), Some(bson!("bad")));
    }
}

#[test]
fn argument_errors_are_not_covered_by_on_error() {
    let d = doc! {"blob": binary(0, b"x")};
    let run = |spec: Bson| failure(convert(spec, &d));
    assert_eq!(
        run(bson!({"input": "$blob", "to": "string", "onError": 0})),
        (
            4341115,
            "Format must be speficied when converting from 'binData' to 'string'".into()
        )
    );
    assert_eq!(
        run(bson!({"input": "eA==", "to": "binData", "format": null, "onError": 0})),
        (
            4341115,
            "Format must be speficied when converting from 'string' to 'binData'".into()
        )
    );
    assert_eq!(
        run(bson!({"input": "$blob", "to": "string", "format": "base32", "onError": 0})),
        (
            4341125,
            "Invalid 'format' argument for $convert: base32".into()
        )
    );
    assert_eq!(
        run(bson!({"input": "$blob", "to": "string", "format": 1, "onError": 0})),
        (
            4341114,
            "$convert requires that 'format' be a string, found: int with value 1".into()
        )
    );
    assert_eq!(
        run(
            bson!({"input": "eA==", "to": {"type": "binData", "subtype": 9}, "format": "base64", "onError": 0})
        ),
        (
            4341107,
            "In $convert, numeric value for 'subtype' does not correspond to a BinData type: 9"
                .into()
        )
    );
    assert_eq!(
        run(
            bson!({"input": "eA==", "to": {"type": "binData", "subtype": "newUUID"}, "format": "base64"})
        ),
        (
            4341108,
            "For BinData, $convert's 'subtype' argument must be a number, but is string".into()
        )
    );
    assert_eq!(
        run(
            bson!({"input": "eA==", "to": {"type": "binData", "subtype": 1.5}, "format": "base64"})
        )
        .0,
        4341106
    );
    // A format is checked only when a conversion happens, and other conversions ignore it.
    assert_eq!(
        convert(bson!({"input": null, "to": "string", "format": 1}), &d).unwrap(),
        Some(Bson::Null)
    );
    assert_eq!(
        convert(bson!({"input": 12, "to": "string", "format": "hex"}), &d).unwrap(),
        Some(bson!("12"))
    );
    // binData converts to true.
    assert_eq!(
        convert(bson!({"input": "$blob", "to": "bool"}), &d).unwrap(),
        Some(Bson::Boolean(true))
    );
}

#[test]
fn to_uuid() {
    let d = doc! {"name": "laptop", "UUID": UUID_TEXT};
    assert_eq!(
        eval(bson!({"$toUUID": "$UUID"}), &d).unwrap(),
        Some(binary(4, &UUID_BYTES))
    );
    assert_eq!(
        eval(bson!({"$toUUID": UUID_TEXT.to_uppercase()}), &d).unwrap(),
        Some(binary(4, &UUID_BYTES))
    );
    assert_eq!(
        eval(bson!({"$toUUID": "$missing"}), &d).unwrap(),
        Some(Bson::Null)
    );
    assert_eq!(
        failure(eval(bson!({"$toUUID": "$name"}), &d)),
        (
            241,
            "Failed to parse BinData 'laptop' in $convert with no onError value: Invalid UUID string: laptop".into()
        )
    );
    assert_eq!(
        failure(eval(bson!({"$toUUID": 1}), &d)),
        (
            241,
            "Unsupported conversion from int to binData in $convert with no onError value".into()
        )
    );
    assert_eq!(failure(eval(bson!({"$toUUID": [1, 2]}), &d)).0, 16020);
}
