//! The client-level bulk write of MongoDB 8.0 ([`Client::bulk_write`], the bulk write spec):
//! inserts, updates, replaces and deletes on any namespaces, sent as `bulkWrite` commands on
//! `admin` with the writes in an `ops` document sequence and their namespaces in `nsInfo`.
//!
//! A bulk is split into as few commands as `maxWriteBatchSize` and `maxMessageSizeBytes`
//! allow; each command's results come back in a cursor, drained (with `getMore`s on the same
//! server and session) before the next command. Write errors and write concern errors are
//! gathered into one [`BulkWriteError`] with what succeeded before them; any other
//! error stops the bulk at once. A command is a retryable write unless it holds a
//! multi-document update or delete. A `timeoutMS` is one deadline for the whole bulk.

use futures_util::TryStreamExt;
use std::collections::{BTreeMap, HashMap};
use std::time::Duration;
use typed_builder::TypedBuilder;

use bson::{doc, Bson, Document, RawDocumentBuf};
use protocol::hello::reply::{bson_to_i64, bson_truthy};
use protocol::wire::DocumentSequence;
use serde::{Deserialize, Serialize};

use super::codec::encode;
use super::collection::Collection;
use super::concern::{duration_ms, WriteConcern};
use super::cursor::{Cursor, RawCursor};
use super::executor::operation::{cursor_id, Command, OpOutput, Operation, Shape, WIRE_VERSION_8_0};
use super::inner::Client;
use super::namespace::Namespace;
use super::op_options::{with_id, TimeoutMode};
use super::ops::cursor_reply::{CursorReply, Docs};
use super::ops::statement::check_modifications;
use super::options::crud::{Collation, Hint, UpdateModifications};
use super::options::write_model::{
    DeleteManyModel, DeleteOneModel, InsertOneModel, ReplaceOneModel, UpdateManyModel, UpdateOneModel,
    WriteModel,
};
use super::session::ClientSession;
use super::timeout;
use super::timeout::Limits;
use crate::client::results::{
    DeleteResult, InsertOneResult, PartialBulkWriteResult, SummaryBulkWriteResult, UpdateResult,
    VerboseBulkWriteResult,
};
use crate::error::{BulkWriteError, WriteConcernError, WriteError};
use crate::error::{Error, Result};
use protocol::reply::ServerError;

/// The most writes per `bulkWrite` command (the servers' `maxWriteBatchSize`).
const MAX_WRITES: usize = 100_000;

/// The servers' `maxMessageSizeBytes`.
const MAX_MESSAGE_BYTES: usize = 48_000_000;

/// Room left in a message for its header and the command-agnostic fields the executor adds
/// (`lsid`, `txnNumber`, `$clusterTime`...), as the spec says.
const MESSAGE_OVERHEAD_BYTES: usize = 1_000;

impl<T> Collection<T> {
    /// This collection's namespace.
    pub fn namespace(&self) -> Namespace {
        Namespace::new(self.database().name(), self.name())
    }

    /// An `UpdateOne` of this collection for [`Client::bulk_write`] (set its options on
    /// the model: `upsert`, `array_filters`, ...).
    pub fn update_one_model(
        &self,
        filter: Document,
        update: impl Into<UpdateModifications>,
    ) -> UpdateOneModel {
        UpdateOneModel { namespace: self.namespace(), ..UpdateOneModel::new(filter, update) }
    }

    /// An `UpdateMany` of this collection for [`Client::bulk_write`].
    pub fn update_many_model(
        &self,
        filter: Document,
        update: impl Into<UpdateModifications>,
    ) -> UpdateManyModel {
        UpdateManyModel { namespace: self.namespace(), ..UpdateManyModel::new(filter, update) }
    }

    /// A `DeleteOne` of this collection for [`Client::bulk_write`].
    pub fn delete_one_model(&self, filter: Document) -> DeleteOneModel {
        DeleteOneModel { namespace: self.namespace(), filter, collation: None, hint: None }
    }

    /// A `DeleteMany` of this collection for [`Client::bulk_write`].
    pub fn delete_many_model(&self, filter: Document) -> DeleteManyModel {
        DeleteManyModel { namespace: self.namespace(), filter, collation: None, hint: None }
    }
}

