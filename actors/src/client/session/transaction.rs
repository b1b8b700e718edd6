//! Transactions of an explicit session: start, commit, abort and `run_transaction` (the
//! transactions and convenient transactions specs), how a statement of a transaction is
//! sent, and how an operation runs with the session (its executor binding).
//!
//! Inside a transaction every command carries `txnNumber` and `autocommit: false`, the first
//! one `startTransaction: true`; the collection's write concern is only sent with
//! `commitTransaction` / `abortTransaction`. In load-balanced mode the transaction pins one
//! connection (checked out with [`CheckoutPurpose::Transaction`]) for all its commands: one
//! check-out and one check-in event, and two sessions never share it. It stays pinned after a
//! commit (which may be repeated) and is unpinned by an abort, a network or
//! `TransientTransactionError` error, the next transaction, the next operation outside a
//! transaction, or the end of the session.
//!
//! A cursor opened in a load-balanced transaction runs its `getMore`s and `killCursors` on the
//! transaction's connection; do not iterate it while the session runs another operation.
//!
//! CSOT: an operation with a session runs under its handle's timeoutMS (selection, check-out,
//! round trip, `maxTimeMS`); commit and abort under the call's, else the session's default
//! timeout ([`SessionOptions::default_timeout`], else the client's).
//! `StartTransaction::and_run` applies one deadline to its whole run.
//!
//! Outside a transaction an explicit session's operations are retried as implicit ones are; a
//! transaction's statements are not (commit and abort are retried once on a retryable error).
//!
//! # The transaction's state machine, and what a cut-off leaves
//!
//! Every future may be dropped at any await point. Each move below is recorded in the session
//! before the first byte of its command is written, so a cut-off never leaves the session
//! surer (or less sure) than the server.
//!
//! | state | call | moves to | when | cut off at an await, it leaves |
//! |---|---|---|---|---|
//! | `None`, `Committed`, `Aborted` | `start_transaction` | `Starting` | at once (no I/O) | (no await) |
//! | `Starting` | a statement | `InProgress` | just before the statement is written (the executor's attempt) | before: `Starting`, nothing sent; after: `InProgress` and *in doubt* (below) |
//! | `InProgress` | a statement | `InProgress` | | `InProgress`, in doubt |
//! | `Starting` | `commit` / `abort` | `Committed` / `Aborted` | at once, nothing sent | (no await) |
//! | `InProgress` | `commit` | `Committed` | before `commitTransaction` is written | `Committed`, outcome unknown: commit may be sent again; abort is refused; the session's next acknowledged command with a newer number settles it (the server aborts an open transaction on a newer number), else ending or dropping the session aborts it in the background |
//! | `InProgress` | `abort` | `Aborted` | when `abortTransaction` returns | `Aborted` at once, and the abort is finished in the background ([`cutoff`](super::cutoff)) |
//! | `Starting`, `InProgress` | `and_run` / `with_transaction` | its callback's, commit's or abort's | | its deadline off the session; `Starting`: `Aborted`; `InProgress`: aborted in the background; a commit on its way: as a cut-off commit |
//! | `InProgress` | drop of the session | | | `abortTransaction` in the background, on the same server session |
//!
//! *In doubt*: a statement cut off may still reach the server after whatever the session sends
//! next, and start the transaction there after it was aborted. Such a transaction is *fenced*
//! when it ends without a commit: the next transaction number starts a transaction (a read of
//! nothing) that is aborted at once, so the late statement is refused (`TransactionTooOld`) or
//! its transaction aborted by the newer one, as mongod does; the session goes on with the
//! number after the fence's. (A statement that failed on the network is the specs' case: they
//! expect no fence's commands, and there is none.)
//!
//! Outside a transaction, a cut-off write has taken its `txnNumber`: the session's next write
//! takes a newer one, so the server refuses the cut-off one if it arrives after it.

use crate::cluster::selection_criteria::SelectionCriteria;
use std::time::Duration;

use bson::Document;
use pool::cmap::CheckoutPurpose;
use protocol::sdam::TopologyType;
use selection::ReadPreference;
use tokio::time::Instant;

