//! Rules that propose a reason and issue for a failure when the expectations draft is recorded:
//! the first rule whose needle occurs in `file | test | failure message` wins. The draft is
//! reviewed before it becomes `expectations.toml`; issue numbers follow the project's issues
//! (4: storage engine, query language, indexes, bulk write, collection options; 5: sharding
//! administration; 6: aggregation stages; 7: DDL such as collMod and renameCollection across
//! databases), "none" marks work that is not scheduled yet.

/// (needle, reason, issue number or "none").
pub const RULES: &[(&str, &str, &str)] = &[
    // A test that answers NotImplemented for collation is not the silent-ignore bug.
    (
        "Error code 238 (NotImplemented): only the simple collation is supported",
        "collation is not implemented yet",
        "4",
    ),
    // The same answer as a write error of the runner's collection-level bulk write.
    (
        "\"errmsg\": \"only the simple collation is supported\"",
        "collation is not implemented yet",
        "4",
    ),
    // Server bugs found by the runner.
    (
        "crud/insertOne-dots_and_dollars | Inserting document with dollar-prefixed key in _id",
        "server bug: an _id holding a $-prefixed field name is accepted (MongoDB rejects it)",
        "none",
    ),
    (
        "-collation |",
        "server bug: collation is silently ignored by update/delete/findAndModify/distinct/aggregate (find answers NotImplemented); collation support comes with the query engine",
        "4",
    ),
    (
        "crud/updateOne-sort |",
        "server bug: updateOne's sort option (8.0) is silently ignored, so the wrong document is updated",
        "4",
    ),
    (
        "crud/replaceOne-sort |",
        "server bug: replaceOne's sort option (8.0) is silently ignored, so the wrong document is replaced",
        "4",
    ),
    // Failures named by their message: what is missing in the server.
    (
        "showRecordId and returnKey",
        "find ignores showRecordId and returnKey",
        "4",
    ),
    (
        "no such command: 'commitTransaction'",
        "transactions are not implemented (commitTransaction/abortTransaction): not scheduled yet",
        "none",
    ),
    (
        "afterClusterTime",
        "causal consistency is not implemented (no operationTime/$clusterTime, so no afterClusterTime): not scheduled yet",
        "none",
    ),
    (
        "`$clusterTime`: expected to exist",
        "causal consistency is not implemented (replies carry no $clusterTime): not scheduled yet",
        "none",
    ),
    (
        "$changeStream aggregation stage",
        "change streams are not implemented: not scheduled yet",
        "none",
    ),
    (
        "failGetMoreAfterCursorCheckout",
        "change streams are not implemented (nor their failGetMoreAfterCursorCheckout fail point): not scheduled yet",
        "none",
    ),
    (
        "changeStreamPreAndPostImages",
        "change stream pre- and post-images are not implemented: not scheduled yet",
        "none",
    ),
    (
        "APIStrictError",
        "Stable API strict mode (APIStrictError) is not implemented: not scheduled yet",
        "none",
    ),
    (
        "no such command: 'bulkWrite'",
        "the bulkWrite command (client bulk write) is not implemented yet",
        "4",
    ),
    (
        "no such command: 'createIndexes'",
        "createIndexes is not implemented yet",
        "4",
    ),
    (
        "no such command: 'dropIndexes'",
        "dropIndexes is not implemented yet",
        "4",
    ),
    (
        "no such command: 'collMod'",
        "collMod (modifyCollection) is not implemented yet",
        "7",
    ),
    (
        "no such command: 'mapReduce'",
        "mapReduce (server-side JavaScript map/reduce functions) is not implemented: not scheduled yet",
        "none",
    ),
    (
        "create option 'clusteredIndex'",
        "clustered collections are not implemented yet",
        "4",
    ),
    (
        "pipeline-style updates are not supported",
        "pipeline-style updates need the aggregation pipeline",
        "6",
    ),
    (
        "$expr is not supported yet",
        "let variables and $expr need the aggregation expression engine",
        "6",
    ),
    (
        "The $out aggregation stage",
        "$out is not implemented yet",
        "6",
    ),
    (
        "The $merge aggregation stage",
        "$merge is not implemented yet",
        "6",
    ),
    (
        "create option 'viewOn'",
        "views are not implemented yet (they need the aggregation pipeline)",
        "6",
    ),
    (
        "no such command: 'checkMetadataConsistency'",
        "checkMetadataConsistency is not implemented yet",
        "5",
    ),
    (
        "create option 'timeseries'",
        "time series collections are not implemented: not scheduled yet",
        "none",
    ),
    (
        "create option 'capped'",
        "capped collections are not implemented: not scheduled yet",
        "none",
    ),
    // Whole areas that are not implemented (their other failures).
    (
        "transactions/",
        "transactions are not implemented (writes are not isolated or rolled back, no transaction error labels): not scheduled yet",
        "none",
    ),
    (
        "transactions-convenient-api/",
        "transactions are not implemented (withTransaction cannot commit or abort): not scheduled yet",
        "none",
    ),
    (
        "versioned-api/transaction-handling",
        "transactions are not implemented: not scheduled yet",
        "none",
    ),
    (
        "sessions/snapshot-sessions",
        "snapshot reads (readConcern snapshot, atClusterTime) are not implemented: not scheduled yet",
        "none",
    ),
    (
        "retryable-writes/",
        "retryable writes are not deduplicated (a retry after a writeConcernError applies the write twice): not scheduled yet",
        "none",
    ),
    (
        "change-streams/",
        "change streams are not implemented: not scheduled yet",
        "none",
    ),
    (
        "versioned-api/test-commands-strict-mode",
        "Stable API strict mode (APIStrictError) is not implemented: not scheduled yet",
        "none",
    ),
];
