//! The rest of the CRUD API: aggregate, count, distinct, findAndModify, replace, indexes,
//! `list*`, `run_cursor_command`, `create_collection` (kept apart from collection.rs).
//!
//! Every operation takes a `timeout` (CSOT `timeoutMS`; `None` inherits the handle's) and,
//! where the CRUD spec has one, the legacy `max_time` (`maxTimeMS`), which is ignored once
//! `timeoutMS` is set at any level. Reads are retryable reads; single-document writes are
//! retryable writes; index and namespace commands are never retried.

use std::time::Duration;

use bson::{doc, Bson, Document};
use selection::ReadPreference;

use super::collection::{count_of, Collection, TimeoutMode, UpdateResult};
use super::cursor::Cursor;
use super::database::Database;
use super::operation::{read_criteria, Limits, Op, Retry};
use super::timeout;
use super::transaction::ClientSession;
use super::Client;
use crate::selection_actor::Criteria;
use crate::{Error, Result};

/// Options of [`Collection::aggregate`] and [`Database::aggregate`].
#[derive(Debug, Default, Clone)]
pub struct AggregateOptions {
    /// Documents per batch (the first batch and every `getMore`).
    pub batch_size: Option<u32>,
    /// Legacy `maxTimeMS` (ignored when `timeoutMS` is set).
    pub max_time: Option<Duration>,
    /// Where to read (pipelines with `$out`/`$merge` go to the primary).
    pub read_preference: Option<ReadPreference>,
    /// This operation's `timeoutMS` (`None`: the handle's).
    pub timeout: Option<Duration>,
    /// How `timeoutMS` applies to the cursor (needs a `timeoutMS`).
    pub timeout_mode: Option<TimeoutMode>,
    /// `maxAwaitTimeMS`: the `maxTimeMS` of the `getMore`s (capped by the remaining
    /// `timeoutMS`; must be less than a non-zero `timeoutMS`).
    pub max_await_time: Option<Duration>,
}

/// Options of [`Collection::count`] (the legacy `count` command).
#[derive(Debug, Default, Clone)]
pub struct CountOptions {
    /// Documents to skip.
    pub skip: Option<u64>,
    /// The most documents to count.
    pub limit: Option<u64>,
    /// Legacy `maxTimeMS` (ignored when `timeoutMS` is set).
    pub max_time: Option<Duration>,
    /// Where to read.
    pub read_preference: Option<ReadPreference>,
    /// This operation's `timeoutMS` (`None`: the handle's).
    pub timeout: Option<Duration>,
}

/// Options of single-command reads: [`Collection::distinct`],
/// [`Collection::estimated_document_count`], [`Collection::count_documents_with`].
#[derive(Debug, Default, Clone)]
pub struct ReadOptions {
    /// Legacy `maxTimeMS` (ignored when `timeoutMS` is set).
    pub max_time: Option<Duration>,
    /// Where to read.
    pub read_preference: Option<ReadPreference>,
    /// This operation's `timeoutMS` (`None`: the handle's).
    pub timeout: Option<Duration>,
}

/// Which version of the document a `find_one_and_*` returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReturnDocument {
    /// The document as it was before the change (the default).
    #[default]
    Before,
    /// The document after the change.
    After,
}

/// Options of [`Collection::find_one_and_delete`], [`Collection::find_one_and_replace`]
/// and [`Collection::find_one_and_update`].
#[derive(Debug, Default, Clone)]
pub struct FindOneAndModifyOptions {
    /// Which matching document is changed (the first in this order).
    pub sort: Option<Document>,
    /// The fields of the returned document.
    pub projection: Option<Document>,
    /// Insert when nothing matches (replace and update only).
    pub upsert: Option<bool>,
    /// Return the document before or after the change (replace and update only).
    pub return_document: Option<ReturnDocument>,
    /// Legacy `maxTimeMS` (ignored when `timeoutMS` is set).
    pub max_time: Option<Duration>,
    /// This operation's `timeoutMS` (`None`: the handle's).
    pub timeout: Option<Duration>,
}

/// Options of [`Collection::replace_one`].
#[derive(Debug, Default, Clone)]
pub struct ReplaceOptions {
    /// Insert the replacement when nothing matches.
    pub upsert: Option<bool>,
    /// This operation's `timeoutMS` (`None`: the handle's).
    pub timeout: Option<Duration>,
}

/// Options of [`Collection::create_index`].
#[derive(Debug, Default, Clone)]
pub struct IndexOptions {
    /// The index name (default: the keys and directions joined by `_`, as the server names it).
    pub name: Option<String>,
    /// A unique index.
    pub unique: Option<bool>,
    /// Legacy `maxTimeMS` (ignored when `timeoutMS` is set).
    pub max_time: Option<Duration>,
    /// This operation's `timeoutMS` (`None`: the handle's).
    pub timeout: Option<Duration>,
}

/// Options of commands without options of their own: [`Collection::drop_index`],
/// [`Collection::drop_indexes`].
#[derive(Debug, Default, Clone)]
pub struct CommandOptions {
    /// Legacy `maxTimeMS` (ignored when `timeoutMS` is set).
    pub max_time: Option<Duration>,
    /// This operation's `timeoutMS` (`None`: the handle's).
    pub timeout: Option<Duration>,
}

