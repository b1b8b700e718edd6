//! Explicit sessions and transactions (minimal).
//!
//! [`Client::start_session`] takes a server session from the pool; the [`ClientSession`] gives
//! it back when dropped. Every operation takes it with `.session(&mut session)`
//! (`coll.insert_one(doc).session(&mut session).await`), and then sends its `lsid`; with or
//! without one, operations run through the client's one executor.
//!
//! Inside a transaction ([`ClientSession::start_transaction`]) every command carries
//! `txnNumber` and `autocommit: false`, the first one `startTransaction: true`; the
//! collection's write concern is only sent with `commitTransaction` / `abortTransaction`.
//! In load-balanced mode the transaction pins one connection (checked out with
//! [`CheckoutPurpose::Transaction`]) for all its commands: one check-out and one check-in
//! event, and two sessions never share it. It stays pinned after a commit (which may be
//! repeated) and is unpinned by an abort, a network or `TransientTransactionError` error, the
//! next transaction, the next operation outside a transaction, or the end of the session.
//!
//! A cursor opened in a load-balanced transaction runs its `getMore`s and `killCursors` on the
//! transaction's connection; do not iterate it while the session runs another operation.
//!
//! CSOT: an operation with a session runs under its handle's timeoutMS (selection, check-out,
//! round trip, `maxTimeMS`); commit and abort under the call's, else the session's default
//! timeout ([`SessionOptions::default_timeout`], else the client's).
//! [`ClientSession::with_transaction`] applies one deadline to its whole run.
//!
//! Every operation takes a session, and runs through the client's one executor either way:
//! outside a transaction an explicit session's operations are retried as
//! implicit ones are; a transaction's statements are not (commit and abort are retried once
//! on a retryable error).

use std::time::Duration;

use bson::Document;
use futures_util::future::BoxFuture;
use pool::cmap::CheckoutPurpose;
use tokio::time::Instant;

use super::inner::Client;
use super::operation::{Binding, Limits, Op, OpOutput, Operation, SessionUse};
use super::ops::session::{EndTransaction, Outcome};
use super::session::ServerSession;
use super::timeout;
use crate::error::RETRYABLE_WRITE_ERROR;
use crate::selection_actor::{Criteria, PinConnection, PinId, SelectionRequest, TakePinned, Unpin};
use crate::{Error, Result};

/// The label of errors after which the whole transaction may be retried.
pub const TRANSIENT_TRANSACTION_ERROR: &str = "TransientTransactionError";
/// The label of commit errors whose outcome is unknown.
pub const UNKNOWN_TRANSACTION_COMMIT_RESULT: &str = "UnknownTransactionCommitResult";

/// How long [`ClientSession::with_transaction`] retries without a timeoutMS (convenient
/// transactions API).
const WITH_TRANSACTION_LIMIT: Duration = Duration::from_secs(120);

/// Where a session's transaction stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TransactionState {
    /// No transaction was started.
    None,
    /// Started; no command sent yet.
    Starting,
    /// At least one command was sent.
    InProgress,
    /// Committed.
    Committed,
    /// Aborted.
    Aborted,
}

/// Options of [`Client::start_session_with_options`].
#[derive(Debug, Clone, Default)]
pub struct SessionOptions {
    /// `defaultTimeoutMS`: the timeoutMS of [`ClientSession::commit_transaction`],
    /// [`ClientSession::abort_transaction`] and [`ClientSession::with_transaction`] when the
    /// call sets none (`Some(Duration::ZERO)`: no limit). `None` inherits the client's.
    pub default_timeout: Option<Duration>,
}

/// Options of [`ClientSession::commit_transaction_with`] and
/// [`ClientSession::abort_transaction_with`].
#[derive(Debug, Clone, Default)]
pub struct EndTransactionOptions {
    /// timeoutMS of this call (`Some(Duration::ZERO)`: no limit); `None` uses the session's
    /// default timeout.
    pub timeout: Option<Duration>,
}

/// Options of [`ClientSession::with_transaction`].
#[derive(Debug, Clone, Default)]
pub struct WithTransactionOptions {
    /// timeoutMS of the whole call, retries included (`Some(Duration::ZERO)`: no limit);
    /// `None` uses the session's default timeout. Without any, retries stop after 120 s.
    pub timeout: Option<Duration>,
}

