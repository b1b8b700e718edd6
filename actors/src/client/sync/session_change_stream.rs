//! A blocking change stream opened in an explicit session: each `next` takes the session, as
//! the async [`SessionChangeStream`](crate::change_stream::session::SessionChangeStream) does.

use serde::de::DeserializeOwned;

use super::runtime::block_on;
use super::session::ClientSession;
use crate::client::change_stream::event::ResumeToken;
use crate::error::Result;

/// A change stream in a session of the sync API.
#[derive(Debug)]
pub struct SessionChangeStream<T> {
    inner: crate::client::change_stream::session::SessionChangeStream<T>,
}

impl<T> SessionChangeStream<T> {
    pub(crate) fn new(inner: crate::client::change_stream::session::SessionChangeStream<T>) -> Self {
        SessionChangeStream { inner }
    }

    /// The token to resume after the last event seen.
    pub fn resume_token(&self) -> Option<ResumeToken> {
        self.inner.resume_token()
    }

    /// Whether the stream may still give events.
    pub fn is_alive(&self) -> bool {
        self.inner.is_alive()
    }

    /// The same stream, deserializing its events as `D`.
    pub fn with_type<D: DeserializeOwned + Send + Sync>(self) -> SessionChangeStream<D> {
        SessionChangeStream { inner: self.inner.with_type() }
    }
}

impl<T: DeserializeOwned + 'static> SessionChangeStream<T> {
    /// The next event, waiting for one; `None` once the stream is invalidated or closed.
    pub fn next(&mut self, session: &mut ClientSession) -> Result<Option<T>> {
        block_on(self.inner.next(&mut session.inner))
    }

    /// The next event if one comes within one `getMore`: `None` when there is none yet.
    pub fn next_if_any(&mut self, session: &mut ClientSession) -> Result<Option<T>> {
        block_on(self.inner.next_if_any(&mut session.inner))
    }
}

impl<T> super::runtime::IntoSync for crate::client::change_stream::session::SessionChangeStream<T> {
    type Sync = SessionChangeStream<T>;
    fn into_sync(self) -> SessionChangeStream<T> {
        SessionChangeStream::new(self)
    }
}
