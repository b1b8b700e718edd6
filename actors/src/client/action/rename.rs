//! A collection's `rename` (`renameCollection` on `admin`). Runs once on the primary.

use std::time::Duration;

use bson::{doc, Bson};

use super::super::collection::{Collection, Handle};
use super::super::concern::WriteConcern;
use super::super::ops::rename;
use super::super::options::admin::CommandOptions;
use super::super::session::ClientSession;
use super::{into_future, option_setters};
use crate::error::Result;

impl<T> Collection<T> {
    /// Renames the collection to `to` in the same database (`renameCollection`); with
    /// `drop_target`, an existing `to` is dropped first. Not retried.
    pub fn rename(&self, to: impl AsRef<str>, drop_target: bool) -> Rename<'_> {
        Rename {
            handle: self.handle(),
            to: to.as_ref().to_string(),
            drop_target,
            options: CommandOptions::default(),
            session: None,
        }
    }
}

/// A `rename`: see [`Collection::rename`].
#[must_use = "an operation does nothing until it is awaited"]
pub struct Rename<'a> {
    handle: Handle<'a>,
    to: String,
    drop_target: bool,
    options: CommandOptions,
    session: Option<&'a mut ClientSession>,
}

impl<'a> Rename<'a> {
    option_setters!(options: CommandOptions;
        comment => Bson,
        max_time: Duration,
        write_concern: WriteConcern,
        timeout: Duration,
    );

    async fn execute(self) -> Result<()> {
        let Rename { handle, to, drop_target, options, session } = self;
        let (timeout, write) = handle.begin_write(session.as_deref(), &options)?;
        handle.run(rename::rename(write, &to, drop_target, options), timeout, session).await?;
        Ok(())
    }
}

into_future!(Rename<'a> => ());