/// The timeout a running `with_transaction` applies to its callback's operations.
#[derive(Debug, Clone, Copy)]
struct CallbackTimeout {
    timeout: Option<Duration>,
    deadline: Option<Instant>,
}

/// An explicit session: a server session owned until drop, with at most one transaction at
/// a time. Not for concurrent use (operations take `&mut`).
pub struct ClientSession {
    client: Client,
    server: Option<ServerSession>,
    timeout_minutes: Option<i64>,
    state: TransactionState,
    /// The session's timeoutMS for commit / abort / with_transaction (the client's when the
    /// options set none).
    default_timeout: Option<Duration>,
    /// Set while `with_transaction` runs with a timeout: its operations share its deadline.
    callback_timeout: Option<CallbackTimeout>,
    /// Load-balanced transaction: its connection, pinned in the selection actor. Kept after
    /// commit (a commit may be repeated) until the next transaction, the next operation
    /// outside a transaction, an abort, a transient error, or the end of the session.
    pin: Option<PinId>,
    /// The copy a drop spawns to abort: dropping it never spawns again (a runtime shutting
    /// down drops spawned futures at once).
    aborting_on_drop: bool,
}

impl std::fmt::Debug for ClientSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientSession")
            .field("lsid", &self.server.as_ref().map(|s| &s.lsid))
            .field("state", &self.state)
            .field("pinned", &self.pin.is_some())
            .finish()
    }
}

impl Client {
    /// Starts an explicit session (no I/O in load-balanced mode; otherwise waits in server
    /// selection until the deployment's session support is known).
    ///
    /// # Errors
    /// [`Error::InvalidOptions`] when the deployment does not support sessions; selection
    /// errors.
    pub async fn start_session(&self) -> Result<ClientSession> {
        self.start_session_with_options(SessionOptions::default()).await
    }

    /// [`start_session`](Self::start_session) with options. The wait for session support is
    /// limited by the client's timeoutMS (never the session's).
    ///
    /// # Errors
    /// As [`start_session`](Self::start_session).
    pub async fn start_session_with_options(&self, options: SessionOptions) -> Result<ClientSession> {
        self.inner.check_open()?;
        let mut timeout = self.inner.topology.snapshot().description.logical_session_timeout_minutes();
        if timeout.is_none() && !self.inner.settings.load_balanced {
            let mut request = SelectionRequest::new(
                Criteria::Read(selection::ReadPreference::PRIMARY_PREFERRED),
                "startSession",
            );
            let client_timeout = self.inner.settings.timeout;
            request.deadline = timeout::deadline(client_timeout);
            let deadline = request.deadline;
            let selected = self
                .inner
                .selector
                .select(request)
                .await
                .map_err(|e| timeout::convert(e, client_timeout, deadline))?;
            timeout = selected.snapshot.description.logical_session_timeout_minutes();
            if timeout.is_none() {
                return Err(Error::InvalidOptions {
                    message: "the deployment does not support sessions".into(),
                });
            }
        }
        Ok(ClientSession {
            client: self.clone(),
            server: Some(self.inner.sessions.acquire(timeout)),
            timeout_minutes: timeout,
            state: TransactionState::None,
            default_timeout: timeout::inherit(self.inner.settings.timeout, options.default_timeout),
            callback_timeout: None,
            pin: None,
            aborting_on_drop: false,
        })
    }
}

fn state_error(message: &str) -> Error {
    Error::InvalidOptions { message: message.to_string() }
}

/// An error that says the transaction may be retried, or that its connection is not usable
/// for it any more (also under a timeout that wraps it).
fn releases_pin(e: &Error) -> bool {
    let network = match e {
        Error::Timeout { source: Some(source), .. } => source.is_network_error(),
        e => e.is_network_error(),
    };
    network || e.has_label(TRANSIENT_TRANSACTION_ERROR)
}

impl ClientSession {
    /// The session id (`{id: UUID}`).
    pub fn id(&self) -> Option<&Document> {
        self.server.as_ref().map(|s| &s.lsid)
    }

    /// Where the transaction stands.
    pub fn transaction_state(&self) -> TransactionState {
        self.state
    }

    /// Whether a connection is pinned to the session (load-balanced transactions).
    pub fn is_pinned(&self) -> bool {
        self.pin.is_some()
    }

