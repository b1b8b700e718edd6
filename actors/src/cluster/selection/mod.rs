//! The selection actor and its [`Selector`] handle.
//!
//! A selection that the current snapshot can serve never touches the mailbox (the fast
//! path); the rest wait in the actor's mailbox as waiters, re-evaluated on every snapshot.
//!
//! The pipeline follows the spec's algorithm: suitability (with deprioritized servers left
//! out unless nothing else is suitable), pool readiness (a paused pool is never returned),
//! the custom selector (a function, or an actor asked with [`FilterServers`]), the latency
//! window, then the power of two choices by operation count.
//!
//! Waiters are re-evaluated in arrival order on every published snapshot; when one cannot be
//! served the actor asks the monitors for an immediate check, at most once per snapshot.
//! Each waiter's deadline is min(started + serverSelectionTimeoutMS, the request's
//! deadline); a timer fails the expired ones with the spec's error.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use futures_util::future::Either;
use pool::cmap::PoolState;
use pool::cmap::PooledConnection;
use pool::connection::Connection;
use protocol::sdam::{ServerDescription, TopologyDescription};
use protocol::ServerAddress;
use selection::{ReadPreference, SelectionQuery, ServerSelector, Servers};
use tokio::sync::{oneshot, watch};
use tokio::time::Instant;

use crate::cluster::messages::RequestImmediateCheck;
use crate::cluster::selection_criteria::{PredicateSelector, SelectionCriteria};
use crate::cluster::snapshot::{Remembered, ServerHandle, TopologySnapshot};
use crate::cluster::topology::{Topology, TopologyActor};
use crate::error::{Error, Result};

/// What an operation needs from its server: a read with a read preference, a read from a
/// server an application predicate accepts, or a write.
#[derive(Debug, Clone, PartialEq)]
pub enum Criteria {
    /// A read with this read preference.
    Read(ReadPreference),
    /// A read from a data-bearing server the predicate accepts.
    Predicate(PredicateSelector),
    /// A write (or any operation that must go to a writable server).
    Write,
}

impl From<SelectionCriteria> for Criteria {
    fn from(criteria: SelectionCriteria) -> Self {
        match criteria {
            SelectionCriteria::ReadPreference(rp) => Criteria::Read(rp),
            SelectionCriteria::Predicate(p) => Criteria::Predicate(PredicateSelector(p)),
        }
    }
}

/// One selection request: owned, so it can wait in the mailbox.
#[derive(Debug, Clone)]
pub struct SelectionRequest {
    /// Read or write.
    pub criteria: Criteria,
    /// Servers a previous attempt of this operation failed on (retries).
    pub deprioritized: Vec<ServerAddress>,
    /// The operation's command name, for the log messages (`find`, `insert`, ...).
    pub operation: Cow<'static, str>,
    /// The operation id shared by an operation's attempts, for the log messages.
    pub operation_id: Option<i64>,
    /// The operation's overall deadline (CSOT `timeoutMS`), if any: selection waits at most
    /// min(serverSelectionTimeoutMS, deadline - now).
    pub deadline: Option<Instant>,
}

impl SelectionRequest {
    /// A request for `criteria` on behalf of `operation`, with no deadline.
    pub fn new(criteria: Criteria, operation: impl Into<Cow<'static, str>>) -> Self {
        SelectionRequest {
            criteria,
            deprioritized: Vec::new(),
            operation: operation.into(),
            operation_id: None,
            deadline: None,
        }
    }
}

/// Asks a custom selector actor to filter the suitable servers. It runs in the spec's place
/// for the application selector: after suitability and deprioritization, before the latency
/// window. The reply is the addresses to keep (any not among the candidates are ignored).
#[derive(Debug, Clone, Message)]
#[rtype(result = "Vec<ServerAddress>")]
pub struct FilterServers {
    /// The snapshot the selection runs on.
    pub topology: Arc<TopologySnapshot>,
    /// The suitable servers.
    pub candidates: Vec<Arc<ServerDescription>>,
    /// What the operation asked for.
    pub criteria: Criteria,
}

/// A user extension of selection: an actor, or a function.
#[derive(Clone)]
pub enum CustomSelector {
    /// An actor that answers [`FilterServers`].
    Actor(Recipient<FilterServers>),
    /// A synchronous selector (keeps the fast path synchronous).
    Function(Arc<dyn ServerSelector>),
}

impl std::fmt::Debug for CustomSelector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CustomSelector::Actor(_) => f.write_str("CustomSelector::Actor"),
            CustomSelector::Function(_) => f.write_str("CustomSelector::Function"),
        }
    }
}

/// Options of a [`Selector`].
#[derive(Debug, Clone)]
pub struct SelectorOptions {
    /// serverSelectionTimeoutMS (default 30 s).
    pub server_selection_timeout: Duration,
    /// The application's selector, if any.
    pub custom_selector: Option<CustomSelector>,
    /// Admission control: the most operations waiting for a suitable server at once; past
    /// it a selection fails at once with [`ErrorKind::Overloaded`](crate::error::ErrorKind::Overloaded). `None` (the default, as in
    /// the official drivers): no limit. Selections the current snapshot serves never wait.
    pub max_waiters: Option<usize>,
}

impl Default for SelectorOptions {
    fn default() -> Self {
        SelectorOptions {
            server_selection_timeout: Duration::from_secs(30),
            custom_selector: None,
            max_waiters: None,
        }
    }
}

/// A selected server, from the snapshot selection ran on, counted in the server's
/// `operationCount` (the spec's) until dropped. It holds one `Arc` (the snapshot) and finds
/// the description and handles in it, so that selecting and dropping cost one reference count
/// each, not three; counting wakes nobody.
#[derive(Debug)]
pub struct SelectedServer {
    snapshot: Arc<TopologySnapshot>,
    /// The server's place in the snapshot's index.
    entry: usize,
}

