//! The privileges of commands whose needs depend on the request, as MongoDB computes them:
//! upserting writes need `insert` too, `findAndModify` its variant's actions, `aggregate`
//! writing with `$out`/`$merge` the target's write actions, `explain` the explained command's,
//! `renameCollection` both namespaces', the sharding commands their named namespace's.

use super::privileges::{Privilege, Resource};
use super::requires::{Required, namespace_resource, target_resource};
use crate::command::CommandRequest;
use crate::error::Result;
use bson::{RawBsonRef, RawDocument};

fn on_target(request: &CommandRequest, actions: &[&'static str]) -> Required {
    Required::Privileges(vec![Privilege::new(target_resource(request), actions)])
}

/// The documents of an array field, sent in the body or as a document sequence.
fn statements<'a>(request: &'a CommandRequest, field: &str) -> Vec<&'a RawDocument> {
    let mut out: Vec<&RawDocument> = Vec::new();
    if let Ok(Some(RawBsonRef::Array(items))) = request.body.get(field) {
        out.extend(items.into_iter().flatten().filter_map(|v| v.as_document()));
    }
    for sequence in request.sequences.iter().filter(|s| s.identifier == field) {
        out.extend(sequence.documents.iter().map(|d| &**d));
    }
    out
}

fn flag(doc: &RawDocument, field: &str) -> bool {
    matches!(doc.get(field), Ok(Some(RawBsonRef::Boolean(true))))
}

/// `update`: update, and insert when a statement upserts.
pub fn update(request: &CommandRequest) -> Result<Required> {
    let upserts = statements(request, "updates")
        .iter()
        .any(|u| flag(u, "upsert"));
    Ok(on_target(
        request,
        if upserts {
            &["update", "insert"]
        } else {
            &["update"]
        },
    ))
}

/// `findAndModify`: find and remove, or find and update (and insert when it upserts).
pub fn find_and_modify(request: &CommandRequest) -> Result<Required> {
    let body = &request.body;
    let actions: &[&'static str] = if flag(body, "remove") {
        &["find", "remove"]
    } else if flag(body, "upsert") {
        &["find", "update", "insert"]
    } else {
        &["find", "update"]
    };
    Ok(on_target(request, actions))
}

/// `aggregate`: find on the collection, and what its stages need (`pipeline_privileges`). A
/// pipeline reading `$currentOp` reads operations instead: as mongos, it needs `inprog` on the
/// cluster unless it asks only for the router's own operations of its own user (`localOps:
/// true` without `allUsers`), since the shards' operations come through the router's own
/// connections, which only `inprog` may list.
pub fn aggregate(request: &CommandRequest) -> Result<Required> {
    let current_op = match request.body.get("pipeline") {
        Ok(Some(RawBsonRef::Array(stages))) => stages
            .into_iter()
            .flatten()
            .filter_map(|s| s.as_document())
            .find_map(|stage| match stage.iter().next() {
                Some(Ok(("$currentOp", spec))) => Some(spec),
                _ => None,
            }),
        _ => None,
    };
    let mut needed = match current_op {
        Some(spec) => {
            let option = |name: &str| match spec {
                RawBsonRef::Document(d) => {
                    matches!(d.get(name), Ok(Some(RawBsonRef::Boolean(true))))
                }
                _ => false,
            };
            if option("allUsers") || !option("localOps") {
                vec![Privilege::new(Resource::Cluster, &["inprog"])]
            } else {
                Vec::new()
            }
        }
        None => vec![Privilege::new(target_resource(request), &["find"])],
    };
    if let Ok(Some(RawBsonRef::Array(stages))) = request.body.get("pipeline") {
        super::pipeline_privileges::add(&request.db, stages, &mut needed);
    }
    Ok(Required::Privileges(needed))
}

