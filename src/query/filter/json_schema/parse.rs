//! Parsing a `$jsonSchema` document into the schema tree: the keyword set, each keyword's
//! argument checks and MongoDB's error codes and messages, checked in MongoDB's order (scalar,
//! array, object, then logical keywords) so that the first error reported is the same.

use super::eval::unordered_equal;
use super::{Additional, Bound, Dependency, Items, Schema};
use crate::error::{ErrorCode, MongoError, Result};
use crate::expression::mongo_regex::MongoRegex;
use crate::query::filter::TypeSet;
use crate::query::values::{
    integer_to_non_negative_i64, is_number, not_implemented, type_code_for_alias, type_name,
};
use bson::{Bson, Document};

const KEYWORDS: &[&str] = &[
    "additionalItems",
    "additionalProperties",
    "allOf",
    "anyOf",
    "bsonType",
    "dependencies",
    "description",
    "encrypt",
    "encryptMetadata",
    "enum",
    "exclusiveMaximum",
    "exclusiveMinimum",
    "items",
    "maxItems",
    "maxLength",
    "maxProperties",
    "maximum",
    "minItems",
    "minLength",
    "minProperties",
    "minimum",
    "multipleOf",
    "not",
    "oneOf",
    "pattern",
    "patternProperties",
    "properties",
    "required",
    "title",
    "type",
    "uniqueItems",
];

/// JSON Schema keywords MongoDB names as unsupported rather than unknown.
const UNSUPPORTED: &[&str] = &["$ref", "$schema", "default", "definitions", "format", "id"];

/// The JSON types `type` accepts (`number` is every numeric BSON type; `integer` is refused).
const JSON_TYPES: &[(&str, i32)] = &[
    ("array", 4),
    ("boolean", 8),
    ("null", 10),
    ("object", 3),
    ("string", 2),
];

fn type_mismatch(message: String) -> MongoError {
    MongoError::type_mismatch(message)
}

fn failed(message: String) -> MongoError {
    MongoError::failed_to_parse(message)
}

pub(super) fn parse_schema(doc: &Document) -> Result<Schema> {
    for key in doc.keys() {
        if KEYWORDS.contains(&key.as_str()) {
            continue;
        }
        if UNSUPPORTED.contains(&key.as_str()) {
            return Err(failed(format!(
                "$jsonSchema keyword '{key}' is not currently supported"
            )));
        }
        return Err(failed(format!("Unknown $jsonSchema keyword: {key}")));
    }
    for keyword in ["description", "title"] {
        if doc
            .get(keyword)
            .is_some_and(|v| !matches!(v, Bson::String(_)))
        {
            return Err(type_mismatch(format!(
                "$jsonSchema keyword '{keyword}' must be of type string"
            )));
        }
    }
    let mut schema = Schema::default();
    match (doc.get("type"), doc.get("bsonType")) {
        (Some(_), Some(_)) => {
            return Err(failed(
                "Cannot specify both $jsonSchema keywords 'type' and 'bsonType'".into(),
            ));
        }
        (Some(t), None) => schema.types = Some(parse_types("type", t, true)?),
        (None, Some(t)) => schema.types = Some(parse_types("bsonType", t, false)?),
        (None, None) => {}
    }
    parse_scalar_keywords(doc, &mut schema)?;
    parse_array_keywords(doc, &mut schema)?;
    if doc.contains_key("encrypt") || doc.contains_key("encryptMetadata") {
        return Err(not_implemented(
            "the $jsonSchema encryption keywords are not supported",
        ));
    }
    parse_object_keywords(doc, &mut schema)?;
    parse_logical_keywords(doc, &mut schema)?;
    Ok(schema)
}

