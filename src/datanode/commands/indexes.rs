//! `createIndexes` and `dropIndexes` (`listIndexes` lives with the other catalog reads).

use super::super::DataNode;
use super::write::target;
use crate::command::{CommandRequest, missing};
use crate::datanode::index::IndexSpec;
use crate::datanode::index::spec::MAX_INDEXES;
use crate::datanode::storage::StorageTransaction;
use crate::document::display::render_doc;
use crate::error::{ErrorCode, MongoError, Result};
use crate::server::RequestContext;
use crate::server::stats::Stats;
use bson::{Bson, Document, RawDocumentBuf, doc};

/// `commitQuorum`: how many voting members must be ready before an index build commits. Each
/// shard is a single-node replica set, which satisfies 0, 1, `"majority"` and
/// `"votingMembers"`; more nodes, or a mode it has no tags for, cannot be satisfied.
fn check_commit_quorum(value: Option<bson::RawBsonRef<'_>>) -> Result<()> {
    use bson::RawBsonRef;
    let number = |n: i64| -> Result<()> {
        if !(0..=50).contains(&n) {
            return Err(MongoError::failed_to_parse(
                "commitQuorum has to be a non-negative number and not greater than 50",
            ));
        }
        if n > 1 {
            return Err(MongoError::new(
                ErrorCode::UnsatisfiableCommitQuorum,
                "Not enough data-bearing nodes to satisfy commit quorum",
            ));
        }
        Ok(())
    };
    match value {
        None => Ok(()),
        Some(RawBsonRef::Int32(n)) => number(i64::from(n)),
        Some(RawBsonRef::Int64(n)) => number(n),
        Some(RawBsonRef::Double(n)) => number(n as i64),
        Some(RawBsonRef::String("")) => Err(MongoError::failed_to_parse(
            "commitQuorum can't be an empty string",
        )),
        Some(RawBsonRef::String("majority" | "votingMembers")) => Ok(()),
        Some(RawBsonRef::String(mode)) => Err(MongoError::new(
            ErrorCode::UnknownReplWriteConcern,
            format!("No write concern mode named '{mode}' found in replica set configuration"),
        )),
        Some(_) => Err(MongoError::failed_to_parse(
            "commitQuorum has to be a number or a string",
        )),
    }
}

