//! [`SessionChangeStream`]: a change stream opened in an explicit session, read with that
//! session (the official driver's shape: `stream.next(&mut session)`).

use serde::de::DeserializeOwned;

use super::event::ResumeToken;
use super::ChangeStream;
use crate::client::session::ClientSession;
use crate::error::Result;

/// A change stream opened with `watch().session(&mut session)`: read with
/// [`next`](Self::next) or [`next_if_any`](Self::next_if_any), passing the same session.
/// It keeps the session's id for its `getMore`s and resumes.
#[derive(Debug)]
pub struct SessionChangeStream<T> {
    stream: ChangeStream<T>,
}

impl<T> SessionChangeStream<T> {
    pub(crate) fn new(stream: ChangeStream<T>) -> Self {
        SessionChangeStream { stream }
    }

    /// The token to resume after the last event seen.
    pub fn resume_token(&self) -> Option<ResumeToken> {
        self.stream.resume_token()
    }

    /// The same stream, deserializing its events as `D`.
    pub fn with_type<D: DeserializeOwned + Send + Sync>(self) -> SessionChangeStream<D> {
        SessionChangeStream { stream: self.stream.with_type() }
    }

    /// Whether the stream may still give events.
    pub fn is_alive(&self) -> bool {
        self.stream.is_alive()
    }

    /// (Ours.) The stream as a plain [`ChangeStream`], read without passing the session.
    pub fn into_change_stream(self) -> ChangeStream<T> {
        self.stream
    }
}

impl<T: DeserializeOwned + 'static> SessionChangeStream<T> {
    /// The next event, waiting for one; `None` once the stream is invalidated or closed.
    pub async fn next(&mut self, session: &mut ClientSession) -> Result<Option<T>> {
        let _ = session;
        futures_util::StreamExt::next(&mut self.stream).await.transpose()
    }

    /// The next event if one comes within one `getMore`: `None` when there is none yet.
    pub async fn next_if_any(&mut self, session: &mut ClientSession) -> Result<Option<T>> {
        let _ = session;
        self.stream.next_if_any().await
    }
}
