//! The logical session cache of one process (MongoDB's `LogicalSessionCacheImpl`): every
//! command carrying an `lsid` records its session with the time of use (`vivify`), `endSessions`
//! marks sessions ending, `refreshSessions` and `startSession` record them. The cache holds the
//! sessions used since its last refresh: each refresh (`session_jobs`) takes them out to write
//! them to `config.system.sessions`, so `$listLocalSessions` starts over, as MongoDB's does.
//! Its job statistics are `serverStatus.logicalSessionRecordCache`.

use crate::command::CommandRequest;
use crate::document::types::type_name;
use crate::error::{ErrorCode, MongoError, Result};
use bson::spec::BinarySubtype;
use bson::{Binary, Bson, Document, RawBsonRef, RawDocument, doc};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

/// SHA-256 of the empty string: the user digest of every session when authentication is off
/// (MongoDB's `kNoAuthDigest`; no real user's digest can equal it, theirs hash `user@db`).
pub const NO_AUTH_DIGEST: [u8; 32] = [
    0xe3, 0xb0, 0xc4, 0x42, 0x98, 0xfc, 0x1c, 0x14, 0x9a, 0xfb, 0xf4, 0xc8, 0x99, 0x6f, 0xb9, 0x24,
    0x27, 0xae, 0x41, 0xe4, 0x64, 0x9b, 0x93, 0x4c, 0xa4, 0x95, 0x99, 0x1b, 0x78, 0x52, 0xb8, 0x55,
];

/// The digest a user's sessions carry as `uid` (MongoDB's `getLogicalSessionUserDigestFor`):
/// SHA-256 of `user@db`, or [`NO_AUTH_DIGEST`] for the unauthenticated user (`"", ""`).
pub fn user_digest(user: &str, db: &str) -> [u8; 32] {
    use sha2::Digest;
    if user.is_empty() && db.is_empty() {
        return NO_AUTH_DIGEST;
    }
    sha2::Sha256::digest(format!("{user}@{db}").as_bytes()).into()
}

/// A logical session's identity (MongoDB's `LogicalSessionId`): its UUID and its user's digest.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LogicalSessionId {
    pub id: [u8; 16],
    pub uid: [u8; 32],
}

impl LogicalSessionId {
    /// The session an `lsid` document (`{id: UUID, uid?: BinData}`) names; `None` when it is
    /// malformed (the command's own parsing reports that).
    pub fn from_lsid(lsid: &RawDocument) -> Option<LogicalSessionId> {
        let id = match lsid.get("id") {
            Ok(Some(RawBsonRef::Binary(b))) if b.subtype == BinarySubtype::Uuid => {
                b.bytes.try_into().ok()?
            }
            _ => return None,
        };
        let uid = match lsid.get("uid") {
            Ok(Some(RawBsonRef::Binary(b))) => b.bytes.try_into().ok()?,
            Ok(None) => NO_AUTH_DIGEST,
            _ => return None,
        };
        Some(LogicalSessionId { id, uid })
    }

    /// The session a request runs in (its `lsid`), if any.
    pub fn of_request(request: &CommandRequest) -> Option<LogicalSessionId> {
        match request.body.get("lsid") {
            Ok(Some(RawBsonRef::Document(lsid))) => LogicalSessionId::from_lsid(lsid),
            _ => None,
        }
    }

    /// `{id, uid}`, as session records and kill patterns carry it.
    pub fn to_document(&self) -> Document {
        doc! {
            "id": Binary {subtype: BinarySubtype::Uuid, bytes: self.id.to_vec()},
            "uid": Binary {subtype: BinarySubtype::Generic, bytes: self.uid.to_vec()},
        }
    }

    /// The session record of `config.system.sessions`: `{_id: {id, uid}, lastUse}`.
    pub fn record(&self, last_use: bson::DateTime) -> Document {
        doc! {"_id": self.to_document(), "lastUse": last_use}
    }

    /// The session a session record (`{_id: {id, uid}, ...}`) is about.
    pub fn of_record(record: &Document) -> Option<LogicalSessionId> {
        LogicalSessionId::of_document(record.get_document("_id").ok()?)
    }