    /// The session's timeoutMS for commit, abort and `with_transaction` (`None`: not set).
    pub fn default_timeout(&self) -> Option<Duration> {
        self.default_timeout
    }

    /// Starts a transaction: the next command carries `startTransaction: true`.
    ///
    /// # Errors
    /// [`Error::InvalidOptions`] when a transaction is already in progress.
    pub fn start_transaction(&mut self) -> Result<()> {
        if matches!(self.state, TransactionState::Starting | TransactionState::InProgress) {
            return Err(state_error("a transaction is already in progress"));
        }
        self.unpin();
        let server = self.server.as_mut().ok_or_else(|| state_error("the session has ended"))?;
        server.next_txn_number();
        self.state = TransactionState::Starting;
        Ok(())
    }

    /// Commits the transaction (nothing is sent when no command ran in it), under the
    /// session's default timeout. Retried once on a retryable error. In load-balanced mode
    /// the connection stays pinned (a commit may be repeated) unless the commit fails with a
    /// network or transient error.
    ///
    /// # Errors
    /// [`Error::InvalidOptions`] without a transaction; the server's or the network's error,
    /// labelled `UnknownTransactionCommitResult` when the outcome is unknown;
    /// [`Error::Timeout`] when the timeout expires.
    pub async fn commit_transaction(&mut self) -> Result<()> {
        self.commit_transaction_with(EndTransactionOptions::default()).await
    }

    /// [`commit_transaction`](Self::commit_transaction) with a timeout of its own.
    ///
    /// # Errors
    /// As [`commit_transaction`](Self::commit_transaction).
    pub async fn commit_transaction_with(&mut self, options: EndTransactionOptions) -> Result<()> {
        let (timeout, deadline) = self.end_timeout(&options);
        self.commit_until(timeout, deadline).await
    }

    /// The timeout of a commit or abort and its deadline: the call's own, else the
    /// enclosing `with_transaction`'s deadline, else the session's default.
    fn end_timeout(&self, options: &EndTransactionOptions) -> (Option<Duration>, Option<Instant>) {
        match (options.timeout, self.callback_timeout) {
            (Some(t), _) => (Some(t), timeout::deadline(Some(t))),
            (None, Some(c)) => (c.timeout, c.deadline),
            (None, None) => (self.default_timeout, timeout::deadline(self.default_timeout)),
        }
    }

    async fn commit_until(&mut self, timeout: Option<Duration>, deadline: Option<Instant>) -> Result<()> {
        match self.state {
            TransactionState::None => return Err(state_error("no transaction started")),
            TransactionState::Aborted => {
                return Err(state_error("cannot call commitTransaction after abortTransaction"))
            }
            TransactionState::Starting => {
                self.state = TransactionState::Committed;
                return Ok(());
            }
            TransactionState::InProgress | TransactionState::Committed => {}
        }
        let mut result = self.end_command(Outcome::Commit, timeout, deadline, true).await;
        if let Err(e) = &result {
            if e.is_network_error() || e.has_label(RETRYABLE_WRITE_ERROR) {
                // The retry goes to another connection, which is not pinned.
                self.unpin();
                result = self.end_command(Outcome::Commit, timeout, deadline, false).await;
            }
        }
        self.state = TransactionState::Committed;
        result.map(|_| ()).map_err(|mut e| {
            if e.is_network_error()
                || e.has_label(RETRYABLE_WRITE_ERROR)
                || e.kind() == crate::ErrorKind::Timeout
            {
                e.add_label(UNKNOWN_TRANSACTION_COMMIT_RESULT);
            }
            e
        })
    }

    /// Aborts the transaction (nothing is sent when no command ran in it), under the
    /// session's default timeout. Errors of the `abortTransaction` command are ignored, as
    /// the transactions spec says; the connection is unpinned.
    ///
    /// # Errors
    /// [`Error::InvalidOptions`] without a transaction in progress.
    pub async fn abort_transaction(&mut self) -> Result<()> {
        self.abort_transaction_with(EndTransactionOptions::default()).await
    }

    /// [`abort_transaction`](Self::abort_transaction) with a timeout of its own.
    ///
    /// # Errors
    /// As [`abort_transaction`](Self::abort_transaction).
    pub async fn abort_transaction_with(&mut self, options: EndTransactionOptions) -> Result<()> {
        let (timeout, deadline) = self.end_timeout(&options);
        self.abort_until(timeout, deadline).await
    }

