//! The executor: the one way every operation runs. [`run`] is the entry point of the
//! handles' operations (with an explicit session or an implicit one); [`ClientInner::execute`]
//! runs a prepared [`Op`]: server selection (or the server and connection a [`Binding`] pins),
//! check-out, the implicit session, then [`attempt`]s under the retry rules of [`retry`],
//! all under one set of CSOT [`Limits`].
//!
//! | file | what it holds |
//! |---|---|
//! | [`operation`] | the [`Operation`] trait, [`Shape`], [`Op`], [`Reply`], [`OpOutput`] |
//! | `mod.rs` | the entry point, selection, locating a server or a pinned connection, check-out |
//! | [`attempt`] | one attempt on a connection: round trip, reply classification, SDAM reports |
//! | [`command`] | the command an attempt sends, with its global arguments |
//! | [`retry`] | every retry rule and the labels the specs add |
//! | [`monitoring`] | command events, command logs and command metrics (and each command's span) |
//! | [`telemetry`] | an operation's OpenTelemetry span and its duration metric |
//! | [`cluster_time`] | where `$clusterTime` is kept, compared and gossiped |

pub(crate) mod attempt;
pub(crate) mod cluster_time;
pub(crate) mod command;
pub(crate) mod monitoring;
pub(crate) mod operation;
pub(crate) mod reauthenticate;
pub(crate) mod retry;
pub(crate) mod telemetry;

use std::sync::Arc;

use pool::cmap::{CheckoutPurpose, PooledConnection};
use pool::connection::Connection;
use protocol::sdam::app_error::ErrorPhase;
use protocol::sdam::{ServerType, TopologyType};
use protocol::ServerAddress;

use self::attempt::{Attempt, Target};
use self::operation::{next_operation_id, raw_cursor_id, Op, OpOutput, Operation, Retry};
use self::retry::Retrying;
use self::telemetry::Watch;
use super::inner::{Client, ClientInner};
use super::session::pool::ServerSession;
use super::session::TransactionState;
use super::timeout::{self, Limits};
use crate::cluster::selection::{SelectedServer, SelectionRequest};
use crate::cluster::snapshot::{ServerHandle, TopologySnapshot};
use crate::cluster::topology::application_error;
use crate::error::pool_error_address;
use crate::error::{Error, Result};

/// An explicit session as the executor sees it: it binds an operation (its server session,
/// a transaction's fields, a pinned connection or mongos) and runs it through
/// [`ClientInner::execute`]. Implemented by [`ClientSession`](super::ClientSession).
pub(crate) trait ExplicitSession: Send {
    /// Whether the session was started by the client whose state is `inner`.
    fn started_by(&self, inner: &Arc<ClientInner>) -> bool;

    /// The span of the session's transaction, under which its statements' spans nest.
    fn transaction_span(&self) -> Option<&crate::observe::otel::TransactionSpan>;

    /// Runs `op` with the session under `limits`.
    fn execute(
        &mut self,
        op: Op,
        limits: Limits,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<OpOutput>> + Send + '_>>;
}

/// Runs `op` with `session` (explicit, maybe in a transaction) or an implicit one, and reads
/// its reply: the entry point of every handle's operation.
///
/// Not an `async fn`: the async block holds `op` once (an `async fn` with a `mut` parameter
/// holds it twice), which is what a queued operation costs in memory.
#[allow(clippy::manual_async_fn)]
pub(crate) fn run<'a, O: Operation + 'a, S: ExplicitSession + ?Sized>(
    client: &'a Client,
    mut op: O,
    limits: Limits,
    session: Option<&'a mut S>,
) -> impl std::future::Future<Output = Result<O::Output>> + 'a {
    async move {
        if session.as_ref().is_some_and(|s| !s.started_by(&client.inner)) {
            // Its server session and cluster time belong to another client's deployment.
            return Err(Error::invalid_argument(
                "the session was started by another client than the one running the operation",
            ));
        }
        let watch = Watch::start(&client.inner);
        let mut prepared = op.prepare()?;
        let transaction = session.as_deref().and_then(|s| s.transaction_span());
        let watched = watch.begin(&client.inner, &mut prepared, transaction);
        // Boxed: the fluent operations box their future (IntoFuture); with the executor's state
        // behind a pointer, that box is small and cheap to fill.
        let out = match session {
            Some(session) => session.execute(prepared, limits).await,
            None => Box::pin(client.inner.execute(prepared, limits, Binding::implicit())).await,
        };
        if !watched.is_on() {
            return op.handle_reply(out?);
        }
        let address = out.as_ref().ok().map(|o| o.address.clone());
        let result = out.and_then(|out| op.handle_reply(out));
        watched.end(&client.inner, address, &result);
        result
    }
}