/// Options of cursor-returning listings: [`Collection::list_indexes`],
/// [`Database::list_collections`].
#[derive(Debug, Default, Clone)]
pub struct ListOptions {
    /// Documents per batch.
    pub batch_size: Option<u32>,
    /// `listCollections` only: names and types only.
    pub name_only: Option<bool>,
    /// This operation's `timeoutMS` (`None`: the handle's).
    pub timeout: Option<Duration>,
    /// How `timeoutMS` applies to the cursor (needs a `timeoutMS`).
    pub timeout_mode: Option<TimeoutMode>,
}

/// Options of [`Client::list_databases`].
#[derive(Debug, Default, Clone)]
pub struct ListDatabasesOptions {
    /// Names only.
    pub name_only: Option<bool>,
    /// Only the databases the user may use.
    pub authorized_databases: Option<bool>,
    /// This operation's `timeoutMS` (`None`: the client's).
    pub timeout: Option<Duration>,
}

/// The kind of cursor [`Database::run_cursor_command`] opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CursorType {
    /// A cursor that ends when exhausted.
    #[default]
    NonTailable,
    /// A tailable cursor.
    Tailable,
    /// A tailable cursor whose `getMore`s wait for data on the server.
    TailableAwait,
}

/// Options of [`Database::run_cursor_command`].
#[derive(Debug, Default, Clone)]
pub struct RunCursorCommandOptions {
    /// `batchSize` of the `getMore`s (the command carries its own for the first batch).
    pub batch_size: Option<u32>,
    /// The cursor's kind: tailable cursors default to [`TimeoutMode::Iteration`] and refuse
    /// [`TimeoutMode::CursorLifetime`].
    pub cursor_type: Option<CursorType>,
    /// Where to run (default: primary).
    pub read_preference: Option<ReadPreference>,
    /// This operation's `timeoutMS` (`None`: the database's).
    pub timeout: Option<Duration>,
    /// How `timeoutMS` applies to the cursor (needs a `timeoutMS`).
    pub timeout_mode: Option<TimeoutMode>,
}

/// Options of [`Database::create_collection`].
#[derive(Debug, Default, Clone)]
pub struct CreateCollectionOptions {
    /// A capped collection (needs `size`).
    pub capped: Option<bool>,
    /// A capped collection's size in bytes.
    pub size: Option<u64>,
    /// A capped collection's most documents.
    pub max: Option<u64>,
    /// This operation's `timeoutMS` (`None`: the database's).
    pub timeout: Option<Duration>,
}

fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

fn int(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Adds the legacy `maxTimeMS` unless `timeoutMS` is set (CSOT replaces it).
pub(crate) fn legacy_max_time(command: &mut Document, max_time: Option<Duration>, timeout: Option<Duration>) {
    if let (Some(t), None) = (max_time, timeout) {
        command.insert("maxTimeMS", ms(t));
    }
}

fn plain_op(name: &str, db: &str, command: Document, criteria: Criteria, retry: Retry, cursor: bool) -> Op {
    Op {
        name: name.to_string().into(),
        db: db.to_string(),
        command,
        criteria,
        retry,
        check_write: retry == Retry::Write,
        opens_cursor: cursor,
    }
}

/// The first batch's documents of a cursor reply (for single-batch results).
pub(crate) fn first_batch(reply: &Document) -> Vec<Document> {
    reply
        .get_document("cursor")
        .ok()
        .and_then(|c| c.get_array("firstBatch").ok())
        .map(|b| b.iter().filter_map(Bson::as_document).cloned().collect())
        .unwrap_or_default()
}

/// The collection part of a cursor reply's `ns` (`db.$cmd.listCollections` gives
/// `$cmd.listCollections`), which the `getMore`s name.
fn ns_collection(reply: &Document) -> Option<String> {
    let ns = reply.get_document("cursor").ok()?.get_str("ns").ok()?;
    ns.split_once('.').map(|(_, c)| c.to_string())
}

/// Where a command that opens a cursor runs, and its CSOT rules: CURSOR_LIFETIME sends
/// `maxTimeMS` on the first command and keeps one deadline for every `getMore`; ITERATION
/// sends none (but a tailable awaitData cursor's first command does) and gives each
/// `getMore` a full timeout.
pub(crate) struct OpenCursor<'a> {
    /// The database.
    pub db: &'a str,
    /// The collection the `getMore`s name, unless the reply's `ns` names another.
    pub collection: &'a str,
    /// The `timeoutMS`.
    pub timeout: Option<Duration>,
    /// From [`cursor_mode`].
    pub mode: (TimeoutMode, bool),
    /// `batchSize` of the `getMore`s.
    pub batch_size: Option<u32>,
}

impl OpenCursor<'_> {
    /// Runs `op` (with `session`, or an implicit one the cursor keeps) and opens its cursor;
    /// in a load-balanced transaction the cursor uses the transaction's connection.
    pub(crate) async fn run(
        self,
        client: &Client,
        op: Op,
        mut session: Option<&mut ClientSession>,
    ) -> Result<Cursor> {
        let (mode, send_max_time) = self.mode;
        let limits = Limits::new(self.timeout).sending_max_time(send_max_time);
        let out = super::transaction::run(client, op, limits, session.as_deref_mut()).await?;
        let collection = ns_collection(&out.reply).unwrap_or_else(|| self.collection.to_string());
        let mut cursor = Cursor::new(client.clone(), self.db, &collection, out, self.batch_size).await?;
        cursor.set_timeout(self.timeout, mode, limits.deadline);
        if let Some(session) = session.filter(|s| s.in_transaction()) {
            cursor.join_transaction(session.transaction_pin());
        }
        Ok(cursor)
    }
}

