//! Explicit sessions and transactions (minimal).
//!
//! [`Client::start_session`] takes a server session from the pool; the [`ClientSession`] gives
//! it back when dropped. Operations take the session through their `*_with_session` variants
//! ([`Collection::insert_one_with_session`], [`Collection::find_with_session`],
//! [`Database::run_command_with_session`]), which send its `lsid`.
//!
//! Inside a transaction ([`ClientSession::start_transaction`]) every command carries
//! `txnNumber` and `autocommit: false`, the first one `startTransaction: true`; the
//! collection's write concern is only sent with `commitTransaction` / `abortTransaction`.
//! In load-balanced mode the transaction pins one connection (checked out with
//! [`CheckoutPurpose::Transaction`]) for all its commands: one check-out and one check-in
//! event, and two sessions never share it. It is unpinned when the commit or abort completes,
//! when a new transaction starts, or on a `TransientTransactionError`.
//!
//! A cursor opened in a load-balanced transaction runs its `getMore`s on the transaction's
//! connection and sends no `killCursors` (the server closes a transaction's cursors when it
//! ends); do not iterate it while the session runs another operation.
//!
//! Limitations: operations with an explicit session are not retried (commit is retried once
//! on a retryable error).

use bson::{doc, Document};
use pool::cmap::{CheckoutPurpose, PooledConnection};
use pool::connection::Connection;
use protocol::ServerAddress;

use super::collection::{Collection, FindOptions, InsertOneResult};
use super::cursor::Cursor;
use super::database::Database;
use super::operation::{cursor_id, next_operation_id, Op, OpOutput, Retry};
use super::session::ServerSession;
use super::Client;
use crate::error::RETRYABLE_WRITE_ERROR;
use crate::selection_actor::{Criteria, PinConnection, PinId, SelectionRequest, TakePinned, Unpin};
use crate::{Error, Result};

/// The label of errors after which the whole transaction may be retried.
pub const TRANSIENT_TRANSACTION_ERROR: &str = "TransientTransactionError";
/// The label of commit errors whose outcome is unknown.
pub const UNKNOWN_TRANSACTION_COMMIT_RESULT: &str = "UnknownTransactionCommitResult";

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

/// An explicit session: a server session owned until drop, with at most one transaction at
/// a time. Not for concurrent use (operations take `&mut`).
pub struct ClientSession {
    client: Client,
    server: Option<ServerSession>,
    timeout_minutes: Option<i64>,
    state: TransactionState,
    /// Load-balanced transaction: its connection, pinned in the selection actor.
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
        self.inner.check_open()?;
        let mut timeout = self.inner.topology.snapshot().description.logical_session_timeout_minutes();
        if timeout.is_none() && !self.inner.settings.load_balanced {
            let request = SelectionRequest::new(
                Criteria::Read(selection::ReadPreference::PRIMARY_PREFERRED),
                "startSession",
            );
            let selected = self.inner.selector.select(request).await?;
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
            pin: None,
            aborting_on_drop: false,
        })
    }
}

