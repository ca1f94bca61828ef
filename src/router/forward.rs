//! The router loop: run a request against the cached placement of its namespace (database
//! primary and version; for a sharded collection, its chunks and each shard's version), and when
//! a shard refuses it as stale (StaleDbVersion, StaleConfig) drop what is stale, reload and run
//! it again — at most 10 times. Every routed command takes its passes from a [`RoutingLoop`].
//! Commands on `config` and `admin` go to the config server.

use super::RouterState;
use super::catalog_cache::CollectionRouting;
use crate::catalog::DatabaseEntry;
use crate::command::CommandRequest;
use crate::error::{ErrorCode, MongoError, Result};
use crate::rpc::NodeClient;
use crate::server::stats::Stats;
use bson::{RawBsonRef, RawDocumentBuf};
use std::sync::Arc;

/// How long a router keeps resending an idempotent DDL to a config server it cannot reach.
const CONFIG_DDL_RETRY_WINDOW: std::time::Duration = std::time::Duration::from_secs(30);

/// MongoDB's router gives up after this many stale-version retries.
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

/// The shard owning every chunk of a collection, for commands that are not (yet) merged
/// across shards.
pub(super) fn single_owner(routing: &CollectionRouting) -> Result<String> {
    let mut owners = routing.owners().into_iter();
    match (owners.next(), owners.next()) {
        (Some(owner), None) => Ok(owner),
        _ => Err(MongoError::new(
            ErrorCode::NotImplemented,
            format!(
                "this command is not supported yet on {}, whose chunks are on several shards",
                routing.entry.ns
            ),
        )),
    }
}

fn reply_code(reply: &RawDocumentBuf) -> Option<i32> {
    match reply.get("code") {
        Ok(Some(RawBsonRef::Int32(code))) => Some(code),
        _ => None,
    }
}

/// Where a namespace's data is, as this router currently believes.
pub(super) struct Placement {
    pub db: DatabaseEntry,
    /// The collection's routing when it is sharded.
    pub routing: Option<Arc<CollectionRouting>>,
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

/// What a shard's refusal says is stale.
#[derive(Debug)]
pub(super) enum Stale {
    Database,
    /// The collection (the namespace the shard named, if it did).
    Collection(Option<String>),
}

/// The staleness a shard reply reports, if it is such a refusal (the shard executed nothing).
pub(super) fn stale_in(reply: &RawDocumentBuf) -> Option<Stale> {
    match reply_code(reply) {
        Some(code) if code == ErrorCode::StaleDbVersion.code() => Some(Stale::Database),
        Some(code) if code == ErrorCode::StaleConfig.code() => {
            Some(Stale::Collection(match reply.get("ns") {
                Ok(Some(RawBsonRef::String(ns))) => Some(ns.to_string()),
                _ => None,
            }))
        }
        _ => None,
    }
}

/// A pass's outcome: its value, or the staleness that made a shard refuse it.
pub(super) type Pass<T> = std::result::Result<T, Stale>;

/// The error an `ok: 0` reply carries.
pub(super) fn reply_error(reply: &RawDocumentBuf) -> Result<Option<MongoError>> {
    let ok = match reply.get("ok")? {
        Some(RawBsonRef::Double(v)) => v != 0.0,
        Some(RawBsonRef::Int32(v)) => v != 0,
        Some(RawBsonRef::Int64(v)) => v != 0,
        Some(RawBsonRef::Boolean(v)) => v,
        _ => true,
    };
    if ok {
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

/// The passes of one routed operation: each pass gets the cached placement; a pass a shard
/// refused as stale reports it ([`RoutingLoop::stale`]), which drops the stale cache entry so
/// the next pass reloads it. An operation that keeps state across passes (a write batch)
/// resends only what was refused.
pub(super) struct RoutingLoop<'r> {
    router: &'r RouterState,
    db: &'r str,
    ns: Option<&'r str>,
    create: bool,
    passes: usize,
    last: Option<Stale>,
}

impl RoutingLoop<'_> {
    /// The placement for the next pass: `None` when the database does not exist (and is not
    /// to be created); an error after [`MAX_STALE_RETRIES`] stale passes.
    pub async fn next(&mut self) -> Result<Option<Placement>> {
        if self.passes == MAX_STALE_RETRIES {
            let code = match self.last {
                Some(Stale::Collection(_)) => ErrorCode::StaleConfig,
                _ => ErrorCode::StaleDbVersion,
            };
            return Err(MongoError::new(
                code,
                format!(
                    "the routing information of {} kept changing; gave up after {MAX_STALE_RETRIES} attempts",
                    self.ns.unwrap_or(self.db)
                ),
            ));
        }
        self.passes += 1;
        let router = self.router;
        let Some(db) = router
            .databases
            .get(&router.config, self.db, self.create)
            .await?
        else {
            return Ok(None);
        };
        let routing = match self.ns {
            Some(ns) => {
                router
                    .collections
                    .get(&router.config, ns, &router.node.stats)
                    .await?
            }
            None => None,
        };
        Ok(Some(Placement { db, routing }))
    }

    /// The last pass was refused as stale: forget the stale routing information.
    pub fn stale(&mut self, stale: Stale) {
        let router = self.router;
        match &stale {
            Stale::Database => {
                tracing::info!(db = %self.db, "stale database version; refreshing");
                router.databases.invalidate(self.db);
            }
            Stale::Collection(named) => {
                let ns = named.as_deref().or(self.ns);
                tracing::info!(ns = ?ns, "stale shard version; refreshing");
                Stats::add(&router.node.stats.stale_config_retries, 1);
                if let Some(ns) = ns {
                    router.collections.invalidate(ns);
                }
            }
        }
        self.last = Some(stale);
    }
}

impl RouterState {
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

