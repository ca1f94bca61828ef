//! Query filters: MongoDB's match-expression language, parsed from a filter document into a tree
//! and evaluated against documents with MongoDB's array and dotted-path semantics.
//!
//! Evaluation follows the classic matcher: a path is resolved into a set of candidate values
//! (through arrays of documents, numeric components as indexes or field names, leaf arrays
//! expanded into their elements plus the array itself) and a leaf predicate matches when any
//! candidate does. A path that resolves to nothing yields one "missing" candidate unless it ran
//! into an array, which is why `{"a.b": null}` matches `{a: 5}` but not `{a: [1]}`.

use super::pcre::MongoRegex;
use super::values::{
    as_f64, coerce_i64, exact_i64, format_g, integer_to_i64, integer_to_non_negative_i32,
    integer_to_non_negative_i64, is_nan, is_number, not_implemented, render_doc, render_element,
    truthy, type_code, type_code_for_alias,
};
use crate::document::order::{canonical_rank, compare_values, values_equal};
use crate::error::{ErrorCode, MongoError, Result};
use bson::{Bson, Document};
use std::cmp::Ordering;

/// Nesting beyond this many levels of operators is refused rather than recursed into.
const MAX_DEPTH: usize = 100;

/// A parsed query filter.
#[derive(Clone, Debug)]
pub struct Filter {
    root: Node,
}

#[derive(Clone, Debug)]
pub(crate) enum Node {
    And(Vec<Node>),
    Or(Vec<Node>),
    Nor(Vec<Node>),
    Not(Box<Node>),
    AlwaysTrue,
    AlwaysFalse,
    Leaf(Leaf),
}

#[derive(Clone, Debug)]
pub(crate) struct Leaf {
    path: String,
    parts: Vec<String>,
    op: Op,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CmpOp {
    Eq,
    Lt,
    Lte,
    Gt,
    Gte,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BitTest {
    AllSet,
    AnySet,
    AllClear,
    AnyClear,
}

#[derive(Clone, Debug)]
enum BitMask {
    Positions(Vec<u32>),
}

#[derive(Clone, Debug, Default)]
struct TypeSet {
    all_numbers: bool,
    codes: Vec<i32>,
}

#[derive(Clone, Debug)]
enum Op {
    Cmp(CmpOp, Bson),
    In {
        values: Vec<Bson>,
        has_null: bool,
        regexes: Vec<MongoRegex>,
    },
    Regex(MongoRegex),
    Exists,
    Type(TypeSet),
    Size(i64),
    Mod {
        divisor: i64,
        remainder: i64,
    },
    Bits(BitTest, BitMask),
    ElemMatchObject(Box<Node>),
    ElemMatchValue(Vec<Node>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Level {
    /// The filter document itself.
    PredicateTop,
    /// Matching whole documents, below the filter's top (e.g. inside `$and`).
    UserDocumentTop,
    /// Matching embedded documents or array elements (inside `$elemMatch`).
    SubDocument,
}

impl Filter {
    /// Parses a filter document, refusing it with MongoDB's error when it is malformed.
    pub fn parse(filter: &Document) -> Result<Filter> {
        let root = Parser { depth: 0 }.parse_doc(filter, Level::PredicateTop)?;
        Ok(Filter { root })
    }

    /// A filter that matches every document.
    pub fn match_all() -> Filter {
        Filter {
            root: Node::And(Vec::new()),
        }
    }

    /// Whether the document satisfies the filter.
    pub fn matches(&self, doc: &Document) -> bool {
        let mut key = None;
        self.root.matches(doc, &mut key)
    }

    /// Whether the document matches, and the array position the match was found at (what the
    /// positional `$` of updates and projections refers to).
    pub fn matches_with_position(&self, doc: &Document) -> (bool, Option<usize>) {
        let mut key = None;
        let matched = self.root.matches(doc, &mut key);
        (matched, if matched { key } else { None })
    }

    /// The value `path` is constrained to by plain equality at the top level (or in a top-level
    /// `$and`), when that value can be looked up exactly: not a regex, array, null or undefined.
    pub fn equality(&self, path: &str) -> Option<&Bson> {
        fn find<'a>(node: &'a Node, path: &str) -> Option<&'a Bson> {
            match node {
                Node::Leaf(Leaf {
                    path: p,
                    op: Op::Cmp(CmpOp::Eq, value),
                    ..
                }) if p == path => match value {
                    Bson::RegularExpression(_) | Bson::Array(_) | Bson::Null | Bson::Undefined => {
                        None
                    }
                    _ => Some(value),
                },
                Node::And(children) => children.iter().find_map(|c| find(c, path)),
                _ => None,
            }
        }
        find(&self.root, path)
    }

    /// Whether the filter has no predicates at all (`{}` or only `$comment`).
    pub fn is_empty(&self) -> bool {
        matches!(&self.root, Node::And(children) if children.is_empty())
    }

    /// The paths of the leaf predicates reachable through logical operators (not inside
    /// `$elemMatch`): what positional projection checks its field against.
    pub fn leaf_paths(&self) -> Vec<&str> {
        fn collect<'a>(node: &'a Node, out: &mut Vec<&'a str>) {
            match node {
                Node::And(c) | Node::Or(c) | Node::Nor(c) => c.iter().for_each(|n| collect(n, out)),
                Node::Not(n) => collect(n, out),
                Node::Leaf(l) => out.push(&l.path),
                Node::AlwaysTrue | Node::AlwaysFalse => {}
            }
        }
        let mut out = Vec::new();
        collect(&self.root, &mut out);
        out
    }
}

impl Filter {
    /// The `path = value` equalities an upsert seeds its new document with: top-level (and
    /// `$and`) equalities, `$eq`, one-value `$in` and one-branch `$or` (which MongoDB's
    /// optimizer turns into equalities); nothing under other operators.
    pub(crate) fn upsert_equalities(&self) -> Vec<(&str, &Bson)> {
        fn collect<'a>(node: &'a Node, out: &mut Vec<(&'a str, &'a Bson)>) {
            match node {
                Node::And(children) => children.iter().for_each(|c| collect(c, out)),
                Node::Or(children) if children.len() == 1 => collect(&children[0], out),
                Node::Leaf(Leaf {
                    path,
                    op: Op::Cmp(CmpOp::Eq, value),
                    ..
                }) => out.push((path, value)),
                Node::Leaf(Leaf {
                    path,
                    op: Op::In {
                        values, regexes, ..
                    },
                    ..
                }) if values.len() == 1 && regexes.is_empty() => out.push((path, &values[0])),
                _ => {}
            }
        }
        let mut out = Vec::new();
        collect(&self.root, &mut out);
        out
    }
}

// ---------------------------------------------------------------------------------------------
// Parsing

struct Parser {
    depth: usize,
}

fn leaf(path: &str, op: Op) -> Node {
    Node::Leaf(Leaf {
        path: path.to_string(),
        parts: path.split('.').map(String::from).collect(),
        op,
    })
}

fn collapse_and(mut children: Vec<Node>) -> Node {
    if children.len() == 1 {
        children.pop().unwrap_or(Node::AlwaysTrue)
    } else {
        Node::And(children)
    }
}

fn is_dbref_document(doc: &Document, allow_incomplete: bool) -> bool {
    let has = |k: &str| doc.contains_key(k);
    if allow_incomplete {
        has("$ref") || has("$id") || has("$db")
    } else {
        has("$ref") && has("$id")
    }
}

/// `{$op: ...}` as opposed to a literal document to compare with.
fn is_expression_document(value: &Bson, allow_incomplete_dbref: bool) -> bool {
    let Bson::Document(doc) = value else {
        return false;
    };
    let Some(first) = doc.keys().next() else {
        return false;
    };
    first.starts_with('$') && !is_dbref_document(doc, allow_incomplete_dbref)
}

/// Operators that take no path (they apply to whole documents).
fn is_pathless_operator(name: &str) -> bool {
    matches!(
        name,
        "and"
            | "or"
            | "nor"
            | "comment"
            | "alwaysTrue"
            | "alwaysFalse"
            | "expr"
            | "where"
            | "text"
            | "jsonSchema"
            | "sampleRate"
            | "db"
            | "id"
            | "ref"
    ) || name.starts_with("_internalSchema")
}