pub(super) async fn create_indexes<S: DataNode>(
    state: &S,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let args = req.args();
    check_commit_quorum(args.get("commitQuorum")?)?;
    crate::datanode::views::reject(state.storage(), &req.db, args.collection()?).await?;
    let requested = args
        .array("indexes")?
        .ok_or_else(|| missing("createIndexes", "indexes"))?;
    if requested.is_empty() {
        return Err(MongoError::bad_value(
            "Must specify at least one index to create",
        ));
    }
    // An index without a collation of its own inherits the collection's default.
    let existing = state
        .storage()
        .collection(&req.db, args.collection()?)
        .await;
    let default = match &existing {
        Some((_, coll)) => crate::datanode::collation::collection_default(coll)?,
        None => None,
    };
    let inherit = |spec: &Document| match &default {
        Some(collation) if !spec.contains_key("collation") => {
            let mut spec = spec.clone();
            spec.insert("collation", collation.spec());
            spec
        }
        _ => spec.clone(),
    };
    let specs = requested
        .iter()
        .map(|spec| match spec {
            Bson::Document(d) => IndexSpec::parse(&inherit(d)).and_then(|spec| {
                spec.check_creatable()?;
                check_id_collation(&spec, default.as_deref())?;
                Ok(spec)
            }),
            _ => Err(MongoError::type_mismatch(
                "The elements of the 'indexes' array must be objects",
            )),
        })
        .collect::<Result<Vec<_>>>()?;
    let existed = existing.is_some();
    let (db, coll) = target(state, &req, true).await?.expect("created on demand");
    if let Some(sharding) = state.sharding(&format!("{}.{}", req.db, coll.name)) {
        let key = sharding.key_pattern();
        for spec in specs.iter().filter(|s| s.unique) {
            if !key.is_unique_index_compatible(&spec.key) {
                return Err(MongoError::new(
                    ErrorCode::CannotCreateIndex,
                    format!(
                        "cannot create unique index over {} with shard key pattern {}",
                        render_doc(&spec.key),
                        render_doc(key.pattern())
                    ),
                ));
            }
        }
    }
    let before = coll.indexes.iter().filter(|i| i.ready).count();
    let mut to_build = Vec::new();
    for spec in specs {
        if is_existing(&coll.indexes, &spec)? {
            // The same index may still be building for another request: answer once it is.
            db.wait_for_index_build(&coll.name, &spec.name).await;
            continue;
        }
        if to_build
            .iter()
            .any(|b: &IndexSpec| b.name == spec.name && b.same_index(&spec))
        {
            continue;
        }
        to_build.push(spec);
    }
    if before + to_build.len() > MAX_INDEXES {
        // MongoDB names the first index past the limit, its key as it prints documents.
        let refused = &to_build[MAX_INDEXES.saturating_sub(before).min(to_build.len() - 1)];
        return Err(MongoError::new(
            ErrorCode::CannotCreateIndex,
            format!(
                "add index fails, too many indexes for {}.{} key:{}",
                req.db,
                coll.name,
                crate::document::display::render_doc(&refused.key)
            ),
        ));
    }
    if let Some(txn) = StorageTransaction::current() {
        if !to_build.is_empty() && txn.created(&req.db, &coll.name).is_none() {
            return Err(MongoError::new(
                ErrorCode::OperationNotSupportedInTransaction,
                format!(
                    "Cannot create new indexes on existing collection {}.{} in a multi-document transaction.",
                    req.db, coll.name
                ),
            ));
        }
        // A collection the transaction created: its indexes are created with it at the commit.
        let built = to_build.len();
        for spec in to_build {
            txn.create_index(&db, &coll.name, spec).await?;
        }
        return created_reply(before, built, existed);
    }
    let memory = state
        .node()
        .params
        .get_i64("maxIndexBuildMemoryUsageMegabytes")
        .unwrap_or(200)
        .max(1) as usize
        * 1024
        * 1024;
    let mut built = 0;
    for spec in to_build {
        loop {
            match db
                .create_index_within(&coll.name, spec.clone(), memory)
                .await
            {
                Ok(build) => {
                    built += 1;
                    let stats = &state.node().stats;
                    Stats::add(&stats.index_builds, 1);
                    Stats::add(&stats.index_build_keys_sorted, build.keys_sorted as i64);
                    Stats::add(&stats.index_build_spilled_runs, build.spilled_runs as i64);
                }
                // Another request registered the same name first: as MongoDB does, wait for
                // that build, then answer as for an existing index (or build ours, if that
                // build failed).
                Err(e) if e.code() == ErrorCode::IndexBuildAlreadyInProgress => {
                    db.wait_for_index_build(&coll.name, &spec.name).await;
                    let current = db.collection(&coll.name).ok_or_else(|| {
                        MongoError::namespace_not_found(format!(
                            "ns does not exist: {}.{}",
                            req.db, coll.name
                        ))
                    })?;
                    if !is_existing(&current.indexes, &spec)? {
                        continue;
                    }
                }
                Err(e) => return Err(e),
            }
            break;
        }
    }
    created_reply(before, built, existed)
}

fn created_reply(before: usize, built: usize, existed: bool) -> Result<RawDocumentBuf> {
    let mut reply = doc! {
        "numIndexesBefore": before as i32,
        "numIndexesAfter": (before + built) as i32,
        "createdCollectionAutomatically": !existed,
    };
    if built == 0 {
        reply.insert("note", "all indexes already exist");
    }
    Ok(RawDocumentBuf::from_document(&reply)?)
}

/// Whether the index exists already; a conflicting index under the same name or key is an error.
fn is_existing(indexes: &[crate::datanode::storage::IndexMeta], spec: &IndexSpec) -> Result<bool> {
    for index in indexes {
        let existing = match &index.parsed {
            Some(parsed) => (**parsed).clone(),
            None => IndexSpec::parse(&index.spec)?,
        };
        if index.name == spec.name {
            if existing.same_index(spec) {
                return Ok(true);
            }
            let code = if existing.key == spec.key {
                ErrorCode::IndexOptionsConflict
            } else {
                ErrorCode::IndexKeySpecsConflict
            };
            let what = if code == ErrorCode::IndexOptionsConflict {
                "An equivalent index already exists with the same name but different options."
            } else {
                "An existing index has the same name as the requested index. When index names are not specified, they are auto generated and can cause conflicts. Please refer to our documentation."
            };
            return Err(MongoError::new(
                code,
                format!(
                    "{what} Requested index: {}, existing index: {}",
                    spec.document, index.spec
                ),
            ));
        }
        // Indexes on one key pattern may coexist when their collations or partial filters
        // differ, as in MongoDB.
        let same_variant = existing.partial_filter.as_ref().map(|p| &p.0)
            == spec.partial_filter.as_ref().map(|p| &p.0)
            && existing.collation == spec.collation;
        if existing.key == spec.key && same_variant {
            // Every text index has the key `{_fts: "text", _ftsx: 1}`: a second one with other
            // fields or weights lands here, so a collection has one text index, as in MongoDB.
            let message = if existing.same_index(spec) {
                format!("Index already exists with a different name: {}", index.name)
            } else {
                format!(
                    "An equivalent index already exists with a different name and options. Requested index: {}, existing index: {}",
                    spec.document, index.spec
                )
            };
            return Err(MongoError::new(ErrorCode::IndexOptionsConflict, message));
        }
    }
    Ok(false)
}