impl SelectedServer {
    /// Counts one more operation on the server at `entry` of `snapshot`.
    fn new(snapshot: Arc<TopologySnapshot>, entry: usize) -> Self {
        let (_, handle) = snapshot.entry(entry);
        handle.operations.fetch_add(1, Ordering::Relaxed);
        handle.operations_gauge.increment(1.0);
        SelectedServer { snapshot, entry }
    }

    /// The server's address (its description's; borrowed, so selecting allocates nothing).
    pub fn address(&self) -> &ServerAddress {
        &self.description().address
    }

    /// Its description in [`Self::snapshot`].
    pub fn description(&self) -> &Arc<ServerDescription> {
        self.snapshot.entry(self.entry).0
    }

    /// The snapshot selection ran on (CSOT takes minRTT from it).
    pub fn snapshot(&self) -> &Arc<TopologySnapshot> {
        &self.snapshot
    }

    /// Its pool and RTT handles.
    pub fn handle(&self) -> &Arc<ServerHandle> {
        self.snapshot.entry(self.entry).1
    }
}

impl Drop for SelectedServer {
    fn drop(&mut self) {
        let handle = self.handle();
        handle.operations.fetch_sub(1, Ordering::Relaxed);
        handle.operations_gauge.decrement(1.0);
    }
}

/// Queues a selection that the current snapshot cannot serve (the slow path).
#[derive(Debug, Message)]
#[rtype(result = "Result<SelectedServer>")]
pub struct SelectServer {
    /// The request.
    pub request: SelectionRequest,
    /// When the request started (for the timeout and the logged duration).
    pub started: Instant,
}

/// Identifies a pinned connection (a load-balanced cursor or transaction).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PinId(pub u64);

/// Pins (or returns after use) a connection under `pin`.
#[derive(Debug, Message)]
#[rtype(result = "Result<()>")]
pub struct PinConnection {
    /// The pin.
    pub pin: PinId,
    /// The connection to keep.
    pub connection: PooledConnection<Connection>,
}

/// Takes a pinned connection for one command; give it back with [`PinConnection`].
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "Result<Option<PooledConnection<Connection>>>")]
pub struct TakePinned {
    /// The pin.
    pub pin: PinId,
}

/// Unpins: the connection goes back to its pool.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "()")]
pub struct Unpin {
    /// The pin.
    pub pin: PinId,
}

const LOG_TARGET: &str = "mongo_actors::server_selection";

/// Shows an actor selector in the log's `selector` string; never filters (the actor does).
struct ActorSelectorMarker;

impl ServerSelector for ActorSelectorMarker {
    fn filter<'a>(
        &self,
        _topology: &'a TopologyDescription,
        suitable: Vec<&'a Arc<ServerDescription>>,
    ) -> Vec<&'a Arc<ServerDescription>> {
        suitable
    }

    fn describe(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("custom selector actor")
    }
}

static ACTOR_SELECTOR: ActorSelectorMarker = ActorSelectorMarker;

/// The pure criteria of a request, without the custom selector (it runs after readiness).
fn base_criteria(request: &SelectionRequest) -> SelectionQuery<'_> {
    let criteria = match &request.criteria {
        Criteria::Read(rp) => SelectionQuery::read(rp),
        Criteria::Predicate(p) => SelectionQuery::any(p),
        Criteria::Write => SelectionQuery::write(),
    };
    criteria.with_deprioritized(&request.deprioritized)
}

/// The criteria as logged and named in errors: with the custom selector.
fn full_criteria<'a>(
    request: &'a SelectionRequest,
    custom: Option<&'a CustomSelector>,
) -> SelectionQuery<'a> {
    let criteria = base_criteria(request);
    match custom {
        Some(CustomSelector::Function(f)) => criteria.with_selector(f.as_ref()),
        Some(CustomSelector::Actor(_)) => criteria.with_selector(&ACTOR_SELECTOR),
        None => criteria,
    }
}

fn pool_ready(snapshot: &TopologySnapshot, description: &Arc<ServerDescription>) -> bool {
    snapshot.handle_of(description).is_some_and(|h| h.pool.state() == PoolState::Ready)
}

/// What the snapshot remembers for the request's criteria, if they are common ones (no
/// deprioritized server, no tag set, no maximum staleness); `None` also when validation fails
/// (the full path reports it).
fn remembered<'a>(snapshot: &'a TopologySnapshot, request: &SelectionRequest) -> Option<&'a Remembered> {
    if !request.deprioritized.is_empty() {
        return None;
    }
    let read = match &request.criteria {
        Criteria::Read(rp) => Some(rp),
        Criteria::Predicate(_) => return None,
        Criteria::Write => None,
    };
    snapshot.remembered(crate::cluster::snapshot::suitable_slot(read)?, |s| {
        selection::suitable_servers(&s.description, &base_criteria(request)).ok()
    })
}

/// The suitable servers whose pools are ready, from what the snapshot remembers.
fn ready_of<'a>(snapshot: &'a TopologySnapshot, remembered: &Remembered) -> Servers<'a> {
    let mut servers = Servers::new();
    for &entry in remembered.suitable.iter() {
        let (description, handle) = snapshot.entry(usize::from(entry));
        if handle.pool.state() == PoolState::Ready {
            servers.push(description);
        }
    }
    servers
}

