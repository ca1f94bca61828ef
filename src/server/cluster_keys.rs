//! `$clusterTime` signing, as MongoDB's key manager and logical time validator do it: the
//! config server keeps HMAC keys in `admin.system.keys` (`{_id: keyId, purpose: "HMAC", key,
//! expiresAt}`, the current one and the next, rotated every `KeysRotationIntervalSec`), every
//! node reads them, signs the cluster time it gossips with the key valid for it, and checks a
//! client's `$clusterTime` that would move its clock: a client may only advance the clock to a
//! time the cluster signed, unless it holds `advanceClusterTime`. Without authentication
//! (neither `--auth` nor `--keyFile`) nothing is signed or checked, as MongoDB then trusts
//! every client.

use super::auth::privileges::{Privilege, Resource};
use super::dispatch::NodeState;
use super::node::Role;
use crate::command::generic::SignedClusterTime;
use crate::error::{ErrorCode, MongoError, Result};
use bson::{Binary, Bson, Document, Timestamp, doc, spec::BinarySubtype};
use hmac::{KeyInit, Mac};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{RwLock, Weak};
use std::time::Duration;

/// Where the keys live (in `admin`).
const KEYS: &str = "system.keys";
const PURPOSE: &str = "HMAC";
/// `KeysRotationIntervalSec`'s default: 90 days.
pub const DEFAULT_ROTATION_SECS: i64 = 90 * 24 * 3600;
/// How often a node reads the keys again at least (MongoDB's key manager refreshes about as
/// often), and sooner when its first key expires.
const REFRESH: Duration = Duration::from_secs(30);
/// How soon it tries again while it has no key (the config server may not be up yet).
const RETRY: Duration = Duration::from_secs(1);
/// The low bits of a time a proof covers: one proof signs every increment of a range, as
/// MongoDB's time proof service caches it.
const RANGE_MASK: u64 = 0xFFFF;

/// One HMAC key of `admin.system.keys`.
#[derive(Clone, Debug, PartialEq)]
pub struct ClusterTimeKey {
    pub id: i64,
    pub key: [u8; 20],
    pub expires_at: Timestamp,
}

impl ClusterTimeKey {
    /// A new random key.
    pub fn generate(id: i64, expires_at: Timestamp) -> ClusterTimeKey {
        let mut key = [0u8; 20];
        getrandom::fill(&mut key).expect("the operating system's random generator");
        ClusterTimeKey {
            id,
            key,
            expires_at,
        }
    }

    pub fn from_document(doc: &Document) -> Option<ClusterTimeKey> {
        if doc.get_str("purpose").ok()? != PURPOSE {
            return None;
        }
        Some(ClusterTimeKey {
            id: doc.get_i64("_id").ok()?,
            key: doc
                .get_binary_generic("key")
                .ok()?
                .as_slice()
                .try_into()
                .ok()?,
            expires_at: doc.get_timestamp("expiresAt").ok()?,
        })
    }

    pub fn to_document(&self) -> Document {
        doc! {
            "_id": self.id,
            "purpose": PURPOSE,
            "key": Binary {subtype: BinarySubtype::Generic, bytes: self.key.to_vec()},
            "expiresAt": self.expires_at,
        }
    }
}

/// MongoDB's time proof: HMAC-SHA1 under the key of the time, its increment's low 16 bits set,
/// as a little-endian 64-bit integer of seconds and increment.
pub fn proof(key: &[u8; 20], time: Timestamp) -> [u8; 20] {
    let ceiling = ((u64::from(time.time) << 32) | u64::from(time.increment)) | RANGE_MASK;
    let mut mac = hmac::Hmac::<sha1::Sha1>::new_from_slice(key).expect("any key");
    mac.update(&ceiling.to_le_bytes());
    mac.finalize().into_bytes().into()
}

/// The keys a node signs and checks cluster times with.
#[derive(Debug, Default)]
pub struct KeyRing {
    keys: RwLock<Vec<ClusterTimeKey>>,
    /// Set when the node signs: until it has keys it then gossips no time at all.
    required: AtomicBool,
}

