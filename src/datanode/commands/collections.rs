//! Collection catalog commands: create, drop, renameCollection, listCollections, listIndexes.

use super::super::DataNode;
use super::find::cursor_reply;
use crate::catalog::{split_namespace, validate_collection_name, validate_user_create};
use crate::command::CommandRequest;
use crate::error::{ErrorCode, MongoError, Result};
use crate::query::filter::Filter;
use crate::server::RequestContext;
use bson::{Bson, Document, RawDocumentBuf, doc};

/// `create` options this server implements; every other known option is refused precisely.
const PLAIN_OPTIONS: [&str; 2] = ["collation", "writeConcern"];
const UNSUPPORTED_OPTIONS: [&str; 4] = [
    "timeseries",
    "clusteredIndex",
    "changeStreamPreAndPostImages",
    "expireAfterSeconds",
];

pub(super) async fn create<S: DataNode>(
    state: &S,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let name = req.args().collection()?;
    validate_user_create(&req.db, name)?;
    // Waits for a conflicting DDL (a drop of the same name) anywhere in the cluster.
    let ddl = state
        .routed_ddl_lock(&req, vec![format!("{}.{name}", req.db)], "create")
        .await?;
    let created = create_collection_or_view(state, &req, name).await;
    if let Some(ddl) = ddl {
        ddl.release().await;
    }
    created
}

async fn create_collection_or_view<S: DataNode>(
    state: &S,
    req: &CommandRequest,
    name: &str,
) -> Result<RawDocumentBuf> {
    let body = req.body.to_document()?;
    if body.contains_key("viewOn") || body.contains_key("pipeline") {
        if crate::datanode::storage::StorageTransaction::current().is_some() {
            return Err(MongoError::new(
                ErrorCode::OperationNotSupportedInTransaction,
                "Cannot create a view in a multi-document transaction.",
            ));
        }
        return create_view(state, &req.db, name, &body).await;
    }
    let mut options = Document::new();
    for (key, value) in body.iter().skip(1) {
        if UNSUPPORTED_OPTIONS.contains(&key.as_str()) {
            return Err(MongoError::new(
                ErrorCode::NotImplemented,
                format!("create option '{key}' is not supported yet"),
            ));
        }
        if key == "collation" {
            // Stored normalized, as listCollections shows it; the simple one is no default.
            if let Some(spec) = crate::datanode::collation::to_store(Some(value))? {
                options.insert("collation", spec);
            }
        } else if PLAIN_OPTIONS.contains(&key.as_str()) && key != "writeConcern" {
            options.insert(key.clone(), value.clone());
        }
    }
    crate::datanode::validation::apply_options(&mut options, &body)?;
    capped_options(&body, &mut options)?;
    let db = state.storage().database_or_create(&req.db).await?;
    let in_transaction = crate::datanode::storage::StorageTransaction::current().is_some();
    match db.create_collection_in_scope(name, options.clone()).await {
        Ok(_) => Ok(RawDocumentBuf::new()),
        // Since MongoDB 7.0, creating an existing collection with the same options succeeds
        // (not inside a transaction, where it fails as it always did).
        Err(e)
            if e.code() == ErrorCode::NamespaceExists
                && !in_transaction
                && db.collection(name).is_some_and(|c| c.options == options) =>
        {
            Ok(RawDocumentBuf::new())
        }
        Err(e) => Err(e),
    }
}

/// `create` with `viewOn` (and `pipeline`).
async fn create_view<S: DataNode>(
    state: &S,
    db: &str,
    name: &str,
    body: &Document,
) -> Result<RawDocumentBuf> {
    let view_on = match body.get("viewOn") {
        Some(Bson::String(source)) => source,
        Some(_) => {
            return Err(MongoError::type_mismatch(
                "BSON field 'create.viewOn' is the wrong type, expected type 'string'",
            ));
        }
        None => {
            return Err(MongoError::bad_value(
                "'pipeline' requires 'viewOn' to also be specified",
            ));
        }
    };
    for option in ["capped", "validator", "timeseries", "clusteredIndex"] {
        if body.contains_key(option) {
            return Err(MongoError::new(
                ErrorCode::InvalidOptions,
                format!("'{option}' is not a valid option for a view"),
            ));
        }
    }
    let pipeline = match body.get("pipeline") {
        None => Vec::new(),
        Some(Bson::Array(stages)) => stages
            .iter()
            .map(|stage| match stage {
                Bson::Document(d) => Ok(d.clone()),
                _ => Err(MongoError::type_mismatch(
                    "Each element of the 'pipeline' array must be an object",
                )),
            })
            .collect::<Result<Vec<_>>>()?,
        Some(_) => {
            return Err(MongoError::type_mismatch(
                "BSON field 'create.pipeline' is the wrong type, expected type 'array'",
            ));
        }
    };
    let collation = crate::datanode::collation::to_store(body.get("collation"))?;
    crate::datanode::views::create(state.storage(), db, name, view_on, pipeline, collation).await?;
    Ok(RawDocumentBuf::new())
}

/// 1 PB, the largest capped collection MongoDB allows.
const MAX_CAPPED_SIZE: i64 = 1 << 50;

