//! Operations on a database entity: commands (`runCommand`, `runCursorCommand`,
//! `createCommandCursor`), collections (create, drop, list) and database-level aggregate and
//! change streams.

use super::{Ctx, Lent, OpError, OpResult, Output, change_streams, commands, crud, session_arg};
use crate::entities::{CursorEntity, Entity};
use crate::runner::TestState;
use crate::values::{Args, options};
use futures::TryStreamExt;
use mongodb::Database;
use mongodb::bson::{Bson, Document};
use mongodb::options::{CreateCollectionOptions, CursorType, RunCursorCommandOptions};
use mongodb::results::CollectionSpecification;

/// The command argument with its name first: the driver sends keys in document order and the
/// server takes the first key as the command name.
fn command_arg(args: &mut Args) -> Result<Document, String> {
    let command = args.req_doc("command")?;
    let name = args.req_str("commandName")?;
    if command.keys().next().map(String::as_str) == Some(name.as_str()) {
        return Ok(command);
    }
    let mut ordered = Document::new();
    if let Some(v) = command.get(&name) {
        ordered.insert(name.clone(), v.clone());
    }
    for (k, v) in command {
        if k != name {
            ordered.insert(k, v);
        }
    }
    Ok(ordered)
}

fn cursor_command_options(args: &mut Args) -> Result<RunCursorCommandOptions, String> {
    let mut opts = RunCursorCommandOptions::default();
    if let Some(n) = args.i64("batchSize")? {
        opts.batch_size = Some(n.max(0) as u32);
    }
    opts.max_time = args.millis("maxTimeMS")?;
    opts.comment = args.raw("comment");
    opts.selection_criteria = args.read_preference("readPreference")?;
    if let Some(t) = args.str("cursorType")? {
        opts.cursor_type = Some(match t.as_str() {
            "tailable" => CursorType::Tailable,
            "tailableAwait" => CursorType::TailableAwait,
            "nonTailable" => CursorType::NonTailable,
            other => return Err(format!("unknown cursorType {other}")),
        });
    }
    if args.has("timeoutMode") {
        return Err("runCursorCommand: timeoutMode (CSOT) is not supported by the driver".into());
    }
    Ok(opts)
}

