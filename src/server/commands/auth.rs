//! The authentication commands every role answers: saslStart, saslContinue, authenticate
//! (MONGODB-X509), logout, connectionStatus, and the authentication parts of `hello`
//! (`saslSupportedMechs`, `speculativeAuthenticate`).

use crate::command::{CommandRequest, missing, requests};
use crate::error::{ErrorCode, MongoError, Result};
use crate::server::RequestContext;
use crate::server::auth::{self, Requires, UserName, privileges, sasl};
use crate::server::dispatch::{CommandSpec, NodeState};
use bson::{Bson, RawBsonRef, RawDocumentBuf, doc};

pub(super) fn commands<S: NodeState>() -> Vec<CommandSpec<S>> {
    vec![
        CommandSpec::new("saslStart", sasl_start)
            .fields(requests::SaslStartRequest::FIELDS)
            .requires(Requires::Nothing)
            .help("First step in a SASL authentication conversation."),
        CommandSpec::new("saslContinue", sasl_continue)
            .fields(requests::SaslContinueRequest::FIELDS)
            .requires(Requires::Nothing)
            .help("Subsequent steps in a SASL authentication conversation."),
        CommandSpec::new("authenticate", authenticate)
            .fields(requests::AuthenticateRequest::FIELDS)
            .requires(Requires::Nothing)
            .help("internal"),
        CommandSpec::new("logout", logout)
            .fields(requests::LogoutRequest::FIELDS)
            .requires(Requires::Nothing)
            .help("de-authenticate"),
        CommandSpec::new("connectionStatus", connection_status)
            .fields(requests::ConnectionStatusRequest::FIELDS)
            .requires(Requires::Nothing)
            .help(
                "Returns connection-specific information such as logged-in users and their roles",
            ),
    ]
}

async fn sasl_start<S: NodeState>(
    state: &S,
    ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let parsed = requests::SaslStartRequest::parse(&req)?;
    let mechanism = parsed
        .mechanism
        .ok_or_else(|| missing("saslStart", "mechanism"))?;
    let payload = sasl::payload(&req.body)?;
    let skip = sasl::skip_empty_exchange(&req.body)?;
    sasl::start(state, ctx, &req.db, &mechanism, &payload, skip).await
}

async fn sasl_continue<S: NodeState>(
    state: &S,
    ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let parsed = requests::SaslContinueRequest::parse(&req)?;
    let id = parsed
        .conversation_id
        .ok_or_else(|| missing("saslContinue", "conversationId"))?;
    let payload = sasl::payload(&req.body)?;
    sasl::step(state, ctx, i32::try_from(id).unwrap_or(-1), &payload).await
}

/// `authenticate` runs MONGODB-X509 only (MONGODB-CR is gone since MongoDB 4.0): the user is
/// the subject of the certificate the client's TLS handshake verified, a user of `$external`.
async fn authenticate<S: NodeState>(
    state: &S,
    ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let parsed = requests::AuthenticateRequest::parse(&req)?;
    let mechanism = parsed
        .mechanism
        .ok_or_else(|| missing("authenticate", "mechanism"))?;
    x509_authenticate(state, ctx, &req.db, &mechanism, parsed.user.as_deref()).await
}

/// MONGODB-X509 on database `db` for `user` (optional: the certificate names it), from
/// `authenticate` or `hello`'s `speculativeAuthenticate`; its reply `{dbname, user}`.
pub(super) async fn x509_authenticate<S: NodeState>(
    state: &S,
    ctx: &RequestContext,
    db: &str,
    mechanism: &str,
    user: Option<&str>,
) -> Result<RawDocumentBuf> {
    if mechanism != "MONGODB-X509" {
        return Err(MongoError::new(
            ErrorCode::MechanismUnavailable,
            format!(
                "Received authentication for mechanism {mechanism} which is unknown or not enabled"
            ),
        ));
    }
    let claimed = UserName::new(user.unwrap_or(""), db);
    let Some(subject) = ctx.client_subject() else {
        return Err(sasl::failed(
            ctx,
            mechanism,
            &claimed,
            "No verified subject name available from client",
        ));
    };
    if db != auth::x509::EXTERNAL_DB {
        return Err(sasl::failed(
            ctx,
            mechanism,
            &claimed,
            "X.509 authentication must always use the $external database.",
        ));
    }
    if user.is_some_and(|u| u != subject) {
        return Err(sasl::failed(
            ctx,
            mechanism,
            &claimed,
            "There is no x.509 client certificate matching the user.",
        ));
    }
    let name = UserName::new(subject, db);
    if ctx.has_member_certificate() {
        return member_authenticate(state, ctx, &name, mechanism);
    }
    let Some(stored) = auth::find_user(state, &name).await? else {
        let why = format!("UserNotFound: Could not find user \"{subject}\" for db \"{db}\"");
        return Err(sasl::failed(ctx, mechanism, &name, &why));
    };
    auth::set_authenticated(state, ctx, &stored);
    sasl::succeeded(ctx, mechanism, &name);
    Ok(RawDocumentBuf::from_document(
        &doc! {"dbname": db, "user": subject},
    )?)
}

