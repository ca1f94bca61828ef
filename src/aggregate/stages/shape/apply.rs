//! Running a [`Shape`] over one document: inclusion keeps the listed fields in the input's
//! order, exclusion drops them, and computed fields are set in specification order.

use super::{Entry, Mode, Node, Shape};
use crate::aggregate::stages::RunContext;
use crate::error::Result;
use crate::expression::value::Value;
use crate::expression::{Variables, meta};
use bson::{Bson, Document};
use indexmap::IndexMap;

impl Shape {
    pub fn apply(&self, doc: &Document, ctx: &RunContext) -> Result<Document> {
        let vars = ctx.variables(doc);
        match self.mode {
            Mode::Exclusion if self.root.has_computed() => {
                // Only `{$meta: ...}` fields compute in an exclusion.
                let mut out = OutputDocument::from_document(&exclude(&self.root, doc));
                apply_computed(&self.root, &vars, &mut out)?;
                Ok(out.into_document())
            }
            Mode::Exclusion => Ok(exclude(&self.root, doc)),
            Mode::Inclusion => {
                let mut out = OutputDocument::default();
                include_fields(&self.root, doc, &mut out);
                apply_computed(&self.root, &vars, &mut out)?;
                let mut out = out.into_document();
                // The document's metadata stays with it.
                if ctx.vars.carries_metadata() {
                    meta::copy(doc, &mut out);
                }
                Ok(out)
            }
            Mode::AddFields => {
                let mut out = OutputDocument::from_document(doc);
                apply_computed(&self.root, &vars, &mut out)?;
                Ok(out.into_document())
            }
        }
    }
}

/// A document under construction whose fields may be *missing*: a field keeps its position
/// when a computed value later replaces it, as the server's `MutableDocument` does. Fields are
/// found by name in constant time (an `$addFields` may set 100,000 of them).
#[derive(Default)]
struct OutputDocument {
    fields: IndexMap<String, Value>,
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
        self.fields.get(name).and_then(Option::as_ref)
    }

    fn push(&mut self, name: &str, value: Value) {
        self.fields.insert(name.to_string(), value);
    }

    fn set(&mut self, name: &str, value: Value) {
        match self.fields.get_mut(name) {
            Some(slot) => *slot = value,
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
    for (name, entry) in node.computed_entries() {
        match entry {
            Entry::Computed(expr) => out.set(name, expr.evaluate(vars)?),
            Entry::Child(child) => {
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
