//! What a cut-off leaves on a session: every future may be dropped at any await point (a
//! `tokio::time::timeout`, a `select!`, an actix-web handler whose client went away), and the
//! session must then be as sure as the server is.
//!
//! [`Cutoff`] guards a call that changes the session across awaits (`abortTransaction`,
//! `StartTransaction::and_run`): dropped while armed, it undoes what the call set on the
//! session and ends what it left on the server, in the background under a deadline
//! ([`BACKGROUND_TIMEOUT`](super::super::inner::BACKGROUND_TIMEOUT)). The state moves a
//! statement, a commit or an abort makes are recorded before their first byte is written
//! (see the table in [`transaction`](super::transaction)).

use bson::doc;
use protocol::reply::NO_SUCH_TRANSACTION;
use selection::ReadPreference;

use super::super::executor::operation::Operation;
use super::super::ops::run_command::RunCommand;
use super::super::timeout::{self, Limits};
use super::options::TransactionOptions;
use super::pool::ServerSession;
use super::{ClientSession, TransactionState};
use crate::cluster::selection::Criteria;

/// A session borrowed by a call that must not leave it half-changed: dereferences to the
/// session; [`disarm`](Self::disarm) when the call ends normally.
pub(crate) struct Cutoff<'s> {
    session: &'s mut ClientSession,
    armed: bool,
}

impl<'s> Cutoff<'s> {
    /// Guards `session` until [`disarm`](Self::disarm)ed.
    pub(crate) fn arm(session: &'s mut ClientSession) -> Self {
        Cutoff { session, armed: true }
    }

    /// The call ended normally: dropping the guard changes nothing.
    pub(crate) fn disarm(mut self) {
        self.armed = false;
    }
}

impl std::ops::Deref for Cutoff<'_> {
    type Target = ClientSession;

    fn deref(&self) -> &ClientSession {
        self.session
    }
}

impl std::ops::DerefMut for Cutoff<'_> {
    fn deref_mut(&mut self) -> &mut ClientSession {
        self.session
    }
}

impl Drop for Cutoff<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.session.cut_off();
        }
    }
}

impl ClientSession {
    /// A call on the session was cut off: the callback's deadline goes, and a transaction
    /// still starting or in progress is aborted (in the background when the server may hold
    /// it). A commit in flight leaves the transaction `Committed` with its outcome unknown,
    /// as after `UnknownTransactionCommitResult`: the commit may be sent again.
    fn cut_off(&mut self) {
        self.callback_timeout = None;
        match self.state {
            TransactionState::Starting => {
                self.state = TransactionState::Aborted;
                self.unpin();
            }
            TransactionState::InProgress => self.abort_in_background(),
            TransactionState::None | TransactionState::Committed | TransactionState::Aborted => {}
        }
    }

    /// Sends `abortTransaction` for the transaction in progress in the background (a copy
    /// of the session with the same id and transaction number) and marks it `Aborted` here;
    /// a transaction in doubt is fenced after. A background abort that is itself cut off
    /// only leaves its server session dirty.
    pub(crate) fn abort_in_background(&mut self) {
        self.state = TransactionState::Aborted;
        if self.aborting_on_drop {
            if let Some(s) = self.server.as_mut() {
                s.dirty = true;
            }
            return;
        }
        let Some(copy) = self.lent_copy() else { return };
        spawn_abort(copy);
    }

    /// Fences the current transaction's number in the background (see [`fence`](Self::fence)):
    /// this session goes on with the number after the fence's.
    pub(crate) fn fence_in_background(&mut self) {
        let Some(mut copy) = self.lent_copy() else { return };
        let inner = copy.client.inner.clone();
        inner.spawn_background(async move { copy.fence().await });
    }

    /// A commit of unknown outcome that nothing newer settled: aborted in the background
    /// (refused harmlessly if the commit landed), from a copy of the session's id with that
    /// transaction's number.
    pub(crate) fn abort_unsettled_commit(&mut self) {
        let Some(number) = self.unsettled_commit.take() else { return };
        let Some(server) = self.server.as_ref() else { return };
        let mut lent = server.lend();
        lent.txn_number = number;
        lent.tracking = server.tracking.clone();
        let copy = self.detached(lent);
        self.in_doubt = false;
        spawn_abort(copy);
    }

