//! `find` projections: inclusion and exclusion of (dotted) paths, the `_id` rules, the find-only
//! operators `$slice`, `$elemMatch` and positional `$`, and computed fields limited to constants
//! and field paths until the aggregation expression engine exists. Parsing follows MongoDB 4.4+
//! (`projection_ast`), including its error codes.

use super::filter::Filter;
use super::values::{
    check_field_path, not_implemented, render_doc, render_element, truthy, type_name,
};
use crate::error::{ErrorCode, MongoError, Result};
use bson::{Bson, Document, doc};

/// A parsed projection.
#[derive(Clone, Debug)]
pub struct Projection {
    root: PathNode,
    inclusion: bool,
    /// The positional projection's path (without `.$`), with the query it refers to.
    positional: Option<Vec<String>>,
}

#[derive(Clone, Debug, Default)]
struct PathNode {
    children: Vec<(String, ProjNode)>,
}

#[derive(Clone, Debug)]
enum ProjNode {
    Path(PathNode),
    Bool(bool),
    Slice {
        skip: Option<i32>,
        limit: i32,
    },
    ElemMatch(Box<Filter>),
    /// Included, then cut down to the element the query matched.
    Positional,
    Expr(Expr),
}

/// The computed values a projection can produce without the aggregation engine.
#[derive(Clone, Debug)]
enum Expr {
    Const(Bson),
    /// A field path from the root document (`"$a.b"`, `"$$ROOT.a"`); empty = the root.
    Path(Vec<String>),
    Remove,
    Array(Vec<Expr>),
    Object(Vec<(String, Expr)>),
}

#[derive(Default)]
struct ParseContext<'a> {
    query: Option<&'a Filter>,
    inclusion: Option<bool>,
    has_positional: bool,
    has_elem_match: bool,
    has_find_slice: bool,
    id_included_entirely: bool,
    id_excluded_entirely: bool,
    positional: Option<Vec<String>>,
}

impl Projection {
    /// Parses a projection without a query (a positional `$` is refused, as MongoDB refuses it
    /// without a matcher).
    pub fn parse(spec: &Document) -> Result<Projection> {
        Self::parse_inner(spec, None)
    }

    /// Parses a projection of a `find` whose filter is `query` (needed for positional `$`).
    pub fn parse_with_filter(spec: &Document, query: &Filter) -> Result<Projection> {
        Self::parse_inner(spec, Some(query))
    }

    fn parse_inner(spec: &Document, query: Option<&Filter>) -> Result<Projection> {
        let mut ctx = ParseContext {
            query,
            ..Default::default()
        };
        let mut root = PathNode::default();
        let mut id_specified = false;
        for (name, value) in spec {
            id_specified |= name == "_id" || name.starts_with("_id.");
            parse_element(&mut ctx, name, value, None, &mut root, true)?;
        }
        let inclusion = match ctx.inclusion {
            Some(t) => t,
            None if ctx.has_find_slice => ctx.id_included_entirely,
            None if ctx.has_elem_match => true,
            None => ctx.id_included_entirely,
        };
        if !id_specified && inclusion {
            root.children.push(("_id".into(), ProjNode::Bool(true)));
        }
        if !inclusion && id_specified && ctx.id_included_entirely {
            root.children.retain(|(name, _)| name != "_id");
        }
        Ok(Projection {
            root,
            inclusion,
            positional: ctx.positional,
        })
    }

    /// Whether this is an inclusion projection (fields not mentioned are dropped).
    pub fn is_inclusion(&self) -> bool {
        self.inclusion
    }

    /// Whether the projection uses positional `$` (use [`Projection::apply_with_filter`]).
    pub fn has_positional(&self) -> bool {
        self.positional.is_some()
    }

    /// Projects a document. A positional `$` path keeps its whole array here; use
    /// [`Projection::apply_with_filter`] to cut it to the matched element.
    pub fn apply(&self, doc: &Document) -> Document {
        let mut out = if self.inclusion {
            include_doc(doc, &self.root, doc)
        } else {
            exclude_doc(doc, &self.root)
        };
        self.apply_elem_matches(doc, &mut out);
        out
    }

