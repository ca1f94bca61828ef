//! A query's executed plan as its profile entry's `execStats` shows it: explain's stage tree
//! (`explain::StageTree`) with what the query has done so far. A cursor keeps it between
//! batches, so that, as MongoDB's plan stages do, the statistics add up over its `getMore`s.

use super::explain::{Execution, ExplainedQuery, StageTree, WriteStage};
use super::plan::AccessPath;
use super::position::Position;
use crate::query::sort::SortSpec;
use bson::{Document, doc};
use std::time::{Duration, Instant};

/// What the stage tree of a query needs, owned.
#[derive(Clone, Debug)]
pub struct PlanStats {
    path: AccessPath,
    filter: Document,
    sort: Option<Document>,
    /// The sort is done in memory (the access path does not deliver it).
    blocking_sort: bool,
    skip: u64,
    limit: Option<u64>,
    projection: Option<Document>,
    sharded: bool,
    covered: bool,
    /// Time spent running the plan, over every batch.
    elapsed: Duration,
}

impl PlanStats {
    /// The plan of `position` reading the matches of `filter`, with nothing above the scan.
    pub fn for_filter(position: &Position, filter: &Document) -> PlanStats {
        PlanStats {
            path: position.path().clone(),
            filter: filter.clone(),
            sort: None,
            blocking_sort: false,
            skip: 0,
            limit: None,
            projection: None,
            sharded: position.filters_orphans(),
            covered: position.is_covered(),
            elapsed: Duration::ZERO,
        }
    }

    /// Adds a find's stages above the scan: its sort (`blocking` when done in memory), skip,
    /// limit and projection.
    pub fn with_find_stages(
        mut self,
        sort: Option<Document>,
        blocking: bool,
        skip: u64,
        limit: Option<u64>,
        projection: Option<Document>,
    ) -> PlanStats {
        self.sort = sort;
        self.blocking_sort = blocking;
        self.skip = skip;
        self.limit = limit;
        self.projection = projection;
        self
    }

    /// Counts `spent` as time the plan ran.
    pub fn add_time(&mut self, spent: Duration) {
        self.elapsed += spent;
    }

    /// The stage tree after `run` (its time is the plan's own).
    pub fn tree(&self, mut run: Execution) -> StageTree {
        run.millis = self.elapsed.as_millis() as u64;
        let query = ExplainedQuery {
            path: &self.path,
            filter: &self.filter,
            sort: self.sort.as_ref(),
            blocking_sort: self.blocking_sort,
            skip: self.skip,
            limit: self.limit,
            projection: self.projection.as_ref(),
            sharded: self.sharded,
            covered: self.covered,
        };
        StageTree::for_query(&query, &run)
    }

    /// `execStats` after `run`.
    pub fn to_document(&self, run: Execution) -> Document {
        self.tree(run).to_document(true)
    }

    /// The read of a write through `position` since `started`, `matched` of its matches
    /// taken, in `sort` order when it had one (done in memory, keeping the first match, when
    /// the access path does not deliver it); `None` unless the running operation is profiled.
    pub fn of_write(
        position: &Position,
        query: &Document,
        sort: Option<&SortSpec>,
        matched: u64,
        started: Instant,
    ) -> Option<WriteRead> {
        if !crate::server::operations::wants_exec_stats() {
            return None;
        }
        let mut plan = PlanStats::for_filter(position, query);
        if let Some(sort) = sort.filter(|s| !s.is_empty()) {
            let pattern: Document = sort
                .fields()
                .map(|(path, ascending)| {
                    (path.to_string(), (if ascending { 1 } else { -1 }).into())
                })
                .collect();
            let blocking = !position.path().provides_sort();
            plan = plan.with_find_stages(Some(pattern), blocking, 0, Some(1), None);
        }
        plan.add_time(started.elapsed());
        Some(WriteRead {
            plan,
            run: position.execution(matched),
        })
    }
}

/// `execStats` of a read of a collection that does not exist: EOF, as explain shows it.
pub fn no_collection() -> Document {
    let mut tree = StageTree::empty();
    tree.push("EOF", Document::new(), 0, Document::new());
    tree.to_document(true)
}

/// A write's read, kept for the write's profile entry.
pub struct WriteRead {
    plan: PlanStats,
    run: Execution,
}

impl WriteRead {
    /// Gives the running operation its `execStats`: the read's stages with `write` on top.
    pub fn note(self, write: WriteStage) {
        let examined = self.run.examined;
        let mut tree = self.plan.tree(self.run);
        tree.push_write(write, examined);
        crate::server::operations::set_exec_stats(|| Some(tree.to_document(true)));
    }
}

/// An `UPDATE` stage's statistics, as explain names them for a write that ran too.
pub fn update_stats(matched: u64, modified: u64, upserted: bool) -> Document {
    use super::explain::number;
    doc! {
        "nMatched": number(matched),
        "nWouldModify": number(modified),
        "nWouldUpsert": number(upserted as u64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datanode::exec::Examined;
    use bson::doc;

    #[test]
    fn stages_show_what_the_query_did_so_far() {
        let position = Position::with_path(AccessPath::CollScan { reverse: false });
        let plan = PlanStats::for_filter(&position, &doc! {"a": {"$gt": 1}}).with_find_stages(
            None,
            false,
            1,
            Some(2),
            Some(doc! {"a": 1}),
        );
        let run = Execution {
            examined: Examined {
                docs: 5,
                ..Examined::default()
            },
            matched: 3,
            ..Execution::default()
        };
        let stats = plan.to_document(run);
        assert_eq!(stats.get_str("stage"), Ok("PROJECTION_SIMPLE"));
        assert_eq!(stats.get_i32("nReturned"), Ok(2));
        let limit = stats.get_document("inputStage").unwrap();
        assert_eq!(limit.get_str("stage"), Ok("LIMIT"));
        let skip = limit.get_document("inputStage").unwrap();
        assert_eq!(
            (skip.get_str("stage"), skip.get_i32("nReturned")),
            (Ok("SKIP"), Ok(2))
        );
        let scan = skip.get_document("inputStage").unwrap();
        assert_eq!(scan.get_str("stage"), Ok("COLLSCAN"));
        assert_eq!(
            (scan.get_i32("nReturned"), scan.get_i32("docsExamined")),
            (Ok(3), Ok(5))
        );
        assert_eq!(scan.get_document("filter"), Ok(&doc! {"a": {"$gt": 1}}));
    }

    #[test]
    fn a_missing_collection_is_read_by_eof() {
        let eof = no_collection();
        assert_eq!(eof.get_str("stage"), Ok("EOF"));
        assert_eq!(eof.get_i32("nReturned"), Ok(0));
        assert!(!eof.contains_key("inputStage"));
    }

    #[test]
    fn a_blocking_sort_shows_what_it_passed_up() {
        let position = Position::with_path(AccessPath::CollScan { reverse: false });
        let plan = PlanStats::for_filter(&position, &doc! {}).with_find_stages(
            Some(doc! {"a": 1}),
            true,
            0,
            None,
            None,
        );
        let run = Execution {
            matched: 10,
            sorted_out: Some(4),
            ..Execution::default()
        };
        let stats = plan.to_document(run);
        assert_eq!(
            (stats.get_str("stage"), stats.get_i32("nReturned")),
            (Ok("SORT"), Ok(4))
        );
        let scan = stats.get_document("inputStage").unwrap();
        assert_eq!(scan.get_i32("nReturned"), Ok(10));
    }
}
