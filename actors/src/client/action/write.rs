//! Writes: `insert_one`, `insert_many` (split into batches that fit a command), `update_*`,
//! `replace_one`, `delete_*` and the `find_one_and_*` family. Single-document writes are
//! retryable writes; multi-document updates and deletes run once.

use std::borrow::Borrow;
use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::time::Duration;

use bson::{Bson, Document};
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::super::bulk::{
    check_modifications, delete_statement, push_statement, RunBatches, UpdateStatement,
};
use super::super::collection::{Collection, Handle};
use super::super::concern::WriteConcern;
use super::super::op_options::{check_replacement, with_raw_id};
use super::super::ops::find_and_modify::FindAndModify;
use super::super::ops::write::WriteKind;
use super::super::ops::{append, legacy_max_time};
use super::super::options::crud::{
    Collation, DeleteOptions, FindAndModifyFields, FindOneAndDeleteOptions, FindOneAndReplaceOptions,
    FindOneAndUpdateOptions, Hint, InsertManyOptions, InsertOneOptions, ReplaceOptions, ReturnDocument,
    UpdateModifications, UpdateOptions,
};
use super::super::session::transaction::refuse_own_concerns;
use super::super::session::ClientSession;
use super::{decode, encode, encode_raw, into_future, option_setters, to_raw};
use crate::results::{BulkWriteResult, DeleteResult, InsertManyResult, InsertOneResult, UpdateResult};
use crate::{Error, Result};

impl<T: Serialize + Send + Sync + 'static> Collection<T> {
    /// Inserts one document (an `_id` is generated when it has none). A retryable write.
    pub fn insert_one(&self, doc: impl Borrow<T>) -> InsertOne<'_> {
        InsertOne {
            handle: self.handle(),
            doc: encode_raw(doc.borrow()),
            options: InsertOneOptions::default(),
            session: None,
        }
    }

    /// Inserts documents (an `_id` is generated for those that have none), in as few
    /// `insert` commands as fit (at most 100,000 documents and 48 MB each, sent as OP_MSG
    /// document sequences). Ordered by default: the first failed document stops the rest.
    /// A retryable write per command. Failed writes are an [`Error::BulkWrite`] whose
    /// `partial_result.inserted_ids` are the documents that were inserted; another error
    /// (network, timeout) stops the rest: an [`Error::BulkWriteStopped`] with the documents
    /// inserted before it.
    pub fn insert_many(&self, docs: impl IntoIterator<Item = impl Borrow<T>>) -> InsertMany<'_> {
        let docs = docs.into_iter().map(|d| encode_raw(d.borrow())).collect();
        InsertMany { handle: self.handle(), docs, options: InsertManyOptions::default(), session: None }
    }

    /// Replaces the first document matching `filter` with `replacement` (which may not
    /// contain update operators). A retryable write.
    pub fn replace_one(&self, filter: Document, replacement: impl Borrow<T>) -> Replace<'_> {
        Replace {
            handle: self.handle(),
            filter,
            replacement: encode(replacement.borrow()),
            options: ReplaceOptions::default(),
            session: None,
        }
    }

    /// Replaces the first document matching `filter` and returns it as it was (or as it is,
    /// with [`ReturnDocument::After`]). A retryable write.
    pub fn find_one_and_replace(
        &self,
        filter: Document,
        replacement: impl Borrow<T>,
    ) -> FindOneAndReplace<'_, T> {
        FindOneAndReplace {
            handle: self.handle(),
            filter,
            replacement: encode(replacement.borrow()),
            options: FindOneAndReplaceOptions::default(),
            session: None,
            _type: PhantomData,
        }
    }
}

