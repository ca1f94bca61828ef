//! The shard's command table: the shared commands, the data commands (shared with the config
//! server through [`DataNode`](crate::datanode::DataNode)), and the shard-only sharding commands.

mod chunks;
mod coordinate_commit;
mod migration;
mod move_primary;
mod refine_shard_key;
mod rename;
mod shard_collection;
mod sharding;

pub(crate) use shard_collection::participant_command;

use super::ShardState;
use crate::datanode::commands::data_commands;
use crate::server::{CommandTable, commands::common};

pub(super) fn table() -> CommandTable<ShardState> {
    let mut specs = common();
    specs.push(crate::server::commands::kill_op());
    specs.extend(data_commands());
    specs.extend(sharding::commands());
    specs.extend(rename::commands());
    specs.extend(coordinate_commit::commands());
    specs.extend(migration::commands());
    CommandTable::new(specs)
}