impl KeyRing {
    /// This node signs what it gossips (with authentication).
    pub fn require(&self) {
        self.required.store(true, Ordering::SeqCst);
    }

    pub fn replace(&self, keys: Vec<ClusterTimeKey>) {
        *self.keys.write().expect("poisoned") = keys;
    }

    /// How long until the first key expires (none: at once), in whole seconds of `now`'s clock.
    fn first_expiry(&self, now: Timestamp) -> Duration {
        let keys = self.keys.read().expect("poisoned");
        let first = keys.iter().map(|k| k.expires_at.time).min().unwrap_or(0);
        Duration::from_secs(u64::from(first.saturating_sub(now.time)))
    }

    /// The signature of `time`: the proof under the key that expires first after it, and the
    /// key's id; zeros and key 0 when the node does not sign; `None` when it signs and has no
    /// key valid at `time` yet.
    pub fn sign(&self, time: Timestamp) -> Option<Document> {
        let keys = self.keys.read().expect("poisoned");
        let signing = keys
            .iter()
            .filter(|k| pair(k.expires_at) > pair(time))
            .min_by_key(|k| pair(k.expires_at));
        let (hash, id) = match signing {
            Some(key) => (proof(&key.key, time).to_vec(), key.id),
            None if self.required.load(Ordering::SeqCst) => return None,
            None => (vec![0; 20], 0),
        };
        Some(doc! {
            "hash": Binary {subtype: BinarySubtype::Generic, bytes: hash},
            "keyId": id,
        })
    }

    /// Whether `signed` was signed by one of the cluster's keys valid at its time:
    /// KeyNotFound without such a key, TimeProofMismatch when the hash is not its proof.
    pub fn validate(&self, signed: &SignedClusterTime) -> Result<()> {
        let keys = self.keys.read().expect("poisoned");
        let candidates: Vec<&ClusterTimeKey> = keys
            .iter()
            .filter(|k| k.id == signed.key_id && pair(k.expires_at) > pair(signed.time))
            .collect();
        if candidates.is_empty() {
            return Err(MongoError::new(
                ErrorCode::KeyNotFound,
                format!(
                    "Cache Reader No keys found for HMAC that is valid for time: {{ ts: Timestamp({}, {}) }} with id: {}",
                    signed.time.time, signed.time.increment, signed.key_id
                ),
            ));
        }
        if candidates
            .iter()
            .any(|k| proof(&k.key, signed.time).as_slice() == signed.hash.as_slice())
        {
            return Ok(());
        }
        Err(MongoError::new(
            ErrorCode::TimeProofMismatch,
            "Proof does not match the cluster time",
        ))
    }
}

fn pair(t: Timestamp) -> (u32, u32) {
    (t.time, t.increment)
}

/// Whether this node signs and checks cluster times: with authentication on, or members
/// authenticating each other.
pub fn signing<S: NodeState>(state: &S) -> bool {
    state.node().signs_cluster_time
}

/// Checks a request's `$clusterTime` before the node's clock advances to it: a time this node
/// has already reached needs no proof, nor does a caller allowed to advance the clock (calls
/// from roles in this process, members authenticated as `__system`, users with
/// `advanceClusterTime`; a `hello` claiming `internalClient` proves nothing).
pub async fn check<S: NodeState>(
    state: &S,
    ctx: &super::RequestContext,
    signed: &SignedClusterTime,
) -> Result<()> {
    let clock = &state.node().clock;
    if !signing(state) || pair(signed.time) <= pair(clock.now()) {
        return Ok(());
    }
    let granted = super::auth::privileges_of(state, ctx).await?;
    if may_advance(granted.as_deref()) {
        return Ok(());
    }
    clock.keys.validate(signed)
}

