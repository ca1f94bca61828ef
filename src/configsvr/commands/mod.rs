//! The config server's command table: shared commands, CRUD on the config and admin
//! databases, and the `_configsvr*` metadata commands.

mod databases;
mod shards;

use super::ConfigState;
use crate::server::{CommandTable, commands::common};
use crate::shard::commands::data_commands;

pub(super) fn table() -> CommandTable<ConfigState> {
    let mut specs = common();
    specs.extend(data_commands());
    specs.extend(shards::commands());
    specs.extend(databases::commands());
    CommandTable::new(specs)
}
