//! Reads at a snapshot outside transactions (`readConcern: {level: "snapshot", atClusterTime?}`
//! on find, aggregate and distinct): the command runs in a read-only storage transaction at the
//! cluster time asked for (the node's latest when none is), its cursor keeps the snapshot for
//! its `getMore`s (`cursors::Cursor::snapshot`), and the reply names the time as MongoDB's does
//! (`cursor.atClusterTime`; `atClusterTime` for distinct).

use super::DataNode;
use super::storage::StorageTransaction;
use crate::command::CommandRequest;
use crate::error::Result;
use crate::server::TransactionStatement;
use bson::{RawBson, RawBsonRef, RawDocumentBuf, Timestamp};

pub async fn run_at_snapshot<S: DataNode>(
    state: &S,
    at: Option<Timestamp>,
    request: CommandRequest,
    run: TransactionStatement<'_>,
) -> Result<RawDocumentBuf> {
    let clock = &state.node().clock;
    let time = at.unwrap_or_else(|| clock.now());
    // Every write up to the time is visible before the snapshot is taken.
    clock.wait_until_visible(time).await?;
    let snapshot = StorageTransaction::at(time);
    let name = request.name().to_string();
    let reply = snapshot.scope(run(request)).await?;
    with_at_cluster_time(reply, &name, time)
}

/// `reply` naming the snapshot's time: inside `cursor` for a cursor reply, else at the top.
fn with_at_cluster_time(
    reply: RawDocumentBuf,
    command: &str,
    time: Timestamp,
) -> Result<RawDocumentBuf> {
    if command == "distinct" {
        let mut reply = reply;
        reply.append("atClusterTime", RawBson::Timestamp(time));
        return Ok(reply);
    }
    let mut out = RawDocumentBuf::new();
    for element in reply.iter() {
        let (name, value) = element?;
        match value {
            RawBsonRef::Document(cursor) if name == "cursor" => {
                let mut cursor = cursor.to_raw_document_buf();
                cursor.append("atClusterTime", RawBson::Timestamp(time));
                out.append(name, cursor);
            }
            value => out.append_ref(name, value),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::rawdoc;

    #[test]
    fn the_time_goes_into_the_cursor_or_the_top() {
        let time = Timestamp {
            time: 5,
            increment: 1,
        };
        let reply = rawdoc! {"cursor": {"id": 0_i64, "ns": "a.b", "firstBatch": []}};
        let out = with_at_cluster_time(reply, "find", time).unwrap();
        assert_eq!(
            out.get_document("cursor")
                .unwrap()
                .get_timestamp("atClusterTime")
                .unwrap(),
            time
        );
        let out = with_at_cluster_time(rawdoc! {"values": []}, "distinct", time).unwrap();
        assert_eq!(out.get_timestamp("atClusterTime").unwrap(), time);
    }
}