/// Operators MongoDB recognises after a path (`parsePathAcceptingKeyword`).
fn is_path_accepting_keyword(name: &str) -> bool {
    matches!(
        name,
        "$eq"
            | "$lt"
            | "$lte"
            | "$gte"
            | "$gt"
            | "$in"
            | "$ne"
            | "$size"
            | "$all"
            | "$nin"
            | "$exists"
            | "$mod"
            | "$type"
            | "$regex"
            | "$options"
            | "$elemMatch"
            | "$near"
            | "$geoNear"
            | "$within"
            | "$geoWithin"
            | "$nearSphere"
            | "$geoIntersects"
            | "$bitsAllSet"
            | "$bitsAllClear"
            | "$bitsAnySet"
            | "$bitsAnyClear"
    ) || name.starts_with("$_internal")
}

fn eq_leaf(path: &str, value: &Bson) -> Result<Node> {
    if matches!(value, Bson::Undefined) {
        return Err(MongoError::bad_value("cannot compare to undefined"));
    }
    Ok(leaf(path, Op::Cmp(CmpOp::Eq, value.clone())))
}

fn regex_leaf(path: &str, pattern: &str, options: &str) -> Result<Node> {
    Ok(leaf(path, Op::Regex(MongoRegex::new(pattern, options)?)))
}

impl Parser {
    fn descend(&mut self) -> Result<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(MongoError::bad_value(format!(
                "exceeded depth limit of {MAX_DEPTH} when parsing match expression"
            )));
        }
        Ok(())
    }

    fn parse_doc(&mut self, obj: &Document, level: Level) -> Result<Node> {
        self.descend()?;
        let next_level = if level == Level::PredicateTop {
            Level::UserDocumentTop
        } else {
            level
        };
        let mut children = Vec::new();
        for (key, value) in obj {
            if let Some(name) = key.strip_prefix('$') {
                if let Some(node) = self.parse_pathless(name, key, value, level)? {
                    children.push(node);
                }
                continue;
            }
            if key.matches('.').count() + 1 > 100 {
                return Err(MongoError::location(5729100, "FieldPath is too long"));
            }
            if is_expression_document(value, false) {
                if let Bson::Document(sub) = value {
                    self.parse_sub(key, sub, next_level, &mut children)?;
                }
                continue;
            }
            match value {
                Bson::RegularExpression(re) => {
                    children.push(regex_leaf(key, &re.pattern, &re.options)?)
                }
                _ => children.push(eq_leaf(key, value)?),
            }
        }
        self.depth -= 1;
        Ok(collapse_and(children))
    }

    fn parse_pathless(
        &mut self,
        name: &str,
        key: &str,
        value: &Bson,
        level: Level,
    ) -> Result<Option<Node>> {
        match name {
            "and" | "or" | "nor" => {
                let Bson::Array(items) = value else {
                    return Err(MongoError::bad_value(format!("{key} must be an array")));
                };
                if items.is_empty() {
                    return Err(MongoError::bad_value(
                        "$and/$or/$nor must be a nonempty array",
                    ));
                }
                let mut children = Vec::with_capacity(items.len());
                for item in items {
                    let Bson::Document(sub) = item else {
                        return Err(MongoError::bad_value(
                            "$or/$and/$nor entries need to be full objects",
                        ));
                    };
                    children.push(self.parse_doc(sub, level)?);
                }
                Ok(Some(match name {
                    "and" => Node::And(children),
                    "or" => Node::Or(children),
                    _ => Node::Nor(children),
                }))
            }
            "comment" => Ok(None),
            "alwaysTrue" | "alwaysFalse" => {
                if integer_to_i64(key, value)? != 1 {
                    return Err(MongoError::failed_to_parse(format!(
                        "{key} must be an integer value of 1"
                    )));
                }
                Ok(Some(if name == "alwaysTrue" {
                    Node::AlwaysTrue
                } else {
                    Node::AlwaysFalse
                }))
            }
            "expr" => {
                if level == Level::SubDocument {
                    return Err(MongoError::bad_value(
                        "$expr can only be applied to the top-level document",
                    ));
                }
                Err(not_implemented(
                    "$expr is not supported yet: it needs the aggregation expression engine",
                ))
            }
            "where" => {
                if level == Level::SubDocument {
                    return Err(MongoError::bad_value(
                        "$where can only be applied to the top-level document",
                    ));
                }
                Err(MongoError::bad_value(
                    "no globalScriptEngine in $where parsing",
                ))
            }
            "text" => {
                if level == Level::SubDocument {
                    return Err(MongoError::bad_value(
                        "$text can only be applied to the top-level document",
                    ));
                }
                Err(MongoError::new(
                    ErrorCode::IndexNotFound,
                    "text index required for $text query",
                ))
            }
            "jsonSchema" => {
                if !matches!(value, Bson::Document(_)) {
                    return Err(MongoError::type_mismatch("$jsonSchema must be an object"));
                }
                Err(not_implemented("$jsonSchema is not supported yet"))
            }
            "sampleRate" => {
                if level == Level::SubDocument {
                    return Err(MongoError::bad_value(
                        "$sampleRate can only be applied to the top-level document",
                    ));
                }
                if !is_number(value) {
                    return Err(MongoError::bad_value(
                        "argument to $sampleRate must be a numeric type",
                    ));
                }
                let rate = as_f64(value);
                if !(0.0..=1.0).contains(&rate) {
                    return Err(MongoError::bad_value(
                        "numeric argument to $sampleRate must be in [0, 1]",
                    ));
                }
                if rate == 0.0 {
                    Ok(Some(Node::AlwaysFalse))
                } else if rate == 1.0 {
                    Ok(Some(Node::AlwaysTrue))
                } else {
                    Err(not_implemented(
                        "$sampleRate with a rate strictly between 0 and 1 is not supported yet",
                    ))
                }
            }
            // DBRef fields are matched by plain equality.
            "db" | "id" | "ref" => Ok(Some(eq_leaf(key, value)?)),
            _ => {
                let hint = if name == "not" {
                    ". If you are trying to negate an entire expression, use $nor."
                } else {
                    ". If you have a field name that starts with a '$' symbol, consider using $getField or $setField."
                };
                Err(MongoError::bad_value(format!(
                    "unknown top level operator: {key}{hint}"
                )))
            }
        }
    }

    /// Parses `{path: {$op: ..., $op2: ...}}` into one leaf per operator.
    fn parse_sub(
        &mut self,
        path: &str,
        obj: &Document,
        level: Level,
        out: &mut Vec<Node>,
    ) -> Result<()> {
        self.descend()?;
        if let Some((first, first_value)) = obj.iter().next() {
            if matches!(first.as_str(), "$near" | "$nearSphere" | "$geoNear")
                && matches!(first_value, Bson::Document(_) | Bson::Array(_))
            {
                return Err(geo_not_supported(first));
            }
        }
        for (key, value) in obj {
            if let Some(node) = self.parse_sub_field(obj, path, key, value, level)? {
                out.push(node);
            }
        }
        self.depth -= 1;
        Ok(())
    }

    fn parse_sub_field(
        &mut self,
        context: &Document,
        path: &str,
        key: &str,
        value: &Bson,
        level: Level,
    ) -> Result<Option<Node>> {
        let comparison = |op: CmpOp| -> Result<Option<Node>> {
            if matches!(value, Bson::RegularExpression(_)) {
                return Err(MongoError::bad_value(format!(
                    "Can't have RegEx as arg to predicate over field '{path}'."
                )));
            }
            if matches!(value, Bson::Undefined) {
                return Err(MongoError::bad_value("cannot compare to undefined"));
            }
            Ok(Some(leaf(path, Op::Cmp(op, value.clone()))))
        };
        match key {
            "$not" => self.parse_not(path, value, level).map(Some),
            "$eq" => eq_leaf(path, value).map(Some),
            "$ne" => {
                if matches!(value, Bson::RegularExpression(_)) {
                    return Err(MongoError::bad_value("Can't have regex as arg to $ne."));
                }
                Ok(Some(Node::Not(Box::new(eq_leaf(path, value)?))))
            }
            "$lt" => comparison(CmpOp::Lt),
            "$lte" => comparison(CmpOp::Lte),
            "$gt" => comparison(CmpOp::Gt),
            "$gte" => comparison(CmpOp::Gte),
            "$in" | "$nin" => {
                let Bson::Array(items) = value else {
                    return Err(MongoError::bad_value(format!("{key} needs an array")));
                };
                let node = leaf(path, parse_in(items)?);
                Ok(Some(if key == "$in" {
                    node
                } else {
                    Node::Not(Box::new(node))
                }))
            }
            "$size" => {
                let size = integer_to_non_negative_i32("$size", value).map_err(|e| {
                    MongoError::bad_value(format!("Failed to parse $size. {}", e.message()))
                })?;
                Ok(Some(leaf(path, Op::Size(i64::from(size)))))
            }
            "$exists" => {
                let node = leaf(path, Op::Exists);
                Ok(Some(if truthy(value) {
                    node
                } else {
                    Node::Not(Box::new(node))
                }))
            }
            "$type" => Ok(Some(leaf(path, Op::Type(parse_type_set(path, value)?)))),
            "$mod" => Ok(Some(leaf(path, parse_mod(value)?))),
            "$options" => {
                if context.contains_key("$regex") {
                    Ok(None)
                } else {
                    Err(MongoError::bad_value("$options needs a $regex"))
                }
            }
            "$regex" => parse_regex_document(path, context).map(Some),
            "$elemMatch" => self.parse_elem_match(path, value).map(Some),
            "$all" => self.parse_all(path, value).map(Some),
            "$bitsAllSet" => parse_bits(path, key, value, BitTest::AllSet).map(Some),
            "$bitsAnySet" => parse_bits(path, key, value, BitTest::AnySet).map(Some),
            "$bitsAllClear" => parse_bits(path, key, value, BitTest::AllClear).map(Some),
            "$bitsAnyClear" => parse_bits(path, key, value, BitTest::AnyClear).map(Some),
            "$near" | "$nearSphere" | "$geoNear" => Err(MongoError::bad_value(format!(
                "near must be first in: {}",
                render_doc(context)
            ))),
            "$geoWithin" | "$within" | "$geoIntersects" => Err(geo_not_supported(key)),
            "$where" => Err(MongoError::bad_value("$where cannot be applied to a field")),
            _ => Err(MongoError::bad_value(format!("unknown operator: {key}"))),
        }
    }

    fn parse_not(&mut self, path: &str, value: &Bson, level: Level) -> Result<Node> {
        match value {
            Bson::RegularExpression(re) => Ok(Node::Not(Box::new(regex_leaf(
                path,
                &re.pattern,
                &re.options,
            )?))),
            Bson::Document(obj) => {
                if obj.is_empty() {
                    return Err(MongoError::bad_value("$not cannot be empty"));
                }
                let mut children = Vec::new();
                self.parse_sub(path, obj, level, &mut children)?;
                Ok(Node::Not(Box::new(collapse_and(children))))
            }
            _ => Err(MongoError::bad_value("$not needs a regex or a document")),
        }
    }

    fn parse_elem_match(&mut self, path: &str, value: &Bson) -> Result<Node> {
        let Bson::Document(obj) = value else {
            return Err(MongoError::bad_value("$elemMatch needs an Object"));
        };
        let value_form = is_expression_document(value, true)
            && obj
                .keys()
                .next()
                .is_some_and(|k| !is_pathless_operator(&k[1..]));
        if value_form {
            let mut children = Vec::new();
            self.parse_sub("", obj, Level::SubDocument, &mut children)?;
            return Ok(leaf(path, Op::ElemMatchValue(children)));
        }
        let sub = self.parse_doc(obj, Level::SubDocument)?;
        Ok(leaf(path, Op::ElemMatchObject(Box::new(sub))))
    }

    fn parse_all(&mut self, path: &str, value: &Bson) -> Result<Node> {
        let Bson::Array(items) = value else {
            return Err(MongoError::bad_value("$all needs an array"));
        };
        let first_key_of = |v: &Bson| match v {
            Bson::Document(d) => d.keys().next().cloned(),
            _ => None,
        };
        if first_key_of(items.first().unwrap_or(&Bson::Null)).as_deref() == Some("$elemMatch") {
            let mut children = Vec::with_capacity(items.len());
            for item in items {
                let Bson::Document(d) = item else {
                    return Err(MongoError::bad_value(
                        "$all/$elemMatch has to be consistent",
                    ));
                };
                match d.iter().next() {
                    Some((k, v)) if k == "$elemMatch" => {
                        children.push(self.parse_elem_match(path, v)?)
                    }
                    _ => {
                        return Err(MongoError::bad_value(
                            "$all/$elemMatch has to be consistent",
                        ));
                    }
                }
            }
            return Ok(Node::And(children));
        }
        let mut children = Vec::with_capacity(items.len());
        for item in items {
            match item {
                Bson::RegularExpression(re) => {
                    children.push(regex_leaf(path, &re.pattern, &re.options)?)
                }
                Bson::Document(_)
                    if first_key_of(item).is_some_and(|k| is_path_accepting_keyword(&k)) =>
                {
                    return Err(MongoError::bad_value("no $ expressions in $all"));
                }
                _ => children.push(eq_leaf(path, item)?),
            }
        }
        if children.is_empty() {
            return Ok(Node::AlwaysFalse);
        }
        Ok(Node::And(children))
    }
}

