//! `find_one`: the first document matching a filter (`limit: 1`, one batch). A retryable read.

use crate::cluster::selection_criteria::SelectionCriteria;
use std::time::Duration;

use bson::{doc, Bson, Document};
use serde::de::DeserializeOwned;

use super::super::collection::Collection;
use super::super::concern::ReadConcern;
use super::super::ops::find;
use super::super::options::crud::{Collation, FindOneOptions, FindOptions, Hint};
use super::super::session::ClientSession;
use super::{into_future, option_setters};
use crate::error::Result;

impl<T> Collection<T> {
    /// Finds the first document matching `filter` (`limit: 1`, one batch). A retryable read.
    pub fn find_one(&self, filter: Document) -> FindOne<'_, T> {
        FindOne { coll: self, filter, options: FindOneOptions::default(), session: None }
    }
}

/// A `find` of one document: see [`Collection::find_one`]. Gives `Option<T>`.
#[must_use = "an operation does nothing until it is awaited"]
pub struct FindOne<'a, T = Document> {
    coll: &'a Collection<T>,
    filter: Document,
    options: FindOneOptions,
    session: Option<&'a mut ClientSession>,
}

impl<'a, T: DeserializeOwned + 'static> FindOne<'a, T> {
    /// Sets [`FindOneOptions::max_scan`](crate::options::FindOneOptions::max_scan) (refused by every
    /// supported server).
    #[deprecated = "No supported server accepts `maxScan`; use `max_time` or `timeout` instead."]
    #[allow(deprecated)]
    pub fn max_scan(mut self, value: u64) -> Self {
        self.options.max_scan = Some(value);
        self
    }

    option_setters!(options: FindOneOptions;
        allow_partial_results: bool,
        collation: Collation,
        comment => Bson,
        hint => Hint,
        max: Document,
        max_time: Duration,
        min: Document,
        projection: Document,
        read_concern: ReadConcern,
        selection_criteria: SelectionCriteria,
        return_key: bool,
        show_record_id: bool,
        skip: u64,
        sort: Document,
        let_vars: Document,
        timeout: Duration,
    );

    /// Not an `async fn`: the future holds only the operation being run (this action and
    /// its options are consumed before), so each `find_one` waiting in a queue costs little.
    fn execute(self) -> impl std::future::Future<Output = Result<Option<T>>> + 'a {
        use futures_util::future::{Either, FutureExt};
        let FindOne { coll, filter, options, session } = self;
        let handle = coll.handle();
        let options = Box::new(FindOptions::from(options));
        // The fields themselves, not `begin_read(&options)`: on this path the borrow of the
        // whole options cost about 100 instructions per call (callgrind).
        let begun = handle.begin_read_with(
            session.as_deref(),
            options.selection_criteria.clone(),
            options.read_concern.as_ref(),
            options.max_time,
            options.timeout,
        );
        let (timeout, read) = match begun {
            Ok(b) => b,
            Err(e) => return Either::Left(std::future::ready(Err(e))),
        };
        let op = find::FindOne(find::Find { read, filter, options });
        Either::Right(
            handle
                .run(op, timeout, session)
                .map(|r| r?.as_deref().map(super::super::codec::decode_raw).transpose()),
        )
    }
}

into_future!(FindOne<'a, T> => Option<T>, where T: DeserializeOwned + Send + Sync + 'static);
