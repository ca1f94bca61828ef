//! String operators taking named arguments that rewrite their input: `$trim`, `$ltrim`,
//! `$rtrim` (`{input, chars}`) and `$replaceOne`, `$replaceAll` (`{input, find, replacement}`).

use super::{Args, Expression, Scope, requires_object, unspecified};
use super::{Arity, Operator};
use crate::error::{MongoError, Result};
use crate::expression::value::{Value, bson_type_name, is_nullish, render, type_name};
use bson::Bson;

pub(super) static OPERATORS: &[Operator] = &[
    Operator {
        name: "$ltrim",
        arity: Arity::Any,
        parse: parse_trim,
        eval: ltrim,
    },
    Operator {
        name: "$replaceAll",
        arity: Arity::Exactly(3),
        parse: parse_replace,
        eval: replace_all,
    },
    Operator {
        name: "$replaceOne",
        arity: Arity::Exactly(3),
        parse: parse_replace,
        eval: replace_one,
    },
    Operator {
        name: "$rtrim",
        arity: Arity::Any,
        parse: parse_trim,
        eval: rtrim,
    },
    Operator {
        name: "$trim",
        arity: Arity::Any,
        parse: parse_trim,
        eval: trim,
    },
];

/// What `$trim` removes without `chars`: the null character and the Unicode spaces the server
/// lists (not the line and paragraph separators, nor U+202F, U+205F, U+3000).
const DEFAULT_TRIM_CHARS: &[char] = &[
    '\0', ' ', '\t', '\n', '\u{0B}', '\u{0C}', '\r', '\u{A0}', '\u{1680}', '\u{2000}', '\u{2001}',
    '\u{2002}', '\u{2003}', '\u{2004}', '\u{2005}', '\u{2006}', '\u{2007}', '\u{2008}', '\u{2009}',
    '\u{200A}',
];

/// `{input, chars}` into `[input]` or `[input, chars]`.
pub fn parse_trim(name: &'static str, argument: &Bson, scope: &Scope) -> Result<Vec<Expression>> {
    let Bson::Document(spec) = argument else {
        return Err(MongoError::location(
            50696,
            format!(
                "{name} only supports an object as an argument, found {}",
                bson_type_name(argument)
            ),
        ));
    };
    let (mut input, mut chars) = (None, None);
    for (key, value) in spec {
        let slot = match key.as_str() {
            "input" => &mut input,
            "chars" => &mut chars,
            _ => {
                return Err(MongoError::location(
                    50694,
                    format!("{name} found an unknown argument: {key}"),
                ));
            }
        };
        *slot = Some(Expression::parse_in(value, scope)?);
    }
    let input = input
        .ok_or_else(|| MongoError::location(50695, format!("{name} requires an 'input' field")))?;
    Ok(std::iter::once(input).chain(chars).collect())
}

pub fn trim(args: &Args) -> Result<Value> {
    trim_ends(args, "$trim", true, true)
}

pub fn ltrim(args: &Args) -> Result<Value> {
    trim_ends(args, "$ltrim", true, false)
}

pub fn rtrim(args: &Args) -> Result<Value> {
    trim_ends(args, "$rtrim", false, true)
}

/// Null when the input, or the `chars` given, is null or missing. `chars` is a set of code
/// points, not a substring.
fn trim_ends(args: &Args, name: &str, left: bool, right: bool) -> Result<Value> {
    let input = match args.eval(0)? {
        value if is_nullish(value.as_ref()) => return Ok(Some(Bson::Null)),
        Some(Bson::String(s)) => s,
        other => {
            return Err(MongoError::location(
                50699,
                format!(
                    "{name} requires its input to be a string, got {} (of type {}) instead.",
                    render(other.as_ref()),
                    type_name(other.as_ref())
                ),
            ));
        }
    };
    let custom;
    let chars: &[char] = if args.len() > 1 {
        custom = match args.eval(1)? {
            value if is_nullish(value.as_ref()) => return Ok(Some(Bson::Null)),
            Some(Bson::String(s)) => s.chars().collect::<Vec<_>>(),
            other => {
                return Err(MongoError::location(
                    50700,
                    format!(
                        "{name} requires 'chars' to be a string, got {} (of type {}) instead.",
                        render(other.as_ref()),
                        type_name(other.as_ref())
                    ),
                ));
            }
        };
        &custom
    } else {
        DEFAULT_TRIM_CHARS
    };
    let mut rest = input.as_str();
    if left {
        rest = rest.trim_start_matches(chars);
    }
    if right {
        rest = rest.trim_end_matches(chars);
    }
    Ok(Some(Bson::String(rest.to_string())))
}