/// The session an operation sends.
#[derive(Debug)]
pub(crate) enum SessionUse<'a> {
    /// An implicit session from the pool when the deployment supports sessions, given back
    /// when the operation ends (or kept by the cursor it opens).
    Implicit,
    /// No session (a cursor opened without one).
    None,
    /// The caller's: an explicit session outside a transaction, or a cursor's.
    Given(&'a mut ServerSession),
    /// A statement of an explicit session's transaction: `txnNumber`, `autocommit: false`,
    /// and `startTransaction: true` while the session's `state` is `Starting`. The state moves
    /// to `InProgress` in the session itself just before the first attempt is written, so a
    /// statement cut off mid-exchange leaves a transaction that commit and abort send for.
    /// Never retried.
    Transaction { session: &'a mut ServerSession, state: &'a mut TransactionState },
}

/// Where an operation runs and the session it sends.
#[derive(Debug)]
pub(crate) struct Binding<'a> {
    /// The session.
    pub session: SessionUse<'a>,
    /// `Some`: this server (a cursor's); `None`: the one server selection chooses.
    pub server: Option<&'a ServerAddress>,
    /// A pinned connection (load-balanced cursors and transactions): the operation runs on
    /// the connection it holds, or on one checked out for it, and leaves that connection
    /// here for the caller to pin again (or drop).
    pub connection: Option<&'a mut Option<PooledConnection<Connection>>>,
    /// What a connection checked out for the operation is for.
    pub purpose: CheckoutPurpose,
}

impl Binding<'_> {
    /// An implicit session, on a server selection chooses.
    pub(crate) fn implicit() -> Binding<'static> {
        Binding {
            session: SessionUse::Implicit,
            server: None,
            connection: None,
            purpose: CheckoutPurpose::Other,
        }
    }
}

/// What an operation carries from one attempt to the next: its session, its write's
/// `txnNumber` and its retry state.
struct Run<'a> {
    session: SessionUse<'a>,
    /// The implicit session taken for the operation (given back at its end, or kept by the
    /// cursor it opens).
    implicit: Option<ServerSession>,
    /// The operation takes an implicit session, once it has a connection (driver sessions
    /// spec: so there are never more server sessions than connections, however many
    /// operations queue).
    wants_implicit: bool,
    session_timeout: Option<i64>,
    /// A retryable write's number, the same for its retry.
    txn_number: Option<i64>,
    /// A transaction statement: whether it starts the transaction, fixed at its first attempt
    /// (a retry after an overload starts it again).
    txn_first: Option<bool>,
    retry: Retrying,
}

impl<'a> Run<'a> {
    fn new(session: SessionUse<'a>) -> Self {
        Run {
            session,
            implicit: None,
            wants_implicit: false,
            session_timeout: None,
            txn_number: None,
            txn_first: None,
            retry: Retrying::default(),
        }
    }

