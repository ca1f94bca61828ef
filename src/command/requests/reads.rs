//! The read commands' requests (find, aggregate, count, distinct, getMore, killCursors), their
//! fields as MongoDB 8.0's IDL declares them (`find_command.idl`, `aggregate.idl`,
//! `count_command.idl`, `distinct_command.idl`, `getmore_command.idl`,
//! `kill_cursors.idl`), internal ones included so no router or driver request is refused.

use super::command_request;
use bson::Document;

command_request! {
    /// `find`: the options router and shards both read, with the same checks.
    pub struct FindRequest("find") {
        filter: Option<Document> = "filter" via document,
        projection: Option<Document> = "projection" via document,
        sort: Option<Document> = "sort" via document,
        /// `>= 0` (MongoDB's IDL validator: 51024).
        skip: Option<i64> = "skip" via non_negative,
        /// `>= 0` (MongoDB's IDL validator: 51024); 0 is no limit.
        limit: Option<i64> = "limit" via non_negative,
        batch_size: Option<i64> = "batchSize" via non_negative,
        single_batch: Option<bool> = "singleBatch" via bool,
        allow_partial_results: Option<bool> = "allowPartialResults" via bool,
        no_cursor_timeout: Option<bool> = "noCursorTimeout" via bool,
        tailable: Option<bool> = "tailable" via bool,
        await_data: Option<bool> = "awaitData" via bool,
        return_key: Option<bool> = "returnKey" via bool,
        show_record_id: Option<bool> = "showRecordId" via bool,
        allow_disk_use: Option<bool> = "allowDiskUse" via bool,
        min: Option<Document> = "min" via document,
        max: Option<Document> = "max" via document,
    }
    known: [
        "hint", "collation", "let", "oplogReplay", "readOnce", "allowSpeculativeMajorityRead",
        "requestResumeToken", "resumeAfter", "startAt", "$_requestResumeToken", "$_resumeAfter",
        "$_startAt", "term", "includeQueryStatsMetrics", "encryptionInformation",
        "isTimeseriesNamespace", "rawData", "ntoreturn", "querySettings", "needsMerge",
        "$_isSearchQuery", "$_internalReadAtClusterTime", "collectionUUID"
    ]
}

command_request! {
    /// `aggregate`.
    pub struct AggregateRequest("aggregate") {
    }
    known: [
        "explain", "allowDiskUse", "bypassDocumentValidation", "pipeline", "cursor", "collation",
        "hint", "let", "fromMongos", "fromRouter", "needsMerge", "needs46Merge", "mergeByPBRT",
        "exchange", "collectionUUID", "isMapReduceCommand", "$_requestReshardingResumeToken",
        "$_generateV2ResumeTokens", "$_passthroughToShard", "passthroughToShard",
        "encryptionInformation", "isClusterQueryWithoutShardKeyCmd", "includeQueryStatsMetrics",
        "rawData", "isHybridSearch", "$_isSearchQuery", "querySettings", "$doingMerge",
        "$_internalReadAtClusterTime", "$_requestResumeToken", "$_resumeAfter"
    ]
}

command_request! {
    /// `count`.
    pub struct CountRequest("count") {
        query: Option<Document> = "query" via document,
        skip: Option<i64> = "skip" via non_negative,
        limit: Option<i64> = "limit" via i64,
    }
    known: [
        "hint", "collation", "fields", "encryptionInformation", "mirrored",
        "sampleId", "rawData", "isTimeseriesNamespace", "querySettings"
    ]
}

impl CountRequest {
    /// The number of documents to count at most: a negative limit counts like its absolute
    /// value, as in MongoDB; 0 is no limit.
    pub fn count_limit(&self) -> Option<u64> {
        self.limit.map(i64::unsigned_abs).filter(|l| *l > 0)
    }
}

command_request! {
    /// `distinct`.
    pub struct DistinctRequest("distinct") {
    }
    known: [
        "key", "query", "collation", "hint", "mirrored", "sampleId", "rawData",
        "isTimeseriesNamespace", "querySettings", "includeQueryStatsMetrics"
    ]
}

command_request! {
    /// `getMore`'s fields (`GetMore` holds its parse and checks).
    pub struct GetMoreRequest("getMore") {
    }
    known: [
        "collection", "batchSize", "term", "lastKnownCommittedOpTime", "includeQueryStatsMetrics",
        "rawData"
    ]
}

command_request! {
    /// `killCursors`'s fields (`KillCursors` holds its parse and checks).
    pub struct KillCursorsRequest("killCursors") {
    }
    known: ["cursors"]
}
