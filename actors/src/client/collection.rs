//! A collection handle and the minimal CRUD operations.

use std::collections::BTreeMap;
use std::time::Duration;

use bson::{doc, Bson, Document};
use selection::ReadPreference;

use super::cursor::{Cursor, OpenCursor};
use super::database::Database;
use super::op_options::{check_max_await, cursor_mode, with_id, CursorType};
pub use super::op_options::{
    DeleteResult, FindOptions, InsertManyResult, InsertOneResult, TimeoutMode, UpdateResult,
};
use super::operation::{read_criteria, Limits, Operation};
use super::ops::read::{Find, FindOne, ReadOn};
use super::ops::write::{Write, WriteKind};
use super::ops::{legacy_max_time, Namespace};
use super::transaction::ClientSession;
use crate::{Error, Result};

/// A collection of `bson::Document`s (cheap to clone, no I/O until an operation runs).
#[derive(Debug, Clone)]
pub struct Collection {
    db: Database,
    name: String,
    /// CSOT `timeoutMS` (inherited from the database).
    timeout: Option<Duration>,
}

impl Collection {
    pub(crate) fn new(db: Database, name: &str) -> Self {
        let timeout = db.timeout();
        Collection { db, name: name.to_string(), timeout }
    }

    /// This handle with `timeoutMS` (client-side operations timeout) for its operations:
    /// `Some(d)` is one deadline of `d` for each operation (selection, check-out, connection
    /// establishment, round trips and retries), `Some(Duration::ZERO)` means no limit, and
    /// `None` keeps the database's value (an outer timeout cannot be unset). For a single
    /// operation, call it on a clone: `coll.clone().with_timeout(Some(t)).insert_one(d)`.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.timeout = super::timeout::inherit(self.timeout, timeout);
        self
    }

    /// The `timeoutMS` of this handle's operations (`None`: not set).
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    /// Runs `op` under this handle's timeout, with `session` or an implicit one.
    pub(crate) async fn run<O: Operation>(
        &self,
        op: O,
        session: Option<&mut ClientSession>,
    ) -> Result<O::Output> {
        super::transaction::run(self.db.client(), op, Limits::new(self.timeout), session).await
    }

    /// The collection's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The database.
    pub fn database(&self) -> &Database {
        &self.db
    }

    fn inner(&self) -> &super::inner::ClientInner {
        &self.db.client().inner
    }

    /// The collection's database and name, for its operations.
    pub(crate) fn namespace(&self) -> Namespace<'_> {
        Namespace { db: self.db.name(), coll: &self.name }
    }

    /// The write concern this handle's writes send (CSOT: without `wtimeout`).
    pub(crate) fn write_concern(&self) -> Option<Document> {
        super::transaction::write_concern(&self.inner().settings, self.timeout)
    }

    /// A read of this collection from `read_preference` (`None`: the client's), with the
    /// client's read concern and a legacy `max_time` (sent only without `timeoutMS`).
    pub(crate) fn read_on(
        &self,
        read_preference: Option<ReadPreference>,
        max_time: Option<Duration>,
        timeout: Option<Duration>,
    ) -> ReadOn<'_> {
        ReadOn {
            ns: self.namespace(),
            criteria: read_criteria(read_preference, &self.inner().settings.read_preference),
            read_concern: self.inner().settings.read_concern.clone(),
            max_time_ms: legacy_max_time(max_time, timeout),
        }
    }

    /// An `insert`, `update` or `delete` of `statements` on this collection.
    pub(crate) fn write(
        &self,
        kind: WriteKind,
        statements: Vec<Document>,
        ordered: bool,
        multi: bool,
    ) -> Write<'_> {
        Write { ns: self.namespace(), kind, statements, ordered, multi, write_concern: self.write_concern() }
    }

    /// Inserts one document (an `_id` is generated when it has none). A retryable write.
    pub async fn insert_one(&self, doc: Document) -> Result<InsertOneResult> {
        self.insert_one_in(doc, None).await
    }

    /// [`insert_one`](Self::insert_one) with an explicit session (in its transaction, if any).
    pub async fn insert_one_with_session(
        &self,
        doc: Document,
        session: &mut ClientSession,
    ) -> Result<InsertOneResult> {
        self.insert_one_in(doc, Some(session)).await
    }

    async fn insert_one_in(
        &self,
        doc: Document,
        session: Option<&mut ClientSession>,
    ) -> Result<InsertOneResult> {
        let mut result = self.insert_many_in(vec![doc], session).await?;
        let inserted_id = result.inserted_ids.remove(&0).unwrap_or(Bson::Null);
        Ok(InsertOneResult { inserted_id })
    }

    /// Inserts documents in order (an `_id` is generated for those that have none), in one
    /// `insert` command. A retryable write.
    pub async fn insert_many(&self, docs: Vec<Document>) -> Result<InsertManyResult> {
        self.insert_many_in(docs, None).await
    }

    /// [`insert_many`](Self::insert_many) with an explicit session (in its transaction, if
    /// any).
    pub async fn insert_many_with_session(
        &self,
        docs: Vec<Document>,
        session: &mut ClientSession,
    ) -> Result<InsertManyResult> {
        self.insert_many_in(docs, Some(session)).await
    }

    async fn insert_many_in(
        &self,
        docs: Vec<Document>,
        session: Option<&mut ClientSession>,
    ) -> Result<InsertManyResult> {
        if docs.is_empty() {
            return Err(Error::InvalidOptions { message: "insert_many needs at least one document".into() });
        }
        let mut inserted_ids = BTreeMap::new();
        let mut documents = Vec::with_capacity(docs.len());
        for (i, d) in docs.into_iter().enumerate() {
            let (d, id) = with_id(d);
            inserted_ids.insert(i, id);
            documents.push(d);
        }
        self.run(self.write(WriteKind::Insert, documents, true, false), session).await?;
        Ok(InsertManyResult { inserted_ids })
    }

    /// Finds documents: the first batch comes with the `find`, the rest with `getMore`s on
    /// the same server. A retryable read (the `find`, not the `getMore`s).
    pub async fn find(&self, filter: Document, options: FindOptions) -> Result<Cursor> {
        self.find_in(filter, options, None).await
    }

    /// [`find`](Self::find) with an explicit session (in its transaction, if any). The
    /// cursor's `getMore`s use the session's id.
    pub async fn find_with_session(
        &self,
        filter: Document,
        options: FindOptions,
        session: &mut ClientSession,
    ) -> Result<Cursor> {
        self.find_in(filter, options, Some(session)).await
    }

    async fn find_in(
        &self,
        filter: Document,
        options: FindOptions,
        session: Option<&mut ClientSession>,
    ) -> Result<Cursor> {
        let batch_size = options.batch_size;
        let timeout = super::timeout::inherit(self.timeout, options.timeout);
        let mode = cursor_mode(timeout, options.timeout_mode, options.cursor_type)?;
        check_max_await(timeout, options.max_await_time)?;
        let (cursor_type, max_await) = (options.cursor_type, options.max_await_time);
        let op = self.find_op(filter, options, timeout);
        let open = OpenCursor { timeout, mode, batch_size };
        let mut cursor = open.run(self.db.client(), op, session).await?;
        if cursor_type == Some(CursorType::TailableAwait) {
            cursor.set_max_await(max_await);
        }
        Ok(cursor)
    }

    fn find_op(&self, filter: Document, options: FindOptions, timeout: Option<Duration>) -> Find<'_> {
        Find {
            read: self.read_on(options.read_preference.clone(), options.max_time, timeout),
            filter,
            options,
        }
    }

    /// Finds the first matching document (`limit: 1`, one batch). A retryable read.
    pub async fn find_one(&self, filter: Document, options: FindOptions) -> Result<Option<Document>> {
        self.find_one_in(filter, options, None).await
    }

    /// [`find_one`](Self::find_one) with an explicit session (in its transaction, if any).
    pub async fn find_one_with_session(
        &self,
        filter: Document,
        options: FindOptions,
        session: &mut ClientSession,
    ) -> Result<Option<Document>> {
        self.find_one_in(filter, options, Some(session)).await
    }

    async fn find_one_in(
        &self,
        filter: Document,
        options: FindOptions,
        session: Option<&mut ClientSession>,
    ) -> Result<Option<Document>> {
        let timeout = super::timeout::inherit(self.timeout, options.timeout);
        cursor_mode(timeout, options.timeout_mode, options.cursor_type)?;
        let op = FindOne(self.find_op(filter, options, timeout));
        super::transaction::run(self.db.client(), op, Limits::new(timeout), session).await
    }

    async fn update(
        &self,
        filter: Document,
        update: Document,
        multi: bool,
        session: Option<&mut ClientSession>,
    ) -> Result<UpdateResult> {
        let statement = doc! {"q": filter, "u": update, "multi": multi};
        let reply = self.run(self.write(WriteKind::Update, vec![statement], true, multi), session).await?;
        Ok(reply.into_update_result())
    }

    /// Updates the first matching document with an update document (`$set`, ...) or a
    /// replacement. A retryable write.
    pub async fn update_one(&self, filter: Document, update: Document) -> Result<UpdateResult> {
        self.update(filter, update, false, None).await
    }

    /// [`update_one`](Self::update_one) with an explicit session (in its transaction, if any).
    pub async fn update_one_with_session(
        &self,
        filter: Document,
        update: Document,
        session: &mut ClientSession,
    ) -> Result<UpdateResult> {
        self.update(filter, update, false, Some(session)).await
    }

    /// Updates every matching document. Not retryable (multi-document writes are not, per
    /// the retryable writes spec), so it runs once.
    pub async fn update_many(&self, filter: Document, update: Document) -> Result<UpdateResult> {
        self.update(filter, update, true, None).await
    }

    /// [`update_many`](Self::update_many) with an explicit session (in its transaction, if
    /// any).
    pub async fn update_many_with_session(
        &self,
        filter: Document,
        update: Document,
        session: &mut ClientSession,
    ) -> Result<UpdateResult> {
        self.update(filter, update, true, Some(session)).await
    }

    async fn delete(
        &self,
        filter: Document,
        limit: i32,
        session: Option<&mut ClientSession>,
    ) -> Result<DeleteResult> {
        let statement = doc! {"q": filter, "limit": limit};
        let reply =
            self.run(self.write(WriteKind::Delete, vec![statement], true, limit == 0), session).await?;
        Ok(DeleteResult { deleted_count: reply.n })
    }

    /// Deletes the first matching document. A retryable write.
    pub async fn delete_one(&self, filter: Document) -> Result<DeleteResult> {
        self.delete(filter, 1, None).await
    }

    /// [`delete_one`](Self::delete_one) with an explicit session (in its transaction, if any).
    pub async fn delete_one_with_session(
        &self,
        filter: Document,
        session: &mut ClientSession,
    ) -> Result<DeleteResult> {
        self.delete(filter, 1, Some(session)).await
    }

    /// Deletes every matching document. Not retryable (a multi-document write).
    pub async fn delete_many(&self, filter: Document) -> Result<DeleteResult> {
        self.delete(filter, 0, None).await
    }

    /// [`delete_many`](Self::delete_many) with an explicit session (in its transaction, if
    /// any).
    pub async fn delete_many_with_session(
        &self,
        filter: Document,
        session: &mut ClientSession,
    ) -> Result<DeleteResult> {
        self.delete(filter, 0, Some(session)).await
    }
}

impl Database {
    /// A collection handle (no I/O).
    pub fn collection(&self, name: &str) -> Collection {
        Collection::new(self.clone(), name)
    }
}
