//! CRUD operations on a collection entity, through the driver's CRUD API, with results turned
//! into the documents the CRUD spec names (`insertedId`, `matchedCount`, ...).

use super::{OpError, OpResult, Output};
use crate::values::{Args, options};
use futures::TryStreamExt;
use mongodb::bson::{Bson, Document, doc};
use mongodb::options::{
    AggregateOptions, CountOptions, DeleteOptions, DistinctOptions, EstimatedDocumentCountOptions,
    FindOneAndDeleteOptions, FindOneAndReplaceOptions, FindOneAndUpdateOptions, FindOneOptions,
    FindOptions, InsertManyOptions, InsertOneOptions, ReplaceOptions, UpdateModifications,
    UpdateOptions,
};
use mongodb::results::{DeleteResult, UpdateResult};
use mongodb::{ClientSession, Collection};

/// Runs an action with the session when there is one.
macro_rules! with_session {
    ($action:expr, $session:expr) => {
        match $session {
            Some(s) => $action.session(s).await,
            None => $action.await,
        }
    };
}

fn update_result(r: UpdateResult) -> Output {
    let mut d = doc! {
        "matchedCount": r.matched_count as i64,
        "modifiedCount": r.modified_count as i64,
        "upsertedCount": i64::from(r.upserted_id.is_some()),
    };
    if let Some(id) = r.upserted_id {
        d.insert("upsertedId", id);
    }
    Output::value(d)
}

fn delete_result(r: DeleteResult) -> Output {
    Output::value(doc! {"deletedCount": r.deleted_count as i64})
}