impl<T> Collection<T> {
    /// Updates the first document matching `filter` with an update document (`$set`, ...)
    /// or an update pipeline. A retryable write.
    pub fn update_one(&self, filter: Document, update: impl Into<UpdateModifications>) -> Update<'_> {
        Update::new(self.handle(), filter, update.into(), false)
    }

    /// Updates every document matching `filter`. Not retryable (a multi-document write),
    /// so it runs once.
    pub fn update_many(&self, filter: Document, update: impl Into<UpdateModifications>) -> Update<'_> {
        Update::new(self.handle(), filter, update.into(), true)
    }

    /// Deletes the first document matching `filter`. A retryable write.
    pub fn delete_one(&self, filter: Document) -> Delete<'_> {
        Delete {
            handle: self.handle(),
            filter,
            many: false,
            options: DeleteOptions::default(),
            session: None,
        }
    }

    /// Deletes every document matching `filter`. Not retryable (a multi-document write).
    pub fn delete_many(&self, filter: Document) -> Delete<'_> {
        Delete { handle: self.handle(), filter, many: true, options: DeleteOptions::default(), session: None }
    }

    /// Deletes the first document matching `filter` (in `sort` order) and returns it. A
    /// retryable write.
    pub fn find_one_and_delete(&self, filter: Document) -> FindOneAndDelete<'_, T> {
        FindOneAndDelete {
            handle: self.handle(),
            filter,
            options: FindOneAndDeleteOptions::default(),
            session: None,
            _type: PhantomData,
        }
    }

    /// Updates the first document matching `filter` and returns it as it was (or as it is,
    /// with [`ReturnDocument::After`]). A retryable write.
    pub fn find_one_and_update(
        &self,
        filter: Document,
        update: impl Into<UpdateModifications>,
    ) -> FindOneAndUpdate<'_, T> {
        FindOneAndUpdate {
            handle: self.handle(),
            filter,
            update: update.into(),
            options: FindOneAndUpdateOptions::default(),
            session: None,
            _type: PhantomData,
        }
    }
}

/// The command-level fields of a write (`bypassDocumentValidation`, `comment`, `let`).
fn extra(
    bypass: Option<bool>,
    comment: Option<Bson>,
    let_vars: Option<Document>,
    raw_data: Option<bool>,
) -> Document {
    let mut extra = Document::new();
    append(&mut extra, "bypassDocumentValidation", bypass);
    append(&mut extra, "comment", comment);
    append(&mut extra, "let", let_vars);
    append(&mut extra, "rawData", raw_data);
    extra
}

/// An `insert_one`: see [`Collection::insert_one`].
#[must_use = "an operation does nothing until it is awaited"]
pub struct InsertOne<'a> {
    handle: Handle<'a>,
    /// The document's bytes, serialized once, or why it did not serialize (reported when
    /// the operation runs).
    doc: Result<bson::RawDocumentBuf>,
    options: InsertOneOptions,
    session: Option<&'a mut ClientSession>,
}

impl<'a> InsertOne<'a> {
    option_setters!(options: InsertOneOptions;
        bypass_document_validation: bool,
        comment => Bson,
        write_concern: WriteConcern,
        timeout: Duration,
    );

    async fn execute(self) -> Result<InsertOneResult> {
        let InsertOne { handle, doc, options, session } = self;
        let timeout =
            handle.begin(session.as_deref(), false, options.write_concern.is_some(), options.timeout)?;
        let (doc, inserted_id) = with_raw_id(doc?)?;
        let wc = handle.write_concern_doc(options.write_concern.as_ref(), timeout)?;
        let extra = extra(options.bypass_document_validation, options.comment, None, options.raw_data);
        let op = handle.write(WriteKind::Insert, vec![doc], true, false, wc, extra);
        handle.run(op, timeout, session).await?;
        Ok(InsertOneResult { inserted_id })
    }
}

into_future!(InsertOne<'a> => InsertOneResult);

/// An `insert_many`: see [`Collection::insert_many`].
#[must_use = "an operation does nothing until it is awaited"]
pub struct InsertMany<'a> {
    handle: Handle<'a>,
    /// Each document's bytes, serialized once.
    docs: Vec<Result<bson::RawDocumentBuf>>,
    options: InsertManyOptions,
    session: Option<&'a mut ClientSession>,
}