impl<T: Serialize + 'static> Collection<T> {
    /// An `InsertOne` of `document` into this collection for [`Client::bulk_write`]; a
    /// [`ErrorKind::BsonSerialization`](crate::error::ErrorKind::BsonSerialization) if it does not serialize to a document.
    pub fn insert_one_model(&self, document: impl std::borrow::Borrow<T>) -> Result<InsertOneModel> {
        let document = encode(document.borrow())?;
        Ok(InsertOneModel { namespace: self.namespace(), document })
    }

    /// A `ReplaceOne` of the document matching `filter` with `replacement`, for
    /// [`Client::bulk_write`].
    pub fn replace_one_model(
        &self,
        filter: Document,
        replacement: impl std::borrow::Borrow<T>,
    ) -> Result<ReplaceOneModel> {
        let replacement = encode(replacement.borrow())?;
        Ok(ReplaceOneModel { namespace: self.namespace(), filter, replacement, ..Default::default() })
    }
}

/// Options of [`Client::bulk_write`].
#[derive(TypedBuilder, Debug, Default, Clone, Serialize, Deserialize)]
#[builder(field_defaults(default, setter(into)))]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct BulkWriteOptions {
    /// Run the writes in order and stop at the first write error (`None`: `true`).
    pub ordered: Option<bool>,
    /// Skip document validation.
    pub bypass_document_validation: Option<bool>,
    /// Variables the filters and updates can use (`let`).
    #[serde(rename = "let")]
    pub let_vars: Option<Document>,
    /// The write concern (default: the client's).
    pub write_concern: Option<WriteConcern>,
    /// A comment for the server's logs.
    pub comment: Option<Bson>,
    /// Report each write's result, not only the totals (`None`: `false`). Set by
    /// [`BulkWrite::verbose_results`](crate::client::BulkWrite::verbose_results), which also changes the result's type.
    pub verbose_results: Option<bool>,
    /// This bulk's `timeoutMS`, one deadline for every command (`None`: the client's).
    #[serde(rename = "timeoutMS", with = "duration_ms")]
    pub timeout: Option<Duration>,
    /// Internal (MongoDB 8.2+): work on a time series collection's raw buckets. Meant for
    /// MongoDB's own tools; never sent to an older server.
    #[doc(hidden)]
    pub raw_data: Option<bool>,
}

/// Runs a client-level bulk write (see the module docs): checks its models and options,
/// splits it into `bulkWrite` commands that fit a message, runs them and gathers the results.
pub(crate) async fn run(
    client: &Client,
    models: Vec<WriteModel>,
    options: BulkWriteOptions,
    session: Option<&mut ClientSession>,
) -> Result<VerboseBulkWriteResult> {
    client.inner.check_open()?;
    let verbose = options.verbose_results.unwrap_or(false);
    let ordered = options.ordered.unwrap_or(true);
    let timeout = timeout::inherit(client.inner.settings.timeout, options.timeout);
    super::session::own_concerns::refuse_own_concerns(
        session.as_deref(),
        false,
        options.write_concern.is_some(),
    )?;
    let in_transaction = session.as_ref().is_some_and(|s| s.in_transaction());
    // In a transaction the statement is acknowledged: the write concern is the commit's.
    let write_concern = options
        .write_concern
        .as_ref()
        .or(client.inner.settings.write_concern.as_ref())
        .filter(|_| !in_transaction);
    let acknowledged = write_concern.is_none_or(WriteConcern::is_acknowledged);
    if models.is_empty() {
        return Err(Error::invalid_argument("bulk_write needs at least one write"));
    }
    if !acknowledged && verbose {
        return Err(Error::invalid_argument(
            "Cannot request unacknowledged write concern and verbose results",
        ));
    }
    if !acknowledged && ordered {
        return Err(Error::invalid_argument(
            "Cannot request unacknowledged write concern and ordered writes",
        ));
    }
    let write_concern = match write_concern {
        Some(wc) => {
            wc.validate()?;
            wc.to_document(timeout.is_some())
        }
        None => None,
    };
    let mut command = doc! {"bulkWrite": 1, "errorsOnly": !verbose, "ordered": ordered};
    append(&mut command, "bypassDocumentValidation", options.bypass_document_validation);
    append(&mut command, "comment", options.comment);
    append(&mut command, "let", options.let_vars);
    append(&mut command, "rawData", options.raw_data);
    append(&mut command, "writeConcern", write_concern);
    let command_bytes = crate::bson_compat::serialize_to_vec(&command).map_or(0, |v| v.len());
    let room = MAX_MESSAGE_BYTES - MESSAGE_OVERHEAD_BYTES - command_bytes;
    let (writes, batches) = prepare(models, room)?;
    let mut run = Gather {
        client,
        writes,
        verbose,
        ordered,
        acknowledged,
        timeout,
        deadline: timeout::deadline(timeout),
        results: VerboseBulkWriteResult {
            summary: SummaryBulkWriteResult { acknowledged, ..Default::default() },
            ..Default::default()
        },
        succeeded: false,
        write_errors: BTreeMap::new(),
        write_concern_errors: Vec::new(),
    };
    let mut session = session;
    for batch in batches {
        let stop = run.batch(batch, &command, session.as_deref_mut()).await?;
        if stop {
            break;
        }
    }
    run.finish()
}