/// The fast path's whole selection when the snapshot remembers the criteria and every
/// suitable pool is ready: the remembered latency window, then the power of two choices by
/// operation count, reading the handles by entry (no address lookup). `None`: take the full
/// path.
fn from_window(snapshot: &TopologySnapshot, remembered: &Remembered) -> Option<Option<usize>> {
    let ready = |&entry: &u16| snapshot.entry(usize::from(entry)).1.pool.state() == PoolState::Ready;
    if !remembered.suitable.iter().all(ready) {
        return None;
    }
    let count = |entry: u16| snapshot.entry(usize::from(entry)).1.operations.load(Ordering::Relaxed);
    let window = &remembered.window;
    let chosen = match window.len() {
        0 => None,
        1 => Some(window[0]),
        _ => selection::with_thread_rng(|rng| selection::choose_of_two(window, count, rng)),
    };
    Some(chosen.map(usize::from))
}

/// Steps 2 to 4 up to the actor selector: validation, suitability with deprioritization,
/// pool readiness, then the function selector if there is one.
fn candidates<'a>(
    snapshot: &'a TopologySnapshot,
    request: &SelectionRequest,
    custom: Option<&CustomSelector>,
) -> selection::Result<Servers<'a>> {
    let mut servers = match remembered(snapshot, request) {
        Some(remembered) => ready_of(snapshot, remembered),
        None => {
            let mut servers = selection::suitable_servers(&snapshot.description, &base_criteria(request))?;
            servers.retain(|s| pool_ready(snapshot, s));
            servers
        }
    };
    if let (Some(CustomSelector::Function(f)), false) = (custom, servers.is_empty()) {
        servers = f.filter(&snapshot.description, servers.into_vec()).into_iter().collect();
    }
    Ok(servers)
}

/// The latency window and the power of two choices by operation count.
fn choose<'a>(
    snapshot: &'a TopologySnapshot,
    mut servers: Servers<'a>,
) -> Option<&'a Arc<ServerDescription>> {
    selection::in_latency_window(&snapshot.description, &mut servers);
    let counts = |a: &ServerAddress| snapshot.handle(a).map_or(0, |h| h.operations.load(Ordering::Relaxed));
    selection::with_thread_rng(|rng| selection::choose_in_window(&servers, &counts, rng))
}

/// The chosen server, counted.
fn selected(
    snapshot: &Arc<TopologySnapshot>,
    description: &Arc<ServerDescription>,
) -> Option<SelectedServer> {
    Some(SelectedServer::new(snapshot.clone(), snapshot.entry_of(description)?))
}

/// Keeps the servers the selector actor answered with.
fn keep(servers: &mut Servers<'_>, addresses: &[ServerAddress]) {
    servers.retain(|s| addresses.contains(&s.address));
}

fn owned(servers: &Servers<'_>) -> Vec<Arc<ServerDescription>> {
    servers.iter().map(|s| Arc::clone(s)).collect()
}

fn selector_stopped() -> Error {
    Error::stopped("custom selector")
}

/// The spec's "Server selection failed" message, for any error (`selection::log` has it for
/// `selection::Error` only).
fn log_failed(
    topology_id: &str,
    request: &SelectionRequest,
    criteria: &SelectionQuery<'_>,
    topology: &TopologyDescription,
    failure: &Error,
) {
    tracing::debug!(
        target: LOG_TARGET,
        message = "Server selection failed",
        topologyId = topology_id,
        operation = &*request.operation,
        operationId = request.operation_id,
        selector = %criteria,
        topologyDescription = %selection::TopologySummary(topology),
        failure = %failure,
    );
}

fn log_outcome(
    topology_id: &str,
    request: &SelectionRequest,
    custom: Option<&CustomSelector>,
    topology: &TopologyDescription,
    outcome: &Result<SelectedServer>,
) {
    if !tracing::enabled!(target: LOG_TARGET, tracing::Level::DEBUG) {
        return;
    }
    let criteria = full_criteria(request, custom);
    match outcome {
        Ok(s) => selection::log::selection_succeeded(
            Some(topology_id),
            &request.operation,
            request.operation_id,
            &criteria,
            topology,
            s.address(),
        ),
        Err(e) => log_failed(topology_id, request, &criteria, topology, e),
    }
}

fn log_waiting(
    topology_id: &str,
    request: &SelectionRequest,
    custom: Option<&CustomSelector>,
    topology: &TopologyDescription,
    deadline: Instant,
) {
    let remaining = deadline.saturating_duration_since(Instant::now()).as_millis();
    selection::log::waiting_for_suitable_server(
        Some(topology_id),
        &request.operation,
        request.operation_id,
        &full_criteria(request, custom),
        topology,
        Some(u64::try_from(remaining).unwrap_or(u64::MAX)),
    );
}

/// Records `mongo_actors.server_selection.duration` (literal labels: no allocation).
fn record_duration(started: Instant, succeeded: bool, fast: bool) {
    let seconds = started.elapsed().as_secs_f64();
    const NAME: &str = crate::observe::metrics::SERVER_SELECTION_DURATION;
    match (succeeded, fast) {
        (true, true) => metrics::histogram!(NAME, "outcome" => "succeeded", "path" => "fast").record(seconds),
        (false, true) => metrics::histogram!(NAME, "outcome" => "failed", "path" => "fast").record(seconds),
        (true, false) => {
            metrics::histogram!(NAME, "outcome" => "succeeded", "path" => "waiter").record(seconds)
        }
        (false, false) => {
            metrics::histogram!(NAME, "outcome" => "failed", "path" => "waiter").record(seconds)
        }
    }
}

/// min(started + serverSelectionTimeoutMS, the request's deadline).
fn deadline_of(started: Instant, timeout: Duration, request: &SelectionRequest) -> Instant {
    let by_timeout =
        started.checked_add(timeout).unwrap_or_else(|| started + Duration::from_secs(86_400 * 365));
    request.deadline.map_or(by_timeout, |d| d.min(by_timeout))
}

