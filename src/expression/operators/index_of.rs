//! Substring search operators, by UTF-8 byte or by code point: `$indexOfBytes`, `$indexOfCP`.

use super::array::int32_value;
use super::{Args, Expression, Scope};
use super::{Arity, Operator, nary};
use crate::error::{MongoError, Result};
use crate::expression::value::{Value, is_nullish, render, type_name};
use bson::Bson;

pub(super) static OPERATORS: &[Operator] = &[
    Operator {
        name: "$indexOfBytes",
        arity: Arity::Any,
        parse: parse_index_of,
        eval: index_of_bytes,
    },
    Operator {
        name: "$indexOfCP",
        arity: Arity::Any,
        parse: parse_index_of,
        eval: index_of_cp,
    },
];

/// `[string, substring, start?, end?]`: two to four arguments.
pub fn parse_index_of(
    name: &'static str,
    argument: &Bson,
    scope: &Scope,
) -> Result<Vec<Expression>> {
    let args = nary(name, argument, scope)?;
    if !(2..=4).contains(&args.len()) {
        return Err(MongoError::location(
            28667,
            format!(
                "Expression {name} takes at least 2 arguments, and at most 4, but {} were passed in.",
                args.len()
            ),
        ));
    }
    Ok(args)
}

/// The evaluated string and substring of `$indexOf*`, or `None` when the string is null or
/// missing (the substring is then not even evaluated).
fn index_of_strings(
    args: &Args,
    name: &str,
    codes: (i32, i32),
) -> Result<Option<(String, String)>> {
    let input = match args.eval(0)? {
        value if is_nullish(value.as_ref()) => return Ok(None),
        Some(Bson::String(s)) => s,
        other => {
            return Err(MongoError::location(
                codes.0,
                format!(
                    "{name} requires a string as the first argument, found: {}",
                    type_name(other.as_ref())
                ),
            ));
        }
    };
    match args.eval(1)? {
        Some(Bson::String(token)) => Ok(Some((input, token))),
        other => Err(MongoError::location(
            codes.1,
            format!(
                "{name} requires a string as the second argument, found: {}",
                type_name(other.as_ref())
            ),
        )),
    }
}

/// The optional start (argument 2) or end (argument 3) bound: a non-negative int32.
fn index_bound(args: &Args, index: usize, name: &str, what: &str) -> Result<Option<usize>> {
    if args.len() <= index {
        return Ok(None);
    }
    let value = args.eval(index)?;
    let Some(bound) = value.as_ref().and_then(int32_value) else {
        // The missing space after the operator name is the server's.
        return Err(MongoError::location(
            40096,
            format!(
                "{name}requires an integral {what}, found a value of type: {}, with value: {}",
                type_name(value.as_ref()),
                render(value.as_ref())
            ),
        ));
    };
    usize::try_from(bound).map(Some).map_err(|_| {
        MongoError::location(
            40097,
            format!(
                "{name} requires a nonnegative {what}, found: {}",
                render(value.as_ref())
            ),
        )
    })
}

/// The byte offset of the first occurrence at or after `start` that ends by `end`, or -1.
pub fn index_of_bytes(args: &Args) -> Result<Value> {
    const NAME: &str = "$indexOfBytes";
    let Some((input, token)) = index_of_strings(args, NAME, (40091, 40092))? else {
        return Ok(Some(Bson::Null));
    };
    let start = index_bound(args, 2, NAME, "starting index")?.unwrap_or(0);
    let end = index_bound(args, 3, NAME, "ending index")?
        .unwrap_or(input.len())
        .min(input.len());
    if start > input.len() || end < start {
        return Ok(Some(Bson::Int32(-1)));
    }
    let haystack = &input.as_bytes()[start..end];
    let found = if token.is_empty() {
        Some(0)
    } else {
        haystack
            .windows(token.len())
            .position(|window| window == token.as_bytes())
    };
    Ok(Some(position(found.map(|offset| start + offset))))
}

/// Like `$indexOfBytes`, with the bounds and the result in code points; but the substring only
/// has to start before `end`, not end by it (and an empty one is not found at the very end).
pub fn index_of_cp(args: &Args) -> Result<Value> {
    const NAME: &str = "$indexOfCP";
    let Some((input, token)) = index_of_strings(args, NAME, (40093, 40094))? else {
        return Ok(Some(Bson::Null));
    };
    let start = index_bound(args, 2, NAME, "starting index")?.unwrap_or(0);
    let offsets: Vec<usize> = input.char_indices().map(|(offset, _)| offset).collect();
    let end = index_bound(args, 3, NAME, "ending index")?
        .unwrap_or(offsets.len())
        .min(offsets.len());
    if end < start {
        return Ok(Some(Bson::Int32(-1)));
    }
    if input.is_empty() && token.is_empty() {
        return Ok(Some(Bson::Int32(0)));
    }
    let found = (start..end).find(|&index| input[offsets[index]..].starts_with(token.as_str()));
    Ok(Some(position(found)))
}

fn position(found: Option<usize>) -> Bson {
    Bson::Int32(found.and_then(|p| i32::try_from(p).ok()).unwrap_or(-1))
}

#[cfg(test)]
mod tests {
    use crate::expression::tests::eval;
    use bson::{Bson, bson, doc};

    fn run(expr: Bson) -> Option<Bson> {
        eval(expr, &doc! {"s": "cafétéria", "n": null}).unwrap()
    }

    fn int(v: i32) -> Option<Bson> {
        Some(Bson::Int32(v))
    }

