//! How SDAM, CMAP and command events reach subscribers: closures, crossbeam `Sender`s and
//! actix `Recipient`s (through [`RecipientHandler`]).
//!
//! # Bounded delivery
//! A client (or a topology) puts a bounded queue of [`DEFAULT_EVENT_QUEUE_CAPACITY`] events
//! in front of each subscriber ([`ClientOptions::event_queue_capacity`] changes it).
//! A closure or a `Recipient` runs on a delivery thread of its own, fed by that queue (a
//! `Recipient` takes the next event once its actor handled the last one, so its mailbox
//! holds at most one of them); a crossbeam `Sender` is fed in place, and its channel's length
//! is its queue. When a subscriber's queue is full, new events are dropped for that
//! subscriber only: counted in `mongo_actors.events.dropped{kind}` (`sdam`, `cmap`,
//! `command`) and reported once in the log (target `mongo_actors::events`). A pool, a
//! monitor or an operation never waits for a subscriber. A closure that must see events at
//! the instant they happen (a timestamp) and never blocks may opt out of the queue with
//! [`InPlace`].
//!
//! [`ClientOptions::event_queue_capacity`]: crate::client::ClientOptions::event_queue_capacity

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

pub(crate) mod recipient;

use pool::cmap::CmapEventHandler;
pub use pool::events::{Delivery, EventHandler, InPlace};
use protocol::sdam::events::SdamEvent;

pub use self::recipient::{
    cmap_channel, cmap_recipient, sdam_channel, sdam_recipient, CmapEventOccurred, RecipientHandler,
    SdamEventOccurred,
};
use crate::observe::command_events::CommandEventHandler;

/// The log target of the delivery's own messages (a subscriber that falls behind).
pub const LOG_TARGET: &str = "mongo_actors::events";
/// The counter of events dropped because a subscriber's queue was full, labelled `kind`.
pub const EVENTS_DROPPED_TOTAL: &str = "mongo_actors.events.dropped";
/// How many events each subscriber's queue holds by default.
pub const DEFAULT_EVENT_QUEUE_CAPACITY: usize = 10_000;

pool::event_handler_alias!(
    /// Receives SDAM events (topology, server and heartbeat events) in the order they happen:
    /// any [`EventHandler<SdamEvent>`].
    ///
    /// A crossbeam `Sender`, a closure or an actix `Recipient` (through [`RecipientHandler`])
    /// works as a handler. Behind a client or topology it sits behind a bounded queue (see the
    /// [module](self)); a handler called directly must be quick and must not block.
    SdamEventHandler,
    SdamEvent
);

/// One subscriber, whatever its kind of event: what a [`Bounded`] queue needs of it.
pub(crate) trait Subscriber<E>: Send + Sync + 'static {
    fn delivery(&self) -> Delivery;
    fn handle(&self, event: &E);
    fn deliver(&self, event: &E);
}

impl<E, H: EventHandler<E> + ?Sized + 'static> Subscriber<E> for Arc<H> {
    fn delivery(&self) -> Delivery {
        (**self).delivery()
    }
    fn handle(&self, event: &E) {
        (**self).handle(event)
    }
    fn deliver(&self, event: &E) {
        (**self).deliver(event)
    }
}

/// Progress of one queue's delivery thread, for [`EventQueues::flushed`].
#[derive(Default)]
struct Progress {
    queued: AtomicU64,
    delivered: AtomicU64,
    /// The thread ended (stopped, or could not start).
    finished: AtomicBool,
    notify: tokio::sync::Notify,
}

impl Progress {
    async fn flushed(&self) {
        let target = self.queued.load(Ordering::Acquire);
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.delivered.load(Ordering::Acquire) >= target || self.finished.load(Ordering::Acquire) {
                return;
            }
            notified.await;
        }
    }
}

/// A subscriber behind a bounded queue: see the [module](self).
pub(crate) struct Bounded<E: Send + 'static, S: Subscriber<E>> {
    kind: &'static str,
    capacity: usize,
    /// In place: the subscriber itself. Queued: the delivery thread's queue.
    route: Route<E, S>,
    dropped: metrics::Counter,
    /// Shared with the [`EventQueues`] for [`EventQueues::dropped`].
    dropped_count: Arc<AtomicU64>,
    progress: Arc<Progress>,
}

