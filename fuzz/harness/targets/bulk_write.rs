//! Target `bulk_write`: a `bulkWrite` command through the parser routers and shards share and
//! the shard's, then each operation as the shard runs it: an insert's document read, an update
//! rewritten into an `update` statement and applied, a delete's filter matched.

use super::command;
use super::update::statement_run;
use bson::{RawBsonRef, RawDocumentBuf};
use docgrid::command::{BulkOpKind, BulkWrite, CommandRequest};
use docgrid::datanode::commands::parsers;
use docgrid::query::Filter;

pub fn run(data: &[u8]) {
    let Some(cmd) = command(data) else {
        return;
    };
    let Ok(req) = CommandRequest::new("admin", cmd.body) else {
        return;
    };
    let _ = parsers::bulk_write(&req);
    let Ok(vars) = req.args().let_variables() else {
        return;
    };
    let Ok(bulk) = BulkWrite::parse(&req) else {
        return;
    };
    let mut start = 0;
    while start < bulk.ops.len() {
        start = bulk.database_run(start).max(start + 1);
    }
    for op in &bulk.ops {
        let _ = (op.creates(), bulk.db_of(op));
        match op.kind {
            BulkOpKind::Insert => {
                if let Ok(Some(RawBsonRef::Document(d))) = op.raw.get("document") {
                    let _ = d.to_owned().to_document();
                }
            }
            BulkOpKind::Update => {
                // The shard's renaming of the operation's fields into a statement's.
                let mut statement = RawDocumentBuf::new();
                for (key, value) in op.raw.iter().flatten() {
                    match key {
                        "update" => {}
                        "filter" => statement.append_ref("q", value),
                        "updateMods" => statement.append_ref("u", value),
                        "constants" => statement.append_ref("c", value),
                        other => statement.append_ref(other, value),
                    }
                }
                statement_run(&statement, &vars, &cmd.docs);
            }
            BulkOpKind::Delete => {
                let mut statement = RawDocumentBuf::new();
                let mut multi = false;
                for (key, value) in op.raw.iter().flatten() {
                    match (key, value) {
                        ("delete", _) => {}
                        ("filter", v) => statement.append_ref("q", v),
                        ("multi", RawBsonRef::Boolean(b)) => multi = b,
                        (other, v) => statement.append_ref(other, v),
                    }
                }
                statement.append("limit", if multi { 0 } else { 1 });
                let _ = parsers::delete_statement(&statement, &vars);
                if let Ok(Some(RawBsonRef::Document(q))) = statement.get("q") {
                    if let Ok(q) = q.to_owned().to_document() {
                        if let Ok(filter) = Filter::parse_with_variables(&q, &vars) {
                            for doc in &cmd.docs {
                                let _ = filter.try_matches(doc);
                            }
                        }
                    }
                }
            }
        }
    }
}
