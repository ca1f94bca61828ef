//! String and regex operators: the manual's examples, multi-byte characters (bytes against
//! code points), null and missing operands.

use super::{Case, ErrorCase, constant, fails, on};
use mongodb::bson::{Bson, bson, doc};

pub fn cases() -> Vec<Case> {
    let item = doc! {"item": "ABC1", "quarter": "13Q1", "description": "product 1"};
    let no_description = doc! {"item": "ABC2", "quarter": "13Q4", "description": null};
    let matches = |line: &str| doc! {"description": line};
    vec![
        // $concat
        on(
            "concat manual",
            item.clone(),
            bson!({"$concat": ["$item", " - ", "$description"]}),
            "ABC1 - product 1",
        ),
        on(
            "concat null",
            no_description.clone(),
            bson!({"$concat": ["$item", " - ", "$description"]}),
            Bson::Null,
        ),
        on(
            "concat missing",
            doc! {},
            bson!({"$concat": ["a", "$b"]}),
            Bson::Null,
        ),
        constant("concat none", bson!({"$concat": []}), ""),
        // substrings
        on(
            "substr manual year",
            item.clone(),
            bson!({"$substr": ["$quarter", 0, 2]}),
            "13",
        ),
        on(
            "substr manual quarter",
            item.clone(),
            bson!({"$substr": ["$quarter", 2, -1]}),
            "Q1",
        ),
        on(
            "substrBytes manual",
            item.clone(),
            bson!({"$substrBytes": ["$quarter", 2, -1]}),
            "Q1",
        ),
        constant(
            "substrBytes multibyte",
            bson!({"$substrBytes": ["寿司sushi", 0, 3]}),
            "寿",
        ),
        on(
            "substrCP manual",
            item.clone(),
            bson!({"$substrCP": ["$quarter", 0, 2]}),
            "13",
        ),
        constant(
            "substrCP multibyte",
            bson!({"$substrCP": ["寿司sushi", 0, 3]}),
            "寿司s",
        ),
        on(
            "substrCP null",
            doc! {"s": null},
            bson!({"$substrCP": ["$s", 0, 2]}),
            "",
        ),
        constant("substrCP past end", bson!({"$substrCP": ["abc", 5, 2]}), ""),
        // case
        on(
            "toLower manual",
            item.clone(),
            bson!({"$toLower": "$item"}),
            "abc1",
        ),
        on(
            "toUpper manual",
            item.clone(),
            bson!({"$toUpper": "$description"}),
            "PRODUCT 1",
        ),
        on(
            "toLower null",
            no_description.clone(),
            bson!({"$toLower": "$description"}),
            "",
        ),
        on("toUpper missing", doc! {}, bson!({"$toUpper": "$x"}), ""),
        constant("toUpper number", bson!({"$toUpper": 12}), "12"),
        // $split
        on(
            "split manual",
            doc! {"city": "Berkeley, CA"},
            bson!({"$split": ["$city", ", "]}),
            bson!(["Berkeley", "CA"]),
        ),
        constant(
            "split edges",
            bson!({"$split": ["-a--b-", "-"]}),
            bson!(["", "a", "", "b", ""]),
        ),
        on(
            "split null",
            doc! {"city": null},
            bson!({"$split": ["$city", ","]}),
            Bson::Null,
        ),
        constant("split empty", bson!({"$split": ["", ","]}), bson!([""])),
        // lengths
        on(
            "strLenBytes manual",
            doc! {"name": "éclair"},
            bson!({"$strLenBytes": "$name"}),
            7,
        ),
        constant("strLenBytes cjk", bson!({"$strLenBytes": "寿司"}), 6),
        constant("strLenBytes empty", bson!({"$strLenBytes": ""}), 0),
        on(
            "strLenCP manual",
            doc! {"name": "éclair"},
            bson!({"$strLenCP": "$name"}),
            6,
        ),
        constant("strLenCP cjk", bson!({"$strLenCP": "寿司"}), 2),
        // $strcasecmp
        on(
            "strcasecmp less",
            item.clone(),
            bson!({"$strcasecmp": ["$quarter", "13q4"]}),
            -1,
        ),
        on(
            "strcasecmp equal",
            no_description.clone(),
            bson!({"$strcasecmp": ["$quarter", "13q4"]}),
            0,
        ),
        constant(
            "strcasecmp greater",
            bson!({"$strcasecmp": ["14Q2", "13q4"]}),
            1,
        ),
        on(
            "strcasecmp null",
            doc! {},
            bson!({"$strcasecmp": [null, ""]}),
            0,
        ),
        // trimming
        on(
            "trim manual",
            doc! {"description": " product 1 "},
            bson!({"$trim": {"input": "$description"}}),
            "product 1",
        ),
        constant(
            "trim chars",
            bson!({"$trim": {"input": "xxhixx", "chars": "x"}}),
            "hi",
        ),
        constant("ltrim", bson!({"$ltrim": {"input": "  hi  "}}), "hi  "),
        constant("rtrim", bson!({"$rtrim": {"input": "  hi  "}}), "  hi"),
        constant(
            "rtrim chars",
            bson!({"$rtrim": {"input": "hi.!.", "chars": ".!"}}),
            "hi",
        ),
        on(
            "trim null",
            doc! {},
            bson!({"$trim": {"input": "$missing"}}),
            Bson::Null,
        ),
        constant(
            "trim unicode spaces",
            bson!({"$trim": {"input": "\u{2003}a\u{00a0}"}}),
            "a",
        ),
        // index of
        constant(
            "indexOfBytes",
            bson!({"$indexOfBytes": ["cafétéria", "t"]}),
            5,
        ),
        constant("indexOfCP", bson!({"$indexOfCP": ["cafétéria", "t"]}), 4),
        on(
            "indexOfBytes manual",
            doc! {"item": "foo"},
            bson!({"$indexOfBytes": ["$item", "foo"]}),
            0,
        ),
        on(
            "indexOfBytes not found",
            doc! {"item": "fo"},
            bson!({"$indexOfBytes": ["$item", "foo"]}),
            -1,
        ),
        constant(
            "indexOfBytes start",
            bson!({"$indexOfBytes": ["abcabc", "b", 2]}),
            4,
        ),
        constant(
            "indexOfBytes start end",
            bson!({"$indexOfBytes": ["abcabc", "b", 2, 3]}),
            -1,
        ),
        constant(
            "indexOfCP empty token",
            bson!({"$indexOfCP": ["abc", ""]}),
            0,
        ),
        on(
            "indexOfCP null",
            doc! {},
            bson!({"$indexOfCP": ["$s", "a"]}),
            Bson::Null,
        ),
        // replacing
        on(
            "replaceOne manual",
            doc! {"item": "blue paint"},
            bson!({"$replaceOne": {"input": "$item", "find": "blue paint", "replacement": "red paint"}}),
            "red paint",
        ),
        constant(
            "replaceOne first only",
            bson!({"$replaceOne": {"input": "a-b-c", "find": "-", "replacement": "+"}}),
            "a+b-c",
        ),
        on(
            "replaceAll manual",
            doc! {"item": "blue paint with blue paintbrush"},
            bson!({"$replaceAll": {"input": "$item", "find": "blue paint", "replacement": "red paint"}}),
            "red paint with red paintbrush",
        ),
        on(
            "replaceAll null",
            doc! {},
            bson!({"$replaceAll": {"input": "$item", "find": "a", "replacement": "b"}}),
            Bson::Null,
        ),
        // regexes
        on(
            "regexMatch manual",
            matches("Single LINE description."),
            bson!({"$regexMatch": {"input": "$description", "regex": "line"}}),
            false,
        ),
        on(
            "regexMatch options",
            matches("Single LINE description."),
            bson!({"$regexMatch": {"input": "$description", "regex": "line", "options": "i"}}),
            true,
        ),
        on(
            "regexMatch regex object",
            matches("First lines\nsecond line"),
            bson!({"$regexMatch": {"input": "$description", "regex": Bson::RegularExpression(mongodb::bson::Regex {pattern: "^second".into(), options: "m".into()})}}),
            true,
        ),
        on(
            "regexMatch null",
            doc! {},
            bson!({"$regexMatch": {"input": "$description", "regex": "x"}}),
            false,
        ),
        on(
            "regexFind manual",
            matches("Single LINE description."),
            bson!({"$regexFind": {"input": "$description", "regex": "line", "options": "i"}}),
            bson!({"match": "LINE", "idx": 7, "captures": []}),
        ),
        on(
            "regexFind captures",
            doc! {"email": "x: jane@example.com"},
            bson!({"$regexFind": {"input": "$email", "regex": "([a-z]+)@([a-z.]+)"}}),
            bson!({"match": "jane@example.com", "idx": 3, "captures": ["jane", "example.com"]}),
        ),
        constant(
            "regexFind code point index",
            bson!({"$regexFind": {"input": "éa", "regex": "a"}}),
            bson!({"match": "a", "idx": 1, "captures": []}),
        ),
        constant(
            "regexFind unmatched capture",
            bson!({"$regexFind": {"input": "ab", "regex": "(c)?b"}}),
            bson!({"match": "b", "idx": 1, "captures": [null]}),
        ),
        on(
            "regexFind no match",
            matches("abc"),
            bson!({"$regexFind": {"input": "$description", "regex": "z"}}),
            Bson::Null,
        ),
        on(
            "regexFindAll manual",
            matches("first line\nsecond line"),
            bson!({"$regexFindAll": {"input": "$description", "regex": "line"}}),
            bson!([{"match": "line", "idx": 6, "captures": []}, {"match": "line", "idx": 18, "captures": []}]),
        ),
        on(
            "regexFindAll missing",
            doc! {},
            bson!({"$regexFindAll": {"input": "$description", "regex": "line"}}),
            bson!([]),
        ),
    ]
}

