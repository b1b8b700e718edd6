//! Change streams: `watch` on a client, a database or a collection opens an `aggregate` whose
//! first stage is `$changeStream`, and [`ChangeStream`] reads its events as a [`Stream`],
//! caching the resume token and resuming once after each resumable error (change-streams
//! spec).
//!
//! ```no_run
//! # async fn example(coll: mongo_actors::Collection<mongo_actors::bson::Document>) -> mongo_actors::Result<()> {
//! use mongo_actors::bson::doc;
//! let mut stream = coll.watch().pipeline([doc! {"$match": {"operationType": "insert"}}]).await?;
//! while let Some(event) = stream.next_if_any().await? {
//!     println!("{:?} {:?}", event.operation_type, event.full_document);
//! }
//! let token = stream.resume_token(); // store it to resume later with `resume_after`
//! # let _ = token;
//! # Ok(())
//! # }
//! ```

pub mod event;
pub mod session;
pub(crate) mod spec;

use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bson::{Document, Timestamp};
use futures_util::future::BoxFuture;
use futures_util::Stream;
use serde::de::DeserializeOwned;

pub use self::event::{
    ChangeNamespace, ChangeNamespaceType, ChangeStreamEvent, OperationType, ResumeToken, TruncatedArray,
    UpdateDescription,
};
use self::spec::{setup, Spec, Start};
pub use super::action::Watch;
use super::codec::decode;
use super::cursor::Cursor;
use super::inner::{Client, BACKGROUND_TIMEOUT};
pub use super::options::change_stream::{
    ChangeStreamOptions, FullDocumentBeforeChangeType, FullDocumentType,
};
use super::session::ClientSession;
use crate::error::{Error, Result};

/// A resume in flight: the new cursor, or the error of its `aggregate`.
type Resuming = BoxFuture<'static, Result<Cursor<Document>>>;

/// A change stream: a [`Stream`] of `T`s ([`ChangeStreamEvent<D>`] unless
/// [`with_type`](Self::with_type) changed it).
///
/// The stream caches the resume token of the last event it returned (or of the last batch,
/// `postBatchResumeToken`), and after a resumable error (a network error, `CursorNotFound`,
/// a server error labelled `ResumableChangeStreamError`) it kills its cursor and opens a new
/// one from that token, once per error. After a `timeoutMS` expiry the stream stays usable:
/// the next call resumes. Use [`next_if_any`](Self::next_if_any) to poll without waiting for
/// an event, and [`resume_token`](Self::resume_token) to store where to start next time.
pub struct ChangeStream<T = ChangeStreamEvent<Document>> {
    /// `None` while a resume is in flight, or once the stream ended.
    cursor: Option<Cursor<Document>>,
    spec: Arc<Spec>,
    token: Option<ResumeToken>,
    /// An event was returned (a resume then uses `resumeAfter`, not `startAfter`).
    returned_any: bool,
    /// The `startAtOperationTime` to resume from when there is no token.
    operation_time: Option<Timestamp>,
    resuming: Option<Resuming>,
    /// The last call timed out: the next one resumes first.
    resume_next: bool,
    _type: PhantomData<fn() -> T>,
}

impl<T> std::fmt::Debug for ChangeStream<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChangeStream")
            .field("cursor", &self.cursor)
            .field("resume_token", &self.token)
            .finish_non_exhaustive()
    }
}

impl<T> ChangeStream<T> {
    /// Opens the stream `spec` describes from `start`: its `aggregate`, and the token to
    /// resume from before any event (the one given, else the first batch's).
    pub(crate) async fn open(spec: Spec, start: &Start, session: Option<&mut ClientSession>) -> Result<Self> {
        let spec = Arc::new(spec);
        let op = spec.aggregate(start)?;
        let raw = spec.open_cursor()?.run(spec.client(), op, session).await?;
        let cursor = setup(&spec, Cursor::new(raw));
        let mut token = spec.options.start_after.clone().or_else(|| spec.options.resume_after.clone());
        let mut operation_time = spec.options.start_at_operation_time;
        if cursor.batch_is_empty() {
            if let Some(t) = cursor.post_batch_resume_token() {
                token = Some(ResumeToken::from(t.clone()));
            } else if token.is_none() && operation_time.is_none() {
                operation_time = cursor.operation_time();
            }
        }
        Ok(ChangeStream {
            cursor: Some(cursor),
            spec,
            token,
            returned_any: false,
            operation_time,
            resuming: None,
            resume_next: false,
            _type: PhantomData,
        })
    }
}

