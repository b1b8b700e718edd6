//! A collection's `drop`: runs once on the primary; a collection that does not exist is
//! not an error.

use std::time::Duration;

use bson::Bson;

use super::super::collection::Collection;
use super::super::collection::Handle;
use super::super::concern::WriteConcern;
use super::super::options::admin::CommandOptions;
use super::super::options::official_names::DropCollectionOptions;
use super::super::session::ClientSession;
use super::{into_future, option_setters};
use crate::error::Result;

impl<T> Collection<T> {
    /// Drops the collection (a collection that does not exist is not an error). Not retried.
    pub fn drop(&self) -> DropCollection<'_> {
        DropCollection { handle: self.handle(), options: DropCollectionOptions::default(), session: None }
    }
}

/// A collection's `drop`: see [`Collection::drop`].
#[must_use = "an operation does nothing until it is awaited"]
pub struct DropCollection<'a> {
    handle: Handle<'a>,
    options: DropCollectionOptions,
    session: Option<&'a mut ClientSession>,
}

impl<'a> DropCollection<'a> {
    option_setters!(options: DropCollectionOptions;
        comment => Bson,
        max_time: Duration,
        write_concern: WriteConcern,
        timeout: Duration,
    );

    async fn execute(self) -> Result<()> {
        super::drop::run(self.handle, true, CommandOptions::from(self.options), self.session).await
    }
}

into_future!(DropCollection<'a> => ());
