//! Special test operations (`object: testRunner`): fail points, assertions about sessions,
//! collections, indexes and connections, and `createEntities` in the middle of a test.

use crate::entities::{CreateError, create_entities};
use crate::runner::{Step, TestState};
use crate::values::Args;
use mongodb::bson::{Bson, Document, doc};
use std::time::Duration;

/// Special operations whose subject the Rust driver keeps private: such tests are skipped.
pub fn unsupported(name: &str) -> Option<&'static str> {
    Some(match name {
        "assertSessionPinned" | "assertSessionUnpinned" => {
            "assertSessionPinned/Unpinned: the Rust driver does not expose whether a session is \
             pinned to a mongos"
        }
        "assertSessionDirty" | "assertSessionNotDirty" => {
            "assertSessionDirty/NotDirty: the Rust driver does not expose whether a session is dirty"
        }
        "assertSessionTransactionState" => {
            "assertSessionTransactionState: the Rust driver does not expose a session's \
             transaction state"
        }
        "loop"
        | "runOnThread"
        | "waitForThread"
        | "waitForEvent"
        | "assertEventCount"
        | "recordTopologyDescription"
        | "assertTopologyType"
        | "waitForPrimaryChange" => {
            "operation outside what these test files need (threads, loops, SDAM)"
        }
        _ => return None,
    })
}

fn fail(e: impl Into<String>) -> Step {
    Step::Fail(e.into())
}

pub async fn run(state: &mut TestState, name: &str, arguments: Document) -> Result<(), Step> {
    if let Some(reason) = unsupported(name) {
        return Err(Step::Skip(reason.to_string()));
    }
    let mut args = Args::new(name, arguments);
    match name {
        "failPoint" | "targetedFailPoint" => {
            let fail_point = args.req_doc("failPoint").map_err(fail)?;
            // docgrid has one router: the session's pinned mongos and the client's selected
            // mongos are both that router, so the internal client sets the fail point there (and
            // keeps `configureFailPoint` out of the entities' observed events).
            let _ = args.raw("client");
            let _ = args.raw("session");
            args.finish().map_err(fail)?;
            let fp_name = fail_point
                .get_str("configureFailPoint")
                .map_err(|_| {
                    fail(format!(
                        "failPoint without configureFailPoint: {fail_point}"
                    ))
                })?
                .to_string();
            state
                .internal
                .database("admin")
                .run_command(fail_point.clone())
                .await
                .map_err(|e| fail(format!("configureFailPoint {fail_point}: {e}")))?;
            state.fail_points.push(fp_name);
            Ok(())
        }
        "assertCollectionExists" | "assertCollectionNotExists" => {
            let db = args.req_str("databaseName").map_err(fail)?;
            let coll = args.req_str("collectionName").map_err(fail)?;
            args.finish().map_err(fail)?;
            let names = state
                .internal
                .database(&db)
                .list_collection_names()
                .await
                .map_err(|e| fail(format!("listCollections on {db}: {e}")))?;
            let exists = names.contains(&coll);
            let want = name == "assertCollectionExists";
            if exists == want {
                Ok(())
            } else {
                Err(fail(format!(
                    "collection {db}.{coll} {} (collections: {names:?})",
                    if exists { "exists" } else { "does not exist" }
                )))
            }
        }
        "assertIndexExists" | "assertIndexNotExists" => {
            let db = args.req_str("databaseName").map_err(fail)?;
            let coll = args.req_str("collectionName").map_err(fail)?;
            let index = args.req_str("indexName").map_err(fail)?;
            args.finish().map_err(fail)?;
            let listed = state
                .internal
                .database(&db)
                .collection::<Document>(&coll)
                .list_index_names()
                .await;
            // A collection that does not exist has no index (listIndexes: NamespaceNotFound).
            let names = match listed {
                Err(e) if matches!(e.kind.as_ref(), mongodb::error::ErrorKind::Command(c) if c.code == 26) => {
                    Vec::new()
                }
                other => other.map_err(|e| fail(format!("listIndexes on {db}.{coll}: {e}")))?,
            };
            let exists = names.contains(&index);
            let want = name == "assertIndexExists";
            if exists == want {
                Ok(())
            } else {
                Err(fail(format!(
                    "index {index} on {db}.{coll} {} (indexes: {names:?})",
                    if exists { "exists" } else { "does not exist" }
                )))
            }
        }
        "assertSameLsidOnLastTwoCommands" | "assertDifferentLsidOnLastTwoCommands" => {
            let client = args.req_str("client").map_err(fail)?;
            args.finish().map_err(fail)?;
            let observer = state
                .entities
                .client(&client)
                .map_err(fail)?
                .observer
                .clone();
            let (a, b) = observer
                .last_two_started()
                .ok_or_else(|| fail(format!("{client} observed fewer than two commands")))?;
            let (Some(la), Some(lb)) = (a.get("lsid"), b.get("lsid")) else {
                return Err(fail("one of the last two commands has no lsid"));
            };
            let same = name == "assertSameLsidOnLastTwoCommands";
            if (la == lb) == same {
                Ok(())
            } else {
                Err(fail(format!(
                    "last two lsids are {}: {la} and {lb}",
                    if la == lb { "equal" } else { "different" }
                )))
            }
        }
        "assertNumberConnectionsCheckedOut" => {
            let client = args.req_str("client").map_err(fail)?;
            let want = args
                .i64("connections")
                .map_err(fail)?
                .ok_or_else(|| fail("missing connections"))?;
            args.finish().map_err(fail)?;
            let observer = state
                .entities
                .client(&client)
                .map_err(fail)?
                .observer
                .clone();
            // Check-ins happen as the driver finishes with a connection, just after the
            // operation returns; give them a moment before judging.
            let mut got = observer.checked_out();
            for _ in 0..50 {
                if got == want {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
                got = observer.checked_out();
            }
            if got == want {
                Ok(())
            } else {
                Err(fail(format!(
                    "{client} has {got} connections checked out, expected {want}"
                )))
            }
        }
        "createEntities" => {
            let list = match args.req("entities").map_err(fail)? {
                Bson::Array(a) => a,
                other => return Err(fail(format!("entities is not an array: {other}"))),
            };
            args.finish().map_err(fail)?;
            create_entities(&mut state.entities, &list, state.router)
                .await
                .map_err(|e| match e {
                    CreateError::Unsupported(m) => Step::Skip(m),
                    CreateError::Failed(m) => Step::Fail(m),
                })
        }
        "wait" => {
            let ms = args
                .i64("ms")
                .map_err(fail)?
                .ok_or_else(|| fail("wait without ms"))?;
            args.finish().map_err(fail)?;
            tokio::time::sleep(Duration::from_millis(ms.max(0) as u64)).await;
            Ok(())
        }
        other => Err(fail(format!("unknown testRunner operation `{other}`"))),
    }
}

/// Turns every fail point a test set back off.
pub async fn disable_fail_points(state: &mut TestState) -> Result<(), String> {
    let mut errors = Vec::new();
    for name in std::mem::take(&mut state.fail_points) {
        if let Err(e) = state
            .internal
            .database("admin")
            .run_command(doc! {"configureFailPoint": &name, "mode": "off"})
            .await
        {
            errors.push(format!("turning {name} off: {e}"));
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("; "))
    }
}