impl<T> ChangeStream<T> {
    /// The token a resume would start after: store it, and pass it as
    /// [`resume_after`](ChangeStreamOptions::resume_after) to go on later.
    pub fn resume_token(&self) -> Option<ResumeToken> {
        self.token.clone()
    }

    /// Whether the stream may return more events (false once invalidated or closed).
    pub fn is_alive(&self) -> bool {
        self.resuming.is_some() || self.resume_next || self.cursor.as_ref().is_some_and(Cursor::has_next)
    }

    /// The same stream, reading `U`s (`Document` for the events as they come).
    pub fn with_type<U>(self) -> ChangeStream<U> {
        let ChangeStream { cursor, spec, token, returned_any, operation_time, resuming, resume_next, .. } =
            self;
        ChangeStream {
            cursor,
            spec,
            token,
            returned_any,
            operation_time,
            resuming,
            resume_next,
            _type: PhantomData,
        }
    }

    /// Closes the stream: its cursor is killed on the server (errors ignored).
    pub async fn close(mut self) {
        if let Some(r) = self.resuming.take() {
            if let Ok(c) = r.await {
                self.cursor = Some(c);
            }
        }
        if let Some(c) = self.cursor.take() {
            c.close(None).await;
        }
    }

    /// Caches the batch's `postBatchResumeToken` once its events are all returned.
    fn cache_batch_token(&mut self) {
        if let Some(c) = self.cursor.as_ref().filter(|c| c.batch_is_empty()) {
            if let Some(t) = c.post_batch_resume_token() {
                self.token = Some(ResumeToken::from(t.clone()));
            }
        }
    }

    /// Starts a resume: kill the old cursor, then `aggregate` again from the cached token
    /// (or operation time), with the same session, within the call's `deadline` (`None`: a
    /// new call, a full `timeoutMS`).
    fn start_resume(&mut self, deadline: Option<Option<tokio::time::Instant>>) {
        let mut old = self.cursor.take();
        let session = old.as_mut().and_then(Cursor::take_session_for_resume);
        let start = match &self.token {
            Some(t) if self.spec.options.start_after.is_some() && !self.returned_any => {
                Start { start_after: Some(t.clone()), ..Start::default() }
            }
            Some(t) => Start { resume_after: Some(t.clone()), ..Start::default() },
            None => Start { start_at_operation_time: self.operation_time, ..Start::default() },
        };
        let spec = Arc::clone(&self.spec);
        let deadline = deadline.unwrap_or_else(|| super::timeout::deadline(spec.timeout));
        let resume = async move {
            if let Some(old) = old {
                old.close(None).await;
            }
            let op = spec.aggregate(&start)?;
            let open = spec.open_cursor()?;
            let raw = open.run_with_server_session(spec.client(), op, session, deadline).await?;
            let mut cursor = setup(&spec, Cursor::new(raw));
            // The call goes on with the new cursor, under the same deadline.
            cursor.set_call_deadline(Some(deadline));
            Ok(cursor)
        };
        self.resuming = Some(match deadline {
            Some(_) => Box::pin(resume),
            // Without timeoutMS a resume (the old cursor's killCursors, the new aggregate) is
            // still bounded: an unresponsive server cannot hold `next` for ever. Like a CSOT
            // timeout, the error leaves the stream to resume again on the next call.
            None => Box::pin(async move {
                match tokio::time::timeout(BACKGROUND_TIMEOUT, resume).await {
                    Ok(r) => r,
                    Err(_) => Err(Error::timeout(format!(
                            "the change stream's resume did not finish within {BACKGROUND_TIMEOUT:?} (no timeoutMS)"
                        ), None)),
                }
            }),
        });
    }

