//! Commands a role runs on itself on behalf of a pipeline (`$lookup`, `$out`...): straight to
//! the handler in its own table, as if a client had sent them on the same connection.

use super::{NodeState, RequestContext};
use crate::aggregate::foreign::CommandRunner;
use crate::command::CommandRequest;
use crate::error::{ErrorCode, MongoError, Result};
use bson::Document;
use futures::future::BoxFuture;

pub struct LocalCommands<'a, S: NodeState> {
    state: &'a S,
    ctx: &'a RequestContext,
}

impl<'a, S: NodeState> LocalCommands<'a, S> {
    pub fn new(state: &'a S, ctx: &'a RequestContext) -> Self {
        LocalCommands { state, ctx }
    }
}

impl<S: NodeState> CommandRunner for LocalCommands<'_, S> {
    // `before_command` (version checks, critical sections) is not run: the enclosing command
    // already passed it and holds what it returned, and waiting for it again could wait for
    // that command itself.
    fn run_command<'b>(
        &'b self,
        db: &'b str,
        command: Document,
    ) -> BoxFuture<'b, Result<Document>> {
        Box::pin(async move {
            let request = CommandRequest::from_document(db, &command)?;
            let name = request.name().to_string();
            let Some(spec) = self.state.commands().get(&name) else {
                return Err(MongoError::new(
                    ErrorCode::CommandNotFound,
                    format!("no such command: '{name}'"),
                ));
            };
            let reply = (spec.handler)(self.state, self.ctx, request).await?;
            let reply = reply.to_document()?;
            match reply
                .contains_key("ok")
                .then(|| MongoError::from_reply(&reply))
            {
                Some(Some(err)) => Err(err),
                _ => Ok(reply),
            }
        })
    }
}
