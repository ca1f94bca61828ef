//! The user-management commands, run where MongoDB's sharded clusters run them: on the config
//! server, over `admin.system.users`. Each change moves the user cache generation routers
//! poll (`_getUserCacheGeneration`), so their caches drop what changed.

use super::super::ConfigState;
use super::super::store::ConfigStore;
use crate::command::{CommandRequest, missing, requests};
use crate::error::{ErrorCode, MongoError, Result};
use crate::server::auth::privilege_documents::privileges_value;
use crate::server::auth::role_graph::{RoleGraph, roles_value};
use crate::server::auth::scram::Mechanism;
use crate::server::auth::user_admin::{self, UsersQuery};
use crate::server::auth::{StoredUser, UserName, privileges};
use crate::server::{CommandSpec, RequestContext};
use bson::{Bson, Document, RawDocumentBuf, doc, rawdoc};

const USERS: &str = "system.users";

pub(super) fn commands() -> Vec<CommandSpec<ConfigState>> {
    let mut specs: Vec<_> = user_admin::USER_COMMANDS
        .iter()
        .map(|command| {
            let spec = match command.name {
                "createUser" => CommandSpec::new(command.name, create_user),
                "updateUser" => CommandSpec::new(command.name, update_user),
                "dropUser" => CommandSpec::new(command.name, drop_user),
                "dropAllUsersFromDatabase" => CommandSpec::new(command.name, drop_all_users),
                "grantRolesToUser" | "revokeRolesFromUser" => {
                    CommandSpec::new(command.name, change_roles)
                }
                "usersInfo" => CommandSpec::new(command.name, users_info),
                // rolesInfo, the last of them.
                _ => CommandSpec::new(command.name, super::roles::roles_info),
            };
            let spec = spec.fields(command.fields).help(command.help);
            match command.changes {
                true => spec.takes_write_concern(),
                false => spec,
            }
        })
        .collect();
    specs.push(
        CommandSpec::new("_getUserCacheGeneration", user_cache_generation)
            .admin_only()
            .help("internal"),
    );
    specs
}

impl ConfigState {
    fn users(&self) -> ConfigStore<'_> {
        ConfigStore::admin(&self.storage)
    }

    /// A user's stored document.
    pub(crate) async fn user_document(&self, name: &UserName) -> Result<Option<Document>> {
        self.users().find_one(USERS, &doc! {"_id": name.id()}).await
    }

    /// A user's document as routers and this node resolve it: credentials, and what its
    /// roles grant through user-defined ones (`usersInfo` with `showCredentials` and
    /// `showPrivileges`, as mongos reads users from the config server).
    pub(crate) async fn resolved_user(&self, name: &UserName) -> Result<Option<Document>> {
        let Some(stored) = self.user_document(name).await? else {
            return Ok(None);
        };
        let shown = requests::UsersInfoRequest {
            show_credentials: Some(true),
            show_privileges: Some(true),
            ..Default::default()
        };
        Ok(Some(user_info(&stored, &shown, &self.role_graph().await?)))
    }

    pub(crate) async fn any_user(&self) -> Result<bool> {
        Ok(!self.users().find(USERS, &doc! {}).await?.is_empty())
    }

    /// Writes a changed user.
    async fn save_user(&self, user: &Document) -> Result<RawDocumentBuf> {
        self.users().upsert(USERS, user).await?;
        self.users_changed();
        Ok(RawDocumentBuf::new())
    }

    /// After a change of users or roles: this node's cache and the generation routers poll.
    pub(super) fn users_changed(&self) {
        *self.user_cache_generation.lock().expect("poisoned") = bson::oid::ObjectId::new();
        self.node.users.invalidate();
    }

    fn iterations(&self, mechanism: Mechanism) -> u32 {
        crate::server::auth::iteration_count(&self.node.params, mechanism)
    }

    async fn existing_user(&self, name: &UserName) -> Result<Document> {
        self.user_document(name)
            .await?
            .ok_or_else(|| user_not_found(name))
    }
}

fn user_not_found(name: &UserName) -> MongoError {
    MongoError::new(
        ErrorCode::UserNotFound,
        format!(
            "Could not find user \"{}\" for db \"{}\"",
            name.user, name.db
        ),
    )
}

fn check_database(db: &str) -> Result<()> {
    if db == "local" {
        return Err(MongoError::bad_value(
            "Cannot create users in the local database",
        ));
    }
    Ok(())
}

