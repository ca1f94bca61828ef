//! The data commands every data node serves (shard and config server alike, through
//! [`DataNode`]): CRUD, queries and cursors, aggregation, explain, and the collection, index and
//! database catalog commands, one file per command family.

mod aggregate;
mod bulk_write;
mod coll_mod;
pub(crate) mod collections;
mod count;
mod databases;
mod delete;
mod explain;
mod find;
mod find_and_modify;
mod indexes;
mod insert;
#[doc(hidden)]
pub mod parsers;
mod profile;
mod sources;
mod transactions;
mod update;
mod write;

pub use find::cursor_reply;

use super::DataNode;
use crate::command::requests;
use crate::server::CommandSpec;
use crate::server::stats::OpCounter;

/// CRUD, catalog and database commands over a node's storage.
pub fn data_commands<S: DataNode>() -> Vec<CommandSpec<S>> {
    let mut specs = specs();
    for spec in &mut specs {
        if WRITES.contains(&spec.name) {
            retry_write_conflicts(spec);
        }
    }
    specs
}

/// The writes that meet transactions' documents.
const WRITES: &[&str] = &["insert", "update", "delete", "findAndModify", "bulkWrite"];

/// `spec`'s handler, run again while it meets a document a transaction holds
/// (`write::retry_write_conflicts`).
fn retry_write_conflicts<S: DataNode>(spec: &mut CommandSpec<S>) {
    let handler = spec.handler.clone();
    spec.handler = std::sync::Arc::new(move |state, ctx, request| {
        let handler = handler.clone();
        Box::pin(async move {
            write::retry_write_conflicts(request, |request| handler(state, ctx, request)).await
        })
    });
}

fn specs<S: DataNode>() -> Vec<CommandSpec<S>> {
    vec![
        CommandSpec::new("insert", insert::run)
            .fields(requests::InsertRequest::FIELDS)
            .takes_write_concern()
            .counter(OpCounter::PerStatement)
            .help("insert documents"),
        CommandSpec::new("update", update::run)
            .fields(requests::UpdateRequest::FIELDS)
            .takes_write_concern()
            .counter(OpCounter::PerStatement)
            .help("update documents"),
        CommandSpec::new("delete", delete::run)
            .fields(requests::DeleteRequest::FIELDS)
            .takes_write_concern()
            .counter(OpCounter::PerStatement)
            .help("delete documents"),
        CommandSpec::new("find", find::find)
            .fields(requests::FindRequest::FIELDS)
            .counter(OpCounter::Query)
            .help("query for documents"),
        CommandSpec::new("getMore", find::get_more)
            .fields(requests::GetMoreRequest::FIELDS)
            .counter(OpCounter::GetMore)
            .help("retrieve more results from an existing cursor"),
        CommandSpec::new("killCursors", find::kill_cursors)
            .fields(requests::KillCursorsRequest::FIELDS).help("Kill a list of cursor ids"),
        CommandSpec::new("bulkWrite", bulk_write::run)
            .fields(requests::BulkWriteRequest::FIELDS)
            .takes_write_concern()
            .admin_only()
            .help("bulk write inserts, updates and deletes across namespaces"),
        CommandSpec::new("findAndModify", find_and_modify::run)
            .fields(requests::FindAndModifyRequest::FIELDS)
            .takes_write_concern()
            .aliases(&["findandmodify"])
            .help("{ findAndModify: \"collection\", query: {processed:false}, update: {$set: {processed:true}}, new: true}"),
        CommandSpec::new("count", count::count)
            .fields(requests::CountRequest::FIELDS).help("count objects in collection"),
        CommandSpec::new("distinct", count::distinct)
            .fields(requests::DistinctRequest::FIELDS)
            .help("{ distinct : 'collection name' , key : 'a.b' , query : {} }"),
        CommandSpec::new("aggregate", aggregate::run)
            .fields(requests::AggregateRequest::FIELDS).help("Runs the aggregation command."),
        CommandSpec::new("explain", explain::run)
            .fields(crate::command::requests::ExplainFields::FIELDS)
            .help("explain the plan of a find, count, distinct, aggregate, update, delete or findAndModify"),
        CommandSpec::new("create", collections::create)
            .fields(requests::CreateRequest::FIELDS)
            .takes_write_concern().help("explicitly creates a collection"),
        CommandSpec::new("collMod", coll_mod::run)
            .fields(crate::command::requests::CollModRequest::FIELDS)
            .takes_write_concern()
            .help("Sets collection options."),
        CommandSpec::new("drop", collections::drop)
            .fields(requests::DropRequest::FIELDS)
            .takes_write_concern().help("drop a collection"),
        CommandSpec::new("renameCollection", collections::rename)
            .fields(requests::RenameCollectionRequest::FIELDS)
            .takes_write_concern()
            .admin_only()
            .help(" example: { renameCollection: foo.a, to: bar.b }"),
        CommandSpec::new("listCollections", collections::list_collections)
            .fields(requests::ListCollectionsRequest::FIELDS)
            .help("list collections for this db"),
        CommandSpec::new("createIndexes", indexes::create_indexes)
            .fields(requests::CreateIndexesRequest::FIELDS)
            .takes_write_concern()
            .help("Create indexes on a collection"),
        CommandSpec::new("dropIndexes", indexes::drop_indexes)
            .fields(requests::DropIndexesRequest::FIELDS)
            .aliases(&["deleteIndexes"])
            .takes_write_concern()
            .help("drop indexes for a collection"),
        CommandSpec::new("listIndexes", collections::list_indexes)
            .fields(requests::ListIndexesRequest::FIELDS)
            .help("list indexes for a collection"),
        CommandSpec::new("listDatabases", databases::list_databases)
            .fields(crate::command::requests::ListDatabasesRequest::FIELDS)
            .admin_only()
            .help("{ listDatabases:1, [filter: <filterObject>] [, nameOnly: true ] }"),
        CommandSpec::new("dropDatabase", databases::drop_database)
            .fields(crate::command::requests::DropDatabaseRequest::FIELDS)
            .takes_write_concern().help("drop (delete) this database"),
        CommandSpec::new("dbStats", databases::db_stats)
            .fields(requests::DbStatsRequest::FIELDS)
            .aliases(&["dbstats"])
            .help("Get stats on a database."),
        CommandSpec::new("prepareTransaction", transactions::outside_transaction)
            .no_fields()
            .takes_write_concern()
            .admin_only()
            .help("prepares a transaction for its two-phase commit"),
        CommandSpec::new("profile", profile::profile)
            .fields(crate::server::profiling::ProfileRequest::FIELDS)
            .help("controls the behaviour of the performance profiler, the fraction of eligible operations which are sampled for logging/profiling, and the threshold duration at which ops become eligible. See http://docs.mongodb.org/manual/reference/command/profile"),
        CommandSpec::new("collStats", databases::coll_stats)
            .aliases(&["collstats"])
            .help("{ collStats:\"blog.posts\" , scale : 1 } scale divides sizes e.g. for KB use 1024"),
    ]
}
