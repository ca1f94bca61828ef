//! The logical session cache of one process: every command carrying an `lsid` records its
//! session with the time of use, `endSessions` forgets it, `refreshSessions` and `startSession`
//! record it. As in MongoDB, the cache holds the sessions used since its last refresh
//! (`logicalSessionRefreshMillis`): at each refresh it starts empty again. `$listLocalSessions`
//! lists it. A router's cache is flushed: what each refresh clears (and what is in use) is
//! written to `config.system.sessions`, which `$listSessions` reads.

use crate::document::types::type_name;
use crate::error::{ErrorCode, MongoError, Result};
use bson::spec::BinarySubtype;
use bson::{Binary, Bson, Document, RawBsonRef, RawDocument, doc};
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// SHA-256 of the empty string: the user digest of every session when authentication is off
/// (MongoDB's `kNoAuthDigest`; no real user's digest can equal it, theirs hash `user@db`).
pub const NO_AUTH_DIGEST: [u8; 32] = [
    0xe3, 0xb0, 0xc4, 0x42, 0x98, 0xfc, 0x1c, 0x14, 0x9a, 0xfb, 0xf4, 0xc8, 0x99, 0x6f, 0xb9, 0x24,
    0x27, 0xae, 0x41, 0xe4, 0x64, 0x9b, 0x93, 0x4c, 0xa4, 0x95, 0x99, 0x1b, 0x78, 0x52, 0xb8, 0x55,
];

/// A session's identity: its UUID and its user's digest.
type SessionKey = (Vec<u8>, Vec<u8>);

#[derive(Debug)]
pub struct SessionCache {
    inner: Mutex<Inner>,
}

#[derive(Debug)]
struct Inner {
    records: BTreeMap<SessionKey, bson::DateTime>,
    last_refresh: Instant,
    /// Whether the records a refresh clears are kept for [`SessionCache::take_for_flush`].
    flushes: bool,
    /// Records cleared by refreshes since the last flush.
    unflushed: BTreeMap<SessionKey, bson::DateTime>,
}

impl Default for SessionCache {
    fn default() -> Self {
        SessionCache {
            inner: Mutex::new(Inner {
                records: BTreeMap::new(),
                last_refresh: Instant::now(),
                flushes: false,
                unflushed: BTreeMap::new(),
            }),
        }
    }
}

/// Which sessions `$listLocalSessions` (or `$listSessions`) asks for.
#[derive(Debug, PartialEq)]
pub enum SessionOwners {
    All,
    /// Sessions of these users (`user`, `db`); `("", "")` is the unauthenticated user.
    Users(Vec<(String, String)>),
}

impl Inner {
    /// Starts the cache over when a refresh period ended since the last one.
    fn refresh_if_due(&mut self, period: Duration) {
        let elapsed = self.last_refresh.elapsed();
        if !period.is_zero() && elapsed >= period {
            let cleared = std::mem::take(&mut self.records);
            if self.flushes {
                for (key, last_use) in cleared {
                    let kept = self.unflushed.entry(key).or_insert(last_use);
                    *kept = (*kept).max(last_use);
                }
            }
            let periods = (elapsed.as_nanos() / period.as_nanos()).min(u128::from(u32::MAX));
            self.last_refresh += period * periods as u32;
        }
    }
}

impl SessionCache {
    /// Records a use of the session `lsid` (`{id: UUID, uid?: BinData}`); anything else is
    /// ignored (the command's own parsing reports a malformed `lsid`).
    pub fn touch(&self, lsid: &RawDocument, period: Duration) {
        if let Some(key) = session_key(lsid) {
            let mut inner = self.inner.lock().expect("poisoned");
            inner.refresh_if_due(period);
            inner.records.insert(key, bson::DateTime::now());
        }
    }

    /// Keeps what refreshes clear until [`SessionCache::take_for_flush`] takes it (a router,
    /// which writes it to `config.system.sessions`).
    pub fn enable_flushing(&self) {
        self.inner.lock().expect("poisoned").flushes = true;
    }

    /// The session records to write to the sessions collection: those refreshes cleared since
    /// the last flush and those in use now.
    pub fn take_for_flush(&self, period: Duration) -> Vec<Document> {
        let mut inner = self.inner.lock().expect("poisoned");
        inner.refresh_if_due(period);
        let mut taken = std::mem::take(&mut inner.unflushed);
        for (key, last_use) in &inner.records {
            let kept = taken.entry(key.clone()).or_insert(*last_use);
            *kept = (*kept).max(*last_use);
        }
        taken
            .iter()
            .map(|(key, last_use)| record(key, *last_use))
            .collect()
    }

    /// Forgets the sessions `lsids` name.
    pub fn end(&self, lsids: &[&RawDocument]) {
        let mut inner = self.inner.lock().expect("poisoned");
        for lsid in lsids {
            if let Some(key) = session_key(lsid) {
                inner.records.remove(&key);
            }
        }
    }

