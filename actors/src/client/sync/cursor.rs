//! Blocking cursors: [`Cursor`] is an `Iterator`; [`SessionCursor`] is iterated with its
//! session.

use super::runtime::IntoSync;
use bson::{Document, RawDocument};
use futures_util::StreamExt;
use serde::de::DeserializeOwned;

use super::runtime::block_on;
use super::session::ClientSession;
use crate::error::Result;

/// The results of a `find`, an `aggregate` or a listing: an `Iterator` of `Result<T>`.
/// Dropping it before it is exhausted kills the server's cursor in the background.
#[derive(Debug)]
pub struct Cursor<T = Document> {
    inner: crate::client::cursor::Cursor<T>,
}

impl<T> Cursor<T> {
    pub(crate) fn new(inner: crate::client::cursor::Cursor<T>) -> Self {
        Cursor { inner }
    }

    /// Moves to the next document without deserializing it: `true` when there is one.
    pub fn advance(&mut self) -> Result<bool> {
        block_on(self.inner.advance())
    }

    /// The document the last [`advance`](Self::advance) moved to.
    pub fn current(&self) -> &RawDocument {
        self.inner.current()
    }

    /// Whether more documents may come.
    pub fn has_next(&self) -> bool {
        self.inner.has_next()
    }

    /// The current document as a `T`.
    pub fn deserialize_current<'a>(&'a self) -> Result<T>
    where
        T: serde::Deserialize<'a>,
    {
        self.inner.deserialize_current()
    }

    /// The same cursor, deserializing its results as `U`.
    pub fn with_type<U>(self) -> Cursor<U> {
        Cursor { inner: self.inner.with_type() }
    }
}

impl<T: DeserializeOwned + 'static> Iterator for Cursor<T> {
    type Item = Result<T>;

    fn next(&mut self) -> Option<Result<T>> {
        block_on(self.inner.next())
    }
}

/// The results of an operation run in an explicit session: iterated with
/// [`next`](Self::next) or [`iter`](Self::iter), passing the same session.
#[derive(Debug)]
pub struct SessionCursor<T = Document> {
    inner: crate::client::session_cursor::SessionCursor<T>,
}

impl<T> SessionCursor<T> {
    pub(crate) fn new(inner: crate::client::session_cursor::SessionCursor<T>) -> Self {
        SessionCursor { inner }
    }

    /// The next result, sending `getMore`s in `session` as needed; `None` once exhausted.
    pub fn next(&mut self, session: &mut ClientSession) -> Option<Result<T>>
    where
        T: DeserializeOwned + 'static,
    {
        block_on(self.inner.next(&mut session.inner))
    }

    /// Moves to the next document without deserializing it.
    pub fn advance(&mut self, session: &mut ClientSession) -> Result<bool> {
        block_on(self.inner.advance(&mut session.inner))
    }

    /// The document the last [`advance`](Self::advance) moved to.
    pub fn current(&self) -> &RawDocument {
        self.inner.current()
    }

    /// The current document as a `T`.
    pub fn deserialize_current<'a>(&'a self) -> Result<T>
    where
        T: serde::Deserialize<'a>,
    {
        self.inner.deserialize_current()
    }

    /// An iterator of the remaining results, holding `session` while it lives.
    pub fn iter<'session>(
        &mut self,
        session: &'session mut ClientSession,
    ) -> SessionCursorIter<'_, 'session, T> {
        SessionCursorIter { cursor: self, session }
    }

    /// The same cursor, deserializing its results as `D`.
    pub fn with_type<'a, D>(self) -> SessionCursor<D>
    where
        D: serde::Deserialize<'a>,
    {
        SessionCursor { inner: self.inner.with_type() }
    }
}

/// A [`SessionCursor`]'s results as an `Iterator`: see [`SessionCursor::iter`].
pub struct SessionCursorIter<'cursor, 'session, T = Document> {
    cursor: &'cursor mut SessionCursor<T>,
    session: &'session mut ClientSession,
}

impl<T: DeserializeOwned + 'static> Iterator for SessionCursorIter<'_, '_, T> {
    type Item = Result<T>;

    fn next(&mut self) -> Option<Result<T>> {
        self.cursor.next(self.session)
    }
}

impl<T> IntoSync for crate::client::cursor::Cursor<T> {
    type Sync = Cursor<T>;
    fn into_sync(self) -> Cursor<T> {
        Cursor::new(self)
    }
}

impl<T> IntoSync for crate::client::session_cursor::SessionCursor<T> {
    type Sync = SessionCursor<T>;
    fn into_sync(self) -> SessionCursor<T> {
        SessionCursor::new(self)
    }
}