async fn create_user(
    state: &ConfigState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let name = user_admin::user_of(&req)?;
    let parsed = requests::UserRequest::parse(&req)?;
    user_admin::check_restrictions(&parsed.authentication_restrictions)?;
    check_database(&name.db)?;
    let roles = parsed
        .roles
        .as_deref()
        .ok_or_else(|| missing("createUser", "roles"))?;
    let roles = user_admin::parse_roles(roles, &name.db)?;
    let pwd = match (&parsed.pwd, name.db.as_str()) {
        (None, "$external") => None,
        (None, _) => {
            return Err(MongoError::bad_value(
                "Must provide a 'pwd' field for all user documents, except those with '$external' as the user's source db",
            ));
        }
        (Some(pwd), _) => Some(pwd),
    };
    // Such a user could never authenticate: its certificate is taken as a member's
    // (MongoDB's enforceUserClusterSeparation, on by default).
    let node = &state.node;
    if name.db == "$external"
        && node
            .tls
            .as_ref()
            .is_some_and(|t| t.is_member_subject(&name.user))
    {
        return Err(MongoError::bad_value(
            "Cannot create an x.509 user with a subjectname that would be recognized as an internal cluster member",
        ));
    }
    let mut user = doc! {
        "_id": name.id(),
        "userId": bson::Binary { subtype: bson::spec::BinarySubtype::Uuid, bytes: uuid::Uuid::new_v4().as_bytes().to_vec() },
        "user": &name.user,
        "db": &name.db,
    };
    if let Some(pwd) = pwd {
        let credentials = user_admin::credentials(
            &name,
            pwd,
            parsed.digest_password,
            parsed.mechanisms.as_deref(),
            |m| state.iterations(m),
        )?;
        user.insert("credentials", credentials);
    } else {
        user.insert("credentials", doc! {"external": true});
    }
    if let Some(custom) = parsed.custom_data {
        user.insert("customData", custom);
    }
    user.insert("roles", roles_value(&roles));
    let _guard = state.user_write_lock.lock().await;
    state.role_graph().await?.check_exist(&roles)?;
    match state.users().insert(USERS, &user).await {
        Err(e) if e.code() == ErrorCode::DuplicateKey => {
            return Err(MongoError::location(
                51003,
                format!("User \"{name}\" already exists"),
            ));
        }
        other => other?,
    }
    state.users_changed();
    Ok(RawDocumentBuf::new())
}

async fn update_user(
    state: &ConfigState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let name = user_admin::user_of(&req)?;
    let parsed = requests::UserRequest::parse(&req)?;
    user_admin::check_restrictions(&parsed.authentication_restrictions)?;
    if parsed.pwd.is_none() && parsed.custom_data.is_none() && parsed.roles.is_none() {
        return Err(MongoError::bad_value(
            "Must specify at least one field to update in updateUser",
        ));
    }
    if parsed.pwd.is_none() && parsed.mechanisms.is_some() {
        return Err(MongoError::bad_value(
            "Must provide a 'pwd' field to update the mechanisms of a user",
        ));
    }
    let roles = match &parsed.roles {
        Some(roles) => Some(user_admin::parse_roles(roles, &name.db)?),
        None => None,
    };
    let _guard = state.user_write_lock.lock().await;
    if let Some(roles) = &roles {
        state.role_graph().await?.check_exist(roles)?;
    }
    let mut user = state.existing_user(&name).await?;
    if let Some(pwd) = &parsed.pwd {
        let credentials = user_admin::credentials(
            &name,
            pwd,
            parsed.digest_password,
            parsed.mechanisms.as_deref(),
            |m| state.iterations(m),
        )?;
        user.insert("credentials", credentials);
    }
    if let Some(custom) = parsed.custom_data {
        user.insert("customData", custom);
    }
    if let Some(roles) = roles {
        user.insert("roles", roles_value(&roles));
    }
    state.save_user(&user).await
}

async fn drop_user(
    state: &ConfigState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let name = user_admin::user_of(&req)?;
    let _guard = state.user_write_lock.lock().await;
    if !state
        .users()
        .delete_by_id(USERS, &Bson::String(name.id()))
        .await?
    {
        return Err(user_not_found(&name));
    }
    state.users_changed();
    Ok(RawDocumentBuf::new())
}

async fn drop_all_users(
    state: &ConfigState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let _guard = state.user_write_lock.lock().await;
    let users = state.users().find(USERS, &doc! {"db": &req.db}).await?;
    let mut n = 0;
    for user in &users {
        if let Some(id) = user.get("_id") {
            if state.users().delete_by_id(USERS, id).await? {
                n += 1;
            }
        }
    }
    state.users_changed();
    Ok(rawdoc! {"n": n})
}

