//! `$project` and `$unset`: a projection specification parsed with the server's rules and
//! errors into the path tree (inclusions, exclusions, computed fields, sub-projections).

use super::{Entry, Mode, Node, Shape};
use crate::aggregate::stages::{Stage, with_context};
use crate::document::display::render as bson_to_string;
use crate::error::{ErrorCode, MongoError, Result};
use crate::expression::fieldpath::FieldPath;
use crate::expression::value::{is_number, truthy};
use crate::expression::{Expression, LetVariables, Scope, is_operator_name};
use bson::{Bson, Document};
use std::sync::Arc;

pub fn parse_project(name: &str, spec: &Bson, vars: &Arc<LetVariables>) -> Result<Vec<Stage>> {
    let Bson::Document(spec) = spec else {
        return Err(MongoError::location(
            15969,
            format!("{name} specification must be an object"),
        ));
    };
    let fields: Vec<(&str, &Bson)> = spec.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let shape = Shape::projection(&fields, vars.scope())
        .map_err(|e| with_context(e, &format!("Invalid {name}")))?;
    Ok(vec![Stage::Shape(shape)])
}

/// `$unset: "a"` or `$unset: ["a", "b.c"]`: an exclusion projection of those paths.
pub fn parse_unset(name: &str, spec: &Bson, vars: &Arc<LetVariables>) -> Result<Vec<Stage>> {
    let paths: Vec<&str> = match spec {
        Bson::String(path) => vec![path.as_str()],
        Bson::Array(items) => {
            if items.is_empty() {
                return Err(MongoError::location(
                    31119,
                    format!(
                        "{name} specification must be a string or an array with at least one field"
                    ),
                ));
            }
            items
                .iter()
                .map(|item| match item {
                    Bson::String(path) => Ok(path.as_str()),
                    _ => Err(MongoError::location(
                        31120,
                        format!("{name} specification must be a string or an array containing only string values"),
                    )),
                })
                .collect::<Result<_>>()?
        }
        _ => {
            return Err(MongoError::location(
                31002,
                format!("{name} specification must be a string or an array"),
            ));
        }
    };
    let exclude = Bson::Int32(0);
    let fields: Vec<(&str, &Bson)> = paths.into_iter().map(|path| (path, &exclude)).collect();
    let shape = Shape::projection(&fields, vars.scope())
        .map_err(|e| with_context(e, &format!("Invalid {name}")))?;
    Ok(vec![Stage::Shape(shape)])
}

impl Shape {
    /// A `$project` specification, as the server's projection parser reads it.
    pub fn projection(fields: &[(&str, &Bson)], scope: &Scope) -> Result<Shape> {
        if fields.is_empty() {
            return Err(MongoError::location(
                51272,
                "projection specification must have at least one field",
            ));
        }
        let mut parser = ProjectionParser {
            scope,
            mode: None,
            id_specified: false,
            id_included: false,
            has_meta: false,
        };
        let mut root = Node::default();
        for (name, value) in fields {
            if *name == "_id" || name.starts_with("_id.") {
                parser.id_specified = true;
            }
            parser.element(name, value, &mut root, true)?;
        }
        // `{_id: 1}` alone is an inclusion and `{_id: 0}` alone an exclusion; with `$meta`
        // fields (and nothing else that decides) an inclusion, as MongoDB's aggregation
        // projections (`{s: {$meta: "textScore"}}` gives `_id` and `s`).
        let mode = parser
            .mode
            .unwrap_or(if parser.id_included || parser.has_meta {
                Mode::Inclusion
            } else {
                Mode::Exclusion
            });
        if !parser.id_specified && mode == Mode::Inclusion {
            root.entries.insert("_id".to_string(), Entry::Include);
        }
        if mode == Mode::Exclusion && parser.id_specified && parser.id_included {
            root.remove("_id");
        }
        root.index_computed();
        Ok(Shape { root, mode })
    }
}

/// Parse state across one `$project` specification.
struct ProjectionParser<'s> {
    /// The variables computed fields may read.
    scope: &'s Scope,
    mode: Option<Mode>,
    id_specified: bool,
    id_included: bool,
    /// A field is `{$meta: ...}` (which does not decide the mode while others may).
    has_meta: bool,
}

