//! Parsing a projection specification into the path tree: inclusions, exclusions, sub-objects
//! and dotted paths, with MongoDB's inclusion/exclusion and `_id` rules and collision errors.

use super::expression::parse_operand;
use super::metadata::{accepts, meta_kind};
use super::operators::parse_find_expression;
use super::{PathNode, ProjNode, Projection};
use crate::document::collation::Collation;
use crate::error::{ErrorCode, MongoError, Result};
use crate::expression::{LetVariables, Scope};
use crate::query::filter::Filter;
use crate::query::values::{check_field_path, render_element, truthy};
use bson::{Bson, Document};
use std::sync::Arc;

pub(super) struct ParseContext<'a> {
    pub(super) query: Option<&'a Filter>,
    /// The user variables computed fields may read.
    pub(super) scope: &'a Scope,
    /// The command's collation, which `$elemMatch` compares strings by.
    pub(super) collation: Option<Arc<Collation>>,
    pub(super) inclusion: Option<bool>,
    pub(super) has_positional: bool,
    pub(super) has_elem_match: bool,
    pub(super) has_find_slice: bool,
    pub(super) id_included_entirely: bool,
    pub(super) id_excluded_entirely: bool,
    pub(super) positional: Option<Vec<String>>,
}

impl Projection {
    pub(super) fn parse_inner(
        spec: &Document,
        query: Option<&Filter>,
        vars: &Arc<LetVariables>,
        find_metadata: bool,
    ) -> Result<Projection> {
        let mut ctx = ParseContext {
            query,
            scope: vars.scope(),
            collation: vars.collation_arc(),
            inclusion: None,
            has_positional: false,
            has_elem_match: false,
            has_find_slice: false,
            id_included_entirely: false,
            id_excluded_entirely: false,
            positional: None,
        };
        let mut root = PathNode::default();
        let mut id_specified = false;
        let mut meta_fields = Vec::new();
        for (name, value) in spec {
            // Metadata, added after the projected fields; it makes the projection neither an
            // inclusion nor an exclusion.
            if let Some(kind) = meta_kind(value).filter(|_| !name.contains('.')) {
                if accepts(kind, query, find_metadata)? {
                    check_field_path(name)?;
                    meta_fields.push((name.clone(), kind));
                    continue;
                }
            }
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
            root.children.insert("_id".into(), ProjNode::Bool(true));
        }
        if !inclusion && id_specified && ctx.id_included_entirely {
            root.children.shift_remove("_id");
        }
        root.index_computed();
        let elem_matches = root
            .children
            .values()
            .enumerate()
            .filter(|(_, node)| matches!(node, ProjNode::ElemMatch(_)))
            .map(|(i, _)| i)
            .collect();
        Ok(Projection {
            root,
            inclusion,
            positional: ctx.positional,
            meta_fields,
            elem_matches,
            vars: Arc::clone(vars),
        })
    }
}

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
    // A projection path is a FieldPath: at most `maxBSONDepth` components, dotted or nested.
    let components = parent_path.map_or(0, |p| p.split('.').count()) + name.split('.').count();
    if components > crate::depth::max_bson_depth() {
        return Err(MongoError::new(
            ErrorCode::Overflow,
            "FieldPath is too long",
        ));
    }
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
            let expr = parse_operand(value, ctx.scope)?;
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
        current = match child_or_path(current, part) {
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
pub(super) fn add_node(parent: &mut PathNode, path: &str, node: ProjNode) -> Result<()> {
    let parts: Vec<&str> = path.split('.').collect();
    let mut current = parent;
    for (i, part) in parts.iter().enumerate() {
        if i + 1 == parts.len() {
            if current.children.contains_key(*part) {
                return Err(MongoError::location(
                    31250,
                    format!("Path collision at {path}"),
                ));
            }
            current.children.insert(part.to_string(), node);
            return Ok(());
        }
        current = match child_or_path(current, part) {
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

/// The child `name` of `node`, an empty sub-path added if there is none.
fn child_or_path<'n>(node: &'n mut PathNode, name: &str) -> &'n mut ProjNode {
    let index = match node.children.get_index_of(name) {
        Some(index) => index,
        None => {
            let (index, _) = node
                .children
                .insert_full(name.to_string(), ProjNode::Path(PathNode::default()));
            index
        }
    };
    &mut node.children[index]
}