enum Route<E, S> {
    InPlace(S),
    Queued(crossbeam_channel::Sender<E>),
}

impl<E: Clone + Send + 'static, S: Subscriber<E>> Bounded<E, S> {
    /// `subscriber` behind a queue of `capacity` events; a queued one gets its delivery thread,
    /// which delivers what is queued and ends once `stop` disconnects (the topology actor
    /// holds its sender) or every handle of the queue is gone.
    fn new(
        kind: &'static str,
        subscriber: S,
        capacity: usize,
        stop: crossbeam_channel::Receiver<()>,
    ) -> Self {
        let progress = Arc::new(Progress::default());
        let route = match subscriber.delivery() {
            Delivery::InPlace { .. } => Route::InPlace(subscriber),
            _ => {
                // Unbounded in type, bounded by `offer`'s length check: a bounded channel would
                // allocate all its slots up front, and an idle client should cost little.
                let (tx, rx) = crossbeam_channel::unbounded::<E>();
                let thread_progress = progress.clone();
                let spawned = std::thread::Builder::new()
                    .name(format!("mongo-actors-{kind}-events"))
                    .spawn(move || deliver_until_stopped(kind, &subscriber, &rx, &stop, &thread_progress));
                if let Err(e) = spawned {
                    tracing::error!(target: LOG_TARGET, kind, error = %e, "cannot start an event delivery thread; the subscriber gets no events");
                    progress.finished.store(true, Ordering::Release);
                }
                Route::Queued(tx)
            }
        };
        Bounded {
            kind,
            capacity,
            route,
            dropped: metrics::counter!(EVENTS_DROPPED_TOTAL, "kind" => kind),
            dropped_count: Arc::new(AtomicU64::new(0)),
            progress,
        }
    }

    /// Offers one event; never blocks.
    fn offer(&self, event: &E) {
        let accepted = match &self.route {
            Route::InPlace(s) => match s.delivery() {
                Delivery::InPlace { backlog } if backlog >= self.capacity => false,
                _ => {
                    s.handle(event);
                    true
                }
            },
            Route::Queued(tx) if tx.len() >= self.capacity => false,
            Route::Queued(tx) => match tx.send(event.clone()) {
                Ok(()) => {
                    self.progress.queued.fetch_add(1, Ordering::AcqRel);
                    true
                }
                // Stopped: the client is gone, and so is the subscriber's interest.
                Err(_) => return,
            },
        };
        if !accepted {
            self.dropped.increment(1);
            if self.dropped_count.fetch_add(1, Ordering::Relaxed) == 0 {
                tracing::warn!(
                    target: LOG_TARGET,
                    kind = self.kind,
                    capacity = self.capacity,
                    "an event subscriber is not keeping up: its queue of {} {} events is full, and events are dropped for it until it catches up (counted in {EVENTS_DROPPED_TOTAL})",
                    self.capacity,
                    self.kind,
                );
            }
        }
    }
}

/// While events keep coming, the delivery thread looks for more this often instead of
/// blocking: a blocked receiver costs the producer a wake-up (a system call, on a pool's
/// check-out path) for every event.
const ACTIVE_POLL: std::time::Duration = std::time::Duration::from_micros(500);
/// Empty looks (of [`ACTIVE_POLL`]) before the thread blocks until the next event.
const IDLE_POLLS: u32 = 40;

