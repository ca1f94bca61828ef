//! A write batch (`insert`, `update` or `delete`) on a sharded collection: each statement is
//! targeted — an insert by its document's shard key; an update or delete by its filter (one
//! shard for an exact shard key, the owners of the overlapping chunks for a multi-write) — and
//! statements travel as per-shard sub-batches: unordered, all at once; ordered, in runs going
//! to one shard, stopping at the first error. Replies merge with statement indexes mapped
//! back. A single-document write that could be on several shards runs in two phases (find one
//! matching `_id`, then write it where it is), as MongoDB 8.0 does. A sub-batch a shard refused
//! as stale goes back to pending and is re-targeted on the next attempt of the routing loop
//! (`RouterState::route`); nothing runs twice.

use super::RouterState;
use super::cluster_cursor::{SORT_KEY_FIELD, take_sort_key};
use super::forward::{Placement, ShardReply, is_stale, refuse_stale, reply_count, reply_error};
use super::shard_key_move::{MoveOutcome, MoveRecord, ShardKeyMove};
use super::targeting::{By, Filter, Target};
use crate::command::CommandRequest;
use crate::command::requests::{DeleteRequest, InsertRequest, UpdateRequest};
use crate::error::{ErrorCode, MongoError, Result};
use crate::query::sort::SortSpec;
use crate::wire::MAX_MESSAGE_SIZE;
use bson::{Bson, Document, RawBsonRef, RawDocument, RawDocumentBuf, doc};
use std::cmp::Ordering;
use std::collections::BTreeMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteKind {
    Insert,
    Update,
    Delete,
}

impl WriteKind {
    /// The field holding the statements.
    pub fn field(self) -> &'static str {
        match self {
            WriteKind::Insert => "documents",
            WriteKind::Update => "updates",
            WriteKind::Delete => "deletes",
        }
    }
}

/// Where a statement goes.
enum Dest {
    Shards(Vec<String>),
    /// A single-document update or delete whose filter could match on several shards.
    TwoPhase(Vec<String>),
}

pub struct WriteBatch {
    kind: WriteKind,
    db: String,
    collection: String,
    /// The command without its statements and `ordered`.
    base: RawDocumentBuf,
    ordered: bool,
    statements: Vec<RawDocumentBuf>,
    /// In a retryable write, each statement's `stmtId` (the client's `stmtIds`, or its index),
    /// sent with it so that a shard recognises a statement it already executed whichever
    /// sub-batch carries it: the retry of a batch may be split otherwise.
    stmt_ids: Option<Vec<i32>>,
    /// Statements not yet executed, in order.
    pending: Vec<usize>,
    n: i64,
    n_modified: i64,
    upserted: Vec<(usize, Bson)>,
    write_errors: Vec<(usize, Document)>,
    write_concern_error: Option<Document>,
    /// The statement ids shards answered from their records (`retriedStmtIds`).
    retried: Vec<i32>,
    /// The shards each statement already ran on (a multi-write refused by some of its shards
    /// is resent only to those).
    done: BTreeMap<usize, Vec<String>>,
    /// A single-statement update a shard refused with WouldChangeOwningShard: the document
    /// moves to the shard owning its new key.
    moving: Option<(usize, ShardKeyMove)>,
}

/// Room kept in a sub-batch's message for what the router adds around the client's command:
/// the shard or database version, `$db`, the message and sequence headers.
pub const ROUTER_OVERHEAD: usize = 16 * 1024;

/// MongoDB moves a document to another shard only for a batch of one update.
const MOVE_NEEDS_BATCH_OF_ONE: &str = "Document shard key value updates that cause the doc to move shards must be sent with write batch of size 1";