/// CSOT: `maxAwaitTimeMS` must be less than a non-zero `timeoutMS` (or an empty awaitData
/// batch could never arrive in time).
pub(crate) fn check_max_await(timeout: Option<Duration>, max_await: Option<Duration>) -> Result<()> {
    match (timeout, max_await) {
        (Some(t), Some(a)) if !t.is_zero() && a >= t => Err(Error::InvalidOptions {
            message: format!(
                "maxAwaitTimeMS ({} ms) must be less than timeoutMS ({} ms)",
                a.as_millis(),
                t.as_millis()
            ),
        }),
        _ => Ok(()),
    }
}

/// The cursor's timeout mode and whether its first command carries `maxTimeMS` (CSOT): an
/// explicit mode needs a `timeoutMS`; tailable cursors default to ITERATION and refuse
/// CURSOR_LIFETIME; in ITERATION mode only a tailable awaitData cursor's first command gets
/// `maxTimeMS`.
pub(crate) fn cursor_mode(
    timeout: Option<Duration>,
    mode: Option<TimeoutMode>,
    cursor_type: Option<CursorType>,
) -> Result<(TimeoutMode, bool)> {
    let cursor_type = cursor_type.unwrap_or_default();
    let tailable = cursor_type != CursorType::NonTailable;
    if tailable && mode == Some(TimeoutMode::CursorLifetime) {
        return Err(Error::InvalidOptions {
            message: "a tailable cursor cannot use timeoutMode CURSOR_LIFETIME".into(),
        });
    }
    if mode.is_some() && timeout.is_none() {
        return Err(Error::InvalidOptions {
            message: "timeoutMode needs timeoutMS (on the operation, collection, database or client)".into(),
        });
    }
    let mode = match mode {
        Some(m) => m,
        None if tailable => TimeoutMode::Iteration,
        None => TimeoutMode::CursorLifetime,
    };
    let send_max_time = mode == TimeoutMode::CursorLifetime || cursor_type == CursorType::TailableAwait;
    Ok((mode, send_max_time))
}

fn has_write_stage(pipeline: &[Document]) -> bool {
    pipeline.last().and_then(|s| s.keys().next()).is_some_and(|k| k == "$out" || k == "$merge")
}

/// The `aggregate` command and its operation shape (a `$out`/`$merge` pipeline is a
/// non-retryable write to the primary).
fn aggregate_op(
    target: Bson,
    db: &str,
    pipeline: Vec<Document>,
    options: &AggregateOptions,
    timeout: Option<Duration>,
    default_rp: &std::sync::Arc<ReadPreference>,
) -> Result<Op> {
    let write = has_write_stage(&pipeline);
    if write && options.timeout_mode == Some(TimeoutMode::Iteration) {
        return Err(Error::InvalidOptions {
            message: "an aggregate with $out or $merge cannot use timeoutMode ITERATION".into(),
        });
    }
    let mut cursor = Document::new();
    if let Some(b) = options.batch_size.filter(|_| !write) {
        cursor.insert("batchSize", i64::from(b));
    }
    let mut command = doc! {"aggregate": target, "pipeline": pipeline, "cursor": cursor};
    legacy_max_time(&mut command, options.max_time, timeout);
    Ok(if write {
        plain_op("aggregate", db, command, Criteria::Write, Retry::No, true)
    } else {
        let criteria = read_criteria(options.read_preference.clone(), default_rp);
        plain_op("aggregate", db, command, criteria, Retry::Read, true)
    })
}

fn names(docs: Vec<Document>) -> Vec<String> {
    docs.into_iter().filter_map(|d| d.get_str("name").ok().map(str::to_owned)).collect()
}

/// The server's default index name: `key_direction` pairs joined by `_`.
fn index_name(keys: &Document) -> String {
    keys.iter()
        .map(|(k, v)| {
            let v = match v {
                Bson::String(s) => s.clone(),
                Bson::Int32(i) => i.to_string(),
                Bson::Int64(i) => i.to_string(),
                Bson::Double(d) => d.to_string(),
                other => other.to_string(),
            };
            format!("{k}_{v}")
        })
        .collect::<Vec<_>>()
        .join("_")
}

impl Collection {
    fn client(&self) -> &Client {
        self.database().client()
    }

    fn with_op_timeout(&self, timeout: Option<Duration>) -> Collection {
        self.clone().with_timeout(timeout)
    }

    async fn run_op(&self, op: Op, session: Option<&mut ClientSession>) -> Result<Document> {
        Ok(self.run(op, session).await?.reply)
    }

    /// Runs an aggregation pipeline on this collection; the results come through a cursor.
    /// A retryable read, except a pipeline ending in `$out` or `$merge` (a write, run once).
    pub async fn aggregate(&self, pipeline: Vec<Document>, options: AggregateOptions) -> Result<Cursor> {
        self.aggregate_in(pipeline, options, None).await
    }