    /// Whether the operation takes an implicit session: on the first attempt, when the
    /// deployment supports sessions. It is taken after the check-out.
    #[inline]
    fn plan_implicit_session(&mut self, sessions: Option<Option<i64>>) {
        let first = !self.retry.is_retry();
        if let (SessionUse::Implicit, None, true, Some(timeout)) =
            (&self.session, &self.implicit, first, sessions)
        {
            self.session_timeout = timeout;
            self.wants_implicit = true;
        }
    }

    /// Takes the planned implicit session (a connection is checked out).
    #[inline]
    fn take_implicit_session(&mut self, client: &ClientInner) {
        if self.wants_implicit && self.implicit.is_none() {
            self.implicit = Some(client.sessions.acquire(self.session_timeout));
        }
    }

    /// Whether `op` may be retried on a server of type `server` (see [`Retrying::allowed`]).
    #[inline]
    fn retryable(&self, op: &Op, server: ServerType, client: &ClientInner) -> bool {
        let in_transaction = matches!(self.session, SessionUse::Transaction { .. });
        let has_session =
            self.implicit.is_some() || self.wants_implicit || matches!(self.session, SessionUse::Given(_));
        Retrying::allowed(op, in_transaction, has_session, server, &client.settings)
    }

    /// Gives a retryable write its `txnNumber` (once: its retry reuses it).
    #[inline]
    fn number_the_write(&mut self) {
        if self.txn_number.is_none() {
            self.txn_number = match &mut self.session {
                SessionUse::Implicit => self.implicit.as_mut().map(ServerSession::next_txn_number),
                SessionUse::Given(s) => Some(s.next_txn_number()),
                _ => None,
            };
        }
    }

    /// The session and the ids of the next attempt; CSOT's `maxTimeMS` from the server's
    /// minimum RTT (an error when no time is left for the round trip).
    #[inline]
    fn attempt(
        &mut self,
        limits: Limits,
        min_rtt: std::time::Duration,
        operation_id: i64,
    ) -> Result<(Option<&mut ServerSession>, Attempt)> {
        let max_time_ms = timeout::max_time_ms(limits.deadline, min_rtt)?.filter(|_| limits.send_max_time);
        let txn_number = self.txn_number;
        let (session, transaction, txn_number) = match &mut self.session {
            SessionUse::Implicit => (self.implicit.as_mut(), None, txn_number),
            SessionUse::None => (None, None, txn_number),
            SessionUse::Given(s) => (Some(&mut **s), None, txn_number),
            SessionUse::Transaction { session, state } => {
                let number = session.txn_number;
                let first = *self.txn_first.get_or_insert_with(|| state.mark_sent());
                (Some(&mut **session), Some(first), Some(number))
            }
        };
        Ok((
            session,
            Attempt {
                operation_id,
                txn_number,
                transaction,
                deadline: limits.deadline,
                max_time_ms,
                reauthenticated: false,
            },
        ))
    }

    /// The session an open cursor keeps: the implicit one, or a copy of an explicit one's id.
    #[inline]
    fn session_for_cursor(&mut self, cursor_open: bool) -> Option<ServerSession> {
        if !cursor_open {
            return None;
        }
        match &self.session {
            SessionUse::None => None,
            SessionUse::Implicit => self.implicit.take(),
            SessionUse::Given(s) => Some(s.lend()),
            SessionUse::Transaction { session, .. } => Some(session.lend()),
        }
    }
}

/// Where one attempt runs.
struct Located {
    address: ServerAddress,
    target: Target,
    /// The server's pool and RTT (`None`: a pinned connection to a server that left).
    handle: Option<Arc<ServerHandle>>,
    /// Session support (see [`session_support`]).
    sessions: Option<Option<i64>>,
}

impl Located {
    /// Where selection sent the attempt (the selected server itself stays with the caller:
    /// it counts the operation against its server until dropped).
    #[inline]
    fn of(selected: &SelectedServer) -> Located {
        Located {
            address: selected.address().clone(),
            target: Target {
                topology_type: selected.snapshot().description.topology_type(),
                server_type: selected.description().server_type,
            },
            handle: Some(selected.handle().clone()),
            sessions: sessions_in(selected.snapshot()),
        }
    }
}

