//! The accumulators that keep at most `n` values per group: `$firstN`, `$lastN`, `$minN` and
//! `$maxN` (`{input, n}`), with the checks of `n` (an expression evaluated once per group
//! against the group key) and the bounded ordered state `$minN`, `$maxN` and the `top_bottom`
//! accumulators share: the state never holds more than `n` values, as the server's does.

use super::top_bottom::{SortOrder, sort_entry};
use super::{Kind, Parsed};
use crate::document::order::compare_values;
use crate::error::{MongoError, Result};
use crate::expression::value::{Value, is_nullish, render};
use crate::expression::{Expression, LetVariables};
use bson::{Bson, Document, doc};
use std::cmp::Ordering;
use std::collections::VecDeque;

/// `{n, input}` of `$firstN`, `$lastN`, `$minN` and `$maxN`.
pub fn parse_n_input(name: &'static str, argument: &Bson, vars: &LetVariables) -> Result<Parsed> {
    let (kind, not_object) = match name {
        "$firstN" => (Kind::FirstN, 5787801),
        "$lastN" => (Kind::LastN, 5787801),
        "$minN" => (Kind::MinN, 5787900),
        _ => (Kind::MaxN, 5787900),
    };
    let spec = expect_object(name, argument, not_object)?;
    let (mut n, mut input) = (None, None);
    for (field, value) in spec {
        let parsed = Some(Expression::parse_in(value, vars.scope())?);
        match field.as_str() {
            "input" => input = parsed,
            "n" => n = parsed,
            _ => {
                return Err(MongoError::location(
                    5787901,
                    format!("Unknown argument for 'n' operator: {field}"),
                ));
            }
        }
    }
    let n = n.ok_or_else(|| MongoError::location(5787906, "Missing value for 'n'"))?;
    let argument =
        input.ok_or_else(|| MongoError::location(5787907, "Missing value for 'input'"))?;
    Ok(Parsed {
        kind,
        argument,
        n: Some(n),
    })
}

pub(super) fn expect_object<'a>(name: &str, argument: &'a Bson, code: i32) -> Result<&'a Document> {
    match argument {
        Bson::Document(spec) => Ok(spec),
        other => Err(MongoError::location(
            code,
            format!(
                "specification must be an object; found {name}: {}",
                render(Some(other))
            ),
        )),
    }
}

/// The elements of a partial that is an array of values (`$firstN`, `$lastN`, `$minN`,
/// `$maxN`, `$top`...).
pub(super) fn partial_items(partial: Option<&Bson>) -> Result<Vec<Bson>> {
    match partial {
        Some(Bson::Array(items)) => Ok(items.clone()),
        other => Err(MongoError::type_mismatch(format!(
            "a partial group value must be an array, found {}",
            render(other)
        ))),
    }
}

/// `$firstN`: the first `n` values, missing ones as null.
#[derive(Clone, Debug)]
pub struct FirstN {
    n: usize,
    values: Vec<Bson>,
}

impl FirstN {
    pub fn new(n: usize) -> FirstN {
        FirstN {
            n,
            values: Vec::new(),
        }
    }

    pub fn add(&mut self, input: Value) {
        if self.values.len() < self.n {
            self.values.push(input.unwrap_or(Bson::Null));
        }
    }

    pub fn finish(self) -> Bson {
        Bson::Array(self.values)
    }

    /// How many values are kept.
    pub(super) fn held(&self) -> usize {
        self.values.len()
    }
}

/// `$lastN`: the last `n` values, missing ones as null.
#[derive(Clone, Debug)]
pub struct LastN {
    n: usize,
    values: VecDeque<Bson>,
}

impl LastN {
    pub fn new(n: usize) -> LastN {
        LastN {
            n,
            values: VecDeque::new(),
        }
    }

    pub fn add(&mut self, input: Value) {
        if self.values.len() == self.n {
            self.values.pop_front();
        }
        self.values.push_back(input.unwrap_or(Bson::Null));
    }

    pub fn finish(self) -> Bson {
        Bson::Array(self.values.into())
    }

    /// How many values are kept.
    pub(super) fn held(&self) -> usize {
        self.values.len()
    }
}

#[derive(Clone, Debug)]
enum Mode {
    MinN,
    MaxN,
    Sorted(SortOrder),
}

/// The `n` smallest or largest entries seen, kept in ascending order. Equal entries stay in
/// arrival order, and a new entry only displaces a kept one that is strictly worse, so ties
/// keep the earliest.
#[derive(Clone, Debug)]
pub struct Bounded {
    n: usize,
    mode: Mode,
    /// For `$minN`/`$maxN` the value (and an unused null); for the sorted ones the sort key
    /// and the output.
    entries: Vec<(Bson, Bson)>,
}

impl Bounded {
    pub fn min_n(n: usize) -> Bounded {
        Bounded::new(n, Mode::MinN)
    }

    pub fn max_n(n: usize) -> Bounded {
        Bounded::new(n, Mode::MaxN)
    }

    pub fn sorted(order: SortOrder, n: usize) -> Bounded {
        Bounded::new(n, Mode::Sorted(order))
    }

