//! The user-defined role commands and `rolesInfo`, run on the config server over
//! `admin.system.roles`. Every change moves the user cache generation, as user changes do:
//! what a user may do depends on the roles it holds.

use super::super::ConfigState;
use super::super::store::{ConfigStore, ConfigWrite};
use crate::command::{CommandRequest, requests};
use crate::error::{ErrorCode, MongoError, Result};
use crate::server::auth::privilege_documents::{self, parse_privileges, privileges_value};
use crate::server::auth::role_admin::{self, ShowPrivileges};
use crate::server::auth::role_graph::{self, RoleGraph, StoredRole, roles_value};
use crate::server::auth::{RoleName, StoredUser, privileges, roles, user_admin};
use crate::server::{CommandSpec, RequestContext};
use bson::{Bson, Document, RawDocumentBuf, doc, rawdoc};

const ROLES: &str = "system.roles";
const USERS: &str = "system.users";

pub(super) fn commands() -> Vec<CommandSpec<ConfigState>> {
    role_admin::ROLE_COMMANDS
        .iter()
        .map(|command| {
            let spec = match command.name {
                "createRole" => CommandSpec::new(command.name, create_role),
                "updateRole" => CommandSpec::new(command.name, update_role),
                "dropRole" => CommandSpec::new(command.name, drop_role),
                "dropAllRolesFromDatabase" => CommandSpec::new(command.name, drop_all_roles),
                "grantRolesToRole" | "revokeRolesFromRole" => {
                    CommandSpec::new(command.name, change_roles)
                }
                // grantPrivilegesToRole and revokePrivilegesFromRole.
                _ => CommandSpec::new(command.name, change_privileges),
            };
            spec.fields(command.fields)
                .help(command.help)
                .takes_write_concern()
        })
        .collect()
}

impl ConfigState {
    fn roles_store(&self) -> ConfigStore<'_> {
        ConfigStore::admin(&self.storage)
    }

    /// Every user-defined role.
    pub(crate) async fn role_graph(&self) -> Result<RoleGraph> {
        Ok(RoleGraph::new(
            &self.roles_store().find(ROLES, &doc! {}).await?,
        ))
    }

    /// A user-defined role that must exist (RoleNotFound), refusing built-in ones as MongoDB
    /// refuses to modify them.
    fn modifiable(graph: &RoleGraph, name: &RoleName) -> Result<StoredRole> {
        role_admin::check_modifiable(name)?;
        graph
            .get(name)
            .cloned()
            .ok_or_else(|| role_graph::role_not_found(name))
    }

    /// Changes a user-defined role under the user lock, the role graph at hand for checks.
    async fn modify_role(
        &self,
        name: &RoleName,
        change: impl FnOnce(&RoleGraph, &mut StoredRole) -> Result<()> + Send,
    ) -> Result<RawDocumentBuf> {
        let _guard = self.user_write_lock.lock().await;
        let graph = self.role_graph().await?;
        let mut role = Self::modifiable(&graph, name)?;
        change(&graph, &mut role)?;
        self.save_role(&role).await
    }

    async fn save_role(&self, role: &StoredRole) -> Result<RawDocumentBuf> {
        self.roles_store()
            .upsert(ROLES, &role.to_document())
            .await?;
        self.users_changed();
        Ok(RawDocumentBuf::new())
    }
}

async fn create_role(
    state: &ConfigState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let name = role_admin::role_of(&req)?;
    let parsed = requests::RoleRequest::parse(&req)?;
    match name.db.as_str() {
        "local" => {
            return Err(MongoError::bad_value(
                "Cannot create roles in the local database",
            ));
        }
        "$external" => {
            return Err(MongoError::bad_value(
                "Cannot create roles in the $external database",
            ));
        }
        _ => {}
    }
    if roles::is_builtin(&name.role, &name.db) {
        return Err(MongoError::bad_value(
            "Cannot create roles with the same name as a built-in role",
        ));
    }
    if name.role.contains('\0') {
        return Err(MongoError::bad_value(
            "Role name cannot contain NULL characters",
        ));
    }
    let privileges = role_admin::required(&req, parsed.privileges, "privileges")?;
    let granted = role_admin::required(&req, parsed.roles, "roles")?;
    let role = StoredRole {
        privileges: parse_privileges(&privileges)?,
        roles: dedup(user_admin::parse_roles(&granted, &name.db)?),
        restrictions: user_admin::check_restrictions(&parsed.authentication_restrictions)?,
        name,
    };
    let _guard = state.user_write_lock.lock().await;
    let graph = state.role_graph().await?;
    graph.check_grant_roles_to_role(&role.name, &role.roles)?;
    role_graph::check_privileges_for_role(&role.name, &role.privileges)?;
    match state.roles_store().insert(ROLES, &role.to_document()).await {
        Err(e) if e.code() == ErrorCode::DuplicateKey => {
            return Err(MongoError::location(
                51002,
                format!("Role \"{}\" already exists", role.name),
            ));
        }
        other => other?,
    }
    state.users_changed();
    Ok(RawDocumentBuf::new())
}