fn geo_not_supported(op: &str) -> MongoError {
    not_implemented(format!(
        "geospatial query operators are not supported yet: {op}"
    ))
}

fn parse_in(items: &[Bson]) -> Result<Op> {
    let mut values = Vec::new();
    let mut regexes = Vec::new();
    let mut has_null = false;
    for item in items {
        if is_expression_document(item, false) {
            return Err(MongoError::bad_value("cannot nest $ under $in"));
        }
        match item {
            Bson::RegularExpression(re) => regexes.push(MongoRegex::new(&re.pattern, &re.options)?),
            Bson::Undefined => {
                return Err(MongoError::bad_value(
                    "InMatchExpression equality cannot be undefined",
                ));
            }
            _ => {
                has_null |= matches!(item, Bson::Null);
                values.push(item.clone());
            }
        }
    }
    Ok(Op::In {
        values,
        has_null,
        regexes,
    })
}

fn parse_type_set(path: &str, value: &Bson) -> Result<TypeSet> {
    let mut set = TypeSet::default();
    let mut add = |v: &Bson| -> Result<()> {
        match v {
            Bson::String(alias) => {
                if alias == "number" {
                    set.all_numbers = true;
                } else {
                    let code = type_code_for_alias(alias).ok_or_else(|| {
                        MongoError::bad_value(format!("Unknown type name alias: {alias}"))
                    })?;
                    set.codes.push(code);
                }
                Ok(())
            }
            v if is_number(v) => {
                let invalid = || {
                    MongoError::bad_value(format!(
                        "Invalid numerical type code: {}",
                        format_g(as_f64(v), 6)
                    ))
                };
                let code = integer_to_i64("", v).map_err(|_| invalid())?;
                let code = i32::try_from(code).map_err(|_| invalid())?;
                if !(code == -1 || code == 127 || (1..=19).contains(&code)) {
                    return Err(invalid());
                }
                set.codes.push(code);
                Ok(())
            }
            _ => Err(MongoError::type_mismatch(
                "type must be represented as a number or a string",
            )),
        }
    };
    match value {
        Bson::Array(items) => items.iter().try_for_each(&mut add)?,
        other => add(other)?,
    }
    if !set.all_numbers && set.codes.is_empty() {
        return Err(MongoError::failed_to_parse(format!(
            "{path} must match at least one type"
        )));
    }
    Ok(set)
}

fn parse_mod(value: &Bson) -> Result<Op> {
    let Bson::Array(items) = value else {
        return Err(MongoError::bad_value("malformed mod, needs to be an array"));
    };
    let Some(divisor) = items.first() else {
        return Err(MongoError::bad_value("malformed mod, not enough elements"));
    };
    if !is_number(divisor) {
        return Err(MongoError::bad_value("malformed mod, divisor not a number"));
    }
    let Some(remainder) = items.get(1) else {
        return Err(MongoError::bad_value("malformed mod, not enough elements"));
    };
    if !is_number(remainder) {
        return Err(MongoError::bad_value(
            "malformed mod, remainder not a number",
        ));
    }
    if items.len() > 2 {
        return Err(MongoError::bad_value("malformed mod, too many elements"));
    }
    let divisor = coerce_i64(divisor).map_err(|why| {
        MongoError::bad_value(format!(
            "malformed mod, divisor value is invalid :: caused by :: {why}"
        ))
    })?;
    let remainder = coerce_i64(remainder).map_err(|why| {
        MongoError::bad_value(format!(
            "malformed mod, remainder value is invalid :: caused by :: {why}"
        ))
    })?;
    if divisor == 0 {
        return Err(MongoError::bad_value("divisor cannot be 0"));
    }
    Ok(Op::Mod { divisor, remainder })
}

