//! The profiler's settings and the `profile` command's arguments and reply, as MongoDB keeps
//! them: per database a level (0 off, 1 slow operations, 2 every operation) and a `filter`
//! that replaces the slow test; for the whole process the slow threshold `slowms` and the
//! `sampleRate` of slow operations. Data nodes write the entries (`datanode::profiler`);
//! routers, as mongos, keep only the settings and refuse levels 1 and 2.

use crate::command::CommandRequest;
use crate::error::{MongoError, Result};
use crate::query::filter::Filter;
use bson::{Bson, Document, RawBsonRef, doc};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

/// MongoDB's default `slowms`.
const DEFAULT_SLOW_MS: i64 = 100;

/// Said beside a filter, in MongoDB's words.
const FILTER_NOTE: &str = "When a filter expression is set, slowms and sampleRate are not used for profiling and slow-query log lines.";

/// One database's profiling.
#[derive(Clone, Debug, Default)]
pub struct DatabaseProfile {
    pub level: i32,
    /// The filter as given, and parsed: an operation is profiled when its entry matches.
    pub filter: Option<(Document, Arc<Filter>)>,
}

/// The settings of one process.
#[derive(Debug)]
pub struct Profiling {
    slow_ms: AtomicI64,
    /// The `f64` bits of `sampleRate`.
    sample_rate: AtomicU64,
    databases: RwLock<HashMap<String, DatabaseProfile>>,
    /// Whether any database has a level or a filter: most commands then skip the lookup.
    any: AtomicBool,
}

impl Default for Profiling {
    fn default() -> Self {
        Profiling {
            slow_ms: AtomicI64::new(DEFAULT_SLOW_MS),
            sample_rate: AtomicU64::new(1.0f64.to_bits()),
            databases: RwLock::default(),
            any: AtomicBool::new(false),
        }
    }
}

/// The `profile` command's arguments.
#[derive(Clone, Debug, PartialEq)]
pub struct ProfileRequest {
    /// The new level; outside 0-2 a request to read the settings (MongoDB's -1).
    pub level: i64,
    pub slow_ms: Option<i64>,
    pub sample_rate: Option<f64>,
    /// `Some(None)`: `filter: "unset"`.
    pub filter: Option<Option<Document>>,
}

impl ProfileRequest {
    /// Fields `profile` declares besides its own.
    pub const FIELDS: &'static [&'static str] = &["profile", "slowms", "sampleRate", "filter"];

    pub fn parse(req: &CommandRequest) -> Result<ProfileRequest> {
        let args = req.args();
        let level = match args.target()? {
            RawBsonRef::Int32(n) => i64::from(n),
            RawBsonRef::Int64(n) => n,
            RawBsonRef::Double(d) if d.fract() == 0.0 && d.is_finite() => d as i64,
            _ => return Err(wrong_type("profile", "long")),
        };
        let slow_ms = match args.get("slowms")? {
            None => None,
            Some(RawBsonRef::Int32(n)) => Some(i64::from(n)),
            Some(RawBsonRef::Int64(n)) => Some(n),
            Some(RawBsonRef::Double(d)) if d.is_finite() => Some(d as i64),
            Some(_) => return Err(wrong_type("slowms", "long")),
        };
        let sample_rate = match args.get("sampleRate")? {
            None => None,
            Some(RawBsonRef::Double(d)) => Some(d),
            Some(RawBsonRef::Int32(n)) => Some(f64::from(n)),
            Some(RawBsonRef::Int64(n)) => Some(n as f64),
            Some(_) => return Err(wrong_type("sampleRate", "double")),
        };
        let filter = match args.get("filter")? {
            None => None,
            Some(RawBsonRef::String("unset")) => Some(None),
            Some(RawBsonRef::Document(d)) => Some(Some(Document::try_from(d)?)),
            Some(RawBsonRef::String(other)) => {
                return Err(MongoError::bad_value(format!(
                    "'filter' must be an object or the string 'unset', got '{other}'"
                )));
            }
            Some(_) => return Err(wrong_type("filter", "object or string")),
        };
        if let Some(rate) = sample_rate {
            if !(0.0..=1.0).contains(&rate) {
                return Err(MongoError::bad_value(
                    "'sampleRate' must be between 0.0 and 1.0 inclusive",
                ));
            }
        }
        Ok(ProfileRequest {
            level,
            slow_ms,
            sample_rate,
            filter,
        })
    }

    /// Whether it sets a level (0-2) rather than reading the settings.
    pub fn sets_level(&self) -> bool {
        (0..=2).contains(&self.level)
    }
}