    /// [`aggregate`](Self::aggregate) with an explicit session (in its transaction, if any).
    pub async fn aggregate_with_session(
        &self,
        pipeline: Vec<Document>,
        options: AggregateOptions,
        session: &mut ClientSession,
    ) -> Result<Cursor> {
        self.aggregate_in(pipeline, options, Some(session)).await
    }

    async fn aggregate_in(
        &self,
        pipeline: Vec<Document>,
        options: AggregateOptions,
        session: Option<&mut ClientSession>,
    ) -> Result<Cursor> {
        let coll = self.with_op_timeout(options.timeout);
        let timeout = coll.timeout();
        let default_rp = &self.client().inner.settings.read_preference;
        let db = self.database().name();
        let op = aggregate_op(Bson::String(self.name().into()), db, pipeline, &options, timeout, default_rp)?;
        let mode = cursor_mode(timeout, options.timeout_mode, None)?;
        check_max_await(timeout, options.max_await_time)?;
        let open = OpenCursor { db, collection: self.name(), timeout, mode, batch_size: options.batch_size };
        let mut cursor = open.run(self.client(), op, session).await?;
        cursor.set_max_await(options.max_await_time);
        Ok(cursor)
    }

    /// Counts matching documents with the legacy `count` command (prefer
    /// [`count_documents`](Self::count_documents)). A retryable read.
    pub async fn count(&self, filter: Document, options: CountOptions) -> Result<u64> {
        self.count_in(filter, options, None).await
    }

    /// [`count`](Self::count) with an explicit session (in its transaction, if any).
    pub async fn count_with_session(
        &self,
        filter: Document,
        options: CountOptions,
        session: &mut ClientSession,
    ) -> Result<u64> {
        self.count_in(filter, options, Some(session)).await
    }

    async fn count_in(
        &self,
        filter: Document,
        options: CountOptions,
        session: Option<&mut ClientSession>,
    ) -> Result<u64> {
        let coll = self.with_op_timeout(options.timeout);
        let mut command = doc! {"count": self.name(), "query": filter};
        if let Some(s) = options.skip {
            command.insert("skip", int(s));
        }
        if let Some(l) = options.limit {
            command.insert("limit", int(l));
        }
        legacy_max_time(&mut command, options.max_time, coll.timeout());
        let op = coll.read_op("count", command, options.read_preference, false);
        Ok(count_of(&coll.run_op(op, session).await?, "n"))
    }

    /// The collection's document count from its metadata (the `count` command without a
    /// filter). A retryable read.
    pub async fn estimated_document_count(&self, options: ReadOptions) -> Result<u64> {
        self.estimated_document_count_in(options, None).await
    }

    /// [`estimated_document_count`](Self::estimated_document_count) with an explicit session.
    pub async fn estimated_document_count_with_session(
        &self,
        options: ReadOptions,
        session: &mut ClientSession,
    ) -> Result<u64> {
        self.estimated_document_count_in(options, Some(session)).await
    }

    async fn estimated_document_count_in(
        &self,
        options: ReadOptions,
        session: Option<&mut ClientSession>,
    ) -> Result<u64> {
        let coll = self.with_op_timeout(options.timeout);
        let mut command = doc! {"count": self.name()};
        legacy_max_time(&mut command, options.max_time, coll.timeout());
        let op = coll.read_op("count", command, options.read_preference, false);
        Ok(count_of(&coll.run_op(op, session).await?, "n"))
    }

    /// [`count_documents`](Self::count_documents) with a legacy `max_time` and a per-call
    /// timeout. A retryable read.
    pub async fn count_documents_with(&self, filter: Document, options: ReadOptions) -> Result<u64> {
        self.count_documents_in(filter, options, None).await
    }

    /// [`count_documents_with`](Self::count_documents_with) with an explicit session (in its
    /// transaction, if any).
    pub async fn count_documents_with_session(
        &self,
        filter: Document,
        options: ReadOptions,
        session: &mut ClientSession,
    ) -> Result<u64> {
        self.count_documents_in(filter, options, Some(session)).await
    }

    async fn count_documents_in(
        &self,
        filter: Document,
        options: ReadOptions,
        session: Option<&mut ClientSession>,
    ) -> Result<u64> {
        let coll = self.with_op_timeout(options.timeout);
        let pipeline = vec![doc! {"$match": filter}, doc! {"$group": {"_id": 1, "n": {"$sum": 1}}}];
        let mut command = doc! {"aggregate": self.name(), "pipeline": pipeline, "cursor": {}};
        legacy_max_time(&mut command, options.max_time, coll.timeout());
        let op = coll.read_op("aggregate", command, options.read_preference, false);
        let reply = coll.run_op(op, session).await?;
        Ok(first_batch(&reply).first().map_or(0, |d| count_of(d, "n")))
    }

    /// The distinct values of `field` among matching documents (array elements count one by
    /// one). A retryable read.
    pub async fn distinct(&self, field: &str, filter: Document, options: ReadOptions) -> Result<Vec<Bson>> {
        self.distinct_in(field, filter, options, None).await
    }

    /// [`distinct`](Self::distinct) with an explicit session (in its transaction, if any).
    pub async fn distinct_with_session(
        &self,
        field: &str,
        filter: Document,
        options: ReadOptions,
        session: &mut ClientSession,
    ) -> Result<Vec<Bson>> {
        self.distinct_in(field, filter, options, Some(session)).await
    }

