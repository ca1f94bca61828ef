//! `update`: per statement, find the matching documents (one, or all with `multi`), apply the
//! update, and upsert when nothing matched.

use super::super::DataNode;
use super::super::exec::{Candidate, PlanStats, Position, QueryShape, WriteStage, update_stats};
use super::super::storage::{CollectionMeta, Writes};
use super::super::transaction_table::RetryableWrite;
use super::super::validation::DocumentValidator;
use super::find_and_modify::first_match;
use super::insert::prepare_document;
use super::write::{
    ShardKeyRules, ShardedWrite, acknowledge, append_retried, array_filters, commit_recorded,
    count_value, finish_reply, finish_retryable, statements, target,
};
use crate::command::{CommandRequest, WriteConcern};
use crate::document::collation::Collation;
use crate::error::{ErrorCode, MongoError, Result};
use crate::expression::LetVariables;
use crate::query::filter::Filter;
use crate::query::sort::SortSpec;
use crate::server::{RequestContext, stats::Stats};
use crate::update::{UpdateConstants, UpdateContext, UpdateSpec, upsert_seed};
use bson::{Bson, Document, RawDocument, RawDocumentBuf, rawdoc};
use std::sync::Arc;
use std::time::Instant;

/// One update statement.
pub(super) struct UpdateStatement {
    pub query: Document,
    /// `query` parsed, seeing the command's `let` variables.
    pub filter: Filter,
    pub update: UpdateSpec,
    pub upsert: bool,
    pub multi: bool,
    pub hint: Option<Bson>,
    /// Which document a single-document update picks first (8.0).
    pub sort: Option<SortSpec>,
}

impl UpdateStatement {
    /// One statement; `vars` is the command's `let`, evaluated (its `$expr` and a pipeline
    /// `u` read them).
    pub(super) fn parse(raw: &RawDocument, vars: &Arc<LetVariables>) -> Result<Self> {
        let args = crate::command::Args::new("update.updates", raw);
        let collation = crate::command::parse_collation(args.value("collation")?.as_ref())?;
        let vars = &vars.for_statement(collation);
        let query = args
            .document("q")?
            .ok_or_else(|| crate::command::missing("update.updates", "q"))?;
        let u = args
            .get("u")?
            .ok_or_else(|| crate::command::missing("update.updates", "u"))?;
        let u = Bson::try_from(u.to_raw_bson())?;
        let array_filters = array_filters(&args)?;
        let statement_constants = match args.get("c")? {
            None => None,
            Some(bson::RawBsonRef::Document(c)) => Some(c.to_owned().to_document()?),
            Some(_) => {
                return Err(MongoError::type_mismatch(
                    "BSON field 'update.updates.c' is the wrong type, expected type 'object'",
                ));
            }
        };
        let update = UpdateSpec::parse_with_constants(
            &u,
            array_filters.as_deref(),
            UpdateConstants {
                statement: statement_constants.as_ref(),
                command_let: Some(vars),
            },
        )?;
        let multi = args.bool("multi")?.unwrap_or(false);
        if multi && update.is_replacement() {
            return Err(MongoError::failed_to_parse(
                "multi update is not supported for replacement-style update",
            ));
        }
        let filter = Filter::parse_with_variables(&query, vars)?;
        let sort = match args.document("sort")?.filter(|s| !s.is_empty()) {
            Some(_) if multi => {
                return Err(MongoError::failed_to_parse(
                    "Cannot specify sort with multi=true",
                ));
            }
            Some(sort) => Some(SortSpec::parse_for(&sort, vars)?),
            None => None,
        };
        super::find::refuse_distance_sort(sort.as_ref(), &filter)?;
        Ok(UpdateStatement {
            filter,
            query,
            update,
            upsert: args.bool("upsert")?.unwrap_or(false),
            multi,
            hint: super::find::parse_hint(&args)?,
            sort,
        })
    }
}

/// What one statement did.
#[derive(Default)]
pub(super) struct StatementOutcome {
    pub matched: u64,
    pub modified: u64,
    pub upserted_id: Option<Bson>,
    /// The `_id` of the document a single-document update matched.
    pub matched_id: Option<Bson>,
}

/// Applies the update to one matched document; returns the new document when it changed.
pub(super) async fn update_candidate(
    txn: &mut Writes<'_>,
    coll: &CollectionMeta,
    candidate: &Candidate,
    update: &UpdateSpec,
    filter: &Filter,
    validator: Option<&DocumentValidator>,
    shard_key: Option<ShardKeyRules<'_>>,
) -> Result<Option<Document>> {
    let mut doc = candidate.doc.clone();
    let ctx = UpdateContext {
        is_upsert_insert: false,
        now: bson::DateTime::now(),
        matched_filter: Some(filter),
        collation: filter.collation(),
    };
    if !update.apply(&mut doc, &ctx)? {
        return Ok(None);
    }
    let same_id = match (doc.get("_id"), candidate.doc.get("_id")) {
        (Some(a), Some(b)) => {
            crate::document::order::compare_values(a, b) == std::cmp::Ordering::Equal
        }
        (a, b) => a == b,
    };
    if !same_id {
        return Err(MongoError::new(
            ErrorCode::ImmutableField,
            "Performing an update on the path '_id' would modify the immutable field '_id'",
        ));
    }
    if let Some(validator) = validator {
        validator.check(&doc, Some(&candidate.doc))?;
    }
    if let Some(rules) = shard_key {
        rules.check_update(&candidate.doc, &doc)?;
    }
    let raw = RawDocumentBuf::from_document(&doc)?;
    check_size(&raw)?;
    crate::depth::check_update(&raw)?;
    txn.replace(coll, candidate.rid, &candidate.raw, &raw)
        .await?;
    Ok(Some(doc))
}

