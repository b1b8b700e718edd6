//! Atlas Search indexes: `create_search_index(es)`, `update_search_index` and
//! `drop_search_index` (one builder), and `list_search_indexes` (an aggregate). Run once.

use std::marker::PhantomData;
use std::time::Duration;

use bson::{doc, Document};

use super::super::collection::{Collection, Handle};
use super::super::ops::drop::NAMESPACE_NOT_FOUND;
use super::super::ops::search_index;
use super::super::ops::search_index::SearchIndexCommand;
use super::super::options::admin::RunCommandOptions;
use super::super::options::admin::SearchIndexModel;
use super::super::session::ClientSession;
use super::{into_future, option_setters};
use crate::Result;

impl<T> Collection<T> {
    /// Creates an Atlas Search index; gives its name. Not retried.
    pub fn create_search_index(&self, model: SearchIndexModel) -> SearchIndex<'_, String> {
        SearchIndex::new(self.handle(), SearchIndexCommand::Create(vec![model]))
    }

    /// Creates several Atlas Search indexes in one command; gives their names. Not retried.
    pub fn create_search_indexes(
        &self,
        models: impl IntoIterator<Item = SearchIndexModel>,
    ) -> SearchIndex<'_, Vec<String>> {
        SearchIndex::new(self.handle(), SearchIndexCommand::Create(models.into_iter().collect()))
    }

    /// Replaces the definition of the search index `name`. Not retried.
    pub fn update_search_index(&self, name: impl AsRef<str>, definition: Document) -> SearchIndex<'_, ()> {
        let command = SearchIndexCommand::Update { name: name.as_ref().to_string(), definition };
        SearchIndex::new(self.handle(), command)
    }

    /// Drops the search index `name` (one that does not exist is not an error). Not retried.
    pub fn drop_search_index(&self, name: impl AsRef<str>) -> SearchIndex<'_, ()> {
        SearchIndex::new(self.handle(), SearchIndexCommand::Drop { name: name.as_ref().to_string() })
    }

    /// The collection's search indexes (`$listSearchIndexes`; `name` for one of them), with
    /// the aggregate's cursor options. Sends no read concern.
    pub fn list_search_indexes(
        &self,
        name: Option<&str>,
        options: impl Into<Option<super::super::options::crud::AggregateOptions>>,
    ) -> super::aggregate::Aggregate<'_> {
        let mut stage = Document::new();
        if let Some(n) = name {
            stage.insert("name", n);
        }
        let mut options = options.into().unwrap_or_default();
        // The server's default read concern: none is sent.
        options.read_concern = Some(super::super::concern::ReadConcern::default());
        self.aggregate([doc! {"$listSearchIndexes": stage}]).with_options(options)
    }
}

/// What a search index command gives: the created names, one name, or nothing.
pub trait SearchIndexOutput: Sized + Send {
    /// From the reply.
    #[doc(hidden)]
    fn from_reply(reply: &Document) -> Self;
}

impl SearchIndexOutput for () {
    fn from_reply(_: &Document) -> Self {}
}

impl SearchIndexOutput for Vec<String> {
    fn from_reply(reply: &Document) -> Self {
        let created = reply.get_array("indexesCreated").map(Vec::as_slice).unwrap_or_default();
        created.iter().filter_map(|i| i.as_document()?.get_str("name").ok().map(str::to_owned)).collect()
    }
}

impl SearchIndexOutput for String {
    fn from_reply(reply: &Document) -> Self {
        Vec::<String>::from_reply(reply).into_iter().next().unwrap_or_default()
    }
}

/// A search index command: see [`Collection::create_search_index`].
#[must_use = "an operation does nothing until it is awaited"]
pub struct SearchIndex<'a, R> {
    handle: Handle<'a>,
    command: SearchIndexCommand,
    options: RunCommandOptions,
    session: Option<&'a mut ClientSession>,
    _out: PhantomData<fn() -> R>,
}

impl<'a, R: SearchIndexOutput> SearchIndex<'a, R> {
    fn new(handle: Handle<'a>, command: SearchIndexCommand) -> Self {
        SearchIndex {
            handle,
            command,
            options: RunCommandOptions::default(),
            session: None,
            _out: PhantomData,
        }
    }

    option_setters!(options: RunCommandOptions;
        timeout: Duration,
    );

    async fn execute(self) -> Result<R> {
        let SearchIndex { handle, command, options, session, .. } = self;
        let timeout = handle.op_timeout(options.timeout);
        let drop = matches!(command, SearchIndexCommand::Drop { .. });
        match handle.run(search_index::search_index(handle.namespace(), command)?, timeout, session).await {
            Ok(reply) => Ok(R::from_reply(&reply)),
            Err(e) if drop && e.code() == Some(NAMESPACE_NOT_FOUND) => Ok(R::from_reply(&Document::new())),
            Err(e) => Err(e),
        }
    }
}

into_future!(SearchIndex<'a, R> => R, where R: SearchIndexOutput + 'a);