fn timeout_error(
    snapshot: &TopologySnapshot,
    request: &SelectionRequest,
    custom: Option<&CustomSelector>,
    started: Instant,
    deadline: Instant,
) -> Error {
    Error::from(selection::Error::selection_timeout(
        &snapshot.description,
        &full_criteria(request, custom),
        deadline.saturating_duration_since(started),
    ))
}

/// A request waiting in the actor.
struct Waiter {
    id: u64,
    request: SelectionRequest,
    started: Instant,
    deadline: Instant,
    reply: oneshot::Sender<Result<SelectedServer>>,
    /// The snapshot sequence it was last evaluated on.
    evaluated: Option<u64>,
    /// A selector actor is filtering for it.
    filtering: bool,
    /// "Waiting for suitable server" was logged for its operation.
    logged_waiting: bool,
}

/// Queues a request the caller's fast path could not serve (it logged "started" and
/// "waiting" already).
struct EnqueueWaiter {
    id: u64,
    request: SelectionRequest,
    started: Instant,
    deadline: Instant,
    reply: oneshot::Sender<Result<SelectedServer>>,
}

impl Message for EnqueueWaiter {
    type Result = ();
}

/// A waiter's caller went away (its future was dropped): it leaves the queue at once.
struct WaiterGone(u64);

impl Message for WaiterGone {
    type Result = ();
}

/// Stops the actor ([`Selector::close`]).
struct CloseSelector;

impl Message for CloseSelector {
    type Result = ();
}

/// The selection actor: holds the waiters and the pinned connections.
pub struct SelectionActor {
    topology: Addr<TopologyActor>,
    /// The latest snapshot is always read from here; the stream only wakes the actor.
    receiver: watch::Receiver<Arc<TopologySnapshot>>,
    options: Arc<SelectorOptions>,
    /// By id, which callers take in arrival order: the first entry waited longest.
    waiters: BTreeMap<u64, Waiter>,
    /// Waiter ids, shared with the [`Selector`] handles (which enqueue with their own ids, so
    /// a caller that goes away can name its waiter).
    ids: Arc<AtomicU64>,
    /// The snapshot sequence an immediate check was last requested for.
    checked: Option<u64>,
    timer: Option<(Instant, SpawnHandle)>,
    /// The waiters gauge's share of this actor.
    reported_waiters: usize,
    pins: HashMap<PinId, PooledConnection<Connection>>,
    /// The topology's id, in every selection log message (`topologyId`).
    topology_id: Arc<str>,
}

impl std::fmt::Debug for SelectionActor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SelectionActor")
            .field("waiters", &self.waiters.len())
            .field("pins", &self.pins.len())
            .finish_non_exhaustive()
    }
}

impl SelectionActor {
    fn new(topology: &Topology, options: Arc<SelectorOptions>, ids: Arc<AtomicU64>) -> Self {
        SelectionActor {
            ids,
            topology: topology.actor().clone(),
            receiver: topology.watch(),
            options,
            waiters: BTreeMap::new(),
            checked: None,
            timer: None,
            reported_waiters: 0,
            pins: HashMap::new(),
            topology_id: topology.id().0.to_string().into(),
        }
    }

    fn push_waiter(
        &mut self,
        id: u64,
        request: SelectionRequest,
        started: Instant,
        deadline: Instant,
        logged_waiting: bool,
        reply: oneshot::Sender<Result<SelectedServer>>,
    ) {
        self.waiters.insert(
            id,
            Waiter {
                id,
                request,
                started,
                deadline,
                reply,
                evaluated: None,
                filtering: false,
                logged_waiting,
            },
        );
    }

    fn answer(&self, waiter: Waiter, topology: &TopologyDescription, outcome: Result<SelectedServer>) {
        log_outcome(
            &self.topology_id,
            &waiter.request,
            self.options.custom_selector.as_ref(),
            topology,
            &outcome,
        );
        record_duration(waiter.started, outcome.is_ok(), false);
        // A caller that gave up drops the reply, and with it the guard.
        let _ = waiter.reply.send(outcome);
    }

    /// One more snapshot could not serve a waiter: log once per operation, ask for a check
    /// once per snapshot.
    fn unserved(&mut self, mut waiter: Waiter, snapshot: &TopologySnapshot) {
        if !waiter.logged_waiting {
            waiter.logged_waiting = true;
            log_waiting(
                &self.topology_id,
                &waiter.request,
                self.options.custom_selector.as_ref(),
                &snapshot.description,
                waiter.deadline,
            );
        }
        self.waiters.insert(waiter.id, waiter);
        if self.checked != Some(snapshot.sequence) {
            self.checked = Some(snapshot.sequence);
            self.topology.do_send(RequestImmediateCheck);
        }
    }

    /// Re-evaluates, in order, the waiters not yet evaluated on the current snapshot.
    fn evaluate(&mut self, ctx: &mut Context<Self>) {
        let snapshot = self.receiver.borrow().clone();
        if snapshot.closed {
            self.fail_all(|| Error::stopped("topology"));
            ctx.stop();
            return;
        }
        let now = Instant::now();
        let custom = self.options.custom_selector.clone();
        for (_, waiter) in std::mem::take(&mut self.waiters) {
            self.evaluate_one(waiter, &snapshot, now, custom.as_ref(), ctx);
        }
        self.after_change(ctx);
    }