    async fn abort_until(&mut self, timeout: Option<Duration>, deadline: Option<Instant>) -> Result<()> {
        match self.state {
            TransactionState::None => return Err(state_error("no transaction started")),
            TransactionState::Committed => {
                return Err(state_error("cannot call abortTransaction after commitTransaction"))
            }
            TransactionState::Aborted => return Err(state_error("cannot call abortTransaction twice")),
            TransactionState::Starting => {
                self.state = TransactionState::Aborted;
                return Ok(());
            }
            TransactionState::InProgress => {}
        }
        let mut result = self.end_command(Outcome::Abort, timeout, deadline, true).await;
        if let Err(e) = &result {
            if e.is_network_error() || e.has_label(RETRYABLE_WRITE_ERROR) {
                self.unpin();
                result = self.end_command(Outcome::Abort, timeout, deadline, false).await;
            }
        }
        if let Err(e) = result {
            tracing::debug!(error = %e, "abortTransaction failed (ignored)");
        }
        self.unpin();
        self.state = TransactionState::Aborted;
        Ok(())
    }

    /// Runs `callback` in a transaction and commits it (the convenient transactions API):
    /// the whole transaction is retried on a `TransientTransactionError`, the commit on an
    /// `UnknownTransactionCommitResult`, until the timeout (the options', else the session's
    /// default timeout) expires, or for 120 s without one. The callback's operations with
    /// this session share that deadline; one on a handle whose timeoutMS differs from the
    /// client's fails with [`Error::InvalidOptions`]. Operations without the session do not
    /// get the deadline. When the callback fails the transaction is aborted under a fresh
    /// timeout.
    ///
    /// ```no_run
    /// # async fn example(client: actors::Client) -> actors::Result<()> {
    /// use futures_util::FutureExt;
    /// let coll = client.database("app").collection::<bson::Document>("people");
    /// let mut session = client.start_session().await?;
    /// session
    ///     .with_transaction(
    ///         &coll,
    ///         |session, coll| {
    ///             async move {
    ///                 coll.insert_one(bson::doc! {"name": "Ada"}).session(session).await?;
    ///                 Ok(())
    ///             }
    ///             .boxed()
    ///         },
    ///         Default::default(),
    ///     )
    ///     .await?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// The callback's error (after the abort), the commit's error, or [`Error::Timeout`]
    /// (wrapping the last error) when the timeout expires between retries;
    /// [`Error::InvalidOptions`] when a transaction is already in progress.
    pub async fn with_transaction<R, C, F>(
        &mut self,
        mut context: C,
        mut callback: F,
        options: WithTransactionOptions,
    ) -> Result<R>
    where
        F: for<'b> FnMut(&'b mut ClientSession, &'b mut C) -> BoxFuture<'b, Result<R>>,
    {
        let timeout = timeout::inherit(self.default_timeout, options.timeout);
        let deadline = timeout::deadline(timeout);
        let started = Instant::now();
        let time_left = || match (timeout, deadline) {
            (Some(_), Some(d)) => Instant::now() < d,
            (Some(_), None) => true,
            _ => started.elapsed() < WITH_TRANSACTION_LIMIT,
        };
        let out_of_time = |e: Error| match timeout {
            Some(_) if e.kind() != crate::ErrorKind::Timeout => Error::Timeout {
                message: format!("timeoutMS expired while retrying the transaction after: {e}"),
                source: Some(Box::new(e)),
            },
            _ => e,
        };
        'transaction: loop {
            self.start_transaction()?;
            self.callback_timeout =
                timeout.map(|timeout| CallbackTimeout { timeout: Some(timeout), deadline });
            let ret = callback(self, &mut context).await;
            self.callback_timeout = None;
            let ret = match ret {
                Ok(r) => r,
                Err(e) => {
                    if self.in_transaction() {
                        // A fresh timeout: the transaction must not stay open on the server.
                        let _ = self.abort_until(timeout, timeout::deadline(timeout)).await;
                    }
                    if e.has_label(TRANSIENT_TRANSACTION_ERROR) {
                        if time_left() {
                            continue 'transaction;
                        }
                        return Err(out_of_time(e));
                    }
                    return Err(e);
                }
            };
            if !self.in_transaction() {
                // The callback committed or aborted itself.
                return Ok(ret);
            }
            loop {
                let result = self.commit_until(timeout, deadline).await;
                let Err(e) = result else { return Ok(ret) };
                let max_time_expired = e.code() == Some(protocol::reply::MAX_TIME_MS_EXPIRED);
                if e.has_label(UNKNOWN_TRANSACTION_COMMIT_RESULT) && !max_time_expired {
                    if time_left() {
                        continue;
                    }
                    return Err(out_of_time(e));
                }
                if e.has_label(TRANSIENT_TRANSACTION_ERROR) {
                    if time_left() {
                        continue 'transaction;
                    }
                    return Err(out_of_time(e));
                }
                return Err(e);
            }
        }
    }

    /// Ends the session: aborts a transaction in progress, gives a pinned connection back to
    /// its pool before returning, and returns the server session to the pool. Dropping the
    /// session does the same in the background.
    pub async fn end_session(mut self) {
        if self.state == TransactionState::InProgress {
            let _ = self.abort_transaction().await;
        }
        if let Some(pin) = self.pin.take() {
            let _ = self.client.inner.selector.actor().send(Unpin { pin }).await;
        }
    }

    /// The pinned connection of a load-balanced transaction in progress (its cursors run
    /// their `getMore`s on it).
    pub(crate) fn transaction_pin(&self) -> Option<PinId> {
        self.pin.filter(|_| self.in_transaction())
    }

    /// Whether a transaction is starting or in progress.
    pub(crate) fn in_transaction(&self) -> bool {
        matches!(self.state, TransactionState::Starting | TransactionState::InProgress)
    }

    fn unpin(&mut self) {
        if let Some(pin) = self.pin.take() {
            self.client.inner.selector.actor().do_send(Unpin { pin });
        }
    }

    async fn end_command(
        &mut self,
        outcome: Outcome,
        timeout: Option<Duration>,
        deadline: Option<Instant>,
        may_pin: bool,
    ) -> Result<Document> {
        let write_concern = write_concern(&self.client.inner.settings, timeout);
        let mut end = EndTransaction { outcome, write_concern };
        let op = end.prepare()?;
        end.handle_reply(self.run(op, Limits::until(timeout, deadline), may_pin).await?)
    }

    /// Runs `op` with this session under `limits` (the operation's handle's timeoutMS; inside
    /// `with_transaction`, the transaction's deadline instead).
    pub(crate) async fn execute(&mut self, op: Op, limits: Limits) -> Result<OpOutput> {
        let limits = match self.callback_timeout {
            Some(c) => {
                if limits.timeout != self.client.inner.settings.timeout {
                    return Err(Error::InvalidOptions {
                        message: "timeoutMS cannot be set for an operation inside with_transaction".into(),
                    });
                }
                Limits { timeout: c.timeout, deadline: c.deadline, ..limits }
            }
            None => limits,
        };
        self.run(op, limits, true).await
    }

    /// Runs `op` through the client's executor with this session: its `lsid`, and inside a
    /// transaction its `txnNumber`, `autocommit: false` and (first statement)
    /// `startTransaction: true`, on the transaction's pinned connection in load-balanced mode
    /// (`may_pin`: false for a retried commit, which leaves its connection unpinned).
    /// Outside a transaction the retryable reads and writes rules apply as without a session.
    async fn run(&mut self, mut op: Op, limits: Limits, may_pin: bool) -> Result<OpOutput> {
        let inner = self.client.inner.clone();
        inner.check_open()?;
        let end = matches!(op.name.as_ref(), "commitTransaction" | "abortTransaction");
        let in_txn = self.in_transaction() || end;
        if !in_txn {
            // An operation outside a transaction releases the last transaction's connection,
            // back in the pool before this operation checks one out.
            if let Some(pin) = self.pin.take() {
                inner.selector.actor().send(Unpin { pin }).await?;
            }
        }
        if in_txn {
            statement(&mut op, &inner.settings, self.state == TransactionState::Starting && !end, end);
        }
        let pin_txn = in_txn && inner.settings.load_balanced && may_pin;
        let mut pinned = match self.pin {
            Some(pin) if pin_txn => inner.selector.actor().send(TakePinned { pin }).await??,
            _ => None,
        };
        let mut starting = self.state == TransactionState::Starting;
        let server = self.server.as_mut().ok_or_else(|| state_error("the session has ended"))?;
        let binding = Binding {
            session: if in_txn {
                SessionUse::Transaction { session: server, starting: &mut starting }
            } else {
                SessionUse::Given(server)
            },
            server: None,
            connection: pin_txn.then_some(&mut pinned),
            purpose: if pin_txn { CheckoutPurpose::Transaction } else { CheckoutPurpose::Other },
        };
        let result = inner.execute(op, limits, binding).await;
        if self.state == TransactionState::Starting && !starting {
            self.state = TransactionState::InProgress;
        }
        let release = match result.as_ref().err() {
            Some(e) if in_txn => releases_pin(e),
            _ => false,
        };
        if let Some(connection) = pinned.filter(|_| !release) {
            let pin = *self.pin.get_or_insert_with(|| inner.selector.new_pin_id());
            inner.selector.actor().send(PinConnection { pin, connection }).await??;
        }
        if release {
            self.unpin();
        }
        result.map_err(|mut e| {
            if in_txn && !end && release {
                // A statement that failed on the network may be retried with the whole
                // transaction.
                label_root(&mut e, TRANSIENT_TRANSACTION_ERROR);
            }
            e
        })
    }
}

