//! [`SessionCursor`]: the cursor of an operation run in an explicit session, iterated with
//! that session (the official driver's shape: `cursor.next(&mut session)`).
//!
//! The cursor already keeps its session's id for its `getMore`s, so the session passed to
//! each call only proves, as in the official API, that no other operation uses it meanwhile.

use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};

use bson::{Document, RawDocument};
use futures_util::Stream;
use serde::de::DeserializeOwned;

use super::cursor::Cursor;
use super::session::ClientSession;
use crate::error::Result;

/// The results of a `find`, an `aggregate` or a listing run in an explicit session: iterate
/// with [`next`](Self::next) or [`stream`](Self::stream), passing the same session.
///
/// Dropping it before it is exhausted kills the server's cursor in the background, as a
/// [`Cursor`] does.
#[derive(Debug)]
pub struct SessionCursor<T = Document> {
    cursor: Cursor<T>,
}

impl<T> SessionCursor<T> {
    pub(crate) fn new(cursor: Cursor<T>) -> Self {
        SessionCursor { cursor }
    }

    /// A stream of the remaining results, borrowing the cursor and `session` while it lives.
    pub fn stream<'session>(
        &mut self,
        session: &'session mut ClientSession,
    ) -> SessionCursorStream<'_, 'session, T>
    where
        T: DeserializeOwned,
    {
        // The stream holds the session's borrow, so nothing else runs in it meanwhile.
        let _ = session;
        SessionCursorStream { cursor: &mut self.cursor, _session: PhantomData }
    }

    /// The next result, sending `getMore`s in `session` as needed; `None` once exhausted.
    pub async fn next(&mut self, session: &mut ClientSession) -> Option<Result<T>>
    where
        T: DeserializeOwned + 'static,
    {
        let _ = session;
        futures_util::StreamExt::next(&mut self.cursor).await
    }

    /// Moves to the next document without deserializing it: `true` when there is one
    /// ([`current`](Self::current) borrows it), `false` once exhausted.
    pub async fn advance(&mut self, session: &mut ClientSession) -> Result<bool> {
        let _ = session;
        self.cursor.advance().await
    }

    /// The document the last [`advance`](Self::advance) moved to.
    pub fn current(&self) -> &RawDocument {
        self.cursor.current()
    }

    /// The current document as a `T`.
    pub fn deserialize_current<'a>(&'a self) -> Result<T>
    where
        T: serde::Deserialize<'a>,
    {
        self.cursor.deserialize_current()
    }

    /// The same cursor, deserializing its results as `D`.
    pub fn with_type<'a, D>(self) -> SessionCursor<D>
    where
        D: serde::Deserialize<'a>,
    {
        SessionCursor { cursor: self.cursor.with_type() }
    }

    /// (Ours.) The cursor as a plain [`Cursor`], iterated without passing the session (it
    /// keeps the session's id and transaction for its `getMore`s).
    pub fn into_cursor(self) -> Cursor<T> {
        self.cursor
    }
}

/// A [`SessionCursor`]'s results as a [`Stream`], holding its session: see
/// [`SessionCursor::stream`].
pub struct SessionCursorStream<'cursor, 'session, T = Document> {
    cursor: &'cursor mut Cursor<T>,
    _session: PhantomData<&'session mut ClientSession>,
}

impl<T: DeserializeOwned + 'static> Stream for SessionCursorStream<'_, '_, T> {
    type Item = Result<T>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<T>>> {
        Pin::new(&mut *self.get_mut().cursor).poll_next(cx)
    }
}