impl<'a> InsertMany<'a> {
    option_setters!(options: InsertManyOptions;
        bypass_document_validation: bool,
        comment => Bson,
        ordered: bool,
        write_concern: WriteConcern,
        timeout: Duration,
    );

    async fn execute(self) -> Result<InsertManyResult> {
        let InsertMany { handle, docs, options, session } = self;
        let timeout =
            handle.begin(session.as_deref(), false, options.write_concern.is_some(), options.timeout)?;
        if docs.is_empty() {
            return Err(Error::InvalidOptions { message: "insert_many needs at least one document".into() });
        }
        let mut inserted_ids = BTreeMap::new();
        let mut batches = Vec::new();
        for (i, d) in docs.into_iter().enumerate() {
            let (d, id) = with_raw_id(d?)?;
            inserted_ids.insert(i, id);
            push_statement(&mut batches, WriteKind::Insert, d, i, false)?;
        }
        let run = RunBatches {
            handle,
            ordered: options.ordered.unwrap_or(true),
            extra: extra(options.bypass_document_validation, options.comment, None, options.raw_data),
            write_concern: handle.write_concern_doc(options.write_concern.as_ref(), timeout)?,
            timeout,
        };
        run.run(batches, BulkWriteResult::default(), session).await?;
        Ok(InsertManyResult { inserted_ids })
    }
}

into_future!(InsertMany<'a> => InsertManyResult);

/// An `update_one` or `update_many`: see [`Collection::update_one`].
#[must_use = "an operation does nothing until it is awaited"]
pub struct Update<'a> {
    handle: Handle<'a>,
    filter: Document,
    update: UpdateModifications,
    many: bool,
    options: UpdateOptions,
    session: Option<&'a mut ClientSession>,
}

impl<'a> Update<'a> {
    fn new(handle: Handle<'a>, filter: Document, update: UpdateModifications, many: bool) -> Self {
        Update { handle, filter, update, many, options: UpdateOptions::default(), session: None }
    }

    option_setters!(options: UpdateOptions;
        array_filters: Vec<Document>,
        bypass_document_validation: bool,
        collation: Collation,
        comment => Bson,
        hint => Hint,
        upsert: bool,
        sort: Document,
        let_vars: Document,
        write_concern: WriteConcern,
        timeout: Duration,
    );

    async fn execute(self) -> Result<UpdateResult> {
        let Update { handle, filter, update, many, options, session } = self;
        let timeout =
            handle.begin(session.as_deref(), false, options.write_concern.is_some(), options.timeout)?;
        check_modifications(&update)?;
        if many && options.sort.is_some() {
            return Err(Error::InvalidOptions { message: "update_many does not take a sort".into() });
        }
        let statement = UpdateStatement {
            filter,
            update: update.into(),
            multi: many,
            upsert: options.upsert,
            array_filters: options.array_filters,
            collation: options.collation,
            hint: options.hint,
            sort: options.sort,
        };
        let wc = handle.write_concern_doc(options.write_concern.as_ref(), timeout)?;
        let extra =
            extra(options.bypass_document_validation, options.comment, options.let_vars, options.raw_data);
        let op =
            handle.write(WriteKind::Update, vec![to_raw(&statement.into_document())?], true, many, wc, extra);
        Ok(handle.run(op, timeout, session).await?.into_update_result())
    }
}

into_future!(Update<'a> => UpdateResult);

/// A `replace_one`: see [`Collection::replace_one`].
#[must_use = "an operation does nothing until it is awaited"]
pub struct Replace<'a> {
    handle: Handle<'a>,
    filter: Document,
    replacement: Result<Document>,
    options: ReplaceOptions,
    session: Option<&'a mut ClientSession>,
}

impl<'a> Replace<'a> {
    option_setters!(options: ReplaceOptions;
        bypass_document_validation: bool,
        collation: Collation,
        comment => Bson,
        hint => Hint,
        upsert: bool,
        sort: Document,
        let_vars: Document,
        write_concern: WriteConcern,
        timeout: Duration,
    );