    fn new(n: usize, mode: Mode) -> Bounded {
        Bounded {
            n,
            mode,
            entries: Vec::new(),
        }
    }

    /// How many entries are kept.
    pub(super) fn held(&self) -> usize {
        self.entries.len()
    }

    fn keeps_largest(&self) -> bool {
        match &self.mode {
            Mode::MinN => false,
            Mode::MaxN => true,
            Mode::Sorted(order) => order.bottom,
        }
    }

    fn compare(&self, a: &Bson, b: &Bson) -> Ordering {
        let Mode::Sorted(order) = &self.mode else {
            return compare_values(a, b);
        };
        let (Bson::Array(a), Bson::Array(b)) = (a, b) else {
            return Ordering::Equal;
        };
        for ((x, y), up) in a.iter().zip(b).zip(&order.ascending) {
            let ordering = compare_values(x, y);
            let ordering = if *up { ordering } else { ordering.reverse() };
            if ordering.is_ne() {
                return ordering;
            }
        }
        Ordering::Equal
    }

    pub fn add(&mut self, input: Value) {
        let entry = match &self.mode {
            // `$minN` and `$maxN` ignore null, undefined and missing.
            Mode::MinN | Mode::MaxN => match input {
                Some(value) if !is_nullish(Some(&value)) => (value, Bson::Null),
                _ => return,
            },
            Mode::Sorted(order) => sort_entry(input, &order.ascending),
        };
        self.insert(entry);
    }

    /// Keeps `entry` if it is among the `n` best so far.
    fn insert(&mut self, entry: (Bson, Bson)) {
        if self.entries.len() >= self.n {
            let worst = if self.keeps_largest() {
                self.entries.first()
            } else {
                self.entries.last()
            };
            let Some((worst, _)) = worst else {
                return;
            };
            let beats = if self.keeps_largest() {
                self.compare(&entry.0, worst).is_gt()
            } else {
                self.compare(worst, &entry.0).is_gt()
            };
            if !beats {
                return;
            }
            if self.keeps_largest() {
                self.entries.remove(0);
            } else {
                self.entries.pop();
            }
        }
        let at = self
            .entries
            .partition_point(|(key, _)| !self.compare(key, &entry.0).is_gt());
        self.entries.insert(at, entry);
    }

    /// What a shard sends to be merged: for `$minN`/`$maxN` the values (as the final value
    /// has them), for the sorted accumulators every kept entry as
    /// `{generatedSortKey, output}`, so the merger need not recompute the sort keys.
    pub fn partial(self) -> Bson {
        match self.mode {
            Mode::MinN | Mode::MaxN => self.finish(),
            Mode::Sorted(_) => Bson::Array(
                self.entries
                    .into_iter()
                    .map(|(key, output)| {
                        Bson::Document(doc! {"generatedSortKey": key, "output": output})
                    })
                    .collect(),
            ),
        }
    }

    /// Adds the entries of a partial made by [`Bounded::partial`].
    pub fn merge_partial(&mut self, partial: Option<&Bson>) -> Result<()> {
        for item in partial_items(partial)? {
            match (&self.mode, item) {
                (Mode::Sorted(_), Bson::Document(mut entry)) => {
                    let key = entry.remove("generatedSortKey").unwrap_or(Bson::Null);
                    let output = entry.remove("output").unwrap_or(Bson::Null);
                    self.insert((key, output));
                }
                (Mode::Sorted(_), other) => {
                    return Err(MongoError::type_mismatch(format!(
                        "a partial top/bottom entry must be an object, found {}",
                        render(Some(&other))
                    )));
                }
                (_, value) => self.add(Some(value)),
            }
        }
        Ok(())
    }

