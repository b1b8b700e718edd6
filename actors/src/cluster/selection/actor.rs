//! The selection actor's mailbox: the waiters the fast path could not serve, in arrival
//! order, re-evaluated on every snapshot and whenever a pool becomes ready or is cleared
//! ([`PoolReadinessChanged`]), a custom selector actor asked for each without blocking the
//! mailbox, and the timer that fails the expired ones.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use actix::prelude::*;
use pool::cmap::PooledConnection;
use pool::connection::Connection;
use protocol::sdam::{ServerDescription, TopologyDescription};
use protocol::ServerAddress;
use tokio::sync::{oneshot, watch};
use tokio::time::Instant;

use super::log::{log_outcome, log_waiting, record_duration};
use super::pins::{PinConnection, PinId, TakePinned, Unpin};
use super::pipeline::{
    candidates, choose, deadline_of, full_criteria, keep, owned, selected, selector_stopped, timeout_error,
};
use super::request::{
    CustomSelector, FilterServers, SelectServer, SelectedServer, SelectionRequest, SelectorOptions,
};
use crate::cluster::messages::{PoolReadinessChanged, RequestImmediateCheck, WatchPoolReadiness};
use crate::cluster::snapshot::TopologySnapshot;
use crate::cluster::topology::{Topology, TopologyActor};
use crate::error::{Error, Result};

/// A request waiting in the actor.
pub(super) struct Waiter {
    pub(super) id: u64,
    pub(super) request: SelectionRequest,
    pub(super) started: Instant,
    pub(super) deadline: Instant,
    pub(super) reply: oneshot::Sender<Result<SelectedServer>>,
    /// The snapshot sequence it was last evaluated on.
    pub(super) evaluated: Option<u64>,
    /// A selector actor is filtering for it.
    pub(super) filtering: bool,
    /// "Waiting for suitable server" was logged for its operation.
    pub(super) logged_waiting: bool,
}

/// Queues a request the caller's fast path could not serve (it logged "started" and
/// "waiting" already).
pub(super) struct EnqueueWaiter {
    pub(super) id: u64,
    pub(super) request: SelectionRequest,
    pub(super) started: Instant,
    pub(super) deadline: Instant,
    pub(super) reply: oneshot::Sender<Result<SelectedServer>>,
}

impl Message for EnqueueWaiter {
    type Result = ();
}

/// A waiter's caller went away (its future was dropped): it leaves the queue at once.
pub(super) struct WaiterGone(pub(super) u64);

impl Message for WaiterGone {
    type Result = ();
}

/// Stops the actor ([`Selector::close`]).
pub(super) struct CloseSelector;

impl Message for CloseSelector {
    type Result = ();
}

/// The selection actor: holds the waiters and the pinned connections.
pub struct SelectionActor {
    pub(super) topology: Addr<TopologyActor>,
    /// The latest snapshot is always read from here; the stream only wakes the actor.
    pub(super) receiver: watch::Receiver<Arc<TopologySnapshot>>,
    pub(super) options: Arc<SelectorOptions>,
    /// By id, which callers take in arrival order: the first entry waited longest.
    pub(super) waiters: BTreeMap<u64, Waiter>,
    /// Waiter ids, shared with the [`Selector`] handles (which enqueue with their own ids, so
    /// a caller that goes away can name its waiter).
    pub(super) ids: Arc<AtomicU64>,
    /// The snapshot sequence an immediate check was last requested for.
    pub(super) checked: Option<u64>,
    pub(super) timer: Option<(Instant, SpawnHandle)>,
    /// The waiters gauge's share of this actor.
    pub(super) reported_waiters: usize,
    pub(super) pins: HashMap<PinId, PooledConnection<Connection>>,
    /// The topology's id, in every selection log message (`topologyId`).
    pub(super) topology_id: Arc<str>,
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
    pub(super) fn new(topology: &Topology, options: Arc<SelectorOptions>, ids: Arc<AtomicU64>) -> Self {
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
        self.topology.do_send(WatchPoolReadiness { watcher: ctx.address().recipient() });
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

impl Handler<PoolReadinessChanged> for SelectionActor {
    type Result = ();

    /// A pool that became ready: every waiter is evaluated again now, except those evaluated
    /// on the snapshot published with the change (they saw the pool ready). A cleared pool
    /// serves nobody: nothing to do (every evaluation reads the pools' states).
    fn handle(&mut self, msg: PoolReadinessChanged, ctx: &mut Self::Context) {
        if !msg.ready {
            return;
        }
        for waiter in self.waiters.values_mut() {
            if msg.published_in.is_none() || waiter.evaluated != msg.published_in {
                waiter.evaluated = None;
            }
        }
        self.evaluate(ctx);
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
