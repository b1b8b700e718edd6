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

use bson::{Document, Timestamp};
use futures_util::future::BoxFuture;
use pool::cmap::CheckoutPurpose;
use protocol::sdam::TopologyType;
use protocol::ServerAddress;
use selection::ReadPreference;
use tokio::time::Instant;

use super::concern::{Acknowledgment, ReadConcern, WriteConcern};

use super::inner::Client;
use super::operation::{Binding, Limits, Op, OpOutput, Operation, SessionUse};
use super::ops::session::{EndTransaction, Outcome};
use super::session::{ServerSession, Tracking};
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
    /// `causalConsistency`: each read sees the session's earlier reads and writes (it sends
    /// `afterClusterTime`). Default: on, unless `snapshot` is set. Not causally consistent
    /// with unacknowledged writes.
    pub causal_consistency: Option<bool>,
    /// `snapshot`: every read of the session sees the same point in time (`readConcern:
    /// {level: "snapshot", atClusterTime}`, the time of its first read). MongoDB 5.0+;
    /// no transactions, no writes, and not with `causal_consistency: Some(true)`.
    pub snapshot: Option<bool>,
    /// `defaultTransactionOptions`: what [`ClientSession::start_transaction`] uses for the
    /// options it is not given.
    pub default_transaction_options: Option<TransactionOptions>,
    /// `snapshotTime`: the time a snapshot session reads at (another snapshot session's
    /// [`ClientSession::snapshot_time`]); `None`: the time of its first read. Only with
    /// `snapshot`.
    pub snapshot_time: Option<Timestamp>,
}

