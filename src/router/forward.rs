//! The routing entry point: [`RouterState::route`] runs one attempt of a request against the
//! cached placement of its namespace (database primary and version; for a sharded collection,
//! its chunks and each shard's version), and when a shard refuses it as stale (StaleConfig,
//! StaleEpoch, StaleDbVersion) refreshes what is stale and runs it again — at most 10 times.
//! It is the only retry loop for stale routing and [`Stale::of`] the only place a stale error
//! is recognised; an attempt reports a shard's refusal as that error ([`refuse_stale`]).
//! Commands on `config` and `admin` go to the config server.

use super::RouterState;
use super::catalog_cache::CollectionRouting;
use super::targeting::By;
use crate::catalog::{ChunkVersion, DatabaseEntry, DatabaseVersion};
use crate::command::CommandRequest;
use crate::error::{ErrorCode, MongoError, Result};
use crate::rpc::NodeClient;
use crate::server::stats::Stats;
use bson::{RawBsonRef, RawDocumentBuf};
use std::future::Future;
use std::sync::Arc;

/// How long a router keeps resending an idempotent DDL to a config server it cannot reach.
const CONFIG_DDL_RETRY_WINDOW: std::time::Duration = std::time::Duration::from_secs(30);

/// MongoDB's router gives up after this many stale-version attempts.
const MAX_STALE_RETRIES: usize = 10;

/// Databases whose data lives on the config server.
pub fn on_config_server(db: &str) -> bool {
    db == "config" || db == "admin"
}

/// `local` is each node's own: a router has none to route to.
pub(super) fn check_routable(db: &str) -> Result<()> {
    if db == "local" {
        return Err(MongoError::new(
            ErrorCode::IllegalOperation,
            "Can't use 'local' database through mongos",
        ));
    }
    Ok(())
}

/// Where a namespace's data is, as this router currently believes: what one attempt of
/// [`RouterState::route`] runs against.
pub(super) struct Placement {
    pub db: DatabaseEntry,
    /// The collection's routing when it is sharded.
    pub routing: Option<Arc<CollectionRouting>>,
    /// Which cached load of the collection this is (see `CollectionCache::refresh_stale`);
    /// `None` for a database-level request.
    collection_load: Option<u64>,
}

impl Placement {
    /// `req` with the version `shard` is expected to hold: the shard version for a sharded
    /// collection, otherwise the database version (which only the primary accepts).
    pub fn versioned(&self, shard: &str, req: &CommandRequest) -> Result<CommandRequest> {
        let (field, version) = match &self.routing {
            Some(routing) => ("shardVersion", routing.version_on(shard).to_document()),
            None => ("databaseVersion", self.db.version.to_document()),
        };
        let mut versioned = req.clone();
        versioned
            .body
            .append(field, RawDocumentBuf::from_document(&version)?);
        Ok(versioned)
    }
}

/// What a shard's refusal says is stale, and the version it wants when it said.
#[derive(Debug)]
pub(super) enum Stale {
    Database {
        wanted: Option<DatabaseVersion>,
    },
    /// The collection (the namespace the shard named, if it did).
    Collection {
        ns: Option<String>,
        /// The refusing shard and the version it holds (`shardId`, `vWanted`).
        wanted: Option<(String, ChunkVersion)>,
    },
}

impl Stale {
    /// The staleness an error reports, if it is a stale-routing refusal (the shard executed
    /// nothing, so the request may be sent again): the one place these codes are recognised.
    pub fn of(error: &MongoError) -> Option<Stale> {
        let extra = error.extra();
        let wanted = || extra.and_then(|e| e.get_document("vWanted").ok());
        match error.code() {
            ErrorCode::StaleDbVersion => Some(Stale::Database {
                wanted: wanted().and_then(|v| DatabaseVersion::from_document(v).ok()),
            }),
            ErrorCode::StaleConfig | ErrorCode::StaleEpoch => Some(Stale::Collection {
                ns: extra.and_then(|e| e.get_str("ns").ok()).map(str::to_string),
                wanted: extra
                    .and_then(|e| e.get_str("shardId").ok())
                    .zip(wanted().and_then(|v| ChunkVersion::from_document(v).ok()))
                    .map(|(shard, version)| (shard.to_string(), version)),
            }),
            _ => None,
        }
    }
}

