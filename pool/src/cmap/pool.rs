//! The pool: a state machine behind one `parking_lot` mutex.
//!
//! Every state change and the event it emits happen under the lock, so subscribers see
//! events in a consistent order. Checking out an idle connection is a lock and a pop.
//! Waiters queue in FIFO order; only the head of the queue takes connections or starts
//! establishing one, and it wakes the next head when it leaves. Establishment runs in a
//! spawned task so that a caller giving up does not waste the connection.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicU32, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bson::oid::ObjectId;
use parking_lot::Mutex;
use protocol::address::ServerAddress;
use serde::{Deserialize, Serialize};
use tokio::sync::{oneshot, Notify};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::conn::{CheckoutPurpose, ConnInfo, ConnMeta, PooledConnection, ReturnTo};
use super::establish::{EstablishRequest, Established, Establisher, PoolConnection};
use super::events::{CheckOutFailedReason, CmapEvent, CmapEventHandler, ConnectionClosedReason};
use super::options::PoolOptions;
use super::outbox::{Events, Locked};
use super::runtime::{MarkGone, RuntimeTag};
use crate::{Error, Result};

/// The CMAP state of a pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PoolState {
    /// Check-outs fail with [`Error::PoolCleared`]; no background connections (initial state,
    /// and after a clear outside load-balanced mode).
    Paused,
    /// Serving check-outs.
    Ready,
    /// Closed for good.
    Closed,
}

/// A snapshot of a pool's counters, for metrics and UIs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PoolStats {
    /// The pool's state.
    pub state: PoolState,
    /// Pending, available and in-use connections.
    pub total: usize,
    /// Connections idle in the pool.
    pub available: usize,
    /// Connections being established.
    pub pending: usize,
    /// Connections checked out.
    pub in_use: usize,
    /// Checked out for cursors.
    pub in_use_cursors: usize,
    /// Checked out for transactions.
    pub in_use_transactions: usize,
    /// Checked out for other operations.
    pub in_use_other: usize,
    /// Check-outs waiting in the wait queue.
    pub wait_queue: usize,
    /// The pool generation (incremented by each clear outside a single service).
    pub generation: u32,
}

/// Called with the error and the generation of the failed connection when a background
/// (minPoolSize) establishment fails, so the owner can run SDAM error handling (which clears
/// the pool).
pub type BackgroundErrorHook = Arc<dyn Fn(&Error, u32) + Send + Sync>;

/// Called with the error, the generation of the failed connection and, when its handshake
/// completed in load-balanced mode, its `serviceId` (the generation is then the service's),
/// when any establishment (background or for a check-out) fails. The pool awaits the returned future before it
/// reports the connection closed, so SDAM error handling (marking the server Unknown,
/// clearing the pool) happens first, as CMAP and SDAM require.
pub type EstablishmentErrorHook =
    Arc<dyn Fn(&Error, u32, Option<ObjectId>) -> futures_util::future::BoxFuture<'static, ()> + Send + Sync>;

struct Idle<C> {
    /// Boxed once, at establishment (see [`PooledConnection`]).
    meta: ConnMeta,
    conn: Box<C>,
    since: Instant,
}

struct InUse {
    meta: ConnMeta,
    purpose: CheckoutPurpose,
}

type Delivery<C> = oneshot::Sender<Result<PooledConnection<C>>>;

struct Pending<C: PoolConnection> {
    generation: u32,
    cancel: CancellationToken,
    created: Instant,
    /// The caller's runtime the establishment runs on (`None`: the pool's).
    runtime: Option<Arc<RuntimeTag>>,
    /// The check-out this connection is for; `None` for minPoolSize population.
    waiter: Option<(Delivery<C>, CheckoutPurpose)>,
}

/// Reports an establishment whose task was dropped before it finished (its runtime shut
/// down) as failed, so its pending slot and its waiter are never left behind.
struct EstablishmentGuard<E: Establisher> {
    inner: Arc<Inner<E>>,
    id: u32,
    armed: bool,
    /// [`SPAWNING`] until `start_establishment`'s spawn returns.
    spawn: Arc<AtomicU8>,
}

/// The establishment's task is being spawned, under the pool lock.
const SPAWNING: u8 = 0;
/// The spawn returned.
const SPAWNED: u8 = 1;
/// The task was dropped before the spawn returned: a runtime that has shut down drops it
/// inside `spawn`, on the thread that holds the pool lock.
const DROPPED_IN_SPAWN: u8 = 2;

impl<E: Establisher> EstablishmentGuard<E> {
    fn runtime_gone(address: &ServerAddress) -> Error {
        Error::Interrupted {
            address: address.clone(),
            reason: "the runtime establishing the connection shut down".into(),
        }
    }
}

impl<E: Establisher> Drop for EstablishmentGuard<E> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        // Locking here would deadlock on the spawning thread's own lock: the spawner, which
        // sees the flag when its spawn returns, fails the establishment instead.
        if self
            .spawn
            .compare_exchange(SPAWNING, DROPPED_IN_SPAWN, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            return;
        }
        self.inner.finish_establishment(self.id, Err(Self::runtime_gone(&self.inner.address)));
    }
}

struct WaiterShared {
    notify: Notify,
    /// Set (under the pool lock) when a clear or close evicts the waiter.
    evicted: Mutex<Option<Error>>,
}

struct ServiceGeneration {
    generation: u32,
    connections: usize,
}

struct State<C: PoolConnection> {
    status: PoolState,
    generation: u32,
    services: HashMap<ObjectId, ServiceGeneration>,
    next_connection_id: u32,
    next_waiter_id: u64,
    /// Most recently used at the back.
    available: VecDeque<Idle<C>>,
    pending: HashMap<u32, Pending<C>>,
    in_use: HashMap<u32, InUse>,
    /// The wait queue by waiter id: ids grow, so the first entry is the head, and a waiter
    /// that times out or goes away leaves in O(log n) however long the queue is.
    queue: BTreeMap<u64, Arc<WaiterShared>>,
    /// Callers' runtimes that establish connections, each with a watcher task.
    runtimes: HashMap<tokio::runtime::Id, Arc<RuntimeTag>>,
}

