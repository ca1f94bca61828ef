//! Command requests declared once for router and data nodes (`command_request!`: the struct,
//! its parser with MongoDB's messages, and its known fields), MongoDB's generic arguments, and
//! the one check refusing fields a command does not declare (`IDLUnknownField`).

mod admin;
mod auth;
mod catalog;
mod reads;
mod writes;

pub use admin::{
    AbortTransactionRequest, BuildInfoRequest, CommitTransactionRequest, ConnectionStatusRequest,
    CoordinateCommitTransactionRequest, DbStatsRequest, EndSessionsRequest, GetCmdLineOptsRequest,
    GetLogRequest, HostInfoRequest, KillAllSessionsByPatternRequest, KillAllSessionsRequest,
    KillSessionsRequest, PingRequest, RefreshSessionsRequest,
};
pub use auth::{
    AuthenticateRequest, DropAllRolesFromDatabaseRequest, DropAllUsersFromDatabaseRequest,
    DropRoleRequest, DropUserRequest, LogoutRequest, RolePrivilegesRequest, RoleRequest,
    RoleRolesRequest, RolesInfoRequest, SaslContinueRequest, SaslStartRequest, UserRequest,
    UserRolesRequest, UsersInfoRequest,
};
pub use catalog::{
    CollModRequest, CreateIndexesRequest, CreateRequest, DropDatabaseRequest, DropIndexesRequest,
    DropRequest, EnableShardingRequest, ExplainFields, ListCollectionsRequest,
    ListDatabasesRequest, ListIndexesRequest, MovePrimaryRequest, Rename, RenameCollectionRequest,
    ShardCollectionRequest, StartSessionRequest,
};
pub use reads::{
    AggregateRequest, CountRequest, DistinctRequest, FindRequest, GetMoreRequest,
    KillCursorsRequest,
};
pub use writes::{
    BulkWriteRequest, DeleteRequest, FindAndModifyRequest, InsertRequest, UpdateRequest,
    check_batch_size,
};

// Left lenient (no declaration, unknown fields pass), as MongoDB 8.0 leaves them:
// - not parsed by an IDL command (their fields are read by hand, the rest ignored): killOp
//   (`KillOpCmdBase` is a `BasicCommand` reading `op`), listCommands (`BasicCommand`);
// - IDL commands declared `strict: false`: shardCollection (mongos' `shard_collection.idl`;
//   its struct still types the fields it reads), addShard (`add_shard.idl`), mergeAllChunksOnShard
//   (`merge_chunk_request.idl`), refineCollectionShardKey (`refine_collection_shard_key.idl`),
//   killSessions, killAllSessions and killAllSessionsByPattern (`kill_sessions.idl`);
// - fields of any name by design: getParameter/setParameter (parameter names), serverStatus
//   (section names), currentOp (its filter), configureFailPoint (the fail point's fields);
// - hello/isMaster: strict in `hello.idl`, but its fields grow from release to release
//   (drivers add handshake fields) and a refused handshake is a client that cannot connect;
// - not found to be strict IDL commands, so not refused until they are: collStats, split,
//   mergeChunks, listShards, getShardVersion, balancerStatus, flushRouterConfig,
//   checkMetadataConsistency, whatsmyuri, logout.

use super::CommandRequest;
use crate::error::{ErrorCode, MongoError, Result};

/// The arguments every command accepts, as MongoDB's `src/mongo/idl/generic_argument.idl`
/// lists them (`generic_args_api_v1` and `generic_args_unstable_v1`), plus `recoveryToken`
/// (mongos' transaction argument) and docgrid's own internal `backpressure`.
pub const GENERIC_ARGUMENTS: &[&str] = &[
    // generic_args_api_v1
    "apiVersion",
    "apiStrict",
    "apiDeprecationErrors",
    "$db",
    "maxTimeMS",
    "readConcern",
    "writeConcern",
    "lsid",
    "clientOperationKey",
    "txnNumber",
    "autocommit",
    "startTransaction",
    "stmtId",
    "comment",
    "$readPreference",
    "$clusterTime",
    // generic_args_unstable_v1
    "$audit",
    "$client",
    "$configServerState",
    "allowImplicitCollectionCreation",
    "$oplogQueryData",
    "$queryOptions",
    "$replData",
    "databaseVersion",
    "shardVersion",
    "tracking_info",
    "coordinator",
    "maxTimeMSOpOnly",
    "$configTime",
    "$topologyTime",
    "txnRetryCounter",
    "mayBypassWriteBlocking",
    "$tenant",
    "expectPrefix",
    // mongos' transaction recovery token, docgrid's internal flow-control hint
    "recoveryToken",
    "backpressure",
];

/// Whether `name` is one of MongoDB's generic arguments.
pub fn is_generic_argument(name: &str) -> bool {
    GENERIC_ARGUMENTS.contains(&name)
}

/// MongoDB's IDL error for a field a strict command does not declare.
pub fn unknown_field(command: &str, field: &str) -> MongoError {
    MongoError::new(
        ErrorCode::IDLUnknownField,
        format!("BSON field '{command}.{field}' is an unknown field."),
    )
}

/// Refuses a field (in the body or as a document sequence) that is neither the command name,
/// one of `known`, nor a generic argument, as a strict IDL command does.
pub fn check_known_fields(request: &CommandRequest, command: &str, known: &[&str]) -> Result<()> {
    let allowed = |name: &str| known.contains(&name) || is_generic_argument(name);
    for field in request.body.iter().skip(1) {
        let (name, _) = field?;
        if !allowed(name) {
            return Err(unknown_field(command, name));
        }
    }
    for sequence in &request.sequences {
        if !allowed(&sequence.identifier) {
            return Err(unknown_field(command, &sequence.identifier));
        }
    }
    Ok(())
}

/// Declares a command request once: the struct, `parse` (each typed field read with `Args`'
/// accessor, so with MongoDB's TypeMismatch messages) and `FIELDS`, every field the command
/// knows (typed ones, then those listed after `known:`, which a handler reads itself). A
/// field is typed here only when handlers read it through `parse`; commands with a parser of
/// their own (`GetMore`, `KillCursors`, `aggregate::request`, explain, the catalog commands'
/// option readers) list their fields as `known`.
///
/// ```ignore
/// command_request! {
///     /// `find`.
///     pub struct FindRequest("find") {
///         filter: Option<Document> = "filter" via document,
///         limit: Option<i64> = "limit" via non_negative,
///     }
///     known: ["hint", "let"]
/// }
/// ```
macro_rules! command_request {
    (
        $(#[$meta:meta])*
        pub struct $name:ident($command:literal) {
            $($(#[$fmeta:meta])* $field:ident: $ty:ty = $bson:literal via $accessor:ident,)*
        }
        known: [$($known:literal),* $(,)?]
    ) => {
        $(#[$meta])*
        #[derive(Clone, Debug, Default)]
        pub struct $name {
            $($(#[$fmeta])* pub $field: $ty,)*
        }

        impl $name {
            /// The command's name.
            pub const COMMAND: &'static str = $command;
            /// Every field the command declares (generic arguments aside).
            pub const FIELDS: &'static [&'static str] = &[$($bson,)* $($known,)*];

            /// The typed fields of `request`, refusing a field of the wrong type.
            pub fn parse(request: &$crate::command::CommandRequest) -> $crate::error::Result<Self> {
                let args = request.args();
                let _ = &args;
                Ok($name {
                    $($field: args.$accessor($bson)?.map(Into::into),)*
                })
            }
        }
    };
}
pub(crate) use command_request;

#[cfg(test)]
mod tests;
