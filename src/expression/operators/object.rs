//! Object operators: `$mergeObjects`, `$getField`, `$setField`, `$unsetField`.

use super::{
    Args, Arity, Expression, Operator, Scope, document_or_null, named_args, nary, only_object,
    unspecified,
};
use crate::error::{MongoError, Result};
use crate::expression::value::{Value, bson_type_name, is_nullish, render, type_name};
use bson::{Bson, Document};

pub(super) static OPERATORS: &[Operator] = &[
    Operator {
        name: "$getField",
        arity: Arity::Exactly(2),
        parse: parse_get_field,
        eval: get_field,
    },
    Operator {
        name: "$mergeObjects",
        arity: Arity::Any,
        parse: nary,
        eval: merge_objects,
    },
    Operator {
        name: "$setField",
        arity: Arity::Exactly(3),
        parse: parse_set_field,
        eval: set_field,
    },
    Operator {
        name: "$unsetField",
        arity: Arity::Exactly(3),
        parse: parse_set_field,
        eval: unset_field,
    },
];

/// Documents merged left to right (a later field replaces the value and keeps the position of
/// an earlier one); null and missing arguments are skipped.
pub fn merge_objects(args: &Args) -> Result<Value> {
    let mut merged = Document::new();
    for i in 0..args.len() {
        match args.eval(i)? {
            Some(Bson::Document(doc)) => merged.extend(doc),
            value if is_nullish(value.as_ref()) => {}
            value => {
                return Err(MongoError::location(
                    40400,
                    format!(
                        "$mergeObjects requires object inputs, but input {} is of type {}",
                        render(value.as_ref()),
                        type_name(value.as_ref())
                    ),
                ));
            }
        }
    }
    Ok(Some(Bson::Document(merged)))
}

/// `{field, input}` or `<field>` (then, like an object whose first key is an operator, the input
/// is `$$CURRENT`), as `[field, input]`. `field` may be any expression; a constant one is
/// checked here.
pub fn parse_get_field(
    _name: &'static str,
    argument: &Bson,
    scope: &Scope,
) -> Result<Vec<Expression>> {
    let current = || Expression::parse_in(&Bson::String("$$CURRENT".into()), scope);
    let (field, input) = match argument {
        Bson::Document(spec) if !spec.keys().next().is_some_and(|k| k.starts_with('$')) => {
            let [field, input] = named_args(spec, ["field", "input"], |key| {
                MongoError::location(
                    3041701,
                    format!("$getField found an unknown argument: {key}"),
                )
            })?;
            let field = field.ok_or_else(|| unspecified(3041702, "$getField", "field"))?;
            let input = input.ok_or_else(|| unspecified(3041703, "$getField", "input"))?;
            (
                Expression::parse_in(field, scope)?,
                Expression::parse_in(input, scope)?,
            )
        }
        other => (Expression::parse_in(other, scope)?, current()?),
    };
    if let Some(constant) = constant_value(&field).filter(|c| !matches!(c, Bson::String(_))) {
        return Err(field_not_string(Some(constant)));
    }
    Ok(vec![field, input])
}

fn field_not_string(field: Option<&Bson>) -> MongoError {
    MongoError::location(
        3041704,
        format!(
            "$getField requires 'field' to evaluate to type String, but got {}",
            type_name(field)
        ),
    )
}

/// A top-level field of the input, by its exact name (dots and `$` are not paths): missing when
/// the input is missing or not a document, null when it is null.
pub fn get_field(args: &Args) -> Result<Value> {
    let field = match args.eval(0)? {
        Some(Bson::String(field)) => field,
        other => return Err(field_not_string(other.as_ref())),
    };
    match args.eval(1)? {
        Some(Bson::Document(doc)) => Ok(doc.get(&field).cloned()),
        Some(Bson::Null | Bson::Undefined) => Ok(Some(Bson::Null)),
        _ => Ok(None),
    }
}

/// The value of a constant argument (a literal or `$literal`), which MongoDB folds into a
/// constant expression when it parses it.
fn constant_value(expr: &Expression) -> Option<&Bson> {
    match expr {
        Expression::Constant(value) => Some(value),
        Expression::Operator { op, args } if op.name == "$literal" => match args.as_slice() {
            [Expression::Constant(value)] => Some(value),
            _ => None,
        },
        _ => None,
    }
}