use super::super::concern::{Acknowledgment, WriteConcern};
use super::super::executor::operation::{Op, OpOutput, Operation, Retry};
use super::super::executor::retry::{label_commit_error, label_end_transaction_error, label_root};
use super::super::executor::telemetry::Watch;
use super::super::executor::{Binding, ExplicitSession, SessionUse};
use super::super::inner::ClientInner;
use super::super::ops::end_transaction::{EndTransaction, Outcome};
use super::super::timeout::{self, Limits};

use super::cutoff::{spawn_abort, Cutoff};
#[cfg(doc)]
use super::options::SessionOptions;
use super::options::{EndTransactionOptions, TransactionOptions};
use super::{state_error, CallbackTimeout, ClientSession, TransactionState};
use crate::cluster::selection::Criteria;
use crate::error::{Error, Result};
use crate::error::{RETRYABLE_WRITE_ERROR, TRANSIENT_TRANSACTION_ERROR, UNKNOWN_TRANSACTION_COMMIT_RESULT};

/// How long [`ClientSession::with_transaction`] retries without a timeoutMS (convenient
/// transactions API).
const WITH_TRANSACTION_LIMIT: Duration = Duration::from_secs(120);

impl ClientSession {
    /// Starts a transaction with `options` (each one not set comes from the session's
    /// default transaction options, else from the client): the next command carries
    /// `startTransaction: true`. Behind
    /// [`ClientSession::start_transaction`](crate::ClientSession::start_transaction).
    ///
    /// # Errors
    /// [`ErrorKind::Transaction`](crate::error::ErrorKind::Transaction) when a transaction is
    /// already in progress, the session is a snapshot session, or the write concern is
    /// unacknowledged.
    pub(crate) fn begin_transaction(&mut self, options: TransactionOptions) -> Result<()> {
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
            selection_criteria: options
                .selection_criteria
                .or_else(|| defaults.selection_criteria.clone())
                .or_else(|| Some((*settings.selection_criteria).clone())),
            max_commit_time: options.max_commit_time.or(defaults.max_commit_time),
        };
        if self.server.is_none() {
            return Err(state_error("the session has ended"));
        }
        if self.in_doubt {
            // The last transaction's statement may still be on its way: its number is fenced
            // before this one takes the next.
            self.fence_in_background();
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
        self.txn_span = self.client.inner.tracing.transaction();
        Ok(())
    }

