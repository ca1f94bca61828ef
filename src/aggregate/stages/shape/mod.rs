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

use crate::expression::Expression;
use indexmap::IndexMap;

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

/// One level of the path tree, in specification order. Entries are looked up by name for every
/// field of every document and a specification may name 100,000 of them, so they are an index
/// map (order kept, lookups in constant time).
#[derive(Clone, Debug, Default)]
struct Node {
    entries: IndexMap<String, Entry>,
    /// The positions of the entries that compute something (a computed field, or a child with
    /// one below it), in specification order, set once parsing is done
    /// ([`Node::index_computed`]): a document visits only these after its fields are matched.
    computed: Vec<usize>,
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
        self.entries.get(name)
    }

    fn get_mut(&mut self, name: &str) -> Option<&mut Entry> {
        self.entries.get_mut(name)
    }

    fn remove(&mut self, name: &str) {
        self.entries.shift_remove(name);
    }

    fn has_computed(&self) -> bool {
        !self.computed.is_empty()
    }

    /// Records, bottom-up, which entries compute something (see [`Node::computed`]).
    fn index_computed(&mut self) {
        self.computed.clear();
        for (i, entry) in self.entries.values_mut().enumerate() {
            let computes = match entry {
                Entry::Computed(_) => true,
                Entry::Child(child) => {
                    child.index_computed();
                    child.has_computed()
                }
                Entry::Include | Entry::Exclude => false,
            };
            if computes {
                self.computed.push(i);
            }
        }
    }

    /// The entries that compute something, in specification order.
    fn computed_entries(&self) -> impl Iterator<Item = (&String, &Entry)> {
        self.computed
            .iter()
            .filter_map(|&i| self.entries.get_index(i))
    }
}

#[cfg(test)]
mod tests;