pub async fn run(
    state: &mut TestState,
    lent: &mut Lent<'_>,
    ctx: Ctx,
    db: &Database,
    name: &str,
    mut args: Args,
) -> OpResult {
    // Kept for cursors opened in a session (iterating them needs the session again).
    let session_name = args.str("session")?;
    let session = session_arg(&mut state.entities, lent, &mut args)?;
    match name {
        "modifyCollection" => commands::modify_collection(db, session, ctx, args).await,
        "runCommand" => {
            let command = command_arg(&mut args)?;
            let rp = args.read_preference("readPreference")?;
            args.finish()?;
            let action = db
                .run_command(command)
                .optional(rp, |a, rp| a.selection_criteria(rp));
            let reply = match session {
                Some(s) => action.session(s).await?,
                None => action.await?,
            };
            Ok(Output::value(reply))
        }
        "runCursorCommand" | "createCommandCursor" => {
            let command = command_arg(&mut args)?;
            let opts = cursor_command_options(&mut args)?;
            args.finish()?;
            let save = name == "createCommandCursor";
            match session {
                Some(s) => {
                    let mut cursor = db
                        .run_cursor_command(command)
                        .with_options(opts)
                        .session(&mut *s)
                        .await?;
                    if save {
                        let owner = session_name.unwrap_or_default();
                        return Ok(Output {
                            entity: Some(Entity::Cursor(Box::new(CursorEntity::InSession(
                                cursor, owner,
                            )))),
                            ..Output::default()
                        });
                    }
                    let docs: Vec<Document> = cursor.stream(s).try_collect().await?;
                    Ok(Output::documents(docs))
                }
                None => {
                    let cursor = db.run_cursor_command(command).with_options(opts).await?;
                    if save {
                        return Ok(Output {
                            entity: Some(Entity::Cursor(Box::new(CursorEntity::Plain(cursor)))),
                            ..Output::default()
                        });
                    }
                    Ok(Output::documents(cursor.try_collect().await?))
                }
            }
        }
        "aggregate" => {
            let pipeline = args
                .docs("pipeline")?
                .ok_or("aggregate: missing pipeline")?;
            let opts = crud::aggregate_options(&mut args)?;
            args.finish()?;
            let docs: Vec<Document> = match session {
                Some(s) => {
                    let mut cursor = db
                        .aggregate(pipeline)
                        .with_options(opts)
                        .session(&mut *s)
                        .await?;
                    cursor.stream(s).try_collect().await?
                }
                None => {
                    db.aggregate(pipeline)
                        .with_options(opts)
                        .await?
                        .try_collect()
                        .await?
                }
            };
            Ok(Output::documents(docs))
        }
        "listCollections" | "listCollectionObjects" => {
            let filter = args.doc("filter")?.unwrap_or_default();
            let batch = args.i64("batchSize")?;
            args.finish()?;
            let action = db
                .list_collections()
                .filter(filter)
                .optional(batch, |a, n| a.batch_size(n.max(0) as u32));
            let specs: Vec<CollectionSpecification> = match session {
                Some(s) => {
                    let mut cursor = action.session(&mut *s).await?;
                    cursor.stream(s).try_collect().await?
                }
                None => action.await?.try_collect().await?,
            };
            let docs = specs
                .iter()
                .map(mongodb::bson::to_document)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| format!("collection specification as a document: {e}"))?;
            Ok(Output::documents(docs))
        }
        "listCollectionNames" => {
            let filter = args.doc("filter")?.unwrap_or_default();
            args.finish()?;
            let action = db.list_collection_names().filter(filter);
            let names = match session {
                Some(s) => action.session(s).await?,
                None => action.await?,
            };
            Ok(Output::value(Bson::Array(
                names.into_iter().map(Bson::String).collect(),
            )))
        }
        "createCollection" => {
            let collection = args.req_str("collection")?;
            let opts: CreateCollectionOptions = options(
                "createCollection",
                args.options(&[
                    "capped",
                    "size",
                    "max",
                    "validator",
                    "validationLevel",
                    "validationAction",
                    "viewOn",
                    "pipeline",
                    "collation",
                    "indexOptionDefaults",
                    "timeseries",
                    "expireAfterSeconds",
                    "changeStreamPreAndPostImages",
                    "clusteredIndex",
                    "comment",
                    "encryptedFields",
                ]),
            )?;
            args.finish()?;
            let action = db.create_collection(&collection).with_options(opts);
            match session {
                Some(s) => action.session(s).await?,
                None => action.await?,
            }
            // Drivers return the new collection, which a test may save as an entity.
            Ok(Output {
                entity: Some(Entity::Collection(db.collection(&collection))),
                ..Output::none()
            })
        }
        "dropCollection" => {
            let collection = args.req_str("collection")?;
            args.finish()?;
            let coll = db.collection::<Document>(&collection);
            match session {
                Some(s) => coll.drop().session(s).await?,
                None => coll.drop().await?,
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
            let stream = db.watch().pipeline(pipeline).with_options(opts).await?;
            Ok(change_streams::stream_output(
                stream.with_type::<Document>(),
            ))
        }
        "drop" | "dropDatabase" => {
            args.finish()?;
            match session {
                Some(s) => db.drop().session(s).await?,
                None => db.drop().await?,
            }
            Ok(Output::none())
        }
        other => Err(OpError::Runner(format!(
            "unknown database operation `{other}`"
        ))),
    }
}

/// Applies a builder step only when the option is present.
pub trait Optional: Sized {
    fn optional<T>(self, value: Option<T>, f: impl FnOnce(Self, T) -> Self) -> Self {
        match value {
            Some(v) => f(self, v),
            None => self,
        }
    }
}

impl<T> Optional for T {}