/// Options of a transaction ([`ClientSession::start_transaction_with`], or a session's
/// [`SessionOptions::default_transaction_options`]). Each option left `None` comes from the
/// session's default transaction options, else from the client.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TransactionOptions {
    /// The read concern of the transaction's first command (which fixes its snapshot).
    pub read_concern: Option<ReadConcern>,
    /// The write concern of `commitTransaction` and `abortTransaction` (never sent with the
    /// statements). Must be acknowledged.
    pub write_concern: Option<WriteConcern>,
    /// The read preference of the transaction's reads; it must be primary (reads fail
    /// otherwise, writes do not care).
    pub read_preference: Option<ReadPreference>,
    /// `maxCommitTimeMS`: sent as `commitTransaction`'s `maxTimeMS` (ignored under a
    /// `timeoutMS`, which replaces it).
    pub max_commit_time: Option<Duration>,
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
    /// The options of each transaction it starts (`None`: the session's defaults).
    pub transaction_options: Option<TransactionOptions>,
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
    /// The session's `defaultTransactionOptions`.
    default_transaction: TransactionOptions,
    /// The current (or last) transaction's options, resolved at its start (every option set
    /// that the call, the session defaults or the client sets).
    txn: TransactionOptions,
    /// Sharded transaction: the mongos of its first statement, where every later statement
    /// and the commit or abort go (unpinned on the transactions spec's rules).
    mongos: Option<ServerAddress>,
    /// A `commitTransaction` was sent for the current transaction: the next one is a retry
    /// (`w: majority`).
    commit_sent: bool,
    /// A snapshot session (no transactions).
    snapshot: bool,
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
        let snapshot = options.snapshot.unwrap_or(false);
        if snapshot && options.causal_consistency == Some(true) {
            return Err(state_error("causalConsistency and snapshot cannot both be set for a session"));
        }
        if options.snapshot_time.is_some() && !snapshot {
            return Err(state_error("snapshotTime can only be set for a snapshot session"));
        }
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
            timeout = selected.snapshot().description.logical_session_timeout_minutes();
            if timeout.is_none() {
                return Err(Error::InvalidOptions {
                    message: "the deployment does not support sessions".into(),
                });
            }
        }
        let mut server = self.inner.sessions.acquire(timeout);
        server.tracking = Some(Box::new(Tracking {
            causal: options.causal_consistency.unwrap_or(!snapshot),
            snapshot,
            snapshot_time: options.snapshot_time,
            ..Tracking::default()
        }));
        Ok(ClientSession {
            client: self.clone(),
            server: Some(server),
            timeout_minutes: timeout,
            state: TransactionState::None,
            default_timeout: timeout::inherit(self.inner.settings.timeout, options.default_timeout),
            callback_timeout: None,
            pin: None,
            aborting_on_drop: false,
            default_transaction: options.default_transaction_options.unwrap_or_default(),
            txn: TransactionOptions::default(),
            mongos: None,
            commit_sent: false,
            snapshot,
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

    /// Whether a connection (load-balanced transactions) or a mongos (sharded transactions)
    /// is pinned to the session.
    pub fn is_pinned(&self) -> bool {
        self.pin.is_some() || self.mongos.is_some()
    }

    /// The mongos a sharded transaction is pinned to (its first statement's), until the
    /// transactions spec's rules unpin it.
    pub fn pinned_server(&self) -> Option<&ServerAddress> {
        self.mongos.as_ref()
    }

    /// Whether a network error made the session's server session unusable: it is discarded
    /// when the session ends, never reused.
    pub fn is_dirty(&self) -> bool {
        self.server.as_ref().is_some_and(|s| s.dirty)
    }

    /// The session's timeoutMS for commit, abort and `with_transaction` (`None`: not set).
    pub fn default_timeout(&self) -> Option<Duration> {
        self.default_timeout
    }

    /// Starts a transaction with the session's default transaction options: the next
    /// command carries `startTransaction: true`.
    ///
    /// # Errors
    /// As [`start_transaction_with`](Self::start_transaction_with).
    pub fn start_transaction(&mut self) -> Result<()> {
        self.start_transaction_with(TransactionOptions::default())
    }

    /// Starts a transaction with `options` (each one not set comes from the session's
    /// default transaction options, else from the client).
    ///
    /// # Errors
    /// [`Error::InvalidOptions`] when a transaction is already in progress, the session is
    /// a snapshot session, or the write concern is unacknowledged.
    pub fn start_transaction_with(&mut self, options: TransactionOptions) -> Result<()> {
        if self.snapshot {
            return Err(state_error("Transactions are not supported in snapshot sessions"));
        }
        if matches!(self.state, TransactionState::Starting | TransactionState::InProgress) {
            return Err(state_error("Transaction already in progress"));
        }
        let defaults = &self.default_transaction;
        let settings = &self.client.inner.settings;
        let write_concern = options
            .write_concern
            .or_else(|| defaults.write_concern.clone())
            .or_else(|| settings.write_concern.clone());
        if write_concern.as_ref().is_some_and(|w| !w.is_acknowledged()) {
            return Err(state_error("transactions do not support unacknowledged write concerns"));
        }
        let txn = TransactionOptions {
            read_concern: options
                .read_concern
                .or_else(|| defaults.read_concern.clone())
                .or_else(|| settings.read_concern.clone()),
            write_concern,
            read_preference: options
                .read_preference
                .or_else(|| defaults.read_preference.clone())
                .or_else(|| Some((*settings.read_preference).clone())),
            max_commit_time: options.max_commit_time.or(defaults.max_commit_time),
        };
        if self.server.is_none() {
            return Err(state_error("the session has ended"));
        }
        self.unpin();
        self.txn = txn;
        self.commit_sent = false;
        let server = self.server.as_mut().ok_or_else(|| state_error("the session has ended"))?;
        if let Some(t) = server.tracking.as_deref_mut() {
            t.recovery_token = None;
        }
        server.next_txn_number();
        self.state = TransactionState::Starting;
        Ok(())
    }

    /// The session's `operationTime`: the latest a reply reported (causal consistency).
    pub fn operation_time(&self) -> Option<Timestamp> {
        self.tracking().and_then(|t| t.operation_time)
    }

    /// The session's `$clusterTime`: the latest a reply reported, or the user advanced to.
    pub fn cluster_time(&self) -> Option<&Document> {
        self.tracking().and_then(|t| t.cluster_time.as_ref())
    }

    /// A snapshot session's read time (`None` until its first read).
    pub fn snapshot_time(&self) -> Option<Timestamp> {
        self.tracking().and_then(|t| t.snapshot_time)
    }

    /// Advances the session's `operationTime` to `ts` (never backwards): its next read is
    /// causally after whatever another session observed at `ts`.
    pub fn advance_operation_time(&mut self, ts: Timestamp) {
        if let Some(t) = self.tracking_mut() {
            t.advance_operation_time(ts);
        }
    }

    /// Advances the session's `$clusterTime` to `cluster_time` (a `$clusterTime` document
    /// another session reported; never backwards).
    pub fn advance_cluster_time(&mut self, cluster_time: &Document) {
        if let Some(t) = self.tracking_mut() {
            t.advance_cluster_time(cluster_time);
        }
    }

    fn tracking(&self) -> Option<&Tracking> {
        self.server.as_ref().and_then(|s| s.tracking.as_deref())
    }

    fn tracking_mut(&mut self) -> Option<&mut Tracking> {
        self.server.as_mut().and_then(|s| s.tracking.as_deref_mut())
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
            TransactionState::None => return Err(state_error("No transaction started")),
            TransactionState::Aborted => {
                return Err(state_error("Cannot call commitTransaction after calling abortTransaction"))
            }
            TransactionState::Starting => {
                self.state = TransactionState::Committed;
                return Ok(());
            }
            // An empty transaction's commit sent nothing: neither does its repetition.
            TransactionState::Committed if !self.commit_sent => return Ok(()),
            TransactionState::InProgress | TransactionState::Committed => {}
        }
        // Committed before anything is sent: a commit whose future is dropped mid-exchange
        // leaves an outcome as unknown as `UnknownTransactionCommitResult` says: the commit may
        // be called again (and is sent again), abort is refused, and dropping the session
        // aborts nothing.
        self.state = TransactionState::Committed;
        let mut result = self.end_command(Outcome::Commit, timeout, deadline, true).await;
        if let Err(e) = &mut result {
            label_commit_error(e);
            if e.is_network_error() || e.has_label(RETRYABLE_WRITE_ERROR) {
                // The retry goes to another connection (and mongos), which is not pinned.
                self.unpin();
                result = self.end_command(Outcome::Commit, timeout, deadline, false).await;
                if let Err(e) = &mut result {
                    label_commit_error(e);
                }
            }
        }
        self.state = TransactionState::Committed;
        if let Err(e) = &result {
            if e.has_label(TRANSIENT_TRANSACTION_ERROR) || e.has_label(UNKNOWN_TRANSACTION_COMMIT_RESULT) {
                self.unpin();
            }
        }
        result.map(|_| ())
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
            TransactionState::None => return Err(state_error("No transaction started")),
            TransactionState::Committed => {
                return Err(state_error("Cannot call abortTransaction after calling commitTransaction"))
            }
            TransactionState::Aborted => return Err(state_error("Cannot call abortTransaction twice")),
            TransactionState::Starting => {
                self.state = TransactionState::Aborted;
                self.unpin();
                return Ok(());
            }
            TransactionState::InProgress => {}
        }
        let mut result = self.end_command(Outcome::Abort, timeout, deadline, true).await;
        if let Err(e) = &mut result {
            add_write_label(e);
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
            self.start_transaction_with(options.transaction_options.clone().unwrap_or_default())?;
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
        self.mongos = None;
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
        let csot = timeout.is_some();
        let mut write_concern = self.txn.write_concern.clone();
        if outcome == Outcome::Commit && self.commit_sent {
            // A repeated commit (the driver's retry or the user's): w: majority, and a
            // wtimeout so it cannot wait for ever.
            let wc = write_concern.get_or_insert_with(WriteConcern::default);
            wc.w = Some(Acknowledgment::Majority);
            wc.w_timeout.get_or_insert(Duration::from_secs(10));
        }
        let max_time_ms = match (outcome, csot) {
            (Outcome::Commit, false) => {
                self.txn.max_commit_time.map(|t| i64::try_from(t.as_millis()).unwrap_or(i64::MAX))
            }
            _ => None,
        };
        let recovery_token = self.tracking().and_then(|t| t.recovery_token.clone());
        let mut end = EndTransaction {
            outcome,
            write_concern: write_concern.and_then(|w| w.to_document(csot)),
            max_time_ms,
            recovery_token,
        };
        let op = end.prepare()?;
        if outcome == Outcome::Commit {
            self.commit_sent = true;
        }
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
            // back in the pool before this operation checks one out, and its mongos.
            if let Some(pin) = self.pin.take() {
                inner.selector.actor().send(Unpin { pin }).await?;
            }
            self.mongos = None;
            if matches!(self.state, TransactionState::Committed | TransactionState::Aborted) {
                self.state = TransactionState::None;
                if let Some(t) = self.tracking_mut() {
                    t.recovery_token = None;
                }
            }
        }
        if in_txn {
            statement(&mut op, &self.txn, self.state == TransactionState::Starting && !end, end)?;
        }
        let mongos = self.mongos.clone().filter(|_| in_txn);
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
            server: mongos.as_ref(),
            connection: pin_txn.then_some(&mut pinned),
            purpose: if pin_txn { CheckoutPurpose::Transaction } else { CheckoutPurpose::Other },
        };
        let result = inner.execute(op, limits, binding).await;
        if self.state == TransactionState::Starting && !starting {
            self.state = TransactionState::InProgress;
        }
        if in_txn && mongos.is_none() && !end {
            // A sharded transaction stays on the mongos of its first statement.
            let sharded = inner.topology.snapshot().description.topology_type() == TopologyType::Sharded;
            let address = match &result {
                Ok(out) => Some(&out.address),
                Err(e) => e.address(),
            };
            self.mongos = address.filter(|_| sharded).cloned();
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

/// Makes `op` a statement of a transaction: only commit and abort carry a write concern, the
/// transaction's read concern goes with the first statement only, and reads use the
/// transaction's read preference, which must be primary.
fn statement(op: &mut Op, txn: &TransactionOptions, first: bool, end: bool) -> Result<()> {
    let command = op.command.document_mut();
    if !end {
        command.remove("writeConcern");
    }
    match (txn.read_concern.as_ref().filter(|rc| !rc.is_server_default()), first) {
        (Some(rc), true) => {
            command.insert("readConcern", rc.to_document());
        }
        _ => {
            command.remove("readConcern");
        }
    }
    if let Criteria::Read(own) = &op.criteria {
        // The transaction's read preference replaces a read's (and its handle's); a generic
        // command keeps its own too, as the spec's operation-level read preference.
        let txn_primary = txn.read_preference.as_ref().is_none_or(|rp| *rp == ReadPreference::PRIMARY);
        let read = op.retry == super::operation::Retry::Read || op.read_concern;
        if !txn_primary || (!read && *own != ReadPreference::PRIMARY) {
            return Err(state_error("read preference in a transaction must be primary"));
        }
        op.criteria = Criteria::Read(ReadPreference::PRIMARY);
    }
    Ok(())
}

/// Labels a failed commit as the transactions spec says: `RetryableWriteError` for a
/// network error or a cleared pool (commit is a retryable write), and
/// `UnknownTransactionCommitResult` when the outcome is unknown (network, retryable, timeout,
/// `MaxTimeMSExpired` and write concern errors, except the two that say the write concern
/// can never be satisfied).
fn label_commit_error(e: &mut Error) {
    add_write_label(e);
    let root = match &*e {
        Error::Timeout { source: Some(source), .. } => source,
        e => e,
    };
    let write_concern_failed = root.server_error().is_some_and(|se| {
        let code = match &se.write_concern_error {
            Some(w) => Some(w.code),
            None => se.code.filter(|c| *c == 64),
        };
        code.is_some_and(|c| c != 100 && c != 79)
    });
    let unknown = root.is_network_error()
        || root.has_label(RETRYABLE_WRITE_ERROR)
        || root.code() == Some(protocol::reply::MAX_TIME_MS_EXPIRED)
        || write_concern_failed
        || matches!(root, Error::ServerSelection(_))
        || e.kind() == crate::ErrorKind::Timeout;
    if unknown && !root.has_label(TRANSIENT_TRANSACTION_ERROR) {
        label_root(e, UNKNOWN_TRANSACTION_COMMIT_RESULT);
    }
}

/// A network error or a cleared pool of commit or abort (retryable writes) gets
/// `RetryableWriteError`.
fn add_write_label(e: &mut Error) {
    let root_is = |e: &Error| {
        e.is_network_error()
            || matches!(e, Error::Connection { source, .. } if matches!(**source, pool::Error::PoolCleared { .. }))
    };
    let yes = match &*e {
        Error::Timeout { source: Some(source), .. } => root_is(source),
        e => root_is(e),
    };
    if yes {
        label_root(e, RETRYABLE_WRITE_ERROR);
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
/// The transactions spec: an operation inside a transaction cannot set its own read or write
/// concern (the transaction's apply; sending another would be ambiguous, and ignoring it would
/// be a silent surprise).
pub(crate) fn refuse_own_concerns(session: Option<&ClientSession>, read: bool, write: bool) -> Result<()> {
    if !session.is_some_and(ClientSession::in_transaction) {
        return Ok(());
    }
    let which = match (read, write) {
        (true, _) => "read",
        (false, true) => "write",
        (false, false) => return Ok(()),
    };
    Err(Error::InvalidOptions {
        message: format!("Cannot set {which} concern after starting a transaction."),
    })
}

/// Not an `async fn`: the async block holds `op` once (an `async fn` with a `mut` parameter
/// holds it twice), which is what a queued operation costs in memory.
#[allow(clippy::manual_async_fn)]
pub(crate) fn run<'a, O: Operation + 'a>(
    client: &'a Client,
    mut op: O,
    limits: Limits,
    session: Option<&'a mut ClientSession>,
) -> impl std::future::Future<Output = Result<O::Output>> + 'a {
    async move {
        if session.as_ref().is_some_and(|s| !std::sync::Arc::ptr_eq(&s.client.inner, &client.inner)) {
            // Its server session and cluster time belong to another client's deployment.
            return Err(Error::InvalidOptions {
                message: "the session was started by another client than the one running the operation"
                    .into(),
            });
        }
        let prepared = op.prepare()?;
        // Boxed: the fluent operations box their future (IntoFuture); with the executor's state
        // behind a pointer, that box is small and cheap to fill.
        let out = match session {
            Some(session) => Box::pin(session.execute(prepared, limits)).await?,
            None => Box::pin(client.inner.execute(prepared, limits, Binding::implicit())).await?,
        };
        op.handle_reply(out)
    }
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
                    default_transaction: TransactionOptions::default(),
                    txn: std::mem::take(&mut self.txn),
                    mongos: self.mongos.take(),
                    commit_sent: false,
                    snapshot: false,
                };
                let inner = self.client.inner.clone();
                inner.spawn_background(async move {
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