fn check_size(raw: &RawDocumentBuf) -> Result<()> {
    if raw.as_bytes().len() > crate::wire::MAX_BSON_OBJECT_SIZE {
        return Err(MongoError::new(
            ErrorCode::BSONObjectTooLarge,
            "Resulting document after update is larger than 16777216",
        ));
    }
    Ok(())
}

/// Builds and inserts the document an upsert creates; returns it.
pub(super) async fn upsert(
    txn: &mut Writes<'_>,
    coll: &CollectionMeta,
    query: &Document,
    update: &UpdateSpec,
    validator: Option<&DocumentValidator>,
    shard_key: Option<ShardKeyRules<'_>>,
    collation: Option<&Collation>,
) -> Result<Document> {
    let mut doc = upsert_seed(query)?;
    let seeded_id = doc.get("_id").cloned();
    // The statement's collation applies to the operators that compare (`$addToSet` on the
    // seed's array, `$min`/`$max`), as on a matched document.
    let ctx = UpdateContext {
        is_upsert_insert: true,
        now: bson::DateTime::now(),
        matched_filter: None,
        collation,
    };
    update.apply(&mut doc, &ctx)?;
    // An `_id` the query fixed is as immutable as a stored document's.
    if let (Some(seeded), Some(now)) = (&seeded_id, doc.get("_id")) {
        if crate::document::order::compare_values(seeded, now) != std::cmp::Ordering::Equal {
            return Err(MongoError::new(
                ErrorCode::ImmutableField,
                format!(
                    "After applying the update, the (immutable) field '_id' was found to have been altered to {}",
                    crate::document::display::render_element("_id", now)
                ),
            ));
        }
    }
    let raw = prepare_document(&RawDocumentBuf::from_document(&doc)?)?.into_owned();
    check_size(&raw)?;
    let doc = raw.to_document()?;
    if let Some(validator) = validator {
        validator.check(&doc, None)?;
    }
    if let Some(rules) = shard_key {
        rules.check_upsert(&doc)?;
    }
    txn.insert_one(coll, &raw).await?;
    Ok(doc)
}

pub(super) async fn run_statement(
    txn: &mut Writes<'_>,
    coll: &CollectionMeta,
    stmt: &UpdateStatement,
    validator: Option<&DocumentValidator>,
    sharded: Option<&ShardedWrite>,
) -> Result<StatementOutcome> {
    let bound = crate::datanode::exec::bound_text(&stmt.filter, coll)?;
    let filter = &*bound;
    let ownership = sharded.map(|s| &s.ownership);
    let rules = sharded.map(|s| s.rules(stmt.multi));
    let mut out = StatementOutcome::default();
    let read;
    if let Some(sort) = &stmt.sort {
        let found;
        (found, read) = first_match(
            txn,
            coll,
            &stmt.query,
            filter,
            Some(sort),
            stmt.hint.as_ref(),
            ownership,
        )
        .await?;
        if let Some(candidate) = found {
            out.matched = 1;
            out.matched_id = candidate.doc.get("_id").cloned();
            let changed = update_candidate(
                txn,
                coll,
                &candidate,
                &stmt.update,
                filter,
                validator,
                rules,
            )
            .await?;
            out.modified = changed.is_some() as u64;
        }
    } else {
        let started = Instant::now();
        let mut position = Position::plan(
            coll,
            &QueryShape {
                hint: stmt.hint.as_ref(),
                collation: filter.collation(),
                ..QueryShape::filter(&stmt.query)
            },
        )?
        .owned_by(ownership.cloned());
        txn.index_usage()
            .record(coll, position.path().indexes_used(coll));
        'scan: while !position.done() {
            for candidate in position.next_matches(txn, coll, filter).await? {
                out.matched += 1;
                if update_candidate(
                    txn,
                    coll,
                    &candidate,
                    &stmt.update,
                    filter,
                    validator,
                    rules,
                )
                .await?
                .is_some()
                {
                    out.modified += 1;
                }
                if !stmt.multi {
                    out.matched_id = candidate.doc.get("_id").cloned();
                    break 'scan;
                }
            }
        }
        read = PlanStats::of_write(&position, &stmt.query, None, out.matched, started);
    }
    if out.matched == 0 && stmt.upsert {
        let doc = upsert(
            txn,
            coll,
            &stmt.query,
            &stmt.update,
            validator,
            rules,
            filter.collation(),
        )
        .await?;
        out.upserted_id = doc.get("_id").cloned();
    }
    if let Some(read) = read {
        read.note(WriteStage {
            stage: "UPDATE",
            express: "EXPRESS_UPDATE",
            single: !stmt.multi && stmt.sort.is_none(),
            stats: update_stats(out.matched, out.modified, out.upserted_id.is_some()),
        });
    }
    Ok(out)
}