pub fn errors() -> Vec<ErrorCase> {
    vec![
        fails(
            "concat number",
            doc! {"n": 1},
            bson!({"$concat": ["a", "$n"]}),
            16702,
        ),
        fails(
            "strLenBytes number",
            doc! {"n": 1},
            bson!({"$strLenBytes": "$n"}),
            34473,
        ),
        fails("strLenCP null", doc! {}, bson!({"$strLenCP": "$s"}), 34471),
        fails(
            "split empty separator",
            doc! {"s": "a"},
            bson!({"$split": ["$s", ""]}),
            40087,
        ),
        fails(
            "substrBytes inside a character",
            doc! {"s": "寿司"},
            bson!({"$substrBytes": ["$s", 1, 2]}),
            28656,
        ),
        fails(
            "indexOfBytes negative start",
            doc! {"s": "a"},
            bson!({"$indexOfBytes": ["$s", "a", -1]}),
            40097,
        ),
        fails(
            "regexMatch number input",
            doc! {"n": 1},
            bson!({"$regexMatch": {"input": "$n", "regex": "a"}}),
            51104,
        ),
        fails(
            "regexFind bad pattern",
            doc! {"s": "a"},
            bson!({"$regexFind": {"input": "$s", "regex": "("}}),
            51111,
        ),
    ]
}
