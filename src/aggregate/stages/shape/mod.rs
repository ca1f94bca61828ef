//! Stages that reshape each document: `$project` (inclusion or exclusion, computed fields,
//! dotted paths and sub-objects), `$addFields` with its alias `$set`, and `$unset`. A
//! specification becomes a tree of paths, parsed with the server's rules and errors.
//!
//! - here: the [`Shape`] stage and its path tree.
//! - `project`: `$project` and `$unset` (an exclusion projection), parsed into the tree.
//! - `add_fields`: `$addFields`/`$set`, validated and parsed into the tree.
//! - `apply`: running the tree over a document (inclusion, exclusion, computed fields).

mod add_fields;
mod apply;
mod project;

pub use add_fields::parse_add_fields;
pub use project::{parse_project, parse_unset};

use crate::aggregate::expression::Expression;

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

#[cfg(test)]
mod tests;
