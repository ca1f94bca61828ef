//! `$graphLookup`: a breadth-first search of another collection from each input document,
//! following `connectFromField` values to documents whose `connectToField` equals them.

use super::lookup::any_value_filter;
use super::{Host, aggregate_all};
use crate::aggregate::stages::{RunContext, Stage};
use crate::document::collation::Collation;
use crate::document::keystring::encode_one;
use crate::document::path::values_for_key;
use crate::error::{MongoError, Result};
use crate::expression::fieldpath::{FieldPath, set_nested};
use crate::expression::value::bson_type_name;
use crate::expression::{Expression, LetVariables};
use crate::query::filter::Filter;
use bson::{Bson, Document, doc};
use std::collections::HashSet;
use std::sync::Arc;

/// Most bytes of found documents one output document may hold
/// (`internalGraphLookupStageIntermediateDocumentMaxSizeBytes`).
const MAX_FOUND_BYTES: usize = 100 * 1024 * 1024;

pub struct GraphLookup {
    from: String,
    as_path: FieldPath,
    start_with: Expression,
    connect_from: String,
    connect_to: String,
    depth_field: Option<FieldPath>,
    max_depth: Option<i64>,
    restrict: Option<Document>,
}

pub fn parse(_name: &str, spec: &Bson, vars: &Arc<LetVariables>) -> Result<Vec<Stage>> {
    let Bson::Document(spec) = spec else {
        return Err(MongoError::failed_to_parse(format!(
            "the $graphLookup stage specification must be an object, but found {}",
            bson_type_name(spec)
        )));
    };
    if !spec.contains_key("from") {
        return Err(MongoError::failed_to_parse(format!(
            "missing 'from' option to $graphLookup stage specification: {spec}"
        )));
    }
    let (mut from, mut as_field, mut start_with, mut connect_from, mut connect_to) =
        (None, None, None, None, None);
    let (mut depth_field, mut max_depth, mut restrict) = (None, None, None);
    for (name, value) in spec {
        match name.as_str() {
            "startWith" => start_with = Some(Expression::parse_in(value, vars.scope())?),
            "maxDepth" => max_depth = Some(parse_max_depth(value)?),
            "restrictSearchWithMatch" => {
                let Bson::Document(filter) = value else {
                    return Err(MongoError::location(
                        40185,
                        format!(
                            "restrictSearchWithMatch must be an object, found {}",
                            bson_type_name(value)
                        ),
                    ));
                };
                Filter::parse(filter).map_err(|e| {
                    MongoError::new(
                        e.code(),
                        format!(
                            "Failed to parse 'restrictSearchWithMatch' option to $graphLookup :: caused by :: {}",
                            e.message()
                        ),
                    )
                })?;
                restrict = Some(filter.clone());
            }
            "from" | "as" | "connectFromField" | "connectToField" | "depthField" => {
                let Bson::String(text) = value else {
                    if name == "from" {
                        return Err(MongoError::failed_to_parse(format!(
                            "$graphLookup 'from' field must be a string, but found {}",
                            bson_type_name(value)
                        )));
                    }
                    return Err(MongoError::location(
                        40103,
                        format!(
                            "expected string as argument for {name}, found: {}",
                            bson_type_name(value)
                        ),
                    ));
                };
                match name.as_str() {
                    "from" => from = Some(text.clone()),
                    "as" => as_field = Some(text.clone()),
                    "connectFromField" => connect_from = Some(text.clone()),
                    "connectToField" => connect_to = Some(text.clone()),
                    _ => depth_field = Some(FieldPath::parse(text)?),
                }
            }
            _ => {
                return Err(MongoError::location(
                    40104,
                    format!("Unknown argument to $graphLookup: {name}"),
                ));
            }
        }
    }
    let nonempty = |s: Option<String>| s.filter(|s| !s.is_empty());
    let (Some(from), Some(as_field), Some(start_with), Some(connect_from), Some(connect_to)) = (
        nonempty(from),
        nonempty(as_field),
        start_with,
        nonempty(connect_from),
        nonempty(connect_to),
    ) else {
        return Err(MongoError::location(
            40105,
            "$graphLookup requires 'from', 'as', 'startWith', 'connectFromField', and 'connectToField' to be specified.",
        ));
    };
    FieldPath::parse(&connect_from)?;
    FieldPath::parse(&connect_to)?;
    Ok(vec![Stage::GraphLookup(GraphLookup {
        from,
        as_path: FieldPath::parse(&as_field)?,
        start_with,
        connect_from,
        connect_to,
        depth_field,
        max_depth,
        restrict,
    })])
}

fn parse_max_depth(value: &Bson) -> Result<i64> {
    let (depth, exact) = match value {
        Bson::Int32(n) => (i64::from(*n), true),
        Bson::Int64(n) => (*n, true),
        Bson::Double(n) => (*n as i64, n.fract() == 0.0 && n.is_finite()),
        Bson::Decimal128(d) => match d.to_string().parse::<f64>() {
            Ok(n) => (n as i64, n.fract() == 0.0),
            Err(_) => (0, false),
        },
        other => {
            return Err(MongoError::location(
                40100,
                format!(
                    "maxDepth must be numeric, found type: {}",
                    bson_type_name(other)
                ),
            ));
        }
    };
    if depth < 0 {
        return Err(MongoError::location(
            40101,
            format!("maxDepth requires a nonnegative argument, found: {depth}"),
        ));
    }
    if !exact {
        return Err(MongoError::location(
            40102,
            format!("maxDepth could not be represented as a long long: {depth}"),
        ));
    }
    Ok(depth)
}