fn update_arg(args: &mut Args) -> Result<UpdateModifications, String> {
    match args.req("update")? {
        Bson::Document(d) => Ok(UpdateModifications::Document(d)),
        Bson::Array(stages) => stages
            .into_iter()
            .map(|s| match s {
                Bson::Document(d) => Ok(d),
                other => Err(format!("update pipeline stage is not a document: {other}")),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(UpdateModifications::Pipeline),
        other => Err(format!(
            "update must be a document or pipeline, got {other}"
        )),
    }
}

pub async fn insert_one(
    coll: &Collection<Document>,
    session: Option<&mut ClientSession>,
    mut args: Args,
) -> OpResult {
    let document = args.req_doc("document")?;
    let opts: InsertOneOptions = options(
        "insertOne",
        args.options(&["bypassDocumentValidation", "comment"]),
    )?;
    args.finish()?;
    let r = with_session!(coll.insert_one(document).with_options(opts), session)?;
    Ok(Output::value(doc! {"insertedId": r.inserted_id}))
}

pub async fn insert_many(
    coll: &Collection<Document>,
    session: Option<&mut ClientSession>,
    mut args: Args,
) -> OpResult {
    let documents = args
        .docs("documents")?
        .ok_or("insertMany: missing documents")?;
    let opts: InsertManyOptions = options(
        "insertMany",
        args.options(&["bypassDocumentValidation", "comment", "ordered"]),
    )?;
    args.finish()?;
    let r = with_session!(coll.insert_many(documents).with_options(opts), session)?;
    let mut ids: Vec<(usize, Bson)> = r.inserted_ids.into_iter().collect();
    ids.sort_by_key(|(i, _)| *i);
    let mut inserted = Document::new();
    for (i, id) in ids {
        inserted.insert(i.to_string(), id);
    }
    Ok(Output::value(doc! {"insertedIds": inserted}))
}

const UPDATE_OPTIONS: &[&str] = &[
    "arrayFilters",
    "bypassDocumentValidation",
    "collation",
    "hint",
    "upsert",
    "let",
    "comment",
    "sort",
];

pub async fn update(
    coll: &Collection<Document>,
    session: Option<&mut ClientSession>,
    mut args: Args,
    many: bool,
) -> OpResult {
    let filter = args.req_doc("filter")?;
    let update = update_arg(&mut args)?;
    let op = if many { "updateMany" } else { "updateOne" };
    let opts: UpdateOptions = options(op, args.options(UPDATE_OPTIONS))?;
    args.finish()?;
    let r = if many {
        with_session!(coll.update_many(filter, update).with_options(opts), session)?
    } else {
        with_session!(coll.update_one(filter, update).with_options(opts), session)?
    };
    Ok(update_result(r))
}

pub async fn replace_one(
    coll: &Collection<Document>,
    session: Option<&mut ClientSession>,
    mut args: Args,
) -> OpResult {
    let filter = args.req_doc("filter")?;
    let replacement = args.req_doc("replacement")?;
    let opts: ReplaceOptions = options(
        "replaceOne",
        args.options(&[
            "bypassDocumentValidation",
            "collation",
            "hint",
            "upsert",
            "let",
            "comment",
            "sort",
        ]),
    )?;
    args.finish()?;
    let r = with_session!(
        coll.replace_one(filter, replacement).with_options(opts),
        session
    )?;
    Ok(update_result(r))
}

pub async fn delete(
    coll: &Collection<Document>,
    session: Option<&mut ClientSession>,
    mut args: Args,
    many: bool,
) -> OpResult {
    let filter = args.req_doc("filter")?;
    let op = if many { "deleteMany" } else { "deleteOne" };
    let opts: DeleteOptions = options(op, args.options(&["collation", "hint", "let", "comment"]))?;
    args.finish()?;
    let r = if many {
        with_session!(coll.delete_many(filter).with_options(opts), session)?
    } else {
        with_session!(coll.delete_one(filter).with_options(opts), session)?
    };
    Ok(delete_result(r))
}

const FIND_OPTIONS: &[&str] = &[
    "allowDiskUse",
    "allowPartialResults",
    "batchSize",
    "collation",
    "comment",
    "hint",
    "limit",
    "max",
    "min",
    "noCursorTimeout",
    "projection",
    "returnKey",
    "showRecordId",
    "skip",
    "sort",
    "let",
];

pub fn find_options(args: &mut Args) -> Result<FindOptions, String> {
    let mut opts: FindOptions = options("find", args.options(FIND_OPTIONS))?;
    opts.max_time = args.millis("maxTimeMS")?;
    if let Some(t) = args.str("cursorType")? {
        opts.cursor_type = Some(match t.as_str() {
            "tailable" => mongodb::options::CursorType::Tailable,
            "tailableAwait" => mongodb::options::CursorType::TailableAwait,
            "nonTailable" => mongodb::options::CursorType::NonTailable,
            other => return Err(format!("unknown cursorType {other}")),
        });
    }
    Ok(opts)
}

pub async fn find(
    coll: &Collection<Document>,
    session: Option<&mut ClientSession>,
    mut args: Args,
) -> OpResult {
    let filter = args.doc("filter")?.unwrap_or_default();
    let opts = find_options(&mut args)?;
    args.finish()?;
    let docs: Vec<Document> = match session {
        Some(s) => {
            let mut cursor = coll
                .find(filter)
                .with_options(opts)
                .session(&mut *s)
                .await?;
            cursor.stream(s).try_collect().await?
        }
        None => {
            coll.find(filter)
                .with_options(opts)
                .await?
                .try_collect()
                .await?
        }
    };
    Ok(Output::documents(docs))
}

pub async fn find_one(
    coll: &Collection<Document>,
    session: Option<&mut ClientSession>,
    mut args: Args,
) -> OpResult {
    let filter = args.doc("filter")?.unwrap_or_default();
    let mut opts: FindOneOptions = options(
        "findOne",
        args.options(&[
            "allowPartialResults",
            "collation",
            "comment",
            "hint",
            "max",
            "min",
            "projection",
            "returnKey",
            "showRecordId",
            "skip",
            "sort",
            "let",
        ]),
    )?;
    opts.max_time = args.millis("maxTimeMS")?;
    args.finish()?;
    let r = with_session!(coll.find_one(filter).with_options(opts), session)?;
    Ok(Output::value(r.map(Bson::Document).unwrap_or(Bson::Null)))
}

pub async fn find_one_and(
    coll: &Collection<Document>,
    session: Option<&mut ClientSession>,
    mut args: Args,
    which: &str,
) -> OpResult {
    let filter = args.req_doc("filter")?;
    let common = [
        "bypassDocumentValidation",
        "projection",
        "returnDocument",
        "sort",
        "upsert",
        "collation",
        "hint",
        "let",
        "comment",
    ];
    let r = match which {
        "findOneAndDelete" => {
            let mut opts: FindOneAndDeleteOptions = options(
                which,
                args.options(&["projection", "sort", "collation", "hint", "let", "comment"]),
            )?;
            opts.max_time = args.millis("maxTimeMS")?;
            args.finish()?;
            with_session!(coll.find_one_and_delete(filter).with_options(opts), session)?
        }
        "findOneAndReplace" => {
            let replacement = args.req_doc("replacement")?;
            let mut opts: FindOneAndReplaceOptions = options(which, args.options(&common))?;
            opts.max_time = args.millis("maxTimeMS")?;
            args.finish()?;
            with_session!(
                coll.find_one_and_replace(filter, replacement)
                    .with_options(opts),
                session
            )?
        }
        _ => {
            let update = update_arg(&mut args)?;
            let mut keys = common.to_vec();
            keys.push("arrayFilters");
            let mut opts: FindOneAndUpdateOptions = options(which, args.options(&keys))?;
            opts.max_time = args.millis("maxTimeMS")?;
            args.finish()?;
            with_session!(
                coll.find_one_and_update(filter, update).with_options(opts),
                session
            )?
        }
    };
    Ok(Output::value(r.map(Bson::Document).unwrap_or(Bson::Null)))
}

pub fn aggregate_options(args: &mut Args) -> Result<AggregateOptions, String> {
    let mut opts: AggregateOptions = options(
        "aggregate",
        args.options(&[
            "allowDiskUse",
            "batchSize",
            "bypassDocumentValidation",
            "collation",
            "comment",
            "hint",
            "let",
        ]),
    )?;
    opts.max_time = args.millis("maxTimeMS")?;
    opts.read_concern = args.read_concern("readConcern")?;
    opts.write_concern = args.write_concern("writeConcern")?;
    Ok(opts)
}

pub async fn aggregate(
    coll: &Collection<Document>,
    session: Option<&mut ClientSession>,
    mut args: Args,
) -> OpResult {
    let pipeline = args
        .docs("pipeline")?
        .ok_or("aggregate: missing pipeline")?;
    let opts = aggregate_options(&mut args)?;
    args.finish()?;
    let docs: Vec<Document> = match session {
        Some(s) => {
            let mut cursor = coll
                .aggregate(pipeline)
                .with_options(opts)
                .session(&mut *s)
                .await?;
            cursor.stream(s).try_collect().await?
        }
        None => {
            coll.aggregate(pipeline)
                .with_options(opts)
                .await?
                .try_collect()
                .await?
        }
    };
    Ok(Output::documents(docs))
}

pub async fn count_documents(
    coll: &Collection<Document>,
    session: Option<&mut ClientSession>,
    mut args: Args,
) -> OpResult {
    let filter = args.doc("filter")?.unwrap_or_default();
    let mut opts: CountOptions = options(
        "countDocuments",
        args.options(&["hint", "limit", "skip", "collation", "comment"]),
    )?;
    opts.max_time = args.millis("maxTimeMS")?;
    args.finish()?;
    let n = with_session!(coll.count_documents(filter).with_options(opts), session)?;
    Ok(Output::value(n as i64))
}

pub async fn estimated_document_count(
    coll: &Collection<Document>,
    session: Option<&mut ClientSession>,
    mut args: Args,
) -> OpResult {
    let mut opts: EstimatedDocumentCountOptions =
        options("estimatedDocumentCount", args.options(&["comment"]))?;
    opts.max_time = args.millis("maxTimeMS")?;
    args.finish()?;
    if session.is_some() {
        return Err(OpError::Unsupported(
            "estimatedDocumentCount has no session parameter in the Rust driver".into(),
        ));
    }
    let n = coll.estimated_document_count().with_options(opts).await?;
    Ok(Output::value(n as i64))
}

pub async fn distinct(
    coll: &Collection<Document>,
    session: Option<&mut ClientSession>,
    mut args: Args,
) -> OpResult {
    let field = args.req_str("fieldName")?;
    let filter = args.doc("filter")?.unwrap_or_default();
    let mut opts: DistinctOptions =
        options("distinct", args.options(&["collation", "comment", "hint"]))?;
    opts.max_time = args.millis("maxTimeMS")?;
    args.finish()?;
    let values = with_session!(coll.distinct(field, filter).with_options(opts), session)?;
    Ok(Output::value(Bson::Array(values)))
}
