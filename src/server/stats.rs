//! Counters behind `serverStatus`: connections, network traffic, opcounters, TTL metrics,
//! index builds.

use super::ingress::{DEFAULT_MAX_INCOMING_CONNECTIONS, Ingress};
use bson::{Document, doc};
use std::sync::atomic::{AtomicI64, Ordering::Relaxed};
use std::sync::{Arc, OnceLock};

/// Process-wide counters, updated with relaxed atomics on the request path.
#[derive(Debug, Default)]
pub struct Stats {
    pub connections_current: AtomicI64,
    pub connections_total: AtomicI64,
    pub connections_active: AtomicI64,
    pub bytes_in: AtomicI64,
    pub bytes_out: AtomicI64,
    pub requests: AtomicI64,
    pub op_insert: AtomicI64,
    pub op_query: AtomicI64,
    pub op_update: AtomicI64,
    pub op_delete: AtomicI64,
    pub op_getmore: AtomicI64,
    pub op_command: AtomicI64,
    pub ttl_passes: AtomicI64,
    pub ttl_deleted_documents: AtomicI64,
    /// Router: retries after a shard answered StaleConfig (`shardingStatistics`).
    pub stale_config_retries: AtomicI64,
    /// Routing table loads of a sharded collection from scratch (router).
    pub full_refreshes: AtomicI64,
    /// Routing table refreshes that read only the chunks changed since the cached version.
    pub incremental_refreshes: AtomicI64,
    /// Index builds over existing documents (shard): `serverStatus.indexBulkBuilder`.
    pub index_builds: AtomicI64,
    pub index_build_keys_sorted: AtomicI64,
    pub index_build_spilled_runs: AtomicI64,
    /// Retryable write commands with a statement already executed (`serverStatus.transactions`).
    pub retried_commands: AtomicI64,
    /// Statements of retryable writes answered from their record.
    pub retried_statements: AtomicI64,
    /// Writes to the transaction table (one per recorded command or database of one).
    pub transactions_collection_writes: AtomicI64,
    /// A data node's multi-document transactions (`serverStatus.transactions`).
    pub txn: TransactionCounters,
    /// A shard's chunk migrations (`serverStatus.shardingStatistics`).
    pub migrations: MigrationCounters,
    /// The admission of the process's listener, once this node listens.
    ingress: OnceLock<Arc<Ingress>>,
}

/// A shard's chunk migrations, as donor and as recipient, and its range deletions, under
/// MongoDB's `shardingStatistics` names.
#[derive(Debug, Default)]
pub struct MigrationCounters {
    pub donor_started: AtomicI64,
    pub donor_committed: AtomicI64,
    pub donor_aborted: AtomicI64,
    pub donor_millis: AtomicI64,
    pub donor_clone_millis: AtomicI64,
    pub critical_section_millis: AtomicI64,
    pub critical_section_commit_millis: AtomicI64,
    pub docs_cloned_on_donor: AtomicI64,
    pub recipient_started: AtomicI64,
    pub recipient_critical_section_millis: AtomicI64,
    pub docs_cloned_on_recipient: AtomicI64,
    pub bytes_cloned_on_recipient: AtomicI64,
    pub docs_caught_up_on_recipient: AtomicI64,
    pub docs_deleted_by_range_deleter: AtomicI64,
}

impl MigrationCounters {
    fn insert_into(&self, out: &mut Document) {
        for (name, value) in [
            ("countDonorMoveChunkStarted", &self.donor_started),
            ("countDonorMoveChunkCommitted", &self.donor_committed),
            ("countDonorMoveChunkAborted", &self.donor_aborted),
            ("totalDonorMoveChunkTimeMillis", &self.donor_millis),
            ("totalDonorChunkCloneTimeMillis", &self.donor_clone_millis),
            (
                "totalCriticalSectionTimeMillis",
                &self.critical_section_millis,
            ),
            (
                "totalCriticalSectionCommitTimeMillis",
                &self.critical_section_commit_millis,
            ),
            ("countDocsClonedOnDonor", &self.docs_cloned_on_donor),
            ("countRecipientMoveChunkStarted", &self.recipient_started),
            (
                "totalRecipientCriticalSectionTimeMillis",
                &self.recipient_critical_section_millis,
            ),
            ("countDocsClonedOnRecipient", &self.docs_cloned_on_recipient),
            (
                "countBytesClonedOnRecipient",
                &self.bytes_cloned_on_recipient,
            ),
            (
                "countDocsClonedOnCatchUpOnRecipient",
                &self.docs_caught_up_on_recipient,
            ),
            (
                "countDocsDeletedByRangeDeleter",
                &self.docs_deleted_by_range_deleter,
            ),
        ] {
            out.insert(name, value.load(Relaxed));
        }
    }
}

/// A data node's multi-document transactions: open ones, those running a command, prepared
/// ones, and totals.
#[derive(Debug, Default)]
pub struct TransactionCounters {
    pub open: AtomicI64,
    pub active: AtomicI64,
    pub prepared: AtomicI64,
    pub started: AtomicI64,
    pub committed: AtomicI64,
    pub aborted: AtomicI64,
    pub prepared_total: AtomicI64,
    pub prepared_then_committed: AtomicI64,
    pub prepared_then_aborted: AtomicI64,
}

/// Which opcounter a command feeds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpCounter {
    Command,
    Query,
    GetMore,
    /// insert/update/delete count one per statement, inside the handler.
    PerStatement,
}

