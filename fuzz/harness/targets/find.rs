//! Target `find`: a `find` command through the shard's parser, then what its handler, the
//! planner and the router do with its parts — the filter parsed with the command's `let`,
//! matched against documents, its index bounds and the shard key intervals it targets; the
//! projection applied; the sort ordering the documents.

use super::command;
use bson::{Document, doc};
use docgrid::catalog::ShardKeyPattern;
use docgrid::command::CommandRequest;
use docgrid::datanode::commands::parsers;
use docgrid::datanode::exec::{parsed_query, take_sort_key_request};
use docgrid::query::bounds::field_bounds;
use docgrid::query::{Filter, Projection, SortSpec};

pub fn run(data: &[u8]) {
    let Some(cmd) = command(data) else {
        return;
    };
    let Ok(req) = CommandRequest::new("fuzz", cmd.body) else {
        return;
    };
    let _ = parsers::find(&req);
    let args = req.args();
    let Ok(vars) = args.let_variables() else {
        return;
    };
    let filter_doc = match args.document("filter") {
        Ok(f) => f.unwrap_or_default(),
        Err(_) => return,
    };
    let Ok(filter) = Filter::parse_with_variables(&filter_doc, &vars) else {
        return;
    };
    for doc in &cmd.docs {
        let _ = filter.try_matches_with_position(doc);
    }
    let _ = parsed_query(&filter_doc);
    for path in filter.leaf_paths() {
        let _ = filter.equality(path);
        let _ = field_bounds(&filter_doc, path, false);
        let _ = field_bounds(&filter_doc, path, true);
    }
    for key in [
        doc! {"a": 1},
        doc! {"a": "hashed"},
        doc! {"a.b": 1, "_id": -1},
    ] {
        if let Ok(pattern) = ShardKeyPattern::parse(&key) {
            let _ = pattern.target_intervals(&filter_doc);
            let _ = pattern.equality_key(&filter_doc);
        }
    }
    if let Ok(Some(spec)) = args.document("projection") {
        let mut spec = Some(spec);
        let _ = take_sort_key_request(&mut spec);
        if let Some(Ok(projection)) =
            spec.map(|s| Projection::parse_with_variables(&s, Some(&filter), &vars))
        {
            for doc in &cmd.docs {
                let _ = projection.apply_with_filter(doc, &filter);
            }
        }
    }
    if let Ok(Some(spec)) = args.document("sort") {
        if let Ok(sort) = SortSpec::parse(&spec) {
            let mut docs: Vec<Document> = cmd.docs.clone();
            docs.sort_by(|a, b| sort.compare(a, b));
            for doc in &docs {
                let _ = sort.sort_key(doc);
            }
        }
    }
}
