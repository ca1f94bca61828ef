//! Stages that reshape each document: `$project` (inclusion or exclusion, computed fields,
//! dotted paths and sub-objects), `$addFields` with its alias `$set`, and `$unset`. A
//! specification becomes a tree of paths, parsed with the server's rules and errors.

use super::{RunContext, Stage, with_context};
use crate::aggregate::expression::{Expression, Variables, is_operator_name};
use crate::aggregate::fieldpath::FieldPath;
use crate::aggregate::value::{Value, bson_type_name, is_number, truthy};
use crate::document::display::{render as bson_to_string, render_doc};
use crate::error::{ErrorCode, MongoError, Result};
use bson::{Bson, Document};
use std::collections::BTreeSet;
use std::ops::Bound;

pub struct Shape {
    root: Node,
    mode: Mode,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// Only the listed fields (and `_id` unless excluded) plus computed fields.
    Inclusion,
    /// Everything but the listed fields.
    Exclusion,
    /// Everything, plus computed fields (`$addFields`).
    AddFields,
}

/// One level of the path tree, in specification order.
#[derive(Clone, Debug, Default)]
struct Node {
    entries: Vec<(String, Entry)>,
}

#[derive(Clone, Debug)]
enum Entry {
    Include,
    Exclude,
    Computed(Expression),
    Child(Node),
}

impl Node {
    fn get(&self, name: &str) -> Option<&Entry> {
        self.entries.iter().find(|(n, _)| n == name).map(|(_, e)| e)
    }

    fn get_mut(&mut self, name: &str) -> Option<&mut Entry> {
        self.entries
            .iter_mut()
            .find(|(n, _)| n == name)
            .map(|(_, e)| e)
    }

    fn remove(&mut self, name: &str) {
        self.entries.retain(|(n, _)| n != name);
    }

    fn has_computed(&self) -> bool {
        self.entries.iter().any(|(_, entry)| match entry {
            Entry::Computed(_) => true,
            Entry::Child(child) => child.has_computed(),
            Entry::Include | Entry::Exclude => false,
        })
    }
}

pub fn parse_project(name: &str, spec: &Bson) -> Result<Vec<Stage>> {
    let Bson::Document(spec) = spec else {
        return Err(MongoError::location(
            15969,
            format!("{name} specification must be an object"),
        ));
    };
    let fields: Vec<(&str, &Bson)> = spec.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let shape =
        Shape::projection(&fields).map_err(|e| with_context(e, &format!("Invalid {name}")))?;
    Ok(vec![Stage::Shape(shape)])
}

/// `$unset: "a"` or `$unset: ["a", "b.c"]`: an exclusion projection of those paths.
pub fn parse_unset(name: &str, spec: &Bson) -> Result<Vec<Stage>> {
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
    let shape =
        Shape::projection(&fields).map_err(|e| with_context(e, &format!("Invalid {name}")))?;
    Ok(vec![Stage::Shape(shape)])
}

pub fn parse_add_fields(name: &str, spec: &Bson) -> Result<Vec<Stage>> {
    let Bson::Document(spec) = spec else {
        return Err(MongoError::location(
            40272,
            format!(
                "{name} specification stage must be an object, got {}",
                bson_type_name(spec)
            ),
        ));
    };
    let shape = Shape::add_fields(spec).map_err(|e| with_context(e, &format!("Invalid {name}")))?;
    Ok(vec![Stage::Shape(shape)])
}

