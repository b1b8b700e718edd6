//! A blocking change stream: an `Iterator` of events.

use super::runtime::IntoSync;
use serde::de::DeserializeOwned;

use super::runtime::block_on;
use crate::client::change_stream::event::ResumeToken;
use crate::error::Result;

/// A change stream: each `next` waits for the next event (resuming across a network error,
/// as the async one does).
#[derive(Debug)]
pub struct ChangeStream<T> {
    inner: crate::client::change_stream::ChangeStream<T>,
}

impl<T> ChangeStream<T> {
    pub(crate) fn new(inner: crate::client::change_stream::ChangeStream<T>) -> Self {
        ChangeStream { inner }
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
    pub fn with_type<D: DeserializeOwned + Unpin + Send + Sync>(self) -> ChangeStream<D> {
        ChangeStream { inner: self.inner.with_type() }
    }

    /// The next event if the server has one now (one `getMore` at most).
    pub fn next_if_any(&mut self) -> Result<Option<T>>
    where
        T: DeserializeOwned + 'static,
    {
        block_on(self.inner.next_if_any())
    }
}

impl<T: DeserializeOwned + 'static> Iterator for ChangeStream<T> {
    type Item = Result<T>;

    fn next(&mut self) -> Option<Result<T>> {
        block_on(futures_util::StreamExt::next(&mut self.inner))
    }
}

impl<T> IntoSync for crate::client::change_stream::ChangeStream<T> {
    type Sync = ChangeStream<T>;
    fn into_sync(self) -> ChangeStream<T> {
        ChangeStream::new(self)
    }
}
