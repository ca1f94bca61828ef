//! The users of routers and shards: they live on the config server (`admin.system.users`, as in
//! MongoDB's sharded clusters), are read from it with their credentials and the privileges their
//! roles grant (user-defined roles resolved there), and are dropped from the node's cache when
//! the config server's user cache generation moves (`userCacheInvalidationIntervalSecs`, as
//! mongos polls it).

use crate::command::first_batch;
use crate::error::Result;
use crate::server::asserts::contained;
use crate::server::auth::UserName;
use crate::server::dispatch::NodeState;
use bson::{Document, doc};
use std::sync::Weak;
use std::time::Duration;

/// User `name` as the config server resolves it, or `None` when it has no such user.
pub async fn user<S: NodeState>(state: &S, name: &UserName) -> Result<Option<Document>> {
    let reply = state
        .on_config_server(
            "admin",
            doc! {
                "usersInfo": name.to_document(),
                "showCredentials": true,
                "showPrivileges": true,
            },
        )
        .await?;
    Ok(reply
        .get_array("users")
        .ok()
        .and_then(|users| users.first())
        .and_then(|user| user.as_document())
        .cloned())
}

/// Whether the config server has any user (the localhost exception applies until it does).
pub async fn any_user<S: NodeState>(state: &S) -> Result<bool> {
    let reply = state
        .on_config_server(
            "admin",
            doc! {"find": "system.users", "limit": 1, "projection": {"_id": 1}},
        )
        .await?;
    Ok(!first_batch(&reply).is_empty())
}

/// Polls the config server's user cache generation while the node lives, and empties the
/// node's user cache when it moved (users changed through another node) or cannot be read.
pub fn spawn_invalidator<S: NodeState + 'static>(state: Weak<S>) {
    tokio::spawn(async move {
        let mut last: Option<bson::Bson> = None;
        loop {
            let period = match state.upgrade() {
                Some(s) => s
                    .node()
                    .params
                    .get_i64("userCacheInvalidationIntervalSecs")
                    .unwrap_or(30),
                None => break,
            };
            tokio::time::sleep(Duration::from_secs(period.max(1) as u64)).await;
            let Some(state) = state.upgrade() else { break };
            contained("user cache invalidator", async {
                let reply = state
                    .on_config_server("admin", doc! {"_getUserCacheGeneration": 1})
                    .await;
                match reply.map(|r| r.get("cacheGeneration").cloned()) {
                    Ok(Some(generation)) => {
                        if last.as_ref().is_some_and(|l| *l != generation) {
                            state.node().users.invalidate();
                        }
                        last = Some(generation);
                    }
                    Ok(None) => {}
                    Err(e) => {
                        tracing::debug!(error = %e, "could not read the user cache generation");
                        // Unknown whether users changed meanwhile: start afresh.
                        state.node().users.invalidate();
                        last = None;
                    }
                }
            })
            .await;
        }
    });
}
