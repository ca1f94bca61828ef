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

#[cfg(test)]
mod tests {
    /// With a key file, only members may run this role's own commands, but for the
    /// maintenance a user with the privilege may run on a shard.
    #[test]
    fn only_members_run_the_role_commands() {
        let declared = crate::server::auth::declared_beyond_common(&super::table());
        assert_eq!(declared, ["cleanupOrphaned"]);
    }
}