    async fn distinct_in(
        &self,
        field: &str,
        filter: Document,
        options: ReadOptions,
        session: Option<&mut ClientSession>,
    ) -> Result<Vec<Bson>> {
        let coll = self.with_op_timeout(options.timeout);
        let mut command = doc! {"distinct": self.name(), "key": field, "query": filter};
        legacy_max_time(&mut command, options.max_time, coll.timeout());
        let op = coll.read_op("distinct", command, options.read_preference, false);
        let reply = coll.run_op(op, session).await?;
        Ok(reply.get_array("values").cloned().unwrap_or_default())
    }

    async fn find_and_modify(
        &self,
        filter: Document,
        change: Option<Document>,
        options: FindOneAndModifyOptions,
        session: Option<&mut ClientSession>,
    ) -> Result<Option<Document>> {
        let coll = self.with_op_timeout(options.timeout);
        let mut command = doc! {"findAndModify": self.name(), "query": filter};
        match change {
            None => {
                command.insert("remove", true);
            }
            Some(c) => {
                command.insert("update", c);
                command.insert("new", options.return_document == Some(ReturnDocument::After));
                if let Some(u) = options.upsert {
                    command.insert("upsert", u);
                }
            }
        }
        if let Some(s) = options.sort {
            command.insert("sort", s);
        }
        if let Some(p) = options.projection {
            command.insert("fields", p);
        }
        legacy_max_time(&mut command, options.max_time, coll.timeout());
        let op = coll.write_op("findAndModify", command);
        let reply = coll.run_op(op, session).await?;
        Ok(reply.get_document("value").ok().cloned())
    }

    /// Deletes the first matching document (in `sort` order) and returns it. A retryable write.
    pub async fn find_one_and_delete(
        &self,
        filter: Document,
        options: FindOneAndModifyOptions,
    ) -> Result<Option<Document>> {
        self.find_and_modify(filter, None, options, None).await
    }

    /// [`find_one_and_delete`](Self::find_one_and_delete) with an explicit session (in its
    /// transaction, if any).
    pub async fn find_one_and_delete_with_session(
        &self,
        filter: Document,
        options: FindOneAndModifyOptions,
        session: &mut ClientSession,
    ) -> Result<Option<Document>> {
        self.find_and_modify(filter, None, options, Some(session)).await
    }

    /// Replaces the first matching document; returns it as it was (or as it is, with
    /// [`ReturnDocument::After`]). The replacement may not contain update operators. A
    /// retryable write.
    pub async fn find_one_and_replace(
        &self,
        filter: Document,
        replacement: Document,
        options: FindOneAndModifyOptions,
    ) -> Result<Option<Document>> {
        check_replacement(&replacement)?;
        self.find_and_modify(filter, Some(replacement), options, None).await
    }

    /// [`find_one_and_replace`](Self::find_one_and_replace) with an explicit session (in its
    /// transaction, if any).
    pub async fn find_one_and_replace_with_session(
        &self,
        filter: Document,
        replacement: Document,
        options: FindOneAndModifyOptions,
        session: &mut ClientSession,
    ) -> Result<Option<Document>> {
        check_replacement(&replacement)?;
        self.find_and_modify(filter, Some(replacement), options, Some(session)).await
    }

    /// Updates the first matching document with update operators; returns it as it was (or
    /// as it is, with [`ReturnDocument::After`]). A retryable write.
    pub async fn find_one_and_update(
        &self,
        filter: Document,
        update: Document,
        options: FindOneAndModifyOptions,
    ) -> Result<Option<Document>> {
        check_update(&update)?;
        self.find_and_modify(filter, Some(update), options, None).await
    }

    /// [`find_one_and_update`](Self::find_one_and_update) with an explicit session (in its
    /// transaction, if any).
    pub async fn find_one_and_update_with_session(
        &self,
        filter: Document,
        update: Document,
        options: FindOneAndModifyOptions,
        session: &mut ClientSession,
    ) -> Result<Option<Document>> {
        check_update(&update)?;
        self.find_and_modify(filter, Some(update), options, Some(session)).await
    }

    /// Replaces the first matching document (the replacement may not contain update
    /// operators). A retryable write.
    pub async fn replace_one(
        &self,
        filter: Document,
        replacement: Document,
        options: ReplaceOptions,
    ) -> Result<UpdateResult> {
        self.replace_one_in(filter, replacement, options, None).await
    }

    /// [`replace_one`](Self::replace_one) with an explicit session (in its transaction, if any).
    pub async fn replace_one_with_session(
        &self,
        filter: Document,
        replacement: Document,
        options: ReplaceOptions,
        session: &mut ClientSession,
    ) -> Result<UpdateResult> {
        self.replace_one_in(filter, replacement, options, Some(session)).await
    }

    async fn replace_one_in(
        &self,
        filter: Document,
        replacement: Document,
        options: ReplaceOptions,
        session: Option<&mut ClientSession>,
    ) -> Result<UpdateResult> {
        check_replacement(&replacement)?;
        let coll = self.with_op_timeout(options.timeout);
        let mut statement = doc! {"q": filter, "u": replacement, "multi": false};
        if let Some(u) = options.upsert {
            statement.insert("upsert", u);
        }
        let op =
            coll.write_op("update", doc! {"update": self.name(), "updates": [statement], "ordered": true});
        let reply = coll.run_op(op, session).await?;
        Ok(UpdateResult::from_reply(&reply))
    }

