//! Explicit sessions: a [`ClientSession`] owns a server session until it ends, with at most
//! one transaction at a time ([`transaction`]).
//!
//! [`Client::start_session`] takes a server session from the pool; the [`ClientSession`] gives
//! it back when dropped. Every operation takes it with `.session(&mut session)`
//! (`coll.insert_one(doc).session(&mut session).await`), and then sends its `lsid`; with or
//! without one, operations run through the client's one executor.
//!
//! | file | what it holds |
//! |---|---|
//! | `mod.rs` | [`ClientSession`], its state and times, [`Client::start_session`] |
//! | [`transaction`] | start, commit, abort, `run_transaction` (behind `and_run`), a transaction's statements |
//! | [`cutoff`] | what a cut-off call leaves: the guard that undoes it and the background abort |
//! | [`options`] | [`SessionOptions`], [`TransactionOptions`] and the end options |
//! | [`pool`] | server sessions and their pool (implicit sessions) |
//! | [`tracking`] | causal consistency, snapshot time, `$clusterTime`, recovery token |

pub mod cluster_time;
pub(crate) mod cutoff;
pub(crate) mod options;
pub(crate) mod own_concerns;
pub(crate) mod pool;
pub(crate) mod tracking;
pub(crate) mod transaction;

use std::time::Duration;

use bson::{Document, Timestamp};
use protocol::ServerAddress;
use tokio::time::Instant;

pub use self::cluster_time::ClusterTime;
use self::options::{SessionOptions, TransactionOptions};
use self::pool::ServerSession;
use self::tracking::Tracking;
use super::inner::Client;
use super::timeout;
use crate::cluster::selection::{Criteria, PinId, SelectionRequest};
use crate::error::{Error, Result};

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

impl TransactionState {
    /// A statement is about to be written: a starting transaction is in progress from now on
    /// (whatever becomes of the statement, the server may have started it). Returns whether
    /// the statement starts the transaction (`startTransaction: true`).
    pub(crate) fn mark_sent(&mut self) -> bool {
        let starting = *self == TransactionState::Starting;
        if starting {
            *self = TransactionState::InProgress;
        }
        starting
    }
}

/// The timeout a running `with_transaction` applies to its callback's operations.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CallbackTimeout {
    pub timeout: Option<Duration>,
    pub deadline: Option<Instant>,
}

/// An explicit session: a server session owned until drop, with at most one transaction at
/// a time. Not for concurrent use (operations take `&mut`).
pub struct ClientSession {
    client: Client,
    server: Option<ServerSession>,
    /// The server session's id, kept here so it is there for as long as the session is.
    lsid: Document,
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
    /// The number of a transaction whose `commitTransaction` has an unknown outcome (cut off,
    /// or failed with `UnknownTransactionCommitResult`), until a later command with a newer
    /// number is acknowledged (the server then aborted it, if it still held it). Ending or
    /// dropping the session before that aborts it in the background (refused harmlessly if
    /// the commit landed).
    unsettled_commit: Option<i64>,
    /// A statement of the current transaction was cut off: it may still reach the server,
    /// after whatever the session sends next, and start the transaction there. Until the
    /// session's number is fenced (see `cutoff.rs`), ending the transaction is not enough to
    /// be sure the server holds none.
    in_doubt: bool,
    /// The database of the transaction's first statement (where a fence reads).
    txn_db: Option<String>,
    /// A snapshot session (no transactions).
    snapshot: bool,
    /// The current (or last) transaction's OpenTelemetry span, ended by its commit or abort.
    txn_span: crate::observe::otel::TransactionSpan,
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
    /// Starts an explicit session with `options` (no I/O in load-balanced mode; otherwise
    /// waits in server selection, limited by the client's timeoutMS, until the deployment's
    /// session support is known). Behind [`Client::start_session`].
    pub(crate) async fn begin_session(&self, options: SessionOptions) -> Result<ClientSession> {
        self.inner.check_open()?;
        let snapshot = options.snapshot.unwrap_or(false);
        if snapshot && options.causal_consistency == Some(true) {
            return Err(Error::invalid_argument(
                "causalConsistency and snapshot cannot both be set for a session",
            ));
        }
        if options.snapshot_time.is_some() && !snapshot {
            return Err(Error::invalid_argument("snapshotTime can only be set for a snapshot session"));
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
                return Err(crate::error::ErrorKind::SessionsNotSupported.into());
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
            lsid: server.lsid.clone(),
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
            unsettled_commit: None,
            in_doubt: false,
            txn_db: None,
            txn_span: Default::default(),
            snapshot,
        })
    }
}

/// A session or transaction used out of order ([`ErrorKind::Transaction`](crate::error::ErrorKind::Transaction)).
pub(crate) fn state_error(message: &str) -> Error {
    Error::transaction(message)
}

impl ClientSession {
    /// The client that started the session.
    pub fn client(&self) -> Client {
        self.client.clone()
    }

    /// The session id (`{id: UUID}`).
    pub fn id(&self) -> &Document {
        &self.lsid
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

    /// The session's `operationTime`: the latest a reply reported (causal consistency).
    pub fn operation_time(&self) -> Option<Timestamp> {
        self.tracking().and_then(|t| t.operation_time)
    }

    /// The session's `$clusterTime`: the latest a reply reported, or the user advanced to.
    pub fn cluster_time(&self) -> Option<&ClusterTime> {
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

    /// Advances the session's `$clusterTime` to `to` (what another session reported; never
    /// backwards).
    pub fn advance_cluster_time(&mut self, to: &ClusterTime) {
        if let Some(t) = self.tracking_mut() {
            t.advance_cluster_time(to.as_document());
        }
    }

    fn tracking(&self) -> Option<&Tracking> {
        self.server.as_ref().and_then(|s| s.tracking.as_deref())
    }

    fn tracking_mut(&mut self) -> Option<&mut Tracking> {
        self.server.as_mut().and_then(|s| s.tracking.as_deref_mut())
    }

    /// Ends the session: aborts a transaction in progress, gives a pinned connection back to
    /// its pool before returning, and returns the server session to the pool. Dropping the
    /// session does the same in the background.
    pub async fn end_session(mut self) {
        if self.state == TransactionState::InProgress {
            let _ = self.abort_transaction().await;
        } else if self.open_on_server() {
            // Aborted in doubt: the drop fences it in the background.
            return;
        }
        if let Some(pin) = self.pin.take() {
            let _ = self.client.inner.pins().release(pin).await;
        }
    }

    /// The pinned connection of a load-balanced transaction in progress (its cursors run
    /// their `getMore`s on it).
    pub(crate) fn transaction_pin(&self) -> Option<PinId> {
        self.pin.filter(|_| self.in_transaction())
    }

    /// Whether the server may hold this session's transaction open: in progress, or aborted
    /// while a statement of it may still be on its way.
    pub(crate) fn open_on_server(&self) -> bool {
        self.state == TransactionState::InProgress
            || (self.state == TransactionState::Aborted && self.in_doubt)
    }

    /// Whether a transaction is starting or in progress.
    pub(crate) fn in_transaction(&self) -> bool {
        matches!(self.state, TransactionState::Starting | TransactionState::InProgress)
    }

    fn unpin(&mut self) {
        self.mongos = None;
        if let Some(pin) = self.pin.take() {
            self.client.inner.pins().release_later(pin);
        }
    }
}
