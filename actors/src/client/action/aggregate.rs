//! `aggregate` on a collection or a database: a cursor over the pipeline's results. A
//! retryable read, except a pipeline that ends in `$out` or `$merge` (a write, run once).

use crate::cluster::selection_criteria::SelectionCriteria;
use std::marker::PhantomData;
use std::time::Duration;

use bson::{doc, Bson, Document};

use super::super::collection::{Collection, Handle};
use super::super::concern::{ReadConcern, WriteConcern};
use super::super::cursor::{Cursor, OpenCursor};
use super::super::database::Database;
use super::super::op_options::{check_max_await, cursor_mode, TimeoutMode};
use super::super::ops::aggregate;
use super::super::options::crud::{AggregateOptions, Collation, Hint};
use super::super::session::ClientSession;
use super::{cursor_into_future, option_setters, ExplicitSession, ImplicitSession};
use crate::error::{Error, Result};

impl<T> Collection<T> {
    /// Runs an aggregation pipeline on this collection; the results (documents, or `U`s
    /// with [`Aggregate::with_type`]) come through a cursor. A retryable read, except a
    /// pipeline ending in `$out` or `$merge` (a write, run once).
    pub fn aggregate(&self, pipeline: impl IntoIterator<Item = Document>) -> Aggregate<'_> {
        Aggregate::new(self.handle(), true, pipeline)
    }
}

impl Database {
    /// Runs a database-level aggregation pipeline (`aggregate: 1`, for stages such as
    /// `$currentOp` or `$documents`); the results come through a cursor. A retryable read,
    /// except a pipeline ending in `$out` or `$merge`.
    pub fn aggregate(&self, pipeline: impl IntoIterator<Item = Document>) -> Aggregate<'_> {
        Aggregate::new(self.handle(), false, pipeline)
    }
}

/// An `aggregate` on a collection or a database: see [`Collection::aggregate`]. Gives a
/// [`Cursor<T>`] of documents, or of `U`s after [`with_type`](Self::with_type).
#[must_use = "an operation does nothing until it is awaited"]
pub struct Aggregate<'a, Session = ImplicitSession, T = Document> {
    handle: Handle<'a>,
    /// On the handle's collection (`false`: on its database).
    on_collection: bool,
    pipeline: Vec<Document>,
    options: AggregateOptions,
    session: Option<&'a mut ClientSession>,
    _type: PhantomData<fn() -> (Session, T)>,
}

impl<'a> Aggregate<'a> {
    pub(super) fn new(
        handle: Handle<'a>,
        on_collection: bool,
        pipeline: impl IntoIterator<Item = Document>,
    ) -> Self {
        Aggregate {
            handle,
            on_collection,
            pipeline: pipeline.into_iter().collect(),
            options: AggregateOptions::default(),
            session: None,
            _type: PhantomData,
        }
    }
}

impl<'a, T> Aggregate<'a, ImplicitSession, T> {
    /// Runs the aggregation in `session` (in its transaction, if one is in progress): it then
    /// gives a [`SessionCursor`](crate::SessionCursor), iterated with the same session.
    pub fn session(self, session: impl Into<&'a mut ClientSession>) -> Aggregate<'a, ExplicitSession<'a>, T> {
        let Aggregate { handle, on_collection, pipeline, options, .. } = self;
        Aggregate {
            handle,
            on_collection,
            pipeline,
            options,
            session: Some(session.into()),
            _type: PhantomData,
        }
    }
}

impl<'a, T> Aggregate<'a, ExplicitSession<'a>, T> {
    /// Runs the aggregation in `session` instead.
    pub fn session(mut self, session: impl Into<&'a mut ClientSession>) -> Self {
        self.session = Some(session.into());
        self
    }
}

impl<'a, Session, T> Aggregate<'a, Session, T> {
    option_setters!(@without_session options: AggregateOptions;
        allow_disk_use: bool,
        batch_size: u32,
        bypass_document_validation: bool,
        collation: Collation,
        comment => Bson,
        hint => Hint,
        max_await_time: Duration,
        max_time: Duration,
        read_concern: ReadConcern,
        selection_criteria: SelectionCriteria,
        write_concern: WriteConcern,
        let_vars: Document,
        timeout: Duration,
        timeout_mode: TimeoutMode,
    );

    /// The results as `U`s.
    pub fn with_type<U>(self) -> Aggregate<'a, Session, U> {
        let Aggregate { handle, on_collection, pipeline, options, session, .. } = self;
        Aggregate { handle, on_collection, pipeline, options, session, _type: PhantomData }
    }

    async fn execute(self) -> Result<Cursor<T>> {
        let Aggregate { handle, on_collection, pipeline, options, session, .. } = self;
        let timeout = handle.begin(
            session.as_deref(),
            options.read_concern.is_some(),
            options.write_concern.is_some(),
            options.timeout,
        )?;
        let writes = aggregate::writes(&pipeline);
        if writes && options.timeout_mode == Some(TimeoutMode::Iteration) {
            return Err(Error::invalid_argument(
                "an aggregate with $out or $merge cannot use timeoutMode ITERATION",
            ));
        }
        let mode = cursor_mode(timeout, options.timeout_mode, None)?;
        check_max_await(timeout, options.max_await_time)?;
        let mut read = handle.read_on(
            options.selection_criteria.clone(),
            options.read_concern.as_ref(),
            options.max_time,
            timeout,
        );
        let write_concern =
            if writes { handle.write_concern_doc(options.write_concern.as_ref(), timeout)? } else { None };
        let fields =
            aggregate::option_fields(&options, read.max_time_ms, read.read_concern.take(), write_concern);
        let ns = (handle.db.name(), on_collection.then_some(handle.coll));
        // $out/$merge may follow a non-primary read preference only when every known server
        // is 5.0 or newer (wire version 13); otherwise they run on the primary.
        let explicit_secondary = options
            .selection_criteria
            .as_ref()
            .or(handle.settings.selection_criteria.as_ref())
            .is_some_and(|c| !c.is_read_pref_primary());
        let anywhere = writes
            && explicit_secondary
            && aggregate::may_write_anywhere(handle.client(), &read.criteria).await;
        let op = aggregate::Aggregate::new(ns, pipeline, options.batch_size, read.criteria, fields)
            .writes_anywhere(anywhere);
        let open = OpenCursor { timeout, mode, batch_size: options.batch_size };
        let mut raw = open.run(handle.client(), op, session).await?;
        raw.set_max_await(options.max_await_time);
        raw.set_comment(options.comment);
        Ok(Cursor::new(raw))
    }
}

cursor_into_future!(Aggregate<'a, Session, T>, where T: Send + Sync + 'static);
