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
        CommandSpec::new("insert", |s, c, r| Box::pin(insert::run(s, c, r)))
            .takes_write_concern()
            .counter(OpCounter::PerStatement)
            .help("insert documents"),
        CommandSpec::new("update", |s, c, r| Box::pin(update::run(s, c, r)))
            .takes_write_concern()
            .counter(OpCounter::PerStatement)
            .help("update documents"),
        CommandSpec::new("delete", |s, c, r| Box::pin(delete::run(s, c, r)))
            .takes_write_concern()
            .counter(OpCounter::PerStatement)
            .help("delete documents"),
        CommandSpec::new("find", |s, c, r| Box::pin(find::find(s, c, r)))
            .counter(OpCounter::Query)
            .help("query for documents"),
        CommandSpec::new("getMore", |s, c, r| Box::pin(find::get_more(s, c, r)))
            .counter(OpCounter::GetMore)
            .help("retrieve more results from an existing cursor"),
        CommandSpec::new("killCursors", |s, c, r| Box::pin(find::kill_cursors(s, c, r))).help("Kill a list of cursor ids"),
        CommandSpec::new("bulkWrite", |s, c, r| Box::pin(bulk_write::run(s, c, r)))
            .takes_write_concern()
            .admin_only()
            .help("bulk write inserts, updates and deletes across namespaces"),
        CommandSpec::new("findAndModify", |s, c, r| Box::pin(find_and_modify::run(s, c, r)))
            .takes_write_concern()
            .aliases(&["findandmodify"])
            .help("{ findAndModify: \"collection\", query: {processed:false}, update: {$set: {processed:true}}, new: true}"),
        CommandSpec::new("count", |s, c, r| Box::pin(count::count(s, c, r))).help("count objects in collection"),
        CommandSpec::new("distinct", |s, c, r| Box::pin(count::distinct(s, c, r)))
            .help("{ distinct : 'collection name' , key : 'a.b' , query : {} }"),
        CommandSpec::new("aggregate", |s, c, r| Box::pin(aggregate::run(s, c, r))).help("Runs the aggregation command."),
        CommandSpec::new("explain", |s, c, r| Box::pin(explain::run(s, c, r)))
            .help("explain the plan of a find, count, distinct, aggregate, update, delete or findAndModify"),
        CommandSpec::new("create", |s, c, r| Box::pin(collections::create(s, c, r)))
            .takes_write_concern().help("explicitly creates a collection"),
        CommandSpec::new("collMod", |s, c, r| Box::pin(coll_mod::run(s, c, r)))
            .takes_write_concern()
            .help("Sets collection options."),
        CommandSpec::new("drop", |s, c, r| Box::pin(collections::drop(s, c, r)))
            .takes_write_concern().help("drop a collection"),
        CommandSpec::new("renameCollection", |s, c, r| Box::pin(collections::rename(s, c, r)))
            .takes_write_concern()
            .admin_only()
            .help(" example: { renameCollection: foo.a, to: bar.b }"),
        CommandSpec::new("listCollections", |s, c, r| Box::pin(collections::list_collections(s, c, r)))
            .help("list collections for this db"),
        CommandSpec::new("createIndexes", |s, c, r| Box::pin(indexes::create_indexes(s, c, r)))
            .takes_write_concern()
            .help("Create indexes on a collection"),
        CommandSpec::new("dropIndexes", |s, c, r| Box::pin(indexes::drop_indexes(s, c, r)))
            .aliases(&["deleteIndexes"])
            .takes_write_concern()
            .help("drop indexes for a collection"),
        CommandSpec::new("listIndexes", |s, c, r| Box::pin(collections::list_indexes(s, c, r)))
            .help("list indexes for a collection"),
        CommandSpec::new("listDatabases", |s, c, r| Box::pin(databases::list_databases(s, c, r)))
            .admin_only()
            .help("{ listDatabases:1, [filter: <filterObject>] [, nameOnly: true ] }"),
        CommandSpec::new("dropDatabase", |s, c, r| Box::pin(databases::drop_database(s, c, r)))
            .takes_write_concern().help("drop (delete) this database"),
        CommandSpec::new("dbStats", |s, c, r| Box::pin(databases::db_stats(s, c, r)))
            .aliases(&["dbstats"])
            .help("Get stats on a database."),
        CommandSpec::new("collStats", |s, c, r| Box::pin(databases::coll_stats(s, c, r)))
            .aliases(&["collstats"])
            .help("{ collStats:\"blog.posts\" , scale : 1 } scale divides sizes e.g. for KB use 1024"),
    ]
}
