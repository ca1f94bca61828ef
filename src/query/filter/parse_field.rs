//! Parsing the operators that follow a path, `{path: {$op: ..., $op2: ...}}`, into one leaf per
//! operator: comparisons, `$in`/`$nin`, `$exists`, `$size`, `$not`, `$elemMatch` and `$all`.

use super::parse::{
    Parser, collapse_and, eq_leaf, is_expression_document, is_path_accepting_keyword,
    is_pathless_operator, leaf, regex_leaf,
};
use super::predicates::{parse_bits, parse_mod, parse_regex_document, parse_type_set};
use super::{BitTest, CmpOp, Level, Node, Op};
use crate::document::collation::Collation;
use crate::document::order::compare_collated;
use crate::error::{MongoError, Result};
use crate::expression::mongo_regex::MongoRegex;
use crate::query::geo::{GeoPredicate, NearQuery};
use crate::query::values::{integer_to_non_negative_i32, render_doc, truthy};
use bson::{Bson, Document};

impl Parser {
    /// Parses `{path: {$op: ..., $op2: ...}}` into one leaf per operator.
    pub(super) fn parse_sub(
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
                if level == Level::SubDocument {
                    return Err(MongoError::bad_value("geoNear must be top-level expr"));
                }
                let near = NearQuery::parse(first, obj)?;
                out.push(leaf(path, Op::Near(Box::new(near))));
                self.depth -= 1;
                return Ok(());
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
                let node = leaf(path, parse_in(items, self.collation())?);
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
            "$geoWithin" | "$within" | "$geoIntersects" => Ok(Some(leaf(
                path,
                Op::Geo(Box::new(GeoPredicate::parse(key, value)?)),
            ))),
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

fn parse_in(items: &[Bson], collation: Option<&Collation>) -> Result<Op> {
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
    // Sorted in MongoDB's order (duplicates dropped), so that each candidate value is looked
    // up by binary search: an `$in` may list 100,000 values and be tried on every document.
    // Under a collation, by the collation: equal strings are one value.
    values.sort_by(|a, b| compare_collated(a, b, collation));
    values.dedup_by(|a, b| compare_collated(a, b, collation) == std::cmp::Ordering::Equal);
    Ok(Op::In {
        values,
        has_null,
        regexes,
    })
}