    /// The session an `lsid` document names ([`LogicalSessionId::from_lsid`]).
    pub fn of_document(lsid: &Document) -> Option<LogicalSessionId> {
        LogicalSessionId::from_lsid(&bson::RawDocumentBuf::from_document(lsid).ok()?)
    }
}

tokio::task_local! {
    /// The session of the command a task runs (the dispatcher sets it around each handler).
    static REQUEST_SESSION: Option<LogicalSessionId>;
}

/// The logical session of the command running on this task, if any: the cursors a command
/// opens remember it.
pub fn request_session() -> Option<LogicalSessionId> {
    REQUEST_SESSION.try_with(Clone::clone).ok().flatten()
}

/// Runs `future` (a command's handler) as running in `session`.
pub async fn in_session<F: std::future::Future>(
    session: Option<LogicalSessionId>,
    future: F,
) -> F::Output {
    REQUEST_SESSION.scope(session, future).await
}

impl std::fmt::Display for LogicalSessionId {
    /// As MongoDB prints one in messages: `{ id: UUID("…"), uid: BinData(0, …) }`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let uid: String = self.uid.iter().map(|b| format!("{b:02X}")).collect();
        write!(
            f,
            "{{ id: UUID(\"{}\"), uid: BinData(0, {uid}) }}",
            uuid::Uuid::from_bytes(self.id)
        )
    }
}

/// MongoDB's `getMore` check that a cursor is continued in the session it was opened in
/// (50736, 50737, 50738).
pub fn check_cursor_session(
    cursor_id: i64,
    opened_in: Option<&LogicalSessionId>,
    continued_in: Option<&LogicalSessionId>,
) -> Result<()> {
    let refuse = |code, message: String| Err(MongoError::location(code, message));
    match (opened_in, continued_in) {
        (None, Some(now)) => refuse(
            50736,
            format!(
                "Cannot run getMore on cursor {cursor_id}, which was not created in a session, in session {now}"
            ),
        ),
        (Some(then), None) => refuse(
            50737,
            format!(
                "Cannot run getMore on cursor {cursor_id}, which was created in session {then}, without an lsid"
            ),
        ),
        (Some(then), Some(now)) if then != now => refuse(
            50738,
            format!(
                "Cannot run getMore on cursor {cursor_id}, which was created in session {then}, in session {now}"
            ),
        ),
        _ => Ok(()),
    }
}

/// The cache; see the module documentation.
#[derive(Debug, Default)]
pub struct SessionCache {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// Sessions used since the last refresh, with their last use (`_activeSessions`).
    active: BTreeMap<LogicalSessionId, bson::DateTime>,
    /// Sessions `endSessions` named since the last refresh (`_endingSessions`).
    ending: BTreeSet<LogicalSessionId>,
    stats: CacheStats,
}

/// What the refresh and reap jobs report (`LogicalSessionCacheStats`).
#[derive(Clone, Debug, Default)]
pub struct CacheStats {
    pub sessions_collection_job_count: i32,
    pub last_sessions_collection_job_duration_millis: i32,
    pub last_sessions_collection_job_timestamp: Option<bson::DateTime>,
    pub last_sessions_collection_job_entries_refreshed: i32,
    pub last_sessions_collection_job_entries_ended: i32,
    pub last_sessions_collection_job_cursors_closed: i32,
    pub transaction_reaper_job_count: i32,
    pub last_transaction_reaper_job_duration_millis: i32,
    pub last_transaction_reaper_job_timestamp: Option<bson::DateTime>,
    pub last_transaction_reaper_job_entries_cleaned_up: i32,
}

/// What a refresh took out of the cache: the sessions to write and those to remove.
#[derive(Debug, Default)]
pub struct RefreshBatch {
    pub active: BTreeMap<LogicalSessionId, bson::DateTime>,
    pub ending: BTreeSet<LogicalSessionId>,
}

/// At most this many sessions are cached between refreshes (MongoDB's `maxSessions`).
pub const DEFAULT_MAX_SESSIONS: i64 = 1_000_000;

/// Which sessions `$listLocalSessions` (or `$listSessions`) asks for.
#[derive(Debug, PartialEq)]
pub enum SessionOwners {
    All,
    /// Sessions of these users (`user`, `db`); `("", "")` is the unauthenticated user.
    Users(Vec<(String, String)>),
}