/// `$setField: {field, input, value}` or `$unsetField: {field, input}` (`$setField` with
/// `$$REMOVE` as its value), as `[field, input, value]`; `field` must be a constant string.
pub fn parse_set_field(
    name: &'static str,
    argument: &Bson,
    scope: &Scope,
) -> Result<Vec<Expression>> {
    let spec = only_object(name, argument, 4161100)?;
    let unset = name == "$unsetField";
    let names: &[&str] = if unset {
        &["field", "input"]
    } else {
        &["field", "input", "value"]
    };
    let mut fields = [None; 3];
    for (key, value) in spec {
        let position = names.iter().position(|n| n == key).ok_or_else(|| {
            MongoError::location(4161101, format!("{name} found an unknown argument: {key}"))
        })?;
        fields[position] = Some(value);
    }
    let [field, input, value] = fields;
    let field = field.ok_or_else(|| unspecified(4161102, name, "field"))?;
    let value = match (unset, value) {
        (true, _) => Expression::parse_in(&Bson::String("$$REMOVE".into()), scope)?,
        (false, Some(value)) => Expression::parse_in(value, scope)?,
        (false, None) => {
            return Err(unspecified(4161103, name, "value"));
        }
    };
    let input = input.ok_or_else(|| unspecified(4161109, name, "input"))?;
    let parsed = Expression::parse_in(field, scope)?;
    check_constant_field(name, field, &parsed)?;
    Ok(vec![parsed, Expression::parse_in(input, scope)?, value])
}

/// `field` as MongoDB checks it once parsed: a string constant, not a path or variable.
fn check_constant_field(name: &str, raw: &Bson, field: &Expression) -> Result<()> {
    if let (Bson::String(path), Expression::Path { .. }) = (raw, field) {
        return Err(MongoError::location(
            4161108,
            format!(
                "'{path}' is a field path reference which is not allowed in this context. Did you mean {{$literal: '{path}'}}?"
            ),
        ));
    }
    match constant_value(field) {
        Some(Bson::String(_)) => Ok(()),
        Some(other) => Err(MongoError::location(
            4161107,
            format!(
                "{name} requires 'field' to evaluate to type String, but got {}",
                bson_type_name(other)
            ),
        )),
        None => Err(MongoError::location(
            4161106,
            format!(
                "{name} requires 'field' to evaluate to a constant, but got a non-constant argument"
            ),
        )),
    }
}

pub fn set_field(args: &Args) -> Result<Value> {
    with_field(args, "$setField")
}

pub fn unset_field(args: &Args) -> Result<Value> {
    with_field(args, "$unsetField")
}

/// The input with the field set (a missing value, e.g. `$$REMOVE`, removes it): null when the
/// input is null or missing.
fn with_field(args: &Args, name: &str) -> Result<Value> {
    let doc = document_or_null(args.eval(1)?, |_| {
        MongoError::location(
            4161105,
            format!("{name} requires 'input' to evaluate to type Object"),
        )
    })?;
    let Some(mut doc) = doc else {
        return Ok(Some(Bson::Null));
    };
    // The parser made sure the field is a constant string.
    let Some(Bson::String(field)) = args.eval(0)? else {
        return Ok(None);
    };
    match args.eval(2)? {
        Some(value) => {
            doc.insert(field, value);
        }
        None => {
            doc.remove(&field);
        }
    }
    Ok(Some(Bson::Document(doc)))
}

#[cfg(test)]
mod tests {
    use crate::expression::tests::{eval, failure};
    use bson::{Bson, bson, doc};

    fn run(expr: Bson) -> crate::error::Result<Option<Bson>> {
        eval(
            expr,
            &doc! {"item": "coat", "price.usd": 45.99, "$price": 10, "o": {"a": 1, "b": 2},
            "s": "x", "n": null},
        )
    }

    fn code(expr: Bson) -> i32 {
        failure(run(expr)).0
    }

    fn message(expr: Bson) -> (i32, String) {
        failure(run(expr))
    }

    #[test]
    fn merge_objects_left_to_right() {
        let merged = run(bson!({"$mergeObjects": ["$o", {"c": 3, "a": 9}, null, "$missing"]}))
            .unwrap()
            .unwrap();
        // Document equality ignores field order, so the order is checked on its own.
        assert_eq!(merged, bson!({"a": 9, "b": 2, "c": 3}));
        let keys: Vec<&String> = merged.as_document().unwrap().keys().collect();
        assert_eq!(keys, ["a", "b", "c"]);
        assert_eq!(
            run(bson!({"$mergeObjects": "$o"})).unwrap(),
            Some(bson!({"a": 1, "b": 2}))
        );
        assert_eq!(run(bson!({"$mergeObjects": []})).unwrap(), Some(bson!({})));
        assert_eq!(
            run(bson!({"$mergeObjects": ["$n"]})).unwrap(),
            Some(bson!({}))
        );
        assert_eq!(
            message(bson!({"$mergeObjects": ["$o", "$s"]})),
            (
                40400,
                "$mergeObjects requires object inputs, but input \"x\" is of type string".into()
            )
        );
    }