    /// The cached sessions of `owners`, as MongoDB's session records:
    /// `{_id: {id, uid}, lastUse}`.
    pub fn list(&self, owners: &SessionOwners, period: Duration) -> Vec<Document> {
        let mut inner = self.inner.lock().expect("poisoned");
        inner.refresh_if_due(period);
        let digests: Option<Vec<&[u8]>> = match owners {
            SessionOwners::All => None,
            // Only the unauthenticated user has a digest here: docgrid has no users.
            SessionOwners::Users(users) => Some(
                users
                    .iter()
                    .filter(|(user, db)| user.is_empty() && db.is_empty())
                    .map(|_| &NO_AUTH_DIGEST[..])
                    .collect(),
            ),
        };
        inner
            .records
            .iter()
            .filter(|((_, uid), _)| digests.as_ref().is_none_or(|d| d.contains(&&uid[..])))
            .map(|(key, last_use)| record(key, *last_use))
            .collect()
    }
}

/// A session as MongoDB records it: `{_id: {id, uid}, lastUse}`.
fn record((id, uid): &SessionKey, last_use: bson::DateTime) -> Document {
    doc! {
        "_id": {
            "id": Binary {subtype: BinarySubtype::Uuid, bytes: id.clone()},
            "uid": Binary {subtype: BinarySubtype::Generic, bytes: uid.clone()},
        },
        "lastUse": last_use,
    }
}

/// The filter on session records (`config.system.sessions`) that selects those of `owners`.
pub fn owners_filter(owners: &SessionOwners) -> Document {
    match owners {
        SessionOwners::All => Document::new(),
        SessionOwners::Users(users) => {
            let digests: Vec<Bson> = users
                .iter()
                .filter(|(user, db)| user.is_empty() && db.is_empty())
                .map(|_| {
                    Bson::Binary(Binary {
                        subtype: BinarySubtype::Generic,
                        bytes: NO_AUTH_DIGEST.to_vec(),
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
    Ok(node.sessions.list(&owners, node.session_refresh_period()))
}

fn session_key(lsid: &RawDocument) -> Option<SessionKey> {
    let id = match lsid.get("id") {
        Ok(Some(RawBsonRef::Binary(b)))
            if b.subtype == BinarySubtype::Uuid && b.bytes.len() == 16 =>
        {
            b.bytes.to_vec()
        }
        _ => return None,
    };
    let uid = match lsid.get("uid") {
        Ok(Some(RawBsonRef::Binary(b))) if b.bytes.len() == 32 => b.bytes.to_vec(),
        Ok(None) => NO_AUTH_DIGEST.to_vec(),
        _ => return None,
    };
    Some((id, uid))
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

    const HOUR: Duration = Duration::from_secs(3600);

    fn lsid(byte: u8) -> bson::RawDocumentBuf {
        rawdoc! {"id": bson::RawBson::Binary(Binary {subtype: BinarySubtype::Uuid, bytes: vec![byte; 16]})}
    }

    #[test]
    fn sessions_used_are_listed_until_ended() {
        let cache = SessionCache::default();
        cache.touch(&lsid(1), HOUR);
        cache.touch(&lsid(2), HOUR);
        cache.touch(&lsid(1), HOUR);
        let listed = cache.list(&SessionOwners::All, HOUR);
        assert_eq!(listed.len(), 2);
        let id = listed[0].get_document("_id").unwrap();
        match id.get("uid") {
            Some(Bson::Binary(uid)) => assert_eq!(uid.bytes, NO_AUTH_DIGEST.to_vec()),
            other => panic!("uid {other:?}"),
        }
        assert!(listed[0].get_datetime("lastUse").is_ok());
        cache.end(&[&lsid(1)]);
        assert_eq!(cache.list(&SessionOwners::All, HOUR).len(), 1);
    }

    #[test]
    fn malformed_session_ids_are_ignored() {
        let cache = SessionCache::default();
        cache.touch(&rawdoc! {"id": "nope"}, HOUR);
        cache.touch(&rawdoc! {}, HOUR);
        assert!(cache.list(&SessionOwners::All, HOUR).is_empty());
    }

    #[test]
    fn a_refresh_starts_the_cache_over() {
        let cache = SessionCache::default();
        cache.touch(&lsid(1), HOUR);
        assert!(
            cache
                .list(&SessionOwners::All, Duration::from_nanos(1))
                .is_empty()
        );
    }

    #[test]
    fn a_flushing_cache_keeps_what_refreshes_clear_until_flushed() {
        let cache = SessionCache::default();
        cache.enable_flushing();
        cache.touch(&lsid(1), HOUR);
        // A refresh clears the cache but keeps the record for the flush.
        assert!(
            cache
                .list(&SessionOwners::All, Duration::from_nanos(1))
                .is_empty()
        );
        cache.touch(&lsid(2), HOUR);
        let flushed = cache.take_for_flush(HOUR);
        assert_eq!(flushed.len(), 2);
        assert!(flushed.iter().all(|r| r.get_datetime("lastUse").is_ok()));
        // Records in use stay in the cache; cleared ones are flushed once.
        assert_eq!(cache.take_for_flush(HOUR).len(), 1);
        assert_eq!(
            owners_filter(&SessionOwners::All),
            Document::new(),
            "every user's sessions"
        );
    }

    #[test]
    fn only_the_unauthenticated_user_owns_sessions() {
        let cache = SessionCache::default();
        cache.touch(&lsid(1), HOUR);
        let me = parse_list_sessions("$listLocalSessions", &Bson::Document(doc! {})).unwrap();
        assert_eq!(cache.list(&me, HOUR).len(), 1);
        let other = parse_list_sessions(
            "$listLocalSessions",
            &Bson::Document(doc! {"users": [{"user": "u", "db": "admin"}]}),
        )
        .unwrap();
        assert!(cache.list(&other, HOUR).is_empty());
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