    fn failure(expr: Bson) -> (i32, String) {
        let err = eval(expr, &doc! {"s": "cafétéria"}).unwrap_err();
        (err.code().code(), err.message().to_string())
    }

    #[test]
    fn index_of_bytes() {
        assert_eq!(run(bson!({"$indexOfBytes": ["cafeteria", "e"]})), int(3));
        assert_eq!(run(bson!({"$indexOfBytes": ["$s", "t"]})), int(5));
        assert_eq!(run(bson!({"$indexOfBytes": ["$s", "é", 4]})), int(6));
        assert_eq!(
            run(bson!({"$indexOfBytes": ["foo.bar.fi", ".", 5]})),
            int(7)
        );
        assert_eq!(
            run(bson!({"$indexOfBytes": ["vanilla", "ll", 0, 2]})),
            int(-1)
        );
        assert_eq!(
            run(bson!({"$indexOfBytes": ["vanilla", "ll", 0, 4]})),
            int(-1)
        );
        assert_eq!(
            run(bson!({"$indexOfBytes": ["vanilla", "ll", 0, 5]})),
            int(-1)
        );
        assert_eq!(
            run(bson!({"$indexOfBytes": ["vanilla", "ll", 0, 6]})),
            int(4)
        );
        assert_eq!(
            run(bson!({"$indexOfBytes": ["vanilla", "ll", 0, 50]})),
            int(4)
        );
        assert_eq!(
            run(bson!({"$indexOfBytes": ["vanilla", "ll", 5, 2]})),
            int(-1)
        );
        assert_eq!(
            run(bson!({"$indexOfBytes": ["vanilla", "nilla", 3]})),
            int(-1)
        );
        assert_eq!(run(bson!({"$indexOfBytes": ["abc", "", 3]})), int(3));
        assert_eq!(run(bson!({"$indexOfBytes": ["abc", "", 4]})), int(-1));
        assert_eq!(run(bson!({"$indexOfBytes": ["", ""]})), int(0));
        assert_eq!(
            run(bson!({"$indexOfBytes": ["abc", "b", 1.0, 2_i64]})),
            int(1)
        );
        assert_eq!(
            run(bson!({"$indexOfBytes": ["$missing", {"$divide": [1, 0]}]})),
            Some(Bson::Null)
        );
    }

    #[test]
    fn index_of_code_points() {
        assert_eq!(run(bson!({"$indexOfCP": ["cafeteria", "e"]})), int(3));
        assert_eq!(run(bson!({"$indexOfCP": ["$s", "t"]})), int(4));
        assert_eq!(run(bson!({"$indexOfCP": ["$s", "é", 4]})), int(5));
        assert_eq!(run(bson!({"$indexOfCP": ["寿司sushi", "s"]})), int(2));
        // The substring only has to start before the end (unlike with bytes).
        assert_eq!(run(bson!({"$indexOfCP": ["$s", "ria", 0, 7]})), int(6));
        assert_eq!(run(bson!({"$indexOfCP": ["$s", "ria", 0, 6]})), int(-1));
        assert_eq!(run(bson!({"$indexOfBytes": ["$s", "ria", 0, 10]})), int(-1));
        assert_eq!(run(bson!({"$indexOfCP": ["abc", "", 3]})), int(-1));
        assert_eq!(run(bson!({"$indexOfCP": ["abc", "", 2]})), int(2));
        assert_eq!(run(bson!({"$indexOfCP": ["", ""]})), int(0));
        assert_eq!(run(bson!({"$indexOfCP": ["", "", 1]})), int(-1));
        assert_eq!(run(bson!({"$indexOfCP": ["abc", "c", 5]})), int(-1));
        assert_eq!(run(bson!({"$indexOfCP": [null, "a"]})), Some(Bson::Null));
    }

    #[test]
    fn index_of_errors() {
        assert_eq!(
            failure(bson!({"$indexOfBytes": [1, "a"]})),
            (
                40091,
                "$indexOfBytes requires a string as the first argument, found: int".into()
            )
        );
        assert_eq!(
            failure(bson!({"$indexOfBytes": ["a", null]})),
            (
                40092,
                "$indexOfBytes requires a string as the second argument, found: null".into()
            )
        );
        assert_eq!(failure(bson!({"$indexOfCP": [[], "a"]})).0, 40093);
        assert_eq!(failure(bson!({"$indexOfCP": ["a", "$missing"]})).0, 40094);
        assert_eq!(
            failure(bson!({"$indexOfCP": ["a", "a", 1.5]})),
            (
                40096,
                "$indexOfCPrequires an integral starting index, found a value of type: double, with value: 1.5"
                    .into()
            )
        );
        assert_eq!(
            failure(bson!({"$indexOfBytes": ["a", "a", 0, null]})),
            (
                40096,
                "$indexOfBytesrequires an integral ending index, found a value of type: null, with value: null"
                    .into()
            )
        );
        assert_eq!(
            failure(bson!({"$indexOfBytes": ["a", "a", -2]})),
            (
                40097,
                "$indexOfBytes requires a nonnegative starting index, found: -2".into()
            )
        );
        assert_eq!(
            failure(bson!({"$indexOfCP": ["a"]})),
            (
                28667,
                "Expression $indexOfCP takes at least 2 arguments, and at most 4, but 1 were passed in."
                    .into()
            )
        );
        assert_eq!(
            failure(bson!({"$indexOfBytes": ["a", "a", 0, 1, 2]})).0,
            28667
        );
    }
}