/// MONGODB-X509 with a member certificate: `__system` when the cluster authentication mode
/// accepts certificates; otherwise refused, even to a user of that subject (MongoDB's
/// `enforceUserClusterSeparation`, on by default).
fn member_authenticate<S: NodeState>(
    state: &S,
    ctx: &RequestContext,
    name: &UserName,
    mechanism: &str,
) -> Result<RawDocumentBuf> {
    if !state
        .node()
        .cluster_auth_mode
        .get()
        .is_some_and(|mode| mode.allows_x509())
    {
        return Err(sasl::failed(
            ctx,
            mechanism,
            name,
            "The provided certificate can only be used for cluster authentication, not client authentication. The current configuration does not allow x.509 cluster authentication, check the --clusterAuthMode flag",
        ));
    }
    if !ctx.is_internal() {
        tracing::warn!(
            id = 20430,
            client = ?ctx.peer,
            "Client isn't a mongod or mongos, but is connecting with a certificate with cluster membership"
        );
    }
    let system = auth::cluster_auth_mode::x509_system_user();
    auth::set_authenticated(state, ctx, &system);
    sasl::succeeded(ctx, mechanism, &system.name);
    Ok(RawDocumentBuf::from_document(
        &doc! {"dbname": &name.db, "user": &name.user},
    )?)
}

async fn logout<S: NodeState>(
    _state: &S,
    ctx: &RequestContext,
    _req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let mut session = ctx.auth();
    session.user = None;
    session.conversation = None;
    Ok(RawDocumentBuf::new())
}

async fn connection_status<S: NodeState>(
    state: &S,
    ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let show_privileges =
        requests::ConnectionStatusRequest::parse(&req)?.show_privileges == Some(true);
    let user = auth::current_user(state, ctx).await?;
    let users: Vec<Bson> = user.iter().map(|u| u.name.to_document().into()).collect();
    let mut roles: Vec<_> = user.iter().flat_map(|u| u.roles.clone()).collect();
    roles.sort();
    roles.dedup();
    let mut info = doc! {
        "authenticatedUsers": users,
        "authenticatedUserRoles": roles.iter().map(|r| Bson::from(r.to_document())).collect::<Vec<_>>(),
    };
    if show_privileges {
        let granted = user.map(|u| u.privileges.clone()).unwrap_or_default();
        let shown: Vec<Bson> = privileges::merged(&granted)
            .iter()
            .map(|p| p.to_document().into())
            .collect();
        info.insert("authenticatedUserPrivileges", shown);
    }
    Ok(RawDocumentBuf::from_document(&doc! {"authInfo": info})?)
}

/// `hello`'s authentication fields: the mechanisms of the user `saslSupportedMechs` names
/// (`"db.user"`; absent when there is no such user) and the first step of a
/// `speculativeAuthenticate` conversation (absent when it failed: the client then
/// authenticates as usual and meets the error).
pub(super) async fn hello_fields<S: NodeState>(
    state: &S,
    ctx: &RequestContext,
    req: &CommandRequest,
    reply: &mut RawDocumentBuf,
) -> Result<()> {
    if let Some(name) = req.args().str("saslSupportedMechs")? {
        let user = match name.split_once('.') {
            Some((db, user)) => auth::find_user(state, &UserName::new(user, db)).await?,
            None => None,
        };
        if let Some(user) = user {
            let mut mechanisms = bson::RawArrayBuf::new();
            for mechanism in user.mechanisms() {
                mechanisms.push(mechanism);
            }
            reply.append("saslSupportedMechs", mechanisms);
        }
    }
    if let Some(RawBsonRef::Document(spec)) = req.body.get("speculativeAuthenticate")? {
        let db = match spec.get("db")? {
            Some(RawBsonRef::String(db)) => db.to_string(),
            // Drivers send MONGODB-X509 without `db`: MongoDB takes `$external`, the only
            // database that mechanism authenticates on.
            _ if spec.get("authenticate")?.is_some() => auth::x509::EXTERNAL_DB.to_string(),
            _ => req.db.clone(),
        };
        let mechanism = match spec.get("mechanism")? {
            Some(RawBsonRef::String(m)) => m.to_string(),
            _ => String::new(),
        };
        let user = match spec.get("user")? {
            Some(RawBsonRef::String(user)) => Some(user),
            _ => None,
        };
        let started = match (spec.get("saslStart")?, spec.get("authenticate")?) {
            (Some(_), _) => match sasl::payload(spec) {
                Ok(payload) => {
                    let skip = sasl::skip_empty_exchange(spec)?;
                    sasl::start(state, ctx, &db, &mechanism, &payload, skip).await
                }
                Err(e) => Err(e),
            },
            (None, Some(_)) => x509_authenticate(state, ctx, &db, &mechanism, user).await,
            (None, None) => Err(MongoError::new(
                ErrorCode::MechanismUnavailable,
                format!(
                    "Received speculativeAuthenticate for mechanism {mechanism} which is unknown or not enabled"
                ),
            )),
        };
        match started {
            Ok(first) => reply.append("speculativeAuthenticate", first),
            Err(e) => tracing::debug!(error = %e, "speculative authentication failed"),
        }
    }
    Ok(())
}
