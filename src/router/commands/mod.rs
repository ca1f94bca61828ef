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
mod writes;

use super::RouterState;
use crate::server::stats::OpCounter;
use crate::server::{CommandSpec, CommandTable, commands::common};

pub(super) fn table() -> CommandTable<RouterState> {
    let mut specs = common();
    specs.extend(vec![
        CommandSpec::new("insert", |s, c, r| Box::pin(writes::insert(s, c, r)))
            .takes_write_concern().counter(OpCounter::PerStatement).help("insert documents"),
        CommandSpec::new("update", |s, c, r| Box::pin(writes::update(s, c, r)))
            .takes_write_concern().counter(OpCounter::PerStatement).help("update documents"),
        CommandSpec::new("delete", |s, c, r| Box::pin(writes::delete(s, c, r)))
            .takes_write_concern().counter(OpCounter::PerStatement).help("delete documents"),
        CommandSpec::new("bulkWrite", |s, c, r| Box::pin(bulk_write::bulk_write(s, c, r)))
            .takes_write_concern()
            .admin_only()
            .help("bulk write inserts, updates and deletes across namespaces"),
        CommandSpec::new("findAndModify", |s, c, r| Box::pin(writes::find_and_modify(s, c, r)))
            .takes_write_concern()
            .aliases(&["findandmodify"])
            .help("{ findAndModify: \"collection\", query: {processed:false}, update: {$set: {processed:true}}, new: true}"),
        CommandSpec::new("find", |s, c, r| Box::pin(reads::find(s, c, r))).counter(OpCounter::Query).help("query for documents"),
        CommandSpec::new("count", |s, c, r| Box::pin(reads::count(s, c, r))).help("count objects in collection"),
        CommandSpec::new("distinct", |s, c, r| Box::pin(reads::distinct(s, c, r))).help("{ distinct : 'collection name' , key : 'a.b' , query : {} }"),
        CommandSpec::new("aggregate", |s, c, r| Box::pin(reads::aggregate(s, c, r))).help("Runs the aggregation command."),
        CommandSpec::new("explain", |s, c, r| Box::pin(explain::explain(s, c, r)))
            .help("explain the plan of a find, count, distinct, aggregate, update, delete or findAndModify"),
        CommandSpec::new("refreshLogicalSessionCacheNow", |s, c, r| Box::pin(introspection::refresh_sessions_now(s, c, r)))
        .help("force the logical session cache to write its sessions to config.system.sessions"),
        CommandSpec::new("killOp", |s, c, r| Box::pin(introspection::kill_op(s, c, r)))
            .admin_only()
            .help("kill an operation in progress"),
        CommandSpec::new("getMore", |s, c, r| Box::pin(cursors::get_more(s, c, r)))
            .counter(OpCounter::GetMore)
            .help("retrieve more results from an existing cursor"),
        CommandSpec::new("killCursors", |s, c, r| Box::pin(cursors::kill_cursors(s, c, r))).help("Kill a list of cursor ids"),
        CommandSpec::new("listDatabases", |s, c, r| Box::pin(catalog::list_databases(s, c, r)))
            .admin_only()
            .help("{ listDatabases:1, [filter: <filterObject>] [, nameOnly: true ] }"),
        CommandSpec::new("listCollections", |s, c, r| Box::pin(catalog::list_collections(s, c, r))).help("list collections for this db"),
        CommandSpec::new("listIndexes", |s, c, r| Box::pin(catalog::list_indexes(s, c, r))).help("list indexes for a collection"),
        CommandSpec::new("dbStats", |s, c, r| Box::pin(catalog::db_stats(s, c, r))).aliases(&["dbstats"]).help("Get stats on a database."),
        CommandSpec::new("collStats", |s, c, r| Box::pin(catalog::coll_stats(s, c, r)))
            .aliases(&["collstats"])
            .help("{ collStats:\"blog.posts\" , scale : 1 } scale divides sizes e.g. for KB use 1024"),
        CommandSpec::new("createIndexes", |s, c, r| Box::pin(ddl::create_indexes(s, c, r)))
            .takes_write_concern()
            .help("Create indexes on a collection"),
        CommandSpec::new("dropIndexes", |s, c, r| Box::pin(ddl::drop_indexes(s, c, r)))
            .aliases(&["deleteIndexes"])
            .takes_write_concern()
            .help("drop indexes for a collection"),
        CommandSpec::new("collMod", |s, c, r| Box::pin(ddl::coll_mod(s, c, r)))
            .takes_write_concern()
            .help("Sets collection options."),
        CommandSpec::new("create", |s, c, r| Box::pin(ddl::create(s, c, r)))
            .takes_write_concern().help("explicitly creates a collection"),
        CommandSpec::new("drop", |s, c, r| Box::pin(ddl::drop(s, c, r)))
            .takes_write_concern().help("drop a collection"),
        CommandSpec::new("dropDatabase", |s, c, r| Box::pin(ddl::drop_database(s, c, r)))
            .takes_write_concern().help("drop (delete) this database"),
        CommandSpec::new("renameCollection", |s, c, r| Box::pin(ddl::rename_collection(s, c, r)))
            .takes_write_concern()
            .admin_only()
            .help(" example: { renameCollection: foo.a, to: bar.b }"),
        CommandSpec::new("isdbgrid", |s, c, r| Box::pin(admin::isdbgrid(s, c, r))).help("check if this server is a mongos"),
        CommandSpec::new("addShard", |s, c, r| Box::pin(sharding::add_shard(s, c, r)))
            .aliases(&["addshard"])
            .takes_write_concern()
            .admin_only()
            .help("add a new shard to the system"),
        CommandSpec::new("balancerStatus", |s, c, r| Box::pin(sharding::balancer_status(s, c, r)))
            .admin_only()
            .help("Reports the balancer's state: docgrid has no balancer yet, so it is off"),
        CommandSpec::new("listShards", |s, c, r| Box::pin(sharding::list_shards(s, c, r)))
            .aliases(&["listshards"])
            .admin_only()
            .help("list all shards of the system"),
        CommandSpec::new("enableSharding", |s, c, r| Box::pin(sharding::enable_sharding(s, c, r)))
            .aliases(&["enablesharding"])
            .takes_write_concern()
            .admin_only()
            .help("Enable sharding for a database. Optionally allows the caller to specify the shard to be used as primary.(Use 'shardcollection' command afterwards.)\n  { enableSharding : \"<dbname>\", primaryShard:  \"<shard>\"}\n"),
        CommandSpec::new("shardCollection", |s, c, r| Box::pin(sharding::shard_collection(s, c, r)))
            .aliases(&["shardcollection"])
            .takes_write_concern()
            .admin_only()
            .help("Shard a collection. Sharding must already be enabled for the database.\n   { enablesharding : \"<dbname>\" }\n"),
        CommandSpec::new("movePrimary", |s, c, r| Box::pin(sharding::move_primary(s, c, r)))
            .aliases(&["moveprimary"])
            .takes_write_concern()
            .admin_only()
            .help("Moves a database's unsharded collections to another shard, which becomes its primary\n  { movePrimary: \"<db>\", to: \"<shard>\" }"),
        CommandSpec::new("refineCollectionShardKey", |s, c, r| {
            Box::pin(sharding::refine_collection_shard_key(s, c, r))
        })
        .takes_write_concern()
        .admin_only()
        .help("Refines a sharded collection's shard key by adding fields after it\n  { refineCollectionShardKey: \"<db>.<collection>\", key: { <existing key fields>, <new fields> } }"),
        CommandSpec::new("mergeChunks", |s, c, r| Box::pin(chunks::merge_chunks(s, c, r)))
            .aliases(&["mergechunks"])
            .admin_only()
            .help("Merge Chunks command\nusage: { mergeChunks : <ns>, bounds : [ <min key>, <max key> ] }"),
        CommandSpec::new("mergeAllChunksOnShard", |s, c, r| {
            Box::pin(chunks::merge_all_chunks_on_shard(s, c, r))
        })
        .admin_only()
        .help("Merges every run of contiguous chunks of a shard\nusage: { mergeAllChunksOnShard: <ns>, shard: <shard>, maxNumberOfChunksToMerge: <n> }"),
        CommandSpec::new("getShardVersion", |s, c, r| Box::pin(admin::get_shard_version(s, c, r)))
            .aliases(&["getshardversion"])
            .admin_only()
            .help(" example: { getShardVersion : 'alleyinsider.foo'  } "),
        CommandSpec::new("getShardMap", |s, c, r| Box::pin(admin::get_shard_map(s, c, r)))
            .admin_only()
            .help("lists the shards and the config server with their hosts"),
        CommandSpec::new("split", |s, c, r| Box::pin(chunks::split(s, c, r)))
            .admin_only()
            .help(" example: - split the shard that contains give key\n   { split : 'alleyinsider.blog.posts' , find : { ts : 1 } }\n example: - split the shard that contains the key with this as the middle\n   { split : 'alleyinsider.blog.posts' , middle : { ts : 1 } }\n NOTE: this does not move the chunks, it just creates a logical separation."),
        CommandSpec::new("checkMetadataConsistency", |s, c, r| {
            Box::pin(metadata_consistency::check_metadata_consistency(s, c, r))
        })
        .help("Checks the cluster's sharding metadata against every shard\n  { checkMetadataConsistency: 1 | \"<collection>\", checkIndexes: <bool> }"),
        CommandSpec::new("flushRouterConfig", |s, c, r| Box::pin(admin::flush_router_config(s, c, r)))
            .aliases(&["flushrouterconfig"])
            .admin_only()
            .help("flush all router config"),
    ]);
    CommandTable::new(specs)
}