impl SessionCache {
    /// Records a use of the session `lsid` (MongoDB's `vivify`): a new session enters the
    /// cache unless it holds `max_sessions` already (TooManyLogicalSessions); a cached one has
    /// its `lastUse` moved to now. A malformed `lsid` is ignored (the command's own parsing
    /// reports it).
    pub fn touch(&self, lsid: &RawDocument, max_sessions: i64) -> Result<()> {
        match LogicalSessionId::from_lsid(lsid) {
            Some(session) => self.vivify(session, max_sessions),
            None => Ok(()),
        }
    }

    pub fn vivify(&self, session: LogicalSessionId, max_sessions: i64) -> Result<()> {
        let mut inner = self.inner.lock().expect("poisoned");
        let now = bson::DateTime::now();
        if let Some(last_use) = inner.active.get_mut(&session) {
            *last_use = now;
            return Ok(());
        }
        if inner.active.len() as i64 >= max_sessions {
            return Err(MongoError::new(
                ErrorCode::TooManyLogicalSessions,
                format!(
                    "Unable to add session ID {} into the cache because the number of active sessions is too high",
                    uuid::Uuid::from_bytes(session.id)
                ),
            ));
        }
        inner.active.insert(session, now);
        Ok(())
    }

    /// Marks sessions ending: the next refresh removes their records and kills their cursors.
    pub fn end(&self, sessions: impl IntoIterator<Item = LogicalSessionId>) {
        self.inner.lock().expect("poisoned").ending.extend(sessions);
    }

    /// Takes what the cache holds for a refresh, ended sessions left out of the active ones.
    pub fn take_for_refresh(&self) -> RefreshBatch {
        let mut inner = self.inner.lock().expect("poisoned");
        let mut batch = RefreshBatch {
            active: std::mem::take(&mut inner.active),
            ending: std::mem::take(&mut inner.ending),
        };
        for session in &batch.ending {
            batch.active.remove(session);
        }
        batch
    }

    /// Puts back what a failed refresh could not write, merged with what arrived meanwhile.
    pub fn restore(
        &self,
        active: Option<BTreeMap<LogicalSessionId, bson::DateTime>>,
        ending: Option<BTreeSet<LogicalSessionId>>,
    ) {
        let mut inner = self.inner.lock().expect("poisoned");
        for (session, last_use) in active.into_iter().flatten() {
            let kept = inner.active.entry(session).or_insert(last_use);
            *kept = (*kept).max(last_use);
        }
        inner.ending.extend(ending.into_iter().flatten());
    }

    /// Whether `session` was used since the last refresh.
    pub fn contains(&self, session: &LogicalSessionId) -> bool {
        self.inner
            .lock()
            .expect("poisoned")
            .active
            .contains_key(session)
    }

    /// Updates the job statistics.
    pub fn with_stats<T>(&self, f: impl FnOnce(&mut CacheStats) -> T) -> T {
        f(&mut self.inner.lock().expect("poisoned").stats)
    }

    /// `serverStatus.logicalSessionRecordCache`, `catalog_size` being the session catalog's.
    pub fn server_status(&self, catalog_size: usize) -> Document {
        let inner = self.inner.lock().expect("poisoned");
        let s = &inner.stats;
        let never = bson::DateTime::from_millis(0);
        doc! {
            "activeSessionsCount": inner.active.len() as i32,
            "sessionsCollectionJobCount": s.sessions_collection_job_count,
            "lastSessionsCollectionJobDurationMillis": s.last_sessions_collection_job_duration_millis,
            "lastSessionsCollectionJobTimestamp": s.last_sessions_collection_job_timestamp.unwrap_or(never),
            "lastSessionsCollectionJobEntriesRefreshed": s.last_sessions_collection_job_entries_refreshed,
            "lastSessionsCollectionJobEntriesEnded": s.last_sessions_collection_job_entries_ended,
            "lastSessionsCollectionJobCursorsClosed": s.last_sessions_collection_job_cursors_closed,
            "transactionReaperJobCount": s.transaction_reaper_job_count,
            "lastTransactionReaperJobDurationMillis": s.last_transaction_reaper_job_duration_millis,
            "lastTransactionReaperJobTimestamp": s.last_transaction_reaper_job_timestamp.unwrap_or(never),
            "lastTransactionReaperJobEntriesCleanedUp": s.last_transaction_reaper_job_entries_cleaned_up,
            "sessionCatalogSize": catalog_size as i32,
        }
    }