impl<C: PoolConnection> State<C> {
    fn total(&self) -> usize {
        self.available.len() + self.pending.len() + self.in_use.len()
    }

    fn wake_head(&self) {
        if let Some((_, w)) = self.queue.first_key_value() {
            w.notify.notify_one();
        }
    }

    /// Wakes as many waiters, from the head, as there are idle connections (at least the
    /// head): each can take one without waiting for the one before it to run first.
    fn wake_for_idle(&self) {
        for (_, w) in self.queue.iter().take(self.available.len().max(1)) {
            w.notify.notify_one();
        }
    }

    /// Where waiter `id` stands in the queue, if among the first `within`.
    fn position(&self, id: u64, within: usize) -> Option<usize> {
        self.queue.keys().take(within).position(|&k| k == id)
    }

    /// Removes a waiter; true if it was there. If it was the head, wakes the next head when
    /// there is something for it to take (`room`: a connection may be started): waking it
    /// for nothing costs a task switch per waiter when a whole queue times out at once.
    fn remove_waiter(&mut self, id: u64, room: bool) -> bool {
        let head = self.queue.first_key_value().is_some_and(|(&first, _)| first == id);
        let removed = self.queue.remove(&id).is_some();
        if removed && head && (room || !self.available.is_empty()) {
            self.wake_head();
        }
        removed
    }

    fn evict_waiters(&mut self, error: &Error) {
        for (_, w) in std::mem::take(&mut self.queue) {
            *w.evicted.lock() = Some(error.clone());
            w.notify.notify_one();
        }
    }

    fn is_stale(&self, meta: &ConnMeta) -> bool {
        meta.generation != self.generation
            || meta
                .service_id
                .is_some_and(|s| self.services.get(&s).map(|g| g.generation) != Some(meta.service_generation))
    }
}

pub(crate) struct Inner<E: Establisher> {
    address: ServerAddress,
    options: PoolOptions,
    establisher: E,
    background_error: Option<BackgroundErrorHook>,
    establishment_error: Option<EstablishmentErrorHook>,
    /// The state, and the events emitted under its lock (delivered once it is released: see
    /// [`super::outbox`]).
    state: Locked<State<E::Connection>>,
    /// Mirrors of `state.status` and `state.generation`, written under the lock, so that
    /// server selection and operations read them without taking it.
    status_hint: AtomicU8,
    generation_hint: AtomicU32,
    maintenance: Arc<Notify>,
    runtime: tokio::runtime::Handle,
    /// `runtime.id()`, kept because the check-out compares it with every candidate.
    runtime_id: tokio::runtime::Id,
    /// Cancelled when the pool closes or goes away: ends the runtime watchers.
    closed: CancellationToken,
}

impl<E: Establisher> Drop for Inner<E> {
    fn drop(&mut self) {
        self.closed.cancel();
    }
}

fn status_code(status: PoolState) -> u8 {
    match status {
        PoolState::Paused => 0,
        PoolState::Ready => 1,
        PoolState::Closed => 2,
    }
}

fn status_of(code: u8) -> PoolState {
    match code {
        0 => PoolState::Paused,
        1 => PoolState::Ready,
        _ => PoolState::Closed,
    }
}

enum Acquired<C: PoolConnection> {
    Connection(PooledConnection<C>),
    Pending(oneshot::Receiver<Result<PooledConnection<C>>>),
    Nothing,
}

use crate::earliest;

impl<E: Establisher> Inner<E> {
    /// Emits `event` to the handler and the log: at once, or, under the pool lock, when the
    /// lock is released.
    fn emit(&self, event: CmapEvent) {
        self.state.events().emit(event);
    }

    /// Emits the event `make` builds, building it only when a handler or the log takes it:
    /// the check-out and check-in events come with every operation.
    fn emit_with(&self, make: impl FnOnce() -> CmapEvent) {
        if self.state.events().wanted() {
            self.emit(make());
        }
    }

    fn pool_cleared_error(&self, service_id: Option<ObjectId>) -> Error {
        Error::PoolCleared { address: self.address.clone(), service_id }
    }

    fn pool_closed_error(&self) -> Error {
        Error::PoolClosed { address: self.address.clone() }
    }

    fn can_create(&self, st: &State<E::Connection>) -> bool {
        let max = self.options.max_pool_size() as usize;
        (max == 0 || st.total() < max) && st.pending.len() < self.options.max_connecting() as usize
    }

    fn perished(
        &self,
        st: &State<E::Connection>,
        idle: &Idle<E::Connection>,
    ) -> Option<ConnectionClosedReason> {
        if st.is_stale(&idle.meta) {
            Some(ConnectionClosedReason::Stale)
        } else if idle.meta.runtime.as_ref().is_some_and(|r| r.is_gone()) {
            // Its socket's runtime shut down: the connection cannot do I/O any more.
            Some(ConnectionClosedReason::Error)
        } else if self.options.max_idle_time().is_some_and(|m| idle.since.elapsed() >= m) {
            Some(ConnectionClosedReason::Idle)
        } else if idle.conn.is_closed() {
            Some(ConnectionClosedReason::Error)
        } else {
            None
        }
    }

    /// Closes a connection that already left the available and in-use sets.
    fn close_connection(
        &self,
        st: &mut State<E::Connection>,
        meta: &ConnMeta,
        conn: Box<E::Connection>,
        reason: ConnectionClosedReason,
        error: Option<String>,
    ) {
        meta.cancel.cancel();
        if let Some(sid) = meta.service_id {
            if let Some(g) = st.services.get_mut(&sid) {
                g.connections = g.connections.saturating_sub(1);
                if g.connections == 0 {
                    st.services.remove(&sid);
                }
            }
        }
        let error = error.or_else(|| {
            (reason == ConnectionClosedReason::Error).then(|| "the connection is closed".to_string())
        });
        self.emit(CmapEvent::ConnectionClosed {
            address: self.address.clone(),
            connection_id: meta.id,
            reason,
            error,
        });
        drop(conn);
        st.wake_head();
    }