impl WriteBatch {
    pub fn parse(req: &CommandRequest, kind: WriteKind) -> Result<WriteBatch> {
        let args = req.args();
        let collection = args.collection()?.to_string();
        // The shards read `ordered` through the same declarations.
        let ordered = match kind {
            WriteKind::Insert => InsertRequest::parse(req)?.ordered,
            WriteKind::Update => UpdateRequest::parse(req)?.ordered,
            WriteKind::Delete => DeleteRequest::parse(req)?.ordered,
        }
        .unwrap_or(true);
        let mut statements = Vec::new();
        for statement in req.document_array(kind.field())? {
            statements.push(match kind {
                WriteKind::Insert => with_id(statement)?,
                _ => statement.to_raw_document_buf(),
            });
        }
        let mut base = RawDocumentBuf::new();
        for element in &req.body {
            let (name, value) = element?;
            if name != kind.field() && name != "ordered" && name != "stmtIds" {
                base.append_ref(name, value);
            }
        }
        let stmt_ids = statement_ids(req, statements.len())?;
        Ok(WriteBatch {
            kind,
            db: req.db.clone(),
            collection,
            base,
            ordered,
            pending: (0..statements.len()).collect(),
            statements,
            stmt_ids,
            n: 0,
            n_modified: 0,
            upserted: Vec::new(),
            write_errors: Vec::new(),
            write_concern_error: None,
            retried: Vec::new(),
            done: BTreeMap::new(),
            moving: None,
        })
    }

    /// Runs the pending statements against `placement`: the stale refusal when some sub-batch
    /// was refused as stale (those statements stay pending for the next attempt).
    pub async fn run_pass(&mut self, state: &RouterState, placement: &Placement) -> Result<()> {
        let pending = std::mem::take(&mut self.pending);
        let mut targets = Vec::with_capacity(pending.len());
        for &index in &pending {
            match self.destination(placement, index) {
                Ok(Dest::Shards(mut shards)) => {
                    if let Some(done) = self.done.get(&index) {
                        shards.retain(|s| !done.contains(s));
                    }
                    if !shards.is_empty() {
                        targets.push((index, Dest::Shards(shards)));
                    }
                }
                Ok(target) => targets.push((index, target)),
                Err(e) => {
                    self.write_errors.push((index, e.to_write_error(index)));
                    if self.ordered {
                        // Statements before this one still run; none after it.
                        break;
                    }
                }
            }
        }
        let mut stale = None;
        let mut rounds = self.rounds(targets).into_iter();
        while let Some(round) = rounds.next() {
            let errors_before = self.write_errors.len();
            let (mut refused, mut round_stale) = match round {
                Round::SubBatches(by_shard) => self.send_round(state, placement, by_shard).await?,
                Round::TwoPhase(index, shards) => {
                    match self.two_phase(state, placement, index, &shards).await {
                        Ok(()) => (Vec::new(), None),
                        Err(s) if is_stale(&s) => (vec![index], Some(s)),
                        Err(e) => return Err(e),
                    }
                }
            };
            if let Some((index, s)) = self.settle_move(state, placement).await? {
                refused.push(index);
                round_stale = round_stale.or(Some(s));
            }
            stale = stale.or(round_stale);
            let refused_any = !refused.is_empty();
            self.pending.extend(refused);
            if self.ordered && (self.write_errors.len() > errors_before || refused_any) {
                // In order: nothing runs after an error; what follows a refused statement
                // waits for it (next pass).
                if self.write_errors.len() > errors_before {
                    self.pending.clear();
                } else {
                    for rest in rounds.by_ref() {
                        self.pending.extend(rest.indexes());
                    }
                }
                break;
            }
        }
        self.pending.dedup();
        self.pending.sort_unstable();
        match stale {
            Some(s) if !self.pending.is_empty() => Err(s),
            _ => Ok(()),
        }
    }

