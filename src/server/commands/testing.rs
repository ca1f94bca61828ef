//! Test-only commands (present only with `enableTestCommands`): `configureFailPoint` and
//! `waitForFailPoint`.

use crate::command::CommandRequest;
use crate::error::{ErrorCode, MongoError, Result};
use crate::server::RequestContext;
use crate::server::dispatch::{CommandSpec, NodeState};
use bson::{RawDocumentBuf, rawdoc};
use std::time::Duration;
use tokio::time::Instant;

pub(super) fn commands<S: NodeState>() -> Vec<CommandSpec<S>> {
    vec![
        // configureFailPoint's fields are the fail point's own (mode, data, ...): no declared fields.
        CommandSpec::new("configureFailPoint", configure_fail_point)
            .requires(crate::server::auth::Requires::Cluster(&[
                "configureFailPoint",
            ]))
            .admin_only()
            .test_only()
            .help("modifies the settings of a fail point"),
        CommandSpec::new("waitForFailPoint", wait_for_fail_point)
            .requires(crate::server::auth::Requires::Cluster(&[
                "configureFailPoint",
            ]))
            .admin_only()
            .test_only()
            .help("waits until a fail point has been entered a number of times"),
    ]
}

/// `{waitForFailPoint: name, timesEntered, maxTimeMS}`: MaxTimeMSExpired when the fail point
/// was not entered that often in time.
async fn wait_for_fail_point<S: NodeState>(
    state: &S,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let args = req.args();
    let name = match args.target()? {
        bson::RawBsonRef::String(name) => name.to_string(),
        _ => {
            return Err(MongoError::type_mismatch(
                "waitForFailPoint requires the fail point name as a string",
            ));
        }
    };
    let times = args
        .i64("timesEntered")?
        .ok_or_else(|| crate::command::missing("waitForFailPoint", "timesEntered"))?;
    let max_time = args
        .i64("maxTimeMS")?
        .ok_or_else(|| crate::command::missing("waitForFailPoint", "maxTimeMS"))?;
    let deadline = Instant::now() + Duration::from_millis(max_time.max(0) as u64);
    let fail_points = &state.node().fail_points;
    while fail_points.times_entered(&name)? < times {
        if Instant::now() >= deadline {
            return Err(MongoError::new(
                ErrorCode::MaxTimeMSExpired,
                format!("Fail point {name} was not entered {times} times in time"),
            ));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(rawdoc! {})
}

async fn configure_fail_point<S: NodeState>(
    state: &S,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let count = state.node().fail_points.configure(&req.args())?;
    Ok(rawdoc! {"count": count})
}
