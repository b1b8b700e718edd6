//! `drop_index`, `drop_index_by_keys` and `drop_indexes`: one `dropIndexes` command. Runs once
//! on the primary.

use std::time::Duration;

use bson::{doc, Bson, Document};

use super::super::collection::{Collection, Handle};
use super::super::concern::WriteConcern;
use super::super::ops::drop_indexes;
use super::super::options::admin::CommandOptions;
use super::super::options::official_names::DropIndexOptions;
use super::super::session::ClientSession;
use super::{into_future, option_setters};
use crate::error::{Error, Result};

impl<T> Collection<T> {
    /// Drops the index named `name` (`"*"` is refused: use
    /// [`drop_indexes`](Self::drop_indexes)). Not retried.
    pub fn drop_index(&self, name: impl AsRef<str>) -> DropIndex<'_> {
        let name = name.as_ref();
        let index = (name != "*").then(|| Bson::String(name.to_string()));
        DropIndex { handle: self.handle(), index, options: DropIndexOptions::default(), session: None }
    }

    /// Drops the index on `keys` (its key pattern). Not retried.
    pub fn drop_index_by_keys(&self, keys: Document) -> DropIndex<'_> {
        DropIndex {
            handle: self.handle(),
            index: Some(Bson::Document(keys)),
            options: DropIndexOptions::default(),
            session: None,
        }
    }

    /// Drops every index but `_id`'s. Not retried.
    pub fn drop_indexes(&self) -> DropIndex<'_> {
        DropIndex {
            handle: self.handle(),
            index: Some(Bson::String("*".into())),
            options: DropIndexOptions::default(),
            session: None,
        }
    }
}

/// A `drop_index` or `drop_indexes`: see [`Collection::drop_index`].
#[must_use = "an operation does nothing until it is awaited"]
pub struct DropIndex<'a> {
    handle: Handle<'a>,
    /// A name, a key pattern or `"*"`; `None`: `drop_index("*")`, refused.
    index: Option<Bson>,
    options: DropIndexOptions,
    session: Option<&'a mut ClientSession>,
}

impl<'a> DropIndex<'a> {
    option_setters!(options: DropIndexOptions;
        comment => Bson,
        max_time: Duration,
        write_concern: WriteConcern,
        timeout: Duration,
    );

    async fn execute(self) -> Result<()> {
        let DropIndex { handle, index, options, session } = self;
        let options = CommandOptions::from(options);
        let (timeout, write) = handle.begin_write(session.as_deref(), &options)?;
        let index = index.ok_or_else(|| {
            Error::invalid_argument("drop_index(\"*\") would drop every index: use drop_indexes")
        })?;
        handle.run(drop_indexes::drop_indexes(write, index, options), timeout, session).await?;
        Ok(())
    }
}

into_future!(DropIndex<'a> => ());