    /// Where statement `index` goes under `placement`.
    fn destination(&self, placement: &Placement, index: usize) -> Result<Dest> {
        let statement = &self.statements[index];
        if self.kind == WriteKind::Insert {
            let target = placement.target(By::Document(statement))?;
            return Ok(Dest::Shards(target.into_shards()));
        }
        let filter = match statement.get("q")? {
            Some(RawBsonRef::Document(q)) => Filter::Raw(Some(q)),
            _ => Filter::Raw(None),
        };
        let multi = match self.kind {
            WriteKind::Update => matches!(statement.get("multi")?, Some(RawBsonRef::Boolean(true))),
            // `limit: 0` deletes every match.
            _ => match statement.get("limit")? {
                Some(RawBsonRef::Int32(l)) => l == 0,
                Some(RawBsonRef::Int64(l)) => l == 0,
                Some(RawBsonRef::Double(l)) => l == 0.0,
                _ => false,
            },
        };
        let collation = match statement.get("collation")? {
            Some(value) => {
                crate::command::parse_collation(Some(&bson::Bson::try_from(value.to_raw_bson())?))?
            }
            None => None,
        };
        let collation = placement.collation_for(collation)?;
        let shards = match placement.target_under(By::Key(filter), collation.as_deref())? {
            Target::Primary(shard) | Target::One(shard) => return Ok(Dest::Shards(vec![shard])),
            Target::Some(shards) => shards,
        };
        let upsert = matches!(statement.get("upsert")?, Some(RawBsonRef::Boolean(true)));
        if upsert {
            let pattern = placement.routing.as_ref().map(|r| r.entry.key.pattern());
            return Err(MongoError::new(
                ErrorCode::ShardKeyNotFound,
                format!(
                    "Failed to target upsert by query :: could not extract exact shard key from the query for the shard key {}",
                    pattern
                        .map(crate::document::display::render_doc)
                        .unwrap_or_default()
                ),
            ));
        }
        Ok(if multi || shards.len() == 1 {
            Dest::Shards(shards)
        } else {
            Dest::TwoPhase(shards)
        })
    }

    /// Groups targeted statements into rounds sent one after the other. A shard's sub-batch
    /// holds at most [`WriteBatch::budget`] bytes of statements, as mongos splits its child
    /// batches: a client batch that fits `maxMessageSizeBytes` would not once the router adds
    /// its fields, so a full sub-batch starts a new round.
    fn rounds(&self, targets: Vec<(usize, Dest)>) -> Vec<Round> {
        let budget = self.budget();
        let mut rounds: Vec<Round> = Vec::new();
        // Bytes of statements per shard in the last round.
        let mut sizes: BTreeMap<String, usize> = BTreeMap::new();
        let mut two_phase = Vec::new();
        for (index, target) in targets {
            let shards = match target {
                Dest::TwoPhase(shards) if self.ordered => {
                    rounds.push(Round::TwoPhase(index, shards));
                    continue;
                }
                Dest::TwoPhase(shards) => {
                    two_phase.push(Round::TwoPhase(index, shards));
                    continue;
                }
                Dest::Shards(shards) => shards,
            };
            let size = self.statements[index].as_bytes().len();
            let fits = shards
                .iter()
                .all(|s| sizes.get(s).copied().unwrap_or(0) + size <= budget);
            // Unordered: one round for everything that fits. Ordered: a run continues while
            // statements go to the same single shard.
            let joins = match rounds.last_mut() {
                Some(Round::SubBatches(by_shard)) if fits && !self.ordered => Some(by_shard),
                Some(Round::SubBatches(by_shard))
                    if fits
                        && shards.len() == 1
                        && by_shard.len() == 1
                        && by_shard.contains_key(&shards[0]) =>
                {
                    Some(by_shard)
                }
                _ => None,
            };
            match joins {
                Some(by_shard) => {
                    for shard in shards {
                        *sizes.entry(shard.clone()).or_default() += size;
                        by_shard.entry(shard).or_default().push(index);
                    }
                }
                None => {
                    sizes = shards.iter().map(|s| (s.clone(), size)).collect();
                    rounds.push(Round::SubBatches(
                        shards.into_iter().map(|s| (s, vec![index])).collect(),
                    ))
                }
            }
        }
        rounds.extend(two_phase);
        rounds
    }

    /// Bytes of statements one sub-batch may carry: `maxMessageSizeBytes` less the command
    /// around them and room for what the router adds (versions, `$db`, the sequence header).
    fn budget(&self) -> usize {
        MAX_MESSAGE_SIZE
            .saturating_sub(self.base.as_bytes().len() + ROUTER_OVERHEAD)
            .max(1)
    }

