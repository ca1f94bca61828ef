//! `collMod`: change a collection's validation options, or an index's TTL (`expireAfterSeconds`)
//! or visibility (`hidden`). Existing documents are not revalidated, as in MongoDB.

use super::super::DataNode;
use super::super::validation;
use crate::catalog::validate_collection_name;
use crate::command::CommandRequest;
use crate::error::{ErrorCode, MongoError, Result};
use crate::server::RequestContext;
use bson::{Bson, Document, RawDocumentBuf};

/// Options this server cannot change yet, refused precisely.
const UNSUPPORTED: [&str; 5] = [
    "viewOn",
    "pipeline",
    "expireAfterSeconds",
    "changeStreamPreAndPostImages",
    "timeseries",
];

pub(super) async fn run<S: DataNode>(
    state: &S,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let args = req.args();
    let name = args.collection()?.to_string();
    validate_collection_name(&req.db, &name)?;
    crate::datanode::views::reject(state.storage(), &req.db, &name).await?;
    let body = req.body.to_document()?;
    for key in UNSUPPORTED {
        if body.contains_key(key) {
            return Err(MongoError::new(
                ErrorCode::NotImplemented,
                format!("collMod option '{key}' is not supported yet"),
            ));
        }
    }
    let not_found =
        || MongoError::namespace_not_found(format!("ns does not exist: {}.{name}", req.db));
    let db = state
        .storage()
        .database(&req.db)
        .await
        .ok_or_else(not_found)?;
    let coll = db.collection(&name).ok_or_else(not_found)?;
    let index_change = match body.get("index") {
        None => None,
        Some(Bson::Document(change)) => Some(plan_index_change(&coll, change)?),
        Some(_) => {
            return Err(MongoError::type_mismatch(
                "BSON field 'collMod.index' is the wrong type, expected type 'object'",
            ));
        }
    };
    let mut options = coll.options.clone();
    validation::apply_options(&mut options, &body)?;
    let mut reply = Document::new();
    if let Some(change) = index_change {
        db.set_index_spec(&name, &change.name, change.spec).await?;
        reply = change.reply;
    }
    if options != coll.options {
        db.set_collection_options(&name, options).await?;
    }
    Ok(RawDocumentBuf::from_document(&reply)?)
}

/// An index change, checked before anything is written.
struct IndexChange {
    name: String,
    spec: Document,
    reply: Document,
}

fn plan_index_change(
    coll: &crate::datanode::storage::CollectionMeta,
    change: &Document,
) -> Result<IndexChange> {
    let index = match (change.get("keyPattern"), change.get("name")) {
        (Some(Bson::Document(key)), None) => coll.indexes.iter().find(|i| &i.key_pattern() == key),
        (None, Some(Bson::String(name))) => coll.indexes.iter().find(|i| &i.name == name),
        _ => {
            return Err(MongoError::new(
                ErrorCode::InvalidOptions,
                "must specify either index name or key pattern",
            ));
        }
    };
    let index = index.ok_or_else(|| {
        let which = change
            .get("name")
            .or_else(|| change.get("keyPattern"))
            .map(crate::document::display::render)
            .unwrap_or_default();
        MongoError::new(
            ErrorCode::IndexNotFound,
            format!("cannot find index {which} for ns {}", coll.name),
        )
    })?;
    for key in ["unique", "prepareUnique"] {
        if change.contains_key(key) {
            return Err(MongoError::new(
                ErrorCode::NotImplemented,
                format!("collMod index option '{key}' is not supported yet"),
            ));
        }
    }
    let expire = change.get("expireAfterSeconds");
    let hidden = change.get("hidden");
    if expire.is_none() && hidden.is_none() {
        return Err(MongoError::new(
            ErrorCode::InvalidOptions,
            "no expireAfterSeconds or hidden field",
        ));
    }
    let mut spec = index.spec.clone();
    let mut reply = Document::new();
    if let Some(expire) = expire {
        let seconds = match expire {
            Bson::Int32(n) => *n as i64,
            Bson::Int64(n) => *n,
            Bson::Double(d) if d.fract() == 0.0 => *d as i64,
            _ => {
                return Err(MongoError::type_mismatch(
                    "BSON field 'collMod.index.expireAfterSeconds' is the wrong type, expected a number",
                ));
            }
        };
        let Some(old) = spec.get("expireAfterSeconds").cloned() else {
            return Err(MongoError::new(
                ErrorCode::InvalidOptions,
                "no expireAfterSeconds field to update",
            ));
        };
        let new = i32::try_from(seconds)
            .map(Bson::Int32)
            .unwrap_or(Bson::Int64(seconds));
        if old != new {
            reply.insert("expireAfterSeconds_old", old);
            reply.insert("expireAfterSeconds_new", new.clone());
        }
        spec.insert("expireAfterSeconds", new);
    }
    if let Some(hidden) = hidden {
        let Bson::Boolean(hidden) = hidden else {
            return Err(MongoError::type_mismatch(
                "BSON field 'collMod.index.hidden' is the wrong type, expected type 'bool'",
            ));
        };
        if index.is_id() {
            return Err(MongoError::bad_value("can't hide _id index"));
        }
        let old = matches!(spec.get("hidden"), Some(Bson::Boolean(true)));
        if old != *hidden {
            reply.insert("hidden_old", old);
            reply.insert("hidden_new", *hidden);
        }
        if *hidden {
            spec.insert("hidden", true);
        } else {
            spec.remove("hidden");
        }
    }
    // Validate the result as createIndexes would (e.g. a TTL on a compound index).
    crate::datanode::index::IndexSpec::parse(&spec)?;
    Ok(IndexChange {
        name: index.name.clone(),
        spec,
        reply,
    })
}