/// Whether a caller may move the clock to a time without a proof: everyone when authorization
/// is off here (`None`, MongoDB's ignored auth checks), else those holding `advanceClusterTime`
/// on the cluster.
fn may_advance(granted: Option<&[Privilege]>) -> bool {
    let advance = Privilege::new(Resource::Cluster, &["advanceClusterTime"]);
    granted.is_none_or(|granted| super::auth::privileges::allows(granted, &[advance]))
}

/// Reads the keys while the node lives (the config server first makes sure the current and
/// the next key exist), when it signs at all.
pub fn spawn<S: NodeState>(state: Weak<S>) {
    match state.upgrade() {
        Some(s) if signing(&*s) => s.node().clock.keys.require(),
        _ => return,
    }
    tokio::spawn(async move {
        loop {
            let Some(node) = state.upgrade() else { break };
            let outcome = super::asserts::contained("cluster time keys", refresh(&*node)).await;
            if let Some(Err(e)) = &outcome {
                tracing::debug!(error = %e, "could not refresh the cluster time keys");
            }
            // Again before the first key expires (the config server then makes the next one),
            // at least every REFRESH, every RETRY while there is none.
            let clock = &node.node().clock;
            let wait = clock.keys.first_expiry(clock.now()).clamp(RETRY, REFRESH);
            drop(node);
            tokio::time::sleep(wait).await;
        }
    });
}

/// Reads the keys valid now from the config server into the node's key ring.
async fn refresh<S: NodeState>(state: &S) -> Result<()> {
    let node = state.node();
    let now = node.clock.now();
    if node.role == Role::ConfigServer {
        let interval = node
            .params
            .get_i64("KeysRotationIntervalSec")
            .unwrap_or(DEFAULT_ROTATION_SECS);
        generate_if_needed(state, now, interval).await?;
    }
    let keys = valid_keys(state, now).await?;
    node.clock.keys.replace(keys);
    Ok(())
}

/// The keys not expired at `now`, the first to expire first.
async fn valid_keys<S: NodeState>(state: &S, now: Timestamp) -> Result<Vec<ClusterTimeKey>> {
    let reply = state
        .on_config_server(
            "admin",
            doc! {
                "find": KEYS,
                "filter": {"purpose": PURPOSE, "expiresAt": {"$gt": now}},
                "sort": {"expiresAt": 1},
            },
        )
        .await?;
    if let Some(e) = MongoError::from_reply(&reply) {
        return Err(e);
    }
    Ok(crate::command::first_batch(&reply)
        .iter()
        .filter_map(ClusterTimeKey::from_document)
        .collect())
}

