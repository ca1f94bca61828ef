//! The user and role management commands on a router: run on the config server (which keeps
//! `admin.system.users` and `admin.system.roles`), then this router's user cache is dropped so
//! its next lookups see the change at once (other routers see it when they next poll the config
//! server's generation).

use super::super::RouterState;
use crate::command::CommandRequest;
use crate::error::Result;
use crate::server::auth::{role_admin, user_admin};
use crate::server::{CommandSpec, RequestContext};
use bson::RawDocumentBuf;

pub(super) fn commands() -> Vec<CommandSpec<RouterState>> {
    user_admin::USER_COMMANDS
        .iter()
        .chain(role_admin::ROLE_COMMANDS.iter())
        .map(|command| {
            let spec = match command.changes {
                true => CommandSpec::new(command.name, change_users).takes_write_concern(),
                false => CommandSpec::new(command.name, read_users),
            };
            spec.fields(command.fields)
                .requires(command.requires)
                .help(command.help)
        })
        .collect()
}

/// A change of users or roles, run on the config server.
async fn change_users(
    state: &RouterState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let outcome = state.config.run(req).await;
    // Whatever the outcome, what this router cached may be stale now.
    state.node.users.invalidate();
    outcome
}

async fn read_users(
    state: &RouterState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    state.config.run(req).await
}
