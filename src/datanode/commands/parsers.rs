//! The data commands' command and statement parsers as one public surface, for the fuzzer
//! (`fuzz/`) and for the router, which parses a read on a database that does not exist as a
//! shard would before answering it empty: each parses what its handler parses first, the same
//! way, and says only whether it was accepted, without a storage engine behind.

use super::aggregate::AggregateCommand;
use super::bulk_write::BulkWriteCommand;
use super::delete::DeleteStatement;
use super::find::{FindCommand, FindQuery};
use super::find_and_modify::FindAndModifyCommand;
use super::update::UpdateStatement;
use crate::command::CommandRequest;
use crate::error::Result;
use crate::expression::LetVariables;
use bson::RawDocument;
use std::sync::Arc;

pub fn find(req: &CommandRequest) -> Result<()> {
    FindQuery::parse(req, &FindCommand::parse(req)?, None).map(drop)
}

pub fn aggregate(req: &CommandRequest) -> Result<()> {
    AggregateCommand::parse(req)?.parse_stages()
}

pub fn count(req: &CommandRequest) -> Result<()> {
    super::count::parse_count(req, None).map(drop)
}

pub fn distinct(req: &CommandRequest) -> Result<()> {
    super::count::parse_distinct(req, None).map(drop)
}

pub fn find_and_modify(req: &CommandRequest) -> Result<()> {
    FindAndModifyCommand::parse(req, None).map(drop)
}

pub fn bulk_write(req: &CommandRequest) -> Result<()> {
    BulkWriteCommand::parse(req).map(drop)
}

/// One statement of `update.updates`; `vars` is the command's `let`, evaluated.
pub fn update_statement(raw: &RawDocument, vars: &Arc<LetVariables>) -> Result<()> {
    UpdateStatement::parse(raw, vars).map(drop)
}

/// One statement of `delete.deletes`.
pub fn delete_statement(raw: &RawDocument, vars: &Arc<LetVariables>) -> Result<()> {
    DeleteStatement::parse(raw, vars).map(drop)
}
