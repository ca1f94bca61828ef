//! Reshaping between arrays and documents: `$zip` (transposes arrays), `$objectToArray` and
//! `$arrayToObject`.

use super::{
    Args, Arity, Expression, Operator, Scope, array_or_null, document_or_null, named_args, nary,
};
use crate::error::{MongoError, Result};
use crate::expression::value::{Value, bson_type_name, render, render_document, type_name};
use bson::{Bson, Document};

pub(super) static OPERATORS: &[Operator] = &[
    Operator {
        name: "$arrayToObject",
        arity: Arity::Exactly(1),
        parse: nary,
        eval: array_to_object,
    },
    Operator {
        name: "$objectToArray",
        arity: Arity::Exactly(1),
        parse: nary,
        eval: object_to_array,
    },
    Operator {
        name: "$zip",
        arity: Arity::Any,
        parse: parse_zip,
        eval: zip,
    },
];

/// `{inputs, useLongestLength, defaults}` as `[useLongestLength, number of inputs, inputs...,
/// defaults...]`.
pub fn parse_zip(_name: &'static str, argument: &Bson, scope: &Scope) -> Result<Vec<Expression>> {
    let Bson::Document(spec) = argument else {
        return Err(MongoError::location(
            34460,
            format!(
                "$zip only supports an object as an argument, found {}",
                bson_type_name(argument)
            ),
        ));
    };
    let [inputs, longest, defaults] =
        named_args(spec, ["inputs", "useLongestLength", "defaults"], |field| {
            MongoError::location(34464, format!("$zip found an unknown argument: {field}"))
        })?;
    let expressions = |value: Option<&Bson>, code: i32, what: &str| match value {
        None => Ok(Vec::new()),
        Some(Bson::Array(items)) => items
            .iter()
            .map(|item| Expression::parse_in(item, scope))
            .collect(),
        Some(other) => Err(MongoError::location(
            code,
            format!(
                "{what} must be an array of expressions, found {}",
                bson_type_name(other)
            ),
        )),
    };
    let inputs = expressions(inputs, 34461, "inputs")?;
    let defaults = expressions(defaults, 34462, "defaults")?;
    let longest = match longest {
        None => false,
        Some(Bson::Boolean(longest)) => *longest,
        Some(other) => {
            return Err(MongoError::location(
                34463,
                format!(
                    "useLongestLength must be a bool, found {}",
                    bson_type_name(other)
                ),
            ));
        }
    };
    if inputs.is_empty() {
        return Err(MongoError::location(
            34465,
            "$zip requires at least one input array",
        ));
    }
    if !longest && !defaults.is_empty() {
        return Err(MongoError::location(
            34466,
            "cannot specify defaults unless useLongestLength is true",
        ));
    }
    if !defaults.is_empty() && defaults.len() != inputs.len() {
        return Err(MongoError::location(
            34467,
            "defaults and inputs must have the same length",
        ));
    }
    let mut args = vec![
        Expression::Constant(Bson::Boolean(longest)),
        Expression::Constant(Bson::Int64(inputs.len() as i64)),
    ];
    args.extend(inputs);
    args.extend(defaults);
    Ok(args)
}

/// Transposes the input arrays: the shortest length, or the longest with each input's default
/// (null unless given) filling in.
pub fn zip(args: &Args) -> Result<Value> {
    let longest = matches!(args.eval(0)?, Some(Bson::Boolean(true)));
    let inputs = match args.eval(1)? {
        Some(Bson::Int64(count)) => count as usize,
        _ => 0,
    };
    let mut arrays = Vec::with_capacity(inputs);
    for i in 0..inputs {
        let items = array_or_null(args.eval(2 + i)?, |value| {
            MongoError::location(
                34468,
                format!(
                    "$zip found a non-array expression in input: {}",
                    render(value.as_ref())
                ),
            )
        })?;
        let Some(items) = items else {
            return Ok(Some(Bson::Null));
        };
        arrays.push(items);
    }
    let shortest = arrays.iter().map(Vec::len).min().unwrap_or(0);
    let longest_len = arrays.iter().map(Vec::len).max().unwrap_or(0);
    let mut defaults = vec![Bson::Null; inputs];
    if shortest != longest_len && args.len() > 2 + inputs {
        for (i, default) in defaults.iter_mut().enumerate() {
            *default = args.eval(2 + inputs + i)?.unwrap_or(Bson::Null);
        }
    }
    let length = if longest { longest_len } else { shortest };
    let rows = (0..length)
        .map(|row| {
            let tuple = arrays
                .iter()
                .zip(&defaults)
                .map(|(array, default)| array.get(row).unwrap_or(default).clone())
                .collect();
            Bson::Array(tuple)
        })
        .collect();
    Ok(Some(Bson::Array(rows)))
}