    /// Evaluates one waiter on `snapshot`: answers it, or puts it back.
    fn evaluate_one(
        &mut self,
        mut waiter: Waiter,
        snapshot: &Arc<TopologySnapshot>,
        now: Instant,
        custom: Option<&CustomSelector>,
        ctx: &mut Context<Self>,
    ) {
        if waiter.reply.is_closed() {
            return;
        }
        if waiter.filtering || waiter.evaluated == Some(snapshot.sequence) {
            self.waiters.insert(waiter.id, waiter);
            return;
        }
        waiter.evaluated = Some(snapshot.sequence);
        let servers = match candidates(snapshot, &waiter.request, custom) {
            Ok(s) => s,
            Err(e) => {
                self.answer(waiter, &snapshot.description, Err(Error::from(e)));
                return;
            }
        };
        if let (Some(CustomSelector::Actor(recipient)), false) = (custom, servers.is_empty()) {
            waiter.filtering = true;
            self.spawn_filter(ctx, &waiter, recipient.clone(), snapshot, owned(&servers));
            self.waiters.insert(waiter.id, waiter);
        } else if let Some(chosen) = choose(snapshot, servers).and_then(|sd| selected(snapshot, sd)) {
            self.answer(waiter, &snapshot.description, Ok(chosen));
        } else if now >= waiter.deadline {
            let e = timeout_error(snapshot, &waiter.request, custom, waiter.started, waiter.deadline);
            self.answer(waiter, &snapshot.description, Err(e));
        } else {
            self.unserved(waiter, snapshot);
        }
    }

    /// Asks the selector actor, without blocking this actor; the reply is checked against
    /// the state then.
    fn spawn_filter(
        &mut self,
        ctx: &mut Context<Self>,
        waiter: &Waiter,
        recipient: Recipient<FilterServers>,
        snapshot: &Arc<TopologySnapshot>,
        candidates: Vec<Arc<ServerDescription>>,
    ) {
        let id = waiter.id;
        let snapshot = snapshot.clone();
        let message = FilterServers {
            topology: snapshot.clone(),
            candidates,
            criteria: waiter.request.criteria.clone(),
        };
        let fut = async move { recipient.send(message).await };
        ctx.spawn(fut.into_actor(self).map(move |reply, act, ctx| act.filtered(id, &snapshot, reply, ctx)));
    }

    fn filtered(
        &mut self,
        id: u64,
        snapshot: &Arc<TopologySnapshot>,
        reply: std::result::Result<Vec<ServerAddress>, MailboxError>,
        ctx: &mut Context<Self>,
    ) {
        // Expired or abandoned meanwhile: nothing to do.
        let Some(mut waiter) = self.waiters.remove(&id) else { return };
        waiter.filtering = false;
        let addresses = match reply {
            Ok(a) => a,
            Err(_) => {
                self.answer(waiter, &snapshot.description, Err(selector_stopped()));
                self.report_waiters();
                return;
            }
        };
        let current = self.receiver.borrow().sequence;
        if current != snapshot.sequence {
            // A newer snapshot arrived during the await: evaluate on it instead, in order.
            self.waiters.insert(id, waiter);
            self.evaluate(ctx);
            return;
        }
        // Pool readiness may have changed during the await: recompute the candidates.
        match candidates(snapshot, &waiter.request, None) {
            Err(e) => self.answer(waiter, &snapshot.description, Err(Error::from(e))),
            Ok(mut servers) => {
                keep(&mut servers, &addresses);
                match choose(snapshot, servers).and_then(|sd| selected(snapshot, sd)) {
                    Some(chosen) => self.answer(waiter, &snapshot.description, Ok(chosen)),
                    // Back in its place: the waiters are ordered by arrival (id).
                    None => self.unserved(waiter, snapshot),
                }
            }
        }
        let deadline = self.waiters.get(&id).map(|w| w.deadline);
        self.after_one(ctx, deadline);
    }

    /// Fails the waiters whose deadline passed.
    fn expire(&mut self, ctx: &mut Context<Self>) {
        let now = Instant::now();
        let snapshot = self.receiver.borrow().clone();
        let custom = self.options.custom_selector.clone();
        for (id, waiter) in std::mem::take(&mut self.waiters) {
            if waiter.deadline <= now {
                let e = timeout_error(
                    &snapshot,
                    &waiter.request,
                    custom.as_ref(),
                    waiter.started,
                    waiter.deadline,
                );
                self.answer(waiter, &snapshot.description, Err(e));
            } else if !waiter.reply.is_closed() {
                self.waiters.insert(id, waiter);
            }
        }
        self.after_change(ctx);
    }

    /// Re-arms the timer for the earliest deadline and updates the waiters gauge (a pass
    /// over every waiter: after the passes that visit them all anyway).
    fn after_change(&mut self, ctx: &mut Context<Self>) {
        let earliest = self.waiters.values().map(|w| w.deadline).min();
        self.arm(ctx, earliest);
    }

    /// After one waiter arrived or was re-evaluated: the timer only ever moves earlier, so
    /// each arrival costs O(log n), not a pass over the queue (a timer that fires for a
    /// waiter gone meanwhile finds nothing to expire and re-arms).
    fn after_one(&mut self, ctx: &mut Context<Self>, deadline: Option<Instant>) {
        let current = self.timer.as_ref().map(|(at, _)| *at);
        match (current, deadline) {
            (Some(at), Some(d)) if d < at => self.arm(ctx, Some(d)),
            (None, Some(d)) => self.arm(ctx, Some(d)),
            _ => self.report_waiters(),
        }
    }

    fn arm(&mut self, ctx: &mut Context<Self>, earliest: Option<Instant>) {
        if self.timer.as_ref().map(|(at, _)| *at) != earliest {
            if let Some((_, handle)) = self.timer.take() {
                ctx.cancel_future(handle);
            }
            if let Some(at) = earliest {
                let handle = ctx.run_later(at.saturating_duration_since(Instant::now()), |act, ctx| {
                    act.timer = None;
                    act.expire(ctx);
                });
                self.timer = Some((at, handle));
            }
        }
        self.report_waiters();
    }