/// MongoDB's key generator: a current key (its id the cluster time it was made at, valid for
/// one rotation interval) and the next one (valid for an interval after it), so that nodes
/// already hold the next key when the current one expires.
async fn generate_if_needed<S: NodeState>(state: &S, now: Timestamp, interval: i64) -> Result<()> {
    let keys = valid_keys(state, now).await?;
    let later = |t: Timestamp| Timestamp {
        time: u32::try_from(i64::from(t.time) + interval.max(1)).unwrap_or(u32::MAX),
        increment: t.increment,
    };
    let mut id = ((i64::from(now.time)) << 32) | i64::from(now.increment);
    let mut created = Vec::new();
    let current = match keys.first() {
        Some(key) => key.expires_at,
        None => {
            let key = ClusterTimeKey::generate(id, later(now));
            id += 1;
            created.push(key.clone());
            key.expires_at
        }
    };
    if keys.len() < 2 {
        created.push(ClusterTimeKey::generate(id, later(current)));
    }
    if created.is_empty() {
        return Ok(());
    }
    let documents: Vec<Bson> = created.iter().map(|k| k.to_document().into()).collect();
    let reply = state
        .on_config_server("admin", doc! {"insert": KEYS, "documents": documents})
        .await?;
    if let Some(e) = MongoError::from_reply(&reply) {
        return Err(e);
    }
    if reply.get_array("writeErrors").is_ok_and(|e| !e.is_empty()) {
        return Err(MongoError::internal(format!(
            "could not store new cluster time keys: {reply}"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(id: i64, expires: u32) -> ClusterTimeKey {
        ClusterTimeKey {
            id,
            key: [id as u8; 20],
            expires_at: Timestamp {
                time: expires,
                increment: 0,
            },
        }
    }

    fn signed(ring: &KeyRing, time: Timestamp) -> SignedClusterTime {
        let signature = ring.sign(time).unwrap();
        SignedClusterTime {
            time,
            hash: signature.get_binary_generic("hash").unwrap().clone(),
            key_id: signature.get_i64("keyId").unwrap(),
        }
    }

    #[test]
    fn the_proof_covers_a_range_of_increments_as_mongodb_hashes_it() {
        let key = [7u8; 20];
        let t = |increment| Timestamp {
            time: 1_700_000_000,
            increment,
        };
        assert_eq!(proof(&key, t(1)), proof(&key, t(0xFFFF)));
        assert_ne!(proof(&key, t(1)), proof(&key, t(0x1_0000)));
        // The HMAC input: (secs << 32 | inc | 0xFFFF) as little-endian bytes.
        let mut mac = hmac::Hmac::<sha1::Sha1>::new_from_slice(&key).unwrap();
        mac.update(&[0xFF, 0xFF, 0, 0, 0x00, 0xF1, 0x53, 0x65]);
        assert_eq!(
            proof(&key, t(3)).as_slice(),
            mac.finalize().into_bytes().as_slice()
        );
    }

    #[test]
    fn signing_uses_the_first_key_to_expire_and_validation_checks_it() {
        let ring = KeyRing::default();
        let time = Timestamp {
            time: 100,
            increment: 2,
        };
        let unsigned = ring.sign(time).unwrap();
        assert_eq!(unsigned.get_i64("keyId").unwrap(), 0);
        // A node that signs gossips nothing before it has a key.
        ring.require();
        assert_eq!(ring.sign(time), None);
        ring.replace(vec![key(2, 300), key(1, 200), key(9, 50)]);
        let good = signed(&ring, time);
        assert_eq!(good.key_id, 1);
        ring.validate(&good).unwrap();
        let mut tampered = good.clone();
        tampered.time.increment = 0x1_0000;
        let e = ring.validate(&tampered).unwrap_err();
        assert_eq!(
            (e.code().code(), e.message()),
            (204, "Proof does not match the cluster time")
        );
        let mut unknown = good.clone();
        unknown.key_id = 5;
        let e = ring.validate(&unknown).unwrap_err();
        assert_eq!(e.code().code(), 211);
        assert_eq!(
            e.message(),
            "Cache Reader No keys found for HMAC that is valid for time: { ts: Timestamp(100, 2) } with id: 5"
        );
        // An expired key no longer proves anything.
        let mut expired = good;
        expired.key_id = 9;
        assert_eq!(ring.validate(&expired).unwrap_err().code().code(), 211);
    }

    #[test]
    fn only_advance_cluster_time_moves_the_clock_without_a_proof() {
        assert!(may_advance(None));
        assert!(!may_advance(Some(&[])));
        let root = super::super::auth::roles::privileges("root", "admin").unwrap();
        assert!(!may_advance(Some(&root)));
        let granted = [Privilege::new(Resource::Cluster, &["advanceClusterTime"])];
        assert!(may_advance(Some(&granted)));
        let system = super::super::auth::roles::privileges("__system", "admin").unwrap();
        assert!(may_advance(Some(&system)));
    }

    #[test]
    fn keys_round_trip_in_mongodb_shape() {
        let k = ClusterTimeKey::generate(
            42,
            Timestamp {
                time: 5,
                increment: 1,
            },
        );
        let doc = k.to_document();
        assert_eq!(doc.get_str("purpose").unwrap(), "HMAC");
        assert_eq!(ClusterTimeKey::from_document(&doc), Some(k));
    }
}
