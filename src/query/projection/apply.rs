//! Projecting a document through the path tree: inclusion (with computed fields set in
//! projection order) and exclusion, recursing into sub-documents and arrays.

use super::expression::evaluate;
use super::operators::slice;
use super::{PathNode, ProjNode};
use crate::error::Result;
use crate::expression::LetVariables;
use bson::{Bson, Document};

impl PathNode {
    fn get(&self, name: &str) -> Option<&ProjNode> {
        self.children.get(name)
    }

    pub(super) fn has_computed(&self) -> bool {
        !self.computed.is_empty()
    }

    /// Records, bottom-up, which children compute something (see [`PathNode::computed`]).
    pub(super) fn index_computed(&mut self) {
        self.computed.clear();
        for (i, child) in self.children.values_mut().enumerate() {
            let computes = match child {
                ProjNode::Expr(_) => true,
                ProjNode::Path(sub) => {
                    sub.index_computed();
                    sub.has_computed()
                }
                _ => false,
            };
            if computes {
                self.computed.push(i);
            }
        }
    }

    /// The children that compute something, in specification order.
    fn computed_children(&self) -> impl Iterator<Item = (&String, &ProjNode)> {
        self.computed
            .iter()
            .filter_map(|&i| self.children.get_index(i))
    }
}

/// Whether a computed field that fails to evaluate fails the projection or is left out.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    Strict,
    Lenient,
}

pub(super) fn include_doc(
    doc: &Document,
    node: &PathNode,
    root: &Document,
    vars: &LetVariables,
    mode: Mode,
) -> Result<Document> {
    let mut out = Document::new();
    for (key, value) in doc {
        match node.get(key) {
            Some(ProjNode::Bool(true) | ProjNode::Positional) => {
                out.insert(key.clone(), value.clone());
            }
            Some(ProjNode::Path(sub)) => match value {
                Bson::Document(d) => {
                    out.insert(key.clone(), include_doc(d, sub, root, vars, mode)?);
                }
                Bson::Array(items) => {
                    out.insert(key.clone(), include_array(items, sub, root, vars, mode)?);
                }
                _ => {}
            },
            Some(ProjNode::Slice { skip, limit }) => {
                out.insert(key.clone(), slice(value, *skip, *limit));
            }
            _ => {}
        }
    }
    apply_expressions(&mut out, node, root, vars, mode)?;
    Ok(out)
}

fn include_array(
    items: &[Bson],
    node: &PathNode,
    root: &Document,
    vars: &LetVariables,
    mode: Mode,
) -> Result<Bson> {
    let mut out = Vec::new();
    for item in items {
        match item {
            Bson::Document(d) => out.push(Bson::Document(include_doc(d, node, root, vars, mode)?)),
            Bson::Array(inner) => out.push(include_array(inner, node, root, vars, mode)?),
            _ => {}
        }
    }
    Ok(Bson::Array(out))
}

/// Sets the computed fields of `node` (in projection order) on an already projected level.
fn apply_expressions(
    out: &mut Document,
    node: &PathNode,
    root: &Document,
    vars: &LetVariables,
    mode: Mode,
) -> Result<()> {
    for (name, child) in node.computed_children() {
        match child {
            ProjNode::Expr(expr) => {
                let value = match evaluate(expr, root, vars) {
                    Ok(value) => value,
                    Err(e) if mode == Mode::Strict => return Err(e),
                    Err(_) => None,
                };
                match value {
                    Some(v) => {
                        out.insert(name.clone(), v);
                    }
                    None => {
                        out.remove(name);
                    }
                }
            }
            ProjNode::Path(sub) => {
                let current = out.remove(name);
                let value = expressions_into_value(current, sub, root, vars, mode)?;
                out.insert(name.clone(), value);
            }
            _ => {}
        }
    }
    Ok(())
}

fn expressions_into_value(
    value: Option<Bson>,
    node: &PathNode,
    root: &Document,
    vars: &LetVariables,
    mode: Mode,
) -> Result<Bson> {
    match value {
        Some(Bson::Document(mut d)) => {
            apply_expressions(&mut d, node, root, vars, mode)?;
            Ok(Bson::Document(d))
        }
        Some(Bson::Array(items)) => Ok(Bson::Array(
            items
                .into_iter()
                .map(|item| expressions_into_value(Some(item), node, root, vars, mode))
                .collect::<Result<_>>()?,
        )),
        _ => {
            let mut d = Document::new();
            apply_expressions(&mut d, node, root, vars, mode)?;
            Ok(Bson::Document(d))
        }
    }
}

pub(super) fn exclude_doc(doc: &Document, node: &PathNode) -> Document {
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