/// `[{k, v}, ...]` in field order.
pub fn object_to_array(args: &Args) -> Result<Value> {
    let doc = document_or_null(args.eval(0)?, |value| {
        MongoError::location(
            40390,
            format!(
                "$objectToArray requires a document input, found: {}",
                type_name(value.as_ref())
            ),
        )
    })?;
    Ok(Some(doc.map_or(Bson::Null, |doc| {
        Bson::Array(
            doc.into_iter()
                .map(|(k, v)| Bson::Document(bson::doc! {"k": k, "v": v}))
                .collect(),
        )
    })))
}

/// `[[k, v], ...]` or `[{k, v}, ...]` (the first element decides which); a repeated key keeps
/// its first position and takes the last value.
pub fn array_to_object(args: &Args) -> Result<Value> {
    let items = array_or_null(args.eval(0)?, |value| {
        MongoError::location(
            40386,
            format!(
                "$arrayToObject requires an array input, found: {}",
                type_name(value.as_ref())
            ),
        )
    })?;
    let Some(items) = items else {
        return Ok(Some(Bson::Null));
    };
    let mut out = Document::new();
    let pairs = match items.first() {
        None => return Ok(Some(Bson::Document(out))),
        Some(Bson::Array(_)) => true,
        Some(Bson::Document(_)) => false,
        Some(other) => {
            return Err(MongoError::location(
                40398,
                format!(
                    "Unrecognised input type format for $arrayToObject: {}",
                    bson_type_name(other)
                ),
            ));
        }
    };
    for item in items {
        let (key, value) = if pairs {
            pair_entry(item)?
        } else {
            document_entry(item)?
        };
        out.insert(key, value);
    }
    Ok(Some(Bson::Document(out)))
}

fn pair_entry(item: Bson) -> Result<(String, Bson)> {
    // "mustall" and "arrays,found" (no spaces) are MongoDB's wording.
    let Bson::Array(pair) = item else {
        return Err(MongoError::location(
            40396,
            format!(
                "$arrayToObject requires a consistent input format. Elements mustall be arrays or all be objects. Array was detected, now found: {}",
                bson_type_name(&item)
            ),
        ));
    };
    let [key, value]: [Bson; 2] = pair.try_into().map_err(|pair: Vec<Bson>| {
        MongoError::location(
            40397,
            format!(
                "$arrayToObject requires an array of size 2 arrays,found array of size: {}",
                pair.len()
            ),
        )
    })?;
    let Bson::String(key) = key else {
        return Err(MongoError::location(
            40395,
            format!(
                "$arrayToObject requires an array of key-value pairs, where the key must be of type string. Found key type: {}",
                bson_type_name(&key)
            ),
        ));
    };
    Ok((checked_key(key, 4940400)?, value))
}

fn document_entry(item: Bson) -> Result<(String, Bson)> {
    let Bson::Document(mut entry) = item else {
        return Err(MongoError::location(
            40391,
            format!(
                "$arrayToObject requires a consistent input format. Elements mustall be arrays or all be objects. Object was detected, now found: {}",
                bson_type_name(&item)
            ),
        ));
    };
    if entry.len() != 2 {
        return Err(MongoError::location(
            40392,
            format!(
                "$arrayToObject requires an object keys of 'k' and 'v'. Found incorrect number of keys:{}",
                entry.len()
            ),
        ));
    }
    if !(entry.contains_key("k") && entry.contains_key("v")) {
        return Err(MongoError::location(
            40393,
            format!(
                "$arrayToObject requires an object with keys 'k' and 'v'. Missing either or both keys from: {}",
                render_document(&entry)
            ),
        ));
    }
    let (Some(key), Some(value)) = (entry.remove("k"), entry.remove("v")) else {
        unreachable!("both keys were just found");
    };
    let Bson::String(key) = key else {
        return Err(MongoError::location(
            40394,
            format!(
                "$arrayToObject requires an object with keys 'k' and 'v', where the value of 'k' must be of type string. Found type: {}",
                bson_type_name(&key)
            ),
        ));
    };
    Ok((checked_key(key, 4940401)?, value))
}

fn checked_key(key: String, code: i32) -> Result<String> {
    if key.contains('\0') {
        return Err(MongoError::location(
            code,
            "Key field cannot contain an embedded null byte",
        ));
    }
    Ok(key)
}

#[cfg(test)]
mod tests {
    use crate::expression::tests::{eval, failure};
    use bson::{Bson, bson, doc};

    fn run(expr: Bson) -> crate::error::Result<Option<Bson>> {
        eval(
            expr,
            &doc! {"a": [1, 2, 3, 4, 5], "o": {"a": 1, "b": 2}, "s": "x", "n": null},
        )
    }

    fn code(expr: Bson) -> i32 {
        failure(run(expr)).0
    }

    fn message(expr: Bson) -> (i32, String) {
        failure(run(expr))
    }

