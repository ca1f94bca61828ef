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
mod sources;
mod update;
mod write;

pub use find::cursor_reply;

use super::DataNode;
use crate::server::CommandSpec;
use crate::server::stats::OpCounter;

/// CRUD, catalog and database commands over a node's storage.
pub fn data_commands<S: DataNode>() -> Vec<CommandSpec<S>> {
    vec![
        CommandSpec::new("insert", insert::run)
            .takes_write_concern()
            .counter(OpCounter::PerStatement)
            .help("insert documents"),
        CommandSpec::new("update", update::run)
            .takes_write_concern()
            .counter(OpCounter::PerStatement)
            .help("update documents"),
        CommandSpec::new("delete", delete::run)
            .takes_write_concern()
            .counter(OpCounter::PerStatement)
            .help("delete documents"),
        CommandSpec::new("find", find::find)
            .counter(OpCounter::Query)
            .help("query for documents"),
        CommandSpec::new("getMore", find::get_more)
            .counter(OpCounter::GetMore)
            .help("retrieve more results from an existing cursor"),
        CommandSpec::new("killCursors", find::kill_cursors).help("Kill a list of cursor ids"),
        CommandSpec::new("bulkWrite", bulk_write::run)
            .takes_write_concern()
            .admin_only()
            .help("bulk write inserts, updates and deletes across namespaces"),
        CommandSpec::new("findAndModify", find_and_modify::run)
            .takes_write_concern()
            .aliases(&["findandmodify"])
            .help("{ findAndModify: \"collection\", query: {processed:false}, update: {$set: {processed:true}}, new: true}"),
        CommandSpec::new("count", count::count).help("count objects in collection"),
        CommandSpec::new("distinct", count::distinct)
            .help("{ distinct : 'collection name' , key : 'a.b' , query : {} }"),
        CommandSpec::new("aggregate", aggregate::run).help("Runs the aggregation command."),
        CommandSpec::new("explain", explain::run)
            .help("explain the plan of a find, count, distinct, aggregate, update, delete or findAndModify"),
        CommandSpec::new("create", collections::create)
            .takes_write_concern().help("explicitly creates a collection"),
        CommandSpec::new("collMod", coll_mod::run)
            .takes_write_concern()
            .help("Sets collection options."),
        CommandSpec::new("drop", collections::drop)
            .takes_write_concern().help("drop a collection"),
        CommandSpec::new("renameCollection", collections::rename)
            .takes_write_concern()
            .admin_only()
            .help(" example: { renameCollection: foo.a, to: bar.b }"),
        CommandSpec::new("listCollections", collections::list_collections)
            .help("list collections for this db"),
        CommandSpec::new("createIndexes", indexes::create_indexes)
            .takes_write_concern()
            .help("Create indexes on a collection"),
        CommandSpec::new("dropIndexes", indexes::drop_indexes)
            .aliases(&["deleteIndexes"])
            .takes_write_concern()
            .help("drop indexes for a collection"),
        CommandSpec::new("listIndexes", collections::list_indexes)
            .help("list indexes for a collection"),
        CommandSpec::new("listDatabases", databases::list_databases)
            .admin_only()
            .help("{ listDatabases:1, [filter: <filterObject>] [, nameOnly: true ] }"),
        CommandSpec::new("dropDatabase", databases::drop_database)
            .takes_write_concern().help("drop (delete) this database"),
        CommandSpec::new("dbStats", databases::db_stats)
            .aliases(&["dbstats"])
            .help("Get stats on a database."),
        CommandSpec::new("collStats", databases::coll_stats)
            .aliases(&["collstats"])
            .help("{ collStats:\"blog.posts\" , scale : 1 } scale divides sizes e.g. for KB use 1024"),
    ]
}