fn wrong_type(field: &str, expected: &str) -> MongoError {
    MongoError::type_mismatch(format!(
        "BSON field 'profile.{field}' is the wrong type, expected type '{expected}'"
    ))
}

impl Profiling {
    /// `db`'s profiling (level 0 and no filter when never set).
    pub fn database(&self, db: &str) -> DatabaseProfile {
        if !self.any.load(Ordering::Relaxed) {
            return DatabaseProfile::default();
        }
        let databases = self.databases.read().expect("poisoned");
        databases.get(db).cloned().unwrap_or_default()
    }

    /// `db`'s level alone (0 when never set), without copying its filter.
    pub fn level(&self, db: &str) -> i32 {
        if !self.any.load(Ordering::Relaxed) {
            return 0;
        }
        let databases = self.databases.read().expect("poisoned");
        databases.get(db).map_or(0, |p| p.level)
    }

    pub fn slow_ms(&self) -> i64 {
        self.slow_ms.load(Ordering::Relaxed)
    }

    pub fn sample_rate(&self) -> f64 {
        f64::from_bits(self.sample_rate.load(Ordering::Relaxed))
    }

    /// What `request` makes of `db`'s profiling, without applying it yet (the filter parsed:
    /// a bad one changes nothing).
    pub fn next(&self, db: &str, request: &ProfileRequest) -> Result<DatabaseProfile> {
        let mut next = self.database(db);
        if request.sets_level() {
            next.level = request.level as i32;
        }
        match &request.filter {
            None => {}
            Some(None) => next.filter = None,
            Some(Some(filter)) => {
                let parsed = Filter::parse(filter)?;
                next.filter = Some((filter.clone(), Arc::new(parsed)));
            }
        }
        Ok(next)
    }

    /// Applies `request` to `db` (its `next` profile already checked) and answers as MongoDB:
    /// the settings as they were (`was`, `slowms`, `sampleRate`, `filter`, `note`).
    pub fn apply(&self, db: &str, request: &ProfileRequest, next: DatabaseProfile) -> Document {
        let was = self.database(db);
        let mut reply = doc! {
            "was": was.level,
            "slowms": i32::try_from(self.slow_ms()).unwrap_or(i32::MAX),
            "sampleRate": self.sample_rate(),
        };
        if let Some((filter, _)) = &was.filter {
            reply.insert("filter", filter.clone());
        }
        if was.filter.is_some() || request.filter.is_some() {
            reply.insert("note", FILTER_NOTE);
        }
        if let Some(ms) = request.slow_ms {
            self.slow_ms.store(ms, Ordering::Relaxed);
        }
        if let Some(rate) = request.sample_rate {
            self.sample_rate.store(rate.to_bits(), Ordering::Relaxed);
        }
        let mut databases = self.databases.write().expect("poisoned");
        if next.level == 0 && next.filter.is_none() {
            databases.remove(db);
        } else {
            databases.insert(db.to_string(), next);
        }
        self.any.store(!databases.is_empty(), Ordering::Relaxed);
        reply
    }