/// Whether an error is a stale-routing refusal ([`Stale::of`]): for an operation that keeps
/// going after a partial refusal (a write batch) and leaves the retry to `route`.
pub(super) fn is_stale(error: &MongoError) -> bool {
    Stale::of(error).is_some()
}

/// A shard's reply, or the stale refusal it is, as the error [`RouterState::route`] retries.
/// Other replies, failed or not, are the caller's to read.
pub(super) fn refuse_stale(reply: RawDocumentBuf) -> Result<RawDocumentBuf> {
    match reply_error(&reply)? {
        Some(e) if is_stale(&e) => Err(e),
        _ => Ok(reply),
    }
}

/// The error a failed reply carries.
pub(super) fn reply_error(reply: &RawDocumentBuf) -> Result<Option<MongoError>> {
    if crate::error::raw_reply_ok(reply) {
        return Ok(None);
    }
    Ok(MongoError::from_reply(&reply.to_document()?))
}

/// A count in a reply (`n`, `nModified`): MongoDB sends int32, int64 or double.
pub(super) fn reply_count(value: Option<RawBsonRef<'_>>) -> i64 {
    match value {
        Some(RawBsonRef::Int32(n)) => i64::from(n),
        Some(RawBsonRef::Int64(n)) => n,
        Some(RawBsonRef::Double(n)) => n as i64,
        _ => 0,
    }
}

/// One shard's successful reply.
pub(super) struct ShardReply {
    pub shard: String,
    pub client: NodeClient,
    pub reply: RawDocumentBuf,
}