    #[test]
    fn get_field_reads_names_literally() {
        assert_eq!(
            run(bson!({"$getField": "price.usd"})).unwrap(),
            Some(Bson::Double(45.99))
        );
        assert_eq!(
            run(bson!({"$getField": {"$literal": "$price"}})).unwrap(),
            Some(Bson::Int32(10))
        );
        assert_eq!(
            run(bson!({"$getField": {"field": "a", "input": "$o"}})).unwrap(),
            Some(Bson::Int32(1))
        );
        // The field may be computed.
        assert_eq!(
            run(bson!({"$getField": {"field": {"$concat": ["it", "em"]}, "input": "$$ROOT"}}))
                .unwrap(),
            Some(Bson::String("coat".into()))
        );
        assert_eq!(run(bson!({"$getField": "nope"})).unwrap(), None);
        assert_eq!(
            run(bson!({"$getField": {"field": "a", "input": "$missing"}})).unwrap(),
            None
        );
        assert_eq!(
            run(bson!({"$getField": {"field": "a", "input": null}})).unwrap(),
            Some(Bson::Null)
        );
        assert_eq!(
            run(bson!({"$getField": {"field": "a", "input": "$s"}})).unwrap(),
            None
        );
    }

    #[test]
    fn get_field_errors() {
        assert_eq!(
            message(bson!({"$getField": {"k": 1}})),
            (3041701, "$getField found an unknown argument: k".into())
        );
        assert_eq!(code(bson!({"$getField": {"input": {}}})), 3041702);
        assert_eq!(
            message(bson!({"$getField": {"field": "s"}})),
            (3041703, "$getField requires 'input' to be specified".into())
        );
        assert_eq!(
            message(bson!({"$getField": {"field": 5, "input": {}}})),
            (
                3041704,
                "$getField requires 'field' to evaluate to type String, but got int".into()
            )
        );
        assert_eq!(
            message(bson!({"$getField": "$nosuch"})),
            (
                3041704,
                "$getField requires 'field' to evaluate to type String, but got missing".into()
            )
        );
    }

    #[test]
    fn set_field_and_unset_field() {
        assert_eq!(
            run(bson!({"$setField": {"field": "a.b", "input": "$o", "value": "$item"}})).unwrap(),
            Some(bson!({"a": 1, "b": 2, "a.b": "coat"}))
        );
        assert_eq!(
            run(bson!({"$setField": {"field": "a", "input": "$o", "value": 5}})).unwrap(),
            Some(bson!({"a": 5, "b": 2}))
        );
        assert_eq!(
            run(bson!({"$setField": {"field": {"$literal": "$x"}, "input": {}, "value": 1}}))
                .unwrap(),
            Some(bson!({"$x": 1}))
        );
        assert_eq!(
            run(bson!({"$setField": {"field": "a", "input": "$o", "value": "$$REMOVE"}})).unwrap(),
            Some(bson!({"b": 2}))
        );
        assert_eq!(
            run(bson!({"$unsetField": {"field": "price.usd", "input": "$$ROOT"}})).unwrap(),
            Some(bson!({"item": "coat", "$price": 10, "o": {"a": 1, "b": 2}, "s": "x", "n": null}))
        );
        assert_eq!(
            run(bson!({"$unsetField": {"field": "a", "input": "$missing"}})).unwrap(),
            Some(Bson::Null)
        );
    }

    #[test]
    fn set_field_errors() {
        assert_eq!(
            message(bson!({"$setField": 1})),
            (
                4161100,
                "$setField only supports an object as its argument".into()
            )
        );
        assert_eq!(
            message(bson!({"$unsetField": {"field": "a", "input": {}, "value": 1}})),
            (
                4161101,
                "$unsetField found an unknown argument: value".into()
            )
        );
        assert_eq!(
            code(bson!({"$setField": {"input": {}, "value": 1}})),
            4161102
        );
        assert_eq!(
            code(bson!({"$setField": {"field": "a", "input": {}}})),
            4161103
        );
        assert_eq!(
            code(bson!({"$setField": {"field": "a", "value": 1}})),
            4161109
        );
        assert_eq!(code(bson!({"$unsetField": {"field": "a"}})), 4161109);
        assert_eq!(
            message(bson!({"$setField": {"field": "a", "input": "$s", "value": 1}})),
            (
                4161105,
                "$setField requires 'input' to evaluate to type Object".into()
            )
        );
        assert_eq!(
            message(bson!({"$setField": {"field": {"$concat": ["a"]}, "input": {}, "value": 1}})),
            (
                4161106,
                "$setField requires 'field' to evaluate to a constant, but got a non-constant argument"
                    .into()
            )
        );
        assert_eq!(
            message(bson!({"$unsetField": {"field": 1, "input": {}}})),
            (
                4161107,
                "$unsetField requires 'field' to evaluate to type String, but got int".into()
            )
        );
        assert_eq!(
            message(bson!({"$setField": {"field": "$a.b", "input": {}, "value": 1}})),
            (
                4161108,
                "'$a.b' is a field path reference which is not allowed in this context. Did you mean {$literal: '$a.b'}?"
                    .into()
            )
        );
    }
}