/// MongoDB keeps a role's roles as a set.
fn dedup(roles: Vec<RoleName>) -> Vec<RoleName> {
    let mut out: Vec<RoleName> = Vec::new();
    for role in roles {
        if !out.contains(&role) {
            out.push(role);
        }
    }
    out
}

async fn update_role(
    state: &ConfigState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let name = role_admin::role_of(&req)?;
    let parsed = requests::RoleRequest::parse(&req)?;
    if parsed.privileges.is_none()
        && parsed.roles.is_none()
        && parsed.authentication_restrictions.is_none()
    {
        return Err(MongoError::bad_value(
            "Must specify at least one field to update in updateRole",
        ));
    }
    let privileges = parsed
        .privileges
        .as_deref()
        .map(parse_privileges)
        .transpose()?;
    let granted = parsed
        .roles
        .as_deref()
        .map(|r| user_admin::parse_roles(r, &name.db).map(dedup))
        .transpose()?;
    user_admin::check_restrictions(&parsed.authentication_restrictions)?;
    let _guard = state.user_write_lock.lock().await;
    let graph = state.role_graph().await?;
    graph.check_exist(std::slice::from_ref(&name))?;
    let mut role = graph.get(&name).cloned().ok_or_else(|| {
        MongoError::new(ErrorCode::RoleNotFound, format!("Role {name} not found"))
    })?;
    if let Some(granted) = granted {
        graph.check_grant_roles_to_role(&name, &granted)?;
        role.roles = granted;
    }
    if let Some(privileges) = privileges {
        role_graph::check_privileges_for_role(&name, &privileges)?;
        role.privileges = privileges;
    }
    state.save_role(&role).await
}

/// `grantRolesToRole` and `revokeRolesFromRole`.
async fn change_roles(
    state: &ConfigState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let grant = req.name() == "grantRolesToRole";
    let name = role_admin::role_of(&req)?;
    let parsed = requests::RoleRolesRequest::parse(&req)?;
    let listed = role_admin::listed(&req, parsed.roles, "roles")?;
    let listed = user_admin::parse_roles(&listed, &name.db)?;
    state
        .modify_role(&name, |graph, role| {
            if grant {
                graph.check_grant_roles_to_role(&role.name, &listed)?;
                role.roles = dedup(role.roles.drain(..).chain(listed).collect());
            } else {
                graph.check_exist(&listed)?;
                role.roles.retain(|r| !listed.contains(r));
            }
            Ok(())
        })
        .await
}

/// `grantPrivilegesToRole` and `revokePrivilegesFromRole`.
async fn change_privileges(
    state: &ConfigState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let grant = req.name() == "grantPrivilegesToRole";
    let name = role_admin::role_of(&req)?;
    let parsed = requests::RolePrivilegesRequest::parse(&req)?;
    let listed = role_admin::listed(&req, parsed.privileges, "privileges")?;
    role_admin::check_modifiable(&name)?;
    let listed = parse_privileges(&listed)?;
    if grant {
        role_graph::check_privileges_for_role(&name, &listed)?;
    }
    state
        .modify_role(&name, |_, role| {
            for privilege in listed {
                match grant {
                    true => privilege_documents::add_privilege(&mut role.privileges, privilege),
                    false => {
                        privilege_documents::remove_privilege(&mut role.privileges, &privilege)
                    }
                }
            }
            Ok(())
        })
        .await
}

async fn drop_role(
    state: &ConfigState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let name = role_admin::role_of(&req)?;
    requests::DropRoleRequest::parse(&req)?;
    let _guard = state.user_write_lock.lock().await;
    let graph = state.role_graph().await?;
    ConfigState::modifiable(&graph, &name)?;
    let dropped = |r: &RoleName| *r == name;
    let mut writes = unlinked(state, &graph, &dropped).await?;
    writes.push(ConfigWrite::Delete(ROLES, Bson::String(name.id())));
    let outcome = state.roles_store().write_batch(&writes).await;
    state.users_changed();
    outcome.map(|_| RawDocumentBuf::new())
}

