//! The router loop for unsharded data: send a command to the database's primary shard with the
//! cached database version; when the shard answers StaleDbVersion, refresh and retry.
//! Commands on `config` and `admin` go to the config server.

use super::RouterState;
use crate::command::CommandRequest;
use crate::error::{ErrorCode, MongoError, Result};
use crate::rpc::NodeClient;
use crate::server::stats::Stats;
use bson::{RawBsonRef, RawDocumentBuf};

/// MongoDB's router gives up after this many stale-version retries.
const MAX_STALE_RETRIES: usize = 10;

/// Databases whose data lives on the config server.
pub fn on_config_server(db: &str) -> bool {
    db == "config" || db == "admin"
}

fn reply_code(reply: &RawDocumentBuf) -> Option<i32> {
    match reply.get("code") {
        Ok(Some(RawBsonRef::Int32(code))) => Some(code),
        _ => None,
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
    /// another database (e.g. an admin command naming `db`).
    pub(super) async fn send_to_primary_of(
        &self,
        db_name: &str,
        req: CommandRequest,
        create: bool,
    ) -> Result<Option<(NodeClient, RawDocumentBuf)>> {
        if db_name == "local" {
            return Err(MongoError::new(
                ErrorCode::IllegalOperation,
                "Can't use 'local' database through mongos",
            ));
        }
        if on_config_server(db_name) {
            let reply = self.config.call(req).await?;
            return Ok(Some((self.config.clone(), reply)));
        }
        // The collection the command is about, when it names one (`aggregate: 1` does not).
        let ns = match req.args().target() {
            Ok(RawBsonRef::String(coll)) if db_name == req.db => Some(format!("{db_name}.{coll}")),
            _ => None,
        };
        let mut reloaded_shards = false;
        for _ in 0..MAX_STALE_RETRIES {
            let Some(db) = self.databases.get(&self.config, db_name, create).await? else {
                return Ok(None);
            };
            let routing = match &ns {
                Some(ns) => self.collections.get(&self.config, ns).await?,
                None => None,
            };
            // A sharded collection goes to the shard owning its chunks with that shard's
            // version; anything else to the database's primary with the database version.
            let (shard_name, field, version) = match &routing {
                Some(routing) => {
                    let owners = routing.chunks.shards();
                    let mut owners = owners.into_iter();
                    let (Some(owner), None) = (owners.next(), owners.next()) else {
                        return Err(MongoError::new(
                            ErrorCode::NotImplemented,
                            "routing a command to a collection whose chunks are on several shards is not supported yet",
                        ));
                    };
                    let version = routing
                        .chunks
                        .shard_version(&owner, routing.entry.generation);
                    (owner, "shardVersion", version.to_document())
                }
                None => (
                    db.primary.clone(),
                    "databaseVersion",
                    db.version.to_document(),
                ),
            };
            let shard = self.shards.client(&self.config, &shard_name).await?;
            let mut versioned = req.clone();
            versioned
                .body
                .append(field, bson::RawDocumentBuf::from_document(&version)?);
            let reply = match shard.call(versioned).await {
                // Nothing was sent: the shard may have moved; reload the shard list and retry
                // once (a shard that is down stays an error).
                Err(e) if e.code() == ErrorCode::HostUnreachable && !reloaded_shards => {
                    tracing::debug!(shard = %shard_name, error = %e, "shard unreachable; reloading the shard list");
                    self.shards.reload(&self.config).await?;
                    reloaded_shards = true;
                    continue;
                }
                other => other?,
            };
            match reply_code(&reply) {
                Some(code) if code == ErrorCode::StaleDbVersion.code() => {
                    tracing::info!(db = %db_name, "stale database version; refreshing");
                    self.databases.invalidate(db_name);
                    continue;
                }
                Some(code) if code == ErrorCode::StaleConfig.code() => {
                    tracing::info!(ns = ?ns, "stale shard version; refreshing");
                    Stats::add(&self.node.stats.stale_config_retries, 1);
                    if let Some(ns) = &ns {
                        self.collections.invalidate(ns);
                    }
                    continue;
                }
                _ => {}
            }
            return Ok(Some((shard, reply)));
        }
        Err(MongoError::new(
            ErrorCode::StaleDbVersion,
            format!(
                "the routing information of database {db_name} kept changing; gave up after {MAX_STALE_RETRIES} attempts"
            ),
        ))
    }

    /// The name of the shard `send_to_primary` sends `db`'s commands to (the config server is
    /// `config`, as mongos names it).
    pub(super) async fn shard_name_of(&self, db: &str) -> Result<String> {
        if on_config_server(db) {
            return Ok("config".to_string());
        }
        match self.databases.get(&self.config, db, false).await? {
            Some(entry) => Ok(entry.primary.clone()),
            None => Err(MongoError::new(
                ErrorCode::NamespaceNotFound,
                format!("database {db} not found"),
            )),
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
        let id = self.cursors.register(shard.clone(), shard_id, ns);
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