/// `bulkWrite`: each operation's action on the namespace it names in `nsInfo`.
pub fn bulk_write(request: &CommandRequest) -> Result<Required> {
    let namespaces: Vec<Option<Resource>> = statements(request, "nsInfo")
        .iter()
        .map(|info| match info.get("ns") {
            Ok(Some(RawBsonRef::String(ns))) => Some(namespace_resource(ns)),
            _ => None,
        })
        .collect();
    let mut needed = Vec::new();
    for op in statements(request, "ops") {
        let Some(Ok((kind, index))) = op.iter().next() else {
            continue;
        };
        let actions: &[&'static str] = match kind {
            "insert" => &["insert"],
            "update" if flag(op, "upsert") => &["update", "insert"],
            "update" => &["update"],
            "delete" => &["remove"],
            _ => continue,
        };
        let index = match index {
            RawBsonRef::Int32(i) => i as usize,
            RawBsonRef::Int64(i) => i as usize,
            _ => continue,
        };
        if let Some(Some(resource)) = namespaces.get(index) {
            needed.push(Privilege::new(resource.clone(), actions));
        }
    }
    Ok(Required::Privileges(needed))
}

/// `explain`: what the explained command needs.
pub fn explain(request: &CommandRequest) -> Result<Required> {
    let Ok(Some(RawBsonRef::Document(inner))) = request.body.get("explain") else {
        return Ok(Required::Authenticated);
    };
    let inner = CommandRequest::new(request.db.clone(), inner.to_raw_document_buf())?;
    match inner.name() {
        "find" | "count" | "distinct" => Ok(on_target(&inner, &["find"])),
        "aggregate" => aggregate(&inner),
        "update" => update(&inner),
        "delete" => Ok(on_target(&inner, &["remove"])),
        "findAndModify" | "findandmodify" => find_and_modify(&inner),
        // The command itself refuses what it cannot explain.
        _ => Ok(Required::Authenticated),
    }
}

/// `renameCollection`: within a database, renameCollectionSameDB (and dropCollection of a
/// target it drops); across databases, reading and dropping the source, creating the target.
pub fn rename_collection(request: &CommandRequest) -> Result<Required> {
    let source = match request.args().target()? {
        RawBsonRef::String(ns) => ns.to_string(),
        _ => return Ok(Required::Authenticated),
    };
    let target = request.args().str("to")?.unwrap_or_default().to_string();
    let (source_db, target_db) = (db_of(&source), db_of(&target));
    let drop_target = flag(&request.body, "dropTarget");
    let mut needed = Vec::new();
    if source_db == target_db {
        needed.push(Privilege::new(
            Resource::Database(source_db.to_string()),
            &["renameCollectionSameDB"],
        ));
    } else {
        needed.push(Privilege::new(
            namespace_resource(&source),
            &["find", "dropCollection"],
        ));
        needed.push(Privilege::new(
            namespace_resource(&target),
            &["insert", "createIndex", "createCollection"],
        ));
    }
    if drop_target {
        needed.push(Privilege::new(
            namespace_resource(&target),
            &["dropCollection"],
        ));
    }
    Ok(Required::Privileges(needed))
}

fn db_of(ns: &str) -> &str {
    ns.split_once('.').map_or(ns, |(db, _)| db)
}