/// What one attempt returned: the reply, and the connection when the caller did not pin it.
type Attempted = Result<(operation::Reply, Option<PooledConnection<Connection>>)>;

impl ClientInner {
    /// Runs `op`, the one way every operation runs: server selection (or the server and
    /// connection `binding` pins), check-out, the session's fields, the command's global
    /// arguments, command monitoring, reply classification, SDAM error reporting, and the
    /// retry rules, all under `limits`. With a `timeoutMS`, retryable operations retry as
    /// long as time remains (otherwise once), and timeouts become [`ErrorKind::Timeout`](crate::error::ErrorKind::Timeout).
    pub(crate) async fn execute(&self, op: Op, limits: Limits, binding: Binding<'_>) -> Result<OpOutput> {
        self.check_open()?;
        // A graceful shutdown waits for this operation.
        let _in_flight = self.in_flight.token();
        let Binding { session, server, mut connection, purpose } = binding;
        let mut run = Run::new(session);
        let operation_id = next_operation_id();
        let result = loop {
            if let Some(backoff) = run.retry.take_backoff() {
                tokio::time::sleep(backoff).await;
            }
            // Selection is awaited here, not in a helper: every async layer and every move of
            // a large value on this path costs instructions per operation.
            let pinned = connection.as_deref_mut().and_then(Option::take);
            let selected = match (&pinned, server) {
                (None, None) => {
                    match self.selector.select(self.selection_request(&op, &run, operation_id, limits)).await
                    {
                        Ok(s) => Some(s),
                        // A retry that finds no server returns the original error (CSOT: as a
                        // timeout once the deadline has passed).
                        Err(e) => {
                            break Err(timeout::retry_selection_error(
                                run.retry.take_first_error(),
                                e,
                                limits.deadline,
                            ))
                        }
                    }
                }
                _ => None,
            };
            let located = match self.locate(selected.as_ref(), pinned.as_ref(), server) {
                Ok(l) => l,
                Err(e) => break Err(e),
            };
            let Located { address, target, handle, sessions } = located;
            // An unacknowledged write takes no implicit session (driver sessions spec).
            run.plan_implicit_session(sessions.filter(|_| !op.unacknowledged()));
            let retryable = run.retryable(&op, target.server_type, self);
            if run.retry.is_retry() && !retryable && !run.retry.is_overload_retry() {
                // The new server cannot retry (for example no longer supports sessions).
                break Err(run.retry.take_first_error().unwrap_or_else(|| Error::stopped("operation")));
            }
            let checked_out = match (pinned, &handle) {
                (Some(conn), _) => Ok(conn),
                (None, Some(handle)) => {
                    let generation = handle.pool.generation(None);
                    match timeout::check_out(&handle.pool, limits.timeout, limits.deadline, purpose).await {
                        Ok(conn) => Ok(conn),
                        // Boxed, as every cold path here: its state stays out of the
                        // operation's future, which the fluent API boxes whole.
                        Err(e) => Err(Box::pin(self.check_out_error(
                            &address,
                            e,
                            generation,
                            op.retry == Retry::Write,
                        ))
                        .await),
                    }
                }
                (None, None) => Err(pool_closed(&address)),
            };
            let attempt = match checked_out {
                Err(e) => Err(e),
                Ok(mut conn) => {
                    let min_rtt = handle.as_ref().map(|h| h.rtt.min()).unwrap_or_default();
                    let reply =
                        match self.prepare_attempt(&mut run, &op, retryable, limits, min_rtt, operation_id) {
                            // Boxed: an operation waiting for its check-out or selection (a
                            // burst far over capacity) holds no room for the round trip's state.
                            Ok((session, ids)) => {
                                Box::pin(self.attempt(&mut conn, &target, &op, session, ids)).await
                            }
                            Err(e) => Err(e),
                        };
                    leave_connection(conn, connection.as_deref_mut(), reply)
                }
            };
            drop(selected);
            match attempt {
                Ok((reply, conn)) => break Ok((reply, address, conn)),
                // Admission control fails at once: a retry would only queue again.
                Err(e) if matches!(*e.kind, crate::error::ErrorKind::Overloaded { .. }) => break Err(e),
                Err(e) => {
                    let sharded = (target.topology_type == TopologyType::Sharded).then_some(address);
                    if let Some(e) = run.retry.failed(e, &op, retryable, limits, sharded, &self.settings) {
                        break Err(e);
                    }
                }
            }
        };
        self.finish(&op, run, result, limits)
    }