/// The delivery thread: every queued event, in order, until stopped; then what is left.
fn deliver_until_stopped<E, S: Subscriber<E>>(
    kind: &'static str,
    subscriber: &S,
    rx: &crossbeam_channel::Receiver<E>,
    stop: &crossbeam_channel::Receiver<()>,
    progress: &Progress,
) {
    let deliver = |event: E| {
        // A panicking subscriber loses that event, not the ones after it.
        if std::panic::catch_unwind(AssertUnwindSafe(|| subscriber.deliver(&event))).is_err() {
            tracing::error!(target: LOG_TARGET, kind, "an event subscriber panicked; the event is lost");
        }
        progress.delivered.fetch_add(1, Ordering::AcqRel);
    };
    let mut idle = 0;
    loop {
        let mut delivered = false;
        let mut disconnected = false;
        loop {
            match rx.try_recv() {
                Ok(event) => {
                    deliver(event);
                    delivered = true;
                }
                Err(crossbeam_channel::TryRecvError::Empty) => break,
                Err(crossbeam_channel::TryRecvError::Disconnected) => {
                    disconnected = true;
                    break;
                }
            }
        }
        if delivered {
            progress.notify.notify_waiters();
        }
        if disconnected || matches!(stop.try_recv(), Err(crossbeam_channel::TryRecvError::Disconnected)) {
            // Stopped: what was queued before is delivered above or here, then the thread ends.
            for event in rx.try_iter() {
                deliver(event);
            }
            break;
        }
        idle = if delivered { 0 } else { idle + 1 };
        if idle < IDLE_POLLS {
            std::thread::sleep(ACTIVE_POLL);
            continue;
        }
        // Idle: block until the next event, or until stopped.
        crossbeam_channel::select! {
            recv(rx) -> event => match event {
                Ok(event) => {
                    deliver(event);
                    progress.notify.notify_waiters();
                    idle = 0;
                }
                Err(_) => break,
            },
            recv(stop) -> _ => {
                for event in rx.try_iter() {
                    deliver(event);
                }
                break;
            },
        }
    }
    progress.finished.store(true, Ordering::Release);
    progress.notify.notify_waiters();
}

impl<E: Clone + Send + 'static, S: Subscriber<E>> EventHandler<E> for Bounded<E, S> {
    fn handle(&self, event: &E) {
        self.offer(event)
    }
    fn delivery(&self) -> Delivery {
        // Bounded already: a second wrapper calls it in place.
        Delivery::InPlace { backlog: 0 }
    }
}

/// The bounded queues of one client or topology, and the signal that stops their threads.
#[derive(Clone)]
pub(crate) struct EventQueues {
    capacity: usize,
    stop: crossbeam_channel::Receiver<()>,
    progress: Arc<parking_lot::Mutex<Vec<Arc<Progress>>>>,
    drops: Arc<parking_lot::Mutex<Vec<Arc<AtomicU64>>>>,
}

/// Held by the topology actor: when the actor goes (closed, or its System stopped), every
/// delivery thread of its client delivers what is queued and ends.
pub(crate) type EventStopGuard = crossbeam_channel::Sender<()>;

impl EventQueues {
    /// Queues of `capacity` events, and the guard whose drop stops their threads.
    pub(crate) fn new(capacity: usize) -> (EventQueues, EventStopGuard) {
        let (guard, stop) = crossbeam_channel::bounded(0);
        let queues = EventQueues { capacity, stop, progress: Arc::default(), drops: Arc::default() };
        (queues, guard)
    }

    fn wrap<E, S>(&self, kind: &'static str, subscriber: S) -> Arc<Bounded<E, S>>
    where
        E: Clone + Send + 'static,
        S: Subscriber<E>,
    {
        let bounded = Arc::new(Bounded::new(kind, subscriber, self.capacity, self.stop.clone()));
        self.progress.lock().push(bounded.progress.clone());
        self.drops.lock().push(bounded.dropped_count.clone());
        bounded
    }

    /// `handler` behind a bounded queue (an already bounded one is returned as it is).
    pub(crate) fn sdam(&self, handler: Arc<dyn SdamEventHandler>) -> Arc<dyn SdamEventHandler> {
        self.wrap("sdam", handler)
    }

    /// `handler` behind a bounded queue.
    pub(crate) fn cmap(&self, handler: Arc<dyn CmapEventHandler>) -> Arc<dyn CmapEventHandler> {
        self.wrap("cmap", handler)
    }

    /// `handler` behind a bounded queue.
    pub(crate) fn command(&self, handler: Arc<dyn CommandEventHandler>) -> Arc<dyn CommandEventHandler> {
        self.wrap("command", handler)
    }

    /// Waits until every event queued so far has been delivered (or its thread ended).
    pub(crate) async fn flushed(&self) {
        let all: Vec<Arc<Progress>> = self.progress.lock().clone();
        for p in all {
            p.flushed().await;
        }
    }

    /// Events dropped so far, over every subscriber.
    pub(crate) fn dropped(&self) -> u64 {
        self.drops.lock().iter().map(|d| d.load(Ordering::Relaxed)).sum()
    }
}

#[cfg(test)]
mod tests {
    use pool::cmap::CmapEvent;