impl GraphLookup {
    pub async fn run(
        &self,
        docs: Vec<Document>,
        ctx: &RunContext,
        host: &Host<'_>,
    ) -> Result<Vec<Document>> {
        crate::catalog::validate_collection_name(host.db, &self.from).map_err(|_| {
            MongoError::invalid_namespace(format!(
                "invalid $graphLookup namespace: {}.{}",
                host.db, self.from
            ))
        })?;
        let mut out = Vec::with_capacity(docs.len());
        for mut doc in docs {
            let start = self.start_with.evaluate(&ctx.variables(&doc))?;
            let frontier = match start {
                Some(Bson::Array(items)) => items,
                Some(value) => vec![value],
                None => vec![Bson::Null],
            };
            let found = self.search(frontier, ctx.vars.collation(), host).await?;
            set_nested(&mut doc, self.as_path.parts(), Bson::Array(found));
            out.push(doc);
        }
        Ok(out)
    }

    /// Documents reachable from `frontier`, each once (by `_id`), depth by depth. Values are
    /// told apart by their key encoding, in which values MongoDB compares equal (1 and 1.0)
    /// are the same bytes.
    /// Strings compare by `collation` (`None`: simple), the pipeline's.
    async fn search(
        &self,
        mut frontier: Vec<Bson>,
        collation: Option<&Collation>,
        host: &Host<'_>,
    ) -> Result<Vec<Bson>> {
        let mut visited_ids: HashSet<Vec<u8>> = HashSet::new();
        let mut queried: HashSet<Vec<u8>> = HashSet::new();
        let mut found = Vec::new();
        let mut bytes = 0;
        let mut depth: i64 = 0;
        loop {
            let values: Vec<Bson> = frontier
                .drain(..)
                .filter(|value| match collation {
                    Some(c) => queried.insert(encode_one(&c.comparison_key(value))),
                    None => queried.insert(encode_one(value)),
                })
                .collect();
            if values.is_empty() {
                return Ok(found);
            }
            let mut filter = any_value_filter(&self.connect_to, values);
            if let Some(restrict) = &self.restrict {
                filter = doc! {"$and": [filter, restrict.clone()]};
            }
            let results = aggregate_all(
                host,
                host.db,
                Some(&self.from),
                vec![doc! {"$match": filter}],
                Document::new(),
                None,
                collation,
            )
            .await?;
            for mut result in results {
                let Some(id) = result.get("_id").cloned() else {
                    return Err(MongoError::location(
                        40271,
                        format!(
                            "Documents in the '{}.{}' namespace must contain an _id for de-duplication in $graphLookup",
                            host.db, self.from
                        ),
                    ));
                };
                if !visited_ids.insert(encode_one(&id)) {
                    continue;
                }
                if let Some(field) = &self.depth_field {
                    set_nested(&mut result, field.parts(), Bson::Int64(depth));
                }
                if self.max_depth.is_none_or(|max| depth < max) {
                    values_for_key(&result, &self.connect_from, &mut frontier);
                }
                bytes += bson::to_vec(&result).map(|b| b.len()).unwrap_or(0);
                if bytes > MAX_FOUND_BYTES {
                    return Err(MongoError::location(
                        8442700,
                        format!(
                            "Total size of the output document exceeds {MAX_FOUND_BYTES} bytes. Consider using $unwind to split the output."
                        ),
                    ));
                }
                found.push(Bson::Document(result));
            }
            depth += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(spec: Document) -> i32 {
        let vars = Arc::new(LetVariables::empty(bson::DateTime::from_millis(0)));
        match parse("$graphLookup", &Bson::Document(spec), &vars) {
            Ok(_) => 0,
            Err(e) => e.code().code(),
        }
    }

    fn spec() -> Document {
        doc! {"from": "c", "startWith": "$a", "connectFromField": "p", "connectToField": "n", "as": "r"}
    }

    #[test]
    fn specifications_are_checked_as_mongodb_does() {
        assert_eq!(code(spec()), 0);
        let with = |k: &str, v: Bson| {
            let mut s = spec();
            s.insert(k, v);
            s
        };
        assert_eq!(code(with("maxDepth", Bson::Int32(-1))), 40101);
        assert_eq!(code(with("maxDepth", Bson::Double(1.5))), 40102);
        assert_eq!(code(with("maxDepth", Bson::String("1".into()))), 40100);
        assert_eq!(code(with("zz", Bson::Int32(1))), 40104);
        assert_eq!(code(with("as", Bson::Int32(1))), 40103);
        assert_eq!(code(with("restrictSearchWithMatch", Bson::Int32(1))), 40185);
        assert_eq!(code(with("from", Bson::Int32(1))), 9);
        let mut missing = spec();
        missing.remove("as");
        assert_eq!(code(missing), 40105);
        let mut no_from = spec();
        no_from.remove("from");
        assert_eq!(code(no_from), 9);
    }
}