    fn report_waiters(&mut self) {
        let now = self.waiters.len();
        if now != self.reported_waiters {
            let gauge = metrics::gauge!(crate::observe::metrics::SERVER_SELECTION_WAITERS);
            if now > self.reported_waiters {
                gauge.increment((now - self.reported_waiters) as f64);
            } else {
                gauge.decrement((self.reported_waiters - now) as f64);
            }
            self.reported_waiters = now;
        }
    }

    fn fail_all(&mut self, error: impl Fn() -> Error) {
        let snapshot = self.receiver.borrow().clone();
        for (_, waiter) in std::mem::take(&mut self.waiters) {
            self.answer(waiter, &snapshot.description, Err(error()));
        }
        self.report_waiters();
    }
}

impl Actor for SelectionActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        // Every published snapshot wakes the actor (the receiver's current one is read then).
        let stream = futures_util::stream::unfold(self.receiver.clone(), |mut rx| async move {
            rx.changed().await.ok()?;
            let sequence = rx.borrow_and_update().sequence;
            Some((sequence, rx))
        });
        ctx.add_stream(stream);
    }

    fn stopped(&mut self, _ctx: &mut Self::Context) {
        self.fail_all(|| Error::stopped("selection"));
        // Dropping them checks them back in.
        self.pins.clear();
    }
}

impl StreamHandler<u64> for SelectionActor {
    fn handle(&mut self, _sequence: u64, ctx: &mut Self::Context) {
        self.evaluate(ctx);
    }

    fn finished(&mut self, ctx: &mut Self::Context) {
        // The topology actor is gone without a closing snapshot.
        self.fail_all(|| Error::stopped("topology"));
        ctx.stop();
    }
}

impl Handler<SelectServer> for SelectionActor {
    type Result = ResponseFuture<Result<SelectedServer>>;

    fn handle(&mut self, msg: SelectServer, ctx: &mut Self::Context) -> Self::Result {
        {
            let snapshot = self.receiver.borrow();
            let custom = self.options.custom_selector.as_ref();
            selection::log::selection_started(
                Some(&self.topology_id),
                &msg.request.operation,
                msg.request.operation_id,
                &full_criteria(&msg.request, custom),
                &snapshot.description,
            );
        }
        let deadline = deadline_of(msg.started, self.options.server_selection_timeout, &msg.request);
        let (reply, rx) = oneshot::channel();
        let id = self.ids.fetch_add(1, Ordering::Relaxed);
        self.push_waiter(id, msg.request, msg.started, deadline, false, reply);
        self.evaluate(ctx);
        Box::pin(async move { rx.await.unwrap_or_else(|_| Err(Error::stopped("selection"))) })
    }
}

impl Handler<EnqueueWaiter> for SelectionActor {
    type Result = ();

    fn handle(&mut self, msg: EnqueueWaiter, ctx: &mut Self::Context) {
        let snapshot = self.receiver.borrow().clone();
        if snapshot.closed {
            self.push_waiter(msg.id, msg.request, msg.started, msg.deadline, true, msg.reply);
            self.evaluate(ctx);
            return;
        }
        // Only the newcomer: the others were evaluated on this snapshot already, so an
        // arrival costs O(log n) however many wait.
        let waiter = Waiter {
            id: msg.id,
            request: msg.request,
            started: msg.started,
            deadline: msg.deadline,
            reply: msg.reply,
            evaluated: None,
            filtering: false,
            logged_waiting: true,
        };
        let custom = self.options.custom_selector.clone();
        self.evaluate_one(waiter, &snapshot, Instant::now(), custom.as_ref(), ctx);
        let deadline = self.waiters.get(&msg.id).map(|w| w.deadline);
        self.after_one(ctx, deadline);
    }
}

impl Handler<WaiterGone> for SelectionActor {
    type Result = ();

    fn handle(&mut self, msg: WaiterGone, _ctx: &mut Self::Context) {
        if self.waiters.remove(&msg.0).is_some() {
            self.report_waiters();
        }
    }
}

impl Handler<CloseSelector> for SelectionActor {
    type Result = ();

    fn handle(&mut self, _msg: CloseSelector, ctx: &mut Self::Context) {
        ctx.stop();
    }
}

impl Handler<PinConnection> for SelectionActor {
    type Result = Result<()>;

    fn handle(&mut self, msg: PinConnection, _ctx: &mut Self::Context) -> Result<()> {
        // A connection pinned again under the same pin replaces (and checks in) the old one.
        self.pins.insert(msg.pin, msg.connection);
        Ok(())
    }
}

impl Handler<TakePinned> for SelectionActor {
    type Result = Result<Option<PooledConnection<Connection>>>;

    fn handle(&mut self, msg: TakePinned, _ctx: &mut Self::Context) -> Self::Result {
        Ok(self.pins.remove(&msg.pin))
    }
}

impl Handler<Unpin> for SelectionActor {
    type Result = ();

    fn handle(&mut self, msg: Unpin, _ctx: &mut Self::Context) {
        self.pins.remove(&msg.pin);
    }
}

/// A handle to a running selection actor: cheap to clone, usable from any task.
#[derive(Clone)]
pub struct Selector {
    topology: Topology,
    actor: Addr<SelectionActor>,
    options: Arc<SelectorOptions>,
    pins: Arc<AtomicU64>,
    /// Waiter ids (shared with the actor).
    ids: Arc<AtomicU64>,
    /// Operations on the slow path right now, counted by the callers: admission control
    /// reads it, and a caller that goes away takes itself off at once.
    waiting: Arc<AtomicUsize>,
    closed: Arc<AtomicBool>,
    fast_path: Arc<FastPathHistograms>,
    /// The topology's id, in every selection log message (`topologyId`).
    topology_id: Arc<str>,
}