/// `capped`, `size` and `max`, recorded only for capped collections.
fn capped_options(body: &Document, options: &mut Document) -> Result<()> {
    let as_number = |v: &Bson| match v {
        Bson::Int32(n) => Some(*n as f64),
        Bson::Int64(n) => Some(*n as f64),
        Bson::Double(d) => Some(*d),
        _ => None,
    };
    let capped = match body.get("capped") {
        None => false,
        Some(Bson::Boolean(b)) => *b,
        Some(v) => as_number(v).is_some_and(|n| n != 0.0),
    };
    if !capped {
        return Ok(());
    }
    let number = |field: &str| -> Result<Option<i64>> {
        match body.get(field) {
            None | Some(Bson::Null) => Ok(None),
            Some(v) => as_number(v).map(|n| Some(n as i64)).ok_or_else(|| {
                MongoError::type_mismatch(format!(
                    "BSON field 'create.{field}' is the wrong type, expected a number"
                ))
            }),
        }
    };
    let size = number("size")?.ok_or_else(|| {
        MongoError::new(
            ErrorCode::InvalidOptions,
            "the 'size' field is required when 'capped' is true",
        )
    })?;
    if size <= 0 || size > MAX_CAPPED_SIZE {
        return Err(MongoError::bad_value(format!(
            "capped collection size must be greater than 0 and at most 1 PB, got {size}"
        )));
    }
    options.insert("capped", true);
    options.insert("size", size);
    if let Some(max) = number("max")?.filter(|m| *m > 0) {
        options.insert("max", max);
    }
    Ok(())
}

pub(crate) async fn drop<S: DataNode>(
    state: &S,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let name = req.args().collection()?.to_string();
    validate_collection_name(&req.db, &name)?;
    let ns = format!("{}.{name}", req.db);
    let Some(db) = state.storage().database(&req.db).await else {
        return Ok(RawDocumentBuf::new());
    };
    let Some(meta) = db.collection(&name) else {
        crate::datanode::views::drop(state.storage(), &req.db, &name).await?;
        return Ok(RawDocumentBuf::new());
    };
    db.drop_collection(&name).await?;
    state.cursors().kill_namespace(&ns);
    Ok(RawDocumentBuf::from_document(
        &doc! {"nIndexesWas": meta.indexes.len() as i32, "ns": ns},
    )?)
}

pub(super) async fn rename<S: DataNode>(
    state: &S,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let rename = crate::command::requests::RenameCollectionRequest::rename(&req)?;
    rename_namespace(state, &rename.source, &rename.target, rename.drop_target).await
}

/// Renames `source` to `target` (full namespaces) on this node.
pub(crate) async fn rename_namespace<S: DataNode>(
    state: &S,
    source: &str,
    target: &str,
    drop_target: bool,
) -> Result<RawDocumentBuf> {
    crate::catalog::check_rename(source, target)?;
    let (from_db, from) = split_namespace(source)?;
    let (to_db, to) = split_namespace(target)?;
    if from_db != to_db {
        state
            .storage()
            .rename_across_databases((from_db, from), (to_db, to), drop_target)
            .await?;
        state.cursors().kill_namespace(source);
        state.cursors().kill_namespace(target);
        return Ok(RawDocumentBuf::new());
    }
    let db = state.storage().database(from_db).await;
    let Some(db) = db.filter(|d| d.collection(from).is_some()) else {
        return Err(MongoError::namespace_not_found(format!(
            "Source collection {source} does not exist"
        )));
    };
    if db.collection(to).is_some() && !drop_target {
        return Err(MongoError::new(
            ErrorCode::NamespaceExists,
            "target namespace exists",
        ));
    }
    db.rename_collection(from, to, drop_target).await?;
    state.cursors().kill_namespace(source);
    state.cursors().kill_namespace(target);
    Ok(RawDocumentBuf::new())
}

pub(super) async fn list_collections<S: DataNode>(
    state: &S,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let args = req.args();
    let name_only = args.bool("nameOnly")?.unwrap_or(false);
    let filter = Filter::parse(&args.document("filter")?.unwrap_or_default())?;
    let ns = format!("{}.$cmd.listCollections", req.db);
    let mut entries = Vec::new();
    if let Some(db) = state.storage().database(&req.db).await {
        for meta in db.collections() {
            let full = doc! {
                "name": &meta.name,
                "type": "collection",
                "options": meta.options.clone(),
                "info": {"readOnly": false, "uuid": meta.uuid_bson()},
                "idIndex": meta.id_index().spec.clone(),
            };
            if !filter.matches(&full) {
                continue;
            }
            let entry = if name_only {
                doc! {"name": &meta.name, "type": "collection"}
            } else {
                full
            };
            entries.push(RawDocumentBuf::from_document(&entry)?);
        }
        for view in crate::datanode::views::all(state.storage(), &req.db).await? {
            let pipeline: Vec<Bson> = view.pipeline.into_iter().map(Bson::Document).collect();
            let mut options = doc! {"viewOn": &view.view_on, "pipeline": pipeline};
            if let Some(collation) = view.collation {
                options.insert("collation", collation);
            }
            let full = doc! {
                "name": &view.name,
                "type": "view",
                "options": options,
                "info": {"readOnly": true},
            };
            if !filter.matches(&full) {
                continue;
            }
            let entry = if name_only {
                doc! {"name": &view.name, "type": "view"}
            } else {
                full
            };
            entries.push(RawDocumentBuf::from_document(&entry)?);
        }
    }
    Ok(cursor_reply(&ns, entries, 0, true))
}

pub(super) async fn list_indexes<S: DataNode>(
    state: &S,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let name = req.args().collection()?;
    validate_collection_name(&req.db, name)?;
    crate::datanode::views::reject(state.storage(), &req.db, name).await?;
    let ns = format!("{}.{name}", req.db);
    let (_, meta) = state
        .storage()
        .collection(&req.db, name)
        .await
        .ok_or_else(|| MongoError::namespace_not_found(format!("ns does not exist: {ns}")))?;
    // An index still being built is not listed, as in MongoDB.
    let specs = meta
        .indexes
        .iter()
        .filter(|i| i.ready)
        .map(|i| RawDocumentBuf::from_document(&i.spec))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(cursor_reply(
        &format!("{}.$cmd.listIndexes.{name}", req.db),
        specs,
        0,
        true,
    ))
}