    /// Projects a document that matched `filter` (the query of the `find`), resolving the
    /// positional `$` from the filter's match.
    pub fn apply_with_filter(&self, doc: &Document, filter: &Filter) -> Result<Document> {
        let mut out = self.apply(doc);
        if let Some(path) = &self.positional {
            let (_, position) = filter.matches_with_position(doc);
            let Some(position) = position else {
                return Err(MongoError::location(
                    51246,
                    "positional operator '.$' couldn't find a matching element in the array",
                ));
            };
            apply_positional(&mut out, path, position)?;
        }
        Ok(out)
    }

    fn apply_elem_matches(&self, doc: &Document, out: &mut Document) {
        for (name, node) in &self.root.children {
            let ProjNode::ElemMatch(filter) = node else {
                continue;
            };
            match (filter.matches_with_position(doc), doc.get(name)) {
                ((true, Some(i)), Some(Bson::Array(items))) if i < items.len() => {
                    out.insert(name.clone(), Bson::Array(vec![items[i].clone()]));
                }
                _ => {
                    out.remove(name);
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Parsing

fn find_first_positional(path: &str) -> Option<(usize, usize)> {
    if let Some(i) = path.find(".$.") {
        return Some((i, i + 3));
    }
    if path.ends_with(".$") {
        return Some((path.len() - 2, path.len()));
    }
    (path == "$").then_some((0, path.len()))
}

fn parse_element(
    ctx: &mut ParseContext,
    name: &str,
    value: &Bson,
    parent_path: Option<&str>,
    parent: &mut PathNode,
    is_root: bool,
) -> Result<()> {
    let positional = find_first_positional(name);
    match value {
        Bson::Document(sub) => {
            if positional.is_some() {
                return Err(MongoError::location(
                    31271,
                    "positional projection cannot be used with an expression or sub object",
                ));
            }
            parse_sub_object(ctx, name, parent_path, sub, parent, is_root)
        }
        Bson::Boolean(_)
        | Bson::Int32(_)
        | Bson::Int64(_)
        | Bson::Double(_)
        | Bson::Decimal128(_) => {
            if truthy(value) {
                parse_inclusion(ctx, name, parent_path, parent, is_root, positional)
            } else {
                parse_exclusion(ctx, name, parent, is_root)
            }
        }
        _ => {
            if positional.is_some() {
                return Err(MongoError::location(
                    31308,
                    "positional projection cannot be used with a literal",
                ));
            }
            let expr = parse_operand(value)?;
            check_field_path(name)?;
            add_node(parent, name, ProjNode::Expr(expr))?;
            if ctx.inclusion == Some(false) {
                return Err(MongoError::location(
                    31310,
                    format!(
                        "Cannot use an expression {} in an exclusion projection",
                        render_element(name, value)
                    ),
                ));
            }
            ctx.inclusion = Some(true);
            Ok(())
        }
    }
}

fn parse_inclusion(
    ctx: &mut ParseContext,
    name: &str,
    parent_path: Option<&str>,
    parent: &mut PathNode,
    is_root: bool,
    positional: Option<(usize, usize)>,
) -> Result<()> {
    let top_level_id = name == "_id" && is_root;
    match positional {
        None => {
            check_field_path(name)?;
            add_node(parent, name, ProjNode::Bool(true))?;
            if top_level_id {
                ctx.id_included_entirely = true;
            }
        }
        Some((begin, end)) => {
            if ctx.has_positional {
                return Err(MongoError::location(
                    31276,
                    "Cannot specify more than one positional projection per query.",
                ));
            }
            if ctx.has_elem_match {
                return Err(MongoError::location(
                    31256,
                    "Cannot specify positional operator and $elemMatch.",
                ));
            }
            let full_name = match parent_path {
                Some(p) => format!("{p}.{name}"),
                None => name.to_string(),
            };
            let match_field = full_name.split('.').next().unwrap_or("");
            let Some(query) = ctx.query else {
                return Err(MongoError::location(
                    51050,
                    "Projections with a positional operator require a matcher",
                ));
            };
            if !query
                .leaf_paths()
                .iter()
                .any(|p| p.split('.').next() == Some(match_field))
            {
                return Err(MongoError::location(
                    31277,
                    format!("Positional projection '{name}' does not match the query document."),
                ));
            }
            if name.ends_with(".$.") {
                return Err(MongoError::location(31270, "Path cannot end with '.$.'"));
            }
            let remaining = &name[end..];
            if find_first_positional(remaining).is_some() || remaining == "$" {
                return Err(MongoError::location(
                    31287,
                    format!("Cannot use positional operator twice: {name}"),
                ));
            }
            let path = &name[..begin];
            check_field_path(path)?;
            add_node(parent, path, ProjNode::Positional)?;
            ctx.has_positional = true;
            let mut full: Vec<String> = parent_path
                .map(|p| p.split('.').map(String::from).collect())
                .unwrap_or_default();
            full.extend(path.split('.').map(String::from));
            ctx.positional = Some(full);
        }
    }
    if !top_level_id {
        if ctx.inclusion == Some(false) {
            return Err(MongoError::location(
                31253,
                format!("Cannot do inclusion on field {name} in exclusion projection"),
            ));
        }
        ctx.inclusion = Some(true);
    }
    Ok(())
}

fn parse_exclusion(
    ctx: &mut ParseContext,
    name: &str,
    parent: &mut PathNode,
    is_root: bool,
) -> Result<()> {
    check_field_path(name)?;
    add_node(parent, name, ProjNode::Bool(false))?;
    if name == "_id" && is_root {
        ctx.id_excluded_entirely = true;
        return Ok(());
    }
    if ctx.inclusion == Some(true) {
        return Err(MongoError::location(
            31254,
            format!("Cannot do exclusion on field {name} in inclusion projection"),
        ));
    }
    ctx.inclusion = Some(false);
    Ok(())
}

fn parse_sub_object(
    ctx: &mut ParseContext,
    name: &str,
    parent_path: Option<&str>,
    obj: &Document,
    parent: &mut PathNode,
    is_root: bool,
) -> Result<()> {
    check_field_path(name)?;
    if obj.len() == 1 {
        if let Some((key, arg)) = obj.iter().next().filter(|(k, _)| k.starts_with('$')) {
            if parse_find_expression(ctx, name, key, arg, obj, parent, is_root)? {
                return Ok(());
            }
            return Err(MongoError::location(
                31325,
                format!("Unknown expression {key}"),
            ));
        }
    }
    if obj.is_empty() {
        return Err(MongoError::location(
            51270,
            format!(
                "An empty sub-projection is not a valid value. Found empty object at path {name}"
            ),
        ));
    }
    let full_path = match parent_path {
        Some(p) => format!("{p}.{name}"),
        None => name.to_string(),
    };
    if full_path.split('.').count() > 100 {
        return Err(MongoError::location(5729100, "FieldPath is too long"));
    }
    let node = path_node_at(parent, name, &full_path)?;
    for (key, value) in obj {
        parse_element(ctx, key, value, Some(&full_path), node, false)?;
    }
    Ok(())
}

/// The internal node at `name` (dotted names create intermediate nodes).
fn path_node_at<'n>(
    parent: &'n mut PathNode,
    name: &str,
    full_path: &str,
) -> Result<&'n mut PathNode> {
    let mut current = parent;
    for part in name.split('.') {
        let index = match current.children.iter().position(|(n, _)| n == part) {
            Some(i) => i,
            None => {
                current
                    .children
                    .push((part.to_string(), ProjNode::Path(PathNode::default())));
                current.children.len() - 1
            }
        };
        current = match &mut current.children[index].1 {
            ProjNode::Path(node) => node,
            _ => {
                return Err(MongoError::location(
                    31250,
                    format!("Path collision at {full_path}"),
                ));
            }
        };
    }
    Ok(current)
}

/// Adds a leaf at a dotted path below `parent`, with MongoDB's collision errors.
fn add_node(parent: &mut PathNode, path: &str, node: ProjNode) -> Result<()> {
    let parts: Vec<&str> = path.split('.').collect();
    let mut current = parent;
    for (i, part) in parts.iter().enumerate() {
        let existing = current.children.iter().position(|(n, _)| n == part);
        if i + 1 == parts.len() {
            if existing.is_some() {
                return Err(MongoError::location(
                    31250,
                    format!("Path collision at {path}"),
                ));
            }
            current.children.push((part.to_string(), node));
            return Ok(());
        }
        let index = match existing {
            Some(index) => index,
            None => {
                current
                    .children
                    .push((part.to_string(), ProjNode::Path(PathNode::default())));
                current.children.len() - 1
            }
        };
        current = match &mut current.children[index].1 {
            ProjNode::Path(next) => next,
            _ => {
                return Err(MongoError::location(
                    31249,
                    format!(
                        "Path collision at {path} remaining portion {}",
                        parts[1..].join(".")
                    ),
                ));
            }
        };
    }
    Ok(())
}

/// `{field: {$op: arg}}`: the find-only operators, `$literal` and `$meta`. Returns false when
/// `$op` is not an expression name at all.
fn parse_find_expression(
    ctx: &mut ParseContext,
    name: &str,
    key: &str,
    arg: &Bson,
    obj: &Document,
    parent: &mut PathNode,
    is_root: bool,
) -> Result<bool> {
    match key {
        "$slice" => {
            let (skip, limit) = match parse_find_slice(arg) {
                Ok(v) => v,
                Err(find_error) => {
                    let expression_error = match arg {
                        Bson::Array(items) if (2..=3).contains(&items.len()) => not_implemented(
                            "the $slice aggregation expression is not supported in projections yet",
                        ),
                        _ => {
                            let n = if let Bson::Array(items) = arg {
                                items.len()
                            } else {
                                1
                            };
                            MongoError::location(
                                28667,
                                format!(
                                    "Expression $slice takes at least 2 arguments, and at most 3, but {n} were passed in."
                                ),
                            )
                        }
                    };
                    return Err(MongoError::new(
                        expression_error.code(),
                        format!(
                            "Invalid $slice syntax. The given syntax {} did not match the find() syntax because :: {}: {} :: The given syntax did not match the expression $slice syntax. :: caused by :: {}",
                            render_doc(obj),
                            find_error.code().name(),
                            find_error.message(),
                            expression_error.message()
                        ),
                    ));
                }
            };
            add_node(parent, name, ProjNode::Slice { skip, limit })?;
            ctx.has_find_slice = true;
            Ok(true)
        }
        "$elemMatch" => {
            let Bson::Document(_) = arg else {
                return Err(MongoError::location(
                    31274,
                    format!(
                        "elemMatch: Invalid argument, object required, but got {}",
                        type_name(arg)
                    ),
                ));
            };
            if ctx.has_positional {
                return Err(MongoError::location(
                    31255,
                    "Cannot specify positional operator and $elemMatch.",
                ));
            }
            if name.contains('.') || !is_root {
                return Err(MongoError::location(
                    31275,
                    "Cannot use $elemMatch projection on a nested field.",
                ));
            }
            let filter = Filter::parse(&doc! {name: {"$elemMatch": arg.clone()}})?;
            add_node(parent, name, ProjNode::ElemMatch(Box::new(filter)))?;
            ctx.has_elem_match = true;
            Ok(true)
        }
        _ if is_expression_name(key) => {
            let is_meta = key == "$meta";
            if ctx.inclusion == Some(false) && !is_meta {
                return Err(MongoError::location(
                    31252,
                    "Cannot use expression other than $meta in exclusion projection",
                ));
            }
            if !is_meta {
                ctx.inclusion = Some(true);
            }
            let expr = parse_expression_object(key, arg)?;
            add_node(parent, name, ProjNode::Expr(expr))?;
            Ok(true)
        }
        _ => Ok(false),
    }
}

fn parse_find_slice(arg: &Bson) -> Result<(Option<i32>, i32)> {
    let as_int = |v: &Bson| -> i32 {
        match v {
            Bson::Int32(n) => *n,
            Bson::Int64(n) => *n as i32,
            other => super::values::as_f64(other) as i32,
        }
    };
    match arg {
        v if super::values::is_number(v) => Ok((None, as_int(v))),
        Bson::Array(items) => {
            if items.len() != 2 {
                return Err(MongoError::location(
                    31272,
                    "$slice array argument should be of form [skip, limit]",
                ));
            }
            if !super::values::is_number(&items[0]) {
                return Err(MongoError::location(
                    31257,
                    format!(
                        "$slice expects the skip argument to be a number, got {}",
                        type_name(&items[0])
                    ),
                ));
            }
            if !super::values::is_number(&items[1]) {
                return Err(MongoError::location(
                    31258,
                    format!(
                        "$slice expects the limit argument to be a number, got {}",
                        type_name(&items[1])
                    ),
                ));
            }
            let limit = as_int(&items[1]);
            if limit <= 0 {
                return Err(MongoError::location(
                    31259,
                    format!("$slice limit must be positive, got {limit}"),
                ));
            }
            Ok((Some(as_int(&items[0])), limit))
        }
        _ => Err(MongoError::location(
            31273,
            "$slice only supports numbers and [skip, limit] arrays",
        )),
    }
}

/// `{$name: arg}` as an aggregation expression: only `$literal` and `$meta` are understood.
fn parse_expression_object(key: &str, arg: &Bson) -> Result<Expr> {
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
fn parse_operand(value: &Bson) -> Result<Expr> {
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
fn is_expression_name(name: &str) -> bool {
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

// ---------------------------------------------------------------------------------------------
// Application

impl PathNode {
    fn get(&self, name: &str) -> Option<&ProjNode> {
        self.children
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, node)| node)
    }

    fn has_computed(&self) -> bool {
        self.children.iter().any(|(_, node)| match node {
            ProjNode::Expr(_) => true,
            ProjNode::Path(sub) => sub.has_computed(),
            _ => false,
        })
    }
}

fn include_doc(doc: &Document, node: &PathNode, root: &Document) -> Document {
    let mut out = Document::new();
    for (key, value) in doc {
        match node.get(key) {
            Some(ProjNode::Bool(true) | ProjNode::Positional) => {
                out.insert(key.clone(), value.clone());
            }
            Some(ProjNode::Path(sub)) => match value {
                Bson::Document(d) => {
                    out.insert(key.clone(), include_doc(d, sub, root));
                }
                Bson::Array(items) => {
                    out.insert(key.clone(), include_array(items, sub, root));
                }
                _ => {}
            },
            Some(ProjNode::Slice { skip, limit }) => {
                out.insert(key.clone(), slice(value, *skip, *limit));
            }
            _ => {}
        }
    }
    apply_expressions(&mut out, node, root);
    out
}

fn include_array(items: &[Bson], node: &PathNode, root: &Document) -> Bson {
    let mut out = Vec::new();
    for item in items {
        match item {
            Bson::Document(d) => out.push(Bson::Document(include_doc(d, node, root))),
            Bson::Array(inner) => out.push(include_array(inner, node, root)),
            _ => {}
        }
    }
    Bson::Array(out)
}

/// Sets the computed fields of `node` (in projection order) on an already projected level.
fn apply_expressions(out: &mut Document, node: &PathNode, root: &Document) {
    for (name, child) in &node.children {
        match child {
            ProjNode::Expr(expr) => match evaluate(expr, root) {
                Some(v) => {
                    out.insert(name.clone(), v);
                }
                None => {
                    out.remove(name);
                }
            },
            ProjNode::Path(sub) if sub.has_computed() => {
                let current = out.remove(name);
                out.insert(name.clone(), expressions_into_value(current, sub, root));
            }
            _ => {}
        }
    }
}

fn expressions_into_value(value: Option<Bson>, node: &PathNode, root: &Document) -> Bson {
    match value {
        Some(Bson::Document(mut d)) => {
            apply_expressions(&mut d, node, root);
            Bson::Document(d)
        }
        Some(Bson::Array(items)) => Bson::Array(
            items
                .into_iter()
                .map(|item| expressions_into_value(Some(item), node, root))
                .collect(),
        ),
        _ => {
            let mut d = Document::new();
            apply_expressions(&mut d, node, root);
            Bson::Document(d)
        }
    }
}

fn exclude_doc(doc: &Document, node: &PathNode) -> Document {
    let mut out = Document::new();
    for (key, value) in doc {
        match node.get(key) {
            Some(ProjNode::Bool(false)) => {}
            Some(ProjNode::Path(sub)) => {
                let projected = match value {
                    Bson::Document(d) => Bson::Document(exclude_doc(d, sub)),
                    Bson::Array(items) => exclude_array(items, sub),
                    other => other.clone(),
                };
                out.insert(key.clone(), projected);
            }
            Some(ProjNode::Slice { skip, limit }) => {
                out.insert(key.clone(), slice(value, *skip, *limit));
            }
            _ => {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    out
}

fn exclude_array(items: &[Bson], node: &PathNode) -> Bson {
    Bson::Array(
        items
            .iter()
            .map(|item| match item {
                Bson::Document(d) => Bson::Document(exclude_doc(d, node)),
                Bson::Array(inner) => exclude_array(inner, node),
                other => other.clone(),
            })
            .collect(),
    )
}

/// Find's `$slice`: `limit` elements from the front (or back when negative), after `skip`
/// (counted from the back when negative). Non-arrays are left alone.
fn slice(value: &Bson, skip: Option<i32>, limit: i32) -> Bson {
    let Bson::Array(items) = value else {
        return value.clone();
    };
    let len = items.len() as i64;
    let (start, end) = match skip {
        None if limit >= 0 => (0, (limit as i64).min(len)),
        None => ((len + limit as i64).max(0), len),
        Some(skip) => {
            let start = if skip < 0 {
                (len + skip as i64).max(0)
            } else {
                (skip as i64).min(len)
            };
            (start, (start + limit as i64).min(len))
        }
    };
    Bson::Array(items[start as usize..end as usize].to_vec())
}

/// Evaluates a computed field; `None` is "missing" (the field is left out).
fn evaluate(expr: &Expr, root: &Document) -> Option<Bson> {
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

/// Cuts the first array along `path` in the projected document down to its `position`th element.
fn apply_positional(out: &mut Document, path: &[String], position: usize) -> Result<()> {
    let Some((first, rest)) = path.split_first() else {
        return Ok(());
    };
    let Some(value) = out.get_mut(first) else {
        return Ok(());
    };
    match value {
        Bson::Array(items) => {
            if position >= items.len() {
                return Err(MongoError::location(
                    51247,
                    "positional operator '.$' element mismatch",
                ));
            }
            let element = items[position].clone();
            *value = Bson::Array(vec![element]);
            Ok(())
        }
        Bson::Document(d) if !rest.is_empty() => apply_positional(d, rest, position),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(spec: Document, doc: Document) -> Document {
        Projection::parse(&spec)
            .unwrap_or_else(|e| panic!("{spec}: {e}"))
            .apply(&doc)
    }

    fn perr(spec: Document) -> MongoError {
        Projection::parse(&spec).expect_err("should fail")
    }

    #[test]
    fn inclusion_keeps_id_and_document_order() {
        let d = doc! {"_id": 1, "a": 1, "b": 2, "c": 3};
        assert_eq!(
            p(doc! {"c": 1, "a": 1}, d.clone()),
            doc! {"_id": 1, "a": 1, "c": 3}
        );
        assert_eq!(p(doc! {"a": 1, "_id": 0}, d.clone()), doc! {"a": 1});
        assert_eq!(p(doc! {"_id": 1}, d.clone()), doc! {"_id": 1});
        assert_eq!(p(doc! {"a": true}, d.clone()), doc! {"_id": 1, "a": 1});
        assert_eq!(p(doc! {"a": 5}, d.clone()), doc! {"_id": 1, "a": 1});
        assert_eq!(p(doc! {"zz": 1}, d.clone()), doc! {"_id": 1});
        assert_eq!(p(doc! {}, d.clone()), d);
    }

    #[test]
    fn exclusion() {
        let d = doc! {"_id": 1, "a": 1, "b": {"c": 1, "d": 2}};
        assert_eq!(
            p(doc! {"a": 0}, d.clone()),
            doc! {"_id": 1, "b": {"c": 1, "d": 2}}
        );
        assert_eq!(
            p(doc! {"b.c": 0}, d.clone()),
            doc! {"_id": 1, "a": 1, "b": {"d": 2}}
        );
        assert_eq!(
            p(doc! {"_id": 0}, d.clone()),
            doc! {"a": 1, "b": {"c": 1, "d": 2}}
        );
        assert_eq!(
            p(doc! {"_id": 1, "a": 0}, d.clone()),
            doc! {"_id": 1, "b": {"c": 1, "d": 2}}
        );
        assert_eq!(
            p(doc! {"b": {"c": false}}, d),
            doc! {"_id": 1, "a": 1, "b": {"d": 2}}
        );
    }

    #[test]
    fn dotted_paths_through_arrays() {
        let d = doc! {"_id": 1, "a": [{"b": 1, "c": 2}, 5, [{"b": 3, "c": 4}], {"c": 6}], "x": {"y": 1, "z": 2}};
        assert_eq!(
            p(doc! {"a.b": 1, "_id": 0}, d.clone()),
            doc! {"a": [{"b": 1}, [{"b": 3}], {}]}
        );
        assert_eq!(
            p(doc! {"a.b": 0, "x": 0}, d.clone()),
            doc! {"_id": 1, "a": [{"c": 2}, 5, [{"c": 4}], {"c": 6}]}
        );
        assert_eq!(
            p(doc! {"x.z": 1}, d.clone()),
            doc! {"_id": 1, "x": {"z": 2}}
        );
        assert_eq!(
            p(doc! {"x": {"y": 1}}, d.clone()),
            doc! {"_id": 1, "x": {"y": 1}}
        );
        assert_eq!(p(doc! {"q.r": 1}, doc! {"_id": 1, "q": 5}), doc! {"_id": 1});
        assert_eq!(
            p(doc! {"q.r": 1}, doc! {"_id": 1, "q": {"s": 1}}),
            doc! {"_id": 1, "q": {}}
        );
    }

    #[test]
    fn slice_forms() {
        let d = doc! {"_id": 1, "a": [1, 2, 3, 4, 5], "b": 1};
        assert_eq!(
            p(doc! {"a": {"$slice": 2}}, d.clone()),
            doc! {"_id": 1, "a": [1, 2], "b": 1}
        );
        assert_eq!(
            p(doc! {"a": {"$slice": -2}}, d.clone()),
            doc! {"_id": 1, "a": [4, 5], "b": 1}
        );
        assert_eq!(
            p(doc! {"a": {"$slice": [1, 2]}}, d.clone()),
            doc! {"_id": 1, "a": [2, 3], "b": 1}
        );
        assert_eq!(
            p(doc! {"a": {"$slice": [-2, 5]}}, d.clone()),
            doc! {"_id": 1, "a": [4, 5], "b": 1}
        );
        assert_eq!(
            p(doc! {"a": {"$slice": [10, 2]}}, d.clone()),
            doc! {"_id": 1, "a": [], "b": 1}
        );
        assert_eq!(
            p(doc! {"a": {"$slice": 1}, "b": 1}, d.clone()),
            doc! {"_id": 1, "a": [1], "b": 1}
        );
        assert_eq!(
            p(doc! {"a": {"$slice": 1}, "_id": 1}, d.clone()),
            doc! {"_id": 1, "a": [1]}
        );
        assert_eq!(p(doc! {"b": {"$slice": 1}}, d.clone()), d.clone());
        // Not find() syntax, but valid syntax for the $slice aggregation expression.
        assert_eq!(
            perr(doc! {"a": {"$slice": [1, 0]}}).code(),
            ErrorCode::NotImplemented
        );
        assert_eq!(perr(doc! {"a": {"$slice": [1]}}).code().code(), 28667);
        assert_eq!(perr(doc! {"a": {"$slice": "x"}}).code().code(), 28667);
    }

    #[test]
    fn elem_match_projection() {
        let d = doc! {"_id": 1, "zip": 5, "s": [{"school": 1, "n": "a"}, {"school": 2, "n": "b"}, {"school": 2, "n": "c"}]};
        assert_eq!(
            p(doc! {"s": {"$elemMatch": {"school": 2}}}, d.clone()),
            doc! {"_id": 1, "s": [{"school": 2, "n": "b"}]}
        );
        assert_eq!(
            p(doc! {"s": {"$elemMatch": {"school": 9}}}, d.clone()),
            doc! {"_id": 1}
        );
        assert_eq!(
            p(
                doc! {"s": {"$elemMatch": {"school": 2}}, "zip": 1},
                doc! {"_id": 1, "s": [{"school": 2}], "zip": 5}
            ),
            doc! {"_id": 1, "zip": 5, "s": [{"school": 2}]}
        );
        assert_eq!(perr(doc! {"a.b": {"$elemMatch": {}}}).code().code(), 31275);
        assert_eq!(perr(doc! {"a": {"$elemMatch": 1}}).code().code(), 31274);
    }

    #[test]
    fn positional_projection_uses_the_filter_match() {
        let filter = Filter::parse(&doc! {"a.b": 2}).unwrap();
        let proj = Projection::parse_with_filter(&doc! {"a.$": 1}, &filter).unwrap();
        let d = doc! {"_id": 1, "a": [{"b": 1}, {"b": 2}], "c": 1};
        assert_eq!(
            proj.apply_with_filter(&d, &filter).unwrap(),
            doc! {"_id": 1, "a": [{"b": 2}]}
        );
        let filter = Filter::parse(&doc! {"a": {"$gte": 3}}).unwrap();
        let proj = Projection::parse_with_filter(&doc! {"a.$": 1}, &filter).unwrap();
        assert_eq!(
            proj.apply_with_filter(&doc! {"_id": 1, "a": [1, 3, 5]}, &filter)
                .unwrap(),
            doc! {"_id": 1, "a": [3]}
        );
        assert_eq!(
            Projection::parse(&doc! {"a.$": 1})
                .unwrap_err()
                .code()
                .code(),
            51050
        );
        assert_eq!(
            Projection::parse_with_filter(&doc! {"b.$": 1}, &filter)
                .unwrap_err()
                .code()
                .code(),
            31277
        );
        let filter = Filter::parse(&doc! {"a": 1}).unwrap();
        let proj = Projection::parse_with_filter(&doc! {"a.$": 1}, &filter).unwrap();
        assert_eq!(
            proj.apply_with_filter(&doc! {"a": 1}, &filter)
                .unwrap_err()
                .code()
                .code(),
            51246
        );
    }

    #[test]
    fn computed_fields() {
        let d = doc! {"_id": 1, "a": {"b": 5}, "c": [{"d": 1}, {"d": 2}, 3]};
        assert_eq!(p(doc! {"x": "$a.b"}, d.clone()), doc! {"_id": 1, "x": 5});
        assert_eq!(
            p(doc! {"x": "$c.d"}, d.clone()),
            doc! {"_id": 1, "x": [1, 2]}
        );
        assert_eq!(p(doc! {"x": "lit", "_id": 0}, d.clone()), doc! {"x": "lit"});
        assert_eq!(
            p(doc! {"x": {"$literal": 1}, "_id": 0}, d.clone()),
            doc! {"x": 1}
        );
        assert_eq!(p(doc! {"x": "$missing"}, d.clone()), doc! {"_id": 1});
        assert_eq!(
            p(doc! {"x": ["$a.b", 1, "$nope"], "_id": 0}, d.clone()),
            doc! {"x": [5, 1, null]}
        );
        assert_eq!(
            p(doc! {"a.z": "$a.b", "_id": 0}, d.clone()),
            doc! {"a": {"z": 5}}
        );
        assert_eq!(
            p(doc! {"a.b": 1, "a.z": {"$literal": 7}, "_id": 0}, d.clone()),
            doc! {"a": {"b": 5, "z": 7}}
        );
        assert_eq!(
            p(doc! {"x": "$$ROOT.a", "_id": 0}, d.clone()),
            doc! {"x": {"b": 5}}
        );
        assert_eq!(p(doc! {"x": null, "_id": 0}, d), doc! {"x": null});
        assert_eq!(
            perr(doc! {"x": {"$add": [1, 2]}}).code(),
            ErrorCode::NotImplemented
        );
        assert_eq!(perr(doc! {"x": {"$bogus": 1}}).code().code(), 31325);
        assert_eq!(perr(doc! {"x": "$$foo"}).code().code(), 17276);
        assert_eq!(perr(doc! {"a": 0, "x": "$y"}).code().code(), 31310);
        assert_eq!(
            perr(doc! {"a": 0, "x": {"$literal": 1}}).code().code(),
            31252
        );
        assert_eq!(
            perr(doc! {"x": {"$meta": "textScore"}}).code().code(),
            40218
        );
    }

    #[test]
    fn deep_sub_projections_are_refused() {
        let mut spec = doc! {"a": 1};
        for _ in 0..150 {
            spec = doc! {"a": spec};
        }
        assert_eq!(perr(spec).code().code(), 5729100);
    }

    #[test]
    fn parse_errors() {
        let e = perr(doc! {"a": 1, "b": 0});
        assert_eq!(
            (e.code().code(), e.message()),
            (
                31254,
                "Cannot do exclusion on field b in inclusion projection"
            )
        );
        let e = perr(doc! {"a": 0, "b": 1});
        assert_eq!(
            (e.code().code(), e.message()),
            (
                31253,
                "Cannot do inclusion on field b in exclusion projection"
            )
        );
        let e = perr(doc! {"a": 1, "a.b": 1});
        assert_eq!(
            (e.code().code(), e.message()),
            (31249, "Path collision at a.b remaining portion b")
        );
        let e = perr(doc! {"a.b": 1, "a": 1});
        assert_eq!(
            (e.code().code(), e.message()),
            (31250, "Path collision at a")
        );
        assert_eq!(perr(doc! {"": 1}).code().code(), 40352);
        assert_eq!(perr(doc! {"a..b": 1}).code().code(), 15998);
        assert_eq!(perr(doc! {"$a": 1}).code().code(), 16410);
        assert_eq!(perr(doc! {"a": {}}).code().code(), 51270);
        assert!(
            Projection::parse(&doc! {"_id": 0, "a": 1})
                .unwrap()
                .is_inclusion()
        );
        assert!(!Projection::parse(&doc! {"_id": 0}).unwrap().is_inclusion());
    }
}
