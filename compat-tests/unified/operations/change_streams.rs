//! Cursor and change stream entities: creating them (`createChangeStream`, `createFindCursor`,
//! `createCommandCursor` save them unread) and the iteration operations
//! (`iterateUntilDocumentOrError`, `iterateOnce`, `close`).

use super::{Lent, OpError, OpResult, Output};
use crate::entities::{CursorEntity, Entity};
use crate::runner::TestState;
use crate::values::{Args, options};
use futures::StreamExt;
use mongodb::bson::{Bson, Document};
use mongodb::change_stream::ChangeStream;
use mongodb::options::ChangeStreamOptions;
use mongodb::{ClientSession, Collection};

pub fn change_stream_options(args: &mut Args) -> Result<ChangeStreamOptions, String> {
    let mut opts: ChangeStreamOptions = options(
        "createChangeStream",
        args.options(&[
            "fullDocument",
            "fullDocumentBeforeChange",
            "batchSize",
            "collation",
            "showExpandedEvents",
            "comment",
        ]),
    )?;
    opts.max_await_time = args.millis("maxAwaitTimeMS")?;
    if let Some(t) = args.raw("startAtOperationTime") {
        match t {
            Bson::Timestamp(ts) => opts.start_at_operation_time = Some(ts),
            other => return Err(format!("startAtOperationTime: {other}")),
        }
    }
    Ok(opts)
}

pub fn stream_output(stream: ChangeStream<Document>) -> Output {
    Output {
        entity: Some(Entity::ChangeStream(Box::new(stream))),
        ..Output::default()
    }
}

pub async fn create_find_cursor(
    coll: &Collection<Document>,
    session: Option<&mut ClientSession>,
    mut args: Args,
) -> OpResult {
    let filter = args.doc("filter")?.unwrap_or_default();
    let opts = super::crud::find_options(&mut args)?;
    args.finish()?;
    if session.is_some() {
        return Err(OpError::Unsupported(
            "createFindCursor with a session".into(),
        ));
    }
    let cursor = coll.find(filter).with_options(opts).await?;
    Ok(Output {
        entity: Some(Entity::Cursor(Box::new(CursorEntity::Plain(cursor)))),
        ..Output::default()
    })
}

pub async fn run(
    state: &mut TestState,
    lent: &mut Lent<'_>,
    object: &str,
    name: &str,
    args: Args,
) -> OpResult {
    args.finish()?;
    // The entity is taken out while it is iterated (an in-session cursor also needs its session
    // from the same map) and put back afterwards.
    let mut entity = state
        .entities
        .remove(object)
        .ok_or_else(|| format!("no entity named `{object}`"))?;
    if name == "close" {
        // Dropping a cursor or change stream kills it on the server; errors are suppressed.
        drop(entity);
        return Ok(Output::none());
    }
    let result = iterate(state, lent, &mut entity, name).await;
    state.entities.insert(object, entity)?;
    result
}

async fn iterate(
    state: &mut TestState,
    lent: &mut Lent<'_>,
    entity: &mut Entity,
    name: &str,
) -> OpResult {
    let once = match name {
        "iterateUntilDocumentOrError" => false,
        "iterateOnce" => true,
        other => {
            return Err(OpError::Runner(format!(
                "unknown cursor operation `{other}`"
            )));
        }
    };
    let next: Option<Document> = match entity {
        Entity::ChangeStream(stream) => {
            if once {
                stream.next_if_any().await?
            } else {
                match stream.next().await {
                    Some(r) => Some(r?),
                    None => None,
                }
            }
        }
        Entity::Cursor(cursor) => match cursor.as_mut() {
            CursorEntity::Plain(c) => match c.next().await {
                Some(r) => Some(r?),
                None => None,
            },
            CursorEntity::InSession(c, owner) => {
                let owner = owner.clone();
                let session: &mut ClientSession = match lent {
                    Some((n, s)) if *n == owner => s,
                    _ => state.entities.session(&owner)?,
                };
                match c.next(session).await {
                    Some(r) => Some(r?),
                    None => None,
                }
            }
        },
        other => {
            return Err(OpError::Runner(format!(
                "`{name}` on a {} entity",
                other.kind()
            )));
        }
    };
    match next {
        Some(d) => Ok(Output::value(d)),
        // iterateOnce may legitimately find nothing; iterateUntilDocumentOrError may not.
        None if once => Ok(Output::none()),
        None => Err(OpError::Runner(
            "the cursor was exhausted before a document or an error arrived".into(),
        )),
    }
}