    pub fn finish(self) -> Bson {
        match self.mode {
            Mode::MinN => Bson::Array(self.entries.into_iter().map(|(v, _)| v).collect()),
            Mode::MaxN => Bson::Array(self.entries.into_iter().rev().map(|(v, _)| v).collect()),
            Mode::Sorted(order) => {
                let mut outputs = self.entries.into_iter().map(|(_, output)| output);
                if order.single {
                    outputs.next().unwrap_or(Bson::Null)
                } else {
                    Bson::Array(outputs.collect())
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{code, gamescores, group, group_error, per_game};
    use super::*;
    use bson::{bson, doc};

    #[test]
    fn n_computed_from_the_group_key() {
        let n = bson!({"$cond": {"if": {"$eq": ["$gameId", "G2"]}, "then": 1, "else": 3}});
        let out = group(
            bson!({"_id": {"gameId": "$gameId"},
                   "gamescores": {"$topN": {"output": "$score", "n": n.clone(), "sortBy": {"score": -1}}}}),
            &gamescores(),
        )
        .unwrap();
        assert_eq!(
            out,
            vec![
                doc! {"_id": {"gameId": "G1"}, "gamescores": [99, 33, 31]},
                doc! {"_id": {"gameId": "G2"}, "gamescores": [80]},
            ]
        );
        let out = group(
            bson!({"_id": {"gameId": "$gameId"},
                   "gamescores": {"$firstN": {"input": "$score", "n": n}}}),
            &gamescores(),
        )
        .unwrap();
        assert_eq!(
            out,
            vec![
                doc! {"_id": {"gameId": "G1"}, "gamescores": [31, 33, 99]},
                doc! {"_id": {"gameId": "G2"}, "gamescores": [10]},
            ]
        );
        // `n` sees the group key, not the documents.
        assert_eq!(
            group_error(
                bson!({"_id": "$gameId", "r": {"$firstN": {"input": "$score", "n": "$score"}}}),
                &gamescores()
            ),
            (
                5787902,
                "Value for 'n' must be of integral type, but found MISSING".into()
            )
        );
    }

    #[test]
    fn first_last_max_min_n_documented_examples() {
        assert_eq!(
            per_game(bson!({"$firstN": {"input": ["$playerId", "$score"], "n": 3}})),
            vec![
                bson!([["PlayerA", 31], ["PlayerB", 33], ["PlayerC", 99]]),
                bson!([["PlayerA", 10], ["PlayerB", 14], ["PlayerC", 66]]),
            ]
        );
        assert_eq!(
            per_game(bson!({"$lastN": {"input": ["$playerId", "$score"], "n": 3}})),
            vec![
                bson!([["PlayerB", 33], ["PlayerC", 99], ["PlayerD", 1]]),
                bson!([["PlayerB", 14], ["PlayerC", 66], ["PlayerD", 80]]),
            ]
        );
        assert_eq!(
            per_game(bson!({"$maxN": {"input": ["$score", "$playerId"], "n": 3}})),
            vec![
                bson!([[99, "PlayerC"], [33, "PlayerB"], [31, "PlayerA"]]),
                bson!([[80, "PlayerD"], [66, "PlayerC"], [14, "PlayerB"]]),
            ]
        );
        assert_eq!(
            per_game(bson!({"$minN": {"input": ["$score", "$playerId"], "n": 3}})),
            vec![
                bson!([[1, "PlayerD"], [31, "PlayerA"], [33, "PlayerB"]]),
                bson!([[10, "PlayerA"], [14, "PlayerB"], [66, "PlayerC"]]),
            ]
        );
    }

    #[test]
    fn nulls_in_first_last_min_max_n() {
        let docs = [
            doc! {"v": 3},
            doc! {},
            doc! {"v": null},
            doc! {"v": 1},
            doc! {"v": 2.0},
        ];
        let out = group(
            bson!({"_id": null,
                   "first": {"$firstN": {"input": "$v", "n": 3}},
                   "last": {"$lastN": {"input": "$v", "n": 2.0}},
                   "max": {"$maxN": {"input": "$v", "n": 10}},
                   "min": {"$minN": {"input": "$v", "n": 2_i64}}}),
            &docs,
        )
        .unwrap();
        assert_eq!(
            out,
            vec![
                doc! {"_id": null, "first": [3, null, null], "last": [1, 2.0],
                "max": [3, 2.0, 1], "min": [1, 2.0]}
            ]
        );
    }

    #[test]
    fn state_holds_at_most_n_values() {
        let mut top = Bounded::sorted(
            SortOrder {
                ascending: vec![true],
                bottom: false,
                single: false,
            },
            2,
        );
        let mut max = Bounded::max_n(2);
        let mut last = LastN::new(2);
        for i in (0..100).rev() {
            top.add(Some(bson!([i, i])));
            max.add(Some(Bson::Int32(i)));
            last.add(Some(Bson::Int32(i)));
            assert!(top.entries.len() <= 2 && max.entries.len() <= 2 && last.values.len() <= 2);
        }
        assert_eq!(top.finish(), bson!([0, 1]));
        assert_eq!(max.finish(), bson!([99, 98]));
        assert_eq!(last.finish(), bson!([1, 0]));
    }

    #[test]
    fn n_errors() {
        let run = |n: Bson| {
            group_error(
                bson!({"_id": null, "r": {"$topN": {"output": "$v", "sortBy": {"v": 1}, "n": n}}}),
                &[doc! {"v": 1}],
            )
        };
        assert_eq!(
            run(bson!("x")),
            (
                5787902,
                "Value for 'n' must be of integral type, but found \"x\"".into()
            )
        );
        assert_eq!(run(bson!(2.5)).0, 5787903);
        assert_eq!(
            run(bson!(0)),
            (5787908, "'n' must be greater than 0, found 0".into())
        );
        assert_eq!(run(bson!(-1_i64)).0, 5787908);
        assert_eq!(run(Bson::Null).0, 5787902);
    }

    #[test]
    fn specification_errors() {
        let err = code(bson!({"$firstN": 1}));
        assert_eq!(err, 5787801);
        assert_eq!(code(bson!({"$maxN": "x"})), 5787900);
        assert_eq!(
            code(bson!({"$lastN": {"input": 1, "n": 1, "x": 1}})),
            5787901
        );
        assert_eq!(code(bson!({"$minN": {"input": 1}})), 5787906);
        assert_eq!(code(bson!({"$minN": {"n": 1}})), 5787907);
    }
}
