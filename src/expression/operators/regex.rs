//! Regular expression operators: `$regexMatch`, `$regexFind`, `$regexFindAll`, with named
//! arguments `{input, regex, options}`; `regex` is a string or a BSON regex. Patterns are
//! compiled by [`MongoRegex`] (PCRE2, as MongoDB's), once per thread for a repeated pattern.

use super::{Args, Expression, Scope};
use super::{Arity, Operator};
use crate::error::{MongoError, Result};
use crate::expression::mongo_regex::{MatchFailure, MongoRegex, RegexMatch};
use crate::expression::value::{Value, bson_type_name, is_nullish};
use bson::{Bson, Document};

pub(super) static OPERATORS: &[Operator] = &[
    Operator {
        name: "$regexFind",
        arity: Arity::Any,
        parse: parse_regex,
        eval: regex_find,
    },
    Operator {
        name: "$regexFindAll",
        arity: Arity::Any,
        parse: parse_regex,
        eval: regex_find_all,
    },
    Operator {
        name: "$regexMatch",
        arity: Arity::Any,
        parse: parse_regex,
        eval: regex_match,
    },
];

/// `{input, regex, options}` into `[input, regex]` or `[input, regex, options]`.
pub fn parse_regex(name: &'static str, argument: &Bson, scope: &Scope) -> Result<Vec<Expression>> {
    let Bson::Document(spec) = argument else {
        return Err(MongoError::location(
            51103,
            format!(
                "{name} expects an object of named arguments but found: {}",
                bson_type_name(argument)
            ),
        ));
    };
    let (mut input, mut regex, mut options) = (None, None, None);
    for (key, value) in spec {
        let slot = match key.as_str() {
            "input" => &mut input,
            "regex" => &mut regex,
            "options" => &mut options,
            _ => {
                return Err(MongoError::location(
                    31024,
                    format!("{name} found an unknown argument: {key}"),
                ));
            }
        };
        *slot = Some(Expression::parse_in(value, scope)?);
    }
    let input = input
        .ok_or_else(|| MongoError::location(31022, format!("{name} requires 'input' parameter")))?;
    let regex = regex
        .ok_or_else(|| MongoError::location(31023, format!("{name} requires 'regex' parameter")))?;
    Ok([input, regex].into_iter().chain(options).collect())
}

/// Whether the regex matches; false when the input or the regex is null or missing.
pub fn regex_match(args: &Args) -> Result<Value> {
    let matched = match prepare(args, "$regexMatch")? {
        Some((input, re)) => re
            .matches(&input)
            .map_err(|failure| execution_error(failure, "$regexMatch"))?,
        None => false,
    };
    Ok(Some(Bson::Boolean(matched)))
}

/// The first match as `{match, idx, captures}`, or null.
pub fn regex_find(args: &Args) -> Result<Value> {
    let Some((input, re)) = prepare(args, "$regexFind")? else {
        return Ok(Some(Bson::Null));
    };
    let found = re
        .find_at(&input, 0)
        .map_err(|failure| execution_error(failure, "$regexFind"))?;
    Ok(Some(found.map_or(Bson::Null, |found| {
        let idx = input[..found.whole.start].chars().count();
        Bson::Document(match_document(&input, &found, idx))
    })))
}

/// Every match, left to right and without overlaps; an empty match moves the search one
/// character on. Empty when the input or the regex is null or missing.
pub fn regex_find_all(args: &Args) -> Result<Value> {
    let Some((input, re)) = prepare(args, "$regexFindAll")? else {
        return Ok(Some(Bson::Array(Vec::new())));
    };
    let mut matches = Vec::new();
    // The search position, in bytes and in code points.
    let (mut byte, mut code_point) = (0usize, 0usize);
    // The first search happens even on an empty input, which an empty pattern matches.
    while let Some(found) = re
        .find_at(&input, byte)
        .map_err(|failure| execution_error(failure, "$regexFindAll"))?
    {
        code_point += input[byte..found.whole.start].chars().count();
        byte = found.whole.start;
        matches.push(Bson::Document(match_document(&input, &found, code_point)));
        if found.whole.is_empty() {
            let Some(next) = input[byte..].chars().next() else {
                break;
            };
            byte += next.len_utf8();
            code_point += 1;
        } else {
            code_point += input[found.whole.clone()].chars().count();
            byte = found.whole.end;
        }
        if byte >= input.len() {
            break;
        }
    }
    Ok(Some(Bson::Array(matches)))
}

/// `{match, idx, captures}`: `idx` counts code points; a group that took no part is null.
fn match_document(input: &str, found: &RegexMatch, idx: usize) -> Document {
    let captures = found
        .groups
        .iter()
        .map(|group| {
            group
                .clone()
                .map_or(Bson::Null, |range| Bson::String(input[range].to_string()))
        })
        .collect();
    let mut doc = Document::new();
    doc.insert("match", input[found.whole.clone()].to_string());
    doc.insert("idx", i32::try_from(idx).unwrap_or(i32::MAX));
    doc.insert("captures", Bson::Array(captures));
    doc
}

