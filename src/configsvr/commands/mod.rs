//! The config server's command table: shared commands, CRUD on the config and admin
//! databases, and the `_configsvr*` metadata commands.

mod chunks;
mod collections;
mod databases;
mod ddl_locks;
mod metadata_consistency;
mod migrations;
mod refine_shard_key;
mod roles;
mod shards;
mod users;

pub(super) use collections::StoredRouting;

use super::ConfigState;
use crate::datanode::commands::data_commands;
use crate::server::{CommandTable, commands::common};

pub(super) fn table() -> CommandTable<ConfigState> {
    let mut specs = common();
    specs.push(crate::server::commands::kill_op());
    specs.extend(data_commands());
    specs.extend(shards::commands());
    specs.extend(databases::commands());
    specs.extend(ddl_locks::commands());
    specs.extend(metadata_consistency::commands());
    specs.extend(collections::commands());
    specs.extend(chunks::commands());
    specs.extend(migrations::commands());
    specs.extend(refine_shard_key::commands());
    specs.extend(users::commands());
    specs.extend(roles::commands());
    CommandTable::new(specs)
}

#[cfg(test)]
mod tests {
    /// With a key file, only members may run this role's own commands.
    #[test]
    fn only_members_run_the_role_commands() {
        let declared = crate::server::auth::declared_beyond_common(&super::table());
        assert!(declared.is_empty(), "declared: {declared:?}");
    }
}