/// The namespace (or database) a sharding command names in its first field.
fn named(request: &CommandRequest, actions: &[&'static str]) -> Result<Required> {
    let resource = match request.args().target()? {
        RawBsonRef::String(ns) if ns.contains('.') => namespace_resource(ns),
        RawBsonRef::String(db) => Resource::Database(db.to_string()),
        _ => Resource::Cluster,
    };
    Ok(Required::Privileges(vec![Privilege::new(
        resource, actions,
    )]))
}

pub fn enable_sharding(request: &CommandRequest) -> Result<Required> {
    named(request, &["enableSharding"])
}

pub fn move_primary(request: &CommandRequest) -> Result<Required> {
    named(request, &["moveChunk"])
}

pub fn move_chunk(request: &CommandRequest) -> Result<Required> {
    named(request, &["moveChunk"])
}

pub fn split_chunk(request: &CommandRequest) -> Result<Required> {
    named(request, &["splitChunk"])
}

pub fn refine_shard_key(request: &CommandRequest) -> Result<Required> {
    named(request, &["refineCollectionShardKey"])
}

pub fn get_shard_version(request: &CommandRequest) -> Result<Required> {
    named(request, &["getShardVersion"])
}

/// `listDatabases`: any user may run it, seeing the databases it has privileges on, unless
/// it asks for every database (`authorizedDatabases: false`), which needs listDatabases.
pub fn list_databases(request: &CommandRequest) -> Result<Required> {
    match request.args().bool("authorizedDatabases")? {
        Some(false) => Ok(Required::Privileges(vec![Privilege::new(
            Resource::Cluster,
            &["listDatabases"],
        )])),
        _ => Ok(Required::Authenticated),
    }
}

/// `listCollections`: listCollections on the database, or, for `authorizedCollections` with
/// `nameOnly`, any user (it sees what it has privileges on).
pub fn list_collections(request: &CommandRequest) -> Result<Required> {
    let args = request.args();
    if args.bool("authorizedCollections")? == Some(true) && args.bool("nameOnly")? == Some(true) {
        return Ok(Required::Authenticated);
    }
    Ok(Required::Privileges(vec![Privilege::new(
        Resource::Database(request.db.clone()),
        &["listCollections"],
    )]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::rawdoc;

    fn actions(required: Required) -> Vec<(Resource, Vec<&'static str>)> {
        match required {
            Required::Privileges(p) => p.into_iter().map(|p| (p.resource, p.actions)).collect(),
            _ => Vec::new(),
        }
    }

    #[test]
    fn writes_that_upsert_need_insert() {
        let plain = CommandRequest::new(
            "app",
            rawdoc! {"update": "c", "updates": [{"q": {}, "u": {}}]},
        )
        .unwrap();
        assert_eq!(actions(update(&plain).unwrap())[0].1, vec!["update"]);
        let upsert = CommandRequest::new(
            "app",
            rawdoc! {"update": "c", "updates": [{"q": {}, "u": {}, "upsert": true}]},
        )
        .unwrap();
        assert_eq!(
            actions(update(&upsert).unwrap())[0].1,
            vec!["update", "insert"]
        );
        let remove =
            CommandRequest::new("app", rawdoc! {"findAndModify": "c", "remove": true}).unwrap();
        assert_eq!(
            actions(find_and_modify(&remove).unwrap())[0].1,
            vec!["find", "remove"]
        );
    }

    #[test]
    fn aggregate_out_and_explain() {
        let out = CommandRequest::new(
            "app",
            rawdoc! {"aggregate": "c", "pipeline": [{"$out": "o"}]},
        )
        .unwrap();
        let needed = actions(aggregate(&out).unwrap());
        assert_eq!(needed[1].0, Resource::collection("app", "o"));
        // Every user's operations: `inprog`, not a read of the database.
        let current_op = CommandRequest::new(
            "admin",
            rawdoc! {"aggregate": 1, "pipeline": [{"$currentOp": {"allUsers": false}}, {"$match": {}}]},
        )
        .unwrap();
        assert_eq!(
            actions(aggregate(&current_op).unwrap()),
            vec![(Resource::Cluster, vec!["inprog"])]
        );
        // The router's own operations of the user's own: nothing beyond authentication.
        let current_op = |spec: bson::RawDocumentBuf| {
            let body = rawdoc! {"aggregate": 1, "pipeline": [{"$currentOp": spec}]};
            actions(aggregate(&CommandRequest::new("admin", body).unwrap()).unwrap())
        };
        assert!(current_op(rawdoc! {"localOps": true}).is_empty());
        assert_eq!(
            current_op(rawdoc! {"localOps": true, "allUsers": true}),
            vec![(Resource::Cluster, vec!["inprog"])]
        );
        let explained =
            CommandRequest::new("app", rawdoc! {"explain": {"delete": "c", "deletes": []}})
                .unwrap();
        assert_eq!(actions(explain(&explained).unwrap())[0].1, vec!["remove"]);
    }

    #[test]
    fn renames() {
        let same =
            CommandRequest::new("admin", rawdoc! {"renameCollection": "a.b", "to": "a.c"}).unwrap();
        assert_eq!(
            actions(rename_collection(&same).unwrap())[0].1,
            vec!["renameCollectionSameDB"]
        );
        let across =
            CommandRequest::new("admin", rawdoc! {"renameCollection": "a.b", "to": "x.c"}).unwrap();
        assert_eq!(actions(rename_collection(&across).unwrap()).len(), 2);
    }
}