    /// Sends one round's sub-batches at once; returns the statements a shard refused as stale
    /// (and the refusal).
    async fn send_round(
        &mut self,
        state: &RouterState,
        placement: &Placement,
        by_shard: BTreeMap<String, Vec<usize>>,
    ) -> Result<(Vec<usize>, Option<MongoError>)> {
        let this = &*self;
        let sends = by_shard.iter().map(|(shard, indexes)| async move {
            let req = this.sub_batch(indexes, None)?;
            state.call_shard(placement, shard, &req).await
        });
        let replies = futures::future::join_all(sends).await;
        let (mut refused, mut stale) = (Vec::new(), None);
        for ((shard, indexes), reply) in by_shard.into_iter().zip(replies) {
            let (_, reply) = reply?;
            let reply = match refuse_stale(reply) {
                Ok(reply) => reply,
                Err(s) => {
                    refused.extend(indexes);
                    stale = stale.or(Some(s));
                    continue;
                }
            };
            self.absorb(&reply, &indexes, &shard)?;
            // A statement sent to several shards is not sent again where it ran.
            for i in indexes {
                self.done.entry(i).or_default().push(shard.clone());
            }
        }
        Ok((refused, stale))
    }

    /// The command sending `indexes` (with statement `replace` substituted when given).
    fn sub_batch(
        &self,
        indexes: &[usize],
        replace: Option<&RawDocumentBuf>,
    ) -> Result<CommandRequest> {
        let mut body = self.base.clone();
        body.append("ordered", self.ordered);
        if let Some(ids) = &self.stmt_ids {
            let ids: Vec<Bson> = indexes.iter().map(|&i| Bson::Int32(ids[i])).collect();
            body.append("stmtIds", bson::RawBson::try_from(Bson::Array(ids))?);
        }
        // Statements travel as a document sequence, as drivers send them: the body stays a
        // small document whatever the batch's size.
        let statements = indexes
            .iter()
            .map(|&i| replace.unwrap_or(&self.statements[i]).clone())
            .collect();
        Ok(
            CommandRequest::new(self.db.clone(), body)?
                .with_sequence(self.kind.field(), statements),
        )
    }

    /// Merges a sub-batch reply from `shard`; `indexes[i]` is the batch index of its statement
    /// `i`.
    fn absorb(&mut self, reply: &RawDocumentBuf, indexes: &[usize], shard: &str) -> Result<()> {
        if let Some(e) = reply_error(reply)? {
            // An older `txnNumber` fails the command, as the session's checkout fails it
            // before any statement runs.
            if e.code() == ErrorCode::TransactionTooOld {
                return Err(e);
            }
            // The whole sub-batch failed (e.g. a bad command): every statement failed with it.
            for &i in indexes {
                self.write_errors.push((i, e.to_write_error(i)));
            }
            return Ok(());
        }
        self.n += reply_count(reply.get("n")?);
        self.n_modified += reply_count(reply.get("nModified")?);
        self.retried.extend(retried_stmt_ids(reply)?);
        let batch_index = |entry: &Document| {
            entry
                .get("index")
                .and_then(|i| i.as_i32().map(i64::from).or(i.as_i64()))
                .and_then(|i| indexes.get(i as usize).copied())
        };
        if let Some(RawBsonRef::Array(upserted)) = reply.get("upserted")? {
            for entry in upserted {
                let RawBsonRef::Document(entry) = entry? else {
                    continue;
                };
                let entry = Document::try_from(entry)?;
                if let (Some(i), Some(id)) = (batch_index(&entry), entry.get("_id")) {
                    self.upserted.push((i, id.clone()));
                }
            }
        }
        if let Some(RawBsonRef::Array(errors)) = reply.get("writeErrors")? {
            for entry in errors {
                let RawBsonRef::Document(entry) = entry? else {
                    continue;
                };
                let mut entry = Document::try_from(entry)?;
                let Some(i) = batch_index(&entry) else {
                    continue;
                };
                if entry.get_i32("code").is_ok_and(ShardKeyMove::is_refusal) {
                    if self.statements.len() == 1 {
                        if let Some(moving) = ShardKeyMove::from_error(shard, &entry) {
                            self.moving = Some((i, moving));
                            continue;
                        }
                    }
                    entry = doc! {
                        "code": ErrorCode::InvalidOptions.code(),
                        "errmsg": MOVE_NEEDS_BATCH_OF_ONE,
                    };
                }
                entry.insert("index", i as i32);
                self.write_errors.push((i, entry));
            }
        }
        if let (None, Some(RawBsonRef::Document(wce))) =
            (&self.write_concern_error, reply.get("writeConcernError")?)
        {
            self.write_concern_error = Some(Document::try_from(wce)?);
        }
        Ok(())
    }