    /// What selection is asked for an attempt: a retry avoids the servers that failed.
    #[inline]
    fn selection_request(
        &self,
        op: &Op,
        run: &Run<'_>,
        operation_id: i64,
        limits: Limits,
    ) -> SelectionRequest {
        SelectionRequest {
            criteria: op.criteria.clone(),
            deprioritized: run.retry.deprioritized().to_vec(),
            operation: op.name.clone(),
            operation_id: Some(operation_id),
            deadline: limits.deadline,
        }
    }

    /// Where the attempt runs: the selected server, the pinned connection's, or the named
    /// server (a cursor's).
    #[inline]
    fn locate(
        &self,
        selected: Option<&SelectedServer>,
        pinned: Option<&PooledConnection<Connection>>,
        server: Option<&ServerAddress>,
    ) -> Result<Located> {
        match (selected, pinned, server) {
            (Some(s), ..) => Ok(Located::of(s)),
            (None, Some(conn), _) => Ok(self.locate_pinned(conn.address())),
            (None, None, Some(address)) => self.locate_server(address),
            (None, None, None) => Err(Error::stopped("selection")),
        }
    }

    /// What an attempt on a checked-out connection sends: the implicit session and the
    /// write's number are taken now; CSOT's `maxTimeMS` comes from the server's minimum RTT,
    /// checked after the check-out (a failure returns the connection unsent).
    #[inline]
    fn prepare_attempt<'r>(
        &self,
        run: &'r mut Run<'_>,
        op: &Op,
        retryable: bool,
        limits: Limits,
        min_rtt: std::time::Duration,
        operation_id: i64,
    ) -> Result<(Option<&'r mut ServerSession>, Attempt)> {
        run.take_implicit_session(self);
        if op.retry == Retry::Write && retryable {
            run.number_the_write();
        }
        run.attempt(limits, min_rtt, operation_id)
    }

    /// The operation's output: an open cursor keeps the session (an explicit one lends a
    /// copy of its id) and, in load-balanced mode, the connection; an implicit session goes
    /// back to the pool otherwise; errors become timeouts past the deadline.
    #[inline]
    fn finish(
        &self,
        op: &Op,
        mut run: Run<'_>,
        result: Result<(operation::Reply, ServerAddress, Option<PooledConnection<Connection>>)>,
        limits: Limits,
    ) -> Result<OpOutput> {
        let output = match result {
            Ok((reply, address, conn)) => {
                let cursor_open = op.opens_cursor && raw_cursor_id(reply.raw()) != 0;
                let session = run.session_for_cursor(cursor_open);
                let connection = conn.filter(|_| cursor_open && self.settings.load_balanced);
                Ok(OpOutput { reply, address, session, connection })
            }
            Err(e) => Err(timeout::convert(e, limits.timeout, limits.deadline)),
        };
        if let Some(s) = run.implicit.take() {
            self.sessions.release(s, run.session_timeout);
        }
        output
    }

    /// Runs `op` through [`execute`](Self::execute) and reads its reply.
    pub(crate) async fn run<O: Operation>(
        &self,
        mut op: O,
        limits: Limits,
        binding: Binding<'_>,
    ) -> Result<O::Output> {
        let watch = Watch::start(self);
        let mut prepared = op.prepare()?;
        let watched = watch.begin(self, &mut prepared, None);
        let out = self.execute(prepared, limits, binding).await;
        if !watched.is_on() {
            return op.handle_reply(out?);
        }
        let address = out.as_ref().ok().map(|o| o.address.clone());
        let result = out.and_then(|out| op.handle_reply(out));
        watched.end(self, address, &result);
        result
    }

    /// Where an operation on a named server (a cursor's) runs.
    fn locate_server(&self, address: &ServerAddress) -> Result<Located> {
        let snapshot = self.topology.snapshot();
        let Some(handle) = snapshot.handle(address) else { return Err(pool_closed(address)) };
        Ok(Located {
            address: address.clone(),
            target: target_in(&snapshot, address),
            handle: Some(handle.clone()),
            sessions: sessions_in(&snapshot),
        })
    }

    /// Where a pinned connection to `address` runs.
    fn locate_pinned(&self, address: &ServerAddress) -> Located {
        let snapshot = self.topology.snapshot();
        Located {
            address: address.clone(),
            target: target_in(&snapshot, address),
            handle: snapshot.handle(address).cloned(),
            sessions: sessions_in(&snapshot),
        }
    }

    /// A check-out failure as an operation error; establishment errors go to SDAM.
    pub(crate) async fn check_out_error(
        &self,
        address: &ServerAddress,
        e: pool::Error,
        generation: u32,
        write: bool,
    ) -> Error {
        if let pool::Error::WaitQueueFull { address, limit } = e {
            return Error::overloaded(crate::error::OverloadedQueue::ConnectionPool, limit, Some(address));
        }
        let establishment = e.is_network_error() || matches!(e, pool::Error::Authentication { .. });
        if establishment && !matches!(e, pool::Error::PoolCleared { .. }) {
            let app = application_error(
                address.clone(),
                &e,
                generation,
                ErrorPhase::ConnectionEstablishment,
                None,
                None,
            );
            let _ = self.topology.report_error(app).await;
        }
        let labels = retry::check_out_labels(&e, write);
        let address = pool_error_address(&e).cloned().unwrap_or_else(|| address.clone());
        let mut error = Error::connection(address, e);
        for label in labels {
            error.add_label(&label);
        }
        error
    }
}