fn append(d: &mut Document, key: &str, v: Option<impl Into<Bson>>) {
    if let Some(v) = v {
        d.insert(key, v.into());
    }
}

/// What kind of write a model is, for reading its result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Insert,
    Update,
    Delete,
}

/// A model as the command sends it.
struct PreparedWrite {
    namespace: Namespace,
    /// The `ops` document, with its namespace index still to set (a placeholder 0 first).
    op: Document,
    kind: Kind,
    multi: bool,
    /// An insert's `_id`.
    inserted_id: Option<Bson>,
}

/// One command's writes: the first model's index, how many, and whether any is multi.
struct BatchPlan {
    start: usize,
    ops: Vec<RawDocumentBuf>,
    ns_info: Vec<RawDocumentBuf>,
    multi: bool,
}

/// Checks and encodes every model, then splits them into commands of at most
/// [`MAX_WRITES`] writes and `room` bytes of `ops` and `nsInfo` (the spec's batching: a
/// command's `nsInfo` names only its own writes' namespaces).
fn prepare(models: Vec<WriteModel>, room: usize) -> Result<(Vec<PreparedWrite>, Vec<BatchPlan>)> {
    let writes = models.into_iter().map(prepare_one).collect::<Result<Vec<_>>>()?;
    let mut batches: Vec<BatchPlan> = Vec::new();
    let mut current = BatchPlan::starting_at(0);
    let mut indexes: HashMap<&Namespace, i32> = HashMap::new();
    let mut bytes = 0usize;
    for (i, w) in writes.iter().enumerate() {
        let (mut op, mut ns) = encode_write(w, &indexes, current.ns_info.len())?;
        let mut added = encoded_len(&op, ns.as_ref());
        if !current.ops.is_empty() && (current.ops.len() >= MAX_WRITES || bytes + added > room) {
            batches.push(std::mem::replace(&mut current, BatchPlan::starting_at(i)));
            indexes.clear();
            bytes = 0;
            // Its namespace is the new command's first.
            (op, ns) = encode_write(w, &indexes, 0)?;
            added = encoded_len(&op, ns.as_ref());
        }
        if added > room {
            return Err(Error::invalid_argument(format!(
                    "write {i} is {added} bytes with its namespace: more than one bulkWrite command holds ({room} bytes)"
                )));
        }
        bytes += added;
        if let Some(ns) = ns {
            indexes.insert(&w.namespace, current.ns_info.len() as i32);
            current.ns_info.push(ns);
        }
        current.ops.push(op);
        current.multi |= w.multi;
    }
    batches.push(current);
    Ok((writes, batches))
}

impl BatchPlan {
    fn starting_at(start: usize) -> Self {
        BatchPlan { start, ops: Vec::new(), ns_info: Vec::new(), multi: false }
    }
}

fn encoded_len(op: &RawDocumentBuf, ns: Option<&RawDocumentBuf>) -> usize {
    op.as_bytes().len() + ns.map_or(0, |d| d.as_bytes().len())
}

