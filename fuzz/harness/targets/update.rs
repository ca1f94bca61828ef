//! Target `update`: the statements of an `update` command (or a `findAndModify`) through the
//! shard's statement parser, then each update — operators, a replacement or a pipeline, with
//! `arrayFilters`, `c` and the command's `let` — applied to the documents its filter matches,
//! and as an upsert to the document its query seeds.

use super::command;
use bson::{Bson, Document, RawBsonRef, RawDocument};
use docgrid::command::{Args, CommandRequest};
use docgrid::datanode::commands::parsers;
use docgrid::expression::LetVariables;
use docgrid::query::Filter;
use docgrid::update::UpdateConstants;
use docgrid::update::{UpdateContext, UpdateSpec, upsert_seed};
use std::sync::Arc;

pub fn run(data: &[u8]) {
    let Some(cmd) = command(data) else {
        return;
    };
    let Ok(req) = CommandRequest::new("fuzz", cmd.body) else {
        return;
    };
    let Ok(vars) = req.args().let_variables() else {
        return;
    };
    if req.name() == "findAndModify" {
        let _ = parsers::find_and_modify(&req);
        let args = req.args();
        let query = args.document("query").ok().flatten().unwrap_or_default();
        if let Ok(Some(u)) = args.value("update") {
            let filters = array_filters(&args);
            apply(&query, &u, filters.as_deref(), None, &vars, &cmd.docs, true);
        }
        return;
    }
    let Ok(Some(RawBsonRef::Array(updates))) = req.body.get("updates") else {
        return;
    };
    for statement in updates.into_iter().flatten() {
        if let RawBsonRef::Document(raw) = statement {
            statement_run(raw, &vars, &cmd.docs);
        }
    }
}

/// One statement of `update.updates` (also what a `bulkWrite` update becomes).
pub fn statement_run(raw: &RawDocument, vars: &Arc<LetVariables>, docs: &[Document]) {
    let _ = parsers::update_statement(raw, vars);
    let args = Args::new("update.updates", raw);
    let Ok(Some(query)) = args.document("q") else {
        return;
    };
    let Ok(Some(u)) = args.value("u") else {
        return;
    };
    let constants = args.document("c").ok().flatten();
    let filters = array_filters(&args);
    let upsert = args.bool("upsert").ok().flatten().unwrap_or(false);
    apply(
        &query,
        &u,
        filters.as_deref(),
        constants.as_ref(),
        vars,
        docs,
        upsert,
    );
}

fn array_filters(args: &Args<'_>) -> Option<Vec<Document>> {
    let items = args.array("arrayFilters").ok().flatten()?;
    Some(
        items
            .into_iter()
            .filter_map(|f| match f {
                Bson::Document(d) => Some(d),
                _ => None,
            })
            .collect(),
    )
}

fn apply(
    query: &Document,
    u: &Bson,
    array_filters: Option<&[Document]>,
    constants: Option<&Document>,
    vars: &Arc<LetVariables>,
    docs: &[Document],
    upsert: bool,
) {
    let Ok(filter) = Filter::parse_with_variables(query, vars) else {
        return;
    };
    let Ok(update) = UpdateSpec::parse_with_constants(
        u,
        array_filters,
        UpdateConstants {
            statement: constants,
            command_let: Some(vars),
        },
    ) else {
        return;
    };
    let _ = (
        update.is_positional(),
        update.is_pipeline(),
        update.is_replacement(),
    );
    let now = bson::DateTime::from_millis(1_700_000_000_000);
    for doc in docs {
        if !filter.try_matches(doc).unwrap_or(false) {
            continue;
        }
        let mut target = doc.clone();
        let ctx = UpdateContext {
            is_upsert_insert: false,
            now,
            matched_filter: Some(&filter),
            collation: None,
        };
        let _ = update.apply(&mut target, &ctx);
    }
    if upsert {
        if let Ok(mut seed) = upsert_seed(query) {
            let ctx = UpdateContext {
                is_upsert_insert: true,
                now,
                matched_filter: None,
                collation: None,
            };
            let _ = update.apply(&mut seed, &ctx);
        }
    }
}
