//! Type operators and conversions (`$type $isNumber $convert $toBool $toInt $toLong $toDouble
//! $toDecimal $toString $toObjectId $toDate $toUUID`): the manual's conversion tables, null
//! and missing inputs, `onError`/`onNull`.

use super::{Case, ErrorCase, constant, date, dec, fails, long, on};
use mongodb::bson::spec::BinarySubtype;
use mongodb::bson::{Binary, Bson, Regex, Timestamp, bson, doc, oid::ObjectId};

fn oid(hex: &str) -> Bson {
    Bson::ObjectId(ObjectId::parse_str(hex).unwrap())
}

pub fn cases() -> Vec<Case> {
    let typed = doc! {
        "int": 8, "long": long(8), "double": 8.5, "decimal": dec("8.5"), "string": "8",
        "array": [41.63, 88.19], "object": {"a": "apple"}, "null": null, "bool": true,
        "oid": oid("5ab9c3da31c2ab715d421285"), "date": date("2018-03-27T16:58:51.538Z"),
        "regex": Bson::RegularExpression(Regex { pattern: "a".into(), options: "".into() }),
        "bin": Bson::Binary(Binary { subtype: BinarySubtype::Generic, bytes: vec![1] }),
        "ts": Bson::Timestamp(Timestamp { time: 1, increment: 1 }),
    };
    let type_of = |name: &'static str, field: &str, expected: &str| {
        on(
            name,
            typed.clone(),
            bson!({"$type": format!("${field}")}),
            expected,
        )
    };
    vec![
        type_of("type int", "int", "int"),
        type_of("type long", "long", "long"),
        type_of("type double", "double", "double"),
        type_of("type decimal", "decimal", "decimal"),
        type_of("type string", "string", "string"),
        type_of("type array", "array", "array"),
        type_of("type object", "object", "object"),
        type_of("type null", "null", "null"),
        type_of("type bool", "bool", "bool"),
        type_of("type objectId", "oid", "objectId"),
        type_of("type date", "date", "date"),
        type_of("type regex", "regex", "regex"),
        type_of("type binData", "bin", "binData"),
        type_of("type timestamp", "ts", "timestamp"),
        type_of("type missing", "nothing", "missing"),
        on(
            "isNumber int",
            typed.clone(),
            bson!({"$isNumber": "$int"}),
            true,
        ),
        on(
            "isNumber long",
            typed.clone(),
            bson!({"$isNumber": "$long"}),
            true,
        ),
        on(
            "isNumber decimal",
            typed.clone(),
            bson!({"$isNumber": "$decimal"}),
            true,
        ),
        on(
            "isNumber string",
            typed.clone(),
            bson!({"$isNumber": "$string"}),
            false,
        ),
        on(
            "isNumber null",
            typed.clone(),
            bson!({"$isNumber": "$null"}),
            false,
        ),
        on(
            "isNumber missing",
            typed.clone(),
            bson!({"$isNumber": "$nothing"}),
            false,
        ),
        // $convert
        constant(
            "convert bool to int",
            bson!({"$convert": {"input": true, "to": "int"}}),
            1,
        ),
        constant(
            "convert string to double",
            bson!({"$convert": {"input": "5", "to": "double"}}),
            5.0,
        ),
        constant(
            "convert numeric to",
            bson!({"$convert": {"input": "5", "to": 16}}),
            5,
        ),
        constant(
            "convert onError",
            bson!({"$convert": {"input": "abc", "to": "int", "onError": "Error"}}),
            "Error",
        ),
        on(
            "convert onNull",
            doc! {"price": null},
            bson!({"$convert": {"input": "$price", "to": "decimal", "onNull": dec("0")}}),
            dec("0"),
        ),
        on(
            "convert onNull missing",
            doc! {},
            bson!({"$convert": {"input": "$price", "to": "decimal", "onNull": dec("0")}}),
            dec("0"),
        ),
        on(
            "convert null",
            doc! {},
            bson!({"$convert": {"input": "$price", "to": "int"}}),
            Bson::Null,
        ),
        // $toBool
        constant("toBool true", bson!({"$toBool": true}), true),
        constant("toBool zero", bson!({"$toBool": 0}), false),
        constant("toBool double", bson!({"$toBool": 1.99999}), true),
        constant("toBool decimal", bson!({"$toBool": dec("5")}), true),
        constant("toBool decimal zero", bson!({"$toBool": dec("0")}), false),
        constant("toBool false string", bson!({"$toBool": "false"}), true),
        constant("toBool empty string", bson!({"$toBool": ""}), true),
        on(
            "toBool date",
            typed.clone(),
            bson!({"$toBool": "$date"}),
            true,
        ),
        on(
            "toBool null",
            typed.clone(),
            bson!({"$toBool": "$null"}),
            Bson::Null,
        ),
        // $toInt, $toLong
        constant("toInt double", bson!({"$toInt": 5.6}), 5),
        constant("toInt string", bson!({"$toInt": "100"}), 100),
        constant("toInt bool", bson!({"$toInt": true}), 1),
        constant("toInt long", bson!({"$toInt": long(5000)}), 5000),
        constant("toInt decimal", bson!({"$toInt": dec("-5.5")}), -5),
        on(
            "toInt missing",
            typed.clone(),
            bson!({"$toInt": "$nothing"}),
            Bson::Null,
        ),
        constant("toLong bool", bson!({"$toLong": true}), long(1)),
        constant("toLong double", bson!({"$toLong": 5.6}), long(5)),
        constant("toLong decimal", bson!({"$toLong": dec("-5.5")}), long(-5)),
        constant("toLong int", bson!({"$toLong": 5}), long(5)),
        constant("toLong string", bson!({"$toLong": "-2"}), long(-2)),
        on(
            "toLong date",
            typed.clone(),
            bson!({"$toLong": "$date"}),
            long(1522169931538),
        ),
        // $toDouble, $toDecimal
        constant("toDouble bool", bson!({"$toDouble": true}), 1.0),
        constant("toDouble decimal", bson!({"$toDouble": dec("5.5")}), 5.5),
        constant("toDouble long", bson!({"$toDouble": long(5)}), 5.0),
        constant("toDouble string", bson!({"$toDouble": "-5.5"}), -5.5),
        constant(
            "toDouble exponent",
            bson!({"$toDouble": "5e10"}),
            50000000000.0,
        ),
        on(
            "toDouble date",
            typed.clone(),
            bson!({"$toDouble": "$date"}),
            1522169931538.0,
        ),
        constant("toDecimal bool", bson!({"$toDecimal": true}), dec("1")),
        constant(
            "toDecimal double",
            bson!({"$toDecimal": 2.5}),
            dec("2.50000000000000"),
        ),
        constant("toDecimal int", bson!({"$toDecimal": 5}), dec("5")),
        constant(
            "toDecimal long",
            bson!({"$toDecimal": long(10000)}),
            dec("10000"),
        ),
        constant(
            "toDecimal string",
            bson!({"$toDecimal": "-5.5"}),
            dec("-5.5"),
        ),
        on(
            "toDecimal date",
            typed.clone(),
            bson!({"$toDecimal": "$date"}),
            dec("1522169931538"),
        ),
        // $toString
        constant("toString bool", bson!({"$toString": true}), "true"),
        constant("toString double", bson!({"$toString": 2.5}), "2.5"),
        constant("toString int", bson!({"$toString": 2}), "2"),
        constant("toString long", bson!({"$toString": long(1000)}), "1000"),
        constant("toString decimal", bson!({"$toString": dec("1.5")}), "1.5"),
        on(
            "toString oid",
            typed.clone(),
            bson!({"$toString": "$oid"}),
            "5ab9c3da31c2ab715d421285",
        ),
        on(
            "toString date",
            typed.clone(),
            bson!({"$toString": "$date"}),
            "2018-03-27T16:58:51.538Z",
        ),
        on(
            "toString null",
            typed.clone(),
            bson!({"$toString": "$null"}),
            Bson::Null,
        ),
        // $toObjectId, $toDate, $toUUID
        constant(
            "toObjectId",
            bson!({"$toObjectId": "5ab9cbfa31c2ab715d42129e"}),
            oid("5ab9cbfa31c2ab715d42129e"),
        ),
        constant(
            "toDate double",
            bson!({"$toDate": 120000000000.5}),
            date("1973-10-20T21:20:00Z"),
        ),
        constant(
            "toDate decimal",
            bson!({"$toDate": dec("1253372036000.50")}),
            date("2009-09-19T14:53:56Z"),
        ),
        constant(
            "toDate long",
            bson!({"$toDate": long(1100000000000)}),
            date("2004-11-09T11:33:20Z"),
        ),
        constant(
            "toDate negative long",
            bson!({"$toDate": long(-1100000000000)}),
            date("1935-02-22T12:26:40Z"),
        ),
        on(
            "toDate objectId",
            typed.clone(),
            bson!({"$toDate": "$oid"}),
            date("2018-03-27T04:08:58Z"),
        ),
        constant(
            "toDate date string",
            bson!({"$toDate": "2018-03-03"}),
            date("2018-03-03T00:00:00Z"),
        ),
        constant(
            "toDate offset string",
            bson!({"$toDate": "2018-03-20 11:00:06 +0500"}),
            date("2018-03-20T06:00:06Z"),
        ),
        on(
            "toDate null",
            typed.clone(),
            bson!({"$toDate": "$null"}),
            Bson::Null,
        ),
        constant(
            "toUUID",
            bson!({"$toUUID": "867dee52-c331-484e-92d1-c56479b8e67e"}),
            Bson::Binary(Binary {
                subtype: BinarySubtype::Uuid,
                bytes: vec![
                    0x86, 0x7d, 0xee, 0x52, 0xc3, 0x31, 0x48, 0x4e, 0x92, 0xd1, 0xc5, 0x64, 0x79,
                    0xb8, 0xe6, 0x7e,
                ],
            }),
        ),
        on(
            "toUUID null",
            typed,
            bson!({"$toUUID": "$null"}),
            Bson::Null,
        ),
    ]
}

pub fn errors() -> Vec<ErrorCase> {
    vec![
        fails(
            "toInt text",
            doc! {"s": "abc"},
            bson!({"$toInt": "$s"}),
            241,
        ),
        fails(
            "toInt long overflow",
            doc! {"n": long(1 << 40)},
            bson!({"$toInt": "$n"}),
            241,
        ),
        fails(
            "toObjectId text",
            doc! {"s": "x"},
            bson!({"$toObjectId": "$s"}),
            241,
        ),
        fails(
            "toDate bool",
            doc! {"b": true},
            bson!({"$toDate": "$b"}),
            241,
        ),
        fails(
            "toUUID text",
            doc! {"s": "not a uuid"},
            bson!({"$toUUID": "$s"}),
            241,
        ),
    ]
}
