//! `$jsonSchema`: MongoDB's JSON Schema (draft 4 with `bsonType`) parsed into a schema tree and
//! matched against documents. The same matcher backs `$jsonSchema` query predicates and, later,
//! collection validators.
//!
//! MongoDB translates a schema into match expressions whose net effect is value-based JSON
//! Schema semantics, and that is what is evaluated here directly:
//! - restriction keywords (`minimum`, `minLength`, `minItems`, `required`, ...) only constrain
//!   values of the type they are about; other types and missing values pass;
//! - an absent property is only checked by `required` (MongoDB also matches the property's
//!   schema against the missing value, but `required` already fails then);
//! - values are never traversed as arrays the way query paths are (`{a: [1]}` is not a
//!   number), and property names are literal field names;
//! - `enum` and `uniqueItems` compare documents without regard to field order.
//!
//! - here: [`JsonSchema`] and the schema tree.
//! - `parse`: keywords with MongoDB's errors and in its order of checks.
//! - `eval`: matching a value against the tree.

mod eval;
mod parse;

use super::TypeSet;
use crate::error::Result;
use crate::expression::mongo_regex::MongoRegex;
use bson::{Bson, Document};

/// A parsed `$jsonSchema` document.
#[derive(Clone, Debug)]
pub struct JsonSchema {
    root: Schema,
}

impl JsonSchema {
    /// Parses a schema, refusing unknown or malformed keywords with MongoDB's errors.
    pub fn parse(schema: &Document) -> Result<JsonSchema> {
        Ok(JsonSchema {
            root: parse::parse_schema(schema)?,
        })
    }

    /// Whether the document satisfies the schema.
    pub fn matches(&self, doc: &Document) -> bool {
        self.root.matches(eval::Target::Object(doc))
    }
}

/// One (sub)schema. Absent keywords impose nothing.
#[derive(Clone, Debug, Default)]
struct Schema {
    types: Option<TypeSet>,
    // Numbers.
    minimum: Option<Bound>,
    maximum: Option<Bound>,
    multiple_of: Option<Bson>,
    // Strings.
    min_length: Option<i64>,
    max_length: Option<i64>,
    pattern: Option<MongoRegex>,
    // Arrays.
    min_items: Option<i64>,
    max_items: Option<i64>,
    unique_items: bool,
    items: Option<Items>,
    /// Only in effect when `items` is a list of schemas (from the index after it).
    additional_items: Option<Additional>,
    // Objects.
    required: Vec<String>,
    properties: Vec<(String, Schema)>,
    pattern_properties: Vec<(MongoRegex, Schema)>,
    additional_properties: Option<Additional>,
    min_properties: Option<i64>,
    max_properties: Option<i64>,
    dependencies: Vec<(String, Dependency)>,
    // Logic.
    all_of: Vec<Schema>,
    any_of: Option<Vec<Schema>>,
    one_of: Option<Vec<Schema>>,
    not: Option<Box<Schema>>,
    enum_values: Option<Vec<Bson>>,
}

#[derive(Clone, Debug)]
struct Bound {
    value: Bson,
    exclusive: bool,
}

#[derive(Clone, Debug)]
enum Items {
    /// Every element matches the schema.
    All(Box<Schema>),
    /// Element `i` matches schema `i` (when the array is that long).
    Positional(Vec<Schema>),
}

/// `additionalItems` / `additionalProperties`: `true`, `false` or a schema.
#[derive(Clone, Debug)]
enum Additional {
    Allowed(bool),
    Schema(Box<Schema>),
}

#[derive(Clone, Debug)]
enum Dependency {
    /// When the property is present the object must also match this schema.
    Schema(Box<Schema>),
    /// When the property is present these must be too.
    Properties(Vec<String>),
}

#[cfg(test)]
mod tests;