impl Shape {
    /// A `$project` specification, as the server's projection parser reads it.
    pub fn projection(fields: &[(&str, &Bson)]) -> Result<Shape> {
        if fields.is_empty() {
            return Err(MongoError::location(
                51272,
                "projection specification must have at least one field",
            ));
        }
        let mut parser = ProjectionParser::default();
        let mut root = Node::default();
        for (name, value) in fields {
            if *name == "_id" || name.starts_with("_id.") {
                parser.id_specified = true;
            }
            parser.element(name, value, &mut root, true)?;
        }
        // `{_id: 1}` alone is an inclusion and `{_id: 0}` alone an exclusion.
        let mode = parser.mode.unwrap_or(if parser.id_included {
            Mode::Inclusion
        } else {
            Mode::Exclusion
        });
        if !parser.id_specified && mode == Mode::Inclusion {
            root.entries.push(("_id".to_string(), Entry::Include));
        }
        if mode == Mode::Exclusion && parser.id_specified && parser.id_included {
            root.remove("_id");
        }
        Ok(Shape { root, mode })
    }

    /// An `$addFields` specification: every value is an expression, and sub-objects that are
    /// not expressions set fields inside the existing sub-document.
    pub fn add_fields(spec: &Document) -> Result<Shape> {
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
            add_computed_field(node, last.first().map_or("", String::as_str), value)?;
        }
        Ok(Shape {
            root,
            mode: Mode::AddFields,
        })
    }

    pub fn apply(&self, doc: &Document, ctx: &RunContext) -> Result<Document> {
        let vars = Variables::new(doc, ctx.now);
        match self.mode {
            Mode::Exclusion => Ok(exclude(&self.root, doc)),
            Mode::Inclusion => {
                let mut out = OutputDocument::default();
                include_fields(&self.root, doc, &mut out);
                apply_computed(&self.root, &vars, &mut out)?;
                Ok(out.into_document())
            }
            Mode::AddFields => {
                let mut out = OutputDocument::from_document(doc);
                apply_computed(&self.root, &vars, &mut out)?;
                Ok(out.into_document())
            }
        }
    }
}

/// Parse state across one `$project` specification.
#[derive(Default)]
struct ProjectionParser {
    mode: Option<Mode>,
    id_specified: bool,
    id_included: bool,
}

