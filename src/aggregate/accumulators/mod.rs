//! `$group` accumulators: parsing `{field: {$acc: <argument>}}` with the server's checks, and
//! the per-group state each accumulator keeps.
//!
//! - here: the accumulator table, [`Accumulator`] and the [`State`] dispatch.
//! - `basic`: `$first $last $push $addToSet $mergeObjects`; `$sum $avg $min $max` (and `$count`)
//!   keep the expression layer's folds ([`crate::expression::fold`]).
//! - `n_results`: `$firstN $lastN $minN $maxN`, which keep at most `n` values per group, and
//!   the bounded ordered state they share with `top_bottom`.
//! - `top_bottom`: `$top $bottom $topN $bottomN`.
//! - `stats`: parsing `$percentile $median` (their states, and `$stdDevPop $stdDevSamp`'s, are
//!   folds too).
//! - `merge`: the partial states shards send for a split `$group`, and merging them.
//! - `memory`: how much a state grows as it accumulates, for `$group`'s memory limit.

mod basic;
mod memory;
mod merge;
mod n_results;
mod stats;
mod top_bottom;

use crate::document::collation::Collation;
use crate::error::{MongoError, Result};
use crate::expression::fold::{Percentile, StdDev, Sum, keep_extreme};
use crate::expression::value::Value;
use crate::expression::{Expression, LetVariables, Variables};
use bson::{Bson, Document};
pub use memory::STATE_OVERHEAD;
use n_results::{Bounded, FirstN, LastN};
use std::cmp::Ordering;
use std::sync::Arc;
use top_bottom::SortOrder;

/// What an accumulator computes; the data is what parsing fixed once for all groups.
#[derive(Clone, Debug)]
enum Kind {
    Sum,
    Avg,
    Min,
    Max,
    First,
    Last,
    Push,
    AddToSet,
    MergeObjects,
    StdDev {
        sample: bool,
    },
    /// `$percentile` (`Some(ps)`) or `$median` (`None`).
    Percentile(Option<Vec<f64>>),
    FirstN,
    LastN,
    MinN,
    MaxN,
    /// `$top`, `$bottom`, `$topN`, `$bottomN`.
    Sorted(SortOrder),
}

/// An accumulator's parsed argument: its kind, the expression evaluated for every document,
/// and for the N accumulators the `n` expression evaluated once per group.
struct Parsed {
    kind: Kind,
    argument: Expression,
    n: Option<Expression>,
}

