//! [`Selector`], the handle: the fast path (a selection the current snapshot can serve
//! never touches the mailbox), admission control, and the slow path's wait in the actor.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use actix::prelude::*;
use futures_util::future::Either;
use protocol::sdam::TopologyDescription;
use protocol::ServerAddress;
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::actor::{CloseSelector, EnqueueWaiter, SelectionActor, WaiterGone};
use super::log::{log_outcome, log_waiting, LOG_TARGET};
use super::pins::PinId;
use super::pipeline::{attempt, attempt_with_actor, deadline_of, full_criteria, timeout_error};
use super::request::{CustomSelector, SelectedServer, SelectionRequest, SelectorOptions};
use crate::cluster::snapshot::TopologySnapshot;
use crate::cluster::topology::Topology;
use crate::error::{Error, Result};

/// A handle to a running selection actor: cheap to clone, usable from any task.
#[derive(Clone)]
pub struct Selector {
    pub(super) topology: Topology,
    pub(super) actor: Addr<SelectionActor>,
    pub(super) options: Arc<SelectorOptions>,
    pub(super) pins: Arc<AtomicU64>,
    /// Waiter ids (shared with the actor).
    pub(super) ids: Arc<AtomicU64>,
    /// Operations on the slow path right now, counted by the callers: admission control
    /// reads it, and a caller that goes away takes itself off at once.
    pub(super) waiting: Arc<AtomicUsize>,
    pub(super) closed: Arc<AtomicBool>,
    pub(super) fast_path: Arc<FastPathHistograms>,
    /// The topology's id, in every selection log message (`topologyId`).
    pub(super) topology_id: Arc<str>,
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
    pub(super) waiting: &'a AtomicUsize,
    pub(super) actor: &'a Addr<SelectionActor>,
    /// The enqueued waiter, until answered.
    pub(super) id: Option<u64>,
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
pub(super) struct FastPathHistograms {
    /// False with the no-op recorder: then the fast path reads no clock.
    pub(super) timed: bool,
    pub(super) succeeded: metrics::Histogram,
    pub(super) failed: metrics::Histogram,
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

    /// The actor's address (for [`PinConnection`](super::PinConnection), [`TakePinned`](super::TakePinned), [`Unpin`](super::Unpin)).
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