/// What [`Selector::select`] returns: the fast path's answer, ready, or the boxed future
/// of an actor selector or of the slow path.
pub type Selection<'a> = Either<
    std::future::Ready<Result<SelectedServer>>,
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<SelectedServer>> + Send + 'a>>,
>;

/// A caller's place on the slow path: counted while it lives; dropped before the answer (the
/// caller's future went away), it takes the waiter out of the actor's queue at once.
struct WaitSlot<'a> {
    waiting: &'a AtomicUsize,
    actor: &'a Addr<SelectionActor>,
    /// The enqueued waiter, until answered.
    id: Option<u64>,
}

impl Drop for WaitSlot<'_> {
    fn drop(&mut self) {
        self.waiting.fetch_sub(1, Ordering::AcqRel);
        if let Some(id) = self.id {
            self.actor.do_send(WaiterGone(id));
        }
    }
}

/// The fast path's duration histograms, registered once with the recorder installed when
/// the selector starts, so that recording one costs no key building or hashing.
struct FastPathHistograms {
    /// False with the no-op recorder: then the fast path reads no clock.
    timed: bool,
    succeeded: metrics::Histogram,
    failed: metrics::Histogram,
}

impl FastPathHistograms {
    fn register() -> Self {
        const NAME: &str = crate::observe::metrics::SERVER_SELECTION_DURATION;
        FastPathHistograms {
            timed: crate::observe::metrics::recorder_installed(),
            succeeded: metrics::histogram!(NAME, "outcome" => "succeeded", "path" => "fast"),
            failed: metrics::histogram!(NAME, "outcome" => "failed", "path" => "fast"),
        }
    }
}

impl std::fmt::Debug for Selector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Selector").field("options", &self.options).finish()
    }
}

impl Selector {
    /// Selections waiting for a suitable server right now (the slow path).
    pub fn waiting(&self) -> usize {
        self.waiting.load(Ordering::Acquire)
    }

    /// Starts a selection actor for `topology` (in the current actix arbiter).
    pub fn start(topology: &Topology, options: SelectorOptions) -> Selector {
        let options = Arc::new(options);
        let ids = Arc::new(AtomicU64::new(1));
        let actor = SelectionActor::new(topology, options.clone(), ids.clone()).start();
        Selector {
            topology: topology.clone(),
            actor,
            options,
            ids,
            waiting: Arc::new(AtomicUsize::new(0)),
            pins: Arc::new(AtomicU64::new(1)),
            closed: Arc::new(AtomicBool::new(false)),
            fast_path: Arc::new(FastPathHistograms::register()),
            topology_id: topology.id().0.to_string().into(),
        }
    }

