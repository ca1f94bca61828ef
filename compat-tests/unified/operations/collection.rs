//! Operations on a collection entity: routes CRUD to `crud`, the operations the Rust driver has
//! no helper for to `commands` (count, rename, mapReduce) and `bulk` (bulkWrite), and implements
//! indexes, drop and change streams.

use super::{
    Ctx, Lent, OpError, OpResult, Output, bulk, change_streams, commands, crud, session_arg,
};
use crate::runner::TestState;
use crate::values::{Args, options};
use futures::TryStreamExt;
use mongodb::bson::{Bson, Document};
use mongodb::options::{IndexOptions, ListIndexesOptions};
use mongodb::{Collection, IndexModel};

pub async fn run(
    state: &mut TestState,
    lent: &mut Lent<'_>,
    ctx: Ctx,
    coll: &Collection<Document>,
    name: &str,
    mut args: Args,
) -> OpResult {
    let session = session_arg(&mut state.entities, lent, &mut args)?;
    match name {
        "bulkWrite" => bulk::bulk_write(coll, session, ctx, args).await,
        "count" => commands::count(coll, session, ctx, args).await,
        "rename" => commands::rename(coll, session, ctx, args).await,
        "mapReduce" => commands::map_reduce(coll, session, ctx, args).await,
        "insertOne" => crud::insert_one(coll, session, args).await,
        "insertMany" => crud::insert_many(coll, session, args).await,
        "updateOne" => crud::update(coll, session, args, false).await,
        "updateMany" => crud::update(coll, session, args, true).await,
        "replaceOne" => crud::replace_one(coll, session, args).await,
        "deleteOne" => crud::delete(coll, session, args, false).await,
        "deleteMany" => crud::delete(coll, session, args, true).await,
        "find" => crud::find(coll, session, args).await,
        "findOne" => crud::find_one(coll, session, args).await,
        "findOneAndUpdate" | "findOneAndReplace" | "findOneAndDelete" => {
            crud::find_one_and(coll, session, args, name).await
        }
        "aggregate" => crud::aggregate(coll, session, args).await,
        "countDocuments" => crud::count_documents(coll, session, args).await,
        "estimatedDocumentCount" => crud::estimated_document_count(coll, session, args).await,
        "distinct" => crud::distinct(coll, session, args).await,
        "createFindCursor" => change_streams::create_find_cursor(coll, session, args).await,
        "createChangeStream" => {
            if session.is_some() {
                return Err(OpError::Unsupported(
                    "createChangeStream with a session".into(),
                ));
            }
            let pipeline = args.docs("pipeline")?.unwrap_or_default();
            let opts = change_streams::change_stream_options(&mut args)?;
            args.finish()?;
            let stream = coll.watch().pipeline(pipeline).with_options(opts).await?;
            Ok(change_streams::stream_output(
                stream.with_type::<Document>(),
            ))
        }
        "createIndex" => {
            let keys = args.req_doc("keys")?;
            let index_options: IndexOptions =
                options("createIndex", args.options(&["name", "unique"]))?;
            args.finish()?;
            let model = IndexModel::builder()
                .keys(keys)
                .options(Some(index_options))
                .build();
            let r = match session {
                Some(s) => coll.create_index(model).session(s).await?,
                None => coll.create_index(model).await?,
            };
            Ok(Output::value(r.index_name))
        }
        "dropIndex" => {
            let index = args.req_str("name")?;
            args.finish()?;
            match session {
                Some(s) => coll.drop_index(index).session(s).await?,
                None => coll.drop_index(index).await?,
            }
            Ok(Output::none())
        }
        "dropIndexes" => {
            args.finish()?;
            match session {
                Some(s) => coll.drop_indexes().session(s).await?,
                None => coll.drop_indexes().await?,
            }
            Ok(Output::none())
        }
        "listIndexes" => {
            let opts: ListIndexesOptions = options("listIndexes", args.options(&["batchSize"]))?;
            args.finish()?;
            let models: Vec<IndexModel> = match session {
                Some(s) => {
                    let mut cursor = coll
                        .list_indexes()
                        .with_options(opts)
                        .session(&mut *s)
                        .await?;
                    cursor.stream(s).try_collect().await?
                }
                None => {
                    coll.list_indexes()
                        .with_options(opts)
                        .await?
                        .try_collect()
                        .await?
                }
            };
            let docs = models
                .iter()
                .map(mongodb::bson::to_document)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| format!("index model as a document: {e}"))?;
            Ok(Output::documents(docs))
        }
        "listIndexNames" => {
            args.finish()?;
            let names = match session {
                Some(s) => coll.list_index_names().session(s).await?,
                None => coll.list_index_names().await?,
            };
            Ok(Output::value(Bson::Array(
                names.into_iter().map(Bson::String).collect(),
            )))
        }
        "drop" => {
            args.finish()?;
            match session {
                Some(s) => coll.drop().session(s).await?,
                None => coll.drop().await?,
            }
            Ok(Output::none())
        }
        other => Err(OpError::Runner(format!(
            "unknown collection operation `{other}`"
        ))),
    }
}