impl RouterState {
    /// The routing entry point. Runs `attempt` against the cached placement of database `db`
    /// (and collection `ns`, when given); when it fails with a stale-routing error, refreshes
    /// what the refusal says is stale (unless the cache already has what the shard wants) and
    /// runs it again, up to [`MAX_STALE_RETRIES`] attempts in all. Any other outcome is
    /// returned. `None` when the database does not exist (and `create` is not set: writes
    /// create it).
    ///
    /// An operation that keeps state across attempts (a write batch) holds it outside the
    /// closure and resends only what was refused.
    pub(super) async fn route<T, F, Fut>(
        &self,
        db: &str,
        ns: Option<&str>,
        create: bool,
        mut attempt: F,
    ) -> Result<Option<T>>
    where
        F: FnMut(Arc<Placement>) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let mut last = None;
        for _ in 0..MAX_STALE_RETRIES {
            let Some(placement) = self.placement(db, ns, create).await? else {
                return Ok(None);
            };
            let placement = Arc::new(placement);
            let error = match attempt(Arc::clone(&placement)).await {
                Ok(value) => return Ok(Some(value)),
                Err(error) => error,
            };
            let Some(stale) = Stale::of(&error) else {
                return Err(error);
            };
            // Within a transaction only its first statement may run again.
            if !super::transactions::may_retry_stale(self).await {
                return Err(error);
            }
            last = Some(error.code());
            self.refresh_stale(db, ns, &placement, stale).await?;
        }
        let code = match last {
            Some(ErrorCode::StaleDbVersion) | None => ErrorCode::StaleDbVersion,
            Some(_) => ErrorCode::StaleConfig,
        };
        Err(MongoError::new(
            code,
            format!(
                "the routing information of {} kept changing; gave up after {MAX_STALE_RETRIES} attempts",
                ns.unwrap_or(db)
            ),
        ))
    }

    /// The cached placement of `db` (and `ns`), loaded on a miss.
    async fn placement(
        &self,
        db: &str,
        ns: Option<&str>,
        create: bool,
    ) -> Result<Option<Placement>> {
        let Some(entry) = self.databases.get(&self.config, db, create).await? else {
            return Ok(None);
        };
        let (routing, collection_load) = match ns {
            Some(ns) => {
                let cached = self
                    .collections
                    .get_cached(&self.config, ns, &self.node.stats)
                    .await?;
                (cached.routing, Some(cached.serial))
            }
            None => (None, None),
        };
        Ok(Some(Placement {
            db: entry,
            routing,
            collection_load,
        }))
    }

    /// After an attempt against `placement` was refused as `stale`: refreshes what is stale,
    /// unless another request already loaded what the shard wants.
    async fn refresh_stale(
        &self,
        db: &str,
        ns: Option<&str>,
        placement: &Placement,
        stale: Stale,
    ) -> Result<()> {
        match stale {
            Stale::Database { wanted } => {
                tracing::info!(db = %db, "stale database version; refreshing");
                self.databases
                    .refresh_stale(&self.config, db, Some(placement.db.version), wanted)
                    .await
            }
            Stale::Collection { ns: named, wanted } => {
                Stats::add(&self.node.stats.stale_config_retries, 1);
                // The load the attempt used is known when the refusal is about its collection.
                let (ns, used) = match named {
                    Some(named) if Some(named.as_str()) != ns => (Some(named), None),
                    _ => (ns.map(str::to_string), placement.collection_load),
                };
                tracing::info!(ns = ?ns, "stale shard version; refreshing");
                let Some(ns) = ns else { return Ok(()) };
                let wanted = wanted.as_ref().map(|(shard, v)| (shard.as_str(), *v));
                self.collections
                    .refresh_stale(&self.config, &ns, &self.node.stats, used, wanted)
                    .await
            }
        }
    }

    /// Sends `req` where `req.db`'s unsharded collections live. `None` when the database does
    /// not exist and `create` is not set.
    pub(super) async fn send_to_primary(
        &self,
        req: CommandRequest,
        create: bool,
    ) -> Result<Option<(NodeClient, RawDocumentBuf)>> {
        let db = req.db.clone();
        self.send_to_primary_of(&db, req, create).await
    }

    /// [`send_to_primary`](Self::send_to_primary) for a command about database `db` sent on
    /// another database (e.g. an admin command naming `db`). A sharded collection's command
    /// goes to the shard owning its chunks when that is one shard.
    pub(super) async fn send_to_primary_of(
        &self,
        db_name: &str,
        req: CommandRequest,
        create: bool,
    ) -> Result<Option<(NodeClient, RawDocumentBuf)>> {
        // The collection the command is about, when it names one (`aggregate: 1` does not).
        let ns = match req.args().target() {
            Ok(RawBsonRef::String(coll)) if db_name == req.db => Some(format!("{db_name}.{coll}")),
            _ => None,
        };
        self.route_to_primary(db_name, ns.as_deref(), req, create)
            .await
    }

    /// Sends a DDL about collections of `db_name` to the database's primary shard with the
    /// database version, whether they are sharded or not: the primary coordinates it.
    pub(super) async fn send_to_database_primary(
        &self,
        db_name: &str,
        req: CommandRequest,
        create: bool,
    ) -> Result<Option<(NodeClient, RawDocumentBuf)>> {
        self.route_to_primary(db_name, None, req, create).await
    }

    /// Sends an idempotent DDL command to the config server, which coordinates it; sent again
    /// while the config server cannot be reached (it may be restarting, and then resumes the
    /// operation), for up to 30 seconds.
    pub(super) async fn config_ddl(&self, command: bson::Document) -> Result<bson::Document> {
        let deadline = tokio::time::Instant::now() + CONFIG_DDL_RETRY_WINDOW;
        let mut backoff = std::time::Duration::from_millis(50);
        loop {
            match self.config.run_doc("admin", command.clone()).await {
                Err(e) if e.retryable_hop() && tokio::time::Instant::now() + backoff < deadline => {
                    tracing::warn!(error = %e, "retrying a DDL on the config server");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(std::time::Duration::from_secs(1));
                }
                other => return other,
            }
        }
    }

    /// [`send_to_primary_of`](Self::send_to_primary_of): `ns`, when given, is a collection
    /// whose chunks may decide the shard instead.
    async fn route_to_primary(
        &self,
        db_name: &str,
        ns: Option<&str>,
        req: CommandRequest,
        create: bool,
    ) -> Result<Option<(NodeClient, RawDocumentBuf)>> {
        check_routable(db_name)?;
        if on_config_server(db_name) {
            let reply = self.config.call(req).await?;
            return Ok(Some((self.config.clone(), reply)));
        }
        let req = &req;
        self.route(db_name, ns, create, |placement| async move {
            let target = placement.target(By::SoleOwner)?;
            let (client, reply) = self.call_shard(&placement, target.first(), req).await?;
            Ok((client, refuse_stale(reply)?))
        })
        .await
    }

    /// Sends `req` to each of `shards` at once, each with the version `placement` gives it.
    pub(super) async fn scatter(
        &self,
        placement: &Placement,
        shards: &[String],
        req: &CommandRequest,
    ) -> Vec<(String, Result<(NodeClient, RawDocumentBuf)>)> {
        let sends = shards.iter().map(|shard| async move {
            (shard.clone(), self.call_shard(placement, shard, req).await)
        });
        futures::future::join_all(sends).await
    }

    /// Sends a collection-level command (index and catalog commands, stats) where the
    /// collection lives (a shard's error fails the command): the primary shard for an
    /// unsharded collection; for a sharded one every shard owning chunks (`all`), or one of
    /// them — the primary when it owns chunks, as its catalog is the reference. Answers each
    /// shard's name, client and reply; `None` when the database does not exist.
    pub(super) async fn send_to_owners(
        &self,
        req: CommandRequest,
        all: bool,
        create: bool,
    ) -> Result<Option<Vec<ShardReply>>> {
        check_routable(&req.db)?;
        if on_config_server(&req.db) {
            let reply = self.config.run(req).await?;
            return Ok(Some(vec![ShardReply {
                shard: "config".to_string(),
                client: self.config.clone(),
                reply,
            }]));
        }
        let ns = format!("{}.{}", req.db, req.args().collection()?);
        let req = &req;
        self.route(&req.db, Some(&ns), create, |placement| async move {
            let by = if all { By::AllOwners } else { By::OneOwner };
            let target = placement.target(by)?;
            self.gather(&placement, target.shards(), req).await
        })
        .await
    }

    /// [`scatter`](Self::scatter), then every reply checked in shard order: the first stale
    /// refusal fails the attempt (for [`route`](Self::route) to retry), the first error the
    /// command.
    pub(super) async fn gather(
        &self,
        placement: &Placement,
        shards: &[String],
        req: &CommandRequest,
    ) -> Result<Vec<ShardReply>> {
        let mut replies = Vec::with_capacity(shards.len());
        for (shard, result) in self.scatter(placement, shards, req).await {
            let (client, reply) = result?;
            let reply = refuse_stale(reply)?;
            if let Some(e) = reply_error(&reply)? {
                return Err(e);
            }
            replies.push(ShardReply {
                shard,
                client,
                reply,
            });
        }
        Ok(replies)
    }

    /// Sends `req` to shard `shard` with the version `placement` gives it. When the shard
    /// cannot be reached (nothing was sent) the shard list is reloaded — the shard may have
    /// moved — and the request sent once more (versioned again from `req`, so the usual path
    /// copies the request once).
    pub(super) async fn call_shard(
        &self,
        placement: &Placement,
        shard: &str,
        req: &CommandRequest,
    ) -> Result<(NodeClient, RawDocumentBuf)> {
        let client = self.shards.client(&self.config, shard).await?;
        // Within a transaction the request carries its fields too (`transactions::attach`),
        // and the reply says what the participant did.
        let outgoing = |client: &NodeClient| {
            super::transactions::attach(
                Some(shard),
                client.host(),
                placement.versioned(shard, req)?,
            )
        };
        let (client, reply) = match client.call(outgoing(&client)?).await {
            Err(e) if e.code() == ErrorCode::HostUnreachable => {
                tracing::debug!(shard = %shard, error = %e, "shard unreachable; reloading the shard list");
                self.shards.reload(&self.config).await?;
                let client = self.shards.client(&self.config, shard).await?;
                let reply = client.call(outgoing(&client)?).await?;
                (client, reply)
            }
            other => (client, other?),
        };
        super::transactions::observe(shard, &reply);
        Ok((client, reply))
    }

    /// Replaces a shard cursor id in a cursor reply by a router cursor id (registering the
    /// mapping), so that later `getMore`s come back here and go to the right shard.
    pub(super) fn adopt_cursor(
        &self,
        shard: &NodeClient,
        reply: RawDocumentBuf,
    ) -> Result<RawDocumentBuf> {
        let Ok(Some(RawBsonRef::Document(cursor))) = reply.get("cursor") else {
            return Ok(reply);
        };
        let Ok(Some(RawBsonRef::Int64(shard_id))) = cursor.get("id") else {
            return Ok(reply);
        };
        if shard_id == 0 {
            return Ok(reply);
        }
        let ns = match cursor.get("ns") {
            Ok(Some(RawBsonRef::String(ns))) => ns.to_string(),
            _ => String::new(),
        };
        let source = super::cursors::CursorSource::Shard {
            client: shard.clone(),
            cursor_id: shard_id,
            collection: ns
                .split_once('.')
                .map(|(_, c)| c.to_string())
                .unwrap_or_default(),
        };
        let id = self.cursors.register(source, ns);
        replace_cursor_id(&reply, id)
    }
}

