//! The memory a group's accumulator states hold, counted against `$group`'s limit
//! (`internalDocumentSourceGroupMaxMemoryBytes`). Sizes are approximate and kept up to date
//! incrementally: measuring a state that holds many values after every document would cost
//! more than accumulating it.

use super::State;
use crate::error::Result;
use crate::expression::value::Value;
use crate::spill::{approximate_document_size, approximate_value_size};
use bson::Bson;

/// What an empty state costs (its variant and bookkeeping).
pub const STATE_OVERHEAD: usize = 64;

fn size_of(value: Option<&Bson>) -> isize {
    value.map_or(0, approximate_value_size) as isize
}

impl State {
    /// [`State::process`], returning how many bytes the state grew by (negative when it
    /// shrank).
    pub fn process_measured(&mut self, input: Value) -> Result<isize> {
        let input_size = size_of(input.as_ref());
        self.measured(input_size, |state| state.process(input))
    }

    /// [`State::merge`], returning how many bytes the state grew by.
    pub fn merge_measured(&mut self, partial: Value) -> Result<isize> {
        let partial_size = size_of(partial.as_ref());
        self.measured(partial_size, |state| state.merge(partial))
    }

    /// Runs `change`; states holding one value are measured before and after, states that
    /// collect values grow by `added` (the size of what came in) when they kept more.
    fn measured(
        &mut self,
        added: isize,
        change: impl FnOnce(&mut State) -> Result<()>,
    ) -> Result<isize> {
        match self {
            // Fixed size, or (`$first` once set) no longer changing.
            State::Sum(_) | State::Avg(..) | State::StdDev(_) | State::First(Some(_)) => {
                change(self)?;
                Ok(0)
            }
            State::Min(..)
            | State::Max(..)
            | State::First(_)
            | State::Last(_)
            | State::MergeObjects(_) => {
                let before = self.single_value_size();
                change(self)?;
                Ok(self.single_value_size() - before)
            }
            State::Percentile(_) => {
                let before = self.held();
                change(self)?;
                Ok((self.held() - before) as isize * 8)
            }
            _ => {
                let before = self.held();
                change(self)?;
                // A bounded state at capacity replaces values: about the same size.
                Ok(if self.held() > before { added } else { 0 })
            }
        }
    }

    fn single_value_size(&self) -> isize {
        match self {
            State::Min(value, _) | State::Max(value, _) => size_of(value.as_ref()),
            State::First(value) | State::Last(value) => {
                size_of(value.as_ref().and_then(Option::as_ref))
            }
            State::MergeObjects(doc) => approximate_document_size(doc) as isize,
            _ => 0,
        }
    }

    /// How many values a collecting state keeps.
    fn held(&self) -> usize {
        match self {
            State::Push(values) | State::AddToSet(values, _) => values.len(),
            State::FirstN(state) => state.held(),
            State::LastN(state) => state.held(),
            State::Bounded(state) => state.held(),
            State::Percentile(state) => state.held(),
            _ => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{bson, doc};

    #[test]
    fn growth_follows_what_is_kept() {
        let mut push = State::Push(Vec::new());
        assert_eq!(push.process_measured(Some(bson!("abc"))).unwrap(), 8);
        assert_eq!(push.process_measured(None).unwrap(), 0);
        let mut set = State::AddToSet(Vec::new(), None);
        assert_eq!(set.process_measured(Some(bson!(1))).unwrap(), 4);
        assert_eq!(set.process_measured(Some(bson!(1))).unwrap(), 0);
        let mut max = State::Max(None, None);
        assert_eq!(max.process_measured(Some(bson!("a"))).unwrap(), 6);
        assert_eq!(max.process_measured(Some(bson!("zzz"))).unwrap(), 2);
        let mut sum = State::Sum(Default::default());
        assert_eq!(sum.process_measured(Some(bson!(5))).unwrap(), 0);
        let mut merged = State::MergeObjects(doc! {});
        assert!(merged.process_measured(Some(bson!({"a": 1}))).unwrap() > 0);
        assert_eq!(merged.process_measured(Some(bson!({"a": 2}))).unwrap(), 0);
        let mut first = State::First(None);
        assert_eq!(first.process_measured(Some(bson!(1.5))).unwrap(), 8);
        assert_eq!(first.process_measured(Some(bson!(2.5))).unwrap(), 0);
        let mut pushed = State::Push(Vec::new());
        assert_eq!(pushed.merge_measured(Some(bson!([1, 2]))).unwrap(), 5 + 16);
    }
}
