//! getParameter, setParameter and getCmdLineOpts.

use crate::command::CommandRequest;
use crate::error::{ErrorCode, MongoError, Result};
use crate::server::RequestContext;
use crate::server::dispatch::{CommandSpec, NodeState};
use crate::server::tls::TlsMode;
use bson::{Bson, Document, RawBsonRef, RawDocumentBuf, doc};

pub(super) fn commands<S: NodeState>() -> Vec<CommandSpec<S>> {
    vec![
        // getParameter/setParameter take arbitrary parameter names as fields: no declared fields.
        CommandSpec::new("getParameter", get_parameter)
            .requires(crate::server::auth::Requires::Cluster(&["getParameter"]))
            .admin_only()
            .help("get administrative option(s)\nexample:\n{ getParameter:1, notablescan:1 }"),
        CommandSpec::new("setParameter", set_parameter)
            .requires(crate::server::auth::Requires::Cluster(&["setParameter"]))
            .admin_only()
            .help("set administrative option(s)\n{ setParameter:1, <param>:<value> }"),
        CommandSpec::new("getCmdLineOpts", get_cmd_line_opts)
            .requires(crate::server::auth::Requires::Cluster(&["getCmdLineOpts"]))
            .fields(crate::command::requests::GetCmdLineOptsRequest::FIELDS)
            .admin_only()
            .help("get argv"),
    ]
}

/// The parameter the node's cluster authentication mode answers (not in `Parameters`: the
/// node and its connection pools share it).
const CLUSTER_AUTH_MODE: &str = "clusterAuthMode";

async fn get_parameter<S: NodeState>(
    state: &S,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let params = &state.node().params;
    let (all, details) = match req.args().target()? {
        RawBsonRef::String("*") => (true, false),
        RawBsonRef::Document(d) => {
            let opts = d.to_owned().to_document()?;
            (
                matches!(opts.get("allParameters"), Some(Bson::Boolean(true))),
                matches!(opts.get("showDetails"), Some(Bson::Boolean(true))),
            )
        }
        _ => (false, false),
    };
    let mut cluster_auth_mode = Bson::from(state.node().cluster_auth_mode.name());
    if details {
        cluster_auth_mode = Bson::Document(doc! {
            "value": cluster_auth_mode,
            "settableAtRuntime": true,
            "settableAtStartup": true,
        });
    }
    let result: Document = if all {
        let mut all = params.all(details);
        all.insert(CLUSTER_AUTH_MODE, cluster_auth_mode);
        all
    } else {
        let mut out = Document::new();
        for item in req.body.iter().skip(1) {
            let (name, _) = item?;
            if crate::command::is_generic_field(name) {
                continue;
            }
            if name == CLUSTER_AUTH_MODE {
                out.insert(name, cluster_auth_mode.clone());
            } else if let Some(value) = params.describe(name, details) {
                out.insert(name, value);
            }
        }
        out
    };
    if result.is_empty() {
        return Err(MongoError::new(
            ErrorCode::InvalidOptions,
            "no option found to get",
        ));
    }
    Ok(RawDocumentBuf::from_document(&result)?)
}

async fn set_parameter<S: NodeState>(
    state: &S,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let body = req.body.to_document()?;
    let mut changes = body
        .iter()
        .skip(1)
        .filter(|(k, _)| !crate::command::is_generic_field(k));
    let (name, value) = changes.next().ok_or_else(|| {
        MongoError::new(
            ErrorCode::InvalidLength,
            "no option found to set, use help:true to see options ",
        )
    })?;
    if changes.next().is_some() {
        return Err(MongoError::new(
            ErrorCode::InvalidLength,
            "only one parameter may be set at a time",
        ));
    }
    let node = state.node();
    let previous = if name == CLUSTER_AUTH_MODE {
        let tls = node.tls.as_ref().map_or(TlsMode::Disabled, |t| t.mode);
        Bson::from(node.cluster_auth_mode.set(value, tls)?)
    } else {
        node.params.set(name, value)?
    };
    Ok(RawDocumentBuf::from_document(&doc! {"was": previous})?)
}

async fn get_cmd_line_opts<S: NodeState>(
    state: &S,
    _ctx: &RequestContext,
    _req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let cmdline = &state.node().cmdline;
    Ok(RawDocumentBuf::from_document(
        &doc! {"argv": cmdline.argv.clone(), "parsed": cmdline.parsed.clone()},
    )?)
}
