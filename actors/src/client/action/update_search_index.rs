//! `update_search_index`: the `updateSearchIndex` command, replacing an index's definition.
//! Run once.

use std::time::Duration;

use bson::Document;

use super::super::collection::{Collection, Handle};
use super::super::ops::search_index::SearchIndexCommand;
use super::super::options::search_index::UpdateSearchIndexOptions;
use super::super::session::ClientSession;
use super::search_index::run;
use super::{into_future, option_setters};
use crate::error::Result;

impl<T> Collection<T> {
    /// Replaces the definition of the search index `name`. Not retried.
    pub fn update_search_index(
        &self,
        name: impl Into<String>,
        definition: Document,
    ) -> UpdateSearchIndex<'_> {
        UpdateSearchIndex {
            handle: self.handle(),
            name: name.into(),
            definition,
            options: UpdateSearchIndexOptions::default(),
            session: None,
        }
    }
}

/// Updates a search index: see [`Collection::update_search_index`].
#[must_use = "an operation does nothing until it is awaited"]
pub struct UpdateSearchIndex<'a> {
    handle: Handle<'a>,
    name: String,
    definition: Document,
    options: UpdateSearchIndexOptions,
    session: Option<&'a mut ClientSession>,
}

impl<'a> UpdateSearchIndex<'a> {
    option_setters!(options: UpdateSearchIndexOptions;
        timeout: Duration,
    );

    async fn execute(self) -> Result<()> {
        let UpdateSearchIndex { handle, name, definition, options, session } = self;
        run(handle, SearchIndexCommand::Update { name, definition }, options.timeout, session).await?;
        Ok(())
    }
}

into_future!(UpdateSearchIndex<'a> => ());