    fn make_guard(
        self: &Arc<Self>,
        conn: Box<E::Connection>,
        meta: ConnMeta,
        purpose: CheckoutPurpose,
    ) -> PooledConnection<E::Connection> {
        let back: Arc<dyn ReturnTo<E::Connection>> = self.clone();
        PooledConnection::new(conn, meta, purpose, back, false)
    }

    /// Creates a pending connection (emitting `ConnectionCreated`) and spawns its
    /// establishment.
    fn start_establishment(
        self: &Arc<Self>,
        st: &mut State<E::Connection>,
        waiter: Option<(Delivery<E::Connection>, CheckoutPurpose)>,
        deadline: Option<Instant>,
    ) {
        st.next_connection_id += 1;
        let id = st.next_connection_id;
        let cancel = CancellationToken::new();
        let generation = st.generation;
        let (runtime, tag) = self.establishing_runtime(st);
        st.pending.insert(
            id,
            Pending { generation, cancel: cancel.clone(), created: Instant::now(), runtime: tag, waiter },
        );
        self.emit(CmapEvent::ConnectionCreated { address: self.address.clone(), connection_id: id });
        let service_slot = Arc::new(std::sync::OnceLock::new());
        let request = EstablishRequest {
            address: self.address.clone(),
            id,
            generation,
            deadline,
            cancel,
            service_id: service_slot.clone(),
        };
        let inner = Arc::clone(self);
        let spawn = Arc::new(AtomicU8::new(SPAWNING));
        let guard = EstablishmentGuard { inner: Arc::clone(self), id, armed: true, spawn: spawn.clone() };
        runtime.spawn(async move {
            let mut guard = guard;
            let cancel = request.cancel.clone();
            let address = request.address.clone();
            let attempt = inner.establisher.establish(request);
            let result = tokio::select! {
                r = attempt => r,
                _ = cancel.cancelled() => Err(Error::Interrupted {
                    address,
                    reason: "the pool was cleared or closed while the connection was being established".into(),
                }),
            };
            if let (Err(e), Some(hook)) = (&result, &inner.establishment_error) {
                // Still pending (not closed by a clear or close meanwhile): let the owner
                // handle the error before the connection is reported closed.
                let service_id = service_slot.get().copied();
                let generation = {
                    let st = inner.state.lock();
                    st.pending.get(&id).map(|p| match service_id {
                        Some(sid) if inner.options.load_balanced() => {
                            st.services.get(&sid).map_or(0, |g| g.generation)
                        }
                        _ => p.generation,
                    })
                };
                if let Some(generation) = generation {
                    hook(e, generation, service_id).await;
                }
            }
            guard.armed = false;
            inner.finish_establishment(id, result);
        });
        if spawn.compare_exchange(SPAWNING, SPAWNED, Ordering::AcqRel, Ordering::Acquire).is_err() {
            // The runtime had shut down and dropped the task unrun. Nothing is reported to
            // the owner (no server failed), and the lock we hold makes a hook call unsafe.
            let _ = self.finish_locked(st, id, Err(EstablishmentGuard::<E>::runtime_gone(&self.address)));
        }
    }

    /// Where a new connection is established: on the caller's runtime when it is a
    /// multi-threaded one (its workers drive their own I/O driver whenever they are idle, so
    /// its sockets work from any runtime while it lives), else on the pool's own. A
    /// current-thread runtime drives I/O only inside its `block_on`, so a socket registered
    /// there could stall an operation on another runtime.
    fn establishing_runtime(
        &self,
        st: &mut State<E::Connection>,
    ) -> (tokio::runtime::Handle, Option<Arc<RuntimeTag>>) {
        let caller = tokio::runtime::Handle::try_current().ok().filter(|h| {
            matches!(h.runtime_flavor(), tokio::runtime::RuntimeFlavor::MultiThread)
                && h.id() != self.runtime_id
        });
        let Some(handle) = caller else { return (self.runtime.clone(), None) };
        let id = handle.id();
        if let Some(tag) = st.runtimes.get(&id).filter(|t| !t.is_gone()) {
            return (handle, Some(tag.clone()));
        }
        let tag = Arc::new(RuntimeTag::new(id));
        // Runtimes that shut down leave their tags behind (ids are never reused): drop them
        // here, where a new one comes, so short-lived runtimes do not pile up.
        st.runtimes.retain(|_, t| !t.is_gone());
        st.runtimes.insert(id, tag.clone());
        let (mark, closed) = (MarkGone(tag.clone()), self.closed.clone());
        handle.spawn(async move {
            let _mark = mark;
            closed.cancelled().await;
        });
        (handle, Some(tag))
    }

    /// The runtime whose I/O driver `meta`'s socket is registered with.
    fn runtime_of(&self, meta: &ConnMeta) -> tokio::runtime::Id {
        meta.runtime.as_ref().map_or(self.runtime_id, |t| t.id)
    }

    fn finish_establishment(self: &Arc<Self>, id: u32, result: Result<Established<E::Connection>>) {
        let hook_error = self.finish_locked(&mut self.state.lock(), id, result);
        if let (Some((e, generation)), Some(hook)) = (hook_error, &self.background_error) {
            hook(&e, generation);
        }
    }