/// The `ops` document of `w` (with its namespace's index in the batch), and the `nsInfo`
/// document to add when the batch does not have its namespace yet.
fn encode_write(
    w: &PreparedWrite,
    indexes: &HashMap<&Namespace, i32>,
    next: usize,
) -> Result<(RawDocumentBuf, Option<RawDocumentBuf>)> {
    let (index, ns_doc) = match indexes.get(&w.namespace) {
        Some(i) => (*i, None),
        None => (next as i32, Some(doc! {"ns": w.namespace.to_string()})),
    };
    let mut op = w.op.clone();
    let key = match w.kind {
        Kind::Insert => "insert",
        Kind::Update => "update",
        Kind::Delete => "delete",
    };
    op.insert(key, index);
    let raw = |d: &Document| RawDocumentBuf::try_from(d).map_err(|e| Error::serialization(e.to_string()));
    Ok((raw(&op)?, ns_doc.as_ref().map(raw).transpose()?))
}

/// Checks a model and builds its `ops` document (the first key, the operation's name, is
/// set per batch).
fn prepare_one(model: WriteModel) -> Result<PreparedWrite> {
    let namespace = model.namespace().clone();
    if namespace.db.is_empty() || namespace.coll.is_empty() {
        return Err(Error::invalid_argument("a client bulk write's model needs a namespace (db.collection)"));
    }
    let mut inserted_id = None;
    let (kind, multi, op) = match model {
        WriteModel::InsertOne(InsertOneModel { document, .. }) => {
            let (document, id) = with_id(document);
            inserted_id = Some(id);
            (Kind::Insert, false, doc! {"insert": 0, "document": document})
        }
        WriteModel::UpdateOne(m) => {
            check_modifications(&m.update)?;
            let mut op = update_op(m.filter, m.update.into(), false, m.upsert, m.hint, m.collation);
            append(&mut op, "arrayFilters", m.array_filters);
            append(&mut op, "sort", m.sort);
            (Kind::Update, false, op)
        }
        WriteModel::UpdateMany(m) => {
            check_modifications(&m.update)?;
            let mut op = update_op(m.filter, m.update.into(), true, m.upsert, m.hint, m.collation);
            append(&mut op, "arrayFilters", m.array_filters);
            (Kind::Update, true, op)
        }
        WriteModel::ReplaceOne(m) => {
            super::op_options::check_replacement(&m.replacement)?;
            let mut op = update_op(m.filter, m.replacement.into(), false, m.upsert, m.hint, m.collation);
            append(&mut op, "sort", m.sort);
            (Kind::Update, false, op)
        }
        WriteModel::DeleteOne(m) => (Kind::Delete, false, delete_op(m.filter, false, m.hint, m.collation)),
        WriteModel::DeleteMany(m) => (Kind::Delete, true, delete_op(m.filter, true, m.hint, m.collation)),
    };
    Ok(PreparedWrite { namespace, op, kind, multi, inserted_id })
}

/// An `update` op (updates and replaces): `updateMods` and the options they all take.
fn update_op(
    filter: Document,
    mods: Bson,
    multi: bool,
    upsert: Option<bool>,
    hint: Option<Hint>,
    collation: Option<Collation>,
) -> Document {
    let mut op = doc! {"update": 0, "filter": filter, "updateMods": mods, "multi": multi};
    append(&mut op, "upsert", upsert);
    append(&mut op, "hint", hint);
    append(&mut op, "collation", collation);
    op
}

/// A `delete` op.
fn delete_op(filter: Document, multi: bool, hint: Option<Hint>, collation: Option<Collation>) -> Document {
    let mut op = doc! {"delete": 0, "filter": filter, "multi": multi};
    append(&mut op, "hint", hint);
    append(&mut op, "collation", collation);
    op
}

/// One `bulkWrite` command: the command fields and the batch's two document sequences. A
/// retryable write unless a write is multi.
struct BulkWriteOp<'c> {
    command: &'c Document,
    ops: Vec<RawDocumentBuf>,
    ns_info: Vec<RawDocumentBuf>,
    multi: bool,
}