async fn drop_all_roles(
    state: &ConfigState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    requests::DropAllRolesFromDatabaseRequest::parse(&req)?;
    let db = req.db.clone();
    let _guard = state.user_write_lock.lock().await;
    let graph = state.role_graph().await?;
    let dropped = |r: &RoleName| r.db == db;
    let mut writes = unlinked(state, &graph, &dropped).await?;
    let doomed = graph.roles_of(&db);
    let n = doomed.len() as i32;
    writes.extend(
        doomed
            .into_iter()
            .map(|r| ConfigWrite::Delete(ROLES, Bson::String(r.name.id()))),
    );
    let outcome = state.roles_store().write_batch(&writes).await;
    state.users_changed();
    outcome?;
    Ok(rawdoc! {"n": n})
}

/// The writes that take the dropped roles out of every user and every other role holding
/// them, so that dropping is one batch: all or nothing.
async fn unlinked(
    state: &ConfigState,
    graph: &RoleGraph,
    dropped: &(dyn Fn(&RoleName) -> bool + Sync),
) -> Result<Vec<ConfigWrite>> {
    let mut writes = Vec::new();
    for mut user in state.roles_store().find(USERS, &doc! {}).await? {
        let Some(stored) = StoredUser::from_document(&user) else {
            continue;
        };
        if stored.roles.iter().any(dropped) {
            let kept: Vec<RoleName> = stored.roles.into_iter().filter(|r| !dropped(r)).collect();
            user.insert("roles", roles_value(&kept));
            writes.push(ConfigWrite::Upsert(USERS, user));
        }
    }
    for role in graph.all() {
        if !dropped(&role.name) && role.roles.iter().any(dropped) {
            let mut kept = role.clone();
            kept.roles.retain(|r| !dropped(r));
            writes.push(ConfigWrite::Upsert(ROLES, kept.to_document()));
        }
    }
    Ok(writes)
}

pub(super) async fn roles_info(
    state: &ConfigState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let parsed = requests::RolesInfoRequest::parse(&req)?;
    let show = role_admin::show_privileges(parsed.show_privileges.as_ref())?;
    let restrictions = parsed.show_authentication_restrictions == Some(true);
    let graph = state.role_graph().await?;
    let asked = user_admin::roles_query(&req)?;
    if show == ShowPrivileges::AsUserFragment {
        let Some(asked) = asked else {
            return Err(MongoError::new(
                ErrorCode::IllegalOperation,
                "Cannot get user fragment for all roles in a database",
            ));
        };
        graph.check_exist(&asked)?;
        let resolved = graph.resolve(&asked);
        let merged = privileges::merged(&resolved.privileges);
        let mut fragment = doc! {
            "roles": roles_value(&asked),
            "inheritedRoles": roles_value(&resolved.roles),
            "inheritedPrivileges": privileges_value(&merged),
        };
        if restrictions {
            fragment.insert("inheritedAuthenticationRestrictions", resolved.restrictions);
        }
        return Ok(RawDocumentBuf::from_document(
            &doc! {"userFragment": fragment},
        )?);
    }
    let show_privileges = show == ShowPrivileges::Yes;
    let describe = |role: &RoleName| -> Option<Document> {
        match graph.get(role) {
            Some(custom) => Some(graph.role_info(custom, show_privileges, restrictions)),
            None => user_admin::builtin_role_info(role, show_privileges),
        }
    };
    let found: Vec<Bson> = match asked {
        Some(asked) => asked.iter().filter_map(describe).map(Bson::from).collect(),
        None => {
            let mut names: Vec<RoleName> = Vec::new();
            if parsed.show_builtin_roles == Some(true) {
                names.extend(
                    roles::builtin_roles(&req.db)
                        .into_iter()
                        .map(|role| RoleName {
                            role: role.into(),
                            db: req.db.clone(),
                        }),
                );
            }
            names.extend(graph.roles_of(&req.db).into_iter().map(|r| r.name.clone()));
            names.iter().filter_map(describe).map(Bson::from).collect()
        }
    };
    Ok(RawDocumentBuf::from_document(&doc! {"roles": found})?)
}
