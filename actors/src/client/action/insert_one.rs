//! `insert_one`: one document (an `_id` is generated when it has none). A retryable write.

use std::borrow::Borrow;
use std::time::Duration;

use bson::Bson;
use serde::Serialize;

use super::super::codec::encode_raw;
use super::super::collection::{Collection, Handle};
use super::super::concern::WriteConcern;
use super::super::op_options::with_raw_id;
use super::super::ops::write::{option_fields, WriteKind};
use super::super::options::crud::InsertOneOptions;
use super::super::session::ClientSession;
use super::{into_future, option_setters};
use crate::client::results::InsertOneResult;
use crate::error::Result;

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
        let extra =
            option_fields(options.bypass_document_validation, options.comment, None, options.raw_data);
        let op = handle.write(WriteKind::Insert, vec![doc], true, false, wc, extra);
        handle.run(op, timeout, session).await?;
        Ok(InsertOneResult { inserted_id })
    }
}

into_future!(InsertOne<'a> => InsertOneResult);
