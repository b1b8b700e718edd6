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
    check_max_await, check_replacement, check_update, cursor_mode, index_name, names, TimeoutMode,
    UpdateResult,
};
pub use super::op_options::{
    AggregateOptions, CommandOptions, CountOptions, CreateCollectionOptions, CursorType,
    FindOneAndModifyOptions, IndexOptions, ListDatabasesOptions, ListOptions, ReadOptions, ReplaceOptions,
    ReturnDocument, RunCursorCommandOptions,
};
use super::operation::{read_criteria, Limits};
use super::ops::admin::{Create, CreateIndex, DropIndexes, ListCollections, ListDatabases, ListIndexes};
use super::ops::cursor::RunCursorCommand;
use super::ops::legacy_max_time;
use super::ops::read::{Aggregate, Count, CountDocuments, Distinct};
use super::ops::write::{FindAndModify, WriteKind};
use super::timeout;
use super::transaction::ClientSession;
use crate::{Error, Result};

/// Opens an `aggregate` cursor with `options` under `timeout` on `db` (and `collection`, or
/// the whole database); a `$out`/`$merge` pipeline is a non-retryable write to the primary,
/// and cannot use ITERATION mode.
async fn open_aggregate(
    client: &Client,
    (db, collection): (&str, Option<&str>),
    pipeline: Vec<Document>,
    options: AggregateOptions,
    timeout: Option<Duration>,
    session: Option<&mut ClientSession>,
) -> Result<Cursor> {
    let criteria = read_criteria(options.read_preference.clone(), &client.inner.settings.read_preference);
    let max_time_ms = legacy_max_time(options.max_time, timeout);
    let op = Aggregate::new(db, collection, pipeline, options.batch_size, criteria, max_time_ms);
    if op.writes() && options.timeout_mode == Some(TimeoutMode::Iteration) {
        return Err(Error::InvalidOptions {
            message: "an aggregate with $out or $merge cannot use timeoutMode ITERATION".into(),
        });
    }
    let mode = cursor_mode(timeout, options.timeout_mode, None)?;
    check_max_await(timeout, options.max_await_time)?;
    let open = OpenCursor { timeout, mode, batch_size: options.batch_size };
    let mut cursor = open.run(client, op, session).await?;
    cursor.set_max_await(options.max_await_time);
    Ok(cursor)
}

impl Collection {
    fn client(&self) -> &Client {
        self.database().client()
    }

    fn with_op_timeout(&self, timeout: Option<Duration>) -> Collection {
        self.clone().with_timeout(timeout)
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
        let timeout = self.with_op_timeout(options.timeout).timeout();
        let ns = (self.database().name(), Some(self.name()));
        open_aggregate(self.client(), ns, pipeline, options, timeout, session).await
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
        let op = Count {
            read: coll.read_on(options.read_preference, options.max_time, coll.timeout()),
            filter: Some(filter),
            skip: options.skip,
            limit: options.limit,
        };
        coll.run(op, session).await
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
        let op = Count {
            read: coll.read_on(options.read_preference, options.max_time, coll.timeout()),
            filter: None,
            skip: None,
            limit: None,
        };
        coll.run(op, session).await
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
        let op = CountDocuments {
            read: coll.read_on(options.read_preference, options.max_time, coll.timeout()),
            filter,
        };
        coll.run(op, session).await
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
        let op = Distinct {
            read: coll.read_on(options.read_preference, options.max_time, coll.timeout()),
            field: field.to_string(),
            filter,
        };
        coll.run(op, session).await
    }

    async fn find_and_modify(
        &self,
        filter: Document,
        change: Option<Document>,
        options: FindOneAndModifyOptions,
        session: Option<&mut ClientSession>,
    ) -> Result<Option<Document>> {
        let coll = self.with_op_timeout(options.timeout);
        let op = FindAndModify {
            ns: self.namespace(),
            filter,
            change,
            max_time_ms: legacy_max_time(options.max_time, coll.timeout()),
            write_concern: coll.write_concern(),
            options,
        };
        coll.run(op, session).await
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
        let op = coll.write(WriteKind::Update, vec![statement], true, false);
        Ok(coll.run(op, session).await?.into_update_result())
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
        let op = CreateIndex {
            ns: self.namespace(),
            name: options.name.clone().unwrap_or_else(|| index_name(&keys)),
            keys,
            unique: options.unique,
            max_time_ms: legacy_max_time(options.max_time, coll.timeout()),
            write_concern: coll.write_concern(),
        };
        coll.run(op, session).await
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
        self.drop_indexes_named(name, options, session).await
    }

    /// Drops every index but `_id`'s. Not retried.
    pub async fn drop_indexes(&self, options: CommandOptions) -> Result<()> {
        self.drop_indexes_named("*", options, None).await
    }

    /// [`drop_indexes`](Self::drop_indexes) with an explicit session (in its transaction, if
    /// any).
    pub async fn drop_indexes_with_session(
        &self,
        options: CommandOptions,
        session: &mut ClientSession,
    ) -> Result<()> {
        self.drop_indexes_named("*", options, Some(session)).await
    }

    async fn drop_indexes_named(
        &self,
        index: &str,
        options: CommandOptions,
        session: Option<&mut ClientSession>,
    ) -> Result<()> {
        let coll = self.with_op_timeout(options.timeout);
        let op = DropIndexes {
            ns: self.namespace(),
            index: index.to_string(),
            max_time_ms: legacy_max_time(options.max_time, coll.timeout()),
            write_concern: coll.write_concern(),
        };
        coll.run(op, session).await
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
        let timeout = self.with_op_timeout(options.timeout).timeout();
        let op = ListIndexes { ns: self.namespace(), batch_size: options.batch_size };
        let mode = cursor_mode(timeout, options.timeout_mode, None)?;
        let open = OpenCursor { timeout, mode, batch_size: options.batch_size };
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
        open_aggregate(self.client(), (self.name(), None), pipeline, options, timeout, session).await
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
        let op = ListCollections {
            db: self.name().to_string(),
            filter,
            batch_size: options.batch_size,
            name_only: options.name_only,
        };
        let mode = cursor_mode(timeout, options.timeout_mode, None)?;
        let open = OpenCursor { timeout, mode, batch_size: options.batch_size };
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
        let read_preference = options.read_preference.clone().unwrap_or(ReadPreference::PRIMARY);
        let op = RunCursorCommand { db: self.name().to_string(), command, read_preference };
        let open = OpenCursor { timeout, mode, batch_size: options.batch_size };
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
        let op = Create {
            db: self.name().to_string(),
            name: name.to_string(),
            capped: options.capped,
            size: options.size,
            max: options.max,
            write_concern: super::transaction::write_concern(&self.client().inner.settings, timeout),
        };
        super::transaction::run(self.client(), op, Limits::new(timeout), session).await
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
        let op = ListDatabases {
            filter,
            name_only: options.name_only,
            authorized_databases: options.authorized_databases,
        };
        super::transaction::run(self, op, Limits::new(timeout), session).await
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
