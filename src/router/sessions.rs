//! The router's side of the logical session jobs and kill commands (`server::session_jobs`,
//! `server::commands`): its sessions collection is the config server's, its cursors are
//! closed with what is behind them, and a kill of sessions goes on to every shard and the
//! config server, as mongos' `killSessionsRemote`.

use super::RouterState;
use crate::command::CommandRequest;
use crate::error::{ErrorCode, MongoError, Result};
use crate::server::RequestContext;
use crate::server::sessions::LogicalSessionId;
use bson::{Document, doc};

impl RouterState {
    /// Closes this router's cursors opened in a session `matches` accepts, with the shard
    /// cursors behind them; returns how many.
    pub(super) async fn kill_cursors_of_sessions(
        &self,
        matches: &(dyn Fn(&LogicalSessionId) -> bool + Sync),
    ) -> usize {
        // A killed session's transaction is over here too (its shards abort theirs).
        self.transactions.forget(matches);
        let killed = self.cursors.remove_sessions(matches);
        let count = killed.len();
        let ctx = RequestContext::internal();
        for cursor in killed {
            let db = cursor
                .ns
                .split_once('.')
                .map_or("admin", |(db, _)| db)
                .to_string();
            let _ = super::commands::close_cursor(self, &ctx, &db, cursor).await;
        }
        count
    }

    /// Sends `killAllSessionsByPattern` with `patterns` to every shard and the config server;
    /// a node that cannot be reached fails the kill, as mongos reports it.
    pub(super) async fn kill_sessions_on_nodes(&self, patterns: &[Document]) -> Result<()> {
        let command = doc! {"killAllSessionsByPattern": patterns.to_vec()};
        let mut nodes = vec![self.config.clone()];
        nodes.extend(
            self.shards
                .all(&self.config)
                .await?
                .into_iter()
                .map(|(_, client)| client),
        );
        let replies = futures::future::join_all(nodes.iter().map(|client| {
            let command = &command;
            async move {
                let reply = client
                    .call(CommandRequest::from_document("admin", command)?)
                    .await?;
                match MongoError::from_reply(&reply.to_document()?) {
                    Some(err) => Err(err),
                    None => Ok(()),
                }
            }
        }))
        .await;
        let failed: Vec<&str> = nodes
            .iter()
            .zip(&replies)
            .filter(|(_, reply)| reply.is_err())
            .map(|(client, _)| client.host())
            .collect();
        if failed.is_empty() {
            return Ok(());
        }
        tracing::error!(failedHosts = ?failed, "Failed to kill sessions on some hosts");
        Err(MongoError::new(
            ErrorCode::HostUnreachable,
            "Failed to kill sessions on some hosts",
        ))
    }

    pub(super) fn cursor_sessions_of_router(&self) -> Vec<LogicalSessionId> {
        self.cursors.sessions()
    }
}