    /// A single-document update or delete that could match on several shards: find the first
    /// matching document's `_id` (in the statement's `sort` order), then send the statement to
    /// its shard restricted to that `_id`. Nothing found: nothing matched. A stale refusal in
    /// either phase fails it (the statement stays pending).
    async fn two_phase(
        &mut self,
        state: &RouterState,
        placement: &Placement,
        index: usize,
        shards: &[String],
    ) -> Result<()> {
        let statement = self.statements[index].clone();
        if self.stmt_ids.is_some() {
            let probe = self.sub_batch(
                &[index],
                Some(&with_filter(&statement, "q", matches_nothing())?),
            )?;
            if let Some((shard, reply)) = executed_on(state, placement, shards, &probe).await? {
                return self.absorb(&reply, &[index], &shard);
            }
        }
        let filter = match statement.get("q")? {
            Some(RawBsonRef::Document(q)) => Document::try_from(q)?,
            _ => Document::new(),
        };
        let sort = match statement.get("sort")? {
            Some(RawBsonRef::Document(s)) => Some(Document::try_from(s)?),
            _ => None,
        };
        let found = first_match(
            state,
            placement,
            shards,
            &self.db,
            &self.collection,
            &filter,
            sort,
            &self.base,
        )
        .await?;
        let Some((shard, id)) = found else {
            return Ok(());
        };
        let narrowed = doc! {"$and": [filter, {"_id": id}]};
        let rewritten = with_filter(&statement, "q", narrowed)?;
        let req = self.sub_batch(&[index], Some(&rewritten))?;
        let (_, reply) = state.call_shard(placement, &shard, &req).await?;
        let reply = refuse_stale(reply)?;
        self.absorb(&reply, &[index], &shard)
    }

    /// Moves the document of a refused shard key update, if there is one, and counts the
    /// statement as the update it is; returns the statement and the staleness when the new
    /// owner refused it as stale (nothing moved: the statement runs again on the next pass).
    async fn settle_move(
        &mut self,
        state: &RouterState,
        placement: &Placement,
    ) -> Result<Option<(usize, MongoError)>> {
        let Some((index, moving)) = self.moving.take() else {
            return Ok(None);
        };
        let write_concern = match self.base.get("writeConcern")? {
            Some(RawBsonRef::Document(wc)) => Some(Document::try_from(wc)?),
            _ => None,
        };
        // What the client gets, recorded on the old owner for a retry (as a shard records an
        // update statement: `n` counts matched documents, an upsert matched none).
        let result = match moving.upsert {
            true => {
                let id = moving.post_image.get("_id").cloned().unwrap_or(Bson::Null);
                doc! {"n": 0_i64, "nModified": 0_i64, "upserted": id}
            }
            false => doc! {"n": 1_i64, "nModified": 1_i64},
        };
        let record = match &self.stmt_ids {
            Some(ids) => MoveRecord::of(&self.base, ids[index], result)?,
            None => None,
        };
        let outcome = moving
            .run(
                state,
                placement,
                &self.db,
                &self.collection,
                write_concern,
                record,
            )
            .await;
        match outcome {
            Err(stale) if is_stale(&stale) => {
                self.done.remove(&index);
                return Ok(Some((index, stale)));
            }
            Err(e) => return Err(e),
            Ok(MoveOutcome::Failed(failure)) => self
                .write_errors
                .push((index, failure.to_write_error(index))),
            Ok(MoveOutcome::Moved) if moving.upsert => {
                self.n += 1;
                let id = moving.post_image.get("_id").cloned().unwrap_or(Bson::Null);
                self.upserted.push((index, id));
            }
            Ok(MoveOutcome::Moved) => {
                self.n += 1;
                self.n_modified += 1;
            }
        }
        Ok(None)
    }

