//! Diagnostics every role answers: getLog, hostInfo, serverStatus, listCommands.

use crate::command::CommandRequest;
use crate::error::{MongoError, Result};
use crate::server::dispatch::{CommandSpec, NodeState};
use crate::server::logbuf::LogBuffer;
use crate::server::{RequestContext, Role};
use bson::{Bson, Document, RawDocumentBuf, doc};

pub(super) fn commands<S: NodeState>() -> Vec<CommandSpec<S>> {
    vec![
        CommandSpec::new("getLog", get_log)
            .requires(crate::server::auth::Requires::Cluster(&["getLog"]))
            .fields(crate::command::requests::GetLogRequest::FIELDS)
            .admin_only()
            .help("{ getLog : '*' }  OR { getLog : 'global' }"),
        CommandSpec::new("hostInfo", host_info)
            .requires(crate::server::auth::Requires::Cluster(&["hostInfo"]))
            .fields(crate::command::requests::HostInfoRequest::FIELDS)
            .help("returns information about the daemon's host"),
        // serverStatus takes any section name as a field (`{repl: 0}`): no declared fields.
        CommandSpec::new("serverStatus", server_status)
            .requires(crate::server::auth::Requires::Cluster(&["serverStatus"]))
            .help("returns lots of administrative server statistics"),
        CommandSpec::new("listCommands", list_commands)
            .requires(crate::server::auth::Requires::Nothing)
            .help("get a list of all db commands"),
    ]
}

async fn get_log<S: NodeState>(
    state: &S,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let name = match req.args().target()? {
        bson::RawBsonRef::String(name) => name,
        _ => {
            return Err(MongoError::type_mismatch(
                "Argument to getLog must be of type String",
            ));
        }
    };
    if name == "*" {
        return Ok(RawDocumentBuf::from_document(
            &doc! {"names": LogBuffer::names().to_vec()},
        )?);
    }
    let (total, lines) = state.node().log.get(name).ok_or_else(|| {
        MongoError::location(
            15897, /* 15897: no RamLog named */
            format!("no RamLog named: {name}"),
        )
    })?;
    Ok(RawDocumentBuf::from_document(
        &doc! {"totalLinesWritten": total as i32, "log": lines},
    )?)
}

fn read_proc(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

/// Total memory in MiB from /proc/meminfo.
fn mem_size_mb() -> i64 {
    read_proc("/proc/meminfo")
        .and_then(|m| {
            m.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| {
                    l.split_whitespace()
                        .nth(1)
                        .and_then(|kb| kb.parse::<i64>().ok())
                })
        })
        .map(|kb| kb / 1024)
        .unwrap_or(0)
}

fn os_release_name() -> String {
    read_proc("/etc/os-release")
        .and_then(|text| {
            text.lines().find_map(|l| {
                l.strip_prefix("PRETTY_NAME=")
                    .map(|v| v.trim_matches('"').to_string())
            })
        })
        .unwrap_or_else(|| std::env::consts::OS.to_string())
}

async fn host_info<S: NodeState>(
    _state: &S,
    _ctx: &RequestContext,
    _req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let cores = std::thread::available_parallelism()
        .map(|n| n.get() as i32)
        .unwrap_or(1);
    let hostname = read_proc("/proc/sys/kernel/hostname").unwrap_or_else(|| "localhost".into());
    let mem = mem_size_mb();
    Ok(RawDocumentBuf::from_document(&doc! {
        "system": {
            "currentTime": bson::DateTime::now(),
            "hostname": hostname,
            "cpuAddrSize": 64,
            "memSizeMB": mem,
            "memLimitMB": mem,
            "numCores": cores,
            "numCoresAvailableToProcess": cores,
            "cpuArch": std::env::consts::ARCH,
            "numaEnabled": false,
        },
        "os": {
            "type": if cfg!(target_os = "linux") { "Linux" } else { std::env::consts::OS },
            "name": os_release_name(),
            "version": read_proc("/proc/sys/kernel/osrelease").unwrap_or_default(),
        },
        "extra": {
            "versionString": read_proc("/proc/version").unwrap_or_default(),
            "pageSize": 4096_i64,
        },
    })?)
}

/// Resident and virtual memory of this process in MiB, from /proc/self/statm.
pub fn process_memory_mb() -> (i64, i64) {
    let pages: Vec<i64> = read_proc("/proc/self/statm")
        .map(|s| {
            s.split_whitespace()
                .filter_map(|v| v.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    let mb = |pages: i64| pages * 4096 / (1024 * 1024);
    (
        pages.get(1).copied().map(mb).unwrap_or(0),
        pages.first().copied().map(mb).unwrap_or(0),
    )
}

async fn server_status<S: NodeState>(
    state: &S,
    _ctx: &RequestContext,
    _req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let node = state.node();
    let uptime = node.started.elapsed();
    let (resident, virt) = process_memory_mb();
    let host = match node.host() {
        h if h.is_empty() => {
            read_proc("/proc/sys/kernel/hostname").unwrap_or_else(|| "localhost".into())
        }
        h => h,
    };
    let mut status = doc! {
        "host": host,
        "version": super::MONGODB_VERSION,
        "process": node.role.process_name(),
        "pid": i64::from(std::process::id()),
        "uptime": uptime.as_secs_f64().floor(),
        "uptimeMillis": uptime.as_millis() as i64,
        "uptimeEstimate": uptime.as_secs() as i64,
        "localTime": bson::DateTime::now(),
        "asserts": crate::server::asserts::report(),
        "connections": node.stats.connections(node.role == Role::Router),
        "network": node.stats.network(),
        "opcounters": node.stats.opcounters(),
        "metrics": node.stats.metrics(),
        "shardingStatistics": node.stats.sharding_statistics(),
        "indexBulkBuilder": node.stats.index_bulk_builder(),
        "mem": {"bits": 64, "resident": resident, "virtual": virt, "supported": true},
        "logicalSessionRecordCache": node.sessions.server_status(node.session_catalog.size()),
        "docgrid": node.stats.ingress(),
    };
    match state.transactions_status() {
        Some(transactions) => {
            status.insert("transactions", transactions);
        }
        None if node.role != Role::Router => {
            status.insert("transactions", node.stats.transactions());
        }
        None => {}
    }
    Ok(RawDocumentBuf::from_document(&status)?)
}

async fn list_commands<S: NodeState>(
    state: &S,
    _ctx: &RequestContext,
    _req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let mut commands = Document::new();
    let test_commands = state.node().params.get_bool("enableTestCommands");
    for (name, spec) in state.commands().entries() {
        if spec.test_only && !test_commands {
            continue;
        }
        commands.insert(
            name,
            doc! {
                "help": spec.help,
                "requiresAuth": false,
                "secondaryOk": true,
                "adminOnly": spec.admin_only,
                "apiVersions": Bson::Array(vec![]),
                "deprecatedApiVersions": Bson::Array(vec![]),
            },
        );
    }
    Ok(RawDocumentBuf::from_document(&doc! {"commands": commands})?)
}
