//! The user-management commands on a router: run on the config server (which keeps
//! `admin.system.users`), then this router's user cache is dropped so its next lookups see the
//! change at once (other routers see it when they next poll the config server's generation).
//! Custom roles are not built yet: their commands answer NotImplemented.

use super::super::RouterState;
use crate::command::CommandRequest;
use crate::error::{ErrorCode, MongoError, Result};
use crate::server::auth::{Requires, user_admin};
use crate::server::{CommandSpec, RequestContext};
use bson::RawDocumentBuf;

pub(super) fn commands() -> Vec<CommandSpec<RouterState>> {
    let mut specs: Vec<_> = user_admin::USER_COMMANDS
        .iter()
        .map(|command| {
            let spec = match command.changes {
                true => CommandSpec::new(command.name, change_users).takes_write_concern(),
                false => CommandSpec::new(command.name, read_users),
            };
            spec.fields(command.fields)
                .requires(command.requires)
                .help(command.help)
        })
        .collect();
    for name in [
        "createRole",
        "updateRole",
        "dropRole",
        "dropAllRolesFromDatabase",
        "grantRolesToRole",
        "revokeRolesFromRole",
        "grantPrivilegesToRole",
        "revokePrivilegesFromRole",
    ] {
        specs.push(
            CommandSpec::new(name, custom_roles)
                .requires(Requires::Authenticated)
                .help("User-defined roles are not supported yet"),
        );
    }
    specs
}

/// A change of users, run on the config server.
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

async fn custom_roles(
    _state: &RouterState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    Err(MongoError::new(
        ErrorCode::NotImplemented,
        format!(
            "{} is not supported: docgrid has only MongoDB's built-in roles yet",
            req.name()
        ),
    ))
}