    /// The merged reply, as MongoDB shapes a write reply.
    pub fn reply(mut self) -> Result<RawDocumentBuf> {
        let mut reply = Document::new();
        reply.insert("n", narrow(self.n));
        if self.kind == WriteKind::Update {
            reply.insert("nModified", narrow(self.n_modified));
            if !self.upserted.is_empty() {
                self.upserted.sort_by_key(|(i, _)| *i);
                let upserted: Vec<Bson> = self
                    .upserted
                    .into_iter()
                    .map(|(i, id)| Bson::Document(doc! {"index": i as i32, "_id": id}))
                    .collect();
                reply.insert("upserted", upserted);
            }
        }
        if !self.write_errors.is_empty() {
            self.write_errors.sort_by_key(|(i, _)| *i);
            let errors: Vec<Bson> = self
                .write_errors
                .into_iter()
                .map(|(_, e)| Bson::Document(e))
                .collect();
            reply.insert("writeErrors", errors);
        }
        if !self.retried.is_empty() {
            self.retried.sort_unstable();
            self.retried.dedup();
            reply.insert("retriedStmtIds", self.retried);
        }
        if let Some(wce) = self.write_concern_error {
            reply.insert("writeConcernError", wce);
        }
        Ok(RawDocumentBuf::from_document(&reply)?)
    }
}

/// One round of a batch.
enum Round {
    /// Statement indexes per shard, sent at once.
    SubBatches(BTreeMap<String, Vec<usize>>),
    TwoPhase(usize, Vec<String>),
}

impl Round {
    fn indexes(&self) -> Vec<usize> {
        match self {
            Round::SubBatches(by_shard) => {
                let mut all: Vec<usize> = by_shard.values().flatten().copied().collect();
                all.sort_unstable();
                all.dedup();
                all
            }
            Round::TwoPhase(index, _) => vec![*index],
        }
    }
}

/// The `retriedStmtIds` of a shard's write reply.
pub fn retried_stmt_ids(reply: &RawDocument) -> Result<Vec<i32>> {
    let mut ids = Vec::new();
    if let Some(RawBsonRef::Array(listed)) = reply.get("retriedStmtIds")? {
        for id in listed {
            if let RawBsonRef::Int32(id) = id? {
                ids.push(id);
            }
        }
    }
    Ok(ids)
}

/// A filter no document matches, read from the `_id` index with no interval (no scan).
pub fn matches_nothing() -> Document {
    doc! {"_id": {"$in": []}}
}

/// `command` (a statement, or a findAndModify) with its filter field `field` replaced.
pub fn with_filter(command: &RawDocument, field: &str, filter: Document) -> Result<RawDocumentBuf> {
    let mut rewritten = RawDocumentBuf::new();
    for element in command {
        let (name, value) = element?;
        if name != field {
            rewritten.append_ref(name, value);
        }
    }
    rewritten.append(field, RawDocumentBuf::from_document(&filter)?);
    Ok(rewritten)
}

/// The retry of a retryable single-document write without the shard key: the shard that
/// executed its statement the first time, with the result it recorded then. `probe` is the
/// write with a filter matching nothing, sent to every shard the write could be on: a shard
/// that executed the statement answers its record (listing it as retried) without looking at
/// the filter, the others write nothing. Without it, the first phase of a retry would find the
/// next matching document, perhaps on another shard, and write a second document (MongoDB
/// runs both phases in a transaction of the session for the same reason).
pub async fn executed_on(
    state: &RouterState,
    placement: &Placement,
    shards: &[String],
    probe: &CommandRequest,
) -> Result<Option<(String, RawDocumentBuf)>> {
    for ShardReply { shard, reply, .. } in state.gather(placement, shards, probe).await? {
        let retried =
            !retried_stmt_ids(&reply)?.is_empty() || reply.get("retriedStmtId")?.is_some();
        if retried {
            return Ok(Some((shard, reply)));
        }
    }
    Ok(None)
}