    /// [`finish_establishment`](Self::finish_establishment) under the pool lock; gives the
    /// error of a failed background establishment, for the owner's hook.
    fn finish_locked(
        self: &Arc<Self>,
        st: &mut State<E::Connection>,
        id: u32,
        result: Result<Established<E::Connection>>,
    ) -> Option<(Error, u32)> {
        let mut hook_error = None;
        {
            // Gone: a clear with interrupt or a close already closed it and failed its waiter.
            let pending = st.pending.remove(&id)?;
            match result {
                Err(e) => {
                    if pending.waiter.is_none() {
                        // minPoolSize population failed: the spec hands the error to SDAM,
                        // which clears the pool. With no owner to do that, the pool clears
                        // itself (outside load-balanced mode, where pre-handshake errors are
                        // ignored); an owner gets the error and decides.
                        if self.background_error.is_none()
                            && self.establishment_error.is_none()
                            && !self.options.load_balanced()
                            && st.status == PoolState::Ready
                        {
                            self.clear_locked(st, None, false);
                        }
                        hook_error = Some((e.clone(), pending.generation));
                    }
                    pending.cancel.cancel();
                    self.emit(CmapEvent::ConnectionClosed {
                        address: self.address.clone(),
                        connection_id: id,
                        reason: ConnectionClosedReason::Error,
                        error: Some(e.to_string()),
                    });
                    if let Some((tx, _)) = pending.waiter {
                        let _ = tx.send(Err(e));
                    }
                    st.wake_head();
                }
                Ok(established) => {
                    let service_generation = match established.service_id {
                        Some(sid) => {
                            let g = st
                                .services
                                .entry(sid)
                                .or_insert(ServiceGeneration { generation: 0, connections: 0 });
                            g.connections += 1;
                            g.generation
                        }
                        None => 0,
                    };
                    let meta = Arc::new(ConnInfo {
                        id,
                        generation: pending.generation,
                        service_id: established.service_id,
                        service_generation,
                        cancel: pending.cancel,
                        runtime: pending.runtime,
                    });
                    self.emit(CmapEvent::ConnectionReady {
                        address: self.address.clone(),
                        connection_id: id,
                        duration: pending.created.elapsed(),
                    });
                    // Boxed once here; it stays boxed until it is closed.
                    let conn = Box::new(established.connection);
                    if st.is_stale(&meta) {
                        // The pool was cleared meanwhile: never hand out a stale connection.
                        let service_id = meta.service_id;
                        self.close_connection(st, &meta, conn, ConnectionClosedReason::Stale, None);
                        if let Some((tx, _)) = pending.waiter {
                            let _ = tx.send(Err(self.pool_cleared_error(service_id)));
                        }
                    } else if let Some((tx, purpose)) = pending.waiter {
                        st.in_use.insert(id, InUse { meta: meta.clone(), purpose });
                        let guard = self.make_guard(conn, meta.clone(), purpose);
                        if let Err(Ok(guard)) = tx.send(Ok(guard)) {
                            // The check-out gave up: the connection becomes available.
                            if let Some(conn) = guard.detach() {
                                st.in_use.remove(&id);
                                st.available.push_back(Idle { meta, conn, since: Instant::now() });
                            }
                        }
                    } else {
                        st.available.push_back(Idle { meta, conn, since: Instant::now() });
                        // More minPoolSize work may be possible now.
                        self.maintenance.notify_one();
                    }
                    st.wake_head();
                }
            }
        }
        hook_error
    }

    fn try_acquire(
        self: &Arc<Self>,
        st: &mut State<E::Connection>,
        purpose: CheckoutPurpose,
        deadline: Option<Instant>,
        may_create: bool,
    ) -> Acquired<E::Connection> {
        // The most recently used connection of the caller's runtime when there is one near
        // the back (see `RuntimeTag`), else the most recently used. With no caller runtime
        // registered every idle connection lives on the pool's runtime: nothing to prefer.
        let here = if st.runtimes.is_empty() {
            None
        } else {
            tokio::runtime::Handle::try_current().ok().map(|h| h.id())
        };
        if let Some(here) = here {
            let n = st.available.len();
            let back = st.available.back().map(|i| self.runtime_of(&i.meta));
            if back.is_some_and(|b| b != here) {
                let found = st.available.iter().rev().take(8).position(|i| self.runtime_of(&i.meta) == here);
                if let Some(from_back) = found {
                    st.available.swap(n - 1, n - 1 - from_back);
                }
            }
        }
        while let Some(idle) = st.available.pop_back() {
            if let Some(reason) = self.perished(st, &idle) {
                self.close_connection(st, &idle.meta, idle.conn, reason, None);
                continue;
            }
            st.in_use.insert(idle.meta.id, InUse { meta: idle.meta.clone(), purpose });
            return Acquired::Connection(self.make_guard(idle.conn, idle.meta, purpose));
        }
        if may_create && self.can_create(st) {
            let (tx, rx) = oneshot::channel();
            let deadline = earliest(
                deadline,
                self.options.connect_timeout().and_then(|t| Instant::now().checked_add(t)),
            );
            self.start_establishment(st, Some((tx, purpose)), deadline);
            return Acquired::Pending(rx);
        }
        Acquired::Nothing
    }

    fn wait_queue_timeout_error(&self, st: &State<E::Connection>, waited: Duration) -> Error {
        let message = if self.options.load_balanced() {
            let count = |p: CheckoutPurpose| st.in_use.values().filter(|u| u.purpose == p).count();
            format!(
                "Timeout waiting for connection from the connection pool. maxPoolSize: {}, \
                 connections in use by cursors: {}, connections in use by transactions: {}, \
                 connections in use by other operations: {}",
                self.options.max_pool_size(),
                count(CheckoutPurpose::Cursor),
                count(CheckoutPurpose::Transaction),
                count(CheckoutPurpose::Other),
            )
        } else {
            format!(
                "Timed out while checking out a connection from connection pool for {} after {} ms",
                self.address,
                waited.as_millis()
            )
        };
        Error::WaitQueueTimeout { address: self.address.clone(), message }
    }

    fn emit_failed(&self, reason: CheckOutFailedReason, error: &Error, started: Instant) {
        self.emit_with(|| CmapEvent::CheckOutFailed {
            address: self.address.clone(),
            reason,
            error: (reason == CheckOutFailedReason::ConnectionError).then(|| error.to_string()),
            duration: started.elapsed(),
        });
    }

    /// `CheckOutFailed` for a caller that gave up waiting: a timeout's event carries no
    /// error text, so none is formatted, and nothing is built unless someone takes it.
    fn emit_timed_out(&self, started: Instant) {
        self.emit_with(|| CmapEvent::CheckOutFailed {
            address: self.address.clone(),
            reason: CheckOutFailedReason::Timeout,
            error: None,
            duration: started.elapsed(),
        });
    }

    fn failed_reason(error: &Error) -> CheckOutFailedReason {
        match error {
            Error::PoolClosed { .. } => CheckOutFailedReason::PoolClosed,
            Error::WaitQueueTimeout { .. } => CheckOutFailedReason::Timeout,
            Error::WaitQueueFull { .. } => CheckOutFailedReason::WaitQueueFull,
            _ => CheckOutFailedReason::ConnectionError,
        }
    }