    /// A copy of this session for background work on its current transaction: the same id
    /// and transaction number, and the doubt (this session is rid of it). The transaction's
    /// pinned connection and mongos go with it, and this session skips the number a fence
    /// takes.
    fn lent_copy(&mut self) -> Option<ClientSession> {
        let server = self.server.as_mut()?;
        let mut lent = server.lend();
        lent.tracking = server.tracking.clone();
        if self.in_doubt {
            server.next_txn_number();
        }
        let copy = self.detached(lent);
        self.in_doubt = false;
        Some(copy)
    }

    /// A copy of the session that aborts its transaction in progress on `server` (this
    /// session's, or a copy of its id), taking the transaction's pinned connection and mongos.
    pub(crate) fn detached(&mut self, server: ServerSession) -> ClientSession {
        ClientSession {
            client: self.client.clone(),
            lsid: self.lsid.clone(),
            server: Some(server),
            timeout_minutes: self.timeout_minutes,
            state: TransactionState::InProgress,
            default_timeout: self.default_timeout,
            callback_timeout: None,
            pin: self.pin.take(),
            aborting_on_drop: true,
            default_transaction: TransactionOptions::default(),
            txn: self.txn.clone(),
            mongos: self.mongos.take(),
            commit_sent: false,
            unsettled_commit: None,
            in_doubt: self.in_doubt,
            txn_db: self.txn_db.clone(),
            snapshot: false,
            txn_span: std::mem::take(&mut self.txn_span),
        }
    }

    /// Fences the session's transaction number: the next number starts a transaction (a read
    /// of nothing) that is aborted at once. A statement of this transaction still on its way
    /// is then refused (`TransactionTooOld`), and a transaction it already started is
    /// aborted by the newer one, as mongod does.
    async fn fence(&mut self) {
        let Some(db) = self.txn_db.clone() else { return };
        let Some(server) = self.server.as_mut() else { return };
        server.next_txn_number();
        self.in_doubt = false;
        self.unpin();
        self.state = TransactionState::Starting;
        let (timeout, deadline) = (self.default_timeout, timeout::deadline(self.default_timeout));
        for _ in 0..FENCE_ATTEMPTS {
            self.state = TransactionState::Starting;
            let mut read = RunCommand {
                db: db.clone(),
                command: doc! {"find": FENCE_COLLECTION, "filter": {}, "limit": 1, "singleBatch": true},
                criteria: Criteria::Read(ReadPreference::PRIMARY),
            };
            let Ok(op) = read.prepare() else { break };
            match self.run(op, Limits::until(timeout, deadline), false).await {
                Ok(_) => break,
                // The number is the server's already (an earlier attempt of the fence got there).
                Err(e) if matches!(e.code(), Some(TRANSACTION_TOO_OLD | NO_SUCH_TRANSACTION)) => break,
                Err(e) => {
                    tracing::debug!(error = %e, "the fence's read failed (tried again; the transaction may stay open until it expires)");
                }
            }
        }
        if self.state == TransactionState::InProgress {
            self.send_abort(timeout, deadline).await;
        }
        self.state = TransactionState::Aborted;
    }
}

/// The collection a fence reads, in the transaction's database (it need not exist).
const FENCE_COLLECTION: &str = "mongo_actors_fence";
/// How many times a fence's read is sent while it fails (a transient error, a fail point).
const FENCE_ATTEMPTS: usize = 3;
/// `TransactionTooOld`: the session has used a newer number.
const TRANSACTION_TOO_OLD: i32 = 225;

/// Aborts `copy`'s transaction in the background, then fences its number when a statement of
/// it may still be on its way; all under the client's background deadline.
pub(crate) fn spawn_abort(mut copy: ClientSession) {
    let inner = copy.client.inner.clone();
    let timeout = copy.default_timeout;
    inner.spawn_background(async move {
        copy.send_abort(timeout, timeout::deadline(timeout)).await;
        if copy.in_doubt {
            copy.fence().await;
        }
    });
}