/// Phase one of a single-document write without the shard key: the shard and `_id` of the
/// first document matching `filter` on `shards` (in `sort` order when given). `options` is the
/// write command, whose `let` and `collation` the lookup shares. A stale refusal fails it.
#[allow(clippy::too_many_arguments)]
pub async fn first_match(
    state: &RouterState,
    placement: &Placement,
    shards: &[String],
    db: &str,
    collection: &str,
    filter: &Document,
    sort: Option<Document>,
    options: &RawDocument,
) -> Result<Option<(String, Bson)>> {
    let sort = sort.filter(|s| !s.is_empty());
    let spec = sort.as_ref().map(SortSpec::parse).transpose()?;
    let mut projection = doc! {"_id": 1};
    let mut find =
        doc! {"find": collection, "filter": filter.clone(), "limit": 1, "singleBatch": true};
    if let Some(sort) = sort {
        projection.insert(SORT_KEY_FIELD, doc! {"$meta": "sortKey"});
        find.insert("sort", sort);
    }
    find.insert("projection", projection);
    for shared in ["let", "collation"] {
        if let Some(value) = options.get(shared)? {
            find.insert(shared, Bson::try_from(value.to_raw_bson())?);
        }
    }
    let req = CommandRequest::from_document(db, &find)?;
    let replies = state.gather(placement, shards, &req).await?;
    let mut best: Option<(Vec<Bson>, String, Bson)> = None;
    for ShardReply { shard, reply, .. } in replies {
        let first = reply.to_document()?;
        let Some(found) = crate::command::first_batch(&first).into_iter().next() else {
            continue;
        };
        let (key, found) = take_sort_key(&RawDocumentBuf::from_document(&found)?)?;
        let id = found
            .get("_id")?
            .map(|v| v.to_raw_bson())
            .map(Bson::try_from)
            .transpose()?;
        let Some(id) = id else { continue };
        let better = match (&best, &spec) {
            (None, _) => true,
            (Some((best_key, _, _)), Some(spec)) => {
                spec.compare_keys(&key, best_key) == Ordering::Less
            }
            (Some(_), None) => false,
        };
        if better {
            best = Some((key, shard, id));
        }
    }
    Ok(best.map(|(_, shard, id)| (shard, id)))
}

/// The `stmtId` of each of a retryable write's `count` statements (none outside one): the
/// `stmtIds` the command carries, or the statements' indexes, as MongoDB numbers them.
pub fn statement_ids(req: &CommandRequest, count: usize) -> Result<Option<Vec<i32>>> {
    if !matches!(req.body.get("txnNumber")?, Some(RawBsonRef::Int64(_))) {
        return Ok(None);
    }
    let Some(RawBsonRef::Array(listed)) = req.body.get("stmtIds")? else {
        return Ok(Some((0..count).map(|i| i as i32).collect()));
    };
    let mut ids = Vec::with_capacity(count);
    for id in listed {
        match id? {
            RawBsonRef::Int32(id) => ids.push(id),
            _ => {
                return Err(MongoError::type_mismatch(
                    "BSON field 'stmtIds' holds a value of the wrong type, expected type 'int'",
                ));
            }
        }
    }
    if ids.len() != count {
        return Err(MongoError::bad_value(format!(
            "The number of stmtIds ({}) does not match the number of statements ({count})",
            ids.len()
        )));
    }
    Ok(Some(ids))
}

/// An inserted document with an `_id` first: the router assigns missing ids, as mongos does,
/// so a shard key on `_id` can target the insert.
fn with_id(doc: &RawDocument) -> Result<RawDocumentBuf> {
    if doc.get("_id")?.is_some() {
        return Ok(doc.to_raw_document_buf());
    }
    let mut out = RawDocumentBuf::new();
    out.append("_id", bson::oid::ObjectId::new());
    for element in doc {
        let (name, value) = element?;
        out.append_ref(name, value);
    }
    Ok(out)
}

/// An int32 when it fits, as MongoDB replies counts.
fn narrow(n: i64) -> Bson {
    i32::try_from(n).map(Bson::Int32).unwrap_or(Bson::Int64(n))
}