/// `{input, find, replacement}` into `[input, find, replacement]`.
pub fn parse_replace(
    name: &'static str,
    argument: &Bson,
    scope: &Scope,
) -> Result<Vec<Expression>> {
    let spec = requires_object(name, argument, 51751)?;
    let (mut input, mut find, mut replacement) = (None, None, None);
    for (key, value) in spec {
        let slot = match key.as_str() {
            "input" => &mut input,
            "find" => &mut find,
            "replacement" => &mut replacement,
            _ => {
                return Err(MongoError::location(
                    51750,
                    format!("{name} found an unknown argument: {key}"),
                ));
            }
        };
        *slot = Some(Expression::parse_in(value, scope)?);
    }
    Ok(vec![
        input.ok_or_else(|| unspecified(51749, name, "input"))?,
        find.ok_or_else(|| unspecified(51748, name, "find"))?,
        replacement.ok_or_else(|| unspecified(51747, name, "replacement"))?,
    ])
}

/// An empty `find` matches before the first character.
pub fn replace_one(args: &Args) -> Result<Value> {
    let Some((input, find, replacement)) = replace_arguments(args, "$replaceOne")? else {
        return Ok(Some(Bson::Null));
    };
    Ok(Some(Bson::String(input.replacen(&find, &replacement, 1))))
}

/// Matches do not overlap and are found left to right; an empty `find` matches between every
/// two characters and at both ends.
pub fn replace_all(args: &Args) -> Result<Value> {
    let Some((input, find, replacement)) = replace_arguments(args, "$replaceAll")? else {
        return Ok(Some(Bson::Null));
    };
    Ok(Some(Bson::String(input.replace(&find, &replacement))))
}

/// All three arguments are type-checked before any null makes the result null.
fn replace_arguments(args: &Args, name: &str) -> Result<Option<(String, String, String)>> {
    let values = [args.eval(0)?, args.eval(1)?, args.eval(2)?];
    let mut strings = Vec::with_capacity(3);
    for (value, (field, code)) in
        values
            .iter()
            .zip([("input", 51746), ("find", 51745), ("replacement", 51744)])
    {
        match value {
            Some(Bson::String(s)) => strings.push(s.clone()),
            value if is_nullish(value.as_ref()) => {}
            other => {
                return Err(MongoError::location(
                    code,
                    format!(
                        "{name} requires that '{field}' be a string, found: {}",
                        render(other.as_ref())
                    ),
                ));
            }
        }
    }
    let [input, find, replacement]: [String; 3] = match strings.try_into() {
        Ok(all) => all,
        Err(_) => return Ok(None),
    };
    Ok(Some((input, find, replacement)))
}

#[cfg(test)]
mod tests {
    use crate::expression::tests::eval;
    use bson::{Bson, bson, doc};

    fn run(expr: Bson) -> Option<Bson> {
        eval(expr, &doc! {"s": "  x  ", "n": null}).unwrap()
    }

    fn text(s: &str) -> Option<Bson> {
        Some(Bson::String(s.into()))
    }

    fn failure(expr: Bson) -> (i32, String) {
        let err = eval(expr, &doc! {"o": {"a": 1}}).unwrap_err();
        (err.code().code(), err.message().to_string())
    }

    #[test]
    fn trim_default_whitespace() {
        let padded =
            "\u{0}\t\n\u{0B}\u{0C}\r \u{A0}\u{1680}\u{2000}\u{200A}ggggoodbyeeeee \u{2009}";
        assert_eq!(
            run(bson!({"$trim": {"input": padded}})),
            text("ggggoodbyeeeee")
        );
        assert_eq!(
            run(bson!({"$ltrim": {"input": padded}})),
            text("ggggoodbyeeeee \u{2009}")
        );
        assert_eq!(
            run(bson!({"$rtrim": {"input": padded}})),
            text("\u{0}\t\n\u{0B}\u{0C}\r \u{A0}\u{1680}\u{2000}\u{200A}ggggoodbyeeeee")
        );
        // Not in the server's list.
        assert_eq!(
            run(bson!({"$trim": {"input": "\u{3000}a\u{2028}"}})),
            text("\u{3000}a\u{2028}")
        );
        assert_eq!(run(bson!({"$trim": {"input": "$s"}})), text("x"));
        assert_eq!(run(bson!({"$trim": {"input": "  "}})), text(""));
    }

    #[test]
    fn trim_given_characters() {
        assert_eq!(
            run(bson!({"$trim": {"input": "ggggoodbyeeeee", "chars": "ge"}})),
            text("oodby")
        );
        assert_eq!(
            run(bson!({"$ltrim": {"input": "ggggoodbyeeeee", "chars": "ge"}})),
            text("oodbyeeeee")
        );
        assert_eq!(
            run(bson!({"$rtrim": {"input": "ggggoodbyeeeee", "chars": "ye"}})),
            text("ggggoodb")
        );
        assert_eq!(
            run(bson!({"$trim": {"input": " ggggoodbyeeeee", "chars": "ge"}})),
            text(" ggggoodby")
        );
        assert_eq!(
            run(bson!({"$trim": {"input": "éaé", "chars": "é"}})),
            text("a")
        );
        assert_eq!(
            run(bson!({"$trim": {"input": " a ", "chars": ""}})),
            text(" a ")
        );
    }