    async fn execute(self) -> Result<UpdateResult> {
        let Replace { handle, filter, replacement, options, session } = self;
        let timeout =
            handle.begin(session.as_deref(), false, options.write_concern.is_some(), options.timeout)?;
        let replacement = replacement?;
        check_replacement(&replacement)?;
        let statement = UpdateStatement {
            filter,
            update: Bson::Document(replacement),
            multi: false,
            upsert: options.upsert,
            array_filters: None,
            collation: options.collation,
            hint: options.hint,
            sort: options.sort,
        };
        let wc = handle.write_concern_doc(options.write_concern.as_ref(), timeout)?;
        let extra =
            extra(options.bypass_document_validation, options.comment, options.let_vars, options.raw_data);
        let op = handle.write(
            WriteKind::Update,
            vec![to_raw(&statement.into_document())?],
            true,
            false,
            wc,
            extra,
        );
        Ok(handle.run(op, timeout, session).await?.into_update_result())
    }
}

into_future!(Replace<'a> => UpdateResult);

/// A `delete_one` or `delete_many`: see [`Collection::delete_one`].
#[must_use = "an operation does nothing until it is awaited"]
pub struct Delete<'a> {
    handle: Handle<'a>,
    filter: Document,
    many: bool,
    options: DeleteOptions,
    session: Option<&'a mut ClientSession>,
}

impl<'a> Delete<'a> {
    option_setters!(options: DeleteOptions;
        collation: Collation,
        comment => Bson,
        hint => Hint,
        let_vars: Document,
        write_concern: WriteConcern,
        timeout: Duration,
    );

    async fn execute(self) -> Result<DeleteResult> {
        let Delete { handle, filter, many, options, session } = self;
        let timeout =
            handle.begin(session.as_deref(), false, options.write_concern.is_some(), options.timeout)?;
        let statement = delete_statement(filter, many, options.collation, options.hint);
        let wc = handle.write_concern_doc(options.write_concern.as_ref(), timeout)?;
        let extra = extra(None, options.comment, options.let_vars, options.raw_data);
        let op = handle.write(WriteKind::Delete, vec![to_raw(&statement)?], true, many, wc, extra);
        Ok(DeleteResult { deleted_count: handle.run(op, timeout, session).await?.n })
    }
}

into_future!(Delete<'a> => DeleteResult);

/// Runs a `findAndModify` of `change` (`None`: a delete) and reads the document as a `T`.
async fn find_and_modify<T: DeserializeOwned + 'static>(
    handle: Handle<'_>,
    filter: Document,
    change: Option<Bson>,
    options: FindAndModifyFields,
    session: Option<&mut ClientSession>,
) -> Result<Option<T>> {
    let timeout = handle.op_timeout(options.timeout);
    // An unacknowledged write has no reply to read: there is no document to return (in a
    // transaction the write concern is the commit's, and the statement is acknowledged).
    let in_transaction = session.as_ref().is_some_and(|s| s.in_transaction());
    let unacknowledged = !in_transaction
        && options
            .write_concern
            .as_ref()
            .or(handle.settings.write_concern.as_ref())
            .is_some_and(|w| !w.is_acknowledged());
    let op = FindAndModify {
        ns: handle.namespace(),
        filter,
        change,
        max_time_ms: legacy_max_time(options.max_time, timeout),
        write_concern: handle.write_concern_doc(options.write_concern.as_ref(), timeout)?,
        options,
    };
    let found = handle.run(op, timeout, session).await?;
    if unacknowledged {
        return Ok(None);
    }
    found.map(decode).transpose()
}

/// A `find_one_and_delete`: see [`Collection::find_one_and_delete`]. Gives `Option<T>`.
#[must_use = "an operation does nothing until it is awaited"]
pub struct FindOneAndDelete<'a, T = Document> {
    handle: Handle<'a>,
    filter: Document,
    options: FindOneAndDeleteOptions,
    session: Option<&'a mut ClientSession>,
    _type: PhantomData<fn() -> T>,
}

