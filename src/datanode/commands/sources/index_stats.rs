//! `$indexStats`: each index of the collection on this node with how many operations used it
//! since this process started (or the index was created).

use super::super::super::DataNode;
use crate::error::{MongoError, Result};
use bson::{Bson, Document, doc};

pub(super) async fn documents<S: DataNode>(
    state: &S,
    db: &str,
    coll: &str,
    spec: &Bson,
) -> Result<Vec<Document>> {
    if !matches!(spec, Bson::Document(d) if d.is_empty()) {
        return Err(MongoError::location(
            28803,
            "The $indexStats stage specification must be an empty object",
        ));
    }
    let Some((store, meta)) = state.storage().collection(db, coll).await else {
        return Ok(Vec::new());
    };
    let host = state.node().host();
    let shard = state.shard_name();
    let usage = store.index_usage();
    Ok(meta
        .indexes
        .iter()
        .map(|index| {
            let (ops, since) = usage.accesses(&meta, index);
            let mut out = doc! {
                "name": &index.name,
                "key": index.key_pattern(),
                "host": &host,
                "accesses": {"ops": ops, "since": since},
                // Every docgrid data node belongs to a cluster, as a shard server (or the
                // config server) does, which names itself here.
                "shard": &shard,
                "spec": index.spec.clone(),
            };
            if !index.ready {
                out.insert("building", true);
            }
            out
        })
        .collect())
}
