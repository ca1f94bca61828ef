//! `coordinateCommitTransaction {participants: [{shardId}], lsid, txnNumber, autocommit: false}`:
//! a router's commit of a transaction that wrote on several shards, sent to its coordinator
//! (the first participant), which runs the two-phase commit (`shard::txn_coordinator`) and
//! answers its decision: ok once committed everywhere, NoSuchTransaction once aborted. With no
//! participants (a router recovering the commit with the client's `recoveryToken`, sent to the
//! transaction's first write shard) it answers what a coordination of the transaction decided
//! or, without one here, what this shard's participant knows (`recover_decision`).

use super::super::ShardState;
use crate::command::CommandRequest;
use crate::command::requests::CoordinateCommitTransactionRequest;
use crate::error::{ErrorCode, MongoError, Result};
use crate::server::{CommandSpec, RequestContext};
use bson::{Bson, Document, RawBsonRef, RawDocumentBuf};

pub(super) fn commands() -> Vec<CommandSpec<ShardState>> {
    vec![
        // Not checked out of the session catalog: the coordinator sends the transaction's
        // `prepareTransaction` to this very shard, whose participant checks the session out.
        CommandSpec::new("coordinateCommitTransaction", coordinate_commit_transaction)
            .fields(CoordinateCommitTransactionRequest::FIELDS)
            .admin_only()
            .takes_write_concern()
            .detached_from_session()
            .help("Internal: coordinates the commit of a transaction across its participants"),
    ]
}

async fn coordinate_commit_transaction(
    state: &ShardState,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let args = req.args();
    let lsid = match req.body.get("lsid")? {
        Some(RawBsonRef::Document(lsid)) => Document::try_from(lsid)?,
        _ => {
            return Err(MongoError::failed_to_parse(
                "coordinateCommitTransaction must be run within a session (lsid)",
            ));
        }
    };
    let txn_number = args.i64("txnNumber")?.ok_or_else(|| {
        MongoError::failed_to_parse("coordinateCommitTransaction needs a txnNumber")
    })?;
    let participants = participants(args.array("participants")?)?;
    let recovering = participants.is_empty();
    let decided = state
        .txn_coordinators
        .coordinate(lsid.clone(), txn_number, participants)
        .await
        .and_then(|decision| decision.answer());
    match decided {
        // A recovery no coordination here answers: this shard's participant knows.
        Err(e) if recovering && e.code() == ErrorCode::NoSuchTransaction => {
            crate::datanode::transaction_table::recover_decision(state, &lsid, txn_number).await?
        }
        other => other?,
    }
    Ok(RawDocumentBuf::new())
}

/// `participants: [{shardId: <name>}, ...]`, as shard names.
fn participants(list: Option<Vec<Bson>>) -> Result<Vec<String>> {
    let Some(list) = list else {
        return Err(MongoError::new(
            ErrorCode::IDLFailedToParse,
            "BSON field 'coordinateCommitTransaction.participants' is missing but a required field",
        ));
    };
    list.iter()
        .map(|entry| {
            entry
                .as_document()
                .and_then(|d| d.get_str("shardId").ok())
                .map(str::to_string)
                .ok_or_else(|| {
                    MongoError::type_mismatch(
                        "BSON field 'coordinateCommitTransaction.participants.shardId' is \
                         missing or not a string",
                    )
                })
        })
        .collect()
}
