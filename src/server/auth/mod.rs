//! Authentication and authorization: SCRAM (`scram`), the SASL conversations of a connection
//! (`sasl`), stored users and their cache (`users`), as routers and shards read them from the
//! config server (`config_users`), built-in roles (`roles`), privileges
//! (`privileges`, `actions`, `privilege_documents`), user-defined roles and the role graph (`role_graph`,
//! `role_admin`), what each command requires (`requires`), and [`authorize`], the one
//! privilege check the dispatcher makes before every command when `--auth` is on; members
//! prove membership as `__system` with a key file (`keyfile`, `scram_client`) or a member
//! certificate (`x509`), as `--clusterAuthMode` says (`cluster_auth_mode`).

pub mod actions;
pub mod cluster_auth_mode;
pub mod computed;
pub mod config_users;
pub mod keyfile;
pub mod member_certificate;
mod pipeline_privileges;
pub mod privilege_documents;
pub mod privileges;
pub mod requires;
pub mod role_admin;
pub mod role_graph;
pub mod roles;
pub mod sasl;
pub mod scram;
pub mod scram_client;
pub mod user_admin;
pub mod users;
pub mod x509;

pub use keyfile::ClusterKey;
pub use requires::{Required, Requires};
pub use users::{RoleName, StoredUser, UserCache, UserName};

use super::RequestContext;
use super::dispatch::NodeState;
use crate::command::CommandRequest;
use crate::error::{ErrorCode, MongoError, Result};
use privileges::Privilege;
use std::sync::Arc;

/// The user a connection is authenticated as, with what its roles grant, resolved at a
/// generation of the node's user cache.
#[derive(Clone, Debug)]
pub struct AuthenticatedUser {
    pub name: UserName,
    pub roles: Vec<RoleName>,
    pub privileges: Vec<Privilege>,
    generation: u64,
}

impl AuthenticatedUser {
    fn of(user: &StoredUser, generation: u64) -> AuthenticatedUser {
        AuthenticatedUser {
            name: user.name.clone(),
            roles: user.roles.clone(),
            privileges: user.privileges(),
            generation,
        }
    }
}

/// A connection's authentication state: who it is, and a SASL conversation in progress.
#[derive(Debug, Default)]
pub struct AuthSession {
    /// Shared, so that each command's check takes it without copying its privileges.
    pub user: Option<Arc<AuthenticatedUser>>,
    pub conversation: Option<sasl::Conversation>,
}

/// The iteration count new credentials of `mechanism` are salted with
/// (`scramIterationCount`, `scramSHA256IterationCount`).
pub fn iteration_count(params: &super::Parameters, mechanism: scram::Mechanism) -> u32 {
    let (name, default) = match mechanism {
        scram::Mechanism::Sha1 => ("scramIterationCount", 10_000),
        scram::Mechanism::Sha256 => ("scramSHA256IterationCount", 15_000),
    };
    params
        .get_i64(name)
        .and_then(|n| u32::try_from(n).ok())
        .unwrap_or(default)
}

/// A stored user, from the node's cache or loaded (from the config server, or a config
/// server's own `admin.system.users`); `__system@local` is the key file's, when there is one,
/// or the member certificates' when the cluster authentication mode accepts them.
pub async fn find_user<S: NodeState>(
    state: &S,
    name: &UserName,
) -> Result<Option<Arc<StoredUser>>> {
    if ClusterKey::is_system_user(name) {
        let node = state.node();
        let mode = node.cluster_auth_mode.get();
        if let Some(key) = node
            .cluster_key
            .as_ref()
            .filter(|_| mode.is_some_and(cluster_auth_mode::ClusterAuthMode::allows_key_file))
        {
            return Ok(Some(key.system_user()));
        }
        // Only a member certificate authenticates it (MONGODB-X509); it has no password.
        if mode.is_some_and(cluster_auth_mode::ClusterAuthMode::allows_x509) {
            return Ok(Some(cluster_auth_mode::x509_system_user()));
        }
    }
    let cache = &state.node().users;
    if let Some(user) = cache.get(name) {
        return Ok(Some(user));
    }
    let generation = cache.generation();
    let Some(doc) = state.load_user(name).await? else {
        return Ok(None);
    };
    let Some(user) = StoredUser::from_document(&doc) else {
        return Ok(None);
    };
    let user = Arc::new(user);
    cache.insert(user.clone(), generation);
    Ok(Some(user))
}

/// Makes `user` the connection's authenticated user.
pub fn set_authenticated<S: NodeState>(state: &S, ctx: &RequestContext, user: &StoredUser) {
    let generation = state.node().users.generation();
    ctx.auth().user = Some(Arc::new(AuthenticatedUser::of(user, generation)));
}