/// A pinned operation leaves its connection in `pin` for the caller; otherwise the attempt
/// returns it with the reply.
#[inline]
fn leave_connection(
    conn: PooledConnection<Connection>,
    pin: Option<&mut Option<PooledConnection<Connection>>>,
    reply: Result<operation::Reply>,
) -> Attempted {
    match pin {
        Some(slot) => {
            *slot = Some(conn);
            reply.map(|r| (r, None))
        }
        None => reply.map(|r| (r, Some(conn))),
    }
}

/// Whether the topology supports sessions, and their timeout.
#[inline]
fn session_support(topology_type: TopologyType, timeout: Option<i64>) -> Option<Option<i64>> {
    match (topology_type, timeout) {
        (_, Some(t)) => Some(Some(t)),
        (TopologyType::LoadBalanced, None) => Some(None),
        _ => None,
    }
}

/// The error of an operation whose server has left the topology (its pool is gone).
fn pool_closed(address: &ServerAddress) -> Error {
    Error::connection(address.clone(), pool::Error::PoolClosed { address: address.clone() })
}

/// What `snapshot` says of `address`.
#[inline]
fn target_in(snapshot: &TopologySnapshot, address: &ServerAddress) -> Target {
    let server_type = snapshot.server(address).map_or(ServerType::Unknown, |d| d.server_type);
    Target { topology_type: snapshot.description.topology_type(), server_type }
}

/// Session support in `snapshot` (see [`session_support`]).
#[inline]
fn sessions_in(snapshot: &TopologySnapshot) -> Option<Option<i64>> {
    session_support(
        snapshot.description.topology_type(),
        snapshot.description.logical_session_timeout_minutes(),
    )
}