    use super::*;
    use actix::prelude::*;
    use bson::oid::ObjectId;
    use protocol::sdam::events::{TopologyId, TopologyOpeningEvent};
    use protocol::ServerAddress;

    /// Collects what it receives, and hands it over on request.
    #[derive(Default)]
    struct Collector {
        sdam: Vec<SdamEvent>,
        cmap: Vec<CmapEvent>,
    }

    impl Actor for Collector {
        type Context = Context<Self>;
    }

    impl Handler<SdamEventOccurred> for Collector {
        type Result = ();
        fn handle(&mut self, msg: SdamEventOccurred, _: &mut Context<Self>) {
            self.sdam.push(msg.0);
        }
    }

    impl Handler<CmapEventOccurred> for Collector {
        type Result = ();
        fn handle(&mut self, msg: CmapEventOccurred, _: &mut Context<Self>) {
            self.cmap.push(msg.0);
        }
    }

    #[derive(Message)]
    #[rtype(result = "(Vec<String>, Vec<CmapEvent>)")]
    struct Take;

    impl Handler<Take> for Collector {
        type Result = MessageResult<Take>;
        fn handle(&mut self, _: Take, _: &mut Context<Self>) -> Self::Result {
            let sdam = std::mem::take(&mut self.sdam).iter().map(|e| e.name().to_owned()).collect();
            MessageResult((sdam, std::mem::take(&mut self.cmap)))
        }
    }

    fn opening() -> SdamEvent {
        SdamEvent::TopologyOpening(TopologyOpeningEvent { topology_id: TopologyId(ObjectId::new()) })
    }

    fn address() -> ServerAddress {
        ServerAddress::parse("a:27017").expect("address")
    }

    #[actix::test]
    async fn recipients_receive_events_in_order() {
        let addr = Collector::default().start();
        let sdam = sdam_recipient(addr.clone().recipient());
        let cmap = cmap_recipient(addr.clone().recipient());
        sdam.handle(&opening());
        cmap.handle(&CmapEvent::PoolReady { address: address() });
        cmap.handle(&CmapEvent::CheckOutStarted { address: address() });
        let (sdam_names, cmap_events) = addr.send(Take).await.expect("collector runs");
        assert_eq!(sdam_names, vec!["topology_opening_event"]);
        assert_eq!(
            cmap_events,
            vec![
                CmapEvent::PoolReady { address: address() },
                CmapEvent::CheckOutStarted { address: address() }
            ]
        );
    }

    #[actix::test]
    async fn a_stopped_recipient_is_ignored() {
        let addr = Collector::default().start();
        let handler = RecipientHandler::from(addr.clone().recipient::<SdamEventOccurred>());
        addr.send(Stop).await.expect("collector runs");
        // Let the actor finish stopping.
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        // Neither panics nor blocks.
        EventHandler::<SdamEvent>::handle(&handler, &opening());
        assert!(!handler.recipient().connected());
    }

    #[derive(Message)]
    #[rtype(result = "()")]
    struct Stop;

    impl Handler<Stop> for Collector {
        type Result = ();
        fn handle(&mut self, _: Stop, ctx: &mut Context<Self>) {
            ctx.stop();
        }
    }

    #[test]
    fn channels_receive_events() {
        let (tx, rx) = crossbeam_channel::unbounded();
        sdam_channel(tx).handle(&opening());
        assert_eq!(rx.try_recv().map(|e| e.name()), Ok("topology_opening_event"));
        let (tx, rx) = crossbeam_channel::unbounded();
        cmap_channel(tx).handle(&CmapEvent::PoolReady { address: address() });
        assert_eq!(rx.try_recv(), Ok(CmapEvent::PoolReady { address: address() }));
    }