impl Stats {
    pub fn count(&self, counter: OpCounter) {
        match counter {
            OpCounter::Command => self.op_command.fetch_add(1, Relaxed),
            OpCounter::Query => self.op_query.fetch_add(1, Relaxed),
            OpCounter::GetMore => self.op_getmore.fetch_add(1, Relaxed),
            OpCounter::PerStatement => 0,
        };
    }

    pub fn add(counter: &AtomicI64, n: i64) {
        counter.fetch_add(n, Relaxed);
    }

    /// Ties the node to the admission of the listener serving it.
    pub fn attach_ingress(&self, ingress: Arc<Ingress>) {
        let _ = self.ingress.set(ingress);
    }

    /// `serverStatus.connections`, with MongoDB 8.0's fields: `available` is the limit less
    /// the process's open connections; docgrid has no exhaust or awaitable hello, hence zeros.
    pub fn connections(&self, router: bool) -> Document {
        let current = self.connections_current.load(Relaxed);
        let (max, open, rejected) = match self.ingress.get() {
            Some(ingress) => (
                ingress.max_connections() as i64,
                ingress.open() as i64,
                ingress.rejected(),
            ),
            None => (DEFAULT_MAX_INCOMING_CONNECTIONS as i64, current, 0),
        };
        let mut connections = doc! {
            "current": current as i32,
            "available": (max - open).max(0) as i32,
            "totalCreated": self.connections_total.load(Relaxed) as i32,
            "rejected": rejected as i32,
            "active": self.connections_active.load(Relaxed) as i32,
            "threaded": current as i32,
            "exhaustIsMaster": 0_i64,
            "exhaustHello": 0_i64,
            "awaitingTopologyChanges": 0_i64,
        };
        if router {
            connections.insert("loadBalanced", 0_i64);
        }
        connections
    }

    /// docgrid's own limits (`serverStatus.docgrid`): the connection limit in force and the
    /// memory incoming messages hold.
    pub fn ingress(&self) -> Document {
        match self.ingress.get() {
            Some(ingress) => doc! {
                "maxIncomingConnections": ingress.max_connections() as i64,
                "ingressMessageBytes": ingress.limits.budget.in_use() as i64,
                "ingressMessageMemoryLimitBytes": ingress.limits.budget.limit() as i64,
            },
            None => doc! {"maxIncomingConnections": DEFAULT_MAX_INCOMING_CONNECTIONS as i64},
        }
    }

    pub fn network(&self) -> Document {
        doc! {
            "bytesIn": self.bytes_in.load(Relaxed),
            "bytesOut": self.bytes_out.load(Relaxed),
            "numRequests": self.requests.load(Relaxed),
        }
    }

    /// `metrics` (the parts this server counts).
    pub fn metrics(&self) -> Document {
        doc! {
            "ttl": {
                "passes": self.ttl_passes.load(Relaxed),
                "deletedDocuments": self.ttl_deleted_documents.load(Relaxed),
            },
        }
    }

    /// `serverStatus.indexBulkBuilder` (the parts this server counts).
    pub fn index_bulk_builder(&self) -> Document {
        doc! {
            "count": self.index_builds.load(Relaxed),
            "numSorted": self.index_build_keys_sorted.load(Relaxed),
            "spilledRanges": self.index_build_spilled_runs.load(Relaxed),
        }
    }

    /// `serverStatus.shardingStatistics`.
    pub fn sharding_statistics(&self) -> Document {
        let mut out = doc! {
            "countStaleConfigErrors": self.stale_config_retries.load(Relaxed),
        };
        self.migrations.insert_into(&mut out);
        out.insert(
            "catalogCache",
            doc! {
                "countFullRefreshesStarted": self.full_refreshes.load(Relaxed),
                "countIncrementalRefreshesStarted": self.incremental_refreshes.load(Relaxed),
            },
        );
        out
    }

    /// `serverStatus.transactions` of a mongod: the retryable-write and transaction counters.
    pub fn transactions(&self) -> Document {
        let t = &self.txn;
        let open = t.open.load(Relaxed);
        let active = t.active.load(Relaxed);
        doc! {
            "retriedCommandsCount": self.retried_commands.load(Relaxed),
            "retriedStatementsCount": self.retried_statements.load(Relaxed),
            "transactionsCollectionWriteCount": self.transactions_collection_writes.load(Relaxed),
            "currentActive": active,
            "currentInactive": (open - active).max(0),
            "currentOpen": open,
            "totalAborted": t.aborted.load(Relaxed),
            "totalCommitted": t.committed.load(Relaxed),
            "totalStarted": t.started.load(Relaxed),
            "totalPrepared": t.prepared_total.load(Relaxed),
            "totalPreparedThenCommitted": t.prepared_then_committed.load(Relaxed),
            "totalPreparedThenAborted": t.prepared_then_aborted.load(Relaxed),
            "currentPrepared": t.prepared.load(Relaxed),
        }
    }

    pub fn opcounters(&self) -> Document {
        doc! {
            "insert": self.op_insert.load(Relaxed),
            "query": self.op_query.load(Relaxed),
            "update": self.op_update.load(Relaxed),
            "delete": self.op_delete.load(Relaxed),
            "getmore": self.op_getmore.load(Relaxed),
            "command": self.op_command.load(Relaxed),
        }
    }
}
