//! The DDL locks as commands, for the shards that coordinate a DDL themselves (create,
//! rename, shardCollection, refineCollectionShardKey, movePrimary): `_configsvrAcquireDdlLock`
//! waits for the lock and answers its fencing term and lease, `_configsvrDdlLockPing` keeps
//! the holder's lease alive, `_configsvrReleaseDdlLock` gives the lock back. The commits such a
//! shard sends carry the term (`ddlLockTerm`), and are refused once the lock was taken over.

use super::super::ConfigState;
use super::super::ddl_locks::{Holder, LockScope};
use crate::command::{CommandRequest, missing};
use crate::error::{MongoError, Result};
use crate::server::{CommandSpec, RequestContext};
use bson::{RawBsonRef, RawDocumentBuf, rawdoc};
use std::time::Duration;

pub(super) fn commands() -> Vec<CommandSpec<ConfigState>> {
    vec![
        CommandSpec::new("_configsvrAcquireDdlLock", acquire)
            .admin_only()
            .help("Internal: takes the DDL lock of a database or collections for a shard's DDL"),
        CommandSpec::new("_configsvrDdlLockPing", ping)
            .admin_only()
            .help("Internal: keeps the DDL locks of a process alive"),
        CommandSpec::new("_configsvrReleaseDdlLock", release)
            .admin_only()
            .help("Internal: releases a DDL lock by its term"),
    ]
}

fn process(req: &CommandRequest) -> Result<String> {
    Ok(req
        .args()
        .str("process")?
        .ok_or_else(|| missing(req.name(), "process"))?
        .to_string())
}

/// `{_configsvrAcquireDdlLock: "db" | "db.coll" | ["db.a", "db.b"], process, reason,
/// timeoutMS?}` → `{term, leaseMillis}`.
async fn acquire(
    state: &ConfigState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let args = req.args();
    let names: Vec<String> = match args.target()? {
        RawBsonRef::String(name) => vec![name.to_string()],
        RawBsonRef::Array(names) => names
            .into_iter()
            .map(|n| match n? {
                RawBsonRef::String(name) => Ok(name.to_string()),
                _ => Err(MongoError::type_mismatch(
                    "_configsvrAcquireDdlLock takes namespaces as strings",
                )),
            })
            .collect::<Result<_>>()?,
        _ => {
            return Err(MongoError::type_mismatch(
                "_configsvrAcquireDdlLock takes a namespace or an array of namespaces",
            ));
        }
    };
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let scope = LockScope::for_names(&names)?;
    let holder = Holder {
        process: process(&req)?,
        reason: args.str("reason")?.unwrap_or("DDL").to_string(),
    };
    let timeout = match args.non_negative("timeoutMS")? {
        Some(ms) => Duration::from_millis(ms as u64),
        None => state.lock_timeout(),
    };
    let term = state.ddl_locks.acquire(&scope, &holder, timeout).await?;
    Ok(rawdoc! {
        "term": term,
        "leaseMillis": state.ddl_locks.lease().as_millis() as i64,
    })
}

/// `{_configsvrDdlLockPing: process}`.
async fn ping(
    state: &ConfigState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let process = match req.args().target()? {
        RawBsonRef::String(p) => p.to_string(),
        _ => return Err(missing(req.name(), "process")),
    };
    state.ddl_locks.ping(&process).await?;
    Ok(RawDocumentBuf::new())
}

/// `{_configsvrReleaseDdlLock: term}` → `{released}` (false: the term held nothing any more).
async fn release(
    state: &ConfigState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let term = req
        .args()
        .i64(req.name())?
        .ok_or_else(|| missing(req.name(), "term"))?;
    let released = state.ddl_locks.release(term).await?;
    Ok(rawdoc! {"released": released})
}