    #[test]
    fn trim_nulls_and_errors() {
        assert_eq!(
            run(bson!({"$trim": {"input": "$missing"}})),
            Some(Bson::Null)
        );
        assert_eq!(
            run(bson!({"$trim": {"input": "a", "chars": "$n"}})),
            Some(Bson::Null)
        );
        // A null input wins over bad chars.
        assert_eq!(
            run(bson!({"$trim": {"input": null, "chars": 1}})),
            Some(Bson::Null)
        );
        assert_eq!(
            failure(bson!({"$trim": {"input": 1}})),
            (
                50699,
                "$trim requires its input to be a string, got 1 (of type int) instead.".into()
            )
        );
        assert_eq!(
            failure(bson!({"$ltrim": {"input": "a", "chars": "$o"}})),
            (
                50700,
                "$ltrim requires 'chars' to be a string, got {a: 1} (of type object) instead."
                    .into()
            )
        );
        assert_eq!(
            failure(bson!({"$trim": ["a"]})),
            (
                50696,
                "$trim only supports an object as an argument, found array".into()
            )
        );
        assert_eq!(
            failure(bson!({"$rtrim": {"input": "a", "char": "a"}})),
            (50694, "$rtrim found an unknown argument: char".into())
        );
        assert_eq!(
            failure(bson!({"$trim": {"chars": "a"}})),
            (50695, "$trim requires an 'input' field".into())
        );
    }

    #[test]
    fn replace_one_and_all() {
        let d = doc! {"item": "blue paint with blue paintbrush"};
        let replace = |op: &str, find: &str, replacement: &str| {
            eval(
                bson!({op: {"input": "$item", "find": find, "replacement": replacement}}),
                &d,
            )
            .unwrap()
        };
        assert_eq!(
            replace("$replaceOne", "blue paint", "red paint"),
            text("red paint with blue paintbrush")
        );
        assert_eq!(
            replace("$replaceAll", "blue paint", "red paint"),
            text("red paint with red paintbrush")
        );
        assert_eq!(
            replace("$replaceAll", "Blue", "red"),
            text("blue paint with blue paintbrush")
        );
        assert_eq!(
            replace("$replaceOne", "", "X"),
            text("Xblue paint with blue paintbrush")
        );
        assert_eq!(
            run(bson!({"$replaceAll": {"input": "abc", "find": "", "replacement": "-"}})),
            text("-a-b-c-")
        );
        assert_eq!(
            run(bson!({"$replaceAll": {"input": "aaa", "find": "aa", "replacement": "b"}})),
            text("ba")
        );
        assert_eq!(
            run(bson!({"$replaceAll": {"input": "café", "find": "é", "replacement": "e"}})),
            text("cafe")
        );
    }

    #[test]
    fn replace_nulls_and_errors() {
        for (input, find, replacement) in [
            (Bson::Null, bson!("abc"), bson!("ABC")),
            (bson!("abc"), Bson::Null, bson!("ABC")),
            (bson!("abc"), bson!("abc"), Bson::Null),
            (bson!("$missing"), bson!("abc"), bson!("ABC")),
        ] {
            for op in ["$replaceOne", "$replaceAll"] {
                assert_eq!(
                    run(
                        bson!({op: {"input": input.clone(), "find": find.clone(), "replacement": replacement.clone()}})
                    ),
                    Some(Bson::Null)
                );
            }
        }
        // Every argument is type-checked before a null one makes the result null.
        assert_eq!(
            failure(bson!({"$replaceAll": {"input": null, "find": "a", "replacement": 1}})),
            (
                51744,
                "$replaceAll requires that 'replacement' be a string, found: 1".into()
            )
        );
        assert_eq!(
            failure(bson!({"$replaceOne": {"input": "$o", "find": "a", "replacement": "b"}})),
            (
                51746,
                "$replaceOne requires that 'input' be a string, found: {a: 1}".into()
            )
        );
        assert_eq!(
            failure(bson!({"$replaceOne": {"input": "a", "find": 1.5, "replacement": "b"}})),
            (
                51745,
                "$replaceOne requires that 'find' be a string, found: 1.5".into()
            )
        );
        assert_eq!(
            failure(bson!({"$replaceOne": "a"})),
            (
                51751,
                "$replaceOne requires an object as an argument, found: string".into()
            )
        );
        assert_eq!(
            failure(
                bson!({"$replaceAll": {"input": "a", "find": "a", "replacement": "b", "x": 1}})
            ),
            (51750, "$replaceAll found an unknown argument: x".into())
        );
        assert_eq!(
            failure(bson!({"$replaceAll": {}})),
            (51749, "$replaceAll requires 'input' to be specified".into())
        );
        assert_eq!(
            failure(bson!({"$replaceAll": {"input": "a", "replacement": "b"}})),
            (51748, "$replaceAll requires 'find' to be specified".into())
        );
        assert_eq!(
            failure(bson!({"$replaceOne": {"input": "a", "find": "a"}})),
            (
                51747,
                "$replaceOne requires 'replacement' to be specified".into()
            )
        );
    }
}
