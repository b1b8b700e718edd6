//! `estimated_document_count`: the `count` command without a filter, from the collection's
//! metadata. A retryable read.

use crate::cluster::selection_criteria::SelectionCriteria;
use std::time::Duration;

use bson::{doc, Bson};

use super::super::collection::{Collection, Handle};
use super::super::concern::ReadConcern;
use super::super::ops::count;
use super::super::options::crud::{CountOptions, EstimatedDocumentCountOptions};
use super::super::session::ClientSession;
use super::{into_future, option_setters};
use crate::error::Result;

impl<T> Collection<T> {
    /// The collection's document count from its metadata (the `count` command without a
    /// filter). A retryable read.
    pub fn estimated_document_count(&self) -> EstimatedDocumentCount<'_> {
        EstimatedDocumentCount {
            handle: self.handle(),
            options: EstimatedDocumentCountOptions::default(),
            session: None,
        }
    }
}

/// An `estimated_document_count`: see [`Collection::estimated_document_count`].
#[must_use = "an operation does nothing until it is awaited"]
pub struct EstimatedDocumentCount<'a> {
    handle: Handle<'a>,
    options: EstimatedDocumentCountOptions,
    session: Option<&'a mut ClientSession>,
}

impl<'a> EstimatedDocumentCount<'a> {
    option_setters!(options: EstimatedDocumentCountOptions;
        comment => Bson,
        max_time: Duration,
        read_concern: ReadConcern,
        selection_criteria: SelectionCriteria,
        timeout: Duration,
    );

    async fn execute(self) -> Result<u64> {
        let EstimatedDocumentCount { handle, options, session } = self;
        let (timeout, read) = handle.begin_read(session.as_deref(), &options)?;
        let options =
            CountOptions { comment: options.comment, raw_data: options.raw_data, ..CountOptions::default() };
        handle.run(count::Count { read, filter: None, options }, timeout, session).await
    }
}

into_future!(EstimatedDocumentCount<'a> => u64);
