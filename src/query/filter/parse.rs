//! Parsing a filter document into the expression tree: its fields, the top-level and logical
//! operators (`$and`, `$or`, `$nor`, `$comment`, `$expr`, ...), literal equalities and regexes,
//! with MongoDB's errors and nesting limit.

use super::expr::ExprPredicate;
use super::{CmpOp, JsonSchema, Leaf, Level, Node, Op};
use crate::document::collation::Collation;
use crate::error::{ErrorCode, MongoError, Result};
use crate::expression::LetVariables;
use crate::expression::mongo_regex::MongoRegex;
use crate::query::values::{as_f64, integer_to_i64, is_number, not_implemented};
use bson::{Bson, Document};
use std::sync::Arc;

/// Nesting beyond this many levels of operators is refused rather than recursed into.
const MAX_DEPTH: usize = 100;

pub(super) struct Parser {
    pub(super) depth: usize,
    /// What `$expr` may read as `$$name`.
    vars: Arc<LetVariables>,
    /// Whether `$expr` and `$jsonSchema` are allowed (MongoDB bans them in some contexts).
    special_features: bool,
}

impl Parser {
    /// The command's collation, which `$in` orders its values by.
    pub(super) fn collation(&self) -> Option<&Collation> {
        self.vars.collation()
    }
}

pub(super) fn leaf(path: &str, op: Op) -> Node {
    Node::Leaf(Leaf {
        path: path.to_string(),
        parts: path.split('.').map(String::from).collect(),
        op,
    })
}

pub(super) fn collapse_and(mut children: Vec<Node>) -> Node {
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
pub(super) fn is_expression_document(value: &Bson, allow_incomplete_dbref: bool) -> bool {
    let Bson::Document(doc) = value else {
        return false;
    };
    let Some(first) = doc.keys().next() else {
        return false;
    };
    first.starts_with('$') && !is_dbref_document(doc, allow_incomplete_dbref)
}

/// Operators that take no path (they apply to whole documents).
pub(super) fn is_pathless_operator(name: &str) -> bool {
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
pub(super) fn is_path_accepting_keyword(name: &str) -> bool {
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

pub(super) fn eq_leaf(path: &str, value: &Bson) -> Result<Node> {
    if matches!(value, Bson::Undefined) {
        return Err(MongoError::bad_value("cannot compare to undefined"));
    }
    Ok(leaf(path, Op::Cmp(CmpOp::Eq, value.clone())))
}

pub(super) fn regex_leaf(path: &str, pattern: &str, options: &str) -> Result<Node> {
    Ok(leaf(path, Op::Regex(MongoRegex::new(pattern, options)?)))
}

impl Parser {
    pub(super) fn new(vars: Arc<LetVariables>, special_features: bool) -> Parser {
        Parser {
            depth: 0,
            vars,
            special_features,
        }
    }

    fn feature_not_allowed(&self, key: &str) -> Result<()> {
        if self.special_features {
            return Ok(());
        }
        Err(MongoError::new(
            ErrorCode::QueryFeatureNotAllowed,
            format!("{key} is not allowed in this context"),
        ))
    }

    pub(super) fn descend(&mut self) -> Result<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(MongoError::bad_value(format!(
                "exceeded depth limit of {MAX_DEPTH} when parsing match expression"
            )));
        }
        Ok(())
    }

    pub(super) fn parse_doc(&mut self, obj: &Document, level: Level) -> Result<Node> {
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
            // MongoDB's match expression parser takes paths as deep as a stored document.
            if key.matches('.').count() + 1 > crate::depth::max_depth_for_user_storage() {
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
                self.feature_not_allowed(key)?;
                let predicate = ExprPredicate::parse(value, &self.vars)?;
                Ok(Some(Node::Expr(Box::new(predicate))))
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
                self.feature_not_allowed(key)?;
                Ok(Some(Node::Text(Box::new(super::text::TextNode::parse(
                    value,
                )?))))
            }
            "jsonSchema" => {
                self.feature_not_allowed(key)?;
                let Bson::Document(schema) = value else {
                    return Err(MongoError::type_mismatch("$jsonSchema must be an object"));
                };
                Ok(Some(Node::Schema(Box::new(JsonSchema::parse(schema)?))))
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
}
