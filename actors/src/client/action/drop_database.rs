//! A database's `dropDatabase`: runs once on the primary.

use std::time::Duration;

use bson::Bson;

use super::super::collection::Handle;
use super::super::concern::WriteConcern;
use super::super::database::Database;
use super::super::options::admin::CommandOptions;
use super::super::options::official_names::DropDatabaseOptions;
use super::super::session::ClientSession;
use super::{into_future, option_setters};
use crate::error::Result;

impl Database {
    /// Drops the database. Not retried.
    pub fn drop(&self) -> DropDatabase<'_> {
        DropDatabase { handle: self.handle(), options: DropDatabaseOptions::default(), session: None }
    }
}

/// A database's `dropDatabase`: see [`Database::drop`].
#[must_use = "an operation does nothing until it is awaited"]
pub struct DropDatabase<'a> {
    handle: Handle<'a>,
    options: DropDatabaseOptions,
    session: Option<&'a mut ClientSession>,
}

impl<'a> DropDatabase<'a> {
    option_setters!(options: DropDatabaseOptions;
        comment => Bson,
        max_time: Duration,
        write_concern: WriteConcern,
        timeout: Duration,
    );

    async fn execute(self) -> Result<()> {
        super::drop::run(self.handle, false, CommandOptions::from(self.options), self.session).await
    }
}

into_future!(DropDatabase<'a> => ());
