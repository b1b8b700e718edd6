//! The CRUD spec's collection-level `bulkWrite`: a list of inserts, updates, replaces and
//! deletes sent as few `insert`/`update`/`delete` commands as the order allows.
//!
//! Ordered (the default): consecutive models of the same kind share a command, commands run
//! in order, and the first write error stops the bulk. Unordered: models are grouped by kind
//! (inserts, then updates, then deletes) and every command runs; the write errors of all of
//! them are reported together. A `timeoutMS` is one deadline for the whole bulk. Each
//! command is a retryable write unless it holds a multi-document update or delete.

use std::time::Duration;

use bson::{doc, Bson, Document};

use serde::{Deserialize, Serialize};

use super::collection::Handle;
use super::concern::{duration_ms, WriteConcern};
use super::op_options::with_id;
use super::ops::statement::{check_modifications, delete_statement, UpdateStatement};
use super::ops::write::{option_fields, too_large, WriteKind, WriteReply, MAX_STATEMENT_BYTES};
use super::options::write_model::{InsertOneModel, WriteModel};
use super::session::ClientSession;
use super::timeout;
use super::timeout::Limits;
use crate::client::results::BulkWriteResult;
use crate::error::{Error, Result};
use protocol::reply::{ServerError, WriteConcernError, WriteError};

/// The most statements per command (the servers' `maxWriteBatchSize`).
const MAX_BATCH: usize = 100_000;

/// The most statement bytes per command: the statements travel as an OP_MSG document
/// sequence, so a message holds up to `maxMessageSizeBytes` (48,000,000); 16 KiB are left for
/// the command's body and the message framing.
const MAX_BATCH_BYTES: usize = 48_000_000 - 16 * 1024;

impl WriteModel {
    fn kind(&self) -> WriteKind {
        match self {
            WriteModel::InsertOne(_) => WriteKind::Insert,
            WriteModel::DeleteOne(_) | WriteModel::DeleteMany(_) => WriteKind::Delete,
            _ => WriteKind::Update,
        }
    }

    /// The command statement, the generated `_id` of an insert, and whether it is multi.
    fn statement(self) -> Result<(Document, Option<Bson>, bool)> {
        Ok(match self {
            WriteModel::InsertOne(InsertOneModel { document, .. }) => {
                let (d, id) = with_id(document);
                (d, Some(id), false)
            }
            WriteModel::UpdateOne(m) => {
                check_modifications(&m.update)?;
                let s = UpdateStatement {
                    filter: m.filter,
                    update: m.update.into(),
                    multi: false,
                    upsert: m.upsert,
                    array_filters: m.array_filters,
                    collation: m.collation,
                    hint: m.hint,
                    sort: m.sort,
                };
                (s.into_document(), None, false)
            }
            WriteModel::UpdateMany(m) => {
                check_modifications(&m.update)?;
                let s = UpdateStatement {
                    filter: m.filter,
                    update: m.update.into(),
                    multi: true,
                    upsert: m.upsert,
                    array_filters: m.array_filters,
                    collation: m.collation,
                    hint: m.hint,
                    sort: None,
                };
                (s.into_document(), None, true)
            }
            WriteModel::ReplaceOne(m) => {
                super::op_options::check_replacement(&m.replacement)?;
                let s = UpdateStatement {
                    filter: m.filter,
                    update: Bson::Document(m.replacement),
                    multi: false,
                    upsert: m.upsert,
                    array_filters: None,
                    collation: m.collation,
                    hint: m.hint,
                    sort: m.sort,
                };
                (s.into_document(), None, false)
            }
            WriteModel::DeleteOne(m) => (delete_statement(m.filter, false, m.collation, m.hint), None, false),
            WriteModel::DeleteMany(m) => (delete_statement(m.filter, true, m.collation, m.hint), None, true),
        })
    }
}

/// Options of [`Collection::bulk_write`](crate::client::Collection::bulk_write).
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct CollectionBulkWriteOptions {
    /// Skip document validation.
    pub bypass_document_validation: Option<bool>,
    /// A comment for the server's logs.
    pub comment: Option<Bson>,
    /// Variables the filters and updates can use (`let`).
    #[serde(rename = "let")]
    pub let_vars: Option<Document>,
    /// Stop at the first write error, running the writes in order (`None`: `true`).
    pub ordered: Option<bool>,
    /// The write concern (default: the collection's).
    pub write_concern: Option<WriteConcern>,
    /// This bulk's `timeoutMS`, one deadline for every command (`None`: the handle's).
    #[serde(rename = "timeoutMS", with = "duration_ms")]
    pub timeout: Option<Duration>,
    /// Internal (MongoDB 8.2+): work on a time series collection's raw buckets. Meant for
    /// MongoDB's own tools (the CRUD spec asks drivers to discourage its use); never sent to
    /// an older server.
    #[doc(hidden)]
    pub raw_data: Option<bool>,
}