    fn ready() -> CmapEvent {
        CmapEvent::PoolReady { address: address() }
    }

    #[tokio::test]
    async fn a_stalled_closure_loses_events_past_its_bound_and_never_blocks() {
        let (queues, guard) = EventQueues::new(3);
        let (release, stalled) = crossbeam_channel::bounded::<()>(0);
        let seen = Arc::new(AtomicU64::new(0));
        let counter = seen.clone();
        let handler = queues.cmap(Arc::new(move |_: &CmapEvent| {
            let _ = stalled.recv();
            counter.fetch_add(1, Ordering::SeqCst);
        }));
        let began = std::time::Instant::now();
        for _ in 0..100 {
            handler.handle(&ready());
        }
        assert!(began.elapsed() < std::time::Duration::from_secs(1), "the producer never waits");
        // One in the subscriber's hands, three queued: 96 dropped.
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!((95..=97).contains(&queues.dropped()), "dropped {}", queues.dropped());
        drop(release);
        queues.flushed().await;
        assert_eq!(seen.load(Ordering::SeqCst) + queues.dropped(), 100);
        drop(guard);
    }

    #[test]
    fn a_channel_is_its_own_queue() {
        let (queues, _guard) = EventQueues::new(5);
        let (tx, rx) = crossbeam_channel::unbounded();
        let handler = queues.cmap(Arc::new(tx));
        for _ in 0..8 {
            handler.handle(&ready());
        }
        // Fed in place: nothing is lost below the bound, the rest is dropped.
        assert_eq!(rx.len(), 5);
        assert_eq!(queues.dropped(), 3);
        rx.try_iter().for_each(drop);
        handler.handle(&ready());
        assert_eq!(rx.len(), 1);
    }

    #[test]
    fn a_full_bounded_channel_never_blocks_the_producer() {
        let (tx, rx) = crossbeam_channel::bounded(1);
        let handler = cmap_channel(tx);
        handler.handle(&ready());
        handler.handle(&ready());
        assert_eq!(rx.len(), 1);
    }

    #[test]
    fn the_stop_guard_ends_the_delivery_thread_after_what_is_queued() {
        let (queues, guard) = EventQueues::new(100);
        let (tx, rx) = crossbeam_channel::unbounded();
        let handler = queues.cmap(Arc::new(move |e: &CmapEvent| {
            let _ = tx.send(e.clone());
        }));
        for _ in 0..10 {
            handler.handle(&ready());
        }
        drop(guard);
        // Everything queued arrives, then the thread ends (and with it the channel's sender).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let mut got = 0;
        while got < 10 && std::time::Instant::now() < deadline {
            if rx.recv_timeout(std::time::Duration::from_millis(100)).is_ok() {
                got += 1;
            }
        }
        assert_eq!(got, 10);
        drop(handler);
        assert!(matches!(
            rx.recv_timeout(std::time::Duration::from_secs(5)),
            Err(crossbeam_channel::RecvTimeoutError::Disconnected)
        ));
    }

    /// Counts what it handles, slowly.
    struct Slow(Arc<AtomicU64>);

    impl Actor for Slow {
        type Context = Context<Self>;
    }

    impl Handler<CmapEventOccurred> for Slow {
        type Result = ();
        fn handle(&mut self, _: CmapEventOccurred, _: &mut Context<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[actix::test]
    async fn a_recipient_gets_its_events_one_at_a_time_in_order() {
        let handled = Arc::new(AtomicU64::new(0));
        let addr = Slow(handled.clone()).start();
        let (queues, _guard) = EventQueues::new(1_000);
        let handler = queues.cmap(cmap_recipient(addr.recipient()));
        for _ in 0..500 {
            handler.handle(&ready());
        }
        queues.flushed().await;
        // The delivery thread waited for each one: all handled once flushed.
        assert_eq!(handled.load(Ordering::SeqCst) + queues.dropped(), 500);
        assert_eq!(queues.dropped(), 0);
    }
}