impl Operation for BulkWriteOp<'_> {
    /// The results cursor, and the reply's counts.
    type Output = (CursorReply, Counts);

    fn shape(&self) -> Shape<'_> {
        let shape = Shape::write("bulkWrite", "admin").cursor().requires(
            WIRE_VERSION_8_0,
            "the bulkWrite command (Client::bulk_write) needs MongoDB 8.0 or later",
        );
        if self.multi {
            shape.once()
        } else {
            shape
        }
    }

    fn build(&mut self) -> Result<Command> {
        Ok(self.command.clone().into())
    }

    fn sequences(&mut self) -> Result<Vec<DocumentSequence>> {
        Ok(vec![
            DocumentSequence::new("ops", std::mem::take(&mut self.ops)),
            DocumentSequence::new("nsInfo", std::mem::take(&mut self.ns_info)),
        ])
    }

    fn handle_reply(self, out: OpOutput) -> Result<(CursorReply, Counts)> {
        let counts = Counts::read(&out.reply);
        // Unacknowledged: sent with moreToCome, no reply and so no cursor to read.
        if super::concern::has_unacknowledged_write_concern(self.command) {
            let cursor = CursorReply {
                address: out.address,
                db: "admin".into(),
                collection: "$cmd.bulkWrite".into(),
                id: 0,
                batch: Default::default(),
                session: out.session,
                connection: out.connection,
                post_batch_resume_token: None,
                operation_time: None,
            };
            return Ok((cursor, counts));
        }
        Ok((CursorReply::read(out, "admin", "$cmd.bulkWrite")?, counts))
    }
}

/// The counts of a `bulkWrite` reply.
#[derive(Debug, Default, Clone, Copy)]
struct Counts {
    errors: i64,
    inserted: i64,
    upserted: i64,
    matched: i64,
    modified: i64,
    deleted: i64,
}

impl Counts {
    fn read(reply: &Document) -> Counts {
        Counts {
            errors: count_of(reply, "nErrors"),
            inserted: count_of(reply, "nInserted"),
            upserted: count_of(reply, "nUpserted"),
            matched: count_of(reply, "nMatched"),
            modified: count_of(reply, "nModified"),
            deleted: count_of(reply, "nDeleted"),
        }
    }
}

/// A bulk's progress: its writes, and what their results and errors have been so far.
struct Gather<'a> {
    client: &'a Client,
    writes: Vec<PreparedWrite>,
    verbose: bool,
    ordered: bool,
    acknowledged: bool,
    timeout: Option<Duration>,
    deadline: Option<tokio::time::Instant>,
    results: VerboseBulkWriteResult,
    /// Some write is known to have succeeded (the spec's rule for a partial result).
    succeeded: bool,
    write_errors: BTreeMap<usize, WriteError>,
    write_concern_errors: Vec<WriteConcernError>,
}