fn parse_regex_document(path: &str, context: &Document) -> Result<Node> {
    let mut pattern = String::new();
    let mut options = String::new();
    for (key, value) in context {
        match key.as_str() {
            "$regex" => match value {
                Bson::String(s) => pattern = s.clone(),
                Bson::RegularExpression(re) => {
                    pattern = re.pattern.clone();
                    if !re.options.is_empty() {
                        if !options.is_empty() {
                            return Err(MongoError::location(
                                51074,
                                "options set in both $regex and $options",
                            ));
                        }
                        options = re.options.clone();
                    }
                }
                _ => return Err(MongoError::bad_value("$regex has to be a string")),
            },
            "$options" => {
                let Bson::String(s) = value else {
                    return Err(MongoError::bad_value("$options has to be a string"));
                };
                if !options.is_empty() {
                    return Err(MongoError::location(
                        51075,
                        "options set in both $regex and $options",
                    ));
                }
                options = s.clone();
            }
            _ => {}
        }
    }
    regex_leaf(path, &pattern, &options)
}

fn parse_bits(path: &str, name: &str, value: &Bson, test: BitTest) -> Result<Node> {
    let positions = match value {
        Bson::Array(items) => {
            let mut positions = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                let p = integer_to_non_negative_i32(&i.to_string(), item).map_err(|e| {
                    MongoError::bad_value(format!("Failed to parse bit position. {}", e.message()))
                })?;
                positions.push(p as u32);
            }
            positions
        }
        v if is_number(v) => {
            let mask = integer_to_non_negative_i64(name, v)?;
            (0..63).filter(|b| mask & (1i64 << b) != 0).collect()
        }
        Bson::Binary(bin) => {
            let mut positions = Vec::new();
            for (byte_index, byte) in bin.bytes.iter().enumerate() {
                for bit in 0..8 {
                    if byte & (1 << bit) != 0 {
                        positions.push((byte_index * 8 + bit) as u32);
                    }
                }
            }
            positions
        }
        _ => {
            return Err(MongoError::bad_value(format!(
                "{path} takes an Array, a number, or a BinData but received: {}",
                render_element(name, value)
            )));
        }
    };
    Ok(leaf(path, Op::Bits(test, BitMask::Positions(positions))))
}

// ---------------------------------------------------------------------------------------------
// Evaluation

impl Node {
    /// Whether a whole document matches; `key` receives the array position of the match.
    pub(crate) fn matches(&self, doc: &Document, key: &mut Option<usize>) -> bool {
        match self {
            Node::And(children) => children.iter().all(|c| c.matches(doc, key)),
            Node::Or(children) => children.iter().any(|c| c.matches(doc, key)),
            Node::Nor(children) => !children.iter().any(|c| c.matches(doc, &mut None)),
            Node::Not(child) => !child.matches(doc, &mut None),
            Node::AlwaysTrue => true,
            Node::AlwaysFalse => false,
            Node::Leaf(l) => l.matches(doc, key),
        }
    }

    /// Whether a single value matches, ignoring paths (`$elemMatch` value form).
    fn matches_single(&self, value: Option<&Bson>) -> bool {
        match self {
            Node::And(children) => children.iter().all(|c| c.matches_single(value)),
            Node::Or(children) => children.iter().any(|c| c.matches_single(value)),
            Node::Nor(children) => !children.iter().any(|c| c.matches_single(value)),
            Node::Not(child) => !child.matches_single(value),
            Node::AlwaysTrue => true,
            Node::AlwaysFalse => false,
            Node::Leaf(l) => l.op.matches_single(value, &mut None),
        }
    }
}

impl Leaf {
    fn matches(&self, doc: &Document, key: &mut Option<usize>) -> bool {
        let expand_leaf_arrays = !matches!(
            self.op,
            Op::Size(_) | Op::ElemMatchObject(_) | Op::ElemMatchValue(_)
        );
        let mut matched = false;
        walk_path(
            doc,
            &self.parts,
            expand_leaf_arrays,
            &mut |value, offset| {
                let mut inner = None;
                if self.op.matches_single(value, &mut inner) {
                    if let Some(pos) = offset.or(inner) {
                        *key = Some(pos);
                    }
                    matched = true;
                    true
                } else {
                    false
                }
            },
        );
        matched
    }
}

/// Resolves `parts` in `doc` into candidate values, calling `f(value, outermost_array_offset)`
/// for each (`None` value = missing) until it returns true. Returns whether it did.
pub(crate) fn walk_path<'a>(
    doc: &'a Document,
    parts: &[String],
    expand_leaf_arrays: bool,
    f: &mut dyn FnMut(Option<&'a Bson>, Option<usize>) -> bool,
) -> bool {
    walk_container(Container::Doc(doc), parts, expand_leaf_arrays, None, f)
}

#[derive(Clone, Copy)]
enum Container<'a> {
    Doc(&'a Document),
    /// An array looked at as a document whose field names are its indexes.
    Arr(&'a [Bson]),
}

impl<'a> Container<'a> {
    fn get(self, name: &str) -> Option<&'a Bson> {
        match self {
            Container::Doc(d) => d.get(name),
            Container::Arr(items) => {
                let index = super::values::array_index(name)?;
                (index.to_string() == name)
                    .then(|| items.get(index))
                    .flatten()
            }
        }
    }
}

fn walk_container<'a>(
    container: Container<'a>,
    parts: &[String],
    expand: bool,
    outer: Option<usize>,
    f: &mut dyn FnMut(Option<&'a Bson>, Option<usize>) -> bool,
) -> bool {
    let Some(first) = parts.first() else {
        return f(None, outer);
    };
    let Some(mut current) = container.get(first) else {
        return f(None, outer);
    };
    let mut index = 0;
    loop {
        if let Bson::Array(items) = current {
            return walk_array(current, items, &parts[index + 1..], expand, outer, f);
        }
        if index + 1 == parts.len() {
            return f(Some(current), outer);
        }
        match current {
            Bson::Document(d) => match d.get(&parts[index + 1]) {
                Some(v) => {
                    current = v;
                    index += 1;
                }
                None => return f(None, outer),
            },
            _ => return f(None, outer),
        }
    }
}

fn walk_array<'a>(
    array: &'a Bson,
    items: &'a [Bson],
    rest: &[String],
    expand: bool,
    outer: Option<usize>,
    f: &mut dyn FnMut(Option<&'a Bson>, Option<usize>) -> bool,
) -> bool {
    if rest.is_empty() {
        if expand {
            for (i, item) in items.iter().enumerate() {
                if f(Some(item), outer.or(Some(i))) {
                    return true;
                }
            }
        }
        return f(Some(array), outer);
    }
    let next = &rest[0];
    let numeric = !next.is_empty() && next.bytes().all(|b| b.is_ascii_digit());
    for (i, item) in items.iter().enumerate() {
        let offset = outer.or(Some(i));
        let offset_match = numeric && *next == i.to_string();
        if let Bson::Document(d) = item {
            if walk_container(Container::Doc(d), rest, expand, offset, f) {
                return true;
            }
        }
        if offset_match {
            if rest.len() == 1 {
                if f(Some(item), offset) {
                    return true;
                }
            } else {
                let sub = match item {
                    Bson::Document(d) => Some(Container::Doc(d)),
                    Bson::Array(inner) => Some(Container::Arr(inner)),
                    _ => None,
                };
                if let Some(sub) = sub {
                    if walk_container(sub, &rest[1..], expand, offset, f) {
                        return true;
                    }
                }
            }
        }
    }
    false
}

impl Op {
    /// MongoDB's `matchesSingleElement`: the predicate against one candidate value.
    fn matches_single(&self, value: Option<&Bson>, key: &mut Option<usize>) -> bool {
        match self {
            Op::Cmp(op, rhs) => compare_single(*op, rhs, value),
            Op::In {
                values,
                has_null,
                regexes,
            } => match value {
                None => *has_null,
                Some(v) => {
                    values.iter().any(|x| values_equal(x, v))
                        || regexes.iter().any(|re| regex_matches(re, v))
                }
            },
            Op::Regex(re) => value.is_some_and(|v| regex_matches(re, v)),
            Op::Exists => value.is_some(),
            Op::Type(set) => value.is_some_and(|v| {
                (set.all_numbers && is_number(v)) || set.codes.contains(&type_code(v))
            }),
            Op::Size(n) => matches!(value, Some(Bson::Array(items)) if items.len() as i64 == *n),
            Op::Mod { divisor, remainder } => {
                value.is_some_and(|v| mod_matches(v, *divisor, *remainder))
            }
            Op::Bits(test, mask) => value.is_some_and(|v| bits_match(v, *test, mask)),
            Op::ElemMatchObject(sub) => {
                let Some(Bson::Array(items)) = value else {
                    return false;
                };
                for (i, item) in items.iter().enumerate() {
                    let matched = match item {
                        Bson::Document(d) => sub.matches(d, &mut None),
                        Bson::Array(inner) => {
                            sub.matches(&super::values::array_as_document(inner), &mut None)
                        }
                        _ => false,
                    };
                    if matched {
                        *key = Some(i);
                        return true;
                    }
                }
                false
            }
            Op::ElemMatchValue(subs) => {
                let Some(Bson::Array(items)) = value else {
                    return false;
                };
                for (i, item) in items.iter().enumerate() {
                    if subs.iter().all(|s| s.matches_single(Some(item))) {
                        *key = Some(i);
                        return true;
                    }
                }
                false
            }
        }
    }
}

