//! `delete_one` and `delete_many`: one builder. `delete_one` is a retryable write;
//! `delete_many` deletes many documents, so it runs once.

use std::time::Duration;

use bson::{Bson, Document};

use super::super::codec::to_raw;
use super::super::collection::{Collection, Handle};
use super::super::concern::WriteConcern;
use super::super::ops::statement::delete_statement;
use super::super::ops::write::{option_fields, WriteKind};
use super::super::options::crud::{Collation, DeleteOptions, Hint};
use super::super::session::ClientSession;
use super::{into_future, option_setters};
use crate::client::results::DeleteResult;
use crate::error::Result;

impl<T> Collection<T> {
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
}

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
        let extra = option_fields(None, options.comment, options.let_vars, options.raw_data);
        let op = handle.write(WriteKind::Delete, vec![to_raw(&statement)?], true, many, wc, extra);
        Ok(DeleteResult { deleted_count: handle.run(op, timeout, session).await?.n })
    }
}

into_future!(Delete<'a> => DeleteResult);
