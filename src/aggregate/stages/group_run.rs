//! A `$group` while documents arrive: groups in a hash table (in order of first appearance),
//! their memory counted (keys and accumulator states) against
//! `internalDocumentSourceGroupMaxMemoryBytes`. Past the limit, with disk use allowed, the
//! groups are written sorted by key with their partial states to a run file and the table
//! starts over; at the end the runs are merged by key (each key's partials folded in run
//! order, so `$first`, `$last` and `$push` keep arrival order) and the groups come out in key
//! order. Without disk use, QueryExceededMemoryLimitNoDiskUseAllowed. The run does not borrow
//! its `$group` (each call is given it), so that a cursor can keep it between batches.

use super::RunContext;
use super::group::Group;
use crate::aggregate::accumulators::{STATE_OVERHEAD, State};
use crate::document::order::{canonical_rank, compare_collated};
use crate::error::{ErrorCode, MongoError, Result};
use crate::expression::numeric::to_f64;
use crate::spill::{RunFile, RunReader, approximate_value_size};
use bson::{Bson, Document, doc};
use std::cmp::Ordering;
use std::collections::HashMap;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

/// What a group costs beyond its key and states (table entry, hash bucket).
const GROUP_OVERHEAD: usize = 64;

/// A `$group` accumulating.
#[derive(Default)]
pub struct GroupRun {
    groups: Vec<(Bson, Vec<State>)>,
    by_hash: HashMap<u64, Vec<usize>>,
    bytes: usize,
    runs: Vec<RunFile>,
}

impl GroupRun {
    pub fn new() -> GroupRun {
        GroupRun {
            groups: Vec::new(),
            by_hash: HashMap::new(),
            bytes: 0,
            runs: Vec::new(),
        }
    }

    /// Adds one document to its group; a missing key groups with null.
    pub fn push(&mut self, group: &Group, doc: &Document, ctx: &RunContext) -> Result<()> {
        let vars = ctx.variables(doc);
        let key = group.id.evaluate(&vars)?.unwrap_or(Bson::Null);
        // Under a collation, keys whose strings it holds equal are one group (the first key
        // seen names it): hashed by their collation keys, compared by the collation.
        let collation = ctx.vars.collation();
        let hash = match collation {
            Some(collation) => key_hash(&collation.comparison_key(&key)),
            None => key_hash(&key),
        };
        let candidates = self.by_hash.entry(hash).or_default();
        let groups = &mut self.groups;
        let existing = candidates.iter().copied().find(|&i| {
            groups
                .get(i)
                .is_some_and(|(seen, _)| compare_collated(seen, &key, collation).is_eq())
        });
        let position = match existing {
            Some(i) => i,
            None => {
                let states = group.start_group(&key, ctx)?;
                self.bytes +=
                    GROUP_OVERHEAD + approximate_value_size(&key) + STATE_OVERHEAD * states.len();
                candidates.push(groups.len());
                groups.push((key, states));
                groups.len() - 1
            }
        };
        let Some((_, states)) = groups.get_mut(position) else {
            return Ok(());
        };
        let mut growth = 0;
        for (acc, state) in group.accumulators.iter().zip(states.iter_mut()) {
            growth += if group.doing_merge {
                state.merge_measured(acc.merge_argument().evaluate(&vars)?)?
            } else {
                state.process_measured(acc.argument().evaluate(&vars)?)?
            };
        }
        self.bytes = self.bytes.saturating_add_signed(growth);
        if self.bytes > ctx.limits.max_group_bytes {
            self.spill(ctx)?;
        }
        Ok(())
    }

    /// Writes the groups, sorted by key, with their partial states to a run, and empties the
    /// table.
    fn spill(&mut self, ctx: &RunContext) -> Result<()> {
        let Some(dir) = ctx.limits.disk() else {
            return Err(MongoError::new(
                ErrorCode::QueryExceededMemoryLimitNoDiskUseAllowed,
                "Exceeded memory limit for $group, but didn't allow external sort. Pass allowDiskUse:true to opt in.",
            ));
        };
        let mut groups = std::mem::take(&mut self.groups);
        self.by_hash.clear();
        self.bytes = 0;
        let collation = ctx.vars.collation();
        groups.sort_by(|a, b| compare_collated(&a.0, &b.0, collation));
        let entries = groups.into_iter().map(|(key, states)| {
            let partials: Vec<Bson> = states.into_iter().map(State::partial).collect();
            doc! {"k": key, "s": partials}
        });
        self.runs.push(RunFile::write(dir, entries)?);
        Ok(())
    }

