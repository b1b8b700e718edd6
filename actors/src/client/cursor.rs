//! Cursors: batches from `find`, `getMore` on the same server and session, `killCursors` on
//! drop when not exhausted.

use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bson::{Document, RawDocument};
use futures_util::future::BoxFuture;
use futures_util::Stream;
use pool::cmap::{CheckoutPurpose, PooledConnection};
use pool::connection::Connection;
use protocol::ServerAddress;
use serde::de::DeserializeOwned;

use super::executor::operation::{convert, Operation};
use super::executor::{Binding, SessionUse};
use super::inner::Client;
use super::op_options::TimeoutMode;
use super::ops::cursor_reply::NextBatch;
use super::ops::cursor_reply::{CursorReply, Doc, Docs};
use super::ops::get_more::GetMore;
use super::ops::kill_cursors::KillCursors;
use super::pinned::Pins;
use super::session::pool::ServerSession;
use super::session::{ClientSession, TransactionState};
use super::timeout;
use super::timeout::Limits;
use crate::cluster::selection::PinId;
use crate::error::{Error, Result};

/// A server cursor's state: its batches, its server, session and pin, and its `getMore`s.
/// [`Cursor`] wraps it with a type and a `Stream`.
pub(crate) struct RawCursor {
    client: Client,
    db: String,
    collection: String,
    address: ServerAddress,
    id: i64,
    /// The documents as the server sent them: a `Cursor<T>` deserializes from the bytes.
    buffer: Docs,
    batch_size: Option<u32>,
    session: Option<ServerSession>,
    /// Load-balanced mode: the connection pinned in the selection actor under this pin.
    pin: Option<PinId>,
    /// A getMore failed with a network error: the pin is released on drop, no killCursors.
    network_error: bool,
    /// A `getMore` is on the wire, or was cut off there (its future dropped, or its timeout
    /// expired mid-exchange): the server may have consumed the batch it asked for, so the
    /// cursor cannot go on without skipping it. Cleared when a `getMore` ends normally.
    cut_off: bool,
    /// Opened in a transaction: getMores and killCursors carry its `txnNumber` and
    /// `autocommit: false`, and `pin` (load-balanced) is the session's, never unpinned here.
    in_transaction: bool,
    /// CSOT: the `timeoutMS`, its mode, and the cursor's deadline (CURSOR_LIFETIME).
    timeout: Option<Duration>,
    timeout_mode: TimeoutMode,
    deadline: Option<tokio::time::Instant>,
    /// `maxAwaitTimeMS` of a tailable awaitData cursor: the getMores' `maxTimeMS` (capped by
    /// the remaining `timeoutMS`).
    max_await: Option<Duration>,
    /// The opening command's `comment`, sent again with every `getMore`.
    comment: Option<bson::Bson>,
    /// A change stream's `postBatchResumeToken` from the last reply.
    post_batch_resume_token: Option<Document>,
    /// The opening reply's `operationTime`.
    operation_time: Option<bson::Timestamp>,
}

impl std::fmt::Debug for RawCursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawCursor")
            .field("address", &self.address)
            .field("id", &self.id)
            .field("buffered", &self.buffer.len())
            .finish_non_exhaustive()
    }
}

impl RawCursor {
    pub(crate) async fn new(
        client: Client,
        reply: CursorReply,
        batch_size: Option<u32>,
    ) -> Result<RawCursor> {
        let CursorReply {
            address,
            db,
            collection,
            id,
            batch: buffer,
            session,
            connection,
            post_batch_resume_token,
            operation_time,
        } = reply;
        let mut pin = None;
        if let Some(mut connection) = connection {
            connection.set_purpose(CheckoutPurpose::Cursor);
            let pins = client.inner.pins();
            let id = pins.new_id();
            pins.keep(id, connection).await?;
            pin = Some(id);
        }
        let mut cursor = RawCursor {
            client,
            db,
            collection,
            address,
            id,
            buffer,
            batch_size,
            session,
            pin,
            network_error: false,
            cut_off: false,
            in_transaction: false,
            timeout: None,
            timeout_mode: TimeoutMode::default(),
            deadline: None,
            max_await: None,
            comment: None,
            post_batch_resume_token,
            operation_time,
        };
        if id == 0 {
            cursor.release();
        }
        Ok(cursor)
    }