fn parse_types(keyword: &str, value: &Bson, json: bool) -> Result<TypeSet> {
    let names: Vec<&str> = match value {
        Bson::String(s) => vec![s.as_str()],
        Bson::Array(items) => {
            let mut names = Vec::with_capacity(items.len());
            for item in items {
                let Bson::String(s) = item else {
                    return Err(type_mismatch(format!(
                        "$jsonSchema keyword '{keyword}' array elements must be strings"
                    )));
                };
                names.push(s.as_str());
            }
            names
        }
        _ => {
            return Err(type_mismatch(format!(
                "$jsonSchema keyword '{keyword}' must be either a string or an array of strings"
            )));
        }
    };
    if names.contains(&"integer") {
        return Err(failed(
            "$jsonSchema type 'integer' is not currently supported.".into(),
        ));
    }
    for (i, name) in names.iter().enumerate() {
        if names[..i].contains(name) {
            return Err(failed(format!(
                "$jsonSchema keyword '{keyword}' has duplicate value: {name}"
            )));
        }
    }
    let mut set = TypeSet::default();
    for name in names {
        if name == "number" {
            set.all_numbers = true;
            continue;
        }
        let code = if json {
            JSON_TYPES.iter().find(|(n, _)| *n == name).map(|(_, c)| *c)
        } else {
            type_code_for_alias(name)
        };
        let code =
            code.ok_or_else(|| MongoError::bad_value(format!("Unknown type name alias: {name}")))?;
        set.codes.push(code);
    }
    if !set.all_numbers && set.codes.is_empty() {
        return Err(failed(format!(
            "$jsonSchema keyword '{keyword}' must name at least one type"
        )));
    }
    Ok(set)
}

fn length(doc: &Document, keyword: &str) -> Result<Option<i64>> {
    doc.get(keyword)
        .map(|v| integer_to_non_negative_i64(keyword, v))
        .transpose()
}

fn parse_scalar_keywords(doc: &Document, schema: &mut Schema) -> Result<()> {
    if let Some(pattern) = doc.get("pattern") {
        let Bson::String(pattern) = pattern else {
            return Err(type_mismatch(
                "$jsonSchema keyword 'pattern' must be a string".into(),
            ));
        };
        // JSON Schema has no regex flags.
        schema.pattern = Some(MongoRegex::new(pattern, "")?);
    }
    schema.max_length = length(doc, "maxLength")?;
    schema.min_length = length(doc, "minLength")?;
    if let Some(divisor) = doc.get("multipleOf") {
        if !is_number(divisor) {
            return Err(type_mismatch(
                "$jsonSchema keyword 'multipleOf' must be a number".into(),
            ));
        }
        if !super::eval::is_positive(divisor) {
            return Err(failed(
                "$jsonSchema keyword 'multipleOf' must have a positive value".into(),
            ));
        }
        schema.multiple_of = Some(divisor.clone());
    }
    schema.maximum = parse_bound(doc, "maximum", "exclusiveMaximum")?;
    schema.minimum = parse_bound(doc, "minimum", "exclusiveMinimum")?;
    Ok(())
}

fn parse_bound(doc: &Document, keyword: &str, exclusive_keyword: &str) -> Result<Option<Bound>> {
    let Some(value) = doc.get(keyword) else {
        if doc.contains_key(exclusive_keyword) {
            return Err(failed(format!(
                "$jsonSchema keyword '{keyword}' must be a present if {exclusive_keyword} is present"
            )));
        }
        return Ok(None);
    };
    let exclusive = match doc.get(exclusive_keyword) {
        None => false,
        Some(Bson::Boolean(b)) => *b,
        Some(_) => {
            return Err(type_mismatch(format!(
                "$jsonSchema keyword '{exclusive_keyword}' must be a boolean"
            )));
        }
    };
    if !is_number(value) {
        return Err(type_mismatch(format!(
            "$jsonSchema keyword '{keyword}' must be a number"
        )));
    }
    Ok(Some(Bound {
        value: value.clone(),
        exclusive,
    }))
}

