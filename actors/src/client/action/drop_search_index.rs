//! `drop_search_index`: the `dropSearchIndex` command. A missing collection is not an error.
//! Run once.

use std::time::Duration;

use super::super::collection::{Collection, Handle};
use super::super::ops::search_index::SearchIndexCommand;
use super::super::options::search_index::DropSearchIndexOptions;
use super::super::session::ClientSession;
use super::search_index::run;
use super::{into_future, option_setters};
use crate::error::Result;

impl<T> Collection<T> {
    /// Drops the search index `name` (one whose collection does not exist is not an error).
    /// Not retried.
    pub fn drop_search_index(&self, name: impl Into<String>) -> DropSearchIndex<'_> {
        DropSearchIndex {
            handle: self.handle(),
            name: name.into(),
            options: DropSearchIndexOptions::default(),
            session: None,
        }
    }
}

/// Drops a search index: see [`Collection::drop_search_index`].
#[must_use = "an operation does nothing until it is awaited"]
pub struct DropSearchIndex<'a> {
    handle: Handle<'a>,
    name: String,
    options: DropSearchIndexOptions,
    session: Option<&'a mut ClientSession>,
}

impl<'a> DropSearchIndex<'a> {
    option_setters!(options: DropSearchIndexOptions;
        timeout: Duration,
    );

    async fn execute(self) -> Result<()> {
        let DropSearchIndex { handle, name, options, session } = self;
        run(handle, SearchIndexCommand::Drop { name }, options.timeout, session).await?;
        Ok(())
    }
}

into_future!(DropSearchIndex<'a> => ());