/// Statements of one command, with the model index of each.
pub(crate) struct Batch {
    pub kind: WriteKind,
    pub statements: Vec<bson::RawDocumentBuf>,
    pub indexes: Vec<usize>,
    pub multi: bool,
    /// The statements' encoded size.
    pub bytes: usize,
}

/// Adds `statement` (model `index`) to the last batch when it is of the same kind and has
/// room (at most [`MAX_BATCH`] statements and [`MAX_BATCH_BYTES`]), else to a new batch.
pub(crate) fn push_statement(
    out: &mut Vec<Batch>,
    kind: WriteKind,
    statement: bson::RawDocumentBuf,
    index: usize,
    multi: bool,
) -> Result<()> {
    let size = statement.as_bytes().len();
    if size > MAX_STATEMENT_BYTES {
        return Err(too_large(index, size));
    }
    match out.last_mut() {
        Some(b) if b.kind == kind && b.statements.len() < MAX_BATCH && b.bytes + size <= MAX_BATCH_BYTES => {
            b.statements.push(statement);
            b.indexes.push(index);
            b.multi |= multi;
            b.bytes += size;
        }
        _ => out.push(Batch { kind, statements: vec![statement], indexes: vec![index], multi, bytes: size }),
    }
    Ok(())
}

/// Groups the models into commands: consecutive same-kind models when ordered, by kind
/// otherwise.
fn batches(models: Vec<WriteModel>, ordered: bool, result: &mut BulkWriteResult) -> Result<Vec<Batch>> {
    let mut tagged: Vec<(usize, WriteModel)> = models.into_iter().enumerate().collect();
    if !ordered {
        // A stable sort keeps each kind's models in their order.
        tagged.sort_by_key(|(_, m)| m.kind());
    }
    let mut out: Vec<Batch> = Vec::new();
    for (index, model) in tagged {
        let kind = model.kind();
        let (statement, id, multi) = model.statement()?;
        if let Some(id) = id {
            result.inserted_ids.insert(index, id);
        }
        push_statement(&mut out, kind, super::codec::to_raw(&statement)?, index, multi)?;
    }
    Ok(out)
}

/// A collection's bulk write writes to that collection: a model names it, or no namespace.
fn check_namespaces(models: &[WriteModel], db: &str, coll: &str) -> Result<()> {
    let elsewhere = models.iter().enumerate().find(|(_, m)| {
        let ns = m.namespace();
        !(ns.db.is_empty() && ns.coll.is_empty()) && (ns.db != db || ns.coll != coll)
    });
    match elsewhere {
        Some((i, m)) => Err(Error::invalid_argument(format!(
            "write {i} is on {}, not on {db}.{coll}: Collection::bulk_write writes to its own collection (Client::bulk_write writes anywhere)",
            m.namespace()
        ))),
        None => Ok(()),
    }
}

/// Runs a collection's bulk write (see the module docs): groups the models into commands and
/// runs them under one `timeoutMS`.
pub(crate) async fn run(
    handle: Handle<'_>,
    models: Vec<WriteModel>,
    options: CollectionBulkWriteOptions,
    session: Option<&mut ClientSession>,
) -> Result<BulkWriteResult> {
    let timeout =
        handle.begin(session.as_deref(), false, options.write_concern.is_some(), options.timeout)?;
    if models.is_empty() {
        return Err(Error::invalid_argument("bulk_write needs at least one write"));
    }
    check_namespaces(&models, handle.db.name(), handle.coll)?;
    let ordered = options.ordered.unwrap_or(true);
    let mut result = BulkWriteResult::default();
    let batches = batches(models, ordered, &mut result)?;
    let extra = option_fields(
        options.bypass_document_validation,
        options.comment,
        options.let_vars,
        options.raw_data,
    );
    let write_concern = handle.write_concern_doc(options.write_concern.as_ref(), timeout)?;
    let run = RunBatches { handle, ordered, extra, write_concern, timeout };
    run.run(batches, result, session).await
}