/// Validates the arguments (regex and options first, then the input) and compiles the
/// pattern; `None` when the input or the pattern is null or missing.
fn prepare(args: &Args, name: &str) -> Result<Option<(String, MongoRegex)>> {
    let input = args.eval(0)?;
    let regex = args.eval(1)?;
    let options = args.eval(2)?;
    let type_error = |code, field: &str, types: &str| {
        MongoError::location(
            code,
            format!("{name} needs '{field}' to be of type {types}"),
        )
    };
    let options = match options {
        value if is_nullish(value.as_ref()) => None,
        Some(Bson::String(s)) => Some(s),
        _ => return Err(type_error(51106, "options", "string")),
    };
    let (pattern, options) = match regex {
        value if is_nullish(value.as_ref()) => (None, options),
        Some(Bson::String(pattern)) => (Some(pattern), options),
        Some(Bson::RegularExpression(regex)) => {
            if regex.options.is_empty() {
                (Some(regex.pattern), options)
            } else if options.is_some() {
                return Err(MongoError::location(
                    51107,
                    format!(
                        "{name}: found regex option(s) specified in both 'regex' and 'option' fields"
                    ),
                ));
            } else {
                (Some(regex.pattern), Some(regex.options))
            }
        }
        _ => return Err(type_error(51105, "regex", "string or regex")),
    };
    if pattern.as_ref().is_some_and(|p| p.contains('\0')) {
        return Err(MongoError::location(
            51109,
            format!("{name}: regular expression cannot contain an embedded null byte"),
        ));
    }
    if options.as_ref().is_some_and(|o| o.contains('\0')) {
        return Err(MongoError::location(
            51110,
            format!("{name}: regular expression options cannot contain an embedded null byte"),
        ));
    }
    let compiled = match pattern {
        Some(pattern) => Some(
            MongoRegex::cached(&pattern, options.as_deref().unwrap_or(""))
                .map_err(|err| compile_error(err, name))?,
        ),
        None => None,
    };
    let input = match input {
        value if is_nullish(value.as_ref()) => None,
        Some(Bson::String(s)) => Some(s),
        _ => return Err(type_error(51104, "input", "string")),
    };
    Ok(input.zip(compiled))
}

/// MongoDB's error when matching stopped without an answer (a match limit reached).
fn execution_error(failure: MatchFailure, name: &str) -> MongoError {
    MongoError::location(
        51156,
        format!(
            "Error occurred while executing the regular expression in {name}. Result code: {}",
            failure.0
        ),
    )
}

/// The expression operators' codes for what [`MongoRegex`] reports as a query would.
fn compile_error(err: MongoError, name: &str) -> MongoError {
    match err.code().code() {
        51091 => {
            let detail = err.message();
            let detail = detail
                .strip_prefix("Regular expression is invalid: ")
                .unwrap_or(detail);
            MongoError::location(51111, format!("Invalid Regex in {name}: {detail}"))
        }
        51108 => MongoError::location(51108, format!("{name} {}", err.message())),
        _ => err,
    }
}

#[cfg(test)]
mod tests {
    use crate::expression::tests::eval;
    use bson::{Bson, Regex, bson, doc};

    fn run(expr: Bson) -> Option<Bson> {
        eval(expr, &doc! {"s": "cafétéria", "n": null}).unwrap()
    }

    fn failure(expr: Bson) -> (i32, String) {
        let err = eval(expr, &doc! {"s": "x"}).unwrap_err();
        (err.code().code(), err.message().to_string())
    }

    fn regex(pattern: &str, options: &str) -> Bson {
        Bson::RegularExpression(Regex {
            pattern: pattern.into(),
            options: options.into(),
        })
    }

    #[test]
    fn regex_match_in_every_form() {
        let yes = Some(Bson::Boolean(true));
        let no = Some(Bson::Boolean(false));
        assert_eq!(
            run(bson!({"$regexMatch": {"input": "$s", "regex": "té"}})),
            yes
        );
        assert_eq!(
            run(bson!({"$regexMatch": {"input": "$s", "regex": "TÉ"}})),
            no
        );
        assert_eq!(
            run(bson!({"$regexMatch": {"input": "$s", "regex": "^CAF", "options": "i"}})),
            yes
        );
        assert_eq!(
            run(bson!({"$regexMatch": {"input": "$s", "regex": regex("^CAF", "i")}})),
            yes
        );
        assert_eq!(
            run(
                bson!({"$regexMatch": {"input": "$s", "regex": regex("^CAF", ""), "options": "i"}})
            ),
            yes
        );
        assert_eq!(
            run(bson!({"$regexMatch": {"input": "a\nb", "regex": "^b", "options": "m"}})),
            yes
        );
        assert_eq!(
            run(bson!({"$regexMatch": {"input": "a\nb", "regex": "a.b", "options": "s"}})),
            yes
        );
        assert_eq!(
            run(bson!({"$regexMatch": {"input": "ab", "regex": "a b # x", "options": "x"}})),
            yes
        );
        assert_eq!(
            run(bson!({"$regexMatch": {"input": "$missing", "regex": "a"}})),
            no
        );
        assert_eq!(
            run(bson!({"$regexMatch": {"input": "a", "regex": "$n"}})),
            no
        );
    }

