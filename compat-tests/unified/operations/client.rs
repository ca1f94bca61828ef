//! Operations on a client entity: listing databases, cluster change streams, client-level bulk
//! writes (`clientBulkWrite`, the 8.0 `bulkWrite` command) and `close`.

use super::{Lent, OpError, OpResult, Output, change_streams, session_arg};
use crate::runner::TestState;
use crate::values::{Args, options};
use mongodb::Namespace;
use mongodb::bson::{Bson, Document, doc};
use mongodb::error::PartialBulkWriteResult;
use mongodb::options::{
    BulkWriteOptions, DeleteManyModel, DeleteOneModel, InsertOneModel, ReplaceOneModel,
    UpdateManyModel, UpdateModifications, UpdateOneModel, WriteModel,
};
use mongodb::results::{SummaryBulkWriteResult, VerboseBulkWriteResult};

pub async fn run(
    state: &mut TestState,
    lent: &mut Lent<'_>,
    object: &str,
    name: &str,
    mut args: Args,
) -> OpResult {
    let client = state.entities.client(object)?.client.clone();
    if name == "close" {
        args.finish()?;
        // Entities created from this client stay in the map; the spec forbids using them after
        // close, so shutting the client down here is enough.
        client.clone().shutdown().immediate(true).await;
        return Ok(Output::none());
    }
    let session = session_arg(&mut state.entities, lent, &mut args)?;
    match name {
        "listDatabases" | "listDatabaseObjects" => {
            let filter = args.doc("filter")?;
            args.finish()?;
            let mut action = client.list_databases();
            if let Some(f) = filter {
                action = action.filter(f);
            }
            let specs = match session {
                Some(s) => action.session(s).await?,
                None => action.await?,
            };
            let docs = specs
                .iter()
                .map(mongodb::bson::to_document)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| format!("database specification as a document: {e}"))?;
            Ok(Output::documents(docs))
        }
        "listDatabaseNames" => {
            let filter = args.doc("filter")?;
            args.finish()?;
            let mut action = client.list_database_names();
            if let Some(f) = filter {
                action = action.filter(f);
            }
            let names = match session {
                Some(s) => action.session(s).await?,
                None => action.await?,
            };
            Ok(Output::value(Bson::Array(
                names.into_iter().map(Bson::String).collect(),
            )))
        }
        "dropDatabase" => {
            let db = args.req_str("database")?;
            args.finish()?;
            let db = client.database(&db);
            match session {
                Some(s) => db.drop().session(s).await?,
                None => db.drop().await?,
            }
            Ok(Output::none())
        }
        "createChangeStream" => {
            if session.is_some() {
                return Err(OpError::Unsupported(
                    "createChangeStream with a session".into(),
                ));
            }
            let pipeline = args.docs("pipeline")?.unwrap_or_default();
            let opts = change_streams::change_stream_options(&mut args)?;
            args.finish()?;
            let stream = client.watch().pipeline(pipeline).with_options(opts).await?;
            Ok(change_streams::stream_output(
                stream.with_type::<Document>(),
            ))
        }
        "clientBulkWrite" => {
            let models = args
                .docs("models")?
                .ok_or("clientBulkWrite: missing models")?;
            let models = models
                .into_iter()
                .map(write_model)
                .collect::<Result<Vec<_>, _>>()?;
            let verbose = args.bool("verboseResults")?.unwrap_or(false);
            let mut opts: BulkWriteOptions = options(
                "clientBulkWrite",
                args.options(&["ordered", "bypassDocumentValidation", "comment", "let"]),
            )?;
            opts.write_concern = args.write_concern("writeConcern")?;
            args.finish()?;
            let action = client.bulk_write(models).with_options(opts);
            if verbose {
                let action = action.verbose_results();
                let r = match session {
                    Some(s) => action.session(s).await?,
                    None => action.await?,
                };
                Ok(Output::value(verbose_result(&r)))
            } else {
                let r = match session {
                    Some(s) => action.session(s).await?,
                    None => action.await?,
                };
                Ok(Output::value(summary_result(&r)))
            }
        }
        other => Err(OpError::Runner(format!(
            "unknown client operation `{other}`"
        ))),
    }
}

fn namespace(model: &Document) -> Result<Namespace, String> {
    let ns = model
        .get_str("namespace")
        .map_err(|_| format!("write model without a namespace: {model}"))?;
    let (db, coll) = ns
        .split_once('.')
        .ok_or_else(|| format!("namespace `{ns}` is not db.collection"))?;
    Ok(Namespace::new(db, coll))
}