    /// The routing loop of [`send_to_primary_of`](Self::send_to_primary_of): `ns`, when
    /// given, is a collection whose chunks may decide the shard instead.
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
        let mut passes = self.routing_loop(db_name, ns, create);
        while let Some(placement) = passes.next().await? {
            let shard = match &placement.routing {
                Some(routing) => single_owner(routing)?,
                None => placement.db.primary.clone(),
            };
            let (client, reply) = self.call_shard(&placement, &shard, &req).await?;
            match stale_in(&reply) {
                Some(stale) => passes.stale(stale),
                None => return Ok(Some((client, reply))),
            }
        }
        Ok(None)
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
    /// collection lives (a shard's error fails the command): the primary shard for an unsharded collection; for a sharded one every
    /// shard owning chunks (`all`), or one of them — the primary when it owns chunks, as its
    /// catalog is the reference. Answers each shard's name, client and reply; `None` when the
    /// database does not exist.
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
        let mut passes = self.routing_loop(&req.db, Some(&ns), create);
        while let Some(placement) = passes.next().await? {
            let shards = match &placement.routing {
                None => vec![placement.db.primary.clone()],
                Some(routing) => {
                    let owners = routing.owners();
                    if all {
                        owners
                    } else if owners.contains(&placement.db.primary) {
                        vec![placement.db.primary.clone()]
                    } else {
                        owners.into_iter().take(1).collect()
                    }
                }
            };
            match self.gather(&placement, &shards, &req).await? {
                Ok(replies) => return Ok(Some(replies)),
                Err(stale) => passes.stale(stale),
            }
        }
        Ok(None)
    }

    /// [`scatter`](Self::scatter), then every reply checked: the first stale refusal ends the
    /// pass, the first error fails the command.
    pub(super) async fn gather(
        &self,
        placement: &Placement,
        shards: &[String],
        req: &CommandRequest,
    ) -> Result<Pass<Vec<ShardReply>>> {
        let mut replies = Vec::with_capacity(shards.len());
        for (shard, result) in self.scatter(placement, shards, req).await {
            let (client, reply) = result?;
            if let Some(stale) = stale_in(&reply) {
                return Ok(Err(stale));
            }
            if let Some(e) = reply_error(&reply)? {
                return Err(e);
            }
            replies.push(ShardReply {
                shard,
                client,
                reply,
            });
        }
        Ok(Ok(replies))
    }

    /// The passes of an operation on `ns` (or on database `db` alone).
    pub(super) fn routing_loop<'r>(
        &'r self,
        db: &'r str,
        ns: Option<&'r str>,
        create: bool,
    ) -> RoutingLoop<'r> {
        RoutingLoop {
            router: self,
            db,
            ns,
            create,
            passes: 0,
            last: None,
        }
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
        match client.call(placement.versioned(shard, req)?).await {
            Err(e) if e.code() == ErrorCode::HostUnreachable => {
                tracing::debug!(shard = %shard, error = %e, "shard unreachable; reloading the shard list");
                self.shards.reload(&self.config).await?;
                let client = self.shards.client(&self.config, shard).await?;
                let reply = client.call(placement.versioned(shard, req)?).await?;
                Ok((client, reply))
            }
            other => Ok((client, other?)),
        }
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
