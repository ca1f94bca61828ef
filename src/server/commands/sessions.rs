//! The logical session commands every role answers: `startSession`, `refreshSessions`,
//! `endSessions`, the kill commands (`killSessions`, `killAllSessions`,
//! `killAllSessionsByPattern`: a killed session's running operations are killed, its cursors
//! closed and its catalog entry killed; a router passes the kill on to every shard and the
//! config server first, as mongos' `killSessionsRemote`), and the test commands
//! `refreshLogicalSessionCacheNow` and `reapLogicalSessionCacheNow`.

use crate::command::CommandRequest;
use crate::command::requests::{
    EndSessionsRequest, KillAllSessionsByPatternRequest, KillAllSessionsRequest,
    KillSessionsRequest, RefreshSessionsRequest, StartSessionRequest,
};
use crate::document::types::type_name;
use crate::error::{ErrorCode, MongoError, Result};
use crate::server::RequestContext;
use crate::server::dispatch::{CommandSpec, NodeState};
use crate::server::session_jobs;
use crate::server::sessions::{LogicalSessionId, user_digest};
use bson::spec::BinarySubtype;
use bson::{Binary, Bson, Document, RawDocumentBuf, doc};

pub(super) fn commands<S: NodeState>() -> Vec<CommandSpec<S>> {
    vec![
        CommandSpec::new(EndSessionsRequest::COMMAND, end_sessions)
            .requires(crate::server::auth::Requires::Nothing)
            .fields(EndSessionsRequest::FIELDS)
            .help("end a set of logical sessions"),
        CommandSpec::new(RefreshSessionsRequest::COMMAND, refresh_sessions)
            .requires(crate::server::auth::Requires::Authenticated)
            .fields(RefreshSessionsRequest::FIELDS)
            .help("renew a set of logical sessions"),
        CommandSpec::new(StartSessionRequest::COMMAND, start_session)
            .requires(crate::server::auth::Requires::Authenticated)
            .fields(StartSessionRequest::FIELDS)
            .help("start a logical session"),
        // The kill commands are `strict: false` IDL commands (unknown fields pass) and run
        // outside their own session, so they never kill themselves.
        CommandSpec::new(KillSessionsRequest::COMMAND, kill_sessions)
            .requires(crate::server::auth::Requires::Authenticated)
            .detached_from_session()
            .help("kill a logical session and its operations"),
        CommandSpec::new(KillAllSessionsRequest::COMMAND, kill_all_sessions)
            .requires(crate::server::auth::Requires::Cluster(&["killAnySession"]))
            .detached_from_session()
            .help("kill all logical sessions, for a given set of users, and their operations"),
        CommandSpec::new(
            KillAllSessionsByPatternRequest::COMMAND,
            kill_all_sessions_by_pattern,
        )
        .requires(crate::server::auth::Requires::Cluster(&["killAnySession"]))
        .detached_from_session()
        .help("kill logical sessions by pattern"),
        CommandSpec::new("refreshLogicalSessionCacheNow", refresh_now)
            .requires(crate::server::auth::Requires::Authenticated)
            .test_only()
            .help("force the logical session cache to refresh. Test command only."),
        CommandSpec::new("reapLogicalSessionCacheNow", reap_now)
            .requires(crate::server::auth::Requires::Authenticated)
            .test_only()
            .help("force a reap of the logical session cache. Test command only."),
    ]
}

fn wrong_type(path: &str, value: &Bson, expected: &str) -> MongoError {
    MongoError::type_mismatch(format!(
        "BSON field '{path}' is the wrong type '{}', expected type '{expected}'",
        type_name(value)
    ))
}

fn missing(path: &str) -> MongoError {
    MongoError::new(
        ErrorCode::IDLFailedToParse,
        format!("BSON field '{path}' is missing but a required field"),
    )
}

fn unknown(path: &str) -> MongoError {
    MongoError::location(40415, format!("BSON field '{path}' is an unknown field."))
}

/// The command's value: an array of documents.
fn entries(req: &CommandRequest) -> Result<Vec<Document>> {
    let name = req.name();
    let body = Document::try_from(req.body.as_ref())?;
    let path = format!("{name}.{name}");
    let list = match body.get(name) {
        Some(Bson::Array(list)) => list,
        Some(other) => return Err(wrong_type(&path, other, "array")),
        None => return Err(missing(&path)),
    };
    list.iter()
        .map(|entry| match entry {
            Bson::Document(d) => Ok(d.clone()),
            other => Err(wrong_type(&path, other, "object")),
        })
        .collect()
}