    /// CSOT: the cursor's `timeoutMS`, mode, and the deadline of its `find` (kept for the
    /// `getMore`s in CURSOR_LIFETIME mode).
    pub(crate) fn set_timeout(
        &mut self,
        timeout: Option<Duration>,
        mode: TimeoutMode,
        deadline: Option<tokio::time::Instant>,
    ) {
        self.timeout = timeout;
        self.timeout_mode = mode;
        self.deadline = deadline;
    }

    /// `maxAwaitTimeMS`: the `maxTimeMS` of every `getMore` (CSOT: at most the remaining
    /// `timeoutMS` minus the server's minimum RTT).
    pub(crate) fn set_max_await(&mut self, max_await: Option<Duration>) {
        self.max_await = max_await;
    }

    /// The `comment` every `getMore` repeats.
    pub(crate) fn set_comment(&mut self, comment: Option<bson::Bson>) {
        self.comment = comment;
    }

    /// The deadline of the `getMore`s of one `try_next` call (ITERATION: `timeoutMS` from
    /// the call's start).
    fn get_more_deadline(&self) -> Option<tokio::time::Instant> {
        match self.timeout_mode {
            TimeoutMode::CursorLifetime => self.deadline,
            TimeoutMode::Iteration => timeout::deadline(self.timeout),
        }
    }

    /// Makes the cursor part of its session's transaction, on the transaction's pinned
    /// connection in load-balanced mode.
    pub(crate) fn join_transaction(&mut self, pin: Option<PinId>) {
        if self.id != 0 {
            if pin.is_some() {
                self.pin = pin;
            }
            self.in_transaction = true;
        }
    }

    /// Returns the session and the pinned connection once the cursor is exhausted or dead.
    fn release(&mut self) {
        if let Some(pin) = self.pin.take() {
            if !self.in_transaction {
                self.client.inner.pins().release_later(pin);
            }
        }
        if let Some(s) = self.session.take() {
            let timeout = self.client.inner.topology.snapshot().description.logical_session_timeout_minutes();
            self.client.inner.sessions.release(s, timeout);
        }
    }

    /// One `getMore` under `deadline`; its batch replaces the buffer.
    async fn get_more(&mut self, deadline: Option<tokio::time::Instant>) -> Result<()> {
        if self.cut_off {
            return Err(cut_off_error(&self.address));
        }
        let mut max_time_ms = None;
        if let Some(max_await) = self.max_await {
            let await_ms = i64::try_from(max_await.as_millis()).unwrap_or(i64::MAX);
            let snapshot = self.client.inner.topology.snapshot();
            let min_rtt = snapshot.handle(&self.address).map(|h| h.rtt.min()).unwrap_or_default();
            let ms = timeout::max_time_ms(deadline, min_rtt)?.map_or(await_ms, |ms| ms.min(await_ms));
            max_time_ms = Some(ms);
        }
        let op = GetMore {
            db: &self.db,
            collection: &self.collection,
            id: self.id,
            batch_size: self.batch_size,
            max_time_ms,
            comment: self.comment.clone(),
        };
        let mut pinned = match self.pin {
            Some(pin) => Some(take_pinned(self.client.inner.pins(), pin).await?),
            None => None,
        };
        let result = if timeout::is_expired(deadline) {
            Err(Error::timeout("the cursor's timeoutMS expired before getMore", None))
        } else {
            let limits = Limits::until(self.timeout, deadline).sending_max_time(false);
            // Set across the exchange: a future dropped in it leaves the cursor cut off.
            self.cut_off = true;
            let mut state = TransactionState::InProgress;
            let binding = Binding {
                session: session_use(self.session.as_mut(), self.in_transaction, &mut state),
                server: Some(&self.address),
                connection: self.pin.is_some().then_some(&mut pinned),
                purpose: CheckoutPurpose::Other,
            };
            let result = self.client.inner.run(op, limits, binding).await;
            self.cut_off = result.as_ref().is_err_and(timed_out_mid_exchange);
            result
        };
        if let (Some(pin), Some(connection)) = (self.pin, pinned) {
            // Pinned again while the cursor lives (release() unpins at the end).
            let _ = self.client.inner.pins().keep(pin, connection).await;
        }
        match result {
            Ok(NextBatch { id, batch, post_batch_resume_token }) => {
                self.id = id;
                self.buffer = batch;
                self.post_batch_resume_token = post_batch_resume_token;
                if id == 0 {
                    self.release();
                }
            }
            Err(e) if e.is_timeout() && self.pin.is_none() => {
                // CSOT: the client gave up waiting; the server's cursor lives on, so the
                // cursor may be iterated again, and closing it kills it.
                return Err(e);
            }
            Err(e) if self.pin.is_some() && !e.is_network_error() => {
                // Load-balanced: after a command error the connection stays pinned, and
                // closing the cursor kills it on that connection (load-balancers spec).
                return Err(e);
            }
            Err(e)
                if !e.is_network_error() && !matches!(e.code(), Some(CURSOR_NOT_FOUND | CURSOR_KILLED)) =>
            {
                // A command error (an overload after its retries, say) leaves the server's
                // cursor open: closing the cursor kills it.
                return Err(e);
            }
            Err(e) => {
                // A cursor whose getMore failed is dead (the server closed it; network errors
                // left it unreachable): no killCursors. After a network
                // error a pinned connection stays pinned until the cursor is dropped
                // (load-balancer spec).
                self.id = 0;
                if e.is_network_error() && self.pin.is_some() {
                    self.network_error = true;
                } else {
                    self.release();
                }
                return Err(e);
            }
        }
        Ok(())
    }
}

