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
mod migrations;
mod reads;
mod router_pipeline;
mod sharded_views;
mod sharding;
mod transactions;
mod users;
mod writes;

use super::RouterState;
use crate::command::requests;
use crate::server::auth::{Requires, computed};
use crate::server::stats::OpCounter;
use crate::server::{CommandSpec, CommandTable, commands::common};
pub(super) use cursors::close as close_cursor;

pub(super) fn table() -> CommandTable<RouterState> {
    let mut specs = common();
    // The router ends transactions itself: its own commit and abort replace the shared ones.
    specs.retain(|spec| !matches!(spec.name, "commitTransaction" | "abortTransaction"));
    specs.extend(transactions::commands());
    specs.extend(users::commands());
    specs.extend(vec![
        CommandSpec::new("insert", writes::insert)
            .requires(Requires::Collection(&["insert"]))
            .fields(requests::InsertRequest::FIELDS)
            .takes_write_concern().counter(OpCounter::PerStatement).help("insert documents"),
        CommandSpec::new("update", writes::update)
            .requires(Requires::Computed(computed::update))
            .fields(requests::UpdateRequest::FIELDS)
            .takes_write_concern().counter(OpCounter::PerStatement).help("update documents"),
        CommandSpec::new("delete", writes::delete)
            .requires(Requires::Collection(&["remove"]))
            .fields(requests::DeleteRequest::FIELDS)
            .takes_write_concern().counter(OpCounter::PerStatement).help("delete documents"),
        CommandSpec::new("bulkWrite", bulk_write::bulk_write)
            .requires(Requires::Computed(computed::bulk_write))
            .fields(requests::BulkWriteRequest::FIELDS)
            .takes_write_concern()
            .admin_only()
            .help("bulk write inserts, updates and deletes across namespaces"),
        CommandSpec::new("findAndModify", writes::find_and_modify)
            .requires(Requires::Computed(computed::find_and_modify))
            .fields(requests::FindAndModifyRequest::FIELDS)
            .takes_write_concern()
            .aliases(&["findandmodify"])
            .help("{ findAndModify: \"collection\", query: {processed:false}, update: {$set: {processed:true}}, new: true}"),
        CommandSpec::new("find", reads::find)
            .requires(Requires::Collection(&["find"]))
            .fields(requests::FindRequest::FIELDS).counter(OpCounter::Query).help("query for documents"),
        CommandSpec::new("count", reads::count)
            .requires(Requires::Collection(&["find"]))
            .fields(requests::CountRequest::FIELDS).help("count objects in collection"),
        CommandSpec::new("distinct", reads::distinct)
            .requires(Requires::Collection(&["find"]))
            .fields(requests::DistinctRequest::FIELDS).help("{ distinct : 'collection name' , key : 'a.b' , query : {} }"),
        CommandSpec::new("aggregate", reads::aggregate)
            .requires(Requires::Computed(computed::aggregate))
            .fields(requests::AggregateRequest::FIELDS).help("Runs the aggregation command."),
        CommandSpec::new("explain", explain::explain)
            .requires(Requires::Computed(computed::explain))
            .fields(crate::command::requests::ExplainFields::FIELDS)
            .help("explain the plan of a find, count, distinct, aggregate, update, delete or findAndModify"),
        CommandSpec::new("killOp", introspection::kill_op)
            .requires(Requires::Cluster(&["killop"]))
            .admin_only()
            .help("kill an operation in progress"),
        CommandSpec::new("getMore", cursors::get_more)
            .requires(Requires::Authenticated)
            .fields(requests::GetMoreRequest::FIELDS)
            .counter(OpCounter::GetMore)
            .help("retrieve more results from an existing cursor"),
        CommandSpec::new("killCursors", cursors::kill_cursors)
            .requires(Requires::Authenticated)
            .fields(requests::KillCursorsRequest::FIELDS).help("Kill a list of cursor ids"),
        CommandSpec::new("listDatabases", catalog::list_databases)
            .requires(Requires::Computed(computed::list_databases))
            .fields(crate::command::requests::ListDatabasesRequest::FIELDS)
            .admin_only()
            .help("{ listDatabases:1, [filter: <filterObject>] [, nameOnly: true ] }"),
        CommandSpec::new("listCollections", catalog::list_collections)
            .requires(Requires::Computed(computed::list_collections))
            .fields(requests::ListCollectionsRequest::FIELDS).help("list collections for this db"),
        CommandSpec::new("listIndexes", catalog::list_indexes)
            .requires(Requires::Collection(&["listIndexes"]))
            .fields(requests::ListIndexesRequest::FIELDS).help("list indexes for a collection"),
        CommandSpec::new("profile", introspection::profile)
            .requires(Requires::Database(&["enableProfiler"]))
            .fields(crate::server::profiling::ProfileRequest::FIELDS)
            .help("controls the behaviour of the performance profiler, the fraction of eligible operations which are sampled for logging/profiling, and the threshold duration at which ops become eligible. See http://docs.mongodb.org/manual/reference/command/profile"),
        CommandSpec::new("dbStats", catalog::db_stats)
            .requires(Requires::Database(&["dbStats"]))
            .fields(requests::DbStatsRequest::FIELDS)
            .aliases(&["dbstats"])
            .help("Get stats on a database."),
        CommandSpec::new("collStats", catalog::coll_stats)
            .requires(Requires::Collection(&["collStats"]))
            .aliases(&["collstats"])
            .help("{ collStats:\"blog.posts\" , scale : 1 } scale divides sizes e.g. for KB use 1024"),
        CommandSpec::new("createIndexes", ddl::create_indexes)
            .requires(Requires::Collection(&["createIndex"]))
            .fields(requests::CreateIndexesRequest::FIELDS)
            .takes_write_concern()
            .help("Create indexes on a collection"),
        CommandSpec::new("dropIndexes", ddl::drop_indexes)
            .requires(Requires::Collection(&["dropIndex"]))
            .fields(requests::DropIndexesRequest::FIELDS)
            .aliases(&["deleteIndexes"])
            .takes_write_concern()
            .help("drop indexes for a collection"),
        CommandSpec::new("collMod", ddl::coll_mod)
            .requires(Requires::Collection(&["collMod"]))
            .fields(crate::command::requests::CollModRequest::FIELDS)
            .takes_write_concern()
            .help("Sets collection options."),
        CommandSpec::new("create", ddl::create)
            .requires(Requires::Collection(&["createCollection"]))
            .fields(requests::CreateRequest::FIELDS)
            .takes_write_concern().help("explicitly creates a collection"),
        CommandSpec::new("drop", ddl::drop)
            .requires(Requires::Collection(&["dropCollection"]))
            .fields(requests::DropRequest::FIELDS)
            .takes_write_concern().help("drop a collection"),
        CommandSpec::new("dropDatabase", ddl::drop_database)
            .requires(Requires::Database(&["dropDatabase"]))
            .fields(crate::command::requests::DropDatabaseRequest::FIELDS)
            .takes_write_concern().help("drop (delete) this database"),
        CommandSpec::new("renameCollection", ddl::rename_collection)
            .requires(Requires::Computed(computed::rename_collection))
            .fields(requests::RenameCollectionRequest::FIELDS)
            .takes_write_concern()
            .admin_only()
            .help(" example: { renameCollection: foo.a, to: bar.b }"),
        CommandSpec::new("isdbgrid", admin::isdbgrid)
            .requires(Requires::Authenticated).help("check if this server is a mongos"),
        CommandSpec::new("addShard", sharding::add_shard)
            .requires(Requires::Cluster(&["addShard"]))
            .aliases(&["addshard"])
            .takes_write_concern()
            .admin_only()
            .help("add a new shard to the system"),
        CommandSpec::new("balancerStatus", sharding::balancer_status)
            .requires(Requires::Cluster(&["listShards"]))
            .admin_only()
            .help("Reports the balancer's state: docgrid has no balancer yet, so it is off"),
        CommandSpec::new("listShards", sharding::list_shards)
            .requires(Requires::Cluster(&["listShards"]))
            .aliases(&["listshards"])
            .admin_only()
            .help("list all shards of the system"),
        CommandSpec::new("enableSharding", sharding::enable_sharding)
            .requires(Requires::Computed(computed::enable_sharding))
            .fields(crate::command::requests::EnableShardingRequest::FIELDS)
            .aliases(&["enablesharding"])
            .takes_write_concern()
            .admin_only()
            .help("Enable sharding for a database. Optionally allows the caller to specify the shard to be used as primary.(Use 'shardcollection' command afterwards.)\n  { enableSharding : \"<dbname>\", primaryShard:  \"<shard>\"}\n"),
        CommandSpec::new("shardCollection", sharding::shard_collection)
            .requires(Requires::Computed(computed::enable_sharding))
            .aliases(&["shardcollection"])
            .takes_write_concern()
            .admin_only()
            .help("Shard a collection. Sharding must already be enabled for the database.\n   { enablesharding : \"<dbname>\" }\n"),
        CommandSpec::new("movePrimary", sharding::move_primary)
            .requires(Requires::Computed(computed::move_primary))
            .fields(crate::command::requests::MovePrimaryRequest::FIELDS)
            .aliases(&["moveprimary"])
            .takes_write_concern()
            .admin_only()
            .help("Moves a database's unsharded collections to another shard, which becomes its primary\n  { movePrimary: \"<db>\", to: \"<shard>\" }"),
        CommandSpec::new("refineCollectionShardKey", sharding::refine_collection_shard_key)
            .requires(Requires::Computed(computed::refine_shard_key))
        .takes_write_concern()
        .admin_only()
        .help("Refines a sharded collection's shard key by adding fields after it\n  { refineCollectionShardKey: \"<db>.<collection>\", key: { <existing key fields>, <new fields> } }"),
        CommandSpec::new("mergeChunks", chunks::merge_chunks)
            .requires(Requires::Computed(computed::split_chunk))
            .aliases(&["mergechunks"])
            .admin_only()
            .help("Merge Chunks command\nusage: { mergeChunks : <ns>, bounds : [ <min key>, <max key> ] }"),
        CommandSpec::new("mergeAllChunksOnShard", chunks::merge_all_chunks_on_shard)
            .requires(Requires::Computed(computed::split_chunk))
        .admin_only()
        .help("Merges every run of contiguous chunks of a shard\nusage: { mergeAllChunksOnShard: <ns>, shard: <shard>, maxNumberOfChunksToMerge: <n> }"),
        CommandSpec::new("moveChunk", migrations::move_chunk)
            .requires(Requires::Computed(computed::move_chunk))
            .fields(migrations::MOVE_CHUNK_FIELDS)
            .aliases(&["movechunk"])
            .takes_write_concern()
            .admin_only()
            .help("Example: move chunk that contains the doc {num : 7} to shard001\n  { movechunk : 'test.foo' , find : { num : 7 } , to : 'shard0001' }\nExample: move chunk with lower bound 0 and upper bound 10 to shard001\n  { movechunk : 'test.foo' , bounds : [ { num : 0 } , { num : 10 } ]  , to : 'shard001' }"),
        CommandSpec::new("moveRange", migrations::move_range)
            .requires(Requires::Computed(computed::move_chunk))
            .fields(migrations::MOVE_RANGE_FIELDS)
            .takes_write_concern()
            .admin_only()
            .help("Moves a range of a sharded collection to another shard\n  { moveRange: '<db>.<coll>', toShard: '<shard>', min: <key>, max: <key> }"),
        CommandSpec::new("setAllowMigrations", migrations::set_allow_migrations)
            .requires(Requires::Computed(computed::enable_sharding))
            .fields(&["allowMigrations"])
            .takes_write_concern()
            .admin_only()
            .help("Allows or stops the chunk migrations of a sharded collection\n  { setAllowMigrations: '<db>.<coll>', allowMigrations: <bool> }"),
        CommandSpec::new("getShardVersion", admin::get_shard_version)
            .requires(Requires::Computed(computed::get_shard_version))
            .aliases(&["getshardversion"])
            .admin_only()
            .help(" example: { getShardVersion : 'alleyinsider.foo'  } "),
        CommandSpec::new("getShardMap", admin::get_shard_map)
            .requires(Requires::Cluster(&["getShardMap"]))
            .admin_only()
            .help("lists the shards and the config server with their hosts"),
        CommandSpec::new("split", chunks::split)
            .requires(Requires::Computed(computed::split_chunk))
            .admin_only()
            .help(" example: - split the shard that contains give key\n   { split : 'alleyinsider.blog.posts' , find : { ts : 1 } }\n example: - split the shard that contains the key with this as the middle\n   { split : 'alleyinsider.blog.posts' , middle : { ts : 1 } }\n NOTE: this does not move the chunks, it just creates a logical separation."),
        CommandSpec::new("checkMetadataConsistency", metadata_consistency::check_metadata_consistency)
            .requires(Requires::Cluster(&["checkMetadataConsistency"]))
        .help("Checks the cluster's sharding metadata against every shard\n  { checkMetadataConsistency: 1 | \"<collection>\", checkIndexes: <bool> }"),
        CommandSpec::new("flushRouterConfig", admin::flush_router_config)
            .requires(Requires::Cluster(&["flushRouterConfig"]))
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

#[cfg(test)]
mod tests {
    /// With `--auth` an undeclared command is refused to every client: each router command
    /// says what it requires.
    #[test]
    fn every_router_command_declares_what_it_requires() {
        let table = super::table();
        let undeclared: Vec<&str> = table
            .entries()
            .into_iter()
            .filter(|(_, spec)| spec.requires.is_none())
            .map(|(name, _)| name)
            .collect();
        assert!(undeclared.is_empty(), "undeclared: {undeclared:?}");
    }
}