/// Keeps the `_id`s of the inserts that ran: not those that failed, nor (ordered) those after
/// the first failure, nor those `unconfirmed` (of the batch an error stopped, or after it).
fn keep_inserted_ids(
    result: &mut BulkWriteResult,
    write_errors: &[WriteError],
    ordered: bool,
    unconfirmed: &[usize],
) {
    let first = write_errors.iter().map(|e| e.index).min();
    result.inserted_ids.retain(|i, _| {
        let failed = write_errors.iter().any(|e| e.index == *i);
        let never_ran = ordered && first.is_some_and(|f| *i > f);
        !(failed || never_ran || unconfirmed.contains(i))
    });
}

/// How a bulk's commands run: where, in order or not, with which command-level fields and
/// write concern, under one `timeoutMS`.
pub(crate) struct RunBatches<'a> {
    pub handle: Handle<'a>,
    pub ordered: bool,
    pub extra: Document,
    pub write_concern: Option<Document>,
    pub timeout: Option<Duration>,
}

impl RunBatches<'_> {
    /// Runs `batches` one command each, adding their counts to `result`.
    pub(crate) async fn run(
        self,
        batches: Vec<Batch>,
        mut result: BulkWriteResult,
        mut session: Option<&mut ClientSession>,
    ) -> Result<BulkWriteResult> {
        let RunBatches { handle, ordered, extra, write_concern, timeout } = self;
        let deadline = timeout::deadline(timeout);
        let mut write_errors: Vec<WriteError> = Vec::new();
        let mut write_concern_error: Option<WriteConcernError> = None;
        let mut failure: Option<(protocol::ServerAddress, Vec<String>)> = None;
        let mut batches = batches.into_iter();
        while let Some(batch) = batches.next() {
            let op = handle.write(
                batch.kind,
                batch.statements,
                ordered,
                batch.multi,
                write_concern.clone(),
                extra.clone(),
            );
            let limits = Limits::until(timeout, deadline);
            let (reply, stop) =
                match super::executor::run(handle.client(), op, limits, session.as_deref_mut()).await {
                    Ok(reply) => (reply, false),
                    Err(e) => match e.into_write_reply() {
                        Ok((address, error)) => {
                            let ServerError {
                                write_errors: errors,
                                write_concern_error: wce,
                                labels,
                                response,
                                ..
                            } = error;
                            let stop = ordered && !errors.is_empty();
                            write_errors.extend(errors.into_iter().map(|mut e| {
                                e.index = batch.indexes.get(e.index).copied().unwrap_or(e.index);
                                e
                            }));
                            if write_concern_error.is_none() {
                                write_concern_error = wce;
                            }
                            failure = Some((address, labels));
                            // What succeeded beside the errors still counts (the partial result).
                            (WriteReply::parse(&response), stop)
                        }
                        // What ran before the error is the partial result (the failing batch's
                        // writes are not counted: their outcome is unknown).
                        Err(error) => {
                            let unconfirmed: Vec<usize> = batch
                                .indexes
                                .iter()
                                .copied()
                                .chain(batches.flat_map(|b| b.indexes))
                                .collect();
                            keep_inserted_ids(&mut result, &write_errors, ordered, &unconfirmed);
                            return Err(error.with_partial_result(result));
                        }
                    },
                };
            // Counts from the server saturate: a lying `n` cannot overflow the sums.
            let n = reply.n;
            match batch.kind {
                WriteKind::Insert => result.inserted_count = result.inserted_count.saturating_add(n),
                WriteKind::Delete => result.deleted_count = result.deleted_count.saturating_add(n),
                WriteKind::Update => {
                    let ups = reply.upserted.len() as u64;
                    for (i, id) in reply.upserted {
                        let index = batch.indexes.get(i).copied().unwrap_or_default();
                        result.upserted_ids.insert(index, id);
                    }
                    result.upserted_count = result.upserted_count.saturating_add(ups);
                    result.matched_count = result.matched_count.saturating_add(n.saturating_sub(ups));
                    result.modified_count = result.modified_count.saturating_add(reply.n_modified);
                }
            }
            if stop {
                break;
            }
        }
        match failure {
            Some((address, labels)) => {
                // The ids of inserts that failed, or (ordered) never ran, are not results.
                keep_inserted_ids(&mut result, &write_errors, ordered, &[]);
                let error =
                    ServerError { write_errors, write_concern_error, labels, ..ServerError::default() };
                Err(Error::collection_bulk(address, error, result))
            }
            None => Ok(result),
        }
    }
}