/// A copy of a cursor reply with `cursor.id` set to `id`; documents are copied as bytes.
pub fn replace_cursor_id(reply: &RawDocumentBuf, id: i64) -> Result<RawDocumentBuf> {
    let mut out = RawDocumentBuf::new();
    for element in reply.iter() {
        let (key, value) = element?;
        match (key, value) {
            ("cursor", RawBsonRef::Document(cursor)) => {
                let mut rewritten = RawDocumentBuf::new();
                for field in cursor.iter() {
                    let (k, v) = field?;
                    if k == "id" {
                        rewritten.append(k, id);
                    } else {
                        rewritten.append_ref(k, v);
                    }
                }
                out.append(key, rewritten);
            }
            _ => out.append_ref(key, value),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::rawdoc;

    #[test]
    fn stale_refusals_carry_what_the_shard_wants() {
        use crate::catalog::CollectionGeneration;
        use bson::{Timestamp, doc};
        let generation = CollectionGeneration::new(Timestamp {
            time: 1,
            increment: 0,
        });
        let wanted = ChunkVersion::new(generation, 2, 0);
        // As a shard's version check refuses a request (`shard::filtering`).
        let refusal = MongoError::new(ErrorCode::StaleConfig, "stale").with_extra(doc! {
            "ns": "db.c",
            "vReceived": ChunkVersion::unsharded().to_document(),
            "vWanted": wanted.to_document(),
            "shardId": "shard0",
        });
        match Stale::of(&refusal) {
            Some(Stale::Collection { ns, wanted: w }) => {
                assert_eq!(ns.as_deref(), Some("db.c"));
                assert_eq!(w, Some(("shard0".to_string(), wanted)));
            }
            other => panic!("not a collection refusal: {other:?}"),
        }
        let reply = RawDocumentBuf::from_document(&refusal.to_reply()).unwrap();
        assert!(refuse_stale(reply).is_err());
        // StaleEpoch (a chunk operation on a re-created collection) is stale too; other
        // failures are the caller's to read.
        assert!(Stale::of(&MongoError::new(ErrorCode::StaleEpoch, "epoch")).is_some());
        assert!(matches!(
            Stale::of(&MongoError::new(ErrorCode::StaleDbVersion, "db")),
            Some(Stale::Database { wanted: None })
        ));
        let duplicate = rawdoc! {"ok": 0.0, "code": 11000, "errmsg": "E11000"};
        assert!(refuse_stale(duplicate).is_ok());
        assert!(refuse_stale(rawdoc! {"ok": 1.0}).is_ok());
    }

    #[test]
    fn rewrites_only_the_cursor_id() {
        let reply =
            rawdoc! {"cursor": {"firstBatch": [{"a": 1}], "id": 42_i64, "ns": "db.c"}, "ok": 1.0};
        let out = replace_cursor_id(&reply, 7).unwrap().to_document().unwrap();
        assert_eq!(
            out.get_document("cursor").unwrap().get_i64("id").unwrap(),
            7
        );
        assert_eq!(
            out.get_document("cursor").unwrap().get_str("ns").unwrap(),
            "db.c"
        );
        assert_eq!(out.get_f64("ok").unwrap(), 1.0);
    }
}