    /// The groups: in memory in order of first appearance, or merged from the runs in key
    /// order.
    pub fn finish(mut self, group: &Group, ctx: &RunContext) -> Result<GroupOutput> {
        if self.runs.is_empty() {
            let docs: Vec<Document> = self
                .groups
                .into_iter()
                .map(|(key, states)| group.output(key, states))
                .collect();
            return Ok(GroupOutput::Memory(docs.into_iter()));
        }
        if !self.groups.is_empty() {
            self.spill(ctx)?;
        }
        let mut heads = Vec::with_capacity(self.runs.len());
        for run in std::mem::take(&mut self.runs) {
            let mut head = Head {
                reader: run.into_reader()?,
                current: None,
            };
            head.advance()?;
            heads.push(head);
        }
        Ok(GroupOutput::Merged(GroupMerge { heads }))
    }
}

/// A `$group`'s output as it is read.
pub enum GroupOutput {
    Memory(std::vec::IntoIter<Document>),
    Merged(GroupMerge),
}

impl GroupOutput {
    /// The next group of `group` (the stage this output is of).
    pub fn next_doc(&mut self, group: &Group, ctx: &RunContext) -> Result<Option<Document>> {
        match self {
            GroupOutput::Memory(docs) => Ok(docs.next()),
            GroupOutput::Merged(merge) => merge.next_doc(group, ctx),
        }
    }
}

/// Spilled groups merged by key.
pub struct GroupMerge {
    heads: Vec<Head>,
}

struct Head {
    reader: RunReader,
    /// The run's next group: its key and partial states.
    current: Option<(Bson, Vec<Bson>)>,
}

impl Head {
    fn advance(&mut self) -> Result<()> {
        self.current = match self.reader.next_doc()? {
            Some(mut entry) => {
                let key = entry.remove("k").unwrap_or(Bson::Null);
                let Some(Bson::Array(partials)) = entry.remove("s") else {
                    return Err(MongoError::internal("a spilled group has no states"));
                };
                Some((key, partials))
            }
            None => None,
        };
        Ok(())
    }
}

impl GroupMerge {
    fn next_doc(&mut self, group: &Group, ctx: &RunContext) -> Result<Option<Document>> {
        // The smallest key; on ties the earliest run, whose key spelling (1 or 1.0) the
        // group keeps, as it kept the first one seen.
        let collation = ctx.vars.collation();
        let mut smallest: Option<&Bson> = None;
        for head in &self.heads {
            if let Some((key, _)) = &head.current {
                if smallest
                    .is_none_or(|best| compare_collated(key, best, collation) == Ordering::Less)
                {
                    smallest = Some(key);
                }
            }
        }
        let Some(key) = smallest.cloned() else {
            return Ok(None);
        };
        let mut states = group.start_group(&key, ctx)?;
        for head in &mut self.heads {
            let same = matches!(&head.current, Some((k, _)) if compare_collated(k, &key, collation).is_eq());
            if !same {
                continue;
            }
            let (_, partials) = head.current.take().expect("checked");
            for (state, partial) in states.iter_mut().zip(partials) {
                state.merge(Some(partial))?;
            }
            head.advance()?;
        }
        Ok(Some(group.output(key, states)))
    }
}

/// A hash that agrees with MongoDB equality: numbers hash by value whatever their type, and
/// string and symbol alike; the equality check on collision decides.
fn key_hash(value: &Bson) -> u64 {
    let mut hasher = DefaultHasher::new();
    hash_value(value, &mut hasher);
    hasher.finish()
}

fn hash_value(value: &Bson, hasher: &mut DefaultHasher) {
    canonical_rank(value).hash(hasher);
    match value {
        Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_) => {
            let number = to_f64(value);
            let normalized = if number.is_nan() {
                f64::NAN.to_bits()
            } else if number == 0.0 {
                0
            } else {
                number.to_bits()
            };
            normalized.hash(hasher);
        }
        Bson::String(s) | Bson::Symbol(s) => s.hash(hasher),
        Bson::Document(doc) => {
            for (name, field) in doc {
                name.hash(hasher);
                hash_value(field, hasher);
            }
        }
        Bson::Array(items) => {
            for item in items {
                hash_value(item, hasher);
            }
        }
        Bson::Boolean(b) => b.hash(hasher),
        Bson::ObjectId(oid) => oid.bytes().hash(hasher),
        Bson::DateTime(date) => date.timestamp_millis().hash(hasher),
        Bson::Timestamp(ts) => (ts.time, ts.increment).hash(hasher),
        Bson::Binary(binary) => binary.bytes.hash(hasher),
        Bson::RegularExpression(regex) => regex.pattern.hash(hasher),
        Bson::JavaScriptCode(code) => code.hash(hasher),
        // Null, undefined, MinKey and MaxKey are fully described by their rank.
        _ => {}
    }
}
