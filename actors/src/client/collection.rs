//! A collection handle and the minimal CRUD operations.

use std::collections::BTreeMap;
use std::time::Duration;

use bson::{doc, Bson, Document};
use selection::ReadPreference;

use super::cursor::{Cursor, OpenCursor};
use super::database::Database;
use super::op_options::{
    check_max_await, count_of, cursor_mode, find_command, first_batch, legacy_max_time, with_id, CursorType,
};
pub use super::op_options::{
    DeleteResult, FindOptions, InsertManyResult, InsertOneResult, TimeoutMode, UpdateResult,
};
use super::operation::{read_criteria, Limits, Op, OpOutput, Retry};
use super::transaction::ClientSession;
use crate::selection_actor::Criteria;
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
    pub(crate) fn run<'a>(
        &'a self,
        op: Op,
        session: Option<&'a mut ClientSession>,
    ) -> impl std::future::Future<Output = Result<OpOutput>> + 'a {
        super::transaction::run(self.db.client(), op, Limits::new(self.timeout), session)
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

    pub(crate) fn write_op(&self, name: &'static str, mut command: Document) -> Op {
        if let Some(wc) = super::transaction::write_concern(&self.inner().settings, self.timeout) {
            command.insert("writeConcern", wc);
        }
        Op {
            name: name.into(),
            db: self.db.name().to_string(),
            command,
            criteria: Criteria::Write,
            retry: Retry::Write,
            check_write: true,
            opens_cursor: false,
        }
    }

    pub(crate) fn read_op(
        &self,
        name: &'static str,
        mut command: Document,
        rp: Option<ReadPreference>,
        cursor: bool,
    ) -> Op {
        // The commands that take a read concern (listIndexes, say, does not).
        if let (Some(rc), "find" | "aggregate" | "count" | "distinct") =
            (&self.inner().settings.read_concern, name)
        {
            if !command.contains_key("readConcern") {
                command.insert("readConcern", rc.clone());
            }
        }
        Op {
            name: name.into(),
            db: self.db.name().to_string(),
            command,
            criteria: read_criteria(rp, &self.inner().settings.read_preference),
            retry: Retry::Read,
            check_write: false,
            opens_cursor: cursor,
        }
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
            documents.push(Bson::Document(d));
        }
        let op =
            self.write_op("insert", doc! {"insert": &self.name, "documents": documents, "ordered": true});
        self.run(op, session).await?;
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
        let mut command = find_command(&self.name, filter, &options);
        if let Some(l) = options.limit {
            if l < 0 {
                command.insert("limit", -l);
                command.insert("singleBatch", true);
            } else if l > 0 {
                command.insert("limit", l);
            }
        }
        if let Some(b) = batch_size {
            command.insert("batchSize", i64::from(b));
        }
        let timeout = super::timeout::inherit(self.timeout, options.timeout);
        let mode = cursor_mode(timeout, options.timeout_mode, options.cursor_type)?;
        check_max_await(timeout, options.max_await_time)?;
        match options.cursor_type {
            Some(CursorType::Tailable) => {
                command.insert("tailable", true);
            }
            Some(CursorType::TailableAwait) => {
                command.insert("tailable", true);
                command.insert("awaitData", true);
            }
            _ => {}
        }
        legacy_max_time(&mut command, options.max_time, timeout);
        let op = self.read_op("find", command, options.read_preference, true);
        let open = OpenCursor { db: self.db.name(), collection: &self.name, timeout, mode, batch_size };
        let mut cursor = open.run(self.db.client(), op, session).await?;
        if options.cursor_type == Some(CursorType::TailableAwait) {
            cursor.set_max_await(options.max_await_time);
        }
        Ok(cursor)
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
        let mut command = find_command(&self.name, filter, &options);
        command.insert("limit", 1_i64);
        command.insert("singleBatch", true);
        let timeout = super::timeout::inherit(self.timeout, options.timeout);
        cursor_mode(timeout, options.timeout_mode, options.cursor_type)?;
        legacy_max_time(&mut command, options.max_time, timeout);
        let op = self.read_op("find", command, options.read_preference, false);
        let out = super::transaction::run(self.db.client(), op, Limits::new(timeout), session).await?;
        Ok(first_batch(&out.reply).into_iter().next())
    }

    async fn update(
        &self,
        filter: Document,
        update: Document,
        multi: bool,
        session: Option<&mut ClientSession>,
    ) -> Result<UpdateResult> {
        let statement = doc! {"q": filter, "u": update, "multi": multi};
        let mut op =
            self.write_op("update", doc! {"update": &self.name, "updates": [statement], "ordered": true});
        if multi {
            op.retry = Retry::No;
        }
        let reply = self.run(op, session).await?.reply;
        Ok(UpdateResult::from_reply(&reply))
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
        let mut op =
            self.write_op("delete", doc! {"delete": &self.name, "deletes": [statement], "ordered": true});
        if limit == 0 {
            op.retry = Retry::No;
        }
        let reply = self.run(op, session).await?.reply;
        Ok(DeleteResult { deleted_count: count_of(&reply, "n") })
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