fn update_modifications(model: &Document) -> Result<UpdateModifications, String> {
    match model.get("update") {
        Some(Bson::Document(d)) => Ok(UpdateModifications::Document(d.clone())),
        Some(Bson::Array(a)) => a
            .iter()
            .map(|s| {
                s.as_document()
                    .cloned()
                    .ok_or_else(|| format!("pipeline stage {s}"))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(UpdateModifications::Pipeline),
        other => Err(format!("update model needs `update`, got {other:?}")),
    }
}

fn hint(model: &Document) -> Option<Bson> {
    model.get("hint").cloned()
}

fn write_model(item: Document) -> Result<WriteModel, String> {
    let Some((kind, Bson::Document(m))) = item.iter().next() else {
        return Err(format!("malformed write model {item}"));
    };
    let ns = namespace(m)?;
    let filter = || m.get_document("filter").cloned().unwrap_or_default();
    let collation = m.get_document("collation").ok().cloned();
    let sort = m.get_document("sort").ok().cloned();
    let upsert = m.get_bool("upsert").ok();
    let array_filters = m.get_array("arrayFilters").ok().cloned();
    let known = |allowed: &[&str]| -> Result<(), String> {
        match m.keys().find(|k| !allowed.contains(&k.as_str())) {
            Some(k) => Err(format!("{kind}: unsupported field `{k}`")),
            None => Ok(()),
        }
    };
    Ok(match kind.as_str() {
        "insertOne" => {
            known(&["namespace", "document"])?;
            InsertOneModel::builder()
                .namespace(ns)
                .document(
                    m.get_document("document")
                        .map_err(|_| "insertOne without document".to_string())?
                        .clone(),
                )
                .build()
                .into()
        }
        "updateOne" => {
            known(&[
                "namespace",
                "filter",
                "update",
                "arrayFilters",
                "collation",
                "hint",
                "upsert",
                "sort",
            ])?;
            UpdateOneModel::builder()
                .namespace(ns)
                .filter(filter())
                .update(update_modifications(m)?)
                .array_filters(array_filters)
                .collation(collation)
                .hint(hint(m))
                .upsert(upsert)
                .sort(sort)
                .build()
                .into()
        }
        "updateMany" => {
            known(&[
                "namespace",
                "filter",
                "update",
                "arrayFilters",
                "collation",
                "hint",
                "upsert",
            ])?;
            UpdateManyModel::builder()
                .namespace(ns)
                .filter(filter())
                .update(update_modifications(m)?)
                .array_filters(array_filters)
                .collation(collation)
                .hint(hint(m))
                .upsert(upsert)
                .build()
                .into()
        }
        "replaceOne" => {
            known(&[
                "namespace",
                "filter",
                "replacement",
                "collation",
                "hint",
                "upsert",
                "sort",
            ])?;
            ReplaceOneModel::builder()
                .namespace(ns)
                .filter(filter())
                .replacement(
                    m.get_document("replacement")
                        .map_err(|_| "replaceOne without replacement".to_string())?
                        .clone(),
                )
                .collation(collation)
                .hint(hint(m))
                .upsert(upsert)
                .sort(sort)
                .build()
                .into()
        }
        "deleteOne" => {
            known(&["namespace", "filter", "collation", "hint"])?;
            DeleteOneModel::builder()
                .namespace(ns)
                .filter(filter())
                .collation(collation)
                .hint(hint(m))
                .build()
                .into()
        }
        "deleteMany" => {
            known(&["namespace", "filter", "collation", "hint"])?;
            DeleteManyModel::builder()
                .namespace(ns)
                .filter(filter())
                .collation(collation)
                .hint(hint(m))
                .build()
                .into()
        }
        other => return Err(format!("unknown write model `{other}`")),
    })
}

fn summary_doc(r: &SummaryBulkWriteResult) -> Document {
    doc! {
        "insertedCount": r.inserted_count,
        "upsertedCount": r.upserted_count,
        "matchedCount": r.matched_count,
        "modifiedCount": r.modified_count,
        "deletedCount": r.deleted_count,
    }
}

pub fn summary_result(r: &SummaryBulkWriteResult) -> Bson {
    Bson::Document(summary_doc(r))
}

pub fn verbose_result(r: &VerboseBulkWriteResult) -> Bson {
    let mut d = summary_doc(&r.summary);
    let sorted = |m: Vec<(usize, Document)>| {
        let mut m = m;
        m.sort_by_key(|(i, _)| *i);
        let mut out = Document::new();
        for (i, v) in m {
            out.insert(i.to_string(), v);
        }
        out
    };
    let inserts = sorted(
        r.insert_results
            .iter()
            .map(|(i, v)| (*i, doc! {"insertedId": v.inserted_id.clone()}))
            .collect(),
    );
    let updates = sorted(
        r.update_results
            .iter()
            .map(|(i, v)| {
                let mut u = doc! {
                    "matchedCount": v.matched_count as i64,
                    "modifiedCount": v.modified_count as i64,
                };
                if let Some(id) = &v.upserted_id {
                    u.insert("upsertedId", id.clone());
                }
                (*i, u)
            })
            .collect(),
    );
    let deletes = sorted(
        r.delete_results
            .iter()
            .map(|(i, v)| (*i, doc! {"deletedCount": v.deleted_count as i64}))
            .collect(),
    );
    d.insert("insertResults", inserts);
    d.insert("updateResults", updates);
    d.insert("deleteResults", deletes);
    Bson::Document(d)
}

/// The partial result a client bulk write error carries, as a document.
pub fn partial_result(r: &PartialBulkWriteResult) -> Bson {
    match r {
        PartialBulkWriteResult::Summary(s) => summary_result(s),
        PartialBulkWriteResult::Verbose(v) => verbose_result(v),
    }
}