type Parser = fn(&'static str, &Bson, &LetVariables) -> Result<Parsed>;

/// The accumulators by name; `$count` is `$sum: 1` and is handled when parsing.
static ACCUMULATORS: &[(&str, Parser)] = &[
    ("$addToSet", |_, arg, vars| unary(Kind::AddToSet, arg, vars)),
    ("$avg", |_, arg, vars| unary(Kind::Avg, arg, vars)),
    ("$bottom", top_bottom::parse_sorted),
    ("$bottomN", top_bottom::parse_sorted),
    ("$first", |_, arg, vars| unary(Kind::First, arg, vars)),
    ("$firstN", n_results::parse_n_input),
    ("$last", |_, arg, vars| unary(Kind::Last, arg, vars)),
    ("$lastN", n_results::parse_n_input),
    ("$max", |_, arg, vars| unary(Kind::Max, arg, vars)),
    ("$maxN", n_results::parse_n_input),
    ("$median", stats::parse_median),
    ("$mergeObjects", |_, arg, vars| {
        unary(Kind::MergeObjects, arg, vars)
    }),
    ("$min", |_, arg, vars| unary(Kind::Min, arg, vars)),
    ("$minN", n_results::parse_n_input),
    ("$percentile", stats::parse_percentile),
    ("$push", |_, arg, vars| unary(Kind::Push, arg, vars)),
    ("$stdDevPop", |_, arg, vars| {
        unary(Kind::StdDev { sample: false }, arg, vars)
    }),
    ("$stdDevSamp", |_, arg, vars| {
        unary(Kind::StdDev { sample: true }, arg, vars)
    }),
    ("$sum", |_, arg, vars| unary(Kind::Sum, arg, vars)),
    ("$top", top_bottom::parse_sorted),
    ("$topN", top_bottom::parse_sorted),
];

/// An accumulator whose argument is one expression.
fn unary(kind: Kind, argument: &Bson, vars: &LetVariables) -> Result<Parsed> {
    Ok(Parsed {
        kind,
        argument: Expression::parse_in(argument, vars.scope())?,
        n: None,
    })
}

/// One output field of a `$group`.
#[derive(Clone, Debug)]
pub struct Accumulator {
    pub field: String,
    kind: Kind,
    argument: Expression,
    n: Option<Expression>,
    /// The command's collation, which `$min`, `$max` and `$addToSet` compare strings by.
    collation: Option<Arc<Collation>>,
}

impl Accumulator {
    /// Parses `field: {$acc: <argument>}` with the server's checks, in its order. Arguments
    /// that must be constant (`$percentile`'s `p`) may read the command's `let` variables.
    pub fn parse(field: &str, spec: &Bson, vars: &LetVariables) -> Result<Accumulator> {
        let Bson::Document(spec) = spec else {
            return Err(not_an_accumulator(field));
        };
        let Some((name, argument)) = spec.iter().next().filter(|(name, _)| name.starts_with('$'))
        else {
            return Err(not_an_accumulator(field));
        };
        if field.contains('.') {
            return Err(MongoError::location(
                40235,
                format!("The field name '{field}' cannot contain '.'"),
            ));
        }
        if field.starts_with('$') {
            return Err(MongoError::location(
                40236,
                format!("The field name '{field}' cannot be an operator name"),
            ));
        }
        if spec.len() != 1 {
            return Err(MongoError::location(
                40238,
                format!("The field '{field}' must specify one accumulator"),
            ));
        }
        if matches!(argument, Bson::Array(_)) {
            return Err(MongoError::location(
                40237,
                format!("The {name} accumulator is a unary operator"),
            ));
        }
        if name == "$count" {
            if !matches!(argument, Bson::Document(d) if d.is_empty()) {
                return Err(MongoError::type_mismatch(
                    "$count takes no arguments, i.e. $count:{}",
                ));
            }
            return Ok(Accumulator::count(field));
        }
        let (name, parser) = ACCUMULATORS
            .iter()
            .find(|(known, _)| *known == name)
            .ok_or_else(|| {
                MongoError::location(15952, format!("unknown group operator '{name}'"))
            })?;
        let parsed = parser(name, argument, vars)?;
        Ok(Accumulator {
            field: field.to_string(),
            kind: parsed.kind,
            argument: parsed.argument,
            n: parsed.n,
            collation: vars.collation_arc(),
        })
    }

    /// `{$sum: 1}` under `field`, what `$count` (stage and accumulator) means.
    pub fn count(field: &str) -> Accumulator {
        Accumulator {
            field: field.to_string(),
            kind: Kind::Sum,
            argument: Expression::Constant(Bson::Int32(1)),
            n: None,
            collation: None,
        }
    }

    /// The expression evaluated for each document of the group.
    pub fn argument(&self) -> &Expression {
        &self.argument
    }

    /// What a merging `$group` (`$doingMerge`) reads a shard's partial with: the argument,
    /// or for `$top`/`$bottom`/`$topN`/`$bottomN` its `output` (the partial carries the sort
    /// keys already).
    pub fn merge_argument(&self) -> &Expression {
        match (&self.kind, &self.argument) {
            (Kind::Sorted(_), Expression::Array(items)) => items.first().unwrap_or(&self.argument),
            _ => &self.argument,
        }
    }

    /// A new group's state. `key_vars` evaluate against the group key (its fields when it is a
    /// document, nothing otherwise): that is what `n` may read.
    pub fn start(&self, key_vars: &Variables) -> Result<State> {
        let n = match &self.n {
            Some(n) => crate::expression::numeric::n_argument(&n.evaluate(key_vars)?)?,
            None => 1,
        };
        Ok(match &self.kind {
            Kind::Sum => State::Sum(Sum::default()),
            Kind::Avg => State::Avg(Sum::default(), 0),
            Kind::Min => State::Min(None, self.collation.clone()),
            Kind::Max => State::Max(None, self.collation.clone()),
            Kind::First => State::First(None),
            Kind::Last => State::Last(None),
            Kind::Push => State::Push(Vec::new()),
            Kind::AddToSet => State::AddToSet(Vec::new(), self.collation.clone()),
            Kind::MergeObjects => State::MergeObjects(Document::new()),
            Kind::StdDev { sample } => State::StdDev(StdDev::new(*sample)),
            Kind::Percentile(ps) => State::Percentile(Percentile::new(ps.clone())),
            Kind::FirstN => State::FirstN(FirstN::new(n)),
            Kind::LastN => State::LastN(LastN::new(n)),
            Kind::MinN => State::Bounded(Bounded::min_n(n)),
            Kind::MaxN => State::Bounded(Bounded::max_n(n)),
            Kind::Sorted(order) => State::Bounded(Bounded::sorted(order.clone(), n)),
        })
    }
}

fn not_an_accumulator(field: &str) -> MongoError {
    MongoError::location(
        40234,
        format!("The field '{field}' must be an accumulator object"),
    )
}

/// The running state of one accumulator in one group.
#[derive(Clone, Debug)]
pub enum State {
    Sum(Sum),
    /// The sum of the numeric inputs and how many there were.
    Avg(Sum, u64),
    /// The smallest value so far, by the collation (`None`: simple).
    Min(Option<Bson>, Option<Arc<Collation>>),
    Max(Option<Bson>, Option<Arc<Collation>>),
    /// `Some` once the first document has been seen; its value may be missing.
    First(Option<Value>),
    Last(Option<Value>),
    Push(Vec<Bson>),
    /// The distinct values so far, equal by the collation (`None`: simple).
    AddToSet(Vec<Bson>, Option<Arc<Collation>>),
    MergeObjects(Document),
    StdDev(StdDev),
    Percentile(Percentile),
    FirstN(FirstN),
    LastN(LastN),
    Bounded(Bounded),
}

impl State {
    pub fn process(&mut self, input: Value) -> Result<()> {
        match self {
            State::Sum(sum) => {
                sum.add(input.as_ref());
            }
            State::Avg(sum, count) => {
                if sum.add(input.as_ref()) {
                    *count += 1;
                }
            }
            State::Min(best, c) => keep_extreme(best, input, Ordering::Less, c.as_deref()),
            State::Max(best, c) => keep_extreme(best, input, Ordering::Greater, c.as_deref()),
            State::First(first) => {
                if first.is_none() {
                    *first = Some(input);
                }
            }
            State::Last(last) => *last = Some(input),
            State::Push(values) => values.extend(input),
            State::AddToSet(values, c) => basic::add_to_set(values, input, c.as_deref()),
            State::MergeObjects(merged) => basic::merge_into(merged, input)?,
            State::StdDev(state) => state.add(input.as_ref()),
            State::Percentile(state) => state.add(input.as_ref()),
            State::FirstN(state) => state.add(input),
            State::LastN(state) => state.add(input),
            State::Bounded(state) => state.add(input),
        }
        Ok(())
    }

    pub fn finish(self) -> Bson {
        match self {
            State::Sum(sum) => sum.total(),
            State::Avg(sum, count) => sum.average(count),
            State::Min(best, _) | State::Max(best, _) => best.unwrap_or(Bson::Null),
            State::First(value) | State::Last(value) => value.flatten().unwrap_or(Bson::Null),
            State::Push(values) | State::AddToSet(values, _) => Bson::Array(values),
            State::MergeObjects(merged) => Bson::Document(merged),
            State::StdDev(state) => state.finish(),
            State::Percentile(state) => state.finish(),
            State::FirstN(state) => state.finish(),
            State::LastN(state) => state.finish(),
            State::Bounded(state) => state.finish(),
        }
    }
}

/// The output document of one group: `_id` first, then the accumulators in spec order.
pub fn group_output(id: Bson, accumulators: &[Accumulator], states: Vec<State>) -> Document {
    let mut out = Document::new();
    out.insert("_id", id);
    for (acc, state) in accumulators.iter().zip(states) {
        out.insert(acc.field.clone(), state.finish());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aggregate::stages::{self, RunContext, no_variables};
    use bson::{bson, doc};

    /// Runs `{$group: spec}` over `docs`.
    pub(super) fn group(spec: Bson, docs: &[Document]) -> Result<Vec<Document>> {
        let mut docs = docs.to_vec();
        let ctx = RunContext::at_epoch();
        for stage in stages::parse(&doc! {"$group": spec}, &no_variables())? {
            docs = stage.run(docs, &ctx)?;
        }
        Ok(docs)
    }

    /// The `gamescores` collection of MongoDB's examples for the N accumulators.
    pub(super) fn gamescores() -> Vec<Document> {
        vec![
            doc! {"playerId": "PlayerA", "gameId": "G1", "score": 31},
            doc! {"playerId": "PlayerB", "gameId": "G1", "score": 33},
            doc! {"playerId": "PlayerC", "gameId": "G1", "score": 99},
            doc! {"playerId": "PlayerD", "gameId": "G1", "score": 1},
            doc! {"playerId": "PlayerA", "gameId": "G2", "score": 10},
            doc! {"playerId": "PlayerB", "gameId": "G2", "score": 14},
            doc! {"playerId": "PlayerC", "gameId": "G2", "score": 66},
            doc! {"playerId": "PlayerD", "gameId": "G2", "score": 80},
        ]
    }

    /// `{$group: {_id: "$gameId", r: <accumulator>}}` over the game scores: `r` per game.
    pub(super) fn per_game(accumulator: Bson) -> Vec<Bson> {
        group(bson!({"_id": "$gameId", "r": accumulator}), &gamescores())
            .unwrap()
            .into_iter()
            .map(|d| d.get("r").cloned().unwrap())
            .collect()
    }

    /// The error code (and message) of a `$group` that fails to parse or to run.
    pub(super) fn group_error(spec: Bson, docs: &[Document]) -> (i32, String) {
        let err = group(spec, docs).unwrap_err();
        (err.code().code(), err.message().to_string())
    }

    /// The error code of `{f: spec}` as a `$group` field.
    pub(super) fn code(spec: Bson) -> i32 {
        Accumulator::parse("f", &spec, &no_variables())
            .unwrap_err()
            .code()
            .code()
    }

    #[test]
    fn parse_errors_in_server_order() {
        let vars = no_variables();
        assert_eq!(code(bson!(1)), 40234);
        assert_eq!(code(bson!({})), 40234);
        assert_eq!(code(bson!({"a": 1})), 40234);
        let err = Accumulator::parse("a.b", &bson!({"$sum": 1}), &vars).unwrap_err();
        assert_eq!(err.code().code(), 40235);
        let err = Accumulator::parse("$a", &bson!({"$sum": 1}), &vars).unwrap_err();
        assert_eq!(err.code().code(), 40236);
        assert_eq!(code(bson!({"$sum": 1, "$avg": 1})), 40238);
        let err = Accumulator::parse("f", &bson!({"$sum": [1]}), &vars).unwrap_err();
        assert_eq!(
            (err.code().code(), err.message()),
            (40237, "The $sum accumulator is a unary operator")
        );
        // The array check comes before the name lookup.
        assert_eq!(code(bson!({"$foo": [1]})), 40237);
        let err = Accumulator::parse("f", &bson!({"$foo": 1}), &vars).unwrap_err();
        assert_eq!(
            (err.code().code(), err.message()),
            (15952, "unknown group operator '$foo'")
        );
        assert_eq!(code(bson!({"$count": 1})), 14);
        assert_eq!(code(bson!({"$sum": "$"})), 16872);
    }

    #[test]
    fn group_stage_reports_accumulator_errors() {
        assert_eq!(
            group_error(bson!({"_id": null, "x": {"$bogus": "$a"}}), &[]),
            (15952, "unknown group operator '$bogus'".into())
        );
        assert_eq!(
            group_error(bson!({"_id": null, "x": {"$sum": 1, "$max": 1}}), &[]).0,
            40238
        );
        assert_eq!(
            group_error(bson!({"_id": null, "x": {"sum": 1}}), &[]),
            (40234, "The field 'x' must be an accumulator object".into())
        );
    }

    #[test]
    fn output_puts_id_first() {
        let vars = no_variables();
        let accs = vec![
            Accumulator::parse("n", &bson!({"$sum": 1}), &vars).unwrap(),
            Accumulator::parse("a", &bson!({"$first": 1}), &vars).unwrap(),
        ];
        let empty = Document::new();
        let key_vars = vars.variables(&empty);
        let states = accs.iter().map(|a| a.start(&key_vars).unwrap()).collect();
        assert_eq!(
            group_output(Bson::Null, &accs, states),
            doc! {"_id": null, "n": 0, "a": null}
        );
    }
}
