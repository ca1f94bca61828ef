//! Operation commands every role answers: `currentOp` (the `$currentOp` aggregation of this
//! role, reshaped) and `killOp` on a local op id.

use crate::command::{CommandRequest, first_batch, is_generic_field};
use crate::error::{ErrorCode, MongoError, Result};
use crate::server::RequestContext;
use crate::server::dispatch::{CommandSpec, NodeState};
use bson::{Bson, Document, RawBsonRef, RawDocumentBuf, doc};

pub(super) fn commands<S: NodeState>() -> Vec<CommandSpec<S>> {
    vec![
        CommandSpec::new("currentOp", current_op)
            .requires(crate::server::auth::Requires::Cluster(&["inprog"]))
            .admin_only()
            .help("report operations in progress"),
    ]
}

/// `killOp` as a mongod answers it (routers have their own, which also reaches shards).
pub fn kill_op<S: NodeState>() -> CommandSpec<S> {
    CommandSpec::new("killOp", kill_local_op)
        .requires(crate::server::auth::Requires::Cluster(&["killop"]))
        .admin_only()
        .help("kill an operation in progress")
}

/// Fields of `currentOp` that are options rather than part of its filter.
const CURRENT_OP_OPTIONS: [&str; 3] = ["$all", "$ownOps", "$truncateOps"];

/// `currentOp`: the same aggregation MongoDB runs for it (`$currentOp`, `$match` on the other
/// fields, everything gathered into `inprog`), through this role's own `aggregate`.
async fn current_op<S: NodeState>(
    state: &S,
    ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let body = Document::try_from(req.body.as_ref())?;
    let truthy = |name: &str| {
        body.get(name).is_some_and(|v| match v {
            Bson::Boolean(b) => *b,
            Bson::Null => false,
            Bson::Int32(n) => *n != 0,
            Bson::Int64(n) => *n != 0,
            Bson::Double(n) => *n != 0.0,
            _ => true,
        })
    };
    let mut filter = Document::new();
    for (name, value) in body.iter().skip(1) {
        let option = CURRENT_OP_OPTIONS.contains(&name.as_str());
        let generic = is_generic_field(name) && !is_query_operator(name);
        if !option && !generic {
            filter.insert(name, value.clone());
        }
    }
    let pipeline = vec![
        doc! {"$currentOp": {
            "allUsers": !truthy("$ownOps"),
            "idleConnections": truthy("$all"),
            "truncateOps": true,
        }},
        doc! {"$match": filter},
        doc! {"$group": {"_id": 0, "inprog": {"$push": "$$ROOT"}}},
    ];
    let aggregate = CommandRequest::from_document(
        "admin",
        &doc! {"aggregate": 1, "pipeline": pipeline, "cursor": {}},
    )?;
    let spec = state
        .commands()
        .get("aggregate")
        .ok_or_else(|| MongoError::internal("this role runs no aggregations"))?;
    let reply = (spec.handler)(state, ctx, aggregate).await?;
    let inprog = first_batch(&reply.to_document()?)
        .into_iter()
        .next()
        .and_then(|group| group.get_array("inprog").ok().cloned())
        .unwrap_or_default();
    Ok(RawDocumentBuf::from_document(&doc! {"inprog": inprog})?)
}

/// `$or`, `$and` and the like filter operations; other `$` fields are request metadata.
fn is_query_operator(name: &str) -> bool {
    matches!(
        name,
        "$or" | "$and" | "$nor" | "$expr" | "$comment" | "$where"
    )
}

async fn kill_local_op<S: NodeState>(
    state: &S,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let opid = parse_op_id(&req)?;
    tracing::info!(opid, "going to kill op");
    // killOp reports success whether or not the operation still ran.
    state.node().operations.kill(opid);
    Ok(RawDocumentBuf::from_document(
        &doc! {"info": "attempting to kill op"},
    )?)
}

/// killOp's numeric `op`, which must fit in 32 bits.
pub fn parse_op_id(req: &CommandRequest) -> Result<i32> {
    let value = match req.body.get("op")? {
        Some(value) => value,
        None => {
            return Err(MongoError::new(
                ErrorCode::NoSuchKey,
                "Missing expected field \"op\"",
            ));
        }
    };
    let op = match value {
        RawBsonRef::Int32(n) => i64::from(n),
        RawBsonRef::Int64(n) => n,
        RawBsonRef::Double(d) if d.fract() == 0.0 && d.abs() < 9.2e18 => d as i64,
        RawBsonRef::Double(d) => {
            return Err(MongoError::bad_value(format!(
                "Expected field \"op\" to have a value exactly representable as a 64-bit integer, but found op: {d}"
            )));
        }
        other => {
            return Err(MongoError::type_mismatch(format!(
                "Expected field \"op\" to have numeric type, but found {}",
                crate::command::bson_type_name(other.element_type())
            )));
        }
    };
    i32::try_from(op).map_err(|_| {
        MongoError::location(
            26823,
            format!("invalid op : {op}. Op ID cannot be represented with 32 bits"),
        )
    })
}
