//! `create_search_index` and `create_search_indexes`: the `createSearchIndexes` command,
//! giving the name of the index created (or of each). Run once.

use std::marker::PhantomData;
use std::time::Duration;

use super::super::collection::{Collection, Handle};
use super::super::ops::search_index::SearchIndexCommand;
use super::super::options::search_index::{CreateSearchIndexOptions, SearchIndexModel};
use super::super::session::ClientSession;
use super::search_index::{created_names, run};
use super::{option_setters, Multiple, Single};
use crate::error::{Error, Result};

impl<T> Collection<T> {
    /// Creates an Atlas Search index; gives its name. Not retried.
    pub fn create_search_index(&self, model: SearchIndexModel) -> CreateSearchIndex<'_, Single> {
        CreateSearchIndex::new(self.handle(), vec![model])
    }

    /// Creates several Atlas Search indexes in one command; gives their names. Not retried.
    pub fn create_search_indexes(
        &self,
        models: impl IntoIterator<Item = SearchIndexModel>,
    ) -> CreateSearchIndex<'_, Multiple> {
        CreateSearchIndex::new(self.handle(), models.into_iter().collect())
    }
}

/// Creates search indexes: see [`Collection::create_search_index`].
#[must_use = "an operation does nothing until it is awaited"]
pub struct CreateSearchIndex<'a, Mode> {
    handle: Handle<'a>,
    models: Vec<SearchIndexModel>,
    options: CreateSearchIndexOptions,
    session: Option<&'a mut ClientSession>,
    _mode: PhantomData<fn() -> Mode>,
}

impl<'a, M> CreateSearchIndex<'a, M> {
    fn new(handle: Handle<'a>, models: Vec<SearchIndexModel>) -> Self {
        let options = CreateSearchIndexOptions::default();
        CreateSearchIndex { handle, models, options, session: None, _mode: PhantomData }
    }

    option_setters!(options: CreateSearchIndexOptions;
        timeout: Duration,
    );

    async fn names(self) -> Result<Vec<String>> {
        let CreateSearchIndex { handle, models, options, session, .. } = self;
        let reply = run(handle, SearchIndexCommand::Create(models), options.timeout, session).await?;
        Ok(created_names(&reply))
    }
}

impl<'a> CreateSearchIndex<'a, Multiple> {
    async fn execute(self) -> Result<Vec<String>> {
        self.names().await
    }
}

impl<'a> CreateSearchIndex<'a, Single> {
    async fn execute(self) -> Result<String> {
        let mut names = self.names().await?;
        match (names.pop(), names.is_empty()) {
            (Some(name), true) => Ok(name),
            _ => Err(Error::new(crate::error::ErrorKind::InvalidResponse {
                message: "createSearchIndexes did not name the one index it created".into(),
            })),
        }
    }
}

/// `IntoFuture`, `Action` and the sync `run()` of one mode.
macro_rules! search_index_future {
    ($mode:ty => $out:ty) => {
        impl<'a> std::future::IntoFuture for CreateSearchIndex<'a, $mode> {
            type Output = Result<$out>;
            type IntoFuture = futures_util::future::BoxFuture<'a, Result<$out>>;

            fn into_future(self) -> Self::IntoFuture {
                Box::pin(self.execute())
            }
        }

        impl super::private::Sealed for CreateSearchIndex<'_, $mode> {}
        impl super::Action for CreateSearchIndex<'_, $mode> {}

        #[cfg(feature = "sync")]
        impl CreateSearchIndex<'_, $mode> {
            /// Runs the action to completion, blocking (the sync API).
            pub fn run(self) -> Result<$out> {
                crate::client::sync::runtime::block_on(std::future::IntoFuture::into_future(self))
            }
        }
    };
}

search_index_future!(Single => String);
search_index_future!(Multiple => Vec<String>);