impl Gather<'_> {
    /// Runs one command and reads its results; `Ok(true)`: an ordered bulk hit a write error
    /// and stops. A top-level error ends the bulk (`Err`).
    async fn batch(
        &mut self,
        batch: BatchPlan,
        command: &Document,
        mut session: Option<&mut ClientSession>,
    ) -> Result<bool> {
        let BatchPlan { start, ops, ns_info, multi } = batch;
        let count = ops.len();
        let op = BulkWriteOp { command, ops, ns_info, multi };
        let limits = Limits::until(self.timeout, self.deadline);
        let (reply, counts) =
            match super::executor::run(self.client, op, limits, session.as_deref_mut()).await {
                Ok(reply) => reply,
                // `ok: 1` with a writeConcernError: the writes ran; their results are in the reply.
                Err(e) => match e.into_write_reply() {
                    Ok((address, error)) => {
                        let ServerError { write_concern_error, response, .. } = error;
                        self.write_concern_errors.extend(write_concern_error.as_ref().map(Into::into));
                        let (id, batch) = first_batch(&response);
                        let cursor = CursorReply {
                            address,
                            db: "admin".into(),
                            collection: "$cmd.bulkWrite".into(),
                            id,
                            batch,
                            session: None,
                            connection: None,
                            post_batch_resume_token: None,
                            operation_time: None,
                        };
                        (cursor, Counts::read(&response))
                    }
                    Err(e) => return Err(self.fail(e)),
                },
            };
        if !self.acknowledged {
            return Ok(false);
        }
        let n_errors = usize::try_from(counts.errors).unwrap_or(0);
        let mut raw = match RawCursor::new(self.client.clone(), reply, None).await {
            Ok(raw) => raw,
            Err(e) => return Err(self.fail(e)),
        };
        raw.set_timeout(self.timeout, TimeoutMode::CursorLifetime, self.deadline);
        if let Some(s) = session.filter(|s| s.in_transaction()) {
            raw.join_transaction(s.transaction_pin());
        }
        let mut cursor: Cursor<Document> = Cursor::new(raw);
        let mut first_error: Option<usize> = None;
        let mut batch_succeeded = n_errors == 0 || (!self.ordered && n_errors < count);
        loop {
            let item = match cursor.try_next().await {
                Ok(Some(item)) => item,
                Ok(None) => break,
                Err(e) => {
                    // The counts are recorded only if some write is known to have succeeded.
                    self.add_counts(counts, batch_succeeded);
                    return Err(self.fail(e));
                }
            };
            let Some(idx) = item.get("idx").and_then(bson_index) else { continue };
            let index = start + idx;
            if item.get("ok").and_then(bson_truthy).unwrap_or(false) {
                self.record_success(index, &item);
            } else {
                first_error = Some(first_error.map_or(idx, |f| f.min(idx)));
                self.write_errors.insert(index, write_error(&item));
            }
        }
        if self.ordered && n_errors > 0 && first_error.is_some_and(|f| f > 0) {
            batch_succeeded = true;
        }
        self.add_counts(counts, batch_succeeded);
        Ok(self.ordered && !self.write_errors.is_empty())
    }

    fn add_counts(&mut self, c: Counts, succeeded: bool) {
        if !succeeded {
            return;
        }
        self.succeeded = true;
        let s = &mut self.results.summary;
        // Counts from the server saturate: a lying reply cannot overflow the sums.
        s.inserted_count = s.inserted_count.saturating_add(c.inserted);
        s.upserted_count = s.upserted_count.saturating_add(c.upserted);
        s.matched_count = s.matched_count.saturating_add(c.matched);
        s.modified_count = s.modified_count.saturating_add(c.modified);
        s.deleted_count = s.deleted_count.saturating_add(c.deleted);
    }

    /// A verbose result (`ok: 1`) of write `index`.
    fn record_success(&mut self, index: usize, item: &Document) {
        if !self.verbose {
            return;
        }
        let Some(w) = self.writes.get(index) else { return };
        let n = u64::try_from(count_of(item, "n")).unwrap_or(0);
        match w.kind {
            Kind::Insert => {
                if let Some(id) = &w.inserted_id {
                    self.results.insert_results.insert(index, InsertOneResult { inserted_id: id.clone() });
                }
            }
            Kind::Update => {
                let upserted_id = item.get_document("upserted").ok().and_then(|u| u.get("_id")).cloned();
                let modified_count = u64::try_from(count_of(item, "nModified")).unwrap_or(0);
                self.results
                    .update_results
                    .insert(index, UpdateResult { matched_count: n, modified_count, upserted_id });
            }
            Kind::Delete => {
                self.results.delete_results.insert(index, DeleteResult { deleted_count: n });
            }
        }
    }

    /// The error of a bulk stopped by `e`: `e` itself when nothing came back before it.
    fn fail(&mut self, e: Error) -> Error {
        if !self.succeeded && self.write_errors.is_empty() && self.write_concern_errors.is_empty() {
            return e;
        }
        let payload = BulkWriteError {
            write_concern_errors: std::mem::take(&mut self.write_concern_errors),
            write_errors: std::mem::take(&mut self.write_errors).into_iter().collect(),
            partial_result: self.partial(),
        };
        Error::client_bulk(payload, Some(e))
    }

    fn partial(&mut self) -> Option<PartialBulkWriteResult> {
        if !self.succeeded {
            return None;
        }
        let results = std::mem::take(&mut self.results);
        Some(if self.verbose {
            PartialBulkWriteResult::Verbose(results)
        } else {
            PartialBulkWriteResult::Summary(results.summary)
        })
    }

    fn finish(mut self) -> Result<VerboseBulkWriteResult> {
        if self.write_errors.is_empty() && self.write_concern_errors.is_empty() {
            return Ok(self.results);
        }
        let payload = BulkWriteError {
            write_concern_errors: std::mem::take(&mut self.write_concern_errors),
            write_errors: std::mem::take(&mut self.write_errors).into_iter().collect(),
            partial_result: self.partial(),
        };
        Err(Error::client_bulk(payload, None))
    }
}