impl ProjectionParser {
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
        let expr = Expression::parse(value)?;
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
            if is_operator_name(first) {
                if self.mode == Some(Mode::Exclusion) {
                    return Err(MongoError::location(
                        31252,
                        "Cannot use expression other than $meta in exclusion projection",
                    ));
                }
                self.mode.get_or_insert(Mode::Inclusion);
                let expr = Expression::parse_operator(sub)?;
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
        node.entries.push((name.clone(), entry));
        return Ok(());
    }
    match node.get_mut(name) {
        None => {
            let mut child = Node::default();
            add_node_at(&mut child, path, index + 1, entry)?;
            node.entries.push((name.clone(), Entry::Child(child)));
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

/// The node at `parts` below `node`, creating missing levels (`$addFields` paths were checked
/// for conflicts beforehand, so a computed field is never in the way).
fn child_at<'n>(node: &'n mut Node, parts: &[String]) -> Result<&'n mut Node> {
    let Some((first, rest)) = parts.split_first() else {
        return Ok(node);
    };
    if node.get(first).is_none() {
        node.entries
            .push((first.clone(), Entry::Child(Node::default())));
    }
    match node.get_mut(first) {
        Some(Entry::Child(child)) => child_at(child, rest),
        _ => Err(MongoError::internal(
            "conflicting $addFields paths passed validation",
        )),
    }
}

/// One `$addFields` field: an operator object or a literal is computed; a non-empty object of
/// fields recurses into the sub-document.
fn add_computed_field(node: &mut Node, name: &str, value: &Bson) -> Result<()> {
    match value {
        Bson::Document(sub)
            if sub
                .keys()
                .next()
                .is_some_and(|first| !first.starts_with('$')) =>
        {
            let child = child_at(node, &[name.to_string()])?;
            for (field, inner) in sub {
                add_computed_field(child, field, inner)?;
            }
            Ok(())
        }
        Bson::Document(sub) if !sub.is_empty() => {
            set_computed(node, name, Expression::parse_operator(sub)?)
        }
        other => set_computed(node, name, Expression::parse(other)?),
    }
}

fn set_computed(node: &mut Node, name: &str, expr: Expression) -> Result<()> {
    match node.get_mut(name) {
        Some(slot) => *slot = Entry::Computed(expr),
        None => node.entries.push((name.to_string(), Entry::Computed(expr))),
    }
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

/// A document under construction whose fields may be *missing*: a field keeps its position
/// when a computed value later replaces it, as the server's `MutableDocument` does.
#[derive(Default)]
struct OutputDocument {
    fields: Vec<(String, Value)>,
}

impl OutputDocument {
    fn from_document(doc: &Document) -> Self {
        OutputDocument {
            fields: doc
                .iter()
                .map(|(k, v)| (k.clone(), Some(v.clone())))
                .collect(),
        }
    }

    fn get(&self, name: &str) -> Option<&Bson> {
        self.fields
            .iter()
            .find(|(k, _)| k == name)
            .and_then(|(_, v)| v.as_ref())
    }

    fn push(&mut self, name: &str, value: Value) {
        self.fields.push((name.to_string(), value));
    }

    fn set(&mut self, name: &str, value: Value) {
        match self.fields.iter_mut().find(|(k, _)| k == name) {
            Some(slot) => slot.1 = value,
            None => self.push(name, value),
        }
    }

    fn into_document(self) -> Document {
        let mut doc = Document::new();
        for (name, value) in self.fields {
            if let Some(value) = value {
                doc.insert(name, value);
            }
        }
        doc
    }
}

/// Inclusion, first pass: the included fields in the input's order.
fn include_fields(node: &Node, input: &Document, out: &mut OutputDocument) {
    for (name, value) in input {
        match node.get(name) {
            Some(Entry::Include) => out.push(name, Some(value.clone())),
            Some(Entry::Child(child)) => out.push(name, include_value(child, value)),
            _ => {}
        }
    }
}

/// Sub-documents are projected, arrays element by element (nested arrays too), and other
/// values have nothing to include.
fn include_value(node: &Node, value: &Bson) -> Value {
    match value {
        Bson::Document(doc) => {
            let mut out = OutputDocument::default();
            include_fields(node, doc, &mut out);
            Some(Bson::Document(out.into_document()))
        }
        Bson::Array(items) => Some(Bson::Array(
            items
                .iter()
                .filter_map(|item| include_value(node, item))
                .collect(),
        )),
        _ => None,
    }
}

/// Computed fields, in specification order, on top of what is already in `out`.
fn apply_computed(node: &Node, vars: &Variables, out: &mut OutputDocument) -> Result<()> {
    for (name, entry) in &node.entries {
        match entry {
            Entry::Computed(expr) => out.set(name, expr.evaluate(vars)?),
            Entry::Child(child) if child.has_computed() => {
                let current = out.get(name).cloned();
                out.set(name, computed_into(child, vars, current)?);
            }
            _ => {}
        }
    }
    Ok(())
}

/// Sets a sub-tree's computed fields inside `value`: into a document, into each element of an
/// array, or into a new document replacing any other value.
fn computed_into(node: &Node, vars: &Variables, value: Value) -> Result<Value> {
    match value {
        Some(Bson::Document(doc)) => {
            let mut out = OutputDocument::from_document(&doc);
            apply_computed(node, vars, &mut out)?;
            Ok(Some(Bson::Document(out.into_document())))
        }
        Some(Bson::Array(items)) => {
            let mut values = Vec::with_capacity(items.len());
            for item in items {
                values.extend(computed_into(node, vars, Some(item))?);
            }
            Ok(Some(Bson::Array(values)))
        }
        _ => {
            let mut out = OutputDocument::default();
            apply_computed(node, vars, &mut out)?;
            Ok(Some(Bson::Document(out.into_document())))
        }
    }
}

/// Exclusion: everything but the excluded fields, recursing into sub-documents and arrays.
fn exclude(node: &Node, input: &Document) -> Document {
    let mut out = Document::new();
    for (name, value) in input {
        match node.get(name) {
            Some(Entry::Exclude) => {}
            Some(Entry::Child(child)) => {
                out.insert(name.clone(), exclude_value(child, value));
            }
            _ => {
                out.insert(name.clone(), value.clone());
            }
        }
    }
    out
}

fn exclude_value(node: &Node, value: &Bson) -> Bson {
    match value {
        Bson::Document(doc) => Bson::Document(exclude(node, doc)),
        Bson::Array(items) => {
            Bson::Array(items.iter().map(|item| exclude_value(node, item)).collect())
        }
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{DateTime, bson, doc};

    fn shape(stage: &str, spec: Bson) -> Result<Shape> {
        let stages = match stage {
            "$project" => parse_project(stage, &spec),
            "$unset" => parse_unset(stage, &spec),
            _ => parse_add_fields(stage, &spec),
        }?;
        match stages.into_iter().next() {
            Some(Stage::Shape(shape)) => Ok(shape),
            _ => Err(MongoError::internal("not a shape stage")),
        }
    }

    fn apply(stage: &str, spec: Bson, input: Document) -> Document {
        let ctx = RunContext {
            now: DateTime::from_millis(0),
        };
        shape(stage, spec).unwrap().apply(&input, &ctx).unwrap()
    }

    fn error(stage: &str, spec: Bson) -> (i32, String) {
        let err = shape(stage, spec).err().unwrap();
        (err.code().code(), err.message().to_string())
    }

    #[test]
    fn inclusion_keeps_listed_fields_in_input_order() {
        let input = doc! {"_id": 1, "b": 2, "a": 1, "c": 3};
        assert_eq!(
            apply("$project", bson!({"a": 1, "b": true}), input.clone()),
            doc! {"_id": 1, "b": 2, "a": 1}
        );
        assert_eq!(
            apply("$project", bson!({"a": 1, "_id": 0}), input.clone()),
            doc! {"a": 1}
        );
        assert_eq!(
            apply("$project", bson!({"_id": 1}), input.clone()),
            doc! {"_id": 1}
        );
        assert_eq!(apply("$project", bson!({"x": 1}), input), doc! {"_id": 1});
    }

    #[test]
    fn exclusion_drops_listed_fields() {
        let input = doc! {"_id": 1, "a": {"x": 1, "y": 2}, "b": [{"x": 1, "y": 2}, 5], "c": 3};
        assert_eq!(
            apply("$project", bson!({"c": 0}), input.clone()),
            doc! {"_id": 1, "a": {"x": 1, "y": 2}, "b": [{"x": 1, "y": 2}, 5]}
        );
        assert_eq!(
            apply("$project", bson!({"_id": 0}), doc! {"_id": 1, "a": 2}),
            doc! {"a": 2}
        );
        assert_eq!(
            apply(
                "$project",
                bson!({"a.x": 0, "b.y": 0, "_id": 1}),
                input.clone()
            ),
            doc! {"_id": 1, "a": {"y": 2}, "b": [{"x": 1}, 5], "c": 3}
        );
        assert_eq!(
            apply("$unset", bson!(["a", "b"]), input.clone()),
            doc! {"_id": 1, "c": 3}
        );
        assert_eq!(
            apply("$unset", bson!("a.y"), input),
            doc! {"_id": 1, "a": {"x": 1}, "b": [{"x": 1, "y": 2}, 5], "c": 3}
        );
    }

    #[test]
    fn nested_inclusion_through_arrays() {
        let input = doc! {"_id": 1, "a": [{"b": 1, "c": 2}, 5, [{"b": 3}], {"c": 4}], "d": {"b": 1, "e": 2}};
        assert_eq!(
            apply("$project", bson!({"a.b": 1, "d": {"e": 1}}), input.clone()),
            doc! {"_id": 1, "a": [{"b": 1}, [{"b": 3}], {}], "d": {"e": 2}}
        );
        assert_eq!(
            apply("$project", bson!({"d.b": 1, "_id": 0}), doc! {"d": 5}),
            doc! {}
        );
    }

    #[test]
    fn computed_fields() {
        let input = doc! {"_id": 7, "a": 1, "b": {"c": 2}};
        assert_eq!(
            apply(
                "$project",
                bson!({"x": "$a", "y": {"$add": ["$a", 1]}, "z": "lit", "n": null}),
                input.clone()
            ),
            doc! {"_id": 7, "x": 1, "y": 2, "z": "lit", "n": null}
        );
        assert_eq!(
            apply(
                "$project",
                bson!({"_id": "$a", "m": "$missing"}),
                input.clone()
            ),
            doc! {"_id": 1}
        );
        assert_eq!(
            apply(
                "$project",
                bson!({"b.d": {"$literal": 5}, "_id": 0}),
                input.clone()
            ),
            doc! {"b": {"d": 5}}
        );
        assert_eq!(
            apply("$project", bson!({"b": {"c": 1, "d": "$a"}}), input.clone()),
            doc! {"_id": 7, "b": {"c": 2, "d": 1}}
        );
        assert_eq!(
            apply(
                "$project",
                bson!({"q.r": "$a", "_id": 0}),
                doc! {"a": 1, "q": 5}
            ),
            doc! {"q": {"r": 1}}
        );
        assert_eq!(
            apply("$project", bson!({"a": 1, "b": "$$REMOVE"}), input),
            doc! {"_id": 7, "a": 1}
        );
    }

    #[test]
    fn project_errors() {
        assert_eq!(
            error("$project", bson!(1)),
            (15969, "$project specification must be an object".into())
        );
        assert_eq!(error("$project", bson!({})), (51272, "Invalid $project :: caused by :: projection specification must have at least one field".into()));
        assert_eq!(error("$project", bson!({"a": 1, "b": 0})), (31254, "Invalid $project :: caused by :: Cannot do exclusion on field b in inclusion projection".into()));
        assert_eq!(error("$project", bson!({"a": 0, "b": 1})), (31253, "Invalid $project :: caused by :: Cannot do inclusion on field b in exclusion projection".into()));
        assert_eq!(
            error("$project", bson!({"a": 0, "b": {"$add": [1, 2]}})).0,
            31252
        );
        assert_eq!(error("$project", bson!({"a": 0, "b": "$a"})), (31310, "Invalid $project :: caused by :: Cannot use an expression b: \"$a\" in an exclusion projection".into()));
        assert_eq!(error("$project", bson!({"a": 0, "b": null})).0, 31310);
        assert_eq!(
            error("$project", bson!({"_id": {"$add": [1, 2]}, "a": 0})).0,
            31254
        );
        assert_eq!(error("$project", bson!({"a": {"x": 1, "y": 0}})).0, 31254);
        assert_eq!(
            error("$project", bson!({"a.b": 1, "a": 1})),
            (
                31250,
                "Invalid $project :: caused by :: Path collision at a".into()
            )
        );
        assert_eq!(
            error("$project", bson!({"a": 1, "a.b.c": 1})),
            (
                31249,
                "Invalid $project :: caused by :: Path collision at a.b.c remaining portion b.c"
                    .into()
            )
        );
        assert_eq!(
            error("$project", bson!({"a": {}})),
            (
                51270,
                "Invalid $project :: caused by :: Invalid empty sub-projection: a".into()
            )
        );
        assert_eq!(error("$project", bson!({"": 1})).0, 40352);
        assert_eq!(error("$project", bson!({"$bad": 1})).0, 16410);
        assert_eq!(error("$project", bson!({"$": 1})).0, 16410);
        assert_eq!(error("$project", bson!({"a.": 1})).0, 40353);
        assert_eq!(error("$project", bson!({"a..b": 1})).0, 15998);
        assert_eq!(
            error("$project", bson!({"a": {"$bogus": 1}})),
            (
                31325,
                "Invalid $project :: caused by :: Unrecognized expression '$bogus'".into()
            )
        );
        assert_eq!(
            error("$project", bson!({"a": {"$add": [1], "$subtract": [1, 2]}})).0,
            16410
        );
        assert_eq!(
            error("$project", bson!({"a": {"$elemMatch": {"x": 1}}})).0,
            168
        );
        assert_eq!(
            error("$project", bson!({"a": {"$add": [{"$bogus": 1}]}})),
            (
                168,
                "Invalid $project :: caused by :: Unrecognized expression '$bogus'".into()
            )
        );
        assert_eq!(error("$project", bson!({"a.$": 1})).0, 31324);
    }

    #[test]
    fn unset_errors() {
        assert_eq!(
            error("$unset", bson!(1)),
            (
                31002,
                "$unset specification must be a string or an array".into()
            )
        );
        assert_eq!(error("$unset", bson!([])).0, 31119);
        assert_eq!(error("$unset", bson!(["a", 1])).0, 31120);
        assert_eq!(
            error("$unset", bson!(["a", "a"])),
            (
                31250,
                "Invalid $unset :: caused by :: Path collision at a".into()
            )
        );
        assert_eq!(error("$unset", bson!("")).0, 40352);
    }

    #[test]
    fn add_fields_keeps_everything_and_merges_sub_documents() {
        let input = doc! {"_id": 1, "a": {"x": 1}, "b": 2, "arr": [{"k": 1}, 3]};
        assert_eq!(
            apply(
                "$addFields",
                bson!({"c": {"$add": ["$b", 1]}, "b": "new"}),
                input.clone()
            ),
            doc! {"_id": 1, "a": {"x": 1}, "b": "new", "arr": [{"k": 1}, 3], "c": 3}
        );
        assert_eq!(
            apply("$set", bson!({"a.y": 2, "a": {"z": true}}), input.clone()),
            doc! {"_id": 1, "a": {"x": 1, "y": 2, "z": true}, "b": 2, "arr": [{"k": 1}, 3]}
        );
        assert_eq!(
            apply("$addFields", bson!({"arr.k": 0}), input.clone()),
            doc! {"_id": 1, "a": {"x": 1}, "b": 2, "arr": [{"k": 0}, {"k": 0}]}
        );
        assert_eq!(
            apply(
                "$addFields",
                bson!({"b": "$$REMOVE", "e": {}, "f": 1, "g": true}),
                input.clone()
            ),
            doc! {"_id": 1, "a": {"x": 1}, "arr": [{"k": 1}, 3], "e": {}, "f": 1, "g": true}
        );
        assert_eq!(
            apply("$addFields", bson!({"n.m": 1}), doc! {"n": 5}),
            doc! {"n": {"m": 1}}
        );
        assert_eq!(apply("$addFields", bson!({}), input.clone()), input);
    }

    #[test]
    fn add_fields_errors() {
        assert_eq!(
            error("$addFields", bson!(1)),
            (
                40272,
                "$addFields specification stage must be an object, got int".into()
            )
        );
        assert_eq!(
            error("$set", bson!("x")),
            (
                40272,
                "$set specification stage must be an object, got string".into()
            )
        );
        assert_eq!(
            error("$addFields", bson!({"$foo": "v"})),
            (16410, "Invalid $addFields :: caused by :: FieldPath field names may not start with '$'. Consider using $getField or $setField.".into())
        );
        assert_eq!(error("$addFields", bson!({"a": 1, "a.b": 2})).0, 40176);
        assert_eq!(
            error("$addFields", bson!({"a": {"b": 1}, "a.b": 2})).0,
            40176
        );
        assert_eq!(
            error("$addFields", bson!({"a": {"$add": [1], "b": 2}})).0,
            40181
        );
        assert_eq!(error("$addFields", bson!({"a": {"b.c": 2}})).0, 40183);
        assert_eq!(
            error("$addFields", bson!({"a": {"$bogus": 1}})),
            (
                168,
                "Invalid $addFields :: caused by :: Unrecognized expression '$bogus'".into()
            )
        );
    }
}
