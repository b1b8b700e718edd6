//! A collection's `drop` and a database's `dropDatabase`: one builder. Runs once on the
//! primary; dropping a collection that does not exist is not an error.

use std::time::Duration;

use bson::{doc, Bson};

use super::super::collection::{Collection, Handle};
use super::super::concern::WriteConcern;
use super::super::database::Database;
use super::super::ops::drop;
use super::super::options::admin::CommandOptions;
use super::super::session::ClientSession;
use super::{into_future, option_setters};
use crate::Result;

impl<T> Collection<T> {
    /// Drops the collection (a collection that does not exist is not an error). Not retried.
    pub fn drop(&self) -> DropNamespace<'_> {
        DropNamespace {
            handle: self.handle(),
            collection: true,
            options: CommandOptions::default(),
            session: None,
        }
    }
}

impl Database {
    /// Drops the database. Not retried.
    pub fn drop(&self) -> DropNamespace<'_> {
        DropNamespace {
            handle: self.handle(),
            collection: false,
            options: CommandOptions::default(),
            session: None,
        }
    }
}

/// A collection's or database's `drop`: see [`Collection::drop`], [`Database::drop`].
#[must_use = "an operation does nothing until it is awaited"]
pub struct DropNamespace<'a> {
    handle: Handle<'a>,
    /// The collection (`false`: the database).
    collection: bool,
    options: CommandOptions,
    session: Option<&'a mut ClientSession>,
}

impl<'a> DropNamespace<'a> {
    option_setters!(options: CommandOptions;
        comment => Bson,
        max_time: Duration,
        write_concern: WriteConcern,
        timeout: Duration,
    );

    async fn execute(self) -> Result<()> {
        let DropNamespace { handle, collection, options, session } = self;
        let (timeout, write) = handle.begin_write(session.as_deref(), &options)?;
        match handle.run(drop::drop(write, collection, options), timeout, session).await {
            Err(e) if collection && e.code() == Some(drop::NAMESPACE_NOT_FOUND) => Ok(()),
            Err(e) => Err(e),
            Ok(_) => Ok(()),
        }
    }
}

into_future!(DropNamespace<'a> => ());
