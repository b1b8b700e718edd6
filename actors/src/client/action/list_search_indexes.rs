//! `list_search_indexes`: a `$listSearchIndexes` aggregation on the collection, giving a
//! cursor over the index descriptions. Sends no read concern.

use bson::{doc, Document};

use super::super::collection::{Collection, Handle};
use super::super::concern::ReadConcern;
use super::super::cursor::Cursor;
use super::super::options::crud::AggregateOptions;
use super::super::options::search_index::ListSearchIndexOptions;
use super::super::session::ClientSession;
use super::aggregate::Aggregate;
use super::{into_future, ExplicitSession};
use crate::error::Result;

impl<T> Collection<T> {
    /// The collection's search indexes (`.name(..)` for one of them), with the aggregate's
    /// cursor options given by `.aggregate_options(..)`.
    pub fn list_search_indexes(&self) -> ListSearchIndexes<'_> {
        ListSearchIndexes {
            handle: self.handle(),
            name: None,
            aggregate_options: None,
            options: ListSearchIndexOptions::default(),
        }
    }
}

/// Lists search indexes: see [`Collection::list_search_indexes`].
#[must_use = "an operation does nothing until it is awaited"]
pub struct ListSearchIndexes<'a> {
    handle: Handle<'a>,
    name: Option<String>,
    aggregate_options: Option<AggregateOptions>,
    options: ListSearchIndexOptions,
}

impl<'a> ListSearchIndexes<'a> {
    /// Only the index of this name.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// The options of the aggregation that lists the indexes (batch size, `timeoutMS`...).
    pub fn aggregate_options(mut self, value: AggregateOptions) -> Self {
        self.aggregate_options = Some(value);
        self
    }

    /// Replaces the listing's own options (`None`: the defaults).
    pub fn with_options(mut self, options: impl Into<Option<ListSearchIndexOptions>>) -> Self {
        self.options = options.into().unwrap_or_default();
        self
    }

    /// (Ours.) Lists in `session`: the aggregation, giving a
    /// [`SessionCursor`](crate::SessionCursor).
    pub fn session(
        self,
        session: impl Into<&'a mut ClientSession>,
    ) -> Aggregate<'a, ExplicitSession<'a>, Document> {
        self.into_aggregate().session(session)
    }

    /// The aggregation that lists the indexes.
    fn into_aggregate(self) -> Aggregate<'a> {
        let ListSearchIndexes { handle, name, aggregate_options, options: ListSearchIndexOptions {} } = self;
        let stage = match name {
            Some(n) => doc! {"name": n},
            None => Document::new(),
        };
        let mut options = aggregate_options.unwrap_or_default();
        // The server's default read concern: none is sent.
        options.read_concern = Some(ReadConcern::default());
        Aggregate::new(handle, true, [doc! {"$listSearchIndexes": stage}]).with_options(options)
    }

    async fn execute(self) -> Result<Cursor<Document>> {
        self.into_aggregate().await
    }
}

into_future!(ListSearchIndexes<'a> => sync Cursor<Document>);
