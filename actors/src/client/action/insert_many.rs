//! `insert_many`: documents in as few `insert` commands as fit. A retryable write per command.

use std::borrow::Borrow;
use std::collections::BTreeMap;
use std::time::Duration;

use bson::Bson;
use serde::Serialize;

use super::super::bulk::{push_statement, RunBatches};
use super::super::codec::encode_raw;
use super::super::collection::{Collection, Handle};
use super::super::concern::WriteConcern;
use super::super::op_options::with_raw_id;
use super::super::ops::write::{option_fields, WriteKind};
use super::super::options::crud::InsertManyOptions;
use super::super::session::ClientSession;
use super::{into_future, option_setters};
use crate::client::results::{BulkWriteResult, InsertManyResult};
use crate::error::{Error, Result};

impl<T: Serialize + Send + Sync + 'static> Collection<T> {
    /// Inserts documents (an `_id` is generated for those that have none), in as few
    /// `insert` commands as fit (at most 100,000 documents and 48 MB each, sent as OP_MSG
    /// document sequences). Ordered by default: the first failed document stops the rest.
    /// A retryable write per command. Failed writes are an
    /// [`ErrorKind::InsertMany`](crate::error::ErrorKind::InsertMany) (the write errors by
    /// document index, and the write concern error); another error (network, timeout) stops
    /// the rest and is returned as it is. Either way
    /// [`Error::partial_result`](crate::error::Error::partial_result) has the `_id`s of the
    /// documents inserted.
    pub fn insert_many(&self, docs: impl IntoIterator<Item = impl Borrow<T>>) -> InsertMany<'_> {
        let docs = docs.into_iter().map(|d| encode_raw(d.borrow())).collect();
        InsertMany { handle: self.handle(), docs, options: InsertManyOptions::default(), session: None }
    }
}

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
            return Err(Error::invalid_argument("insert_many needs at least one document"));
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
            extra: option_fields(options.bypass_document_validation, options.comment, None, options.raw_data),
            write_concern: handle.write_concern_doc(options.write_concern.as_ref(), timeout)?,
            timeout,
        };
        run.run(batches, BulkWriteResult::default(), session).await.map_err(Error::into_insert_many)?;
        Ok(InsertManyResult { inserted_ids })
    }
}

into_future!(InsertMany<'a> => InsertManyResult);