fn parse_array_keywords(doc: &Document, schema: &mut Schema) -> Result<()> {
    schema.min_items = length(doc, "minItems")?;
    schema.max_items = length(doc, "maxItems")?;
    match doc.get("uniqueItems") {
        None => {}
        Some(Bson::Boolean(b)) => schema.unique_items = *b,
        Some(_) => {
            return Err(type_mismatch(
                "$jsonSchema keyword 'uniqueItems' must be a boolean".into(),
            ));
        }
    }
    schema.items = match doc.get("items") {
        None => None,
        Some(Bson::Document(sub)) => Some(Items::All(Box::new(parse_schema(sub)?))),
        Some(Bson::Array(list)) => {
            let mut schemas = Vec::with_capacity(list.len());
            for item in list {
                let Bson::Document(sub) = item else {
                    return Err(type_mismatch(format!(
                        "$jsonSchema keyword 'items' requires that each element of the array is an object, but found a {}",
                        type_name(item)
                    )));
                };
                schemas.push(parse_schema(sub)?);
            }
            Some(Items::Positional(schemas))
        }
        Some(other) => {
            return Err(type_mismatch(format!(
                "$jsonSchema keyword 'items' must be an array or an object, not {}",
                type_name(other)
            )));
        }
    };
    schema.additional_items = match doc.get("additionalItems") {
        None => None,
        Some(value) => Some(parse_additional(value).ok_or_else(|| {
            type_mismatch(format!(
                "$jsonSchema keyword 'additionalItems' must be either an object or a boolean, but got a {}",
                type_name(value)
            ))
        })??),
    };
    Ok(())
}

/// `true`/`false` or a schema; `None` for any other type.
fn parse_additional(value: &Bson) -> Option<Result<Additional>> {
    match value {
        Bson::Boolean(b) => Some(Ok(Additional::Allowed(*b))),
        Bson::Document(sub) => Some(parse_schema(sub).map(|s| Additional::Schema(Box::new(s)))),
        _ => None,
    }
}

fn parse_object_keywords(doc: &Document, schema: &mut Schema) -> Result<()> {
    if let Some(required) = doc.get("required") {
        schema.required = parse_required(required)?;
    }
    if let Some(properties) = doc.get("properties") {
        let Bson::Document(properties) = properties else {
            return Err(type_mismatch(
                "$jsonSchema keyword 'properties' must be an object".into(),
            ));
        };
        for (name, sub) in properties {
            let Bson::Document(sub) = sub else {
                return Err(type_mismatch(format!(
                    "Nested schema for $jsonSchema property '{name}' must be an object"
                )));
            };
            schema.properties.push((name.clone(), parse_schema(sub)?));
        }
    }
    if let Some(patterns) = doc.get("patternProperties") {
        let Bson::Document(patterns) = patterns else {
            return Err(type_mismatch(
                "$jsonSchema keyword 'patternProperties' must be an object".into(),
            ));
        };
        for (pattern, sub) in patterns {
            let Bson::Document(sub) = sub else {
                return Err(type_mismatch(format!(
                    "$jsonSchema keyword 'patternProperties' has property '{pattern}' which is not an object"
                )));
            };
            let sub = parse_schema(sub)?;
            schema
                .pattern_properties
                .push((MongoRegex::new(pattern, "")?, sub));
        }
    }
    if let Some(value) = doc.get("additionalProperties") {
        schema.additional_properties = Some(parse_additional(value).ok_or_else(|| {
            type_mismatch(
                "$jsonSchema keyword 'additionalProperties' must be an object or a boolean".into(),
            )
        })??);
    }
    schema.min_properties = length(doc, "minProperties")?;
    schema.max_properties = length(doc, "maxProperties")?;
    if let Some(dependencies) = doc.get("dependencies") {
        schema.dependencies = parse_dependencies(dependencies)?;
    }
    Ok(())
}

fn parse_required(value: &Bson) -> Result<Vec<String>> {
    let Bson::Array(items) = value else {
        return Err(type_mismatch(format!(
            "$jsonSchema keyword 'required' must be an array, but found an element of type {}",
            type_name(value)
        )));
    };
    let mut names: Vec<String> = Vec::with_capacity(items.len());
    for item in items {
        let Bson::String(name) = item else {
            return Err(type_mismatch(format!(
                "$jsonSchema keyword 'required' must be an array of strings, but found an element of type: {}",
                type_name(item)
            )));
        };
        names.push(name.clone());
    }
    if names.is_empty() {
        return Err(failed(
            "$jsonSchema keyword 'required' cannot be an empty array".into(),
        ));
    }
    if (1..names.len()).any(|i| names[..i].contains(&names[i])) {
        return Err(failed(
            "$jsonSchema keyword 'required' array cannot contain duplicate values".into(),
        ));
    }
    Ok(names)
}