    /// Creates an index on `keys` (`{"field": 1}`); returns its name. Not retried.
    pub async fn create_index(&self, keys: Document, options: IndexOptions) -> Result<String> {
        self.create_index_in(keys, options, None).await
    }

    /// [`create_index`](Self::create_index) with an explicit session (in its transaction, if
    /// any).
    pub async fn create_index_with_session(
        &self,
        keys: Document,
        options: IndexOptions,
        session: &mut ClientSession,
    ) -> Result<String> {
        self.create_index_in(keys, options, Some(session)).await
    }

    async fn create_index_in(
        &self,
        keys: Document,
        options: IndexOptions,
        session: Option<&mut ClientSession>,
    ) -> Result<String> {
        if keys.is_empty() {
            return Err(Error::InvalidOptions { message: "an index needs at least one key".into() });
        }
        let coll = self.with_op_timeout(options.timeout);
        let name = options.name.clone().unwrap_or_else(|| index_name(&keys));
        let mut index = doc! {"key": keys, "name": &name};
        if let Some(u) = options.unique {
            index.insert("unique", u);
        }
        let mut command = doc! {"createIndexes": self.name(), "indexes": [index]};
        legacy_max_time(&mut command, options.max_time, coll.timeout());
        let mut op = coll.write_op("createIndexes", command);
        op.retry = Retry::No;
        coll.run_op(op, session).await?;
        Ok(name)
    }

    /// Drops the index `name`. Not retried.
    pub async fn drop_index(&self, name: &str, options: CommandOptions) -> Result<()> {
        self.drop_index_in(name, options, None).await
    }

    /// [`drop_index`](Self::drop_index) with an explicit session (in its transaction, if any).
    pub async fn drop_index_with_session(
        &self,
        name: &str,
        options: CommandOptions,
        session: &mut ClientSession,
    ) -> Result<()> {
        self.drop_index_in(name, options, Some(session)).await
    }

    async fn drop_index_in(
        &self,
        name: &str,
        options: CommandOptions,
        session: Option<&mut ClientSession>,
    ) -> Result<()> {
        if name == "*" {
            return Err(Error::InvalidOptions {
                message: "drop_index(\"*\") would drop every index: use drop_indexes".into(),
            });
        }
        self.drop_indexes_named(Bson::String(name.into()), options, session).await
    }

    /// Drops every index but `_id`'s. Not retried.
    pub async fn drop_indexes(&self, options: CommandOptions) -> Result<()> {
        self.drop_indexes_named(Bson::String("*".into()), options, None).await
    }

    /// [`drop_indexes`](Self::drop_indexes) with an explicit session (in its transaction, if
    /// any).
    pub async fn drop_indexes_with_session(
        &self,
        options: CommandOptions,
        session: &mut ClientSession,
    ) -> Result<()> {
        self.drop_indexes_named(Bson::String("*".into()), options, Some(session)).await
    }

    async fn drop_indexes_named(
        &self,
        index: Bson,
        options: CommandOptions,
        session: Option<&mut ClientSession>,
    ) -> Result<()> {
        let coll = self.with_op_timeout(options.timeout);
        let mut command = doc! {"dropIndexes": self.name(), "index": index};
        legacy_max_time(&mut command, options.max_time, coll.timeout());
        let mut op = coll.write_op("dropIndexes", command);
        op.retry = Retry::No;
        coll.run_op(op, session).await?;
        Ok(())
    }

    /// The collection's indexes (one document each) through a cursor. A retryable read on
    /// the primary.
    pub async fn list_indexes(&self, options: ListOptions) -> Result<Cursor> {
        self.list_indexes_in(options, None).await
    }

    /// [`list_indexes`](Self::list_indexes) with an explicit session (in its transaction, if
    /// any).
    pub async fn list_indexes_with_session(
        &self,
        options: ListOptions,
        session: &mut ClientSession,
    ) -> Result<Cursor> {
        self.list_indexes_in(options, Some(session)).await
    }

    async fn list_indexes_in(
        &self,
        options: ListOptions,
        session: Option<&mut ClientSession>,
    ) -> Result<Cursor> {
        let coll = self.with_op_timeout(options.timeout);
        let mut cursor = Document::new();
        if let Some(b) = options.batch_size {
            cursor.insert("batchSize", i64::from(b));
        }
        let command = doc! {"listIndexes": self.name(), "cursor": cursor};
        let op = coll.read_op("listIndexes", command, Some(ReadPreference::PRIMARY), true);
        let db = self.database().name();
        let timeout = coll.timeout();
        let mode = cursor_mode(timeout, options.timeout_mode, None)?;
        let open = OpenCursor { db, collection: self.name(), timeout, mode, batch_size: options.batch_size };
        open.run(self.client(), op, session).await
    }

    /// The names of the collection's indexes. A retryable read on the primary.
    pub async fn list_index_names(&self, timeout: Option<Duration>) -> Result<Vec<String>> {
        let cursor = self.list_indexes(ListOptions { timeout, ..Default::default() }).await?;
        Ok(names(cursor.try_collect().await?))
    }

