//! Raw batch cursors (`mongodb::raw_batch_cursor`): a cursor whose items are the server's
//! batches as they came, for reading documents without deserializing them one by one.
//! `batch()` on `find`, `aggregate`, the listings and `run_cursor_command` opens one.
//!
//! A batch is the reply it came in whenever it holds that reply's whole batch (no copy);
//! `getMore`s, deadlines, sessions and the kill on drop are the plain [`Cursor`]'s.

use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bson::{Document, RawArray, RawDocument, RawDocumentBuf};
use futures_util::Stream;

use super::cursor::Cursor;
use super::session::ClientSession;
use crate::error::{Error, Result};

/// One batch of a cursor: the server's reply, with its documents in
/// `cursor.firstBatch` or `cursor.nextBatch`.
#[derive(Debug, Clone)]
pub struct RawBatch {
    reply: Arc<RawDocumentBuf>,
}

impl RawBatch {
    /// The batch's documents, as a BSON array of them.
    pub fn doc_slices(&self) -> Result<&RawArray> {
        let cursor = self
            .reply
            .get_document("cursor")
            .map_err(|e| Error::deserialization(format!("a batch reply without its cursor: {e}")))?;
        cursor
            .get_array("firstBatch")
            .or_else(|_| cursor.get_array("nextBatch"))
            .map_err(|e| Error::deserialization(format!("a batch reply without its batch: {e}")))
    }

    /// The whole reply the batch came in.
    pub fn as_raw_document(&self) -> &RawDocument {
        &self.reply
    }
}

/// A cursor of raw batches: a [`Stream`] of [`RawBatch`]es, sending `getMore`s as the
/// batches are taken. Dropped before it is exhausted, it kills the server's cursor in the
/// background, as a [`Cursor`] does.
#[derive(Debug)]
pub struct RawBatchCursor {
    cursor: Cursor<Document>,
}

impl RawBatchCursor {
    /// The batches of `cursor`, from the one it holds on.
    pub(crate) fn new<T>(cursor: Cursor<T>) -> Self {
        RawBatchCursor { cursor: cursor.with_type() }
    }
}

impl Stream for RawBatchCursor {
    type Item = Result<RawBatch>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<RawBatch>>> {
        let this = self.get_mut();
        this.cursor
            .poll_next_batch(cx)
            .map(|next| next.map(|batch| batch.and_then(|docs| Ok(RawBatch { reply: docs.into_reply()? }))))
    }
}

/// A raw batch cursor opened in an explicit session, iterated with that session.
#[derive(Debug)]
pub struct SessionRawBatchCursor {
    inner: RawBatchCursor,
}

impl SessionRawBatchCursor {
    pub(crate) fn new<T>(cursor: Cursor<T>) -> Self {
        SessionRawBatchCursor { inner: RawBatchCursor::new(cursor) }
    }

    /// A stream of the remaining batches, borrowing the cursor and `session` while it lives.
    pub fn stream<'session>(
        &mut self,
        session: &'session mut ClientSession,
    ) -> SessionRawBatchCursorStream<'_, 'session> {
        // The stream holds the session's borrow, so nothing else runs in it meanwhile (the
        // cursor keeps the session's id for its getMores).
        let _ = session;
        SessionRawBatchCursorStream { inner: &mut self.inner, _session: PhantomData }
    }
}

/// A [`SessionRawBatchCursor`]'s batches as a [`Stream`], holding its session.
pub struct SessionRawBatchCursorStream<'cursor, 'session> {
    inner: &'cursor mut RawBatchCursor,
    _session: PhantomData<&'session mut ClientSession>,
}

impl Stream for SessionRawBatchCursorStream<'_, '_> {
    type Item = Result<RawBatch>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<RawBatch>>> {
        Pin::new(&mut *self.get_mut().inner).poll_next(cx)
    }
}
