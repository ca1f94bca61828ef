//! The user-management commands on a router: run on the config server (which keeps
//! `admin.system.users`), then this router's user cache is dropped so its next lookups see the
//! change at once (other routers see it when they next poll the config server's generation).
//! Custom roles are not built yet: their commands answer NotImplemented.

use super::super::RouterState;
use crate::command::{CommandRequest, requests};
use crate::error::{ErrorCode, MongoError, Result};
use crate::server::auth::{Requires, user_admin};
use crate::server::{CommandSpec, RequestContext};
use bson::RawDocumentBuf;

pub(super) fn commands() -> Vec<CommandSpec<RouterState>> {
    let changes = [
        (
            "createUser",
            requests::CreateUserRequest::FIELDS,
            Requires::Computed(user_admin::create_user_requires),
            "Adds a user to the system",
        ),
        (
            "updateUser",
            requests::UpdateUserRequest::FIELDS,
            Requires::Computed(user_admin::update_user_requires),
            "Used to update a user, for example to change its password",
        ),
        (
            "dropUser",
            requests::DropUserRequest::FIELDS,
            Requires::Database(&["dropUser"]),
            "Drops a single user.",
        ),
        (
            "dropAllUsersFromDatabase",
            requests::DropAllUsersFromDatabaseRequest::FIELDS,
            Requires::Database(&["dropUser"]),
            "Drops all users for a single database.",
        ),
        (
            "grantRolesToUser",
            requests::UserRolesRequest::FIELDS,
            Requires::Computed(user_admin::grant_roles_requires),
            "Grants roles to a user.",
        ),
        (
            "revokeRolesFromUser",
            requests::UserRolesRequest::FIELDS,
            Requires::Computed(user_admin::revoke_roles_requires),
            "Revokes roles from a user.",
        ),
    ];
    let mut specs: Vec<_> = changes
        .into_iter()
        .map(|(name, fields, requires, help)| {
            CommandSpec::new(name, change_users)
                .fields(fields)
                .requires(requires)
                .takes_write_concern()
                .help(help)
        })
        .collect();
    specs.push(
        CommandSpec::new("usersInfo", read_users)
            .fields(requests::UsersInfoRequest::FIELDS)
            .requires(Requires::Computed(user_admin::users_info_requires))
            .help("Returns information about users."),
    );
    specs.push(
        CommandSpec::new("rolesInfo", read_users)
            .fields(requests::RolesInfoRequest::FIELDS)
            .requires(Requires::Database(&["viewRole"]))
            .help("Returns information about roles."),
    );
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