fn state_error(message: &str) -> Error {
    Error::InvalidOptions { message: message.to_string() }
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

    /// Commits the transaction (nothing is sent when no command ran in it). Retried once on
    /// a retryable error; the connection is unpinned when the commit completes.
    ///
    /// # Errors
    /// [`Error::InvalidOptions`] without a transaction; the server's or the network's error,
    /// labelled `UnknownTransactionCommitResult` when the outcome is unknown.
    pub async fn commit_transaction(&mut self) -> Result<()> {
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
        let mut result = self.end_command("commitTransaction").await;
        if let Err(e) = &result {
            if e.is_network_error() || e.has_label(RETRYABLE_WRITE_ERROR) {
                // The retry may go to another connection.
                self.unpin();
                result = self.end_command("commitTransaction").await;
            }
        }
        self.unpin();
        self.state = TransactionState::Committed;
        result.map(|_| ()).map_err(|mut e| {
            if e.is_network_error() || e.has_label(RETRYABLE_WRITE_ERROR) {
                e.add_label(UNKNOWN_TRANSACTION_COMMIT_RESULT);
            }
            e
        })
    }

    /// Aborts the transaction (nothing is sent when no command ran in it). Errors of the
    /// `abortTransaction` command are ignored, as the transactions spec says; the connection
    /// is unpinned.
    ///
    /// # Errors
    /// [`Error::InvalidOptions`] without a transaction in progress.
    pub async fn abort_transaction(&mut self) -> Result<()> {
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
        if let Err(e) = self.end_command("abortTransaction").await {
            tracing::debug!(error = %e, "abortTransaction failed (ignored)");
        }
        self.unpin();
        self.state = TransactionState::Aborted;
        Ok(())
    }

    fn in_transaction(&self) -> bool {
        matches!(self.state, TransactionState::Starting | TransactionState::InProgress)
    }

    fn unpin(&mut self) {
        if let Some(pin) = self.pin.take() {
            self.client.inner.selector.actor().do_send(Unpin { pin });
        }
    }

    async fn end_command(&mut self, name: &'static str) -> Result<Document> {
        let mut command = doc! { name: 1 };
        if let Some(wc) = &self.client.inner.settings.write_concern {
            command.insert("writeConcern", wc.clone());
        }
        let op = Op {
            name: name.into(),
            db: "admin".into(),
            command,
            criteria: Criteria::Write,
            retry: Retry::No,
            check_write: true,
            opens_cursor: false,
        };
        Ok(self.execute(op).await?.reply)
    }

    /// Runs `op` with this session: its `lsid`, and inside a transaction its `txnNumber`,
    /// `autocommit: false` and (first command) `startTransaction: true`, on the transaction's
    /// pinned connection in load-balanced mode. Not retried.
    pub(crate) async fn execute(&mut self, mut op: Op) -> Result<OpOutput> {
        let inner = self.client.inner.clone();
        inner.check_open()?;
        let end = matches!(op.name.as_ref(), "commitTransaction" | "abortTransaction");
        let in_txn = self.in_transaction() || end;
        let load_balanced = inner.settings.load_balanced;
        let server = self.server.as_mut().ok_or_else(|| state_error("the session has ended"))?;
        if in_txn {
            if !end {
                // Only commit and abort carry a write concern in a transaction.
                op.command.remove("writeConcern");
            }
            op.command.insert("txnNumber", server.txn_number);
            if self.state == TransactionState::Starting {
                op.command.insert("startTransaction", true);
            }
            op.command.insert("autocommit", false);
            if let Criteria::Read(_) = op.criteria {
                // Reads in a transaction go to the primary.
                op.criteria = Criteria::Read(selection::ReadPreference::PRIMARY);
            }
        } else if op.retry == Retry::Write && inner.settings.retry_writes && !inner.settings.unacknowledged {
            op.command.insert("txnNumber", server.next_txn_number());
        }
        let pin_txn = in_txn && load_balanced;
        let pinned = match self.pin {
            Some(pin) if pin_txn => inner.selector.actor().send(TakePinned { pin }).await??,
            _ => None,
        };
        let (mut conn, address) = match pinned {
            Some(c) => {
                let address = c.address().clone();
                (c, address)
            }
            None => {
                let mut request = SelectionRequest::new(op.criteria.clone(), op.name.clone());
                request.operation_id = Some(next_operation_id());
                request.deadline = inner.settings.timeout.map(|t| tokio::time::Instant::now() + t);
                let deadline = request.deadline;
                let selected = inner.selector.select(request).await?;
                let address = selected.address().clone();
                let purpose = if pin_txn { CheckoutPurpose::Transaction } else { CheckoutPurpose::Other };
                let generation = selected.handle().pool.generation(None);
                let conn = match selected.handle().pool.check_out(deadline, purpose).await {
                    Ok(c) => c,
                    Err(e) => return Err(inner.check_out_error(&address, e, generation, false).await),
                };
                (conn, address)
            }
        };
        if self.state == TransactionState::Starting {
            self.state = TransactionState::InProgress;
        }
        let result = inner.execute_on(&address, Some(&mut conn), &op, Some(server)).await;
        let transient = in_txn
            && !end
            && result
                .as_ref()
                .err()
                .is_some_and(|e| e.is_network_error() || e.has_label(TRANSIENT_TRANSACTION_ERROR));
        if pin_txn && !transient {
            let pin = *self.pin.get_or_insert_with(|| inner.selector.new_pin_id());
            inner.selector.actor().send(PinConnection { pin, connection: conn }).await??;
            return self.output(result, address, None);
        }
        if transient {
            self.unpin();
        }
        let keep = load_balanced && !in_txn && op.opens_cursor;
        let connection = keep.then_some(conn);
        self.output(result, address, connection).map_err(|mut e| {
            if transient {
                e.add_label(TRANSIENT_TRANSACTION_ERROR);
            }
            e
        })
    }

    fn output(
        &self,
        result: Result<Document>,
        address: ServerAddress,
        connection: Option<PooledConnection<Connection>>,
    ) -> Result<OpOutput> {
        let reply = result?;
        let open = cursor_id(&reply) != 0;
        let session = open.then(|| self.server.as_ref().map(ServerSession::lend)).flatten();
        Ok(OpOutput { reply, address, session, connection: connection.filter(|_| open) })
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

impl Collection {
    /// [`insert_one`](Self::insert_one) with an explicit session (in its transaction, if
    /// any). Not retried.
    pub async fn insert_one_with_session(
        &self,
        doc: Document,
        session: &mut ClientSession,
    ) -> Result<InsertOneResult> {
        let (doc, inserted_id) = super::collection::with_id(doc);
        let op = self.write_op("insert", doc! {"insert": self.name(), "documents": [doc], "ordered": true});
        session.execute(op).await?;
        Ok(InsertOneResult { inserted_id })
    }

    /// [`find`](Self::find) with an explicit session. The cursor's `getMore`s use the
    /// session's id.
    pub async fn find_with_session(
        &self,
        filter: Document,
        options: FindOptions,
        session: &mut ClientSession,
    ) -> Result<Cursor> {
        let batch_size = options.batch_size;
        let mut command = super::collection::find_command(self.name(), filter, &options);
        if let Some(b) = batch_size {
            command.insert("batchSize", i64::from(b));
        }
        let op = self.read_op("find", command, options.read_preference, true);
        let out = session.execute(op).await?;
        let txn_pin = session.pin.filter(|_| session.in_transaction());
        let mut cursor = Cursor::new(
            self.database().client().clone(),
            self.database().name(),
            self.name(),
            out,
            batch_size,
        )
        .await?;
        if let Some(pin) = txn_pin {
            cursor.join_transaction(pin);
        }
        Ok(cursor)
    }
}

impl Database {
    /// [`run_command`](Self::run_command) with an explicit session (in its transaction, if
    /// any).
    pub async fn run_command_with_session(
        &self,
        command: Document,
        criteria: Option<Criteria>,
        session: &mut ClientSession,
    ) -> Result<Document> {
        let name = command.keys().next().cloned().unwrap_or_default();
        let op = Op {
            name: name.into(),
            db: self.name().to_string(),
            command,
            criteria: criteria.unwrap_or(Criteria::Read(selection::ReadPreference::PRIMARY)),
            retry: Retry::No,
            check_write: false,
            opens_cursor: false,
        };
        Ok(session.execute(op).await?.reply)
    }
}