    /// The next event document: `once` returns `None` after one empty batch.
    fn poll_next_event(&mut self, cx: &mut Context<'_>, once: bool) -> Poll<Option<Result<Document>>> {
        loop {
            if self.resume_next && self.resuming.is_none() {
                self.resume_next = false;
                self.start_resume(None);
            }
            if let Some(r) = self.resuming.as_mut() {
                match r.as_mut().poll(cx) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(result) => {
                        self.resuming = None;
                        match result {
                            Ok(c) => {
                                self.cursor = Some(c);
                                self.cache_batch_token();
                            }
                            Err(e) => {
                                if e.is_timeout() {
                                    self.resume_next = true;
                                }
                                return Poll::Ready(Some(Err(e)));
                            }
                        }
                    }
                }
            }
            let Some(cursor) = self.cursor.as_mut() else { return Poll::Ready(None) };
            match cursor.poll_next_document_keeping_deadline(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Ok(d))) => {
                    let Some(id) = d.get("_id").cloned() else {
                        // Without the token the stream could not resume: end it.
                        if let Some(c) = self.cursor.take() {
                            drop(c);
                        }
                        return Poll::Ready(Some(Err(crate::error::ErrorKind::MissingResumeToken.into())));
                    };
                    self.token = Some(ResumeToken(id));
                    self.cache_batch_token();
                    self.returned_any = true;
                    return Poll::Ready(Some(Ok(d)));
                }
                Poll::Ready(None) => {
                    self.cache_batch_token();
                    let alive = self.cursor.as_ref().is_some_and(|c| c.id() != 0);
                    if once || !alive {
                        if let Some(c) = self.cursor.as_mut() {
                            c.reset_deadline();
                        }
                        return Poll::Ready(None);
                    }
                }
                Poll::Ready(Some(Err(e))) => {
                    self.cache_batch_token();
                    let deadline = self.cursor.as_ref().and_then(Cursor::call_deadline);
                    if let Some(c) = self.cursor.as_mut() {
                        c.reset_deadline();
                    }
                    if e.is_timeout() {
                        // CSOT: the stream stays usable; the next call resumes.
                        self.resume_next = true;
                        return Poll::Ready(Some(Err(e)));
                    }
                    if resumable(&e, self.spec.client()) {
                        self.start_resume(deadline);
                        continue;
                    }
                    return Poll::Ready(Some(Err(e)));
                }
            }
        }
    }
}

/// Server error codes that are resumable on servers older than 4.4 (wire version 9).
const RESUMABLE_CODES: [i32; 17] =
    [6, 7, 89, 91, 189, 262, 9001, 10107, 11600, 11602, 13435, 13436, 63, 150, 13388, 234, 133];

/// Whether a `getMore` error lets the stream resume (change-streams spec, "Resumable
/// Error").
fn resumable(e: &Error, client: &Client) -> bool {
    let Some(server) = e.server_error() else {
        // Not a server error: a network error, or the client gave up.
        let stopped = matches!(*e.kind, crate::error::ErrorKind::Shutdown) && e.pool_error().is_none();
        return !stopped
            && !matches!(
                *e.kind,
                crate::error::ErrorKind::InvalidArgument { .. }
                    | crate::error::ErrorKind::BsonDeserialization(_)
            );
    };
    let code = server.code.unwrap_or(0);
    if code == 43 || e.contains_label("ResumableChangeStreamError") {
        return true;
    }
    let old_server = e.address().is_some_and(|a| {
        let snapshot = client.inner.topology.snapshot();
        let wire = snapshot.description.servers().find(|s| &s.address == a).and_then(|s| s.max_wire_version);
        wire.is_some_and(|w| w < 9)
    });
    old_server && RESUMABLE_CODES.contains(&code)
}

impl<T: DeserializeOwned + 'static> ChangeStream<T> {
    /// The next event if one comes within one `getMore` (`tryNext`): `None` when there is
    /// none yet. The resume token moves on even then.
    pub async fn next_if_any(&mut self) -> Result<Option<T>> {
        let next = std::future::poll_fn(|cx| self.poll_next_event(cx, true)).await;
        next.map(|r| r.and_then(decode)).transpose()
    }
}

impl<T: DeserializeOwned + 'static> Stream for ChangeStream<T> {
    type Item = Result<T>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<T>>> {
        let this = self.get_mut();
        this.poll_next_event(cx, false).map(|next| next.map(|r| r.and_then(decode)))
    }
}
