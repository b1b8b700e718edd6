//! A collection's `bulk_write`: inserts, updates, replaces and deletes in as few commands as
//! the order allows. The builder collects the models and options; [`bulk`](super::super::bulk)
//! plans and runs the commands.

use std::time::Duration;

use bson::{Bson, Document};

use super::super::bulk::{self, CollectionBulkWriteOptions};
use super::super::collection::{Collection, Handle};
use super::super::concern::WriteConcern;
use super::super::options::write_model::WriteModel;
use super::super::session::ClientSession;
use super::{into_future, option_setters};
use crate::client::results::BulkWriteResult;
use crate::error::Result;

impl<T> Collection<T> {
    /// Runs inserts, updates, replaces and deletes in as few commands as the order allows
    /// (see the module docs). Write errors come back as one [`ErrorKind::CollectionBulkWrite`](crate::error::ErrorKind::CollectionBulkWrite) (kind
    /// [`ErrorKind::Write`](crate::error::ErrorKind::Write)) whose indexes are the models' indexes
    /// (ordered: the first one; unordered: all of them; a write concern error does not stop
    /// the bulk and is reported at the end), with the result of what succeeded. Other errors
    /// (network, timeout, command) stop the bulk at once: an [`ErrorKind::CollectionBulkWrite`](crate::error::ErrorKind::CollectionBulkWrite)
    /// with that error and what the server confirmed before it.
    pub fn bulk_write(
        &self,
        models: impl IntoIterator<Item = impl Into<WriteModel>>,
    ) -> CollectionBulkWrite<'_> {
        CollectionBulkWrite {
            handle: self.handle(),
            models: models.into_iter().map(Into::into).collect(),
            options: CollectionBulkWriteOptions::default(),
            session: None,
        }
    }
}

/// A collection's `bulk_write`: see [`Collection::bulk_write`](crate::client::Collection::bulk_write).
#[must_use = "an operation does nothing until it is awaited"]
pub struct CollectionBulkWrite<'a> {
    handle: Handle<'a>,
    models: Vec<WriteModel>,
    options: CollectionBulkWriteOptions,
    session: Option<&'a mut ClientSession>,
}

impl<'a> CollectionBulkWrite<'a> {
    option_setters!(options: CollectionBulkWriteOptions;
        bypass_document_validation: bool,
        comment => Bson,
        let_vars: Document,
        ordered: bool,
        write_concern: WriteConcern,
        timeout: Duration,
    );

    async fn execute(self) -> Result<BulkWriteResult> {
        let CollectionBulkWrite { handle, models, options, session } = self;
        bulk::run(handle, models, options, session).await
    }
}

into_future!(CollectionBulkWrite<'a> => BulkWriteResult);
