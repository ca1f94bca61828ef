//! Commands a role runs on itself on behalf of a pipeline (`$lookup`, `$out`...): straight to
//! the handler in its own table, as if a client had sent them on the same connection. Each
//! such command is a sub-pipeline one level deeper than the command that runs it: the levels
//! are counted across commands, so that views whose pipelines reach one another (a view that
//! `$lookup`s itself, stored before such views were refused) fail at MongoDB's
//! `internalMaxSubPipelineViewDepth` instead of recursing until the stack overflows.

use super::{NodeState, RequestContext};
use crate::aggregate::foreign::CommandRunner;
use crate::command::CommandRequest;
use crate::error::{ErrorCode, MongoError, Result};
use bson::Document;
use futures::future::BoxFuture;

tokio::task_local! {
    /// How many local commands enclose the one running (0 outside any).
    static NESTED_COMMANDS: usize;
}

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
            let depth = NESTED_COMMANDS.try_with(|depth| *depth).unwrap_or(0);
            crate::aggregate::limits::check_sub_pipeline_depth(depth)?;
            let handler = (spec.handler)(self.state, self.ctx, request);
            let reply = NESTED_COMMANDS.scope(depth + 1, handler).await?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::logbuf::LogBuffer;
    use crate::server::{CmdLine, CommandSpec, CommandTable, Node, Parameters, Role};
    use bson::{RawDocumentBuf, doc, rawdoc};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    struct TestState {
        node: Node,
        table: CommandTable<TestState>,
        calls: AtomicUsize,
    }

    impl NodeState for TestState {
        fn node(&self) -> &Node {
            &self.node
        }
        fn commands(&self) -> &CommandTable<Self> {
            &self.table
        }
    }

    /// A command that runs itself, as a view whose pipeline `$lookup`s the view does.
    async fn recurse(
        state: &TestState,
        ctx: &RequestContext,
        _: CommandRequest,
    ) -> Result<RawDocumentBuf> {
        state.calls.fetch_add(1, Ordering::Relaxed);
        let runner = LocalCommands::new(state, ctx);
        runner.run_command("db", doc! {"recurse": 1}).await?;
        Ok(rawdoc! {"ok": 1})
    }

    #[tokio::test]
    async fn commands_running_themselves_stop_at_the_sub_pipeline_depth() {
        let node = Node::new(
            Role::Shard,
            CmdLine::default(),
            Parameters::new(),
            Arc::new(LogBuffer::default()),
        );
        let state = TestState {
            node,
            table: CommandTable::new(vec![CommandSpec::new("recurse", recurse)]),
            calls: AtomicUsize::new(0),
        };
        let ctx = RequestContext::internal();
        let err = LocalCommands::new(&state, &ctx)
            .run_command("db", doc! {"recurse": 1})
            .await
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::MaxSubPipelineDepthExceeded);
        let limit = crate::aggregate::limits::max_sub_pipeline_depth();
        assert_eq!(state.calls.load(Ordering::Relaxed), limit);
    }
}
