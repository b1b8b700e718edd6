//! The CRUD spec's collection-level `bulkWrite`: a list of inserts, updates, replaces and
//! deletes sent as few `insert`/`update`/`delete` commands as the order allows.
//!
//! Ordered (the default): consecutive models of the same kind share a command, commands run
//! in order, and the first write error stops the bulk. Unordered: models are grouped by kind
//! (inserts, then updates, then deletes) and every command runs; the write errors of all of
//! them are reported together. A `timeoutMS` is one deadline for the whole bulk. Each
//! command is a retryable write unless it holds a multi-document update or delete.

use std::collections::BTreeMap;
use std::time::Duration;

use bson::{doc, Bson, Document};

use super::collection::Collection;
use super::op_options::with_id;
use super::operation::Limits;
use super::ops::write::WriteKind;
use super::timeout;
use super::transaction::ClientSession;
use crate::error::{ServerError, WriteConcernError, WriteError};
use crate::{Error, Result};

/// The most statements per command (the servers' `maxWriteBatchSize`).
const MAX_BATCH: usize = 100_000;

/// One write of [`Collection::bulk_write`].
#[derive(Debug, Clone, PartialEq)]
pub enum WriteModel {
    /// Inserts `document` (an `_id` is generated when it has none).
    InsertOne {
        /// The document.
        document: Document,
    },
    /// Updates the first document matching `filter` with update operators.
    UpdateOne {
        /// Which documents.
        filter: Document,
        /// The update (`$set`, ...).
        update: Document,
        /// Insert a document when none matches.
        upsert: Option<bool>,
    },
    /// Updates every document matching `filter` (makes its command non-retryable).
    UpdateMany {
        /// Which documents.
        filter: Document,
        /// The update (`$set`, ...).
        update: Document,
        /// Insert a document when none matches.
        upsert: Option<bool>,
    },
    /// Replaces the first document matching `filter`.
    ReplaceOne {
        /// Which document.
        filter: Document,
        /// The new document (no update operators).
        replacement: Document,
        /// Insert `replacement` when none matches.
        upsert: Option<bool>,
    },
    /// Deletes the first document matching `filter`.
    DeleteOne {
        /// Which document.
        filter: Document,
    },
    /// Deletes every document matching `filter` (makes its command non-retryable).
    DeleteMany {
        /// Which documents.
        filter: Document,
    },
}

impl WriteModel {
    fn kind(&self) -> WriteKind {
        match self {
            WriteModel::InsertOne { .. } => WriteKind::Insert,
            WriteModel::DeleteOne { .. } | WriteModel::DeleteMany { .. } => WriteKind::Delete,
            _ => WriteKind::Update,
        }
    }

    /// The command statement, the generated `_id` of an insert, and whether it is multi.
    fn statement(self) -> Result<(Document, Option<Bson>, bool)> {
        let update = |filter: Document, u: Document, upsert: Option<bool>, multi: bool| {
            let mut s = doc! {"q": filter, "u": u, "multi": multi};
            if let Some(u) = upsert {
                s.insert("upsert", u);
            }
            s
        };
        Ok(match self {
            WriteModel::InsertOne { document } => {
                let (d, id) = with_id(document);
                (d, Some(id), false)
            }
            WriteModel::UpdateOne { filter, update: u, upsert } => {
                super::op_options::check_update(&u)?;
                (update(filter, u, upsert, false), None, false)
            }
            WriteModel::UpdateMany { filter, update: u, upsert } => {
                super::op_options::check_update(&u)?;
                (update(filter, u, upsert, true), None, true)
            }
            WriteModel::ReplaceOne { filter, replacement, upsert } => {
                super::op_options::check_replacement(&replacement)?;
                (update(filter, replacement, upsert, false), None, false)
            }
            WriteModel::DeleteOne { filter } => (doc! {"q": filter, "limit": 1}, None, false),
            WriteModel::DeleteMany { filter } => (doc! {"q": filter, "limit": 0}, None, true),
        })
    }
}

/// Options of [`Collection::bulk_write`].
#[derive(Debug, Default, Clone)]
pub struct BulkWriteOptions {
    /// Stop at the first write error, running the writes in order (`None`: `true`).
    pub ordered: Option<bool>,
    /// This bulk's `timeoutMS`, one deadline for every command (`None`: the handle's).
    pub timeout: Option<Duration>,
}

/// The result of [`Collection::bulk_write`]. Ids are keyed by the model's index.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct BulkWriteResult {
    /// Documents inserted by `InsertOne` models.
    pub inserted_count: u64,
    /// Documents matched by updates and replaces (upserts excluded).
    pub matched_count: u64,
    /// Documents changed by updates and replaces.
    pub modified_count: u64,
    /// Documents deleted.
    pub deleted_count: u64,
    /// Documents upserted.
    pub upserted_count: u64,
    /// The `_id` of every upserted document.
    pub upserted_ids: BTreeMap<usize, Bson>,
    /// The `_id` of every `InsertOne` document (sent; see `inserted_count` for how many
    /// the server inserted).
    pub inserted_ids: BTreeMap<usize, Bson>,
}

