//! `replace_one`: the first matching document replaced by another. A retryable write.

use std::borrow::Borrow;
use std::time::Duration;

use bson::{Bson, Document};
use serde::Serialize;

use super::super::codec::encode;
use super::super::collection::{Collection, Handle};
use super::super::concern::WriteConcern;
use super::super::op_options::check_replacement;
use super::super::ops::statement::UpdateStatement;
use super::super::ops::write::option_fields;
use super::super::options::crud::{Collation, Hint, ReplaceOptions};
use super::super::session::ClientSession;
use super::update::run_update;
use super::{into_future, option_setters};
use crate::client::results::UpdateResult;
use crate::error::Result;

impl<T: Serialize + Send + Sync + 'static> Collection<T> {
    /// Replaces the first document matching `filter` with `replacement` (which may not
    /// contain update operators). A retryable write.
    pub fn replace_one(&self, filter: Document, replacement: impl Borrow<T>) -> ReplaceOne<'_> {
        ReplaceOne {
            handle: self.handle(),
            filter,
            replacement: encode(replacement.borrow()),
            options: ReplaceOptions::default(),
            session: None,
        }
    }
}

/// A `replace_one`: see [`Collection::replace_one`].
#[must_use = "an operation does nothing until it is awaited"]
pub struct ReplaceOne<'a> {
    handle: Handle<'a>,
    filter: Document,
    replacement: Result<Document>,
    options: ReplaceOptions,
    session: Option<&'a mut ClientSession>,
}

impl<'a> ReplaceOne<'a> {
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
        let ReplaceOne { handle, filter, replacement, options, session } = self;
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
        let fields = option_fields(
            options.bypass_document_validation,
            options.comment,
            options.let_vars,
            options.raw_data,
        );
        run_update(handle, statement, fields, options.write_concern.as_ref(), timeout, session).await
    }
}

into_future!(ReplaceOne<'a> => UpdateResult);
