//! `distinct`: the distinct values of a field among the matching documents. A retryable read.

use crate::cluster::selection_criteria::SelectionCriteria;
use std::time::Duration;

use bson::{doc, Bson, Document};

use super::super::collection::{Collection, Handle};
use super::super::concern::ReadConcern;
use super::super::ops::distinct;
use super::super::options::crud::{Collation, DistinctOptions, Hint};
use super::super::session::ClientSession;
use super::{into_future, option_setters};
use crate::error::Result;

impl<T> Collection<T> {
    /// The distinct values of `field` among the documents matching `filter` (array
    /// elements count one by one). A retryable read.
    pub fn distinct(&self, field: impl AsRef<str>, filter: Document) -> Distinct<'_> {
        Distinct {
            handle: self.handle(),
            field: field.as_ref().to_string(),
            filter,
            options: DistinctOptions::default(),
            session: None,
        }
    }
}

/// A `distinct`: see [`Collection::distinct`]. Gives the values.
#[must_use = "an operation does nothing until it is awaited"]
pub struct Distinct<'a> {
    handle: Handle<'a>,
    field: String,
    filter: Document,
    options: DistinctOptions,
    session: Option<&'a mut ClientSession>,
}

impl<'a> Distinct<'a> {
    option_setters!(options: DistinctOptions;
        collation: Collation,
        comment => Bson,
        hint => Hint,
        max_time: Duration,
        read_concern: ReadConcern,
        selection_criteria: SelectionCriteria,
        timeout: Duration,
    );

    async fn execute(self) -> Result<Vec<Bson>> {
        let Distinct { handle, field, filter, options, session } = self;
        let (timeout, read) = handle.begin_read(session.as_deref(), &options)?;
        handle.run(distinct::Distinct { read, field, filter, options }, timeout, session).await
    }
}

into_future!(Distinct<'a> => Vec<Bson>);