/// A user digest (`sha256Block`): 32 bytes of BinData.
fn digest(path: &str, value: &Bson) -> Result<[u8; 32]> {
    match value {
        Bson::Binary(b) => b.bytes.as_slice().try_into().map_err(|_| {
            MongoError::new(
                ErrorCode::UnsupportedFormat,
                format!("Unsupported SHA256Block hash length: {}", b.bytes.len()),
            )
        }),
        other => Err(wrong_type(path, other, "binData")),
    }
}

/// A session as a client names it (MongoDB's `LogicalSessionFromClient`, checked as every
/// request's `lsid` is: `id`, and `uid` when impersonating; without authentication the user
/// is the unauthenticated one). A kill pattern's `lsid` must name its user.
fn session_from_client(
    path: &str,
    entry: &Document,
    uid_required: bool,
) -> Result<LogicalSessionId> {
    let raw = RawDocumentBuf::from_document(entry)?;
    crate::command::generic::session_from_client(path, &raw)?;
    if uid_required && !entry.contains_key("uid") {
        return Err(missing(&format!("{path}.uid")));
    }
    LogicalSessionId::from_lsid(&raw)
        .ok_or_else(|| MongoError::internal(format!("an unreadable session at {path}")))
}

/// The sessions a command's array names.
fn sessions(req: &CommandRequest) -> Result<Vec<LogicalSessionId>> {
    let name = req.name();
    let path = format!("{name}.{name}");
    entries(req)?
        .iter()
        .map(|entry| session_from_client(&path, entry, false))
        .collect()
}

async fn end_sessions<S: NodeState>(
    state: &S,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    // Ended at the next refresh, which removes their records and kills their cursors.
    state.node().sessions.end(sessions(&req)?);
    Ok(RawDocumentBuf::new())
}

async fn refresh_sessions<S: NodeState>(
    state: &S,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let node = state.node();
    for session in sessions(&req)? {
        node.touch_session(session)?;
    }
    Ok(RawDocumentBuf::new())
}

async fn start_session<S: NodeState>(
    state: &S,
    _ctx: &RequestContext,
    _req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let node = state.node();
    let id = Binary {
        subtype: BinarySubtype::Uuid,
        bytes: uuid::Uuid::new_v4().as_bytes().to_vec(),
    };
    let lsid = doc! {"id": id};
    let session = LogicalSessionId::from_lsid(&RawDocumentBuf::from_document(&lsid)?)
        .ok_or_else(|| MongoError::internal("a malformed new session id"))?;
    node.touch_session(session)?;
    Ok(RawDocumentBuf::from_document(&doc! {
        "id": lsid,
        "timeoutMinutes": i32::try_from(node.session_timeout_minutes()).unwrap_or(i32::MAX),
    })?)
}

/// One `killAllSessionsByPattern` pattern: the sessions it matches (an `lsid`, a user's
/// `uid`, or every session). `users` and `roles` name whom the killer impersonates: they
/// select nothing.
#[derive(Clone, Debug, Default, PartialEq)]
struct KillPattern {
    lsid: Option<LogicalSessionId>,
    uid: Option<[u8; 32]>,
}

impl KillPattern {
    fn matches(&self, session: &LogicalSessionId) -> bool {
        self.lsid.as_ref().is_none_or(|l| l == session)
            && self.uid.as_ref().is_none_or(|u| *u == session.uid)
    }

    /// The pattern as `killAllSessionsByPattern` carries it to other nodes.
    fn to_document(&self) -> Document {
        let mut out = Document::new();
        if let Some(lsid) = &self.lsid {
            out.insert("lsid", lsid.to_document());
        }
        if let Some(uid) = &self.uid {
            out.insert(
                "uid",
                Binary {
                    subtype: BinarySubtype::Generic,
                    bytes: uid.to_vec(),
                },
            );
        }
        out
    }

    fn parse(path: &str, entry: &Document) -> Result<KillPattern> {
        let mut pattern = KillPattern::default();
        for (field, value) in entry {
            let here = format!("{path}.{field}");
            match field.as_str() {
                "lsid" => match value {
                    Bson::Document(lsid) => {
                        pattern.lsid = Some(session_from_client(&here, lsid, true)?)
                    }
                    other => return Err(wrong_type(&here, other, "object")),
                },
                "uid" => pattern.uid = Some(digest(&here, value)?),
                "users" => {
                    check_names(&here, value, "user")?;
                    // At most one user is impersonated.
                    if matches!(value, Bson::Array(users) if users.len() > 1) {
                        return Err(MongoError::bad_value(
                            "Too many users in impersonation data",
                        ));
                    }
                }
                "roles" => check_names(&here, value, "role")?,
                _ => return Err(unknown(&here)),
            }
        }
        Ok(pattern)
    }
}

