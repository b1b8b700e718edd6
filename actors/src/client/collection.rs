//! A collection handle and the minimal CRUD operations.

use std::collections::BTreeMap;
use std::time::Duration;

use bson::oid::ObjectId;
use bson::{doc, Bson, Document};
use selection::ReadPreference;

use super::crud::legacy_max_time;
use super::cursor::Cursor;
use super::database::Database;
use super::operation::{read_criteria, Limits, Op, OpOutput, Retry};
use super::transaction::ClientSession;
use crate::selection_actor::Criteria;
use crate::{Error, Result};

/// Options of [`Collection::find`] and [`Collection::find_one`].
#[derive(Debug, Default, Clone)]
pub struct FindOptions {
    /// The most documents to return (`find`'s `limit`).
    pub limit: Option<i64>,
    /// Documents per batch (the first batch and every `getMore`).
    pub batch_size: Option<u32>,
    /// Documents to skip.
    pub skip: Option<u64>,
    /// The sort order.
    pub sort: Option<Document>,
    /// The fields to return.
    pub projection: Option<Document>,
    /// Where to read (default: the client's read preference, primary unless the URI says).
    pub read_preference: Option<ReadPreference>,
    /// This operation's `timeoutMS` (CSOT): `None` keeps the collection's, `Some(ZERO)` means
    /// no limit.
    pub timeout: Option<Duration>,
    /// How `timeoutMS` applies to the cursor (default [`TimeoutMode::CursorLifetime`]; setting
    /// it needs a `timeoutMS`).
    pub timeout_mode: Option<TimeoutMode>,
    /// Legacy `maxTimeMS` for the `find` (ignored when `timeoutMS` is set).
    pub max_time: Option<Duration>,
    /// A tailable cursor (`find` only): it defaults to [`TimeoutMode::Iteration`] and refuses
    /// [`TimeoutMode::CursorLifetime`].
    pub cursor_type: Option<super::crud::CursorType>,
    /// `maxAwaitTimeMS` of a [`CursorType::TailableAwait`](super::crud::CursorType) cursor:
    /// the `maxTimeMS` of its `getMore`s (capped by the remaining `timeoutMS`; must be less
    /// than a non-zero `timeoutMS`).
    pub max_await_time: Option<Duration>,
}

/// How `timeoutMS` applies to a cursor (CSOT `timeoutMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum TimeoutMode {
    /// One deadline for the `find` and every `getMore` (no `maxTimeMS` on `getMore`).
    #[default]
    CursorLifetime,
    /// The `find` and each `getMore` get a deadline of their own.
    Iteration,
}

/// The result of [`Collection::insert_one`].
#[derive(Debug, Clone, PartialEq)]
pub struct InsertOneResult {
    /// The `_id` of the document (generated when it had none).
    pub inserted_id: Bson,
}

/// The result of [`Collection::insert_many`].
#[derive(Debug, Clone, PartialEq)]
pub struct InsertManyResult {
    /// The `_id` of every document, by its index in the input.
    pub inserted_ids: BTreeMap<usize, Bson>,
}

/// The result of [`Collection::update_one`] and [`Collection::update_many`].
#[derive(Debug, Clone, PartialEq)]
pub struct UpdateResult {
    /// Documents the filter matched.
    pub matched_count: u64,
    /// Documents changed.
    pub modified_count: u64,
    /// The `_id` of an upserted document.
    pub upserted_id: Option<Bson>,
}

impl UpdateResult {
    /// The counts and upserted id of an `update` reply with one statement.
    pub(crate) fn from_reply(reply: &Document) -> UpdateResult {
        let upserted_id = reply
            .get_array("upserted")
            .ok()
            .and_then(|u| u.first())
            .and_then(Bson::as_document)
            .and_then(|u| u.get("_id").cloned());
        UpdateResult {
            matched_count: count_of(reply, "n").saturating_sub(u64::from(upserted_id.is_some())),
            modified_count: count_of(reply, "nModified"),
            upserted_id,
        }
    }
}