fn parse_dependencies(value: &Bson) -> Result<Vec<(String, Dependency)>> {
    let Bson::Document(entries) = value else {
        return Err(type_mismatch(
            "$jsonSchema keyword 'dependencies' must be an object".into(),
        ));
    };
    let mut out = Vec::with_capacity(entries.len());
    for (name, dependency) in entries {
        let parsed = match dependency {
            Bson::Document(sub) => Dependency::Schema(Box::new(parse_schema(sub)?)),
            Bson::Array(items) => {
                if items.is_empty() {
                    return Err(failed(format!(
                        "property '{name}' in $jsonSchema keyword 'dependencies' cannot be an empty array"
                    )));
                }
                let mut names: Vec<String> = Vec::with_capacity(items.len());
                for item in items {
                    let Bson::String(s) = item else {
                        return Err(type_mismatch(format!(
                            "array '{name}' in $jsonSchema keyword 'dependencies' can only contain strings, but found element of type: {}",
                            type_name(item)
                        )));
                    };
                    if names.contains(s) {
                        return Err(failed(format!(
                            "array '{name}' in $jsonSchema keyword 'dependencies' contains duplicate element: {s}"
                        )));
                    }
                    names.push(s.clone());
                }
                Dependency::Properties(names)
            }
            _ => {
                return Err(type_mismatch(format!(
                    "property '{name}' in $jsonSchema keyword 'dependencies' must be either an object or an array"
                )));
            }
        };
        out.push((name.clone(), parsed));
    }
    Ok(out)
}

fn parse_schema_list(doc: &Document, keyword: &str) -> Result<Option<Vec<Schema>>> {
    let Some(value) = doc.get(keyword) else {
        return Ok(None);
    };
    let Bson::Array(items) = value else {
        return Err(type_mismatch(format!(
            "$jsonSchema keyword '{keyword}' must be an array"
        )));
    };
    if items.is_empty() {
        return Err(MongoError::new(
            ErrorCode::BadValue,
            format!("$jsonSchema keyword '{keyword}' must be a non-empty array"),
        ));
    }
    let mut schemas = Vec::with_capacity(items.len());
    for item in items {
        let Bson::Document(sub) = item else {
            return Err(type_mismatch(format!(
                "$jsonSchema keyword '{keyword}' must be an array of objects, but found an element of type {}",
                type_name(item)
            )));
        };
        schemas.push(parse_schema(sub)?);
    }
    Ok(Some(schemas))
}

fn parse_logical_keywords(doc: &Document, schema: &mut Schema) -> Result<()> {
    schema.all_of = parse_schema_list(doc, "allOf")?.unwrap_or_default();
    schema.any_of = parse_schema_list(doc, "anyOf")?;
    schema.one_of = parse_schema_list(doc, "oneOf")?;
    if let Some(not) = doc.get("not") {
        let Bson::Document(sub) = not else {
            return Err(type_mismatch(format!(
                "$jsonSchema keyword 'not' must be an object, but found an element of type {}",
                type_name(not)
            )));
        };
        schema.not = Some(Box::new(parse_schema(sub)?));
    }
    if let Some(values) = doc.get("enum") {
        let Bson::Array(values) = values else {
            return Err(type_mismatch(format!(
                "$jsonSchema keyword 'enum' must be an array, but found an element of type {}",
                type_name(values)
            )));
        };
        if values.is_empty() {
            return Err(failed(
                "$jsonSchema keyword 'enum' cannot be an empty array".into(),
            ));
        }
        if (1..values.len()).any(|i| values[..i].iter().any(|v| unordered_equal(v, &values[i]))) {
            return Err(failed(
                "$jsonSchema keyword 'enum' array cannot contain duplicate values.".into(),
            ));
        }
        schema.enum_values = Some(values.clone());
    }
    Ok(())
}