    async fn check_out(
        self: &Arc<Self>,
        deadline: Option<Instant>,
        purpose: CheckoutPurpose,
        wait_queue_timeout: bool,
    ) -> Result<PooledConnection<E::Connection>> {
        let started = Instant::now();
        let wait_queue_timeout = self.options.wait_queue_timeout().filter(|_| wait_queue_timeout);
        let wait_deadline = earliest(deadline, wait_queue_timeout.and_then(|t| started.checked_add(t)));
        let mut waiter: Option<WaiterGuard<E>> = None;
        let mut first = true;
        let receiver = loop {
            let shared = {
                let mut st = self.state.lock();
                if first {
                    first = false;
                    self.emit_with(|| CmapEvent::CheckOutStarted { address: self.address.clone() });
                }
                let evicted = waiter.as_ref().and_then(|w| w.shared.evicted.lock().take());
                let failure = match (evicted, st.status) {
                    (Some(e), _) => Some(e),
                    (None, PoolState::Closed) => Some(self.pool_closed_error()),
                    (None, PoolState::Paused) => Some(self.pool_cleared_error(None)),
                    (None, PoolState::Ready) => None,
                };
                if let Some(e) = failure {
                    return Err(self.fail_check_out(&mut st, waiter.take(), e, started));
                }
                // The head may take an idle connection or start one; the waiters behind it
                // only an idle connection there is one for each of them and those ahead (a
                // check-in wakes that many): check-ins reach several waiters at once, and
                // still in their order.
                let position = match &waiter {
                    None => st.queue.is_empty().then_some(0),
                    Some(w) => st.position(w.id, st.available.len().max(1)),
                };
                if let Some(position) = position {
                    let acquired = self.try_acquire(&mut st, purpose, deadline, position == 0);
                    if !matches!(acquired, Acquired::Nothing) {
                        if let Some(w) = waiter.take() {
                            // The wake below covers what is left.
                            st.remove_waiter(w.id, false);
                            w.disarm();
                        }
                        // Whatever is left (idle connections, establishment slots) is the
                        // next waiter's turn.
                        st.wake_head();
                    }
                    match acquired {
                        Acquired::Connection(mut conn) => {
                            conn.announced = true;
                            self.emit_with(|| CmapEvent::CheckedOut {
                                address: self.address.clone(),
                                connection_id: conn.id(),
                                duration: started.elapsed(),
                            });
                            return Ok(conn);
                        }
                        Acquired::Pending(rx) => break rx,
                        Acquired::Nothing => {}
                    }
                }
                match &waiter {
                    Some(w) => w.shared.clone(),
                    None => {
                        let w = self.enqueue(&mut st, started)?;
                        let shared = w.shared.clone();
                        waiter = Some(w);
                        shared
                    }
                }
            };
            let notified = shared.notify.notified();
            match wait_deadline {
                None => notified.await,
                Some(d) => {
                    if tokio::time::timeout_at(d, notified).await.is_err() {
                        waiter = self.wait_timed_out(waiter.take(), started)?;
                    }
                }
            }
        };
        // A caller that drops this future while its connection is being established still
        // gets its check-out closed by a CheckOutFailed event (one per CheckOutStarted).
        let abandoned = AbandonedCheckOut { inner: self.clone(), started, armed: true };
        let result = receiver.await;
        abandoned.disarm();
        self.established_for_check_out(result, started)
    }

    /// A check-out that failed (pool closed or cleared, or its waiter evicted): it leaves the
    /// queue, and `CheckOutFailed` is emitted.
    fn fail_check_out(
        &self,
        st: &mut State<E::Connection>,
        waiter: Option<WaiterGuard<E>>,
        e: Error,
        started: Instant,
    ) -> Error {
        if let Some(w) = waiter {
            let room = self.can_create(st);
            st.remove_waiter(w.id, room);
            w.disarm();
        }
        self.emit_failed(Self::failed_reason(&e), &e, started);
        e
    }

    /// Queues a check-out that has to wait, unless the wait queue is full.
    fn enqueue(self: &Arc<Self>, st: &mut State<E::Connection>, started: Instant) -> Result<WaiterGuard<E>> {
        if let Some(limit) = self.options.max_wait_queue_size() {
            if st.queue.len() >= limit {
                let e = Error::WaitQueueFull { address: self.address.clone(), limit };
                self.emit_failed(CheckOutFailedReason::WaitQueueFull, &e, started);
                return Err(e);
            }
        }
        st.next_waiter_id += 1;
        let id = st.next_waiter_id;
        let shared = Arc::new(WaiterShared { notify: Notify::new(), evicted: Mutex::new(None) });
        st.queue.insert(id, shared.clone());
        Ok(WaiterGuard { inner: self.clone(), id, shared, started, armed: true })
    }

    /// The wait ran out: the waiter leaves the queue with a timeout, unless it was evicted at
    /// the same moment (then it is handed back, and the loop reports why).
    fn wait_timed_out(
        &self,
        waiter: Option<WaiterGuard<E>>,
        started: Instant,
    ) -> Result<Option<WaiterGuard<E>>> {
        let mut st = self.state.lock();
        let Some(w) = waiter else { return Ok(None) };
        let room = self.can_create(&st);
        if st.remove_waiter(w.id, room) {
            w.disarm();
            let e = self.wait_queue_timeout_error(&st, started.elapsed());
            self.emit_failed(CheckOutFailedReason::Timeout, &e, started);
            return Err(e);
        }
        Ok(Some(w))
    }

    /// The end of a check-out that waited for a connection established for it.
    fn established_for_check_out(
        &self,
        result: std::result::Result<Result<PooledConnection<E::Connection>>, oneshot::error::RecvError>,
        started: Instant,
    ) -> Result<PooledConnection<E::Connection>> {
        let _st = self.state.lock();
        match result {
            Ok(Ok(mut conn)) => {
                conn.announced = true;
                self.emit_with(|| CmapEvent::CheckedOut {
                    address: self.address.clone(),
                    connection_id: conn.id(),
                    duration: started.elapsed(),
                });
                Ok(conn)
            }
            Ok(Err(e)) => {
                self.emit_failed(Self::failed_reason(&e), &e, started);
                Err(e)
            }
            Err(_) => {
                let e = Error::ConnectionClosed { address: self.address.clone() };
                self.emit_failed(CheckOutFailedReason::ConnectionError, &e, started);
                Err(e)
            }
        }
    }

