//! Computed projection fields without the aggregation engine: constants, field paths and
//! `$$ROOT`/`$$CURRENT`/`$$REMOVE`, `$literal` and `$meta` parsed into expressions, and their
//! evaluation with aggregation field-path semantics.

use super::Expr;
use crate::error::{ErrorCode, MongoError, Result};
use crate::query::values::{check_field_path, not_implemented, render_doc};
use bson::{Bson, Document};

/// `{$name: arg}` as an aggregation expression: only `$literal` and `$meta` are understood.
pub(super) fn parse_expression_object(key: &str, arg: &Bson) -> Result<Expr> {
    match key {
        "$literal" => Ok(Expr::Const(arg.clone())),
        "$meta" => {
            let Bson::String(kind) = arg else {
                return Err(MongoError::location(
                    17307,
                    "$meta only supports string arguments",
                ));
            };
            match kind.as_str() {
                "textScore" => Err(MongoError::location(
                    40218,
                    "query requires text score metadata, but it is not available",
                )),
                "randVal"
                | "searchScore"
                | "searchHighlights"
                | "geoNearDistance"
                | "geoNearPoint"
                | "recordId"
                | "indexKey"
                | "sortKey"
                | "searchScoreDetails"
                | "searchSequenceToken"
                | "vectorSearchScore"
                | "score"
                | "scoreDetails" => Err(not_implemented(format!(
                    "$meta: \"{kind}\" is not supported yet"
                ))),
                _ => Err(MongoError::location(
                    17308,
                    format!("Unsupported argument to $meta: {kind}"),
                )),
            }
        }
        _ => Err(not_implemented(format!(
            "the aggregation expression {key} is not supported in projections yet; only constants, field paths and $literal are"
        ))),
    }
}

/// MongoDB's `Expression::parseOperand` restricted to constants, field paths and variables.
pub(super) fn parse_operand(value: &Bson) -> Result<Expr> {
    match value {
        Bson::String(s) if s.starts_with("$$") => {
            let (var, rest) = s[2..]
                .split_once('.')
                .map_or((&s[2..], None), |(v, r)| (v, Some(r)));
            match var {
                "ROOT" | "CURRENT" => {
                    let parts = match rest {
                        Some(r) => {
                            check_field_path(r)?;
                            r.split('.').map(String::from).collect()
                        }
                        None => Vec::new(),
                    };
                    Ok(Expr::Path(parts))
                }
                "REMOVE" if rest.is_none() => Ok(Expr::Remove),
                "REMOVE" => Ok(Expr::Remove),
                "" => Err(MongoError::location(16869, "empty variable name")),
                _ => Err(MongoError::location(
                    17276,
                    format!("Use of undefined variable: {var}"),
                )),
            }
        }
        Bson::String(s) if s.starts_with('$') => {
            if s.len() == 1 {
                return Err(MongoError::location(
                    16872,
                    "'$' by itself is not a valid FieldPath",
                ));
            }
            check_field_path(&s[1..])?;
            Ok(Expr::Path(s[1..].split('.').map(String::from).collect()))
        }
        Bson::Array(items) => Ok(Expr::Array(
            items.iter().map(parse_operand).collect::<Result<_>>()?,
        )),
        Bson::Document(d) => {
            if let Some(first) = d.keys().next().filter(|k| k.starts_with('$')) {
                if d.len() != 1 {
                    return Err(MongoError::location(
                        15983,
                        format!(
                            "an expression specification must contain exactly one field, the name of the expression. Found {} fields in {}, while parsing object {}",
                            d.len(),
                            render_doc(d),
                            render_doc(d)
                        ),
                    ));
                }
                if !is_expression_name(first) {
                    return Err(MongoError::new(
                        ErrorCode::InvalidPipelineOperator,
                        format!("Unrecognized expression '{first}'"),
                    ));
                }
                return parse_expression_object(first, d.get(first).unwrap_or(&Bson::Null));
            }
            let mut fields = Vec::with_capacity(d.len());
            for (k, v) in d {
                if k.contains('.') {
                    return Err(MongoError::location(
                        16412,
                        "FieldPath field names may not contain '.'.",
                    ));
                }
                fields.push((k.clone(), parse_operand(v)?));
            }
            Ok(Expr::Object(fields))
        }
        other => Ok(Expr::Const(other.clone())),
    }
}