impl ProjectionParser<'_> {
    fn element(
        &mut self,
        name: &str,
        value: &Bson,
        parent: &mut Node,
        at_root: bool,
    ) -> Result<()> {
        if name.ends_with(".$") {
            return Err(MongoError::location(
                31324,
                "Cannot use positional projection in aggregation projection",
            ));
        }
        match value {
            Bson::Document(sub) => self.sub_object(name, sub, parent),
            flag if is_number(flag) || matches!(flag, Bson::Boolean(_)) => {
                if truthy(Some(flag)) {
                    self.inclusion(name, parent, at_root)
                } else {
                    self.exclusion(name, parent, at_root)
                }
            }
            literal => self.literal(name, literal, parent),
        }
    }

    /// `_id` at the top level may be included or excluded in either kind of projection.
    fn inclusion(&mut self, name: &str, parent: &mut Node, at_root: bool) -> Result<()> {
        add_node(parent, &FieldPath::parse(name)?, Entry::Include)?;
        if at_root && name == "_id" {
            self.id_included = true;
            return Ok(());
        }
        if self.mode == Some(Mode::Exclusion) {
            return Err(MongoError::location(
                31253,
                format!("Cannot do inclusion on field {name} in exclusion projection"),
            ));
        }
        self.mode = Some(Mode::Inclusion);
        Ok(())
    }

    fn exclusion(&mut self, name: &str, parent: &mut Node, at_root: bool) -> Result<()> {
        add_node(parent, &FieldPath::parse(name)?, Entry::Exclude)?;
        if at_root && name == "_id" {
            return Ok(());
        }
        if self.mode == Some(Mode::Inclusion) {
            return Err(MongoError::location(
                31254,
                format!("Cannot do exclusion on field {name} in inclusion projection"),
            ));
        }
        self.mode = Some(Mode::Exclusion);
        Ok(())
    }

    /// A value that is neither a flag nor an object: `"$path"`, a string, null, an array...
    fn literal(&mut self, name: &str, value: &Bson, parent: &mut Node) -> Result<()> {
        let expr = Expression::parse_in(value, self.scope)?;
        add_node(parent, &FieldPath::parse(name)?, Entry::Computed(expr))?;
        if self.mode == Some(Mode::Exclusion) {
            return Err(MongoError::location(
                31310,
                format!(
                    "Cannot use an expression {name}: {} in an exclusion projection",
                    bson_to_string(value)
                ),
            ));
        }
        self.mode = Some(Mode::Inclusion);
        Ok(())
    }

    /// `{$op: ...}` is a computed field; any other object is a sub-projection.
    fn sub_object(&mut self, name: &str, sub: &Document, parent: &mut Node) -> Result<()> {
        if sub.is_empty() {
            return Err(MongoError::location(
                51270,
                format!("Invalid empty sub-projection: {name}"),
            ));
        }
        let path = FieldPath::parse(name)?;
        if let (1, Some(first)) = (sub.len(), sub.keys().next()) {
            if first == "$elemMatch" {
                return Err(MongoError::new(
                    ErrorCode::InvalidPipelineOperator,
                    "Cannot use $elemMatch in this context",
                ));
            }
            if first == "$meta" {
                // Metadata may be projected whatever the projection's mode, and does not
                // decide it while other fields may (alone it makes an inclusion).
                self.has_meta = true;
                let expr = Expression::parse_operator_in(sub, self.scope)?;
                return add_node(parent, &path, Entry::Computed(expr));
            }
            if is_operator_name(first) {
                if self.mode == Some(Mode::Exclusion) {
                    return Err(MongoError::location(
                        31252,
                        "Cannot use expression other than $meta in exclusion projection",
                    ));
                }
                self.mode.get_or_insert(Mode::Inclusion);
                let expr = Expression::parse_operator_in(sub, self.scope)?;
                return add_node(parent, &path, Entry::Computed(expr));
            }
            // Meant as an expression, unless the name is one a field may have.
            if first.starts_with('$') && FieldPath::parse(first).is_err() {
                return Err(MongoError::location(
                    31325,
                    format!("Unrecognized expression '{first}'"),
                ));
            }
        }
        let node = ensure_child(parent, &path)?;
        for (field, value) in sub {
            self.element(field, value, node, false)?;
        }
        Ok(())
    }
}

/// Adds `entry` at `path`, with the server's errors when the path collides with another.
fn add_node(node: &mut Node, path: &FieldPath, entry: Entry) -> Result<()> {
    add_node_at(node, path, 0, entry)
}

fn add_node_at(node: &mut Node, path: &FieldPath, index: usize, entry: Entry) -> Result<()> {
    let Some(name) = path.parts().get(index) else {
        return Ok(());
    };
    if index + 1 == path.parts().len() {
        if node.get(name).is_some() {
            return Err(MongoError::location(
                31250,
                format!("Path collision at {}", path.full()),
            ));
        }
        node.entries.insert(name.clone(), entry);
        return Ok(());
    }
    match node.get_mut(name) {
        None => {
            let mut child = Node::default();
            add_node_at(&mut child, path, index + 1, entry)?;
            node.entries.insert(name.clone(), Entry::Child(child));
            Ok(())
        }
        Some(Entry::Child(child)) => add_node_at(child, path, index + 1, entry),
        Some(_) => Err(MongoError::location(
            31249,
            format!(
                "Path collision at {} remaining portion {}",
                path.full(),
                path.tail()
            ),
        )),
    }
}

/// The sub-projection node at `path`, created if it does not exist yet.
fn ensure_child<'n>(parent: &'n mut Node, path: &FieldPath) -> Result<&'n mut Node> {
    if find_child(parent, path.parts()).is_none() {
        add_node(parent, path, Entry::Child(Node::default()))?;
    }
    find_child_mut(parent, path.parts())
        .ok_or_else(|| MongoError::internal("projection parser lost the node it just added"))
}

fn find_child<'n>(node: &'n Node, parts: &[String]) -> Option<&'n Node> {
    let (first, rest) = parts.split_first()?;
    match node.get(first)? {
        Entry::Child(child) if rest.is_empty() => Some(child),
        Entry::Child(child) => find_child(child, rest),
        _ => None,
    }
}

fn find_child_mut<'n>(node: &'n mut Node, parts: &[String]) -> Option<&'n mut Node> {
    let (first, rest) = parts.split_first()?;
    let Entry::Child(child) = node.get_mut(first)? else {
        return None;
    };
    if rest.is_empty() {
        Some(child)
    } else {
        find_child_mut(child, rest)
    }
}