/// The session a cursor's command sends: its transaction's statement, or the session as is.
fn session_use<'a>(
    session: Option<&'a mut ServerSession>,
    in_transaction: bool,
    state: &'a mut TransactionState,
) -> SessionUse<'a> {
    match session {
        // A getMore or killCursors never starts its transaction.
        Some(session) if in_transaction => SessionUse::Transaction { session, state },
        Some(session) => SessionUse::Given(session),
        None => SessionUse::None,
    }
}

/// Takes a cursor's pinned connection out of the selection actor for one command.
async fn take_pinned(pins: Pins<'_>, pin: PinId) -> Result<PooledConnection<Connection>> {
    pins.take(pin).await?.ok_or_else(|| Error::stopped("selection (pinned connection gone)"))
}

/// A timeout that expired while the request was on the wire (not while selecting a server or
/// checking out a connection): the server may have answered.
fn timed_out_mid_exchange(e: &Error) -> bool {
    let Some(source) = e.timeout_source() else { return false };
    matches!(
        source.pool_error(),
        Some(pool::Error::Timeout { phase: pool::Phase::Write | pool::Phase::Read, .. })
    )
}

/// The error of a cursor whose earlier `getMore` was cut off: a network error (a change stream
/// resumes from its token; a plain cursor ends), never a silently skipped batch.
fn cut_off_error(address: &ServerAddress) -> Error {
    let reason = "an earlier getMore of this cursor was cut off mid-exchange (its future was dropped or \
                  timed out): the batch it asked for may be lost, so the cursor cannot go on"
        .to_string();
    Error::connection(address.clone(), pool::Error::Interrupted { address: address.clone(), reason })
}

/// The server has no such cursor (any more).
const CURSOR_NOT_FOUND: i32 = 43;
/// The server killed the cursor.
const CURSOR_KILLED: i32 = 237;

/// A `killCursors` to send for a cursor closed before it was exhausted.
struct Kill {
    client: Client,
    address: ServerAddress,
    db: String,
    collection: String,
    id: i64,
    session: Option<ServerSession>,
    pin: Option<PinId>,
    /// CSOT: the refreshed timeout of the `killCursors` (sent as `maxTimeMS` too).
    timeout: Option<Duration>,
    /// Opened in a load-balanced transaction: the pin is the session's and stays.
    in_transaction: bool,
}

