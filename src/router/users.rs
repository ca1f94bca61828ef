//! The router's side of users: it reads them from the config server (`usersInfo` with their
//! credentials and the privileges their roles grant, user-defined roles resolved there, as
//! mongos does) into the node's user cache, and polls the config server's user cache generation
//! (`userCacheInvalidationIntervalSecs`, as mongos does) to drop its cache when users changed
//! through another router.

use super::RouterState;
use crate::command::first_batch;
use crate::error::Result;
use crate::server::asserts::contained;
use crate::server::auth::UserName;
use bson::{Document, doc};
use std::sync::Weak;
use std::time::Duration;

impl RouterState {
    pub(super) async fn user_from_config(&self, name: &UserName) -> Result<Option<Document>> {
        let reply = self
            .config
            .run_doc(
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

    pub(super) async fn any_user_on_config(&self) -> Result<bool> {
        let reply = self
            .config
            .run_doc(
                "admin",
                doc! {"find": "system.users", "limit": 1, "projection": {"_id": 1}},
            )
            .await?;
        Ok(!first_batch(&reply).is_empty())
    }
}

/// Polls the config server's user cache generation while the router lives.
pub(super) fn spawn_invalidator(state: Weak<RouterState>) {
    tokio::spawn(async move {
        let mut last: Option<bson::Bson> = None;
        loop {
            let period = match state.upgrade() {
                Some(s) => s
                    .node
                    .params
                    .get_i64("userCacheInvalidationIntervalSecs")
                    .unwrap_or(30),
                None => break,
            };
            tokio::time::sleep(Duration::from_secs(period.max(1) as u64)).await;
            let Some(state) = state.upgrade() else { break };
            contained("user cache invalidator", async {
                let reply = state
                    .config
                    .run_doc("admin", doc! {"_getUserCacheGeneration": 1})
                    .await;
                match reply.map(|r| r.get("cacheGeneration").cloned()) {
                    Ok(Some(generation)) => {
                        if last.as_ref().is_some_and(|l| *l != generation) {
                            state.node.users.invalidate();
                        }
                        last = Some(generation);
                    }
                    Ok(None) => {}
                    Err(e) => {
                        tracing::debug!(error = %e, "could not read the user cache generation");
                        // Unknown whether users changed meanwhile: start afresh.
                        state.node.users.invalidate();
                        last = None;
                    }
                }
            })
            .await;
        }
    });
}