    /// The cached sessions of `owners`, as MongoDB's session records:
    /// `{_id: {id, uid}, lastUse}`.
    pub fn list(&self, owners: &SessionOwners) -> Vec<Document> {
        let inner = self.inner.lock().expect("poisoned");
        let digests: Option<Vec<[u8; 32]>> = match owners {
            SessionOwners::All => None,
            SessionOwners::Users(users) => Some(
                users
                    .iter()
                    .map(|(user, db)| user_digest(user, db))
                    .collect(),
            ),
        };
        inner
            .active
            .iter()
            .filter(|(session, _)| digests.as_ref().is_none_or(|d| d.contains(&session.uid)))
            .map(|(session, last_use)| session.record(*last_use))
            .collect()
    }
}

/// The filter on session records (`config.system.sessions`) that selects those of `owners`.
pub fn owners_filter(owners: &SessionOwners) -> Document {
    match owners {
        SessionOwners::All => Document::new(),
        SessionOwners::Users(users) => {
            let digests: Vec<Bson> = users
                .iter()
                .map(|(user, db)| {
                    Bson::Binary(Binary {
                        subtype: BinarySubtype::Generic,
                        bytes: user_digest(user, db).to_vec(),
                    })
                })
                .collect();
            doc! {"_id.uid": {"$in": digests}}
        }
    }
}

pub const LIST_LOCAL_SESSIONS: &str = "$listLocalSessions";

/// `$listLocalSessions` on any node: the sessions in its cache (`aggregate: 1` only).
pub fn list_local_sessions(
    node: &crate::server::Node,
    collection: Option<&str>,
    spec: &Bson,
) -> Result<Vec<Document>> {
    if collection.is_some() {
        return Err(MongoError::new(
            ErrorCode::InvalidNamespace,
            format!(
                "{LIST_LOCAL_SESSIONS} must be run against the database with {{aggregate: 1}}, not a collection"
            ),
        ));
    }
    let owners = parse_list_sessions(LIST_LOCAL_SESSIONS, spec)?;
    Ok(node.sessions.list(&owners))
}

/// Parses `$listLocalSessions`'s (or `$listSessions`') specification, as MongoDB's
/// `ListSessionsSpec`: `{allUsers: bool}` or `{users: [{user, db}]}`; neither means the
/// current user.
pub fn parse_list_sessions(stage: &str, spec: &Bson) -> Result<SessionOwners> {
    let Bson::Document(spec) = spec else {
        return Err(MongoError::type_mismatch(format!(
            "{stage} options must be specified in an object, but found: {}",
            type_name(spec)
        )));
    };
    let wrong_type = |field: &str, value: &Bson, expected: &str| {
        MongoError::type_mismatch(format!(
            "BSON field '{stage}.{field}' is the wrong type '{}', expected type '{expected}'",
            type_name(value)
        ))
    };
    let mut all_users = false;
    let mut users = Vec::new();
    for (field, value) in spec {
        match field.as_str() {
            "allUsers" => match value {
                Bson::Boolean(b) => all_users = *b,
                other => return Err(wrong_type("allUsers", other, "bool")),
            },
            "users" => {
                let Bson::Array(list) = value else {
                    return Err(wrong_type("users", value, "array"));
                };
                for entry in list {
                    let Bson::Document(entry) = entry else {
                        return Err(wrong_type("users", entry, "object"));
                    };
                    users.push(parse_user(stage, entry)?);
                }
            }
            other => {
                return Err(MongoError::location(
                    40415,
                    format!("BSON field '{stage}.{other}' is an unknown field."),
                ));
            }
        }
    }
    if all_users && !users.is_empty() {
        return Err(MongoError::new(
            ErrorCode::UnsupportedFormat,
            format!(
                "{stage} may not specify {{allUsers:true}} and {{users:[...]}} at the same time"
            ),
        ));
    }
    Ok(match (all_users, users.is_empty()) {
        (true, _) => SessionOwners::All,
        // No authentication: the current user is the unauthenticated one.
        (false, true) => SessionOwners::Users(vec![(String::new(), String::new())]),
        (false, false) => SessionOwners::Users(users),
    })
}