impl Kill {
    /// Sends `killCursors` (errors ignored: the server reaps the cursor eventually), then
    /// returns the pinned connection and the session. In a load-balanced transaction it
    /// carries `txnNumber` and `autocommit: false`, and the connection stays pinned to the
    /// session.
    async fn run(self) {
        let Kill { client, address, db, collection, id, mut session, pin, timeout, in_transaction } = self;
        let mut pinned = match pin {
            Some(pin) => take_pinned(client.inner.pins(), pin).await.ok(),
            None => None,
        };
        let op = KillCursors { db: &db, collection: &collection, id };
        let limits = Limits::new(timeout);
        let mut state = TransactionState::InProgress;
        let binding = Binding {
            session: session_use(session.as_mut(), in_transaction, &mut state),
            server: Some(&address),
            connection: pin.is_some().then_some(&mut pinned),
            purpose: CheckoutPurpose::Other,
        };
        if let Err(e) = client.inner.run(op, limits, binding).await {
            tracing::debug!(%address, cursor = id, error = %e, "killCursors failed (ignored)");
        }
        if let (true, Some(pin), Some(connection)) = (in_transaction, pin, pinned.take()) {
            let _ = client.inner.pins().keep(pin, connection).await;
        }
        drop(pinned);
        if let Some(s) = session {
            let timeout = client.inner.topology.snapshot().description.logical_session_timeout_minutes();
            client.inner.sessions.release(s, timeout);
        }
    }
}

impl RawCursor {
    /// The `killCursors` to send for a live cursor (`None` when there is nothing to kill);
    /// the cursor is left exhausted.
    fn take_kill(&mut self, timeout: Option<Duration>) -> Option<Kill> {
        if self.id == 0 {
            return None;
        }
        let kill = Kill {
            client: self.client.clone(),
            address: self.address.clone(),
            db: std::mem::take(&mut self.db),
            collection: std::mem::take(&mut self.collection),
            id: self.id,
            session: self.session.take(),
            pin: self.pin.take(),
            timeout,
            in_transaction: self.in_transaction,
        };
        self.id = 0;
        Some(kill)
    }

    /// Closes the cursor: see [`Cursor::close`].
    pub(crate) async fn close(mut self, timeout: Option<Duration>) {
        let timeout = timeout::inherit(self.timeout, timeout);
        if let Some(kill) = self.take_kill(timeout) {
            kill.run().await;
        }
    }
}

impl Drop for RawCursor {
    fn drop(&mut self) {
        // close refreshes the timeout: killCursors gets a full timeoutMS of its own.
        let Some(kill) = self.take_kill(self.timeout) else {
            if self.network_error || self.in_transaction {
                self.release();
            }
            return;
        };
        let inner = self.client.inner.clone();
        inner.spawn_background(kill.run());
    }
}

/// Where a command that opens a cursor runs, and its CSOT rules: CURSOR_LIFETIME sends
/// `maxTimeMS` on the first command and keeps one deadline for every `getMore`; ITERATION
/// sends none (but a tailable awaitData cursor's first command does) and gives each
/// `getMore` a full timeout.
pub(crate) struct OpenCursor {
    /// The `timeoutMS`.
    pub timeout: Option<Duration>,
    /// From [`cursor_mode`](super::op_options::cursor_mode).
    pub mode: (TimeoutMode, bool),
    /// `batchSize` of the `getMore`s.
    pub batch_size: Option<u32>,
}

impl OpenCursor {
    /// Runs `op` (with `session`, or an implicit one the cursor keeps) and opens its cursor;
    /// in a load-balanced transaction the cursor uses the transaction's connection.
    pub(crate) async fn run<O: Operation<Output = CursorReply>>(
        self,
        client: &Client,
        op: O,
        mut session: Option<&mut ClientSession>,
    ) -> Result<RawCursor> {
        let (mode, send_max_time) = self.mode;
        let limits = Limits::new(self.timeout).sending_max_time(send_max_time);
        let reply = super::executor::run(client, op, limits, session.as_deref_mut()).await?;
        let mut cursor = RawCursor::new(client.clone(), reply, self.batch_size).await?;
        cursor.set_timeout(self.timeout, mode, limits.deadline);
        if let Some(session) = session.filter(|s| s.in_transaction()) {
            cursor.join_transaction(session.transaction_pin());
        }
        Ok(cursor)
    }

