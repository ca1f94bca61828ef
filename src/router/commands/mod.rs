//! The router's command table: the shared commands plus everything a client sends to mongos,
//! each routed by database (see `forward`).

mod admin;
mod bulk_write;
mod catalog;
mod chunks;
mod cursors;
mod data_distribution;
mod ddl;
mod explain;
mod introspection;
mod metadata_consistency;
mod reads;
mod router_pipeline;
mod sharded_views;
mod sharding;
mod transactions;
mod writes;

use super::RouterState;
use crate::command::requests;
use crate::server::stats::OpCounter;
use crate::server::{CommandSpec, CommandTable, commands::common};
pub(super) use cursors::close as close_cursor;

pub(super) fn table() -> CommandTable<RouterState> {
    let mut specs = common();
    // The router ends transactions itself: its own commit and abort replace the shared ones.
    specs.retain(|spec| !matches!(spec.name, "commitTransaction" | "abortTransaction"));
    specs.extend(transactions::commands());
    specs.extend(vec![
        CommandSpec::new("insert", writes::insert)
            .fields(requests::InsertRequest::FIELDS)
            .takes_write_concern().counter(OpCounter::PerStatement).help("insert documents"),
        CommandSpec::new("update", writes::update)
            .fields(requests::UpdateRequest::FIELDS)
            .takes_write_concern().counter(OpCounter::PerStatement).help("update documents"),
        CommandSpec::new("delete", writes::delete)
            .fields(requests::DeleteRequest::FIELDS)
            .takes_write_concern().counter(OpCounter::PerStatement).help("delete documents"),
        CommandSpec::new("bulkWrite", bulk_write::bulk_write)
            .fields(requests::BulkWriteRequest::FIELDS)
            .takes_write_concern()
            .admin_only()
            .help("bulk write inserts, updates and deletes across namespaces"),
        CommandSpec::new("findAndModify", writes::find_and_modify)
            .fields(requests::FindAndModifyRequest::FIELDS)
            .takes_write_concern()
            .aliases(&["findandmodify"])
            .help("{ findAndModify: \"collection\", query: {processed:false}, update: {$set: {processed:true}}, new: true}"),
        CommandSpec::new("find", reads::find)
            .fields(requests::FindRequest::FIELDS).counter(OpCounter::Query).help("query for documents"),
        CommandSpec::new("count", reads::count)
            .fields(requests::CountRequest::FIELDS).help("count objects in collection"),
        CommandSpec::new("distinct", reads::distinct)
            .fields(requests::DistinctRequest::FIELDS).help("{ distinct : 'collection name' , key : 'a.b' , query : {} }"),
        CommandSpec::new("aggregate", reads::aggregate)
            .fields(requests::AggregateRequest::FIELDS).help("Runs the aggregation command."),
        CommandSpec::new("explain", explain::explain)
            .fields(crate::command::requests::ExplainFields::FIELDS)
            .help("explain the plan of a find, count, distinct, aggregate, update, delete or findAndModify"),
        CommandSpec::new("killOp", introspection::kill_op)
            .admin_only()
            .help("kill an operation in progress"),
        CommandSpec::new("getMore", cursors::get_more)
            .fields(requests::GetMoreRequest::FIELDS)
            .counter(OpCounter::GetMore)
            .help("retrieve more results from an existing cursor"),
        CommandSpec::new("killCursors", cursors::kill_cursors)
            .fields(requests::KillCursorsRequest::FIELDS).help("Kill a list of cursor ids"),
        CommandSpec::new("listDatabases", catalog::list_databases)
            .fields(crate::command::requests::ListDatabasesRequest::FIELDS)
            .admin_only()
            .help("{ listDatabases:1, [filter: <filterObject>] [, nameOnly: true ] }"),
        CommandSpec::new("listCollections", catalog::list_collections)
            .fields(requests::ListCollectionsRequest::FIELDS).help("list collections for this db"),
        CommandSpec::new("listIndexes", catalog::list_indexes)
            .fields(requests::ListIndexesRequest::FIELDS).help("list indexes for a collection"),
        CommandSpec::new("dbStats", catalog::db_stats)
            .fields(requests::DbStatsRequest::FIELDS)
            .aliases(&["dbstats"])
            .help("Get stats on a database."),
        CommandSpec::new("collStats", catalog::coll_stats)
            .aliases(&["collstats"])
            .help("{ collStats:\"blog.posts\" , scale : 1 } scale divides sizes e.g. for KB use 1024"),
        CommandSpec::new("createIndexes", ddl::create_indexes)
            .fields(requests::CreateIndexesRequest::FIELDS)
            .takes_write_concern()
            .help("Create indexes on a collection"),
        CommandSpec::new("dropIndexes", ddl::drop_indexes)
            .fields(requests::DropIndexesRequest::FIELDS)
            .aliases(&["deleteIndexes"])
            .takes_write_concern()
            .help("drop indexes for a collection"),
        CommandSpec::new("collMod", ddl::coll_mod)
            .fields(crate::command::requests::CollModRequest::FIELDS)
            .takes_write_concern()
            .help("Sets collection options."),
        CommandSpec::new("create", ddl::create)
            .fields(requests::CreateRequest::FIELDS)
            .takes_write_concern().help("explicitly creates a collection"),
        CommandSpec::new("drop", ddl::drop)
            .fields(requests::DropRequest::FIELDS)
            .takes_write_concern().help("drop a collection"),
        CommandSpec::new("dropDatabase", ddl::drop_database)
            .fields(crate::command::requests::DropDatabaseRequest::FIELDS)
            .takes_write_concern().help("drop (delete) this database"),
        CommandSpec::new("renameCollection", ddl::rename_collection)
            .fields(requests::RenameCollectionRequest::FIELDS)
            .takes_write_concern()
            .admin_only()
            .help(" example: { renameCollection: foo.a, to: bar.b }"),
        CommandSpec::new("isdbgrid", admin::isdbgrid).help("check if this server is a mongos"),
        CommandSpec::new("addShard", sharding::add_shard)
            .aliases(&["addshard"])
            .takes_write_concern()
            .admin_only()
            .help("add a new shard to the system"),
        CommandSpec::new("balancerStatus", sharding::balancer_status)
            .admin_only()
            .help("Reports the balancer's state: docgrid has no balancer yet, so it is off"),
        CommandSpec::new("listShards", sharding::list_shards)
            .aliases(&["listshards"])
            .admin_only()
            .help("list all shards of the system"),
        CommandSpec::new("enableSharding", sharding::enable_sharding)
            .fields(crate::command::requests::EnableShardingRequest::FIELDS)
            .aliases(&["enablesharding"])
            .takes_write_concern()
            .admin_only()
            .help("Enable sharding for a database. Optionally allows the caller to specify the shard to be used as primary.(Use 'shardcollection' command afterwards.)\n  { enableSharding : \"<dbname>\", primaryShard:  \"<shard>\"}\n"),
        CommandSpec::new("shardCollection", sharding::shard_collection)
            .aliases(&["shardcollection"])
            .takes_write_concern()
            .admin_only()
            .help("Shard a collection. Sharding must already be enabled for the database.\n   { enablesharding : \"<dbname>\" }\n"),
        CommandSpec::new("movePrimary", sharding::move_primary)
            .fields(crate::command::requests::MovePrimaryRequest::FIELDS)
            .aliases(&["moveprimary"])
            .takes_write_concern()
            .admin_only()
            .help("Moves a database's unsharded collections to another shard, which becomes its primary\n  { movePrimary: \"<db>\", to: \"<shard>\" }"),
        CommandSpec::new("refineCollectionShardKey", sharding::refine_collection_shard_key)
        .takes_write_concern()
        .admin_only()
        .help("Refines a sharded collection's shard key by adding fields after it\n  { refineCollectionShardKey: \"<db>.<collection>\", key: { <existing key fields>, <new fields> } }"),
        CommandSpec::new("mergeChunks", chunks::merge_chunks)
            .aliases(&["mergechunks"])
            .admin_only()
            .help("Merge Chunks command\nusage: { mergeChunks : <ns>, bounds : [ <min key>, <max key> ] }"),
        CommandSpec::new("mergeAllChunksOnShard", chunks::merge_all_chunks_on_shard)
        .admin_only()
        .help("Merges every run of contiguous chunks of a shard\nusage: { mergeAllChunksOnShard: <ns>, shard: <shard>, maxNumberOfChunksToMerge: <n> }"),
        CommandSpec::new("getShardVersion", admin::get_shard_version)
            .aliases(&["getshardversion"])
            .admin_only()
            .help(" example: { getShardVersion : 'alleyinsider.foo'  } "),
        CommandSpec::new("getShardMap", admin::get_shard_map)
            .admin_only()
            .help("lists the shards and the config server with their hosts"),
        CommandSpec::new("split", chunks::split)
            .admin_only()
            .help(" example: - split the shard that contains give key\n   { split : 'alleyinsider.blog.posts' , find : { ts : 1 } }\n example: - split the shard that contains the key with this as the middle\n   { split : 'alleyinsider.blog.posts' , middle : { ts : 1 } }\n NOTE: this does not move the chunks, it just creates a logical separation."),
        CommandSpec::new("checkMetadataConsistency", metadata_consistency::check_metadata_consistency)
        .help("Checks the cluster's sharding metadata against every shard\n  { checkMetadataConsistency: 1 | \"<collection>\", checkIndexes: <bool> }"),
        CommandSpec::new("flushRouterConfig", admin::flush_router_config)
            .aliases(&["flushrouterconfig"])
            .admin_only()
            .help("flush all router config"),
    ]);
    // Every command may be a statement of a transaction (`router::transactions`); reads may
    // read at a snapshot (`router::snapshot_reads`).
    for spec in &mut specs {
        let handler = super::snapshot_reads::wrap(spec.name, spec.handler.clone());
        spec.handler = super::transactions::wrap(spec.name, handler);
    }
    CommandTable::new(specs)
}
