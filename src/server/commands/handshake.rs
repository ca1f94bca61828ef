//! The handshake and identity commands: hello/isMaster, buildInfo, ping, whatsmyuri,
//! (authentication and connectionStatus: `auth`).

use crate::command::{CommandRequest, requests};
use crate::error::{ErrorCode, MongoError, Result};
use crate::server::dispatch::{CommandSpec, NodeState};
use crate::server::{RequestContext, Role, client_metadata};
use crate::wire::{Compressor, MAX_BSON_OBJECT_SIZE, MAX_MESSAGE_SIZE, MAX_WRITE_BATCH_SIZE};
use bson::{Bson, RawDocumentBuf, doc, rawdoc};

/// Wire version of MongoDB 8.0.
pub const MAX_WIRE_VERSION: i32 = 25;
/// The MongoDB release whose behaviour this server reproduces.
pub const MONGODB_VERSION: &str = "8.0.0";

pub(super) fn commands<S: NodeState>() -> Vec<CommandSpec<S>> {
    vec![
        // No declared fields (unknown ones pass): drivers and proxies add handshake fields
        // (client metadata, compression, speculative auth, ...) that vary by version.
        CommandSpec::new("hello", hello)
            .requires(crate::server::auth::Requires::Nothing)
            .aliases(&["isMaster", "ismaster"])
            .help("Check if this server is primary for a replica set\n{hello : 1}"),
        CommandSpec::new("buildInfo", build_info)
            .requires(crate::server::auth::Requires::Nothing)
            .fields(requests::BuildInfoRequest::FIELDS)
            .aliases(&["buildinfo"])
            .help("get version #, etc.\n{ buildinfo:1 }"),
        CommandSpec::new("ping", empty_reply)
            .requires(crate::server::auth::Requires::Nothing)
            .fields(requests::PingRequest::FIELDS)
            .help("a way to check that the server is alive. responds immediately even if server is in a db lock."),
        CommandSpec::new("whatsmyuri", whatsmyuri)
            .requires(crate::server::auth::Requires::Nothing).help("{whatsmyuri:1}"),
    ]
}

async fn hello<S: NodeState>(
    state: &S,
    ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let args = req.args();
    let node = state.node();
    if let Some(client) = args.document("client")? {
        let first = ctx.client_metadata().is_none();
        if !first && !ctx.is_internal() {
            return Err(MongoError::new(
                ErrorCode::ClientMetadataCannotBeMutated,
                "The client metadata document may only be sent in the first hello",
            ));
        }
        if let Some(bson::RawBsonRef::Document(raw)) = req.body.get("client")? {
            client_metadata::validate(raw, node.role == Role::Router)?;
        }
        ctx.set_client_metadata(client);
    }
    let mut reply = RawDocumentBuf::new();
    if req.name() == "hello" {
        reply.append("isWritablePrimary", true);
    } else {
        reply.append("ismaster", true);
    }
    match node.role {
        Role::Router => reply.append("msg", "isdbgrid"),
        Role::ConfigServer => reply.append("configsvr", 2),
        Role::Shard => {}
    }
    reply.append("maxBsonObjectSize", MAX_BSON_OBJECT_SIZE as i32);
    reply.append("maxMessageSizeBytes", MAX_MESSAGE_SIZE as i32);
    reply.append("maxWriteBatchSize", MAX_WRITE_BATCH_SIZE as i32);
    reply.append("localTime", bson::DateTime::now());
    let timeout = i32::try_from(node.session_timeout_minutes()).unwrap_or(i32::MAX);
    reply.append("logicalSessionTimeoutMinutes", timeout);
    reply.append("connectionId", ctx.connection_id as i32);
    reply.append("minWireVersion", 0);
    reply.append("maxWireVersion", MAX_WIRE_VERSION);
    if node.role != Role::Router {
        reply.append("readOnly", false);
    }
    // Other cluster nodes identify themselves; fail points leave their commands alone.
    if args.get("internalClient")?.is_some() {
        ctx.mark_internal();
    }
    super::auth::hello_fields(state, ctx, &req, &mut reply).await?;
    if args.bool("helloOk")? == Some(true) {
        reply.append("helloOk", true);
    }
    if let Some(requested) = args.array("compression")? {
        let chosen: Vec<Compressor> = requested
            .iter()
            .filter_map(|c| c.as_str().and_then(Compressor::from_name))
            .collect();
        if !chosen.is_empty() {
            let mut names = bson::RawArrayBuf::new();
            for c in &chosen {
                names.push(c.name());
            }
            reply.append("compression", names);
        }
        ctx.set_compressors(chosen);
    }
    Ok(reply)
}

async fn build_info<S: NodeState>(
    _state: &S,
    _ctx: &RequestContext,
    _req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let (major, minor, patch) = (8, 0, 0);
    Ok(RawDocumentBuf::from_document(&doc! {
        "version": MONGODB_VERSION,
        "gitVersion": env!("CARGO_PKG_VERSION"),
        "modules": Bson::Array(vec![]),
        "allocator": "system",
        "javascriptEngine": "none",
        "sysInfo": "deprecated",
        "versionArray": [major, minor, patch, 0],
        "openssl": {"running": "disabled", "compiled": "disabled"},
        "buildEnvironment": {
            "distmod": "",
            "distarch": std::env::consts::ARCH,
            "target_arch": std::env::consts::ARCH,
            "target_os": std::env::consts::OS,
        },
        "bits": 64,
        "debug": cfg!(debug_assertions),
        "maxBsonObjectSize": MAX_BSON_OBJECT_SIZE as i32,
        "storageEngines": ["sqlite"],
        "docgrid": {"version": env!("CARGO_PKG_VERSION")},
    })?)
}

/// `ping`: nothing to do, an empty success.
async fn empty_reply<S: NodeState>(
    _state: &S,
    _ctx: &RequestContext,
    _req: CommandRequest,
) -> Result<RawDocumentBuf> {
    Ok(RawDocumentBuf::new())
}

async fn whatsmyuri<S: NodeState>(
    _state: &S,
    ctx: &RequestContext,
    _req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let you = ctx
        .peer
        .map(|p| p.to_string())
        .unwrap_or_else(|| "internal".into());
    Ok(rawdoc! {"you": you})
}