/// The connection's user, looked up again when the user cache moved on since it was resolved
/// (its roles may have changed; a dropped user is no longer authenticated).
pub async fn current_user<S: NodeState>(
    state: &S,
    ctx: &RequestContext,
) -> Result<Option<Arc<AuthenticatedUser>>> {
    let generation = state.node().users.generation();
    let Some(user) = ctx.auth().user.clone() else {
        return Ok(None);
    };
    if user.generation == generation {
        return Ok(Some(user));
    }
    let fresh = find_user(state, &user.name)
        .await?
        .map(|stored| Arc::new(AuthenticatedUser::of(&stored, generation)));
    let mut session = ctx.auth();
    if session.user.as_ref().map(|u| &u.name) == Some(&user.name) {
        session.user = fresh.clone();
    }
    Ok(fresh)
}

/// The privilege check of every command on a node with authorization enabled: `requires`
/// resolved on the request, against the connection's user. Calls from roles in the same
/// process are not checked; calls over TCP are, whatever their `hello` claimed: a member
/// proves membership by authenticating as `__system` with the key file, which grants the
/// `internal` action undeclared commands need.
pub async fn authorize<S: NodeState>(
    state: &S,
    ctx: &RequestContext,
    name: &str,
    requires: &Requires,
    request: &CommandRequest,
) -> Result<()> {
    if !state.node().authorization || ctx.in_process() {
        return Ok(());
    }
    let caller = ctx.auth().user.as_ref().map(|u| u.name.clone());
    let required = requires.resolve(request, caller.as_ref())?;
    if required == Required::Nothing {
        return Ok(());
    }
    let Some(user) = current_user(state, ctx).await? else {
        if localhost_exception(state, ctx, name, request).await? {
            return Ok(());
        }
        return Err(MongoError::new(
            ErrorCode::Unauthorized,
            format!("command {name} requires authentication"),
        ));
    };
    match required {
        Required::AnyOf(alternatives)
            if !alternatives
                .iter()
                .any(|needed| privileges::allows(&user.privileges, needed)) =>
        {
            Err(not_authorized(request))
        }
        Required::Privileges(needed) if !privileges::allows(&user.privileges, &needed) => {
            Err(not_authorized(request))
        }
        _ => Ok(()),
    }
}

/// MongoDB's Unauthorized for an authenticated user without the privileges.
pub fn not_authorized(request: &CommandRequest) -> MongoError {
    let shown = request
        .body
        .to_document()
        .map(|d| crate::document::display::render_doc(&d))
        .unwrap_or_default();
    MongoError::new(
        ErrorCode::Unauthorized,
        format!(
            "not authorized on {} to execute command {shown}",
            request.db
        ),
    )
}

/// The localhost exception: with authorization on and no user at all, a connection from the
/// loopback interface may create the first user, in `admin`.
async fn localhost_exception<S: NodeState>(
    state: &S,
    ctx: &RequestContext,
    name: &str,
    request: &CommandRequest,
) -> Result<bool> {
    let local = ctx.peer.is_some_and(|p| p.ip().is_loopback());
    if !local || name != "createUser" || request.db != "admin" {
        return Ok(false);
    }
    Ok(!state.has_users().await?)
}

/// The authenticated user's privileges, for commands whose reply depends on them
/// (`listDatabases`' `authorizedDatabases`); `None` when authorization is off or the call is
/// internal (everything is allowed).
pub async fn privileges_of<S: NodeState>(
    state: &S,
    ctx: &RequestContext,
) -> Result<Option<Vec<Privilege>>> {
    if !state.node().authorization || ctx.in_process() {
        return Ok(None);
    }
    Ok(Some(
        current_user(state, ctx)
            .await?
            .map(|u| u.privileges.clone())
            .unwrap_or_default(),
    ))
}

/// The commands of a shard's or config server's `table` a client could run there without the
/// key file: those that declare what they require, beyond the ones every role shares. The
/// roles' tests keep it empty, so that their internal commands (`_shardsvr*`, `_configsvr*`,
/// `_addShard`, transaction coordination, migrations, and the data commands routers send)
/// need the `internal` action only `__system` holds.
#[cfg(test)]
pub fn declared_beyond_common<S: NodeState>(table: &super::CommandTable<S>) -> Vec<&'static str> {
    let common: Vec<&str> = super::commands::common::<S>()
        .iter()
        .chain([super::commands::kill_op::<S>()].iter())
        .flat_map(|spec| std::iter::once(spec.name).chain(spec.aliases.iter().copied()))
        .collect();
    table
        .entries()
        .into_iter()
        .filter(|(name, spec)| spec.requires.is_some() && !common.contains(name))
        .map(|(name, _)| name)
        .collect()
}