    #[test]
    fn zip_transposes() {
        assert_eq!(
            run(bson!({"$zip": {"inputs": [["a", "b"], [1, 2, 3]]}})).unwrap(),
            Some(bson!([["a", 1], ["b", 2]]))
        );
        assert_eq!(
            run(bson!({"$zip": {"inputs": [["a", "b"], [1, 2, 3]], "useLongestLength": true}}))
                .unwrap(),
            Some(bson!([["a", 1], ["b", 2], [null, 3]]))
        );
        assert_eq!(
            run(
                bson!({"$zip": {"inputs": [[1], [2, 3], "$a"], "useLongestLength": true,
                                "defaults": ["x", "y", "z"]}})
            )
            .unwrap(),
            Some(bson!([
                [1, 2, 1],
                ["x", 3, 2],
                ["x", "y", 3],
                ["x", "y", 4],
                ["x", "y", 5]
            ]))
        );
        assert_eq!(
            run(bson!({"$zip": {"inputs": [[1], "$missing", "$s"]}})).unwrap(),
            Some(Bson::Null)
        );
        assert_eq!(
            message(bson!({"$zip": {"inputs": [[1], "$s"]}})),
            (
                34468,
                "$zip found a non-array expression in input: \"x\"".into()
            )
        );
    }

    #[test]
    fn zip_parse_errors() {
        assert_eq!(code(bson!({"$zip": []})), 34460);
        assert_eq!(code(bson!({"$zip": {"inputs": "$a"}})), 34461);
        assert_eq!(
            code(bson!({"$zip": {"inputs": [[1]], "defaults": 1}})),
            34462
        );
        assert_eq!(
            code(bson!({"$zip": {"inputs": [[1]], "useLongestLength": 1}})),
            34463
        );
        assert_eq!(code(bson!({"$zip": {"inputs": [[1]], "x": 1}})), 34464);
        assert_eq!(code(bson!({"$zip": {"inputs": []}})), 34465);
        assert_eq!(
            code(bson!({"$zip": {"inputs": [[1]], "defaults": [1]}})),
            34466
        );
        assert_eq!(
            code(bson!({"$zip": {"inputs": [[1]], "useLongestLength": true, "defaults": [1, 2]}})),
            34467
        );
    }

    #[test]
    fn object_to_array_and_back() {
        assert_eq!(
            run(bson!({"$objectToArray": "$o"})).unwrap(),
            Some(bson!([{"k": "a", "v": 1}, {"k": "b", "v": 2}]))
        );
        assert_eq!(
            run(bson!({"$objectToArray": "$missing"})).unwrap(),
            Some(Bson::Null)
        );
        assert_eq!(
            message(bson!({"$objectToArray": 1})),
            (
                40390,
                "$objectToArray requires a document input, found: int".into()
            )
        );
        let object =
            run(bson!({"$arrayToObject": [[["item", "abc123"], ["qty", 25], ["item", "x"]]]}))
                .unwrap()
                .unwrap();
        assert_eq!(object, bson!({"item": "x", "qty": 25}));
        let keys: Vec<&String> = object.as_document().unwrap().keys().collect();
        assert_eq!(keys, ["item", "qty"]);
        assert_eq!(
            run(
                bson!({"$arrayToObject": [[{"k": "item", "v": "abc123"}, {"v": 25, "k": "q.ty"}]]})
            )
            .unwrap(),
            Some(bson!({"item": "abc123", "q.ty": 25}))
        );
        assert_eq!(
            run(bson!({"$arrayToObject": {"$objectToArray": "$o"}})).unwrap(),
            Some(bson!({"a": 1, "b": 2}))
        );
        assert_eq!(
            run(bson!({"$arrayToObject": [[]]})).unwrap(),
            Some(bson!({}))
        );
        assert_eq!(
            run(bson!({"$arrayToObject": "$n"})).unwrap(),
            Some(Bson::Null)
        );
    }

    #[test]
    fn array_to_object_errors() {
        assert_eq!(
            message(bson!({"$arrayToObject": "$s"})),
            (
                40386,
                "$arrayToObject requires an array input, found: string".into()
            )
        );
        assert_eq!(code(bson!({"$arrayToObject": [[1]]})), 40398);
        assert_eq!(
            code(bson!({"$arrayToObject": [[["a", 1], {"k": "b", "v": 2}]]})),
            40396
        );
        assert_eq!(code(bson!({"$arrayToObject": [[["a", 1, 2]]]})), 40397);
        assert_eq!(code(bson!({"$arrayToObject": [[[1, 1]]]})), 40395);
        assert_eq!(code(bson!({"$arrayToObject": [[["a\u{0}b", 1]]]})), 4940400);
        assert_eq!(
            code(bson!({"$arrayToObject": [[{"k": "a", "v": 1}, ["b", 2]]]})),
            40391
        );
        assert_eq!(code(bson!({"$arrayToObject": [[{"k": "a"}]]})), 40392);
        assert_eq!(
            message(bson!({"$arrayToObject": [[{"k": "a", "x": 1}]]})),
            (
                40393,
                "$arrayToObject requires an object with keys 'k' and 'v'. Missing either or both keys from: {k: \"a\", x: 1}"
                    .into()
            )
        );
        assert_eq!(code(bson!({"$arrayToObject": [[{"k": 1, "v": 1}]]})), 40394);
        assert_eq!(
            code(bson!({"$arrayToObject": [[{"k": "\u{0}", "v": 1}]]})),
            4940401
        );
    }
}