/// `users` (`{user, db}`) or `roles` (`{role, db}`): strict structs of two strings.
fn check_names(path: &str, value: &Bson, name: &str) -> Result<()> {
    let Bson::Array(list) = value else {
        return Err(wrong_type(path, value, "array"));
    };
    for entry in list {
        let Bson::Document(entry) = entry else {
            return Err(wrong_type(path, entry, "object"));
        };
        for (field, value) in entry {
            let here = format!("{path}.{field}");
            if field != name && field != "db" {
                return Err(unknown(&here));
            }
            if !matches!(value, Bson::String(_)) {
                return Err(wrong_type(&here, value, "string"));
            }
        }
        for field in [name, "db"] {
            if !entry.contains_key(field) {
                return Err(missing(&format!("{path}.{field}")));
            }
        }
    }
    Ok(())
}

/// The sessions of a user `killAllSessions` names: those whose `uid` is the user's digest
/// (MongoDB computes it from the name, without looking the user up).
fn user_pattern(path: &str, entry: &Document) -> Result<KillPattern> {
    check_names(
        path,
        &Bson::Array(vec![Bson::Document(entry.clone())]),
        "user",
    )?;
    Ok(KillPattern {
        lsid: None,
        uid: Some(user_digest(
            entry.get_str("user").unwrap_or_default(),
            entry.get_str("db").unwrap_or_default(),
        )),
    })
}

async fn kill_sessions<S: NodeState>(
    state: &S,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let sessions = sessions(&req)?;
    // No session named: the logged-in user's sessions, which without authentication are all
    // sessions (MongoDB's `patternsForLoggedInUser`).
    let patterns: Vec<KillPattern> = if sessions.is_empty() {
        vec![KillPattern::default()]
    } else {
        sessions
            .into_iter()
            .map(|lsid| KillPattern {
                lsid: Some(lsid),
                uid: None,
            })
            .collect()
    };
    kill(state, &patterns).await
}

async fn kill_all_sessions<S: NodeState>(
    state: &S,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let path = "killAllSessions.killAllSessions";
    let users = entries(&req)?;
    let patterns: Vec<KillPattern> = if users.is_empty() {
        vec![KillPattern::default()]
    } else {
        users
            .iter()
            .map(|user| user_pattern(path, user))
            .collect::<Result<_>>()?
    };
    kill(state, &patterns).await
}

async fn kill_all_sessions_by_pattern<S: NodeState>(
    state: &S,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let path = "killAllSessionsByPattern.killAllSessionsByPattern";
    let entries = entries(&req)?;
    let patterns: Vec<KillPattern> = if entries.is_empty() {
        vec![KillPattern::default()]
    } else {
        entries
            .iter()
            .map(|entry| KillPattern::parse(path, entry))
            .collect::<Result<_>>()?
    };
    kill(state, &patterns).await
}

/// Kills the sessions `patterns` match: on the nodes behind this one, then here.
async fn kill<S: NodeState>(state: &S, patterns: &[KillPattern]) -> Result<RawDocumentBuf> {
    let remote: Vec<Document> = patterns.iter().map(KillPattern::to_document).collect();
    let forwarded = state.kill_sessions_remote(&remote).await;
    kill_local(state, patterns).await;
    forwarded?;
    tracing::info!(patterns = ?remote, "Success: kill session");
    Ok(RawDocumentBuf::new())
}

/// MongoDB's `killSessionsLocal`: the sessions' catalog entries are killed, their running
/// operations interrupted and their cursors closed; returns once every killed session has
/// been checked back in.
async fn kill_local<S: NodeState>(state: &S, patterns: &[KillPattern]) {
    let node = state.node();
    let matches = |session: &LogicalSessionId| patterns.iter().any(|p| p.matches(session));
    let tokens = node.session_catalog.kill(&matches);
    node.operations.kill_sessions(&matches);
    state.kill_session_cursors(&matches).await;
    for token in tokens {
        token.handle().await;
    }
}

async fn refresh_now<S: NodeState>(
    state: &S,
    _ctx: &RequestContext,
    _req: CommandRequest,
) -> Result<RawDocumentBuf> {
    match session_jobs::refresh(state).await {
        Err(e) if e.code() != ErrorCode::DuplicateKey => Err(e),
        _ => Ok(RawDocumentBuf::new()),
    }
}