fn parse_user(stage: &str, entry: &Document) -> Result<(String, String)> {
    let field = |name: &str| match entry.get(name) {
        Some(Bson::String(s)) => Ok(s.clone()),
        Some(other) => Err(MongoError::type_mismatch(format!(
            "BSON field '{stage}.users.{name}' is the wrong type '{}', expected type 'string'",
            type_name(other)
        ))),
        None => Err(MongoError::new(
            ErrorCode::IDLFailedToParse,
            format!("BSON field '{stage}.users.{name}' is missing but a required field"),
        )),
    };
    for name in entry.keys() {
        if name != "user" && name != "db" {
            return Err(MongoError::location(
                40415,
                format!("BSON field '{stage}.users.{name}' is an unknown field."),
            ));
        }
    }
    Ok((field("user")?, field("db")?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::rawdoc;

    const MAX: i64 = DEFAULT_MAX_SESSIONS;

    fn lsid(byte: u8) -> bson::RawDocumentBuf {
        rawdoc! {"id": bson::RawBson::Binary(Binary {subtype: BinarySubtype::Uuid, bytes: vec![byte; 16]})}
    }

    fn session(byte: u8) -> LogicalSessionId {
        LogicalSessionId::from_lsid(&lsid(byte)).unwrap()
    }

    #[test]
    fn sessions_used_are_listed_until_the_refresh_after_their_end() {
        let cache = SessionCache::default();
        cache.touch(&lsid(1), MAX).unwrap();
        cache.touch(&lsid(2), MAX).unwrap();
        cache.touch(&lsid(1), MAX).unwrap();
        let listed = cache.list(&SessionOwners::All);
        assert_eq!(listed.len(), 2);
        let id = listed[0].get_document("_id").unwrap();
        match id.get("uid") {
            Some(Bson::Binary(uid)) => assert_eq!(uid.bytes, NO_AUTH_DIGEST.to_vec()),
            other => panic!("uid {other:?}"),
        }
        assert!(listed[0].get_datetime("lastUse").is_ok());
        // As MongoDB's `endSessions`, ending only marks the session for the next refresh.
        cache.end([session(1)]);
        assert_eq!(cache.list(&SessionOwners::All).len(), 2);
        let batch = cache.take_for_refresh();
        assert_eq!(batch.active.keys().collect::<Vec<_>>(), vec![&session(2)]);
        assert_eq!(batch.ending.iter().collect::<Vec<_>>(), vec![&session(1)]);
        // A refresh starts the cache over.
        assert!(cache.list(&SessionOwners::All).is_empty());
        assert!(cache.take_for_refresh().ending.is_empty());
    }

    #[test]
    fn a_failed_refresh_puts_its_sessions_back() {
        let cache = SessionCache::default();
        cache.touch(&lsid(1), MAX).unwrap();
        cache.end([session(2)]);
        let batch = cache.take_for_refresh();
        cache.touch(&lsid(3), MAX).unwrap();
        cache.restore(Some(batch.active), Some(batch.ending));
        assert!(cache.contains(&session(1)) && cache.contains(&session(3)));
        assert_eq!(cache.take_for_refresh().ending.len(), 1);
    }

    #[test]
    fn the_cache_is_bounded() {
        let cache = SessionCache::default();
        cache.touch(&lsid(1), 1).unwrap();
        // A cached session is still used; a new one does not fit.
        cache.touch(&lsid(1), 1).unwrap();
        let err = cache.touch(&lsid(2), 1).unwrap_err();
        assert_eq!(err.code(), ErrorCode::TooManyLogicalSessions);
    }

    #[test]
    fn malformed_session_ids_are_ignored() {
        let cache = SessionCache::default();
        cache.touch(&rawdoc! {"id": "nope"}, MAX).unwrap();
        cache.touch(&rawdoc! {}, MAX).unwrap();
        cache
            .touch(&rawdoc! {"id": bson::RawBson::Binary(Binary {subtype: BinarySubtype::Uuid, bytes: vec![1; 3]})}, MAX)
            .unwrap();
        assert!(cache.list(&SessionOwners::All).is_empty());
    }

    #[test]
    fn session_records_round_trip() {
        let record = session(4).record(bson::DateTime::now());
        assert_eq!(LogicalSessionId::of_record(&record), Some(session(4)));
        assert_eq!(
            owners_filter(&SessionOwners::All),
            Document::new(),
            "every user's sessions"
        );
    }

    #[test]
    fn server_status_fields() {
        let cache = SessionCache::default();
        cache.touch(&lsid(1), MAX).unwrap();
        cache.with_stats(|s| s.sessions_collection_job_count = 3);
        let status = cache.server_status(2);
        let names: Vec<&str> = status.keys().map(String::as_str).collect();
        assert_eq!(
            names,
            [
                "activeSessionsCount",
                "sessionsCollectionJobCount",
                "lastSessionsCollectionJobDurationMillis",
                "lastSessionsCollectionJobTimestamp",
                "lastSessionsCollectionJobEntriesRefreshed",
                "lastSessionsCollectionJobEntriesEnded",
                "lastSessionsCollectionJobCursorsClosed",
                "transactionReaperJobCount",
                "lastTransactionReaperJobDurationMillis",
                "lastTransactionReaperJobTimestamp",
                "lastTransactionReaperJobEntriesCleanedUp",
                "sessionCatalogSize",
            ]
        );
        assert_eq!(status.get_i32("activeSessionsCount").unwrap(), 1);
        assert_eq!(status.get_i32("sessionsCollectionJobCount").unwrap(), 3);
        assert_eq!(status.get_i32("sessionCatalogSize").unwrap(), 2);
    }

    #[test]
    fn cursors_continue_in_their_session() {
        let (a, b) = (session(1), session(2));
        assert!(check_cursor_session(7, Some(&a), Some(&a)).is_ok());
        assert!(check_cursor_session(7, None, None).is_ok());
        let code = |r: Result<()>| r.unwrap_err().code().code();
        assert_eq!(code(check_cursor_session(7, None, Some(&a))), 50736);
        assert_eq!(code(check_cursor_session(7, Some(&a), None)), 50737);
        let err = check_cursor_session(7, Some(&a), Some(&b)).unwrap_err();
        assert_eq!(err.code().code(), 50738);
        assert_eq!(
            err.message(),
            format!(
                "Cannot run getMore on cursor 7, which was created in session {{ id: UUID(\"01010101-0101-0101-0101-010101010101\"), uid: BinData(0, E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855) }}, in session {b}"
            )
        );
    }

    #[test]
    fn user_digests_hash_the_user_name() {
        use sha2::Digest;
        let empty: [u8; 32] = sha2::Sha256::digest(b"").into();
        assert_eq!(empty, NO_AUTH_DIGEST);
        assert_eq!(user_digest("", ""), NO_AUTH_DIGEST);
        let named: [u8; 32] = sha2::Sha256::digest(b"u@admin").into();
        assert_eq!(user_digest("u", "admin"), named);
    }

    #[test]
    fn only_the_unauthenticated_user_owns_sessions() {
        let cache = SessionCache::default();
        cache.touch(&lsid(1), MAX).unwrap();
        let me = parse_list_sessions("$listLocalSessions", &Bson::Document(doc! {})).unwrap();
        assert_eq!(cache.list(&me).len(), 1);
        let other = parse_list_sessions(
            "$listLocalSessions",
            &Bson::Document(doc! {"users": [{"user": "u", "db": "admin"}]}),
        )
        .unwrap();
        assert!(cache.list(&other).is_empty());
    }

    #[test]
    fn specification_errors() {
        let code = |spec: Bson| {
            parse_list_sessions("$listLocalSessions", &spec)
                .unwrap_err()
                .code()
                .code()
        };
        assert_eq!(code(Bson::Int32(1)), 14);
        assert_eq!(code(Bson::Document(doc! {"allUsers": 1})), 14);
        assert_eq!(code(Bson::Document(doc! {"bogus": 1})), 40415);
        assert_eq!(code(Bson::Document(doc! {"users": [{"user": "u"}]})), 40414);
        assert_eq!(
            code(Bson::Document(
                doc! {"allUsers": true, "users": [{"user": "u", "db": "d"}]}
            )),
            12
        );
        assert_eq!(
            parse_list_sessions(
                "$listLocalSessions",
                &Bson::Document(doc! {"allUsers": true})
            )
            .unwrap(),
            SessionOwners::All
        );
    }
}
