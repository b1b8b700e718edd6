//! `update_one` and `update_many`: one builder. `update_one` is a retryable write;
//! `update_many` changes many documents, so it runs once.

use std::time::Duration;

use bson::{Bson, Document};

use super::super::codec::to_raw;
use super::super::collection::{Collection, Handle};
use super::super::concern::WriteConcern;
use super::super::ops::statement::{check_modifications, UpdateStatement};
use super::super::ops::write::{option_fields, WriteKind};
use super::super::options::crud::{Collation, Hint, UpdateModifications, UpdateOptions};
use super::super::session::ClientSession;
use super::{into_future, option_setters};
use crate::client::results::UpdateResult;
use crate::error::{Error, Result};

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
}

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
            return Err(Error::invalid_argument("update_many does not take a sort"));
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
        let fields = option_fields(
            options.bypass_document_validation,
            options.comment,
            options.let_vars,
            options.raw_data,
        );
        run_update(handle, statement, fields, options.write_concern.as_ref(), timeout, session).await
    }
}

into_future!(Update<'a> => UpdateResult);

/// Runs one `update` statement, an update or a replacement, with its command-level `fields`:
/// a retryable write unless the statement is `multi`.
pub(super) async fn run_update(
    handle: Handle<'_>,
    statement: UpdateStatement,
    fields: Document,
    write_concern: Option<&WriteConcern>,
    timeout: Option<Duration>,
    session: Option<&mut ClientSession>,
) -> Result<UpdateResult> {
    let many = statement.multi;
    let write_concern = handle.write_concern_doc(write_concern, timeout)?;
    let statements = vec![to_raw(&statement.into_document())?];
    let op = handle.write(WriteKind::Update, statements, true, many, write_concern, fields);
    Ok(handle.run(op, timeout, session).await?.into_update_result())
}