/// The result of [`Collection::delete_one`] and [`Collection::delete_many`].
#[derive(Debug, Clone, PartialEq)]
pub struct DeleteResult {
    /// Documents deleted.
    pub deleted_count: u64,
}

/// A collection of `bson::Document`s (cheap to clone, no I/O until an operation runs).
#[derive(Debug, Clone)]
pub struct Collection {
    db: Database,
    name: String,
    /// CSOT `timeoutMS` (inherited from the database).
    timeout: Option<Duration>,
}

pub(crate) fn count_of(reply: &Document, key: &str) -> u64 {
    match reply.get(key) {
        Some(Bson::Int32(i)) => u64::try_from(*i).unwrap_or(0),
        Some(Bson::Int64(i)) => u64::try_from(*i).unwrap_or(0),
        Some(Bson::Double(d)) if *d >= 0.0 => *d as u64,
        _ => 0,
    }
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
    pub(crate) async fn run(&self, op: Op, session: Option<&mut ClientSession>) -> Result<OpOutput> {
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

    fn inner(&self) -> &super::ClientInner {
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
        let mode = super::crud::cursor_mode(timeout, options.timeout_mode, options.cursor_type)?;
        super::crud::check_max_await(timeout, options.max_await_time)?;
        match options.cursor_type {
            Some(super::crud::CursorType::Tailable) => {
                command.insert("tailable", true);
            }
            Some(super::crud::CursorType::TailableAwait) => {
                command.insert("tailable", true);
                command.insert("awaitData", true);
            }
            _ => {}
        }
        legacy_max_time(&mut command, options.max_time, timeout);
        let op = self.read_op("find", command, options.read_preference, true);
        let open =
            super::crud::OpenCursor { db: self.db.name(), collection: &self.name, timeout, mode, batch_size };
        let mut cursor = open.run(self.db.client(), op, session).await?;
        if options.cursor_type == Some(super::crud::CursorType::TailableAwait) {
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
        super::crud::cursor_mode(timeout, options.timeout_mode, options.cursor_type)?;
        legacy_max_time(&mut command, options.max_time, timeout);
        let op = self.read_op("find", command, options.read_preference, false);
        let out = super::transaction::run(self.db.client(), op, Limits::new(timeout), session).await?;
        Ok(super::crud::first_batch(&out.reply).into_iter().next())
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

    /// Counts matching documents with the drivers' `aggregate` pipeline (`$match` then
    /// `$group`). A retryable read. With options or a session:
    /// [`count_documents_with`](Self::count_documents_with),
    /// [`count_documents_with_session`](Self::count_documents_with_session).
    pub async fn count_documents(
        &self,
        filter: Document,
        read_preference: Option<ReadPreference>,
    ) -> Result<u64> {
        let options = super::crud::ReadOptions { read_preference, ..Default::default() };
        self.count_documents_with(filter, options).await
    }
}

/// A `find` with the options both `find` and `find_one` take (sort, projection, skip).
/// `doc` with an `_id` first when it has none, and its `_id`.
pub(crate) fn with_id(doc: Document) -> (Document, Bson) {
    match doc.get("_id") {
        Some(id) => {
            let id = id.clone();
            (doc, id)
        }
        None => {
            let id = Bson::ObjectId(ObjectId::new());
            let mut with_id = Document::new();
            with_id.insert("_id", id.clone());
            with_id.extend(doc);
            (with_id, id)
        }
    }
}

pub(crate) fn find_command(collection: &str, filter: Document, options: &FindOptions) -> Document {
    let mut command = doc! {"find": collection, "filter": filter};
    if let Some(s) = &options.sort {
        command.insert("sort", s.clone());
    }
    if let Some(p) = &options.projection {
        command.insert("projection", p.clone());
    }
    if let Some(s) = options.skip {
        command.insert("skip", i64::try_from(s).unwrap_or(i64::MAX));
    }
    command
}