    /// [`list_index_names`](Self::list_index_names) with an explicit session (in its
    /// transaction, if any).
    pub async fn list_index_names_with_session(
        &self,
        timeout: Option<Duration>,
        session: &mut ClientSession,
    ) -> Result<Vec<String>> {
        let options = ListOptions { timeout, ..Default::default() };
        let cursor = self.list_indexes_in(options, Some(session)).await?;
        Ok(names(cursor.try_collect().await?))
    }
}

/// A replacement document may not use update operators.
pub(super) fn check_replacement(d: &Document) -> Result<()> {
    if d.keys().next().is_some_and(|k| k.starts_with('$')) {
        return Err(Error::InvalidOptions {
            message: "a replacement document cannot contain update operators".into(),
        });
    }
    Ok(())
}

/// An update document must use update operators.
pub(super) fn check_update(d: &Document) -> Result<()> {
    if !d.keys().next().is_some_and(|k| k.starts_with('$')) {
        return Err(Error::InvalidOptions {
            message: "an update document must contain update operators".into(),
        });
    }
    Ok(())
}

impl Database {
    /// Runs a database-level aggregation pipeline (`aggregate: 1`, for stages such as
    /// `$currentOp` or `$documents`); the results come through a cursor. A retryable read,
    /// except a pipeline ending in `$out` or `$merge`.
    pub async fn aggregate(&self, pipeline: Vec<Document>, options: AggregateOptions) -> Result<Cursor> {
        self.aggregate_in(pipeline, options, None).await
    }

    /// [`aggregate`](Self::aggregate) with an explicit session (in its transaction, if any).
    pub async fn aggregate_with_session(
        &self,
        pipeline: Vec<Document>,
        options: AggregateOptions,
        session: &mut ClientSession,
    ) -> Result<Cursor> {
        self.aggregate_in(pipeline, options, Some(session)).await
    }

    async fn aggregate_in(
        &self,
        pipeline: Vec<Document>,
        options: AggregateOptions,
        session: Option<&mut ClientSession>,
    ) -> Result<Cursor> {
        let timeout = timeout::inherit(self.timeout(), options.timeout);
        let default_rp = &self.client().inner.settings.read_preference;
        let op = aggregate_op(Bson::Int32(1), self.name(), pipeline, &options, timeout, default_rp)?;
        let mode = cursor_mode(timeout, options.timeout_mode, None)?;
        check_max_await(timeout, options.max_await_time)?;
        let open = OpenCursor {
            db: self.name(),
            collection: "$cmd.aggregate",
            timeout,
            mode,
            batch_size: options.batch_size,
        };
        let mut cursor = open.run(self.client(), op, session).await?;
        cursor.set_max_await(options.max_await_time);
        Ok(cursor)
    }

    /// The database's collections (one document each) through a cursor. A retryable read on
    /// the primary.
    pub async fn list_collections(&self, filter: Document, options: ListOptions) -> Result<Cursor> {
        self.list_collections_in(filter, options, None).await
    }

    /// [`list_collections`](Self::list_collections) with an explicit session (in its
    /// transaction, if any).
    pub async fn list_collections_with_session(
        &self,
        filter: Document,
        options: ListOptions,
        session: &mut ClientSession,
    ) -> Result<Cursor> {
        self.list_collections_in(filter, options, Some(session)).await
    }

    async fn list_collections_in(
        &self,
        filter: Document,
        options: ListOptions,
        session: Option<&mut ClientSession>,
    ) -> Result<Cursor> {
        let timeout = timeout::inherit(self.timeout(), options.timeout);
        let mut cursor = Document::new();
        if let Some(b) = options.batch_size {
            cursor.insert("batchSize", i64::from(b));
        }
        let mut command = doc! {"listCollections": 1, "filter": filter, "cursor": cursor};
        if let Some(n) = options.name_only {
            command.insert("nameOnly", n);
        }
        let criteria = Criteria::Read(ReadPreference::PRIMARY);
        let op = plain_op("listCollections", self.name(), command, criteria, Retry::Read, true);
        let mode = cursor_mode(timeout, options.timeout_mode, None)?;
        let open = OpenCursor {
            db: self.name(),
            collection: "$cmd.listCollections",
            timeout,
            mode,
            batch_size: options.batch_size,
        };
        open.run(self.client(), op, session).await
    }

    /// The names of the database's collections matching `filter`. A retryable read.
    pub async fn list_collection_names(
        &self,
        filter: Document,
        timeout: Option<Duration>,
    ) -> Result<Vec<String>> {
        let options = ListOptions { name_only: Some(true), timeout, ..Default::default() };
        Ok(names(self.list_collections(filter, options).await?.try_collect().await?))
    }

    /// [`list_collection_names`](Self::list_collection_names) with an explicit session (in
    /// its transaction, if any).
    pub async fn list_collection_names_with_session(
        &self,
        filter: Document,
        timeout: Option<Duration>,
        session: &mut ClientSession,
    ) -> Result<Vec<String>> {
        let options = ListOptions { name_only: Some(true), timeout, ..Default::default() };
        Ok(names(self.list_collections_in(filter, options, Some(session)).await?.try_collect().await?))
    }

    /// Runs `command`, which opens a cursor (a `find`, `aggregate`, ...), and returns the
    /// cursor; its `getMore`s use `options.batch_size`. Never retried. Tailable cursors
    /// default to [`TimeoutMode::Iteration`] and refuse [`TimeoutMode::CursorLifetime`].
    pub async fn run_cursor_command(
        &self,
        command: Document,
        options: RunCursorCommandOptions,
    ) -> Result<Cursor> {
        self.run_cursor_command_in(command, options, None).await
    }