/// The client's write concern for a command under `timeout` (CSOT: `timeoutMS` replaces
/// `wtimeout`); `None` when there is nothing to send.
pub(crate) fn write_concern(
    settings: &super::inner::Settings,
    timeout: Option<Duration>,
) -> Option<Document> {
    settings.write_concern.as_ref()?.to_document(timeout.is_some())
}

/// Makes `op` a statement of a transaction: only commit and abort carry a write concern, the
/// client's read concern goes with the first statement only (whatever it is), and reads go
/// to the primary.
fn statement(op: &mut Op, settings: &super::inner::Settings, first: bool, end: bool) {
    if !end {
        op.command.remove("writeConcern");
    }
    match (&settings.read_concern, first) {
        (Some(rc), true) => {
            op.command.insert("readConcern", rc.to_document());
        }
        _ => {
            op.command.remove("readConcern");
        }
    }
    if let Criteria::Read(_) = op.criteria {
        op.criteria = Criteria::Read(selection::ReadPreference::PRIMARY);
    }
}

/// Labels `e`, or the error a timeout wraps (whose labels the timeout reports).
fn label_root(e: &mut Error, label: &str) {
    match e {
        Error::Timeout { source: Some(source), .. } => source.add_label(label),
        e => e.add_label(label),
    }
}

