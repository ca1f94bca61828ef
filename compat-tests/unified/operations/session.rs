//! Operations on a session entity: transactions (`startTransaction`, `commitTransaction`,
//! `abortTransaction`, and `withTransaction`, whose callback is a list of operations run through
//! the driver's convenient transaction API), `endSession`, `getSnapshotTime`.

use super::{Lent, OpError, OpResult, Output};
use crate::entities::transaction_options;
use crate::runner::{Step, TestState, run_operation};
use crate::values::Args;
use futures::FutureExt;
use mongodb::ClientSession;
use mongodb::bson::{Bson, Document};

/// What the `withTransaction` callback works with.
struct Callback<'t> {
    state: &'t mut TestState,
    session_name: String,
    operations: Vec<Document>,
    /// A failed assertion (or skip) inside the callback, reported after the driver returns.
    step: Option<Step>,
}

fn transaction_arguments(args: &mut Args) -> Result<mongodb::options::TransactionOptions, String> {
    let options = args.options(&[
        "readConcern",
        "writeConcern",
        "readPreference",
        "maxCommitTimeMS",
    ]);
    transaction_options(&options)
}

pub async fn run(
    state: &mut TestState,
    lent: &mut Lent<'_>,
    object: &str,
    name: &str,
    mut args: Args,
) -> OpResult {
    if name == "withTransaction" {
        return with_transaction(state, object, args).await;
    }
    if name == "endSession" {
        args.finish()?;
        // The lsid stays known: later event assertions may still name this session.
        let entity = state.entities.session_entity(object)?;
        drop(entity.session.take());
        // The Rust driver aborts a dropped session's transaction on a task of its own: give it
        // the moment it needs before events are checked.
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        return Ok(Output::none());
    }
    // Whether a transaction is in progress, for the operations the runner builds itself.
    let mut in_transaction = None;
    let session: &mut ClientSession = match lent {
        Some((n, s)) if n == object => s,
        _ => state.entities.session(object)?,
    };
    let result = match name {
        "startTransaction" => {
            let options = transaction_arguments(&mut args)?;
            args.finish()?;
            session.start_transaction().with_options(options).await?;
            state.started_transaction = true;
            in_transaction = Some(true);
            Ok(Output::none())
        }
        "commitTransaction" => {
            args.finish()?;
            in_transaction = Some(false);
            session
                .commit_transaction()
                .await
                .map(|()| Output::none())
                .map_err(OpError::from)
        }
        "abortTransaction" => {
            args.finish()?;
            in_transaction = Some(false);
            session
                .abort_transaction()
                .await
                .map(|()| Output::none())
                .map_err(OpError::from)
        }
        "getSnapshotTime" => {
            args.finish()?;
            match session.snapshot_time() {
                Some(ts) => Ok(Output::value(Bson::Timestamp(ts))),
                None => Err(OpError::Runner("the session has no snapshot time".into())),
            }
        }
        other => {
            return Err(OpError::Runner(format!(
                "unknown session operation `{other}`"
            )));
        }
    };
    if let (Some(flag), Ok(entity)) = (in_transaction, state.entities.session_entity(object)) {
        entity.in_transaction = flag;
    }
    result
}

async fn with_transaction(state: &mut TestState, object: &str, mut args: Args) -> OpResult {
    let operations = args
        .docs("callback")?
        .ok_or("withTransaction: missing callback")?;
    let options = transaction_arguments(&mut args)?;
    args.finish()?;
    state.started_transaction = true;
    let mut session = state
        .entities
        .session_entity(object)?
        .session
        .take()
        .ok_or_else(|| format!("session `{object}` has ended"))?;
    let mut callback = Callback {
        state: &mut *state,
        session_name: object.to_string(),
        operations,
        step: None,
    };
    let result = session
        .start_transaction()
        .with_options(options)
        .and_run(&mut callback, |session, cb| {
            async move {
                let mut lent: Lent = Some((cb.session_name.clone(), session));
                for op in cb.operations.clone() {
                    match run_operation(&mut *cb.state, &mut lent, &op).await {
                        Ok(None) => {}
                        // Errors of callback operations propagate to withTransaction, even
                        // expected or ignored ones (the spec's rule).
                        Ok(Some(err)) => return Err(err),
                        Err(step) => {
                            let message = match &step {
                                Step::Fail(m) | Step::Skip(m) => m.clone(),
                            };
                            cb.step = Some(step);
                            return Err(mongodb::error::Error::custom(message));
                        }
                    }
                }
                Ok(())
            }
            .boxed()
        })
        .await;
    let step = callback.step.take();
    state.entities.session_entity(object)?.session = Some(session);
    match step {
        Some(Step::Fail(m)) => Err(OpError::Runner(format!(
            "in the withTransaction callback: {m}"
        ))),
        Some(Step::Skip(m)) => Err(OpError::Unsupported(m)),
        None => {
            result?;
            Ok(Output::none())
        }
    }
}