    /// Selects a server: from the current snapshot if it can (no mailbox), otherwise by
    /// waiting in the actor's mailbox until a snapshot serves it or the timeout passes.
    ///
    /// The fast path runs when this is called, not when the future is first polled: what
    /// it returns is then a ready value, not a state machine to move around (an actor
    /// selector or the slow path is a boxed future).
    pub fn select(&self, request: SelectionRequest) -> Selection<'_> {
        // A std clock for the fast path: tokio's reads its (test-util) clock through a
        // thread-local; the slow path takes tokio's time, which paused tests control.
        let started = self.fast_path.timed.then(std::time::Instant::now);
        if self.closed.load(Ordering::Relaxed) || !self.actor.connected() {
            return Either::Left(std::future::ready(Err(Error::stopped("selection"))));
        }
        let snapshot = self.topology.snapshot();
        let custom = self.options.custom_selector.as_ref();
        if tracing::enabled!(target: LOG_TARGET, tracing::Level::DEBUG) {
            selection::log::selection_started(
                Some(&self.topology_id),
                &request.operation,
                request.operation_id,
                &full_criteria(&request, custom),
                &snapshot.description,
            );
        }
        let attempt = if snapshot.closed {
            Err(Error::stopped("topology"))
        } else {
            match custom {
                Some(CustomSelector::Actor(recipient)) => {
                    let recipient = recipient.clone();
                    return Either::Right(Box::pin(async move {
                        let attempt = attempt_with_actor(&recipient, &snapshot, &request).await;
                        match self.conclude(request, snapshot, attempt, started) {
                            Either::Left(ready) => ready.await,
                            Either::Right(waiting) => waiting.await,
                        }
                    }));
                }
                _ => attempt(&snapshot, &request, custom),
            }
        };
        if let Ok(Some(entry)) = attempt {
            // The usual answer, here: the request is not moved again.
            return self.chosen(&request, snapshot, entry, started);
        }
        self.conclude(request, snapshot, attempt, started)
    }

    /// The server at `entry` of `snapshot`, chosen: the snapshot moves into the answer (no
    /// reference count to take and give back).
    fn chosen(
        &self,
        request: &SelectionRequest,
        snapshot: Arc<TopologySnapshot>,
        entry: usize,
        started: Option<std::time::Instant>,
    ) -> Selection<'_> {
        let outcome = Ok(SelectedServer::new(snapshot, entry));
        if let Ok(chosen) = &outcome {
            self.finish(request, &chosen.snapshot().description, &outcome, started);
        }
        Either::Left(std::future::ready(outcome))
    }

    /// The answer to an attempt on `snapshot`: the chosen server, an error, or the slow path.
    fn conclude(
        &self,
        request: SelectionRequest,
        snapshot: Arc<TopologySnapshot>,
        attempt: Result<Option<usize>>,
        started: Option<std::time::Instant>,
    ) -> Selection<'_> {
        let outcome = match attempt {
            Ok(Some(entry)) => return self.chosen(&request, snapshot, entry, started),
            Ok(None) => {
                // The fast path took microseconds: the slow path's clock starts here.
                let now = Instant::now();
                let deadline = deadline_of(now, self.options.server_selection_timeout, &request);
                if now < deadline {
                    return Either::Right(Box::pin(async move {
                        self.wait(request, now, deadline, &snapshot).await
                    }));
                }
                let custom = self.options.custom_selector.as_ref();
                Err(timeout_error(&snapshot, &request, custom, now, deadline))
            }
            Err(e) => Err(e),
        };
        self.finish(&request, &snapshot.description, &outcome, started);
        Either::Left(std::future::ready(outcome))
    }

    /// Logs a fast-path outcome and records its duration.
    fn finish(
        &self,
        request: &SelectionRequest,
        description: &TopologyDescription,
        outcome: &Result<SelectedServer>,
        started: Option<std::time::Instant>,
    ) {
        let custom = self.options.custom_selector.as_ref();
        log_outcome(&self.topology_id, request, custom, description, outcome);
        if let Some(started) = started {
            let seconds = started.elapsed().as_secs_f64();
            if outcome.is_ok() {
                self.fast_path.succeeded.record(seconds);
            } else {
                self.fast_path.failed.record(seconds);
            }
        }
    }

    /// The slow path: admission, log "waiting" once for the operation, then wait in the
    /// actor.
    async fn wait(
        &self,
        request: SelectionRequest,
        started: Instant,
        deadline: Instant,
        snapshot: &TopologySnapshot,
    ) -> Result<SelectedServer> {
        let waiting = self.waiting.fetch_add(1, Ordering::AcqRel);
        let slot = WaitSlot { waiting: &self.waiting, actor: &self.actor, id: None };
        if let Some(limit) = self.options.max_waiters.filter(|&limit| waiting >= limit) {
            drop(slot);
            let e = Error::overloaded(crate::error::OverloadedQueue::ServerSelection, limit, None);
            metrics::counter!(crate::observe::metrics::ADMISSION_REJECTIONS, "queue" => "server_selection")
                .increment(1);
            let custom = self.options.custom_selector.as_ref();
            log_outcome(&self.topology_id, &request, custom, &snapshot.description, &Err(e.clone()));
            return Err(e);
        }
        log_waiting(
            &self.topology_id,
            &request,
            self.options.custom_selector.as_ref(),
            &snapshot.description,
            deadline,
        );
        let (reply, rx) = oneshot::channel();
        let id = self.ids.fetch_add(1, Ordering::Relaxed);
        let mut slot = slot;
        slot.id = Some(id);
        // A stopped actor drops the message, and with it `reply`.
        self.actor.do_send(EnqueueWaiter { id, request, started, deadline, reply });
        let outcome = rx.await.unwrap_or_else(|_| Err(Error::stopped("selection")));
        // Answered: the actor has forgotten it already.
        slot.id = None;
        outcome
    }

    /// The topology this selector reads.
    pub fn topology(&self) -> &Topology {
        &self.topology
    }

    /// The actor's address (for [`PinConnection`], [`TakePinned`], [`Unpin`]).
    pub fn actor(&self) -> &Addr<SelectionActor> {
        &self.actor
    }

    /// The options.
    pub fn options(&self) -> &SelectorOptions {
        &self.options
    }

    /// A fresh pin id.
    pub fn new_pin_id(&self) -> PinId {
        PinId(self.pins.fetch_add(1, Ordering::Relaxed))
    }

    /// The number of operations in flight on `address` (0 for a server not in the topology).
    pub fn operation_count(&self, address: &ServerAddress) -> usize {
        self.topology.snapshot().handle(address).map_or(0, |h| h.operations.load(Ordering::Relaxed))
    }

    /// Stops the actor (waiters get [`ErrorKind::Shutdown`](crate::error::ErrorKind::Shutdown)); pinned connections return to
    /// their pools.
    pub async fn close(&self) {
        self.closed.store(true, Ordering::Relaxed);
        let _ = self.actor.send(CloseSelector).await;
    }
}

/// One synchronous attempt on `snapshot` (no actor selector).
/// The answer is the chosen server's entry in the snapshot's index.
fn attempt(
    snapshot: &TopologySnapshot,
    request: &SelectionRequest,
    custom: Option<&CustomSelector>,
) -> Result<Option<usize>> {
    if custom.is_none() {
        if let Some(chosen) = remembered(snapshot, request).and_then(|r| from_window(snapshot, r)) {
            return Ok(chosen);
        }
    }
    let servers = candidates(snapshot, request, custom)?;
    Ok(choose(snapshot, servers).and_then(|sd| snapshot.entry_of(sd)))
}

/// One attempt on `snapshot` with the selector actor, awaited from the caller's task.
async fn attempt_with_actor(
    recipient: &Recipient<FilterServers>,
    snapshot: &Arc<TopologySnapshot>,
    request: &SelectionRequest,
) -> Result<Option<usize>> {
    let mut servers = candidates(snapshot, request, None)?;
    if servers.is_empty() {
        return Ok(None);
    }
    let message = FilterServers {
        topology: snapshot.clone(),
        candidates: owned(&servers),
        criteria: request.criteria.clone(),
    };
    let addresses = recipient.send(message).await.map_err(|_| selector_stopped())?;
    keep(&mut servers, &addresses);
    Ok(choose(snapshot, servers).and_then(|sd| snapshot.entry_of(sd)))
}
