//! Projecting a document through the path tree: inclusion (with computed fields set in
//! projection order) and exclusion, recursing into sub-documents and arrays.

use super::expression::evaluate;
use super::operators::slice;
use super::{PathNode, ProjNode};
use bson::{Bson, Document};

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

pub(super) fn include_doc(doc: &Document, node: &PathNode, root: &Document) -> Document {
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