    fn clear_locked(&self, st: &mut State<E::Connection>, service_id: Option<ObjectId>, interrupt: bool) {
        if st.status == PoolState::Closed {
            return;
        }
        let load_balanced = self.options.load_balanced();
        match (load_balanced, service_id) {
            (true, Some(sid)) => {
                let old = st.services.get_mut(&sid).map(|g| {
                    g.generation += 1;
                    g.generation - 1
                });
                self.emit(CmapEvent::PoolCleared {
                    address: self.address.clone(),
                    service_id: Some(sid),
                    interrupt_in_use_connections: interrupt,
                });
                if let (true, Some(old)) = (interrupt, old) {
                    for u in st.in_use.values() {
                        if u.meta.service_id == Some(sid) && u.meta.service_generation <= old {
                            u.meta.cancel.cancel();
                        }
                    }
                }
            }
            _ => {
                let old = st.generation;
                st.generation += 1;
                self.generation_hint.store(st.generation, Ordering::Release);
                let was_ready = st.status == PoolState::Ready;
                if !load_balanced {
                    st.status = PoolState::Paused;
                    self.status_hint.store(status_code(PoolState::Paused), Ordering::Release);
                }
                if load_balanced || was_ready {
                    self.emit(CmapEvent::PoolCleared {
                        address: self.address.clone(),
                        service_id: None,
                        interrupt_in_use_connections: interrupt,
                    });
                }
                if interrupt {
                    for u in st.in_use.values() {
                        if u.meta.generation <= old {
                            u.meta.cancel.cancel();
                        }
                    }
                    let mut ids: Vec<u32> =
                        st.pending.iter().filter(|(_, p)| p.generation <= old).map(|(id, _)| *id).collect();
                    ids.sort_unstable();
                    for id in ids {
                        let Some(p) = st.pending.remove(&id) else { continue };
                        p.cancel.cancel();
                        self.emit(CmapEvent::ConnectionClosed {
                            address: self.address.clone(),
                            connection_id: id,
                            reason: ConnectionClosedReason::Stale,
                            error: None,
                        });
                        if let Some((tx, _)) = p.waiter {
                            let _ = tx.send(Err(self.pool_cleared_error(None)));
                        }
                    }
                }
                if !load_balanced {
                    st.evict_waiters(&self.pool_cleared_error(None));
                }
                st.wake_head();
            }
        }
        // Close the now stale idle connections right away.
        self.maintenance.notify_one();
    }

    fn ready(&self) {
        let mut st = self.state.lock();
        if st.status == PoolState::Paused {
            st.status = PoolState::Ready;
            self.status_hint.store(status_code(PoolState::Ready), Ordering::Release);
            self.emit(CmapEvent::PoolReady { address: self.address.clone() });
            self.maintenance.notify_one();
        }
    }

    fn close(&self) {
        let mut st = self.state.lock();
        if st.status == PoolState::Closed {
            return;
        }
        st.status = PoolState::Closed;
        self.status_hint.store(status_code(PoolState::Closed), Ordering::Release);
        self.closed.cancel();
        while let Some(idle) = st.available.pop_front() {
            self.close_connection(&mut st, &idle.meta, idle.conn, ConnectionClosedReason::PoolClosed, None);
        }
        let mut ids: Vec<u32> = st.pending.keys().copied().collect();
        ids.sort_unstable();
        for id in ids {
            let Some(p) = st.pending.remove(&id) else { continue };
            p.cancel.cancel();
            self.emit(CmapEvent::ConnectionClosed {
                address: self.address.clone(),
                connection_id: id,
                reason: ConnectionClosedReason::PoolClosed,
                error: None,
            });
            if let Some((tx, _)) = p.waiter {
                let _ = tx.send(Err(self.pool_closed_error()));
            }
        }
        st.evict_waiters(&self.pool_closed_error());
        self.emit(CmapEvent::PoolClosed { address: self.address.clone() });
        self.maintenance.notify_one();
    }

    /// One background run: close perished idle connections, then start establishing
    /// connections up to minPoolSize (as many as maxConnecting allows now). False once the
    /// pool is closed.
    fn run_maintenance(self: &Arc<Self>) -> bool {
        let mut st = self.state.lock();
        if st.status == PoolState::Closed {
            return false;
        }
        let idle = std::mem::take(&mut st.available);
        for i in idle {
            match self.perished(&st, &i) {
                Some(reason) => self.close_connection(&mut st, &i.meta, i.conn, reason, None),
                None => st.available.push_back(i),
            }
        }
        if st.status == PoolState::Ready {
            while st.total() < self.options.min_pool_size() as usize && self.can_create(&st) {
                let deadline = self.options.connect_timeout().and_then(|t| Instant::now().checked_add(t));
                self.start_establishment(&mut st, None, deadline);
            }
        }
        true
    }

    fn stats(&self) -> PoolStats {
        Self::stats_of(&self.state.lock())
    }

    /// The stats if the lock is free now: what `Debug` shows, so that formatting a pool
    /// never waits (or deadlocks, under the lock's own holder).
    fn try_stats(&self) -> Option<PoolStats> {
        self.state.try_lock().map(|st| Self::stats_of(&st))
    }

    fn stats_of(st: &State<E::Connection>) -> PoolStats {
        let count = |p: CheckoutPurpose| st.in_use.values().filter(|u| u.purpose == p).count();
        PoolStats {
            state: st.status,
            total: st.total(),
            available: st.available.len(),
            pending: st.pending.len(),
            in_use: st.in_use.len(),
            in_use_cursors: count(CheckoutPurpose::Cursor),
            in_use_transactions: count(CheckoutPurpose::Transaction),
            in_use_other: count(CheckoutPurpose::Other),
            wait_queue: st.queue.len(),
            generation: st.generation,
        }
    }
}