pub(super) async fn run<S: DataNode>(
    state: &S,
    _ctx: &RequestContext,
    req: CommandRequest,
) -> Result<RawDocumentBuf> {
    let args = req.args();
    let request = crate::command::requests::UpdateRequest::parse(&req)?;
    let ordered = request.ordered.unwrap_or(true);
    let wc = WriteConcern::parse(&args)?;
    let raw_statements = statements(&req, "updates")?;
    let mut retry = RetryableWrite::begin(state, &req).await?;
    // Only an upsert creates the collection.
    let may_upsert = raw_statements
        .iter()
        .any(|s| matches!(s.get("upsert"), Ok(Some(bson::RawBsonRef::Boolean(true)))));
    let vars = args.let_variables()?;
    let Some((db, coll)) = target(state, &req, may_upsert).await? else {
        let parse = |raw: &bson::RawDocument| UpdateStatement::parse(raw, &vars).map(drop);
        let errors = super::write::unparsed_statements(&raw_statements, ordered, parse);
        return finish_reply(rawdoc! {"n": 0, "nModified": 0}, errors, &wc);
    };
    // Statements without a collation of their own compare by the collection's default.
    let vars = vars.for_statement(crate::datanode::collation::collection_default(&coll)?);
    let ns = format!("{}.{}", req.db, coll.name);
    let bypass = request.bypass_document_validation.unwrap_or(false);
    let validator = DocumentValidator::for_collection(&req.db, &coll, bypass)?;
    let sharded = ShardedWrite::of(state, &req);
    let mut txn = db.writes().await?;
    let (mut n, mut modified) = (0u64, 0u64);
    let mut upserted = Vec::new();
    let mut errors = Vec::new();
    for (i, raw) in raw_statements.iter().enumerate() {
        Stats::add(&state.node().stats.op_update, 1);
        let recorded = match retry.as_mut() {
            Some(retry) => retry.executed(i)?,
            None => None,
        };
        let outcome = match recorded {
            Some(result) => Ok(recorded_outcome(&result)),
            None => match UpdateStatement::parse(raw, &vars).and_then(|stmt| {
                if stmt.multi {
                    super::write::refuse_multi_retryable(
                        retry.as_ref(),
                        i,
                        "Cannot use (or request) retryable writes with multi=true",
                    )?;
                }
                Ok(stmt)
            }) {
                Ok(stmt) => {
                    let outcome =
                        run_statement(&mut txn, &coll, &stmt, validator.as_ref(), sharded.as_ref())
                            .await;
                    // As MongoDB, a statement is recorded with what it wrote: one that wrote
                    // nothing runs again on a retry, and so does a multi-document update (one
                    // only runs with an uninitialized `stmtId`, never recorded).
                    let wrote =
                        |out: &StatementOutcome| out.modified > 0 || out.upserted_id.is_some();
                    if let (Some(retry), Ok(out), false) = (retry.as_mut(), &outcome, stmt.multi)
                        && wrote(out)
                    {
                        let id = out.upserted_id.as_ref().or(out.matched_id.as_ref());
                        retry.record(i, &ns, id, outcome_record(out))?;
                    }
                    outcome
                }
                Err(e) => Err(e),
            },
        };
        match outcome {
            Ok(out) => {
                n += out.matched;
                modified += out.modified;
                if let Some(id) = out.upserted_id {
                    n += 1;
                    upserted.push(Bson::Document(bson::doc! {"index": i as i32, "_id": id}));
                }
            }
            Err(e) => {
                errors.push((i, e));
                if ordered {
                    break;
                }
            }
        }
    }
    let seq = commit_recorded(state, txn, &mut retry).await?;
    acknowledge(&db, &wc, seq).await?;
    let mut reply = rawdoc! {"n": count_value(n)};
    if !upserted.is_empty() {
        reply.append("upserted", bson::RawBson::try_from(Bson::Array(upserted))?);
    }
    reply.append("nModified", count_value(modified));
    if let Some(retry) = &retry {
        append_retried(&mut reply, retry.retried())?;
    }
    finish_retryable(state, retry);
    finish_reply(reply, errors, &wc)
}

/// What a retryable write records of an update statement: its counts and upserted `_id`.
pub(super) fn outcome_record(out: &StatementOutcome) -> Document {
    let mut record = bson::doc! {"n": out.matched as i64, "nModified": out.modified as i64};
    if let Some(id) = &out.upserted_id {
        record.insert("upserted", id.clone());
    }
    record
}

/// An update statement's outcome as its record tells it.
pub(super) fn recorded_outcome(record: &Document) -> StatementOutcome {
    let count = |name: &str| record.get_i64(name).map(|n| n as u64).unwrap_or(0);
    StatementOutcome {
        matched: count("n"),
        modified: count("nModified"),
        upserted_id: record.get("upserted").cloned(),
        matched_id: None,
    }
}