    /// [`run_cursor_command`](Self::run_cursor_command) with an explicit session (in its
    /// transaction, if any).
    pub async fn run_cursor_command_with_session(
        &self,
        command: Document,
        options: RunCursorCommandOptions,
        session: &mut ClientSession,
    ) -> Result<Cursor> {
        self.run_cursor_command_in(command, options, Some(session)).await
    }

    async fn run_cursor_command_in(
        &self,
        command: Document,
        options: RunCursorCommandOptions,
        session: Option<&mut ClientSession>,
    ) -> Result<Cursor> {
        let timeout = timeout::inherit(self.timeout(), options.timeout);
        let mode = cursor_mode(timeout, options.timeout_mode, options.cursor_type)?;
        let name = command.keys().next().cloned().unwrap_or_default();
        let collection = command.get_str(&name).unwrap_or_default().to_string();
        let rp = options.read_preference.clone().unwrap_or(ReadPreference::PRIMARY);
        let op = plain_op(&name, self.name(), command, Criteria::Read(rp), Retry::No, true);
        let open = OpenCursor {
            db: self.name(),
            collection: &collection,
            timeout,
            mode,
            batch_size: options.batch_size,
        };
        open.run(self.client(), op, session).await
    }

    /// Creates the collection `name` (capped with `capped`, `size` and `max`). Not retried.
    pub async fn create_collection(&self, name: &str, options: CreateCollectionOptions) -> Result<()> {
        self.create_collection_in(name, options, None).await
    }

    /// [`create_collection`](Self::create_collection) with an explicit session (in its
    /// transaction, if any).
    pub async fn create_collection_with_session(
        &self,
        name: &str,
        options: CreateCollectionOptions,
        session: &mut ClientSession,
    ) -> Result<()> {
        self.create_collection_in(name, options, Some(session)).await
    }

    async fn create_collection_in(
        &self,
        name: &str,
        options: CreateCollectionOptions,
        session: Option<&mut ClientSession>,
    ) -> Result<()> {
        let timeout = timeout::inherit(self.timeout(), options.timeout);
        let mut command = doc! {"create": name};
        if let Some(c) = options.capped {
            command.insert("capped", c);
        }
        if let Some(s) = options.size {
            command.insert("size", int(s));
        }
        if let Some(m) = options.max {
            command.insert("max", int(m));
        }
        if let Some(wc) = super::transaction::write_concern(&self.client().inner.settings, timeout) {
            command.insert("writeConcern", wc);
        }
        let op = plain_op("create", self.name(), command, Criteria::Write, Retry::No, false);
        super::transaction::run(self.client(), op, Limits::new(timeout), session).await?;
        Ok(())
    }
}

impl Client {
    /// The deployment's databases matching `filter` (`listDatabases` on `admin`), one
    /// document each. A retryable read on the primary.
    pub async fn list_databases(
        &self,
        filter: Document,
        options: ListDatabasesOptions,
    ) -> Result<Vec<Document>> {
        self.list_databases_in(filter, options, None).await
    }

    /// [`list_databases`](Self::list_databases) with an explicit session (in its transaction,
    /// if any).
    pub async fn list_databases_with_session(
        &self,
        filter: Document,
        options: ListDatabasesOptions,
        session: &mut ClientSession,
    ) -> Result<Vec<Document>> {
        self.list_databases_in(filter, options, Some(session)).await
    }

    async fn list_databases_in(
        &self,
        filter: Document,
        options: ListDatabasesOptions,
        session: Option<&mut ClientSession>,
    ) -> Result<Vec<Document>> {
        let timeout = timeout::inherit(self.inner.settings.timeout, options.timeout);
        let mut command = doc! {"listDatabases": 1, "filter": filter};
        if let Some(n) = options.name_only {
            command.insert("nameOnly", n);
        }
        if let Some(a) = options.authorized_databases {
            command.insert("authorizedDatabases", a);
        }
        let criteria = Criteria::Read(ReadPreference::PRIMARY);
        let op = plain_op("listDatabases", "admin", command, criteria, Retry::Read, false);
        let reply = super::transaction::run(self, op, Limits::new(timeout), session).await?.reply;
        Ok(reply
            .get_array("databases")
            .map(|a| a.iter().filter_map(Bson::as_document).cloned().collect())
            .unwrap_or_default())
    }

    /// The names of the deployment's databases matching `filter`. A retryable read.
    pub async fn list_database_names(
        &self,
        filter: Document,
        timeout: Option<Duration>,
    ) -> Result<Vec<String>> {
        let options = ListDatabasesOptions { name_only: Some(true), timeout, ..Default::default() };
        Ok(names(self.list_databases(filter, options).await?))
    }

    /// [`list_database_names`](Self::list_database_names) with an explicit session.
    pub async fn list_database_names_with_session(
        &self,
        filter: Document,
        timeout: Option<Duration>,
        session: &mut ClientSession,
    ) -> Result<Vec<String>> {
        let options = ListDatabasesOptions { name_only: Some(true), timeout, ..Default::default() };
        Ok(names(self.list_databases_in(filter, options, Some(session)).await?))
    }
}
