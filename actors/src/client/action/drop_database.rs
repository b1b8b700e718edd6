//! A database's `dropDatabase`: runs once on the primary.

use super::super::database::Database;
use super::super::options::admin::CommandOptions;
use super::drop::{drop_setters, DropNamespace};
use super::into_future;

impl Database {
    /// Drops the database. Not retried.
    pub fn drop(&self) -> DropDatabase<'_> {
        DropDatabase(DropNamespace {
            handle: self.handle(),
            collection: false,
            options: CommandOptions::default(),
            session: None,
        })
    }
}

/// A database's `dropDatabase`: see [`Database::drop`].
#[must_use = "an operation does nothing until it is awaited"]
pub struct DropDatabase<'a>(DropNamespace<'a>);

drop_setters!(DropDatabase);

into_future!(DropDatabase<'a> => ());