    /// Whether an operation on `db` that took `millis` is profiled: every one at level 2; at
    /// level 1 those its `entry` matches the filter of, or without a filter those at least
    /// `slowms` long, sampled at `sampleRate`.
    pub fn profiles(&self, profile: &DatabaseProfile, millis: i64, entry: &Document) -> bool {
        match profile.level {
            2 => true,
            1 => match &profile.filter {
                Some((_, filter)) => filter.matches(entry),
                None => millis >= self.slow_ms() && sampled(self.sample_rate()),
            },
            _ => false,
        }
    }
}

/// A draw at `rate` (1.0 always, 0.0 never).
fn sampled(rate: f64) -> bool {
    if rate >= 1.0 {
        return true;
    }
    let mut bytes = [0u8; 8];
    if getrandom::fill(&mut bytes).is_err() {
        return false;
    }
    let draw = (u64::from_le_bytes(bytes) >> 11) as f64 / (1u64 << 53) as f64;
    draw < rate
}

/// `ts` of a profile entry: now.
pub fn now() -> Bson {
    Bson::DateTime(bson::DateTime::now())
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::RawDocumentBuf;

    fn request(body: Document) -> Result<ProfileRequest> {
        let req =
            CommandRequest::new("app", RawDocumentBuf::from_document(&body).unwrap()).unwrap();
        ProfileRequest::parse(&req)
    }

    #[test]
    fn arguments_and_their_errors() {
        let r = request(doc! {"profile": 1, "slowms": 5, "sampleRate": 0.5}).unwrap();
        assert_eq!((r.level, r.slow_ms, r.sample_rate), (1, Some(5), Some(0.5)));
        assert!(r.sets_level());
        assert!(!request(doc! {"profile": -1}).unwrap().sets_level());
        assert_eq!(
            request(doc! {"profile": 0, "filter": "unset"})
                .unwrap()
                .filter,
            Some(None)
        );
        let e = request(doc! {"profile": 0, "sampleRate": 2.0}).unwrap_err();
        assert_eq!(e.code().code(), 2);
        assert_eq!(
            e.message(),
            "'sampleRate' must be between 0.0 and 1.0 inclusive"
        );
        assert_eq!(
            request(doc! {"profile": "x"}).unwrap_err().code().code(),
            14
        );
        assert_eq!(
            request(doc! {"profile": 0, "filter": "x"})
                .unwrap_err()
                .code()
                .code(),
            2
        );
    }

    #[test]
    fn settings_replies_and_decisions() {
        let p = Profiling::default();
        let set = |body: Document| {
            let r = request(body).unwrap();
            let next = p.next("app", &r).unwrap();
            p.apply("app", &r, next)
        };
        assert_eq!(
            set(doc! {"profile": 1, "slowms": 20}),
            doc! {"was": 0, "slowms": 100, "sampleRate": 1.0}
        );
        assert_eq!(p.database("app").level, 1);
        assert_eq!(p.database("other").level, 0);
        assert_eq!((p.level("app"), p.level("other")), (1, 0));
        let slow = p.database("app");
        assert!(p.profiles(&slow, 20, &doc! {}));
        assert!(!p.profiles(&slow, 19, &doc! {}));
        let reply = set(doc! {"profile": 1, "filter": {"op": "query"}});
        assert_eq!(reply.get_i32("was").unwrap(), 1);
        assert_eq!(reply.get_str("note").unwrap(), FILTER_NOTE);
        let filtered = p.database("app");
        assert!(p.profiles(&filtered, 0, &doc! {"op": "query"}));
        assert!(!p.profiles(&filtered, 500, &doc! {"op": "insert"}));
        let reply = set(doc! {"profile": -1});
        assert_eq!(reply.get_document("filter").unwrap(), &doc! {"op": "query"});
        set(doc! {"profile": 0, "filter": "unset"});
        assert!(p.database("app").filter.is_none());
        assert!(!p.profiles(&p.database("app"), 1000, &doc! {}));
        // A bad filter changes nothing.
        let bad = request(doc! {"profile": 2, "filter": {"a": {"$bogus": 1}}}).unwrap();
        assert!(p.next("app", &bad).is_err());
        assert_eq!(p.database("app").level, 0);
    }
}