    #[test]
    fn regex_find_reports_code_point_index_and_captures() {
        assert_eq!(
            run(bson!({"$regexFind": {"input": "$s", "regex": "t(é)(x)?(r)"}})),
            Some(bson!({"match": "tér", "idx": 4, "captures": ["é", null, "r"]}))
        );
        assert_eq!(
            run(bson!({"$regexFind": {"input": "$s", "regex": "z"}})),
            Some(Bson::Null)
        );
        assert_eq!(
            run(bson!({"$regexFind": {"input": "$missing", "regex": "z"}})),
            Some(Bson::Null)
        );
        assert_eq!(
            run(bson!({"$regexFind": {"input": "", "regex": ""}})),
            Some(bson!({"match": "", "idx": 0, "captures": []}))
        );
    }

    #[test]
    fn regex_find_all_moves_past_each_match() {
        let all = |input: &str, pattern: &str| {
            run(bson!({"$regexFindAll": {"input": input, "regex": pattern}})).unwrap()
        };
        assert_eq!(
            all("cafétéria", "é"),
            bson!([
                {"match": "é", "idx": 3, "captures": []},
                {"match": "é", "idx": 5, "captures": []}
            ])
        );
        assert_eq!(
            all("aaa", "aa"),
            bson!([{"match": "aa", "idx": 0, "captures": []}])
        );
        assert_eq!(
            all("baa", "a*"),
            bson!([
                {"match": "", "idx": 0, "captures": []},
                {"match": "aa", "idx": 1, "captures": []}
            ])
        );
        // No empty match at the very end of a non-empty input.
        assert_eq!(
            all("ab", "x*"),
            bson!([
                {"match": "", "idx": 0, "captures": []},
                {"match": "", "idx": 1, "captures": []}
            ])
        );
        assert_eq!(
            all("", ""),
            bson!([{"match": "", "idx": 0, "captures": []}])
        );
        // Anchors see the whole input, not the text after the previous match.
        assert_eq!(
            all("aaa", "^a"),
            bson!([{"match": "a", "idx": 0, "captures": []}])
        );
        assert_eq!(
            all("x1 y22", "([a-z])(\\d+)"),
            bson!([
                {"match": "x1", "idx": 0, "captures": ["x", "1"]},
                {"match": "y22", "idx": 3, "captures": ["y", "22"]}
            ])
        );
        assert_eq!(all("abc", "z"), bson!([]));
        assert_eq!(
            run(bson!({"$regexFindAll": {"input": null, "regex": "a"}})),
            Some(bson!([]))
        );
    }

    #[test]
    fn regex_argument_errors() {
        assert_eq!(
            failure(bson!({"$regexFind": "a"})),
            (
                51103,
                "$regexFind expects an object of named arguments but found: string".into()
            )
        );
        assert_eq!(
            failure(bson!({"$regexFind": {"input": "a", "regex": "a", "flags": "i"}})),
            (31024, "$regexFind found an unknown argument: flags".into())
        );
        assert_eq!(
            failure(bson!({"$regexMatch": {"regex": "a"}})),
            (31022, "$regexMatch requires 'input' parameter".into())
        );
        assert_eq!(
            failure(bson!({"$regexFindAll": {"input": "a"}})),
            (31023, "$regexFindAll requires 'regex' parameter".into())
        );
        assert_eq!(
            failure(bson!({"$regexMatch": {"input": 1, "regex": "a"}})),
            (
                51104,
                "$regexMatch needs 'input' to be of type string".into()
            )
        );
        assert_eq!(
            failure(bson!({"$regexFind": {"input": "a", "regex": 1}})),
            (
                51105,
                "$regexFind needs 'regex' to be of type string or regex".into()
            )
        );
        assert_eq!(
            failure(bson!({"$regexFind": {"input": "a", "regex": "a", "options": 1}})),
            (
                51106,
                "$regexFind needs 'options' to be of type string".into()
            )
        );
        assert_eq!(
            failure(
                bson!({"$regexFind": {"input": "a", "regex": regex("a", "i"), "options": "m"}})
            ),
            (
                51107,
                "$regexFind: found regex option(s) specified in both 'regex' and 'option' fields"
                    .into()
            )
        );
        assert_eq!(
            failure(bson!({"$regexFind": {"input": "a", "regex": "a", "options": "g"}})),
            (51108, "$regexFind invalid flag in regex options: g".into())
        );
        assert_eq!(
            failure(bson!({"$regexFind": {"input": "a", "regex": "a\u{0}"}})).0,
            51109
        );
        assert_eq!(
            failure(bson!({"$regexFind": {"input": "a", "regex": "a", "options": "\u{0}"}})).0,
            51110
        );
        let (code, message) = failure(bson!({"$regexFind": {"input": "a", "regex": "("}}));
        assert_eq!(code, 51111);
        assert!(
            message.starts_with("Invalid Regex in $regexFind: "),
            "{message}"
        );
        // The regex is checked before the input.
        assert_eq!(
            failure(bson!({"$regexMatch": {"input": 1, "regex": 2}})).0,
            51105
        );
    }
}