    /// Runs `op` with `session` (a change stream's, when it resumes; `None`: an implicit
    /// one) under `deadline` and opens its cursor, which keeps the session.
    pub(crate) async fn run_with_server_session<O: Operation<Output = CursorReply>>(
        self,
        client: &Client,
        mut op: O,
        mut session: Option<ServerSession>,
        deadline: Option<tokio::time::Instant>,
    ) -> Result<RawCursor> {
        let (mode, send_max_time) = self.mode;
        let limits = Limits::until(self.timeout, deadline).sending_max_time(send_max_time);
        let binding = Binding {
            session: match session.as_mut() {
                Some(s) => SessionUse::Given(s),
                None => SessionUse::Implicit,
            },
            server: None,
            connection: None,
            purpose: CheckoutPurpose::Other,
        };
        let result = match op.prepare() {
            Ok(prepared) => Box::pin(client.inner.execute(prepared, limits, binding)).await,
            Err(e) => Err(e),
        };
        let mut reply = match result.and_then(|out| op.handle_reply(out)) {
            Ok(reply) => reply,
            Err(e) => {
                if let Some(s) = session {
                    let timeout =
                        client.inner.topology.snapshot().description.logical_session_timeout_minutes();
                    client.inner.sessions.release(s, timeout);
                }
                return Err(e);
            }
        };
        if reply.session.is_none() {
            reply.session = session;
        }
        let mut cursor = RawCursor::new(client.clone(), reply, self.batch_size).await?;
        cursor.set_timeout(self.timeout, mode, limits.deadline);
        Ok(cursor)
    }
}

/// A `getMore` in flight: it owns the cursor and gives it back with the outcome.
type Pending = BoxFuture<'static, (Box<RawCursor>, Result<()>)>;

/// The results of a `find`, an `aggregate` or a listing, as `T`s (`Document` unless given),
/// batch by batch: a [`Stream`] of `Result<T>` (use `futures::TryStreamExt`, or
/// `TryStreamExt::try_next` and `try_collect`).
///
/// When a batch runs out, the cursor sends a `getMore` to the server that opened it, with
/// its session (and, in load-balanced mode, on its pinned connection). Dropping a cursor that
/// is not exhausted kills it on the server in the background (errors ignored) and returns
/// its session. A document that does not deserialize into `T` is an
/// [`ErrorKind::BsonDeserialization`](crate::error::ErrorKind::BsonDeserialization) for that item; the cursor goes on with the next.
pub struct Cursor<T = Document> {
    /// `None` while a `getMore` is in flight.
    raw: Option<Box<RawCursor>>,
    pending: Option<Pending>,
    /// The deadline of the current `next` (ITERATION mode: one `timeoutMS` for all the
    /// `getMore`s one item needs); reset when an item is returned.
    next_deadline: Option<Option<tokio::time::Instant>>,
    /// The current `next` has sent a `getMore` (kept across polls; reset with the deadline).
    sent: bool,
    /// The server's cursor id and address as last seen (the raw cursor is away during a
    /// `getMore`).
    id: i64,
    address: ServerAddress,
    /// The document [`Cursor::advance`] moved to.
    current: Option<Doc>,
    _type: PhantomData<fn() -> T>,
}

impl<T> std::fmt::Debug for Cursor<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cursor")
            .field("address", &self.address)
            .field("id", &self.id)
            .field("buffered", &self.raw.as_ref().map_or(0, |r| r.buffer.len()))
            .finish_non_exhaustive()
    }
}

impl<T> Cursor<T> {
    pub(crate) fn new(raw: RawCursor) -> Cursor<T> {
        Cursor {
            id: raw.id,
            address: raw.address.clone(),
            raw: Some(Box::new(raw)),
            pending: None,
            next_deadline: None,
            sent: false,
            current: None,
            _type: PhantomData,
        }
    }

    /// The server's cursor id (0 once exhausted).
    pub fn id(&self) -> i64 {
        self.id
    }

    /// The server the cursor lives on.
    pub fn address(&self) -> &ServerAddress {
        &self.address
    }

    /// Whether more documents may come: documents are buffered, or the server's cursor is
    /// open.
    pub fn has_next(&self) -> bool {
        self.id != 0 || self.raw.as_ref().is_some_and(|r| !r.buffer.is_empty()) || self.pending.is_some()
    }

    /// A change stream's `postBatchResumeToken` of the last batch (`None` while a `getMore`
    /// is in flight).
    pub(crate) fn post_batch_resume_token(&self) -> Option<&Document> {
        self.raw.as_ref().and_then(|r| r.post_batch_resume_token.as_ref())
    }

    /// Whether no document of the last batch is left to return.
    pub(crate) fn batch_is_empty(&self) -> bool {
        self.raw.as_ref().is_none_or(|r| r.buffer.is_empty())
    }

    /// The opening reply's `operationTime`.
    pub(crate) fn operation_time(&self) -> Option<bson::Timestamp> {
        self.raw.as_ref().and_then(|r| r.operation_time)
    }

