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

use super::collection::Collection;
use super::cursor::{Cursor, OpenCursor};
use super::database::Database;
use super::inner::Client;
use super::op_options::{
    check_max_await, check_replacement, check_update, count_of, cursor_mode, first_batch, index_name, int,
    legacy_max_time, names, TimeoutMode, UpdateResult,
};
pub use super::op_options::{
    AggregateOptions, CommandOptions, CountOptions, CreateCollectionOptions, CursorType,
    FindOneAndModifyOptions, IndexOptions, ListDatabasesOptions, ListOptions, ReadOptions, ReplaceOptions,
    ReturnDocument, RunCursorCommandOptions,
};
use super::operation::{read_criteria, Limits, Op, Retry};
use super::timeout;
use super::transaction::ClientSession;
use crate::selection_actor::Criteria;
use crate::{Error, Result};

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

    /// Counts matching documents with the drivers' `aggregate` pipeline (`$match` then
    /// `$group`). A retryable read. With options or a session:
    /// [`count_documents_with`](Self::count_documents_with),
    /// [`count_documents_with_session`](Self::count_documents_with_session).
    pub async fn count_documents(
        &self,
        filter: Document,
        read_preference: Option<ReadPreference>,
    ) -> Result<u64> {
        let options = ReadOptions { read_preference, ..Default::default() };
        self.count_documents_with(filter, options).await
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