impl<E: Establisher> ReturnTo<E::Connection> for Inner<E> {
    fn return_connection(&self, meta: ConnMeta, conn: Box<E::Connection>, announced: bool) {
        let mut st = self.state.lock();
        if st.in_use.remove(&meta.id).is_none() {
            return;
        }
        if announced {
            self.emit_with(|| CmapEvent::CheckedIn { address: self.address.clone(), connection_id: meta.id });
        }
        // A connection broken by a network error closes for the error even when that error
        // also cleared the pool; one a clear interrupted is stale.
        let reason = if st.status == PoolState::Closed {
            Some(ConnectionClosedReason::PoolClosed)
        } else if conn.is_closed() && !meta.cancel.is_cancelled() {
            Some(ConnectionClosedReason::Error)
        } else if st.is_stale(&meta) {
            Some(ConnectionClosedReason::Stale)
        } else if conn.is_closed() {
            Some(ConnectionClosedReason::Error)
        } else {
            None
        };
        match reason {
            Some(reason) => self.close_connection(&mut st, &meta, conn, reason, None),
            None => {
                st.available.push_back(Idle { meta, conn, since: Instant::now() });
                st.wake_for_idle();
            }
        }
    }

    fn set_purpose(&self, id: u32, purpose: CheckoutPurpose) {
        if let Some(u) = self.state.lock().in_use.get_mut(&id) {
            u.purpose = purpose;
        }
    }

    fn address(&self) -> &ServerAddress {
        &self.address
    }
}

/// Removes a check-out from the wait queue when its future is dropped while waiting.
struct WaiterGuard<E: Establisher> {
    inner: Arc<Inner<E>>,
    id: u64,
    shared: Arc<WaiterShared>,
    started: Instant,
    armed: bool,
}

impl<E: Establisher> WaiterGuard<E> {
    /// Drops the guard without touching the pool (the caller holds the lock).
    fn disarm(mut self) {
        self.armed = false;
    }
}

impl<E: Establisher> Drop for WaiterGuard<E> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let mut st = self.inner.state.lock();
        let room = self.inner.can_create(&st);
        st.remove_waiter(self.id, room);
        // The caller stopped waiting (its own timeout, most likely).
        self.inner.emit_timed_out(self.started);
    }
}

/// Emits `CheckOutFailed` when a check-out future is dropped while its connection is
/// being established (the caller gave up, most likely on its own deadline).
struct AbandonedCheckOut<E: Establisher> {
    inner: Arc<Inner<E>>,
    started: Instant,
    armed: bool,
}

impl<E: Establisher> AbandonedCheckOut<E> {
    fn disarm(mut self) {
        self.armed = false;
    }
}

impl<E: Establisher> Drop for AbandonedCheckOut<E> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        self.inner.emit_timed_out(self.started);
    }
}

struct Handle<E: Establisher> {
    inner: Arc<Inner<E>>,
}

impl<E: Establisher> Drop for Handle<E> {
    fn drop(&mut self) {
        self.inner.close();
    }
}

/// A CMAP connection pool for one server. Cheap to clone; the pool closes when the last
/// clone is dropped (checked-out connections keep working and are closed at check-in).
pub struct Pool<E: Establisher> {
    handle: Arc<Handle<E>>,
}

impl<E: Establisher> Clone for Pool<E> {
    fn clone(&self) -> Self {
        Pool { handle: self.handle.clone() }
    }
}

impl<E: Establisher> std::fmt::Debug for Pool<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("address", &self.handle.inner.address)
            .field("stats", &self.handle.inner.try_stats())
            .finish()
    }
}

impl<E: Establisher> Pool<E> {
    /// A builder for a pool to `address` that opens connections with `establisher`.
    pub fn builder(address: ServerAddress, establisher: E) -> PoolBuilder<E> {
        PoolBuilder {
            address,
            establisher,
            options: PoolOptions::default(),
            handler: None,
            background_error: None,
            establishment_error: None,
            owner_maintains: false,
            topology_id: None,
        }
    }

    fn inner(&self) -> &Arc<Inner<E>> {
        &self.handle.inner
    }

    /// The server.
    pub fn address(&self) -> &ServerAddress {
        &self.inner().address
    }

    /// The pool's options.
    pub fn options(&self) -> &PoolOptions {
        &self.inner().options
    }

    /// Checks out a connection: an idle one, or a new one once maxPoolSize and maxConnecting
    /// allow, in FIFO order with other check-outs.
    ///
    /// `deadline` is the caller's limit (the earliest of timeoutMS, waitQueueTimeoutMS and
    /// the remaining server selection time); the pool's own waitQueueTimeout also applies to
    /// waiting in the queue. A new connection's establishment is limited by connectTimeout
    /// and by `deadline`.
    ///
    /// Errors: [`Error::PoolClosed`], [`Error::PoolCleared`] (paused or cleared while
    /// waiting), [`Error::WaitQueueTimeout`], or the establishment error.
    pub async fn check_out(
        &self,
        deadline: Option<Instant>,
        purpose: CheckoutPurpose,
    ) -> Result<PooledConnection<E::Connection>> {
        self.inner().check_out(deadline, purpose, true).await
    }

    /// [`check_out`](Self::check_out) for an operation under a client-side operations
    /// timeout (CSOT): only `deadline` limits the wait (`None`: no limit), the pool's
    /// waitQueueTimeout is ignored. Establishment still uses min(connectTimeout, `deadline`).
    pub async fn check_out_within(
        &self,
        deadline: Option<Instant>,
        purpose: CheckoutPurpose,
    ) -> Result<PooledConnection<E::Connection>> {
        self.inner().check_out(deadline, purpose, false).await
    }

    /// Clears the pool (CMAP clear). Outside load-balanced mode: increments the generation,
    /// pauses the pool and fails every waiting check-out with [`Error::PoolCleared`]. In
    /// load-balanced mode: increments the generation of `service_id` (or the whole pool's
    /// for `None`), without pausing or failing waiters. With `interrupt_in_use_connections`,
    /// the cancellation tokens of the affected checked-out and pending connections are
    /// cancelled so their I/O stops.
    pub fn clear(&self, service_id: Option<ObjectId>, interrupt_in_use_connections: bool) {
        let mut st = self.inner().state.lock();
        self.inner().clear_locked(&mut st, service_id, interrupt_in_use_connections);
    }

