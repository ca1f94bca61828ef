//! Test-only commands (present only with `enableTestCommands`): `configureFailPoint`.

use crate::command::CommandRequest;
use crate::error::Result;
use crate::server::RequestContext;
use crate::server::dispatch::{CommandSpec, NodeState};
use bson::{RawDocumentBuf, rawdoc};

pub(super) fn commands<S: NodeState>() -> Vec<CommandSpec<S>> {
    vec![
        CommandSpec::new("configureFailPoint", |s, c, r| {
            Box::pin(configure_fail_point(s, c, r))
        })
        .admin_only()
        .test_only()
        .help("modifies the settings of a fail point"),
    ]
}

async fn configure_fail_point<S: NodeState>(
    state: &S,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let count = state.node().fail_points.configure(&req.args())?;
    Ok(rawdoc! {"count": count})
}
