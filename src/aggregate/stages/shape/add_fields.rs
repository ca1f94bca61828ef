//! `$addFields` (and its alias `$set`): the server's validation of the specification, then
//! every field parsed as an expression into the path tree.

use super::{Entry, Mode, Node, Shape};
use crate::aggregate::stages::{Stage, with_context};
use crate::document::display::render_doc;
use crate::error::{MongoError, Result};
use crate::expression::fieldpath::FieldPath;
use crate::expression::value::bson_type_name;
use crate::expression::{Expression, LetVariables, Scope};
use bson::{Bson, Document};
use std::collections::BTreeSet;
use std::ops::Bound;
use std::sync::Arc;

pub fn parse_add_fields(name: &str, spec: &Bson, vars: &Arc<LetVariables>) -> Result<Vec<Stage>> {
    let Bson::Document(spec) = spec else {
        return Err(MongoError::location(
            40272,
            format!(
                "{name} specification stage must be an object, got {}",
                bson_type_name(spec)
            ),
        ));
    };
    let shape = Shape::add_fields(spec, vars.scope())
        .map_err(|e| with_context(e, &format!("Invalid {name}")))?;
    Ok(vec![Stage::Shape(shape)])
}

impl Shape {
    /// An `$addFields` specification: every value is an expression, and sub-objects that are
    /// not expressions set fields inside the existing sub-document.
    pub fn add_fields(spec: &Document, scope: &Scope) -> Result<Shape> {
        SpecValidator {
            raw: spec,
            seen: BTreeSet::new(),
        }
        .validate()?;
        let mut root = Node::default();
        for (name, value) in spec {
            let path = FieldPath::parse(name)?;
            let (parents, last) = path.parts().split_at(path.parts().len().saturating_sub(1));
            let node = child_at(&mut root, parents)?;
            add_computed_field(node, last.first().map_or("", String::as_str), value, scope)?;
        }
        root.index_computed();
        Ok(Shape {
            root,
            mode: Mode::AddFields,
        })
    }
}

/// The node at `parts` below `node`, creating missing levels (`$addFields` paths were checked
/// for conflicts beforehand, so a computed field is never in the way).
fn child_at<'n>(node: &'n mut Node, parts: &[String]) -> Result<&'n mut Node> {
    let Some((first, rest)) = parts.split_first() else {
        return Ok(node);
    };
    match node
        .entries
        .entry(first.clone())
        .or_insert_with(|| Entry::Child(Node::default()))
    {
        Entry::Child(child) => child_at(child, rest),
        _ => Err(MongoError::internal(
            "conflicting $addFields paths passed validation",
        )),
    }
}

/// One `$addFields` field: an operator object or a literal is computed; a non-empty object of
/// fields recurses into the sub-document.
fn add_computed_field(node: &mut Node, name: &str, value: &Bson, scope: &Scope) -> Result<()> {
    match value {
        Bson::Document(sub)
            if sub
                .keys()
                .next()
                .is_some_and(|first| !first.starts_with('$')) =>
        {
            let child = child_at(node, &[name.to_string()])?;
            for (field, inner) in sub {
                add_computed_field(child, field, inner, scope)?;
            }
            Ok(())
        }
        Bson::Document(sub) if !sub.is_empty() => {
            set_computed(node, name, Expression::parse_operator_in(sub, scope)?)
        }
        other => set_computed(node, name, Expression::parse_in(other, scope)?),
    }
}

fn set_computed(node: &mut Node, name: &str, expr: Expression) -> Result<()> {
    // A later field of the same name replaces the earlier one in its place.
    node.entries.insert(name.to_string(), Entry::Computed(expr));
    Ok(())
}

/// The server's check of an `$addFields` specification before it is parsed.
struct SpecValidator<'a> {
    raw: &'a Document,
    seen: BTreeSet<String>,
}

impl SpecValidator<'_> {
    fn validate(mut self) -> Result<()> {
        for (name, value) in self.raw {
            let path = FieldPath::parse(name)?;
            self.element(value, &path.full())?;
        }
        Ok(())
    }

    fn element(&mut self, value: &Bson, path: &str) -> Result<()> {
        match value {
            Bson::Document(sub) => self.nested(sub, path),
            _ => self.claim(path),
        }
    }

    fn nested(&mut self, spec: &Document, prefix: &str) -> Result<()> {
        if spec.is_empty() {
            return self.claim(prefix);
        }
        for (name, value) in spec {
            if name.starts_with('$') {
                if spec.len() != 1 {
                    return Err(MongoError::location(
                        40181,
                        format!(
                            "An expression specification must contain exactly one field, the name of the expression. \
                             Found {} fields in {}, while parsing object {}",
                            spec.len(),
                            render_doc(spec),
                            render_doc(self.raw)
                        ),
                    ));
                }
                self.claim(prefix)?;
                continue;
            }
            if name.contains('.') {
                return Err(MongoError::location(
                    40183,
                    format!(
                        "cannot use dotted field name '{name}' in a sub object: {}",
                        render_doc(self.raw)
                    ),
                ));
            }
            let path = FieldPath::parse(&format!("{prefix}.{name}"))?;
            self.element(value, &path.full())?;
        }
        Ok(())
    }

    /// Records a path, rejecting it if it repeats one or one is a prefix of the other (the
    /// server compares with its neighbours in sorted order).
    fn claim(&mut self, path: &str) -> Result<()> {
        let conflict = if self.seen.contains(path) {
            Some(path.to_string())
        } else {
            let before = self
                .seen
                .range::<str, _>((Bound::Unbounded, Bound::Excluded(path)))
                .next_back()
                .filter(|p| is_path_prefix(p, path));
            let after = self
                .seen
                .range::<str, _>((Bound::Excluded(path), Bound::Unbounded))
                .next()
                .filter(|p| is_path_prefix(path, p));
            before.or(after).cloned()
        };
        if let Some(other) = conflict {
            return Err(MongoError::location(
                40176,
                format!(
                    "specification contains two conflicting paths. Cannot specify both '{path}' and '{other}': {}",
                    render_doc(self.raw)
                ),
            ));
        }
        self.seen.insert(path.to_string());
        Ok(())
    }
}

fn is_path_prefix(prefix: &str, path: &str) -> bool {
    path.len() > prefix.len()
        && path.starts_with(prefix)
        && path.as_bytes().get(prefix.len()) == Some(&b'.')
}