fn regex_matches(re: &MongoRegex, value: &Bson) -> bool {
    match value {
        Bson::String(s) | Bson::Symbol(s) => re.is_match(s),
        Bson::RegularExpression(r) => r.pattern == re.pattern && r.options == re.options,
        _ => false,
    }
}

/// Comparison of one candidate with the operand, with MongoDB's type bracketing: values of
/// different canonical types never compare, except null against missing/undefined and
/// MinKey/MaxKey bounds; NaN equals only NaN and is neither above nor below anything.
fn compare_single(op: CmpOp, rhs: &Bson, value: Option<&Bson>) -> bool {
    let inclusive = matches!(op, CmpOp::Eq | CmpOp::Lte | CmpOp::Gte);
    let bound = |rhs: &Bson| match rhs {
        Bson::MaxKey => matches!(op, CmpOp::Lt | CmpOp::Lte),
        Bson::MinKey => matches!(op, CmpOp::Gt | CmpOp::Gte),
        _ => false,
    };
    let Some(value) = value else {
        return match rhs {
            Bson::Null => inclusive,
            Bson::MinKey | Bson::MaxKey => bound(rhs),
            _ => false,
        };
    };
    if canonical_rank(value) != canonical_rank(rhs) {
        if matches!(
            (value, rhs),
            (Bson::Undefined, Bson::Null) | (Bson::Null, Bson::Undefined)
        ) {
            return inclusive;
        }
        return bound(rhs);
    }
    if is_nan(value) || is_nan(rhs) {
        return inclusive && is_nan(value) && is_nan(rhs);
    }
    let ord = compare_values(value, rhs);
    match op {
        CmpOp::Eq => ord == Ordering::Equal,
        CmpOp::Lt => ord == Ordering::Less,
        CmpOp::Lte => ord != Ordering::Greater,
        CmpOp::Gt => ord == Ordering::Greater,
        CmpOp::Gte => ord != Ordering::Less,
    }
}

fn mod_matches(value: &Bson, divisor: i64, remainder: i64) -> bool {
    let dividend = match value {
        Bson::Int32(v) => i64::from(*v),
        Bson::Int64(v) => *v,
        Bson::Double(_) | Bson::Decimal128(_) => {
            let d = as_f64(value);
            if !d.is_finite() {
                return false;
            }
            let t = d.trunc();
            if !(-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&t) {
                return false;
            }
            t as i64
        }
        _ => return false,
    };
    dividend.checked_rem(divisor).unwrap_or(0) == remainder
}