/// Names of MongoDB's aggregation expression operators (what `{$name: ...}` may be).
pub(super) fn is_expression_name(name: &str) -> bool {
    const NAMES: &[&str] = &[
        "$abs",
        "$acos",
        "$acosh",
        "$add",
        "$allElementsTrue",
        "$and",
        "$anyElementTrue",
        "$arrayElemAt",
        "$arrayToObject",
        "$asin",
        "$asinh",
        "$atan",
        "$atan2",
        "$atanh",
        "$avg",
        "$binarySize",
        "$bitAnd",
        "$bitNot",
        "$bitOr",
        "$bitXor",
        "$bsonSize",
        "$ceil",
        "$cmp",
        "$concat",
        "$concatArrays",
        "$cond",
        "$convert",
        "$cos",
        "$cosh",
        "$dateAdd",
        "$dateDiff",
        "$dateFromParts",
        "$dateFromString",
        "$dateSubtract",
        "$dateToParts",
        "$dateToString",
        "$dateTrunc",
        "$dayOfMonth",
        "$dayOfWeek",
        "$dayOfYear",
        "$degreesToRadians",
        "$divide",
        "$eq",
        "$exp",
        "$filter",
        "$first",
        "$firstN",
        "$floor",
        "$function",
        "$getField",
        "$gt",
        "$gte",
        "$hour",
        "$ifNull",
        "$in",
        "$indexOfArray",
        "$indexOfBytes",
        "$indexOfCP",
        "$isArray",
        "$isNumber",
        "$isoDayOfWeek",
        "$isoWeek",
        "$isoWeekYear",
        "$last",
        "$lastN",
        "$let",
        "$literal",
        "$ln",
        "$log",
        "$log10",
        "$lt",
        "$lte",
        "$ltrim",
        "$map",
        "$max",
        "$maxN",
        "$median",
        "$mergeObjects",
        "$meta",
        "$millisecond",
        "$min",
        "$minN",
        "$minute",
        "$mod",
        "$month",
        "$multiply",
        "$ne",
        "$not",
        "$objectToArray",
        "$or",
        "$percentile",
        "$pow",
        "$radiansToDegrees",
        "$rand",
        "$range",
        "$reduce",
        "$regexFind",
        "$regexFindAll",
        "$regexMatch",
        "$replaceAll",
        "$replaceOne",
        "$reverseArray",
        "$round",
        "$rtrim",
        "$sampleRate",
        "$second",
        "$setDifference",
        "$setEquals",
        "$setField",
        "$setIntersection",
        "$setIsSubset",
        "$setUnion",
        "$sin",
        "$sinh",
        "$size",
        "$slice",
        "$sortArray",
        "$split",
        "$sqrt",
        "$stdDevPop",
        "$stdDevSamp",
        "$strLenBytes",
        "$strLenCP",
        "$strcasecmp",
        "$substr",
        "$substrBytes",
        "$substrCP",
        "$subtract",
        "$sum",
        "$switch",
        "$tan",
        "$tanh",
        "$toBool",
        "$toDate",
        "$toDecimal",
        "$toDouble",
        "$toHashedIndexKey",
        "$toInt",
        "$toLong",
        "$toLower",
        "$toObjectId",
        "$toString",
        "$toUpper",
        "$trim",
        "$trunc",
        "$tsIncrement",
        "$tsSecond",
        "$type",
        "$unsetField",
        "$week",
        "$year",
        "$zip",
    ];
    NAMES.contains(&name)
}

/// Evaluates a computed field; `None` is "missing" (the field is left out).
pub(super) fn evaluate(expr: &Expr, root: &Document) -> Option<Bson> {
    match expr {
        Expr::Const(v) => Some(v.clone()),
        Expr::Remove => None,
        Expr::Path(parts) if parts.is_empty() => Some(Bson::Document(root.clone())),
        Expr::Path(parts) => field_path(root, parts),
        Expr::Array(items) => Some(Bson::Array(
            items
                .iter()
                .map(|e| evaluate(e, root).unwrap_or(Bson::Null))
                .collect(),
        )),
        Expr::Object(fields) => {
            let mut d = Document::new();
            for (name, e) in fields {
                if let Some(v) = evaluate(e, root) {
                    d.insert(name.clone(), v);
                }
            }
            Some(Bson::Document(d))
        }
    }
}

/// Aggregation field-path semantics: arrays of documents map to arrays of the values found.
fn field_path(doc: &Document, parts: &[String]) -> Option<Bson> {
    let (first, rest) = parts.split_first()?;
    let value = doc.get(first)?;
    if rest.is_empty() {
        return Some(value.clone());
    }
    match value {
        Bson::Document(d) => field_path(d, rest),
        Bson::Array(items) => Some(field_path_array(items, rest)),
        _ => None,
    }
}

fn field_path_array(items: &[Bson], parts: &[String]) -> Bson {
    Bson::Array(
        items
            .iter()
            .filter_map(|item| match item {
                Bson::Document(d) => field_path(d, parts),
                _ => None,
            })
            .collect(),
    )
}