/// The cursor id and first batch of a `bulkWrite` reply.
fn first_batch(reply: &Document) -> (i64, Docs) {
    let docs: Vec<bson::RawDocumentBuf> = reply
        .get_document("cursor")
        .and_then(|c| c.get_array("firstBatch"))
        .map(|a| {
            a.iter()
                .filter_map(Bson::as_document)
                .filter_map(|d| bson::RawDocumentBuf::try_from(d).ok())
                .collect()
        })
        .unwrap_or_default();
    (cursor_id(reply), Docs::from_documents(docs))
}

/// A result document's write error (`ok: 0`).
fn write_error(item: &Document) -> WriteError {
    WriteError {
        code: item.get("code").and_then(bson_to_i64).and_then(|c| i32::try_from(c).ok()).unwrap_or(0),
        code_name: item.get_str("codeName").ok().map(str::to_string),
        message: item.get_str("errmsg").unwrap_or_default().to_string(),
        details: item.get_document("errInfo").ok().cloned(),
    }
}

fn bson_index(v: &Bson) -> Option<usize> {
    bson_to_i64(v).and_then(|n| usize::try_from(n).ok())
}

/// A count field as the spec's `Int64`.
fn count_of(d: &Document, key: &str) -> i64 {
    i64::try_from(super::op_options::count_of(d, key)).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn insert(ns: &str, x: i32) -> WriteModel {
        let document = doc! {"_id": x, "pad": "p".repeat(50)};
        WriteModel::InsertOne(InsertOneModel { namespace: ns.parse().expect("namespace"), document })
    }

    fn ns_of(b: &BatchPlan) -> Vec<String> {
        b.ns_info
            .iter()
            .map(|d| Document::try_from(d.as_ref()).expect("doc").get_str("ns").expect("ns").to_owned())
            .collect()
    }

    fn index_of(op: &RawDocumentBuf) -> i32 {
        Document::try_from(op.as_ref()).expect("doc").get_i32("insert").expect("index")
    }

    #[test]
    fn batches_split_by_bytes_and_name_only_their_own_namespaces() {
        let models = vec![insert("db.a", 1), insert("db.b", 2), insert("db.a", 3), insert("db.c", 4)];
        let one = prepare_one(insert("db.a", 0)).expect("prepared");
        let (op, ns) = encode_write(&one, &HashMap::new(), 0).expect("encoded");
        // Room for two writes with their namespaces, not three.
        let room = 2 * encoded_len(&op, ns.as_ref()) + 10;
        let (writes, batches) = prepare(models, room).expect("prepare");
        assert_eq!(writes.len(), 4);
        assert_eq!(batches.iter().map(|b| (b.start, b.ops.len())).collect::<Vec<_>>(), [(0, 2), (2, 2)]);
        assert_eq!(ns_of(&batches[0]), ["db.a", "db.b"]);
        // The second command starts its nsInfo over: db.a is its index 0 again.
        assert_eq!(ns_of(&batches[1]), ["db.a", "db.c"]);
        assert_eq!(batches[1].ops.iter().map(index_of).collect::<Vec<_>>(), [0, 1]);
        assert!(!batches[0].multi);
    }

    #[test]
    fn a_write_larger_than_a_command_is_refused() {
        let e = prepare(vec![insert("db.a", 1)], 20).err().expect("too large");
        assert!(matches!(*e.kind, crate::error::ErrorKind::InvalidArgument { .. }), "{e}");
        let e = prepare(
            vec![WriteModel::UpdateOne(UpdateOneModel::new(doc! {}, doc! {"x": 1}))
                .on(Namespace::new("db", "a"))],
            1_000,
        )
        .err()
        .expect("an update needs operators");
        assert!(matches!(*e.kind, crate::error::ErrorKind::InvalidArgument { .. }), "{e}");
    }

    #[test]
    fn namespaces_parse_print_and_serialize_as_db_dot_coll() {
        let ns: Namespace = "db.coll.with.dots".parse().expect("namespace");
        assert_eq!((ns.db.as_str(), ns.coll.as_str()), ("db", "coll.with.dots"));
        assert_eq!(ns.to_string(), "db.coll.with.dots");
        assert!("nodot".parse::<Namespace>().is_err());
        assert!(".coll".parse::<Namespace>().is_err());
        let b = crate::bson_compat::serialize_to_bson(&ns).expect("serialize");
        assert_eq!(b, Bson::String("db.coll.with.dots".into()));
        assert_eq!(crate::bson_compat::deserialize_from_bson::<Namespace>(b).expect("deserialize"), ns);
    }
}