    /// Commits the transaction (nothing is sent when no command ran in it), under the
    /// session's default timeout. Retried once on a retryable error. In load-balanced mode
    /// the connection stays pinned (a commit may be repeated) unless the commit fails with a
    /// network or transient error.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidArgument`](crate::error::ErrorKind::InvalidArgument) without a transaction; the server's or the network's error,
    /// labelled `UnknownTransactionCommitResult` when the outcome is unknown;
    /// [`ErrorKind::Timeout`](crate::error::ErrorKind::Timeout) when the timeout expires.
    pub fn commit_transaction(&mut self) -> crate::client::action::commit_transaction::CommitTransaction<'_> {
        crate::client::action::commit_transaction::CommitTransaction::new(self)
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
        let result = self.commit_once(timeout, deadline).await;
        self.txn_span.end();
        result
    }

    async fn commit_once(&mut self, timeout: Option<Duration>, deadline: Option<Instant>) -> Result<()> {
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
        self.unsettled_commit = self.server.as_ref().map(|s| s.txn_number);
        let mut result = self.end_command(Outcome::Commit, timeout, deadline, true).await;
        if let Err(e) = &mut result {
            label_commit_error(e);
            if e.is_network_error() || e.contains_label(RETRYABLE_WRITE_ERROR) {
                // The retry goes to another connection (and mongos), which is not pinned.
                self.unpin();
                result = self.end_command(Outcome::Commit, timeout, deadline, false).await;
                if let Err(e) = &mut result {
                    label_commit_error(e);
                }
            }
        }
        self.state = TransactionState::Committed;
        let unknown = matches!(&result, Err(e) if e.contains_label(UNKNOWN_TRANSACTION_COMMIT_RESULT));
        if !unknown {
            self.unsettled_commit = None;
        }
        match &result {
            // Committed: a late statement finds the transaction committed.
            Ok(_) => self.in_doubt = false,
            // Refused for sure (no such transaction, ...): a late statement could still start it.
            Err(_) if self.in_doubt && !unknown => self.fence_in_background(),
            // Unknown: the commit may be sent again; ending the session settles it.
            Err(_) => {}
        }
        if let Err(e) = &result {
            if e.contains_label(TRANSIENT_TRANSACTION_ERROR)
                || e.contains_label(UNKNOWN_TRANSACTION_COMMIT_RESULT)
            {
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
    /// [`ErrorKind::InvalidArgument`](crate::error::ErrorKind::InvalidArgument) without a transaction in progress.
    pub fn abort_transaction(&mut self) -> crate::client::action::abort_transaction::AbortTransaction<'_> {
        crate::client::action::abort_transaction::AbortTransaction::new(self)
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
        let result = self.abort_once(timeout, deadline).await;
        self.txn_span.end();
        result
    }

    async fn abort_once(&mut self, timeout: Option<Duration>, deadline: Option<Instant>) -> Result<()> {
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
        self.send_abort(timeout, deadline).await;
        if self.in_doubt {
            self.fence_in_background();
        }
        Ok(())
    }

    /// Sends `abortTransaction` for the transaction in progress (once more on a retryable
    /// error) and marks it aborted, ignoring the command's errors as the transactions spec
    /// says.
    pub(crate) async fn send_abort(&mut self, timeout: Option<Duration>, deadline: Option<Instant>) {
        // Cut off before it ends, the abort goes on in the background: the transaction is
        // never left open on the server nor `InProgress` here.
        let mut session = Cutoff::arm(self);
        let mut result = session.end_command(Outcome::Abort, timeout, deadline, true).await;
        if let Err(e) = &mut result {
            label_end_transaction_error(e);
            if e.is_network_error() || e.contains_label(RETRYABLE_WRITE_ERROR) {
                session.unpin();
                result = session.end_command(Outcome::Abort, timeout, deadline, false).await;
            }
        }
        if let Err(e) = result {
            tracing::debug!(error = %e, "abortTransaction failed (ignored)");
        }
        session.unpin();
        session.state = TransactionState::Aborted;
        session.disarm();
    }

    /// The start of a convenient transaction run (`StartTransaction::and_run`): its timeout
    /// (`timeout`, else the session's default) and deadline.
    pub(crate) fn transaction_run(&self, timeout: Option<Duration>) -> TransactionRun {
        let timeout = timeout::inherit(self.default_timeout, timeout);
        TransactionRun { timeout, deadline: timeout::deadline(timeout), started: Instant::now() }
    }

    /// Starts one attempt of a convenient run: the callback's operations with this session
    /// share the run's deadline.
    pub(crate) fn begin_attempt(&mut self, run: &TransactionRun, options: &TransactionOptions) -> Result<()> {
        self.begin_transaction(options.clone())?;
        self.callback_timeout =
            run.timeout.map(|timeout| CallbackTimeout { timeout: Some(timeout), deadline: run.deadline });
        Ok(())
    }

    /// Ends one attempt with the callback's result (the convenient transactions spec): the
    /// transaction is aborted when the callback failed, committed otherwise (the commit
    /// retried on `UnknownTransactionCommitResult`), and the whole transaction retried on a
    /// `TransientTransactionError` while time is left.
    pub(crate) async fn end_attempt<R>(&mut self, run: &TransactionRun, ret: Result<R>) -> Attempt<R> {
        self.callback_timeout = None;
        let ret = match ret {
            Ok(r) => r,
            Err(e) => {
                if self.in_transaction() {
                    // A fresh timeout: the transaction must not stay open on the server.
                    let _ = self.abort_until(run.timeout, timeout::deadline(run.timeout)).await;
                }
                return run.retry_if(e.contains_label(TRANSIENT_TRANSACTION_ERROR), e);
            }
        };
        if !self.in_transaction() {
            // The callback committed or aborted itself.
            return Attempt::Done(Ok(ret));
        }
        loop {
            let Err(e) = self.commit_until(run.timeout, run.deadline).await else {
                return Attempt::Done(Ok(ret));
            };
            let max_time_expired = e.code() == Some(protocol::reply::MAX_TIME_MS_EXPIRED);
            if e.contains_label(UNKNOWN_TRANSACTION_COMMIT_RESULT) && !max_time_expired {
                if run.time_left() {
                    continue;
                }
                return Attempt::Done(Err(run.out_of_time(e)));
            }
            return run.retry_if(e.contains_label(TRANSIENT_TRANSACTION_ERROR), e);
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
        let watch = Watch::start(&self.client.inner);
        let mut op = end.prepare()?;
        let watched = watch.begin(&self.client.inner, &mut op, Some(&self.txn_span));
        if outcome == Outcome::Commit {
            self.commit_sent = true;
        }
        let out = self.run(op, Limits::until(timeout, deadline), may_pin).await;
        let address = out.as_ref().ok().map(|o| o.address.clone());
        let result = out.and_then(|out| end.handle_reply(out));
        watched.end(&self.client.inner, address, &result);
        result
    }

    /// Runs `op` with this session under `limits` (the operation's handle's timeoutMS; inside
    /// `with_transaction`, the transaction's deadline instead).
    pub(crate) async fn execute(&mut self, op: Op, limits: Limits) -> Result<OpOutput> {
        let limits = match self.callback_timeout {
            Some(c) => {
                if limits.timeout != self.client.inner.settings.timeout {
                    return Err(Error::invalid_argument(
                        "timeoutMS cannot be set for an operation inside StartTransaction::and_run",
                    ));
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
    pub(super) async fn run(&mut self, mut op: Op, limits: Limits, may_pin: bool) -> Result<OpOutput> {
        let inner = self.client.inner.clone();
        inner.check_open()?;
        let end = matches!(op.name.as_ref(), "commitTransaction" | "abortTransaction");
        let in_txn = self.in_transaction() || end;
        if !in_txn {
            // An operation outside a transaction releases the last transaction's connection,
            // back in the pool before this operation checks one out, and its mongos.
            if let Some(pin) = self.pin.take() {
                inner.pins().release(pin).await?;
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
            Some(pin) if pin_txn => inner.pins().take(pin).await?,
            _ => None,
        };
        // Cut off from here on, a statement may still reach the server later: the
        // transaction is in doubt until fenced.
        let doubt = self.in_doubt;
        if in_txn && !end {
            self.in_doubt = true;
            if self.state == TransactionState::Starting {
                self.txn_db = Some(op.db.clone());
            }
        }
        let server = self.server.as_mut().ok_or_else(|| state_error("the session has ended"))?;
        let binding = Binding {
            session: if in_txn {
                SessionUse::Transaction { session: server, state: &mut self.state }
            } else {
                SessionUse::Given(server)
            },
            server: mongos.as_ref(),
            connection: pin_txn.then_some(&mut pinned),
            purpose: if pin_txn { CheckoutPurpose::Transaction } else { CheckoutPurpose::Other },
        };
        let result = inner.execute(op, limits, binding).await;
        if let (Some(number), Some(server), Ok(_)) = (self.unsettled_commit, self.server.as_ref(), &result) {
            // The server acknowledged a newer number: it holds the unknown commit's
            // transaction no longer (a newer number aborts it).
            if server.txn_number > number {
                self.unsettled_commit = None;
            }
        }
        if in_txn && !end {
            // It returned, so it is no longer in doubt. (A network error is the specs' case,
            // with the commands they expect: no fence.)
            self.in_doubt = doubt;
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
            let pins = inner.pins();
            let pin = *self.pin.get_or_insert_with(|| pins.new_id());
            pins.keep(pin, connection).await?;
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
    let own_primary = match &op.criteria {
        Criteria::Read(own) => Some(*own == ReadPreference::PRIMARY),
        Criteria::Predicate(_) => Some(false),
        Criteria::Write => None,
    };
    if let Some(own_primary) = own_primary {
        // The transaction's read preference replaces a read's (and its handle's); a generic
        // command keeps its own too, as the spec's operation-level read preference.
        let txn_primary = txn.selection_criteria.as_ref().is_none_or(SelectionCriteria::is_read_pref_primary);
        let read = op.retry == Retry::Read || op.read_concern;
        if !txn_primary || (!read && !own_primary) {
            return Err(state_error("read preference in a transaction must be primary"));
        }
        op.criteria = Criteria::Read(ReadPreference::PRIMARY);
    }
    Ok(())
}

/// An error that says the transaction may be retried, or that its connection is not usable
/// for it any more (also under a timeout that wraps it).
fn releases_pin(e: &Error) -> bool {
    let network = e.timeout_source().unwrap_or(e).is_network_error();
    network || e.contains_label(TRANSIENT_TRANSACTION_ERROR)
}

impl ExplicitSession for ClientSession {
    fn started_by(&self, inner: &std::sync::Arc<ClientInner>) -> bool {
        std::sync::Arc::ptr_eq(&self.client.inner, inner)
    }

    fn transaction_span(&self) -> Option<&crate::observe::otel::TransactionSpan> {
        self.in_transaction().then_some(&self.txn_span)
    }

    fn execute(
        &mut self,
        op: Op,
        limits: Limits,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<OpOutput>> + Send + '_>> {
        Box::pin(ClientSession::execute(self, op, limits))
    }
}

impl Drop for ClientSession {
    fn drop(&mut self) {
        if !self.aborting_on_drop && self.state != TransactionState::InProgress {
            self.abort_unsettled_commit();
        }
        if let Some(mut s) = self.server.take() {
            if self.open_on_server() && !self.aborting_on_drop {
                // Best effort, on the transaction's pinned connection, with this server
                // session (back to the pool after the abort): the server aborts the
                // transaction when the session expires otherwise.
                self.state = TransactionState::Aborted;
                spawn_abort(self.detached(s));
                return;
            }
            if self.state == TransactionState::InProgress {
                // The abort never ran: the server may still hold the transaction.
                s.dirty = true;
            }
            self.client.inner.sessions.release(s, self.timeout_minutes);
        }
        self.unpin();
    }
}

/// A convenient transaction run's limits (`StartTransaction::and_run`).
pub(crate) struct TransactionRun {
    timeout: Option<Duration>,
    deadline: Option<Instant>,
    started: Instant,
}

/// What follows an attempt of a convenient transaction run.
pub(crate) enum Attempt<R> {
    /// Run the whole transaction again.
    Retry,
    /// The run's outcome.
    Done(Result<R>),
}

impl TransactionRun {
    /// Whether another attempt may start: before the deadline, or within 120 s without a
    /// timeout.
    fn time_left(&self) -> bool {
        match (self.timeout, self.deadline) {
            (Some(_), Some(d)) => Instant::now() < d,
            (Some(_), None) => true,
            _ => self.started.elapsed() < WITH_TRANSACTION_LIMIT,
        }
    }

    /// Under a timeout, the last error becomes the timeout's cause.
    fn out_of_time(&self, e: Error) -> Error {
        match self.timeout {
            Some(_) if !e.is_timeout() => Error::timeout(
                format!("timeoutMS expired while retrying the transaction after: {e}"),
                Some(e),
            ),
            _ => e,
        }
    }

    /// Retry when `transient` and time is left; otherwise `e`.
    fn retry_if<R>(&self, transient: bool, e: Error) -> Attempt<R> {
        match (transient, self.time_left()) {
            (true, true) => Attempt::Retry,
            (true, false) => Attempt::Done(Err(self.out_of_time(e))),
            (false, _) => Attempt::Done(Err(e)),
        }
    }
}