fn bits_match(value: &Bson, test: BitTest, mask: &BitMask) -> bool {
    let BitMask::Positions(positions) = mask;
    let bit_at: Box<dyn Fn(u32) -> bool> = match value {
        Bson::Binary(bin) => {
            let bytes = bin.bytes.clone();
            Box::new(move |p| {
                bytes
                    .get((p / 8) as usize)
                    .is_some_and(|b| b & (1 << (p % 8)) != 0)
            })
        }
        v if is_number(v) => {
            let Some(n) = exact_i64(v) else { return false };
            Box::new(move |p| if p >= 64 { n < 0 } else { (n >> p) & 1 == 1 })
        }
        _ => return false,
    };
    match test {
        BitTest::AllSet => positions.iter().all(|&p| bit_at(p)),
        BitTest::AnySet => positions.iter().any(|&p| bit_at(p)),
        BitTest::AllClear => positions.iter().all(|&p| !bit_at(p)),
        BitTest::AnyClear => positions.iter().any(|&p| !bit_at(p)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{Binary, Regex as BsonRegex, doc, spec::BinarySubtype};

    fn m(filter: Document, doc: Document) -> bool {
        Filter::parse(&filter)
            .unwrap_or_else(|e| panic!("{filter}: {e}"))
            .matches(&doc)
    }

    fn err(filter: Document) -> MongoError {
        Filter::parse(&filter).expect_err(&format!("{filter} should not parse"))
    }

    #[test]
    fn equality_on_scalars_documents_and_arrays() {
        assert!(m(doc! {"a": 1}, doc! {"a": 1.0}));
        assert!(m(doc! {"a": 1}, doc! {"a": [0, 1]}));
        assert!(m(doc! {"a": [0, 1]}, doc! {"a": [0, 1]}));
        assert!(m(doc! {"a": [0, 1]}, doc! {"a": [[0, 1], 2]}));
        assert!(!m(doc! {"a": [0, 1]}, doc! {"a": [1, 0]}));
        assert!(!m(doc! {"a": 0}, doc! {"a": [[0, 1]]}));
        assert!(m(
            doc! {"a": {"b": 1, "c": 2}},
            doc! {"a": {"b": 1, "c": 2}}
        ));
        assert!(!m(
            doc! {"a": {"b": 1, "c": 2}},
            doc! {"a": {"c": 2, "b": 1}}
        ));
        assert!(!m(doc! {"a": {"b": 1}}, doc! {"a": {"b": 1, "c": 2}}));
        assert!(m(doc! {"a": "x"}, doc! {"a": "x"}));
        assert!(!m(doc! {"a": "1"}, doc! {"a": 1}));
    }

    #[test]
    fn dotted_paths_through_arrays() {
        assert!(m(doc! {"a.b": 1}, doc! {"a": [{"b": 1}, {"b": 2}]}));
        assert!(m(doc! {"a.b": 2}, doc! {"a": [{"b": 1}, {"b": 2}]}));
        assert!(!m(doc! {"a.b": 3}, doc! {"a": [{"b": 1}, {"b": 2}]}));
        assert!(m(doc! {"a.b": 2}, doc! {"a": [{"b": [1, 2]}]}));
        assert!(m(doc! {"a.b.c": 1}, doc! {"a": {"b": [{"c": 1}]}}));
        assert!(m(doc! {"a.0": 5}, doc! {"a": [5, 6]}));
        assert!(!m(doc! {"a.1": 5}, doc! {"a": [5, 6]}));
        assert!(m(doc! {"a.0.b": 1}, doc! {"a": [{"b": 1}]}));
        // numeric components also match field names "0"
        assert!(m(doc! {"a.0": 7}, doc! {"a": {"0": 7}}));
        assert!(m(doc! {"a.0.b": 3}, doc! {"a": [{"0": {"b": 3}}]}));
        assert!(m(doc! {"a.0.1": 6}, doc! {"a": [[5, 6]]}));
        assert!(m(doc! {"a.b": 1}, doc! {"a": [[{"b": 0}], {"b": 1}]}));
        assert!(!m(doc! {"a.b": 0}, doc! {"a": [[{"b": 0}]]}));
    }

    #[test]
    fn null_matches_missing_and_null_but_not_paths_into_scalar_arrays() {
        assert!(m(doc! {"a": null}, doc! {}));
        assert!(m(doc! {"a": null}, doc! {"a": null}));
        assert!(m(doc! {"a": null}, doc! {"a": [1, null]}));
        assert!(!m(doc! {"a": null}, doc! {"a": [1]}));
        assert!(!m(doc! {"a": null}, doc! {"a": 0}));
        assert!(m(doc! {"a.b": null}, doc! {"a": 5}));
        assert!(m(doc! {"a.b": null}, doc! {"a": [{"c": 1}]}));
        assert!(!m(doc! {"a.b": null}, doc! {"a": [1, 2]}));
        assert!(!m(doc! {"a.b": null}, doc! {"a": []}));
        assert!(m(doc! {"a": {"$exists": false}}, doc! {"b": 1}));
        assert!(m(doc! {"a": {"$gte": null}}, doc! {}));
        assert!(!m(doc! {"a": {"$gt": null}}, doc! {}));
        assert!(m(doc! {"a": null}, doc! {"a": Bson::Undefined}));
    }

    #[test]
    fn comparisons_bracket_by_type() {
        assert!(m(doc! {"a": {"$gt": 1}}, doc! {"a": [0, 5]}));
        assert!(!m(doc! {"a": {"$gt": 5}}, doc! {"a": [0, 5]}));
        assert!(m(doc! {"a": {"$gt": 1, "$lt": 3}}, doc! {"a": [0, 5]}));
        assert!(!m(
            doc! {"a": {"$elemMatch": {"$gt": 1, "$lt": 3}}},
            doc! {"a": [0, 5]}
        ));
        assert!(m(
            doc! {"a": {"$elemMatch": {"$gt": 1, "$lt": 3}}},
            doc! {"a": [0, 2]}
        ));
        assert!(!m(doc! {"a": {"$gt": 1}}, doc! {"a": "x"}));
        assert!(!m(doc! {"a": {"$lt": "a"}}, doc! {"a": 1}));
        assert!(m(doc! {"a": {"$lt": "b"}}, doc! {"a": "a"}));
        assert!(m(doc! {"a": {"$gt": Bson::MinKey}}, doc! {"a": "x"}));
        assert!(m(doc! {"a": {"$gt": Bson::MinKey}}, doc! {}));
        assert!(m(doc! {"a": {"$lt": Bson::MaxKey}}, doc! {"a": {"b": 1}}));
        assert!(!m(doc! {"a": {"$lt": Bson::MinKey}}, doc! {"a": 1}));
        assert!(m(doc! {"a": {"$gte": [1, 2]}}, doc! {"a": [1, 2]}));
        assert!(m(doc! {"a": {"$lte": 2.5}}, doc! {"a": 2i64}));
        assert!(m(doc! {"a": {"$gte": {"b": 1}}}, doc! {"a": {"b": 2}}));
    }

    #[test]
    fn nan_only_equals_nan() {
        assert!(m(doc! {"a": f64::NAN}, doc! {"a": f64::NAN}));
        assert!(!m(doc! {"a": {"$lt": 0}}, doc! {"a": f64::NAN}));
        assert!(!m(doc! {"a": {"$gt": f64::NAN}}, doc! {"a": 1}));
        assert!(m(doc! {"a": {"$gte": f64::NAN}}, doc! {"a": f64::NAN}));
        assert!(m(doc! {"a": {"$in": [f64::NAN]}}, doc! {"a": f64::NAN}));
    }

    #[test]
    fn ne_and_nin_against_arrays_and_missing() {
        assert!(!m(doc! {"a": {"$ne": 1}}, doc! {"a": [1, 2]}));
        assert!(m(doc! {"a": {"$ne": 3}}, doc! {"a": [1, 2]}));
        assert!(m(doc! {"a": {"$ne": 1}}, doc! {}));
        assert!(!m(doc! {"a": {"$ne": null}}, doc! {}));
        assert!(m(doc! {"a": {"$ne": null}}, doc! {"a": 1}));
        assert!(!m(doc! {"a": {"$nin": [null]}}, doc! {}));
        assert!(!m(doc! {"a": {"$nin": [null, 5]}}, doc! {"a": [1, null]}));
        assert!(m(doc! {"a": {"$nin": [null, 5]}}, doc! {"a": [1, 2]}));
        assert!(m(doc! {"a": {"$nin": []}}, doc! {}));
        assert!(m(doc! {"a.b": {"$ne": 1}}, doc! {"a": [1, 2]}));
    }

    #[test]
    fn in_with_values_null_and_regexes() {
        assert!(m(doc! {"a": {"$in": [1, 2]}}, doc! {"a": 2.0}));
        assert!(m(doc! {"a": {"$in": [null]}}, doc! {}));
        assert!(m(doc! {"a": {"$in": [[1, 2]]}}, doc! {"a": [1, 2]}));
        assert!(m(
            doc! {"a": {"$in": [BsonRegex { pattern: "^ab".into(), options: "".into() }]}},
            doc! {"a": ["x", "abc"]}
        ));
        assert!(!m(doc! {"a": {"$in": []}}, doc! {"a": 1}));
        assert_eq!(err(doc! {"a": {"$in": 1}}).message(), "$in needs an array");
        assert_eq!(
            err(doc! {"a": {"$nin": {}}}).message(),
            "$nin needs an array"
        );
        assert_eq!(
            err(doc! {"a": {"$in": [{"$gt": 1}]}}).message(),
            "cannot nest $ under $in"
        );
    }

    #[test]
    fn logical_operators() {
        assert!(m(doc! {"$or": [{"a": 1}, {"b": 2}]}, doc! {"b": 2}));
        assert!(!m(doc! {"$and": [{"a": 1}, {"b": 2}]}, doc! {"b": 2}));
        assert!(m(doc! {"$nor": [{"a": 1}, {"b": 3}]}, doc! {"b": 2}));
        assert!(m(doc! {"a": {"$not": {"$gt": 5}}}, doc! {"a": 3}));
        assert!(m(doc! {"a": {"$not": {"$gt": 5}}}, doc! {}));
        assert!(!m(
            doc! {"a": {"$not": {"$gt": 1, "$lt": 5}}},
            doc! {"a": [0, 5]}
        ));
        assert!(m(
            doc! {"a": {"$not": BsonRegex { pattern: "^x".into(), options: "".into() }}},
            doc! {"a": "y"}
        ));
        assert!(m(doc! {"$alwaysTrue": 1}, doc! {}));
        assert!(!m(doc! {"$alwaysFalse": 1}, doc! {}));
        assert!(m(doc! {"$comment": "hello", "a": 1}, doc! {"a": 1}));
        assert_eq!(
            err(doc! {"$and": []}).message(),
            "$and/$or/$nor must be a nonempty array"
        );
        assert_eq!(err(doc! {"$or": {}}).message(), "$or must be an array");
        assert_eq!(
            err(doc! {"$nor": [1]}).message(),
            "$or/$and/$nor entries need to be full objects"
        );
        assert_eq!(
            err(doc! {"a": {"$not": 1}}).message(),
            "$not needs a regex or a document"
        );
        assert_eq!(
            err(doc! {"a": {"$not": {}}}).message(),
            "$not cannot be empty"
        );
        assert_eq!(
            err(doc! {"$alwaysTrue": 2}).message(),
            "$alwaysTrue must be an integer value of 1"
        );
    }

    #[test]
    fn exists_type_size() {
        assert!(m(doc! {"a": {"$exists": true}}, doc! {"a": null}));
        assert!(m(doc! {"a": {"$exists": true}}, doc! {"a": []}));
        assert!(!m(doc! {"a": {"$exists": 0}}, doc! {"a": 1}));
        assert!(m(doc! {"a.b": {"$exists": false}}, doc! {"a": [1]}));
        assert!(m(doc! {"a.b": {"$exists": true}}, doc! {"a": [{"b": 1}]}));
        assert!(m(doc! {"a": {"$type": "string"}}, doc! {"a": ["x", 1]}));
        assert!(m(doc! {"a": {"$type": "array"}}, doc! {"a": []}));
        assert!(m(doc! {"a": {"$type": "number"}}, doc! {"a": 1i64}));
        assert!(m(doc! {"a": {"$type": [2, "int"]}}, doc! {"a": 5}));
        assert!(m(doc! {"a": {"$type": 10}}, doc! {"a": null}));
        assert!(!m(doc! {"a": {"$type": "null"}}, doc! {}));
        assert!(m(doc! {"a": {"$type": -1}}, doc! {"a": Bson::MinKey}));
        assert!(m(doc! {"a": {"$size": 0}}, doc! {"a": []}));
        assert!(!m(doc! {"a": {"$size": 0}}, doc! {}));
        assert!(m(doc! {"a": {"$size": 1}}, doc! {"a": [[1, 2]]}));
        assert!(!m(doc! {"a": {"$size": 2}}, doc! {"a": [[1, 2]]}));
        assert!(m(
            doc! {"a.b": {"$size": 2}},
            doc! {"a": [{"b": [1]}, {"b": [1, 2]}]}
        ));
        assert!(m(doc! {"a": {"$size": 2.0}}, doc! {"a": [1, 2]}));
        assert_eq!(
            err(doc! {"a": {"$type": "String"}}).message(),
            "Unknown type name alias: String"
        );
        assert_eq!(
            err(doc! {"a": {"$type": 100}}).message(),
            "Invalid numerical type code: 100"
        );
        assert_eq!(
            err(doc! {"a": {"$type": 1.5}}).message(),
            "Invalid numerical type code: 1.5"
        );
        assert_eq!(
            err(doc! {"a": {"$type": []}}).message(),
            "a must match at least one type"
        );
        assert_eq!(
            err(doc! {"a": {"$type": {}}}).code(),
            ErrorCode::TypeMismatch
        );
        assert_eq!(
            err(doc! {"a": {"$size": -1}}).message(),
            "Failed to parse $size. Expected a positive number in: $size: -1"
        );
        assert_eq!(
            err(doc! {"a": {"$size": 1.5}}).message(),
            "Failed to parse $size. Expected an integer: $size: 1.5"
        );
        assert_eq!(
            err(doc! {"a": {"$size": "x"}}).message(),
            "Failed to parse $size. Expected a number in: $size: \"x\""
        );
        assert_eq!(err(doc! {"a": {"$size": "x"}}).code(), ErrorCode::BadValue);
    }

    #[test]
    fn elem_match_forms() {
        let d = doc! {"a": [{"b": 1, "c": 2}, {"b": 2, "c": 1}]};
        assert!(m(doc! {"a": {"$elemMatch": {"b": 1, "c": 2}}}, d.clone()));
        assert!(!m(doc! {"a": {"$elemMatch": {"b": 1, "c": 1}}}, d.clone()));
        assert!(m(doc! {"a.b": 1, "a.c": 1}, d.clone()));
        assert!(m(
            doc! {"a": {"$elemMatch": {"$gte": 2, "$lt": 3}}},
            doc! {"a": [1, 2]}
        ));
        assert!(!m(doc! {"a": {"$elemMatch": {"$gt": 1}}}, doc! {"a": 5}));
        assert!(m(doc! {"a": {"$elemMatch": {}}}, doc! {"a": [1, {}]}));
        assert!(!m(doc! {"a": {"$elemMatch": {}}}, doc! {"a": [1, 2]}));
        assert!(m(
            doc! {"a": {"$elemMatch": {"$or": [{"b": 5}, {"c": 1}]}}},
            d.clone()
        ));
        assert!(m(
            doc! {"a": {"$elemMatch": {"0": 1}}},
            doc! {"a": [[1, 2]]}
        ));
        assert!(m(
            doc! {"a": {"$elemMatch": {"$elemMatch": {"$eq": 2}}}},
            doc! {"a": [[1, 2]]}
        ));
        assert_eq!(
            err(doc! {"a": {"$elemMatch": 1}}).message(),
            "$elemMatch needs an Object"
        );
        assert_eq!(
            err(doc! {"a": {"$elemMatch": {"$where": "1"}}}).message(),
            "$where can only be applied to the top-level document"
        );
        assert_eq!(
            err(doc! {"a": {"$elemMatch": {"$expr": 1}}}).message(),
            "$expr can only be applied to the top-level document"
        );
    }

    #[test]
    fn all_operator() {
        assert!(m(doc! {"a": {"$all": [1, 2]}}, doc! {"a": [2, 3, 1]}));
        assert!(!m(doc! {"a": {"$all": [1, 4]}}, doc! {"a": [2, 3, 1]}));
        assert!(m(doc! {"a": {"$all": [1]}}, doc! {"a": 1}));
        assert!(!m(doc! {"a": {"$all": []}}, doc! {"a": [1]}));
        assert!(m(doc! {"a": {"$all": [[1, 2]]}}, doc! {"a": [[1, 2], 3]}));
        assert!(m(
            doc! {"a": {"$all": [{"$elemMatch": {"b": 1}}, {"$elemMatch": {"b": 2}}]}},
            doc! {"a": [{"b": 1}, {"b": 2}]}
        ));
        assert_eq!(
            err(doc! {"a": {"$all": 1}}).message(),
            "$all needs an array"
        );
        assert_eq!(
            err(doc! {"a": {"$all": [{"$elemMatch": {}}, 1]}}).message(),
            "$all/$elemMatch has to be consistent"
        );
        assert_eq!(
            err(doc! {"a": {"$all": [1, {"$gt": 1}]}}).message(),
            "no $ expressions in $all"
        );
    }

    #[test]
    fn regexes() {
        let re = |p: &str, o: &str| {
            Bson::RegularExpression(BsonRegex {
                pattern: p.into(),
                options: o.into(),
            })
        };
        assert!(m(doc! {"a": re("^ab", "")}, doc! {"a": "abc"}));
        assert!(m(doc! {"a": re("B", "i")}, doc! {"a": "abc"}));
        assert!(m(
            doc! {"a": {"$regex": "b", "$options": "i"}},
            doc! {"a": ["x", "ABC"]}
        ));
        assert!(m(
            doc! {"a": {"$options": "i", "$regex": "B"}},
            doc! {"a": "abc"}
        ));
        assert!(m(doc! {"a": {"$regex": re("^x", "")}}, doc! {"a": "xy"}));
        assert!(!m(doc! {"a": re("1", "")}, doc! {"a": 1}));
        assert!(m(doc! {"a": {"$eq": re("x", "")}}, doc! {"a": re("x", "")}));
        assert!(!m(doc! {"a": {"$eq": re("x", "")}}, doc! {"a": "x"}));
        assert!(m(doc! {"a": re("x", "")}, doc! {"a": re("x", "")}));
        assert_eq!(
            err(doc! {"a": {"$options": "i"}}).message(),
            "$options needs a $regex"
        );
        assert_eq!(
            err(doc! {"a": {"$regex": 1}}).message(),
            "$regex has to be a string"
        );
        assert_eq!(
            err(doc! {"a": {"$regex": re("x", "i"), "$options": "m"}})
                .code()
                .code(),
            51075
        );
        assert_eq!(
            err(doc! {"a": {"$options": "m", "$regex": re("x", "i")}})
                .code()
                .code(),
            51074
        );
        assert_eq!(
            err(doc! {"a": {"$gt": re("x", "")}}).message(),
            "Can't have RegEx as arg to predicate over field 'a'."
        );
        assert_eq!(
            err(doc! {"a": {"$ne": re("x", "")}}).message(),
            "Can't have regex as arg to $ne."
        );
        assert_eq!(
            err(doc! {"a": re("(a)\\1", "")}).code(),
            ErrorCode::BadValue
        );
    }

    #[test]
    fn mod_and_bits() {
        assert!(m(doc! {"a": {"$mod": [4, 1]}}, doc! {"a": 5}));
        assert!(m(doc! {"a": {"$mod": [4, -1]}}, doc! {"a": -5}));
        assert!(m(doc! {"a": {"$mod": [4, 1]}}, doc! {"a": 5.9}));
        assert!(!m(doc! {"a": {"$mod": [4, 1]}}, doc! {"a": "5"}));
        assert!(!m(doc! {"a": {"$mod": [4, 0]}}, doc! {"a": f64::NAN}));
        assert!(m(doc! {"a": {"$mod": [-1, 0]}}, doc! {"a": i64::MIN}));
        assert_eq!(
            err(doc! {"a": {"$mod": 1}}).message(),
            "malformed mod, needs to be an array"
        );
        assert_eq!(
            err(doc! {"a": {"$mod": [1]}}).message(),
            "malformed mod, not enough elements"
        );
        assert_eq!(
            err(doc! {"a": {"$mod": [1, 2, 3]}}).message(),
            "malformed mod, too many elements"
        );
        assert_eq!(
            err(doc! {"a": {"$mod": ["a", 1]}}).message(),
            "malformed mod, divisor not a number"
        );
        assert_eq!(
            err(doc! {"a": {"$mod": [1, "a"]}}).message(),
            "malformed mod, remainder not a number"
        );
        assert_eq!(
            err(doc! {"a": {"$mod": [0, 1]}}).message(),
            "divisor cannot be 0"
        );
        assert_eq!(
            err(doc! {"a": {"$mod": [f64::NAN, 1]}}).message(),
            "malformed mod, divisor value is invalid :: caused by :: Unable to coerce NaN/Inf to integral type"
        );

        assert!(m(doc! {"a": {"$bitsAllSet": [1, 5]}}, doc! {"a": 34}));
        assert!(m(doc! {"a": {"$bitsAllSet": 34}}, doc! {"a": 35}));
        assert!(!m(doc! {"a": {"$bitsAllSet": 34}}, doc! {"a": 33}));
        assert!(m(doc! {"a": {"$bitsAnySet": [0, 7]}}, doc! {"a": 1}));
        assert!(m(doc! {"a": {"$bitsAllClear": [1]}}, doc! {"a": 5}));
        assert!(m(doc! {"a": {"$bitsAnyClear": [0, 1]}}, doc! {"a": 1}));
        assert!(m(doc! {"a": {"$bitsAllSet": [100]}}, doc! {"a": -1}));
        assert!(!m(doc! {"a": {"$bitsAllSet": [0]}}, doc! {"a": 1.5}));
        let bin = Bson::Binary(Binary {
            subtype: BinarySubtype::Generic,
            bytes: vec![0b0000_0110],
        });
        assert!(m(
            doc! {"a": {"$bitsAllSet": [1, 2]}},
            doc! {"a": bin.clone()}
        ));
        assert!(m(doc! {"a": {"$bitsAllSet": bin}}, doc! {"a": 6}));
        assert_eq!(
            err(doc! {"a": {"$bitsAllSet": -1}}).message(),
            "Expected a positive number in: $bitsAllSet: -1"
        );
        assert_eq!(
            err(doc! {"a": {"$bitsAllSet": 1.2}}).message(),
            "Expected an integer: $bitsAllSet: 1.2"
        );
        assert_eq!(
            err(doc! {"a": {"$bitsAllSet": "123"}}).message(),
            "a takes an Array, a number, or a BinData but received: $bitsAllSet: \"123\""
        );
        assert_eq!(
            err(doc! {"a": {"$bitsAnySet": [-1]}}).message(),
            "Failed to parse bit position. Expected a positive number in: 0: -1"
        );
    }

    #[test]
    fn unsupported_and_unknown_operators() {
        assert_eq!(
            err(doc! {"$foo": 1}).message(),
            "unknown top level operator: $foo. If you have a field name that starts with a '$' symbol, consider using $getField or $setField."
        );
        assert_eq!(
            err(doc! {"a": {"$foo": 1}}).message(),
            "unknown operator: $foo"
        );
        assert_eq!(
            err(doc! {"a": {"$gt": 1, "b": 1}}).message(),
            "unknown operator: b"
        );
        assert_eq!(err(doc! {"$where": "true"}).code(), ErrorCode::BadValue);
        let text = err(doc! {"$text": {"$search": "x"}});
        assert_eq!(
            (text.code(), text.message()),
            (
                ErrorCode::IndexNotFound,
                "text index required for $text query"
            )
        );
        assert_eq!(
            err(doc! {"$expr": {"$eq": [1, 1]}}).code(),
            ErrorCode::NotImplemented
        );
        assert_eq!(err(doc! {"$jsonSchema": 1}).code(), ErrorCode::TypeMismatch);
        assert_eq!(
            err(doc! {"a": {"$near": [0, 0]}}).code(),
            ErrorCode::NotImplemented
        );
        assert_eq!(
            err(doc! {"a": {"$eq": Bson::Undefined}}).message(),
            "cannot compare to undefined"
        );
        assert_eq!(
            err(doc! {"a": {"$where": "x"}}).message(),
            "$where cannot be applied to a field"
        );
    }

    #[test]
    fn literal_documents_and_dbrefs_are_equalities() {
        assert!(m(
            doc! {"a": {"b": {"$gt": 1}}},
            doc! {"a": {"b": {"$gt": 1}}}
        ));
        assert!(m(
            doc! {"a": {"$ref": "c", "$id": 1}},
            doc! {"a": {"$ref": "c", "$id": 1}}
        ));
        assert!(m(doc! {"a": {}}, doc! {"a": {}}));
        assert!(m(doc! {"a.$id": 1}, doc! {"a": {"$ref": "c", "$id": 1}}));
    }

    #[test]
    fn equality_helper_and_positions() {
        let f = Filter::parse(&doc! {"_id": 5, "x": {"$gt": 1}}).unwrap();
        assert_eq!(f.equality("_id"), Some(&Bson::Int32(5)));
        assert_eq!(f.equality("x"), None);
        let f = Filter::parse(&doc! {"$and": [{"_id": {"$eq": "k"}}, {"y": 1}]}).unwrap();
        assert_eq!(f.equality("_id"), Some(&Bson::String("k".into())));
        assert_eq!(
            Filter::parse(&doc! {"_id": [1]}).unwrap().equality("_id"),
            None
        );
        assert_eq!(
            Filter::parse(&doc! {"_id": null}).unwrap().equality("_id"),
            None
        );
        assert!(Filter::parse(&doc! {}).unwrap().is_empty());
        assert!(Filter::parse(&doc! {"$comment": "x"}).unwrap().is_empty());
        assert!(!Filter::parse(&doc! {"a": 1}).unwrap().is_empty());

        let f = Filter::parse(&doc! {"a.b": 2}).unwrap();
        assert_eq!(
            f.matches_with_position(&doc! {"a": [{"b": 1}, {"b": 2}]}),
            (true, Some(1))
        );
        let f = Filter::parse(&doc! {"a": {"$gt": 3}}).unwrap();
        assert_eq!(
            f.matches_with_position(&doc! {"a": [1, 5, 7]}),
            (true, Some(1))
        );
        let f = Filter::parse(&doc! {"a": {"$elemMatch": {"x": 1}}}).unwrap();
        assert_eq!(
            f.matches_with_position(&doc! {"a": [{"x": 0}, {"x": 1}]}),
            (true, Some(1))
        );
        let f = Filter::parse(&doc! {"a": [1, 2]}).unwrap();
        assert_eq!(f.matches_with_position(&doc! {"a": [1, 2]}), (true, None));
    }

    #[test]
    fn null_and_arrays_of_null() {
        assert!(m(doc! {"a": null}, doc! {"a": [null]}));
        assert!(m(doc! {"a": {"$in": [null]}}, doc! {"a": [null]}));
        assert!(!m(doc! {"a": {"$ne": null}}, doc! {"a": [null, 1]}));
        assert!(m(doc! {"a.b": null}, doc! {"a": [{"b": null}, {"b": 1}]}));
        assert!(!m(doc! {"a.b": {"$exists": true}}, doc! {"a": [1, 2]}));
        assert!(m(doc! {"a": {"$all": [null]}}, doc! {}));
        assert!(m(doc! {"a": {"$type": "null"}}, doc! {"a": [null]}));
        assert!(!m(doc! {"a": {"$size": 1}}, doc! {"a": null}));
    }

    #[test]
    fn implicit_array_matching_versus_elem_match() {
        let d = doc! {"a": [{"x": 1, "y": 2}, {"x": 2, "y": 1}]};
        assert!(m(doc! {"a.x": 1, "a.y": 1}, d.clone()));
        assert!(!m(doc! {"a": {"$elemMatch": {"x": 1, "y": 1}}}, d.clone()));
        assert!(m(doc! {"a": {"x": 1, "y": 2}}, d.clone()));
        assert!(!m(doc! {"a": {"y": 2, "x": 1}}, d.clone()));
        assert!(m(doc! {"a": {"$in": [{"x": 2, "y": 1}]}}, d.clone()));
        assert!(m(doc! {"a.x": {"$all": [1, 2]}}, d));
        assert!(m(doc! {"a": {"$gt": 5, "$lt": 1}}, doc! {"a": [0, 6]}));
        assert!(m(doc! {"a": {"$not": {"$size": 2}}}, doc! {"a": [1]}));
        assert!(m(
            doc! {"a": {"$nin": [BsonRegex { pattern: "^x".into(), options: "".into() }]}},
            doc! {"a": ["y"]}
        ));
        assert!(!m(
            doc! {"a": {"$nin": [BsonRegex { pattern: "^x".into(), options: "".into() }]}},
            doc! {"a": ["y", "xz"]}
        ));
    }

    #[test]
    fn numbers_compare_across_types() {
        assert!(m(doc! {"a": 1i64}, doc! {"a": 1.0}));
        assert!(m(doc! {"a": {"$lt": 2i64}}, doc! {"a": 1.5}));
        assert!(m(doc! {"a": {"$gt": i64::MAX - 1}}, doc! {"a": i64::MAX}));
        assert!(m(
            doc! {"a": {"$gt": i64::MAX}},
            doc! {"a": 9.223372036854776e18}
        ));
        assert!(m(doc! {"a": {"$lte": true}}, doc! {"a": false}));
        assert!(!m(doc! {"a": {"$lte": true}}, doc! {"a": 0}));
    }

    #[test]
    fn deep_nesting_is_refused_not_overflowed() {
        let mut f = doc! {"a": 1};
        for _ in 0..200 {
            f = doc! {"$and": [f]};
        }
        assert_eq!(err(f).code(), ErrorCode::BadValue);
    }
}