impl<'a, T: DeserializeOwned + 'static> FindOneAndDelete<'a, T> {
    option_setters!(options: FindOneAndDeleteOptions;
        collation: Collation,
        comment => Bson,
        hint => Hint,
        max_time: Duration,
        projection: Document,
        sort: Document,
        let_vars: Document,
        write_concern: WriteConcern,
        timeout: Duration,
    );

    async fn execute(self) -> Result<Option<T>> {
        let FindOneAndDelete { handle, filter, options, session, .. } = self;
        refuse_own_concerns(session.as_deref(), false, options.write_concern.is_some())?;
        find_and_modify(handle, filter, None, options.into(), session).await
    }
}

into_future!(FindOneAndDelete<'a, T> => Option<T>, where T: DeserializeOwned + Send + Sync + 'static);

/// A `find_one_and_replace`: see [`Collection::find_one_and_replace`]. Gives `Option<T>`.
#[must_use = "an operation does nothing until it is awaited"]
pub struct FindOneAndReplace<'a, T = Document> {
    handle: Handle<'a>,
    filter: Document,
    replacement: Result<Document>,
    options: FindOneAndReplaceOptions,
    session: Option<&'a mut ClientSession>,
    _type: PhantomData<fn() -> T>,
}

impl<'a, T: DeserializeOwned + 'static> FindOneAndReplace<'a, T> {
    option_setters!(options: FindOneAndReplaceOptions;
        bypass_document_validation: bool,
        collation: Collation,
        comment => Bson,
        hint => Hint,
        max_time: Duration,
        projection: Document,
        return_document: ReturnDocument,
        sort: Document,
        upsert: bool,
        let_vars: Document,
        write_concern: WriteConcern,
        timeout: Duration,
    );

    async fn execute(self) -> Result<Option<T>> {
        let FindOneAndReplace { handle, filter, replacement, options, session, .. } = self;
        refuse_own_concerns(session.as_deref(), false, options.write_concern.is_some())?;
        let replacement = replacement?;
        check_replacement(&replacement)?;
        find_and_modify(handle, filter, Some(Bson::Document(replacement)), options.into(), session).await
    }
}

into_future!(FindOneAndReplace<'a, T> => Option<T>, where T: DeserializeOwned + Send + Sync + 'static);

/// A `find_one_and_update`: see [`Collection::find_one_and_update`]. Gives `Option<T>`.
#[must_use = "an operation does nothing until it is awaited"]
pub struct FindOneAndUpdate<'a, T = Document> {
    handle: Handle<'a>,
    filter: Document,
    update: UpdateModifications,
    options: FindOneAndUpdateOptions,
    session: Option<&'a mut ClientSession>,
    _type: PhantomData<fn() -> T>,
}

impl<'a, T: DeserializeOwned + 'static> FindOneAndUpdate<'a, T> {
    option_setters!(options: FindOneAndUpdateOptions;
        array_filters: Vec<Document>,
        bypass_document_validation: bool,
        collation: Collation,
        comment => Bson,
        hint => Hint,
        max_time: Duration,
        projection: Document,
        return_document: ReturnDocument,
        sort: Document,
        upsert: bool,
        let_vars: Document,
        write_concern: WriteConcern,
        timeout: Duration,
    );

    async fn execute(self) -> Result<Option<T>> {
        let FindOneAndUpdate { handle, filter, update, options, session, .. } = self;
        refuse_own_concerns(session.as_deref(), false, options.write_concern.is_some())?;
        check_modifications(&update)?;
        find_and_modify(handle, filter, Some(update.into()), options.into(), session).await
    }
}

into_future!(FindOneAndUpdate<'a, T> => Option<T>, where T: DeserializeOwned + Send + Sync + 'static);
