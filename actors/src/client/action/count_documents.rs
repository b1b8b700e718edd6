//! `count_documents` (the drivers' `aggregate` pipeline) and the legacy `count` (the `count`
//! command with a filter): one builder. Retryable reads.

use crate::cluster::selection_criteria::SelectionCriteria;
use std::time::Duration;

use bson::{doc, Bson, Document};

use super::super::collection::{Collection, Handle};
use super::super::concern::ReadConcern;
use super::super::ops::count;
use super::super::options::crud::{Collation, CountOptions, Hint};
use super::super::session::ClientSession;
use super::{into_future, option_setters};
use crate::error::Result;

impl<T> Collection<T> {
    /// Counts the documents matching `filter` with the drivers' `aggregate` pipeline
    /// (`$match`, `$skip`, `$limit`, `$group`). A retryable read.
    pub fn count_documents(&self, filter: Document) -> CountDocuments<'_> {
        CountDocuments::new(self.handle(), filter, false)
    }

    /// Counts matching documents with the legacy `count` command (prefer
    /// [`count_documents`](Self::count_documents): `count` is inaccurate on sharded clusters
    /// after unclean shutdowns and orphaned documents). A retryable read.
    pub fn count(&self, filter: Document) -> Count<'_> {
        CountDocuments::new(self.handle(), filter, true)
    }
}

/// A `count_documents`, or the legacy `count`: see [`Collection::count_documents`] and
/// [`Collection::count`]. Gives the count.
#[must_use = "an operation does nothing until it is awaited"]
pub struct CountDocuments<'a> {
    handle: Handle<'a>,
    filter: Document,
    options: CountOptions,
    session: Option<&'a mut ClientSession>,
    /// The legacy `count` command rather than the `aggregate` pipeline.
    legacy: bool,
}

/// The legacy `count`: the same builder as [`CountDocuments`].
pub type Count<'a> = CountDocuments<'a>;

impl<'a> CountDocuments<'a> {
    fn new(handle: Handle<'a>, filter: Document, legacy: bool) -> Self {
        CountDocuments { handle, filter, options: CountOptions::default(), session: None, legacy }
    }

    option_setters!(options: CountOptions;
        collation: Collation,
        comment => Bson,
        hint => Hint,
        limit: u64,
        max_time: Duration,
        read_concern: ReadConcern,
        selection_criteria: SelectionCriteria,
        skip: u64,
        timeout: Duration,
    );

    async fn execute(self) -> Result<u64> {
        let CountDocuments { handle, filter, options, session, legacy } = self;
        let (timeout, read) = handle.begin_read(session.as_deref(), &options)?;
        if legacy {
            return handle.run(count::Count { read, filter: Some(filter), options }, timeout, session).await;
        }
        handle.run(count::CountDocuments { read, filter, options }, timeout, session).await
    }
}

into_future!(CountDocuments<'a> => u64);