/// `grantRolesToUser` and `revokeRolesFromUser`.
async fn change_roles(
    state: &ConfigState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let grant = req.name() == "grantRolesToUser";
    let req = &req;
    let name = user_admin::user_of(req)?;
    let roles = requests::UserRolesRequest::parse(req)?
        .roles
        .ok_or_else(|| missing(req.name(), "roles"))?;
    let roles = user_admin::parse_roles(&roles, &name.db)?;
    let _guard = state.user_write_lock.lock().await;
    state.role_graph().await?.check_exist(&roles)?;
    let mut user = state.existing_user(&name).await?;
    let mut current = StoredUser::from_document(&user)
        .map(|u| u.roles)
        .unwrap_or_default();
    for role in roles {
        match (grant, current.iter().position(|r| *r == role)) {
            (true, None) => current.push(role),
            (false, Some(at)) => {
                current.remove(at);
            }
            _ => {}
        }
    }
    user.insert("roles", roles_value(&current));
    state.save_user(&user).await
}

async fn users_info(
    state: &ConfigState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let parsed = requests::UsersInfoRequest::parse(&req)?;
    let query = user_admin::users_query(&req)?;
    let details = parsed.show_privileges == Some(true)
        || parsed.show_authentication_restrictions == Some(true);
    let exact = matches!(query, UsersQuery::Named(_)) && parsed.filter.is_none();
    if details && !exact {
        return Err(MongoError::new(
            ErrorCode::IllegalOperation,
            "Privilege or restriction details require exact-match usersInfo queries",
        ));
    }
    let mut found = match &query {
        UsersQuery::Named(names) => {
            if parsed.filter.is_some() {
                return Err(MongoError::bad_value(
                    "Cannot use 'filter' when asking for specific users",
                ));
            }
            let mut found = Vec::new();
            for name in names {
                found.extend(state.user_document(name).await?);
            }
            found
        }
        UsersQuery::Database(db) => {
            let mut filter = parsed.filter.clone().unwrap_or_default();
            filter.insert("db", db.as_str());
            state.users().find(USERS, &filter).await?
        }
        UsersQuery::All => {
            let filter = parsed.filter.clone().unwrap_or_default();
            state.users().find(USERS, &filter).await?
        }
    };
    if !matches!(query, UsersQuery::Named(_)) {
        found.sort_by(|a, b| {
            let key = |d: &Document| {
                (
                    d.get_str("user").unwrap_or("").to_string(),
                    d.get_str("db").unwrap_or("").to_string(),
                )
            };
            key(a).cmp(&key(b))
        });
    }
    let graph = state.role_graph().await?;
    let users: Vec<Bson> = found
        .iter()
        .map(|doc| user_info(doc, &parsed, &graph).into())
        .collect();
    Ok(RawDocumentBuf::from_document(&doc! {"users": users})?)
}

/// A user as `usersInfo` shows it, its privileges resolved through `graph`.
fn user_info(
    stored: &Document,
    parsed: &requests::UsersInfoRequest,
    graph: &RoleGraph,
) -> Document {
    let user = StoredUser::from_document(stored);
    let mut out = Document::new();
    for field in ["_id", "userId", "user", "db"] {
        if let Some(v) = stored.get(field) {
            out.insert(field, v.clone());
        }
    }
    if parsed.show_credentials == Some(true) {
        if let Some(c) = stored.get("credentials") {
            out.insert("credentials", c.clone());
        }
    }
    if parsed.show_custom_data != Some(false) {
        if let Some(c) = stored.get("customData") {
            out.insert("customData", c.clone());
        }
    }
    out.insert(
        "roles",
        stored.get("roles").cloned().unwrap_or(Bson::Array(vec![])),
    );
    if parsed.show_privileges == Some(true) {
        let roles = user.as_ref().map(|u| u.roles.clone()).unwrap_or_default();
        let resolved = graph.resolve(&roles);
        out.insert("inheritedRoles", roles_value(&resolved.roles));
        let merged = privileges::merged(&resolved.privileges);
        out.insert("inheritedPrivileges", privileges_value(&merged));
        out.insert("inheritedAuthenticationRestrictions", resolved.restrictions);
    }
    if parsed.show_authentication_restrictions == Some(true) {
        out.insert("authenticationRestrictions", Bson::Array(vec![]));
    }
    let mechanisms: Vec<Bson> = user
        .map(|u| u.mechanisms().into_iter().map(Bson::from).collect())
        .unwrap_or_default();
    out.insert("mechanisms", mechanisms);
    out
}

async fn user_cache_generation(
    state: &ConfigState,
    _ctx: &RequestContext,
    _req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let generation = *state.user_cache_generation.lock().expect("poisoned");
    Ok(rawdoc! {"cacheGeneration": generation})
}
