//! `find`: a cursor over the documents matching a filter. A retryable read (the `find`, not
//! the `getMore`s).

use crate::cluster::selection_criteria::SelectionCriteria;
use std::marker::PhantomData;
use std::time::Duration;

use bson::{doc, Bson, Document};

use super::super::collection::Collection;
use super::super::concern::ReadConcern;
use super::super::cursor::{Cursor, OpenCursor};
use super::super::op_options::{check_max_await, cursor_mode, CursorType, TimeoutMode};
use super::super::ops::find;
use super::super::options::crud::{Collation, FindOptions, Hint};
use super::super::session::ClientSession;
use super::{cursor_into_future, option_setters, ExplicitSession, ImplicitSession};
use crate::error::Result;

impl<T> Collection<T> {
    /// Finds the documents matching `filter`: the first batch comes with the `find`, the rest
    /// with `getMore`s on the same server. A retryable read (the `find`, not the `getMore`s).
    pub fn find(&self, filter: Document) -> Find<'_, T> {
        Find { coll: self, filter, options: FindOptions::default(), session: None, _mode: PhantomData }
    }
}

/// A `find`: see [`Collection::find`]. Gives a [`Cursor<T>`], or a [`SessionCursor<T>`](crate::SessionCursor) when
/// run in an explicit [`session`](Self::session).
#[must_use = "an operation does nothing until it is awaited"]
pub struct Find<'a, T = Document, Session = ImplicitSession> {
    coll: &'a Collection<T>,
    filter: Document,
    options: FindOptions,
    session: Option<&'a mut ClientSession>,
    _mode: PhantomData<Session>,
}

impl<'a, T> Find<'a, T, ImplicitSession> {
    /// Runs the `find` in `session` (in its transaction, if one is in progress): it then
    /// gives a [`SessionCursor`](crate::SessionCursor), iterated with the same session.
    pub fn session(self, session: impl Into<&'a mut ClientSession>) -> Find<'a, T, ExplicitSession<'a>> {
        let Find { coll, filter, options, .. } = self;
        Find { coll, filter, options, session: Some(session.into()), _mode: PhantomData }
    }
}

impl<'a, T> Find<'a, T, ExplicitSession<'a>> {
    /// Runs the `find` in `session` instead.
    pub fn session(mut self, session: impl Into<&'a mut ClientSession>) -> Self {
        self.session = Some(session.into());
        self
    }
}

impl<'a, T, Session> Find<'a, T, Session> {
    /// Sets [`FindOptions::max_scan`](crate::options::FindOptions::max_scan) (refused by every
    /// supported server).
    #[deprecated = "No supported server accepts `maxScan`; use `max_time` or `timeout` instead."]
    #[allow(deprecated)]
    pub fn max_scan(mut self, value: u64) -> Self {
        self.options.max_scan = Some(value);
        self
    }

    option_setters!(@without_session options: FindOptions;
        allow_disk_use: bool,
        allow_partial_results: bool,
        batch_size: u32,
        collation: Collation,
        comment => Bson,
        cursor_type: CursorType,
        hint => Hint,
        limit: i64,
        max: Document,
        max_await_time: Duration,
        max_time: Duration,
        min: Document,
        no_cursor_timeout: bool,
        projection: Document,
        read_concern: ReadConcern,
        selection_criteria: SelectionCriteria,
        return_key: bool,
        show_record_id: bool,
        skip: u64,
        sort: Document,
        let_vars: Document,
        timeout: Duration,
        timeout_mode: TimeoutMode,
    );

    async fn execute(self) -> Result<Cursor<T>> {
        let Find { coll, filter, options, session, .. } = self;
        let handle = coll.handle();
        let (timeout, read) = handle.begin_read(session.as_deref(), &options)?;
        let batch_size = options.batch_size;
        let mode = cursor_mode(timeout, options.timeout_mode, options.cursor_type)?;
        check_max_await(timeout, options.max_await_time)?;
        let (cursor_type, max_await, comment) =
            (options.cursor_type, options.max_await_time, options.comment.clone());
        let op = find::Find { read, filter, options: Box::new(options) };
        let open = OpenCursor { timeout, mode, batch_size };
        let mut raw = open.run(handle.client(), op, session).await?;
        if cursor_type == Some(CursorType::TailableAwait) {
            raw.set_max_await(max_await);
        }
        raw.set_comment(comment);
        Ok(Cursor::new(raw))
    }
}

cursor_into_future!(Find<'a, T>, where T: Send + Sync + 'static);