/// Statements of one command, with the model index of each.
struct Batch {
    kind: WriteKind,
    statements: Vec<Document>,
    indexes: Vec<usize>,
    multi: bool,
}

/// Groups the models into commands: consecutive same-kind models when ordered, by kind
/// otherwise; at most [`MAX_BATCH`] statements each.
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
        match out.last_mut() {
            Some(b) if b.kind == kind && b.statements.len() < MAX_BATCH => {
                b.statements.push(statement);
                b.indexes.push(index);
                b.multi |= multi;
            }
            _ => out.push(Batch { kind, statements: vec![statement], indexes: vec![index], multi }),
        }
    }
    Ok(out)
}

impl Collection {
    /// Runs inserts, updates, replaces and deletes in as few commands as the order allows
    /// (see the module docs). Write errors come back as one [`Error::Command`] of kind [`ErrorKind::Write`](crate::ErrorKind::Write) whose indexes
    /// are the models' indexes (ordered: the first one; unordered: all of them; a write
    /// concern error does not stop the bulk and is reported at the end). Other errors
    /// (network, timeout, command) stop the bulk at once.
    pub async fn bulk_write(
        &self,
        models: Vec<WriteModel>,
        options: BulkWriteOptions,
    ) -> Result<BulkWriteResult> {
        self.bulk_write_in(models, options, None).await
    }

    /// [`bulk_write`](Self::bulk_write) with an explicit session (in its transaction, if
    /// any): every command of the bulk carries it.
    pub async fn bulk_write_with_session(
        &self,
        models: Vec<WriteModel>,
        options: BulkWriteOptions,
        session: &mut ClientSession,
    ) -> Result<BulkWriteResult> {
        self.bulk_write_in(models, options, Some(session)).await
    }

    async fn bulk_write_in(
        &self,
        models: Vec<WriteModel>,
        options: BulkWriteOptions,
        mut session: Option<&mut ClientSession>,
    ) -> Result<BulkWriteResult> {
        if models.is_empty() {
            return Err(Error::InvalidOptions { message: "bulk_write needs at least one write".into() });
        }
        let ordered = options.ordered.unwrap_or(true);
        let mut result = BulkWriteResult::default();
        let batches = batches(models, ordered, &mut result)?;
        let coll = self.clone().with_timeout(timeout::inherit(self.timeout(), options.timeout));
        let timeout = coll.timeout();
        let deadline = timeout::deadline(timeout);
        let mut write_errors: Vec<WriteError> = Vec::new();
        let mut write_concern_error: Option<WriteConcernError> = None;
        let mut failure: Option<(protocol::ServerAddress, Vec<String>)> = None;
        for batch in batches {
            let op = coll.write(batch.kind, batch.statements, ordered, batch.multi);
            let limits = Limits::until(timeout, deadline);
            let reply =
                match super::transaction::run(coll.database().client(), op, limits, session.as_deref_mut())
                    .await
                {
                    Ok(reply) => reply,
                    Err(Error::Command { address, error }) if !error.command_failed => {
                        let ServerError { write_errors: errors, write_concern_error: wce, labels, .. } =
                            *error;
                        let stop = ordered && !errors.is_empty();
                        write_errors.extend(errors.into_iter().map(|mut e| {
                            e.index = batch.indexes.get(e.index).copied().unwrap_or(e.index);
                            e
                        }));
                        if write_concern_error.is_none() {
                            write_concern_error = wce;
                        }
                        failure = Some((address, labels));
                        if stop {
                            break;
                        }
                        continue;
                    }
                    Err(e) => return Err(e),
                };
            let n = reply.n;
            match batch.kind {
                WriteKind::Insert => result.inserted_count += n,
                WriteKind::Delete => result.deleted_count += n,
                WriteKind::Update => {
                    let ups = reply.upserted.len() as u64;
                    for (i, id) in reply.upserted {
                        let index = batch.indexes.get(i).copied().unwrap_or_default();
                        result.upserted_ids.insert(index, id);
                    }
                    result.upserted_count += ups;
                    result.matched_count += n.saturating_sub(ups);
                    result.modified_count += reply.n_modified;
                }
            }
        }
        match failure {
            Some((address, labels)) => {
                let error =
                    ServerError { write_errors, write_concern_error, labels, ..ServerError::default() };
                Err(Error::Command { address, error: Box::new(error) })
            }
            None => Ok(result),
        }
    }
}