/// Runs `op` with `session` (explicit, maybe in a transaction) or an implicit one, and reads
/// its reply.
pub(crate) async fn run<O: Operation>(
    client: &Client,
    mut op: O,
    limits: Limits,
    session: Option<&mut ClientSession>,
) -> Result<O::Output> {
    let prepared = op.prepare()?;
    // Boxed: the fluent operations box their future (IntoFuture); with the executor's state
    // behind a pointer, that box is small and cheap to fill.
    let out = match session {
        Some(session) => Box::pin(session.execute(prepared, limits)).await?,
        None => Box::pin(client.inner.execute(prepared, limits, Binding::implicit())).await?,
    };
    op.handle_reply(out)
}

impl Drop for ClientSession {
    fn drop(&mut self) {
        if let Some(s) = self.server.take() {
            if self.state == TransactionState::InProgress && !self.aborting_on_drop {
                // Best effort, on the transaction's pinned connection: the server aborts it
                // when the session expires otherwise.
                let mut session = ClientSession {
                    client: self.client.clone(),
                    server: Some(s),
                    timeout_minutes: self.timeout_minutes,
                    state: TransactionState::InProgress,
                    default_timeout: self.default_timeout,
                    callback_timeout: None,
                    pin: self.pin.take(),
                    aborting_on_drop: true,
                };
                let inner = self.client.inner.clone();
                inner.spawn(async move {
                    let _ = session.abort_transaction().await;
                });
                return;
            }
            let mut s = s;
            if self.state == TransactionState::InProgress {
                // The abort never ran: the server may still hold the transaction.
                s.dirty = true;
            }
            self.client.inner.sessions.release(s, self.timeout_minutes);
        }
        self.unpin();
    }
}