    /// Sets a change stream cursor's `maxAwaitTimeMS` and `comment` for its `getMore`s.
    pub(crate) fn configure(&mut self, max_await: Option<Duration>, comment: Option<bson::Bson>) {
        if let Some(raw) = self.raw.as_mut() {
            raw.set_max_await(max_await);
            raw.set_comment(comment);
        }
    }

    /// Takes the cursor's session for the cursor that replaces it (a change stream's
    /// resume); a live cursor keeps a lent copy to name it in its `killCursors`.
    pub(crate) fn take_session_for_resume(&mut self) -> Option<ServerSession> {
        let raw = self.raw.as_mut()?;
        let session = raw.session.take()?;
        if raw.id != 0 {
            raw.session = Some(session.lend());
        }
        Some(session)
    }

    /// Like `try_next_once`, but an empty batch keeps the call's ITERATION deadline: a
    /// change stream's `next` sends `getMore`s under one deadline until an event comes.
    pub(crate) fn poll_next_document_keeping_deadline(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Document>>> {
        let next = self.poll_next_step(cx, true);
        match &next {
            Poll::Ready(None) | Poll::Ready(Some(Err(_))) => self.sent = false,
            Poll::Ready(Some(Ok(_))) => self.reset_deadline(),
            Poll::Pending => {}
        }
        next.map(|next| next.map(|r| r.and_then(|d| d.as_raw().map(convert))))
    }

    /// The deadline of the current call, once a `getMore` set it (`Some(None)`: no limit).
    pub(crate) fn call_deadline(&self) -> Option<Option<tokio::time::Instant>> {
        self.next_deadline
    }

    /// Continues a call whose deadline was set before this cursor existed (a resume).
    pub(crate) fn set_call_deadline(&mut self, deadline: Option<Option<tokio::time::Instant>>) {
        self.next_deadline = deadline;
    }

    /// Ends the current call: the next one gets a new deadline.
    pub(crate) fn reset_deadline(&mut self) {
        self.next_deadline = None;
        self.sent = false;
    }

    /// The same cursor, reading `U`s.
    pub fn with_type<U>(self) -> Cursor<U> {
        let Cursor { raw, pending, next_deadline, sent, id, address, current, _type } = self;
        Cursor { raw, pending, next_deadline, sent, id, address, current, _type: PhantomData }
    }

    /// Closes the cursor: a live one is killed on the server (`killCursors`, errors ignored)
    /// and its session and pinned connection are returned. `timeout` is the `timeoutMS` of
    /// the `killCursors` (`None`: the cursor's own, refreshed: a full timeoutMS for close).
    pub async fn close(mut self, timeout: Option<Duration>) {
        if let Some(pending) = self.pending.take() {
            let (raw, _) = pending.await;
            self.raw = Some(raw);
        }
        if let Some(raw) = self.raw.take() {
            raw.close(timeout).await;
        }
    }

    /// Polls the `getMore` in flight, if any; the raw cursor is back when it is ready.
    fn poll_pending(&mut self, cx: &mut Context<'_>) -> Poll<Result<()>> {
        let Some(pending) = self.pending.as_mut() else { return Poll::Ready(Ok(())) };
        let (raw, result) = match pending.as_mut().poll(cx) {
            Poll::Ready(r) => r,
            Poll::Pending => return Poll::Pending,
        };
        self.pending = None;
        self.id = raw.id;
        self.raw = Some(raw);
        Poll::Ready(result)
    }

    /// The next document as the server sent it (its bytes), `getMore`s included; `once`:
    /// after at most one `getMore` (`tryNext`), even if its batch was empty.
    pub(crate) fn poll_next_raw(&mut self, cx: &mut Context<'_>, once: bool) -> Poll<Option<Result<Doc>>> {
        let next = self.poll_next_step(cx, once);
        if next.is_ready() {
            // The next `next` starts afresh: a new ITERATION deadline, no getMore sent yet.
            self.next_deadline = None;
            self.sent = false;
        }
        next
    }

    fn poll_next_step(&mut self, cx: &mut Context<'_>, once: bool) -> Poll<Option<Result<Doc>>> {
        self.poll_step(cx, once, Docs::pop_front)
    }

    /// The rest of the current batch, whole (a raw batch cursor), sending `getMore`s until a
    /// batch has documents; `None` once the cursor is exhausted.
    pub(crate) fn poll_next_batch(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Docs>>> {
        let next = self.poll_step(cx, false, |docs| (!docs.is_empty()).then(|| std::mem::take(docs)));
        if next.is_ready() {
            self.next_deadline = None;
            self.sent = false;
        }
        next
    }

    /// Takes what `take` finds in the buffer, sending a `getMore` when it finds nothing;
    /// `once`: after at most one `getMore`.
    fn poll_step<X>(
        &mut self,
        cx: &mut Context<'_>,
        once: bool,
        take: impl Fn(&mut Docs) -> Option<X>,
    ) -> Poll<Option<Result<X>>> {
        loop {
            match self.poll_pending(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(e)) => return Poll::Ready(Some(Err(e))),
                Poll::Ready(Ok(())) => {}
            }
            let Some(raw) = self.raw.as_mut() else { return Poll::Ready(None) };
            if let Some(d) = take(&mut raw.buffer) {
                return Poll::Ready(Some(Ok(d)));
            }
            if raw.id == 0 || (once && self.sent) {
                return Poll::Ready(None);
            }
            let deadline = *self.next_deadline.get_or_insert_with(|| raw.get_more_deadline());
            let Some(mut raw) = self.raw.take() else { return Poll::Ready(None) };
            self.pending = Some(Box::pin(async move {
                let result = raw.get_more(deadline).await;
                (raw, result)
            }));
            self.sent = true;
        }
    }
}

impl<T> Cursor<T> {
    /// Moves to the next document without deserializing it, sending `getMore`s as needed:
    /// `true` when there is one ([`current`](Cursor::current) then borrows it), `false` once
    /// the cursor is exhausted.
    pub async fn advance(&mut self) -> Result<bool> {
        self.current = None;
        match std::future::poll_fn(|cx| self.poll_next_raw(cx, false)).await {
            Some(Ok(doc)) => {
                self.current = Some(doc);
                Ok(true)
            }
            Some(Err(e)) => Err(e),
            None => Ok(false),
        }
    }