async fn reap_now<S: NodeState>(
    state: &S,
    _ctx: &RequestContext,
    _req: CommandRequest,
) -> Result<RawDocumentBuf> {
    session_jobs::reap(state).await?;
    Ok(RawDocumentBuf::new())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::sessions::NO_AUTH_DIGEST;

    fn uuid(byte: u8) -> Bson {
        Bson::Binary(Binary {
            subtype: BinarySubtype::Uuid,
            bytes: vec![byte; 16],
        })
    }

    fn request(body: Document) -> CommandRequest {
        CommandRequest::from_document("admin", &body).unwrap()
    }

    fn code(result: Result<impl std::fmt::Debug>) -> i32 {
        result.unwrap_err().code().code()
    }

    #[test]
    fn sessions_from_clients() {
        let got = sessions(&request(doc! {"killSessions": [{"id": uuid(1)}]})).unwrap();
        assert_eq!(got[0].id, [1; 16]);
        assert_eq!(got[0].uid, NO_AUTH_DIGEST);
        assert_eq!(code(sessions(&request(doc! {"killSessions": 1}))), 14);
        assert_eq!(code(sessions(&request(doc! {"killSessions": [1]}))), 14);
        assert_eq!(code(sessions(&request(doc! {"killSessions": [{}]}))), 40414);
        assert_eq!(
            code(sessions(&request(
                doc! {"killSessions": [{"id": uuid(1), "x": 1}]}
            ))),
            40415
        );
        assert_eq!(
            code(sessions(&request(doc! {"killSessions": [{"id": "x"}]}))),
            14
        );
        let not_uuid = Bson::Binary(Binary {
            subtype: BinarySubtype::Uuid,
            bytes: vec![0; 3],
        });
        assert_eq!(
            code(sessions(&request(
                doc! {"killSessions": [{"id": not_uuid}]}
            ))),
            207
        );
        let short = Bson::Binary(Binary {
            subtype: BinarySubtype::Generic,
            bytes: vec![0; 3],
        });
        assert_eq!(
            code(sessions(&request(
                doc! {"killSessions": [{"id": uuid(1), "uid": short}]}
            ))),
            12
        );
    }

    #[test]
    fn patterns() {
        let p = |d: Document| KillPattern::parse("p", &d);
        let all = p(doc! {}).unwrap();
        let one = LogicalSessionId {
            id: [1; 16],
            uid: NO_AUTH_DIGEST,
        };
        let other = LogicalSessionId {
            id: [2; 16],
            uid: [9; 32],
        };
        assert!(all.matches(&one) && all.matches(&other));
        let uid = Bson::Binary(Binary {
            subtype: BinarySubtype::Generic,
            bytes: NO_AUTH_DIGEST.to_vec(),
        });
        let by_user = p(doc! {"uid": uid.clone()}).unwrap();
        assert!(by_user.matches(&one) && !by_user.matches(&other));
        let by_lsid = p(doc! {"lsid": {"id": uuid(2), "uid": Bson::Binary(Binary {subtype: BinarySubtype::Generic, bytes: vec![9; 32]})}}).unwrap();
        assert!(!by_lsid.matches(&one) && by_lsid.matches(&other));
        // A pattern's lsid names its user.
        assert_eq!(code(p(doc! {"lsid": {"id": uuid(2)}})), 40414);
        assert_eq!(code(p(doc! {"bogus": 1})), 40415);
        assert_eq!(code(p(doc! {"users": [{"user": "u"}]})), 40414);
        assert_eq!(code(p(doc! {"roles": [{"role": 1, "db": "x"}]})), 14);
        // Impersonation selects nothing by itself.
        assert_eq!(
            p(doc! {"users": [{"user": "u", "db": "admin"}]}).unwrap(),
            all
        );
        // Round trip through another node.
        assert_eq!(p(by_lsid.to_document()).unwrap(), by_lsid);
        assert_eq!(p(by_user.to_document()).unwrap(), by_user);
    }

    #[test]
    fn named_users_select_their_digest() {
        let pattern = user_pattern("k", &doc! {"user": "u", "db": "admin"}).unwrap();
        let theirs = LogicalSessionId {
            id: [1; 16],
            uid: user_digest("u", "admin"),
        };
        let anonymous = LogicalSessionId {
            id: [1; 16],
            uid: NO_AUTH_DIGEST,
        };
        assert!(pattern.matches(&theirs) && !pattern.matches(&anonymous));
        assert_eq!(code(user_pattern("k", &doc! {"user": "u"})), 40414);
        assert_eq!(
            code(KillPattern::parse(
                "p",
                &doc! {"users": [{"user": "a", "db": "x"}, {"user": "b", "db": "x"}]}
            )),
            2
        );
    }
}