    /// One maintenance pass: closes perished idle connections (maxIdleTimeMS, stale
    /// generations), then starts establishing connections up to minPoolSize (as many as
    /// maxConnecting allows now). False once the pool is closed. Run by the pool's own task,
    /// or by its owner (see [`PoolBuilder::maintained_by_owner`]).
    pub fn maintain(&self) -> bool {
        self.inner().run_maintenance()
    }

    /// Completes when the pool wants a maintenance pass before the next interval (it became
    /// ready, was cleared or closed, or a background establishment ended).
    pub async fn maintenance_wanted(&self) {
        self.inner().maintenance.notified().await;
    }

    /// Marks the pool ready (no-op unless paused).
    pub fn ready(&self) {
        self.inner().ready();
    }

    /// Closes the pool: idle and pending connections are closed, waiters fail with
    /// [`Error::PoolClosed`], later check-outs too. Idempotent.
    pub fn close(&self) {
        self.inner().close();
    }

    /// The pool's state.
    pub fn state(&self) -> PoolState {
        status_of(self.inner().status_hint.load(Ordering::Acquire))
    }

    /// The current generation: of `service_id` in load-balanced mode (0 for a service with no
    /// connection), of the pool otherwise. Compare with [`PooledConnection::generation`]
    /// before clearing after an error.
    pub fn generation(&self, service_id: Option<ObjectId>) -> u32 {
        match service_id {
            Some(sid) if self.options().load_balanced() => {
                self.inner().state.lock().services.get(&sid).map_or(0, |g| g.generation)
            }
            _ => self.inner().generation_hint.load(Ordering::Acquire),
        }
    }

    /// A snapshot of the pool's counters.
    pub fn stats(&self) -> PoolStats {
        self.inner().stats()
    }
}

/// Builds a [`Pool`].
#[must_use]
pub struct PoolBuilder<E: Establisher> {
    address: ServerAddress,
    topology_id: Option<String>,
    establisher: E,
    options: PoolOptions,
    handler: Option<Arc<dyn CmapEventHandler>>,
    background_error: Option<BackgroundErrorHook>,
    establishment_error: Option<EstablishmentErrorHook>,
    owner_maintains: bool,
}

impl<E: Establisher> PoolBuilder<E> {
    /// The owner runs the background maintenance ([`Pool::maintain`] every
    /// [`PoolOptions::maintenance_interval`] and when [`Pool::maintenance_wanted`] fires)
    /// instead of a task of the pool's own: an actor that owns the pool's background work.
    pub fn maintained_by_owner(mut self) -> Self {
        self.owner_maintains = true;
        self
    }

    /// The pool options (default: [`PoolOptions::default`]).
    pub fn options(mut self, options: PoolOptions) -> Self {
        self.options = options;
        self
    }

    /// Receives every CMAP event of the pool.
    pub fn event_handler(mut self, handler: Arc<dyn CmapEventHandler>) -> Self {
        self.handler = Some(handler);
        self
    }

    /// The id of the topology that owns the pool: every log message of the pool carries it
    /// as `topologyId`, so the messages of several clients in one process can be told apart.
    pub fn topology_id(mut self, id: impl Into<String>) -> Self {
        self.topology_id = Some(id.into());
        self
    }

    /// Hands errors of background minPoolSize establishment, with the failed connection's
    /// generation, to the owner (SDAM error handling), which then clears the pool itself.
    /// Without a hook the pool clears itself on such an error (outside load-balanced mode).
    pub fn on_background_error(mut self, hook: BackgroundErrorHook) -> Self {
        self.background_error = Some(hook);
        self
    }

    /// Hands every establishment error (background or for a check-out), with the failed
    /// connection's generation, to the owner, and awaits its handling before emitting the
    /// connection's `ConnectionClosed`, so a clear it causes is reported first. An owner
    /// with this hook clears the pool itself, as with [`Self::on_background_error`].
    pub fn on_establishment_error(mut self, hook: EstablishmentErrorHook) -> Self {
        self.establishment_error = Some(hook);
        self
    }

    /// Creates the pool, paused, and emits `PoolCreated`. Must be called inside a tokio
    /// runtime, which runs the background maintenance task and the establishments.
    pub fn build(self) -> Result<Pool<E>> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| Error::InvalidOptions {
            message: "a connection pool must be created inside a tokio runtime".into(),
        })?;
        let maintenance = Arc::new(Notify::new());
        let inner = Arc::new(Inner {
            address: self.address,
            options: self.options,
            establisher: self.establisher,
            background_error: self.background_error,
            establishment_error: self.establishment_error,
            state: Locked::new(
                State {
                    status: PoolState::Paused,
                    generation: 0,
                    services: HashMap::new(),
                    next_connection_id: 0,
                    next_waiter_id: 0,
                    available: VecDeque::new(),
                    pending: HashMap::new(),
                    in_use: HashMap::new(),
                    queue: BTreeMap::new(),
                    runtimes: HashMap::new(),
                },
                Events::new(self.handler, self.topology_id),
            ),
            status_hint: AtomicU8::new(status_code(PoolState::Paused)),
            generation_hint: AtomicU32::new(0),
            maintenance: maintenance.clone(),
            runtime_id: runtime.id(),
            runtime,
            closed: CancellationToken::new(),
        });
        inner.emit(CmapEvent::PoolCreated { address: inner.address.clone(), options: inner.options.clone() });
        let own_task = !self.owner_maintains;
        if let Some(interval) = inner.options.maintenance_interval().filter(|_| own_task) {
            let weak = Arc::downgrade(&inner);
            inner.runtime.spawn(async move {
                loop {
                    tokio::select! {
                        _ = tokio::time::sleep(interval) => {}
                        _ = maintenance.notified() => {}
                    }
                    let Some(inner) = weak.upgrade() else { break };
                    if !inner.run_maintenance() {
                        break;
                    }
                }
            });
        }
        Ok(Pool { handle: Arc::new(Handle { inner }) })
    }
}