    /// The document the last [`advance`](Cursor::advance) that returned `true` moved to, as
    /// the server sent it (no copy). Before that, or after it returned `false`, an empty
    /// document (the official driver panics there).
    pub fn current(&self) -> &RawDocument {
        static EMPTY: std::sync::LazyLock<bson::RawDocumentBuf> =
            std::sync::LazyLock::new(bson::RawDocumentBuf::new);
        self.current.as_ref().and_then(|d| d.as_raw().ok()).unwrap_or(&EMPTY)
    }

    /// The current document as a `T`, borrowing from it where `T` does (`&str` fields).
    ///
    /// # Errors
    /// [`ErrorKind::BsonDeserialization`](crate::error::ErrorKind::BsonDeserialization) when it
    /// does not deserialize; [`ErrorKind::InvalidArgument`](crate::error::ErrorKind::InvalidArgument)
    /// when there is no current document.
    pub fn deserialize_current<'a>(&'a self) -> Result<T>
    where
        T: serde::Deserialize<'a>,
    {
        let doc = self
            .current
            .as_ref()
            .ok_or_else(|| Error::invalid_argument("no current document: advance() has not returned true"))?;
        crate::bson_compat::deserialize_from_slice(doc.as_raw()?.as_bytes())
            .map_err(|e| Error::deserialization(e.to_string()))
    }
}

impl<T: DeserializeOwned + 'static> Cursor<T> {
    /// The next document with at most one `getMore` (`tryNext`): `None` when that batch was
    /// empty (a tailable cursor with no new data) or the cursor is exhausted.
    pub async fn try_next_once(&mut self) -> Result<Option<T>> {
        let next = std::future::poll_fn(|cx| self.poll_next_raw(cx, true)).await;
        next.map(|r| r.and_then(|d| super::codec::decode_raw(d.as_raw()?))).transpose()
    }
}

impl<T: DeserializeOwned + 'static> Stream for Cursor<T> {
    type Item = Result<T>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<T>>> {
        let this = self.get_mut();
        this.poll_next_raw(cx, false)
            .map(|next| next.map(|r| r.and_then(|d| super::codec::decode_raw(d.as_raw()?))))
    }
}