pub(super) async fn drop_indexes<S: DataNode>(
    state: &S,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let args = req.args();
    let name = args.collection()?;
    crate::datanode::views::reject(state.storage(), &req.db, name).await?;
    let ns = format!("{}.{name}", req.db);
    let (db, coll) = state
        .storage()
        .collection(&req.db, name)
        .await
        .ok_or_else(|| MongoError::namespace_not_found(format!("ns not found {ns}")))?;
    let which = args
        .get("index")?
        .ok_or_else(|| missing("dropIndexes", "index"))?;
    let which = Bson::try_from(which.to_raw_bson())?;
    let was = coll.indexes.len() as i32;
    let cannot_drop_id = || MongoError::new(ErrorCode::InvalidOptions, "cannot drop _id index");
    let names: Vec<String> = match &which {
        Bson::String(s) if s == "*" => coll
            .indexes
            .iter()
            .filter(|i| !i.is_id())
            .map(|i| i.name.clone())
            .collect(),
        Bson::String(s) => {
            if s == "_id_" {
                return Err(cannot_drop_id());
            }
            if !coll.indexes.iter().any(|i| &i.name == s) {
                return Err(MongoError::new(
                    ErrorCode::IndexNotFound,
                    format!("index not found with name [{s}]"),
                ));
            }
            vec![s.clone()]
        }
        Bson::Document(key) => {
            let mut matching = coll.indexes.iter().filter(|i| &i.key_pattern() == key);
            let index = matching.next().ok_or_else(|| {
                MongoError::new(
                    ErrorCode::IndexNotFound,
                    format!(
                        "can't find index with key: {}",
                        crate::document::display::render_doc(key)
                    ),
                )
            })?;
            // Indexes on one key pattern in different collations: a pattern names none of them.
            let others: Vec<_> = matching.collect();
            if let Some(other) = others.first() {
                return Err(MongoError::new(
                    ErrorCode::AmbiguousIndexKeyPattern,
                    format!(
                        "{} indexes found for key: {}, identify by name instead. Conflicting indexes: {}, {}",
                        others.len() + 1,
                        crate::document::display::render_doc(key),
                        crate::document::display::render_doc(&index.spec),
                        crate::document::display::render_doc(&other.spec)
                    ),
                ));
            }
            if index.is_id() {
                return Err(cannot_drop_id());
            }
            vec![index.name.clone()]
        }
        Bson::Array(items) => {
            let mut names = Vec::new();
            for item in items {
                let Bson::String(n) = item else {
                    return Err(MongoError::type_mismatch(
                        "dropIndexes 'index' array must contain index names",
                    ));
                };
                if n == "_id_" {
                    return Err(cannot_drop_id());
                }
                if !coll.indexes.iter().any(|i| &i.name == n) {
                    return Err(MongoError::new(
                        ErrorCode::IndexNotFound,
                        format!("index not found with name [{n}]"),
                    ));
                }
                names.push(n.clone());
            }
            names
        }
        _ => {
            return Err(MongoError::type_mismatch(
                "dropIndexes 'index' must be a name, a key pattern, an array of names or \"*\"",
            ));
        }
    };
    for index in &names {
        db.drop_index(name, index).await?;
    }
    let mut reply: Document = doc! {"nIndexesWas": was};
    if matches!(&which, Bson::String(s) if s == "*") {
        reply.insert("msg", "non-_id indexes dropped for collection");
    }
    Ok(RawDocumentBuf::from_document(&reply)?)
}

/// The `_id` index has its collection's default collation, as in MongoDB: one asked for in
/// another is BadValue.
fn check_id_collation(
    spec: &IndexSpec,
    default: Option<&crate::document::collation::Collation>,
) -> Result<()> {
    let is_id = matches!(spec.fields.as_slice(), [field]
        if field.path == "_id" && field.kind == crate::datanode::index::FieldKind::Ascending);
    if !is_id || spec.collation.as_deref() == default {
        return Ok(());
    }
    let shown = |c: Option<&crate::document::collation::Collation>| {
        render_doc(&c.map_or_else(|| bson::doc! {"locale": "simple"}, |c| c.spec()))
    };
    Err(MongoError::bad_value(format!(
        "The _id index must have the same collation as the collection. Index collation: {}, collection collation: {}",
        shown(spec.collation.as_deref()),
        shown(default)
    )))
}
