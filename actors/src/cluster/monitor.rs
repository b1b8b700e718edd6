//! The monitor actor: checks one server on a dedicated connection and reports every outcome
//! to the topology actor as [`ServerCheckCompleted`] (server-monitoring spec).
//!
//! - **Streaming** (mode `stream`, or `auto` outside FaaS, and the server sends a
//!   `topologyVersion`): after a regular hello, an awaitable hello with exhaust; every streamed
//!   reply is reported in order with `awaited: true`. An [`RttPingerActor`] measures RTT
//!   meanwhile on its own connection.
//! - **Polling**: a regular hello every heartbeatFrequencyMS, each one an RTT sample.
//!
//! The check loop runs as a local task owned by the actor; handlers never block. Cancelling
//! the per-check token ([`CancelCheck`]) or the actor's stop token ([`StopActor`]) drops the
//! in-flight I/O at once, which closes the connection without waiting out maxAwaitTimeMS.
//!
//! Supervised by the topology: a check loop that ends or panics on its own takes the actor
//! down, and the topology actor, which looks for stopped monitors every heartbeat, starts a
//! new one for the server, so the server is never left unchecked.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use actix::{
    Actor, ActorContext, ActorFutureExt, Addr, AsyncContext, Context, Handler, Message, Recipient,
    ResponseActFuture, WeakAddr, WrapFuture,
};
use bson::Document;
use parking_lot::Mutex;
use pool::connection::{Connection, ConnectionOptions};
use protocol::address::ServerAddress;
use protocol::hello::reply::HelloReply;
use protocol::sdam::events::{
    ConnectionId, SdamEvent, ServerHeartbeatFailedEvent, ServerHeartbeatStartedEvent,
    ServerHeartbeatSucceededEvent, TopologyId,
};
use protocol::sdam::TopologyVersion;
use protocol::uri::ServerMonitoringMode;
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::cluster::messages::{
    CancelCheck, CheckOutcome, RequestImmediateCheck, ServerCheckCompleted, StopActor,
};
use crate::cluster::rtt_pinger::{parse_hello, run_hello, RttPingerActor, RttPingerOptions};
use crate::cluster::rtt_stats::ServerRtt;
use crate::error::{Error, Result};
use crate::observe::delivery::SdamEventHandler;

pub use protocol::sdam::DEFAULT_HEARTBEAT_FREQUENCY;

/// minHeartbeatFrequencyMS: checks are never closer than this; fixed by the spec.
pub const MIN_HEARTBEAT_FREQUENCY: Duration = Duration::from_millis(500);

/// Driver-side ids of monitoring connections, for heartbeat events and logs (the pool
/// connection's own id is 0 for monitoring connections).
static NEXT_MONITOR_CONNECTION_ID: AtomicU64 = AtomicU64::new(1);

/// Everything a [`MonitorActor`] needs.
///
/// connectTimeoutMS and the Stable API version come from `connection_options` (the same
/// values as application connections, as the spec requires).
#[derive(Clone)]
pub struct MonitorOptions {
    /// The server to monitor.
    pub address: ServerAddress,
    /// How to open monitoring connections (they never authenticate).
    pub connection_options: Arc<ConnectionOptions>,
    /// heartbeatFrequencyMS (default 10 s, at least [`MIN_HEARTBEAT_FREQUENCY`]); also the
    /// streaming maxAwaitTimeMS.
    pub heartbeat_frequency: Duration,
    /// `serverMonitoringMode`.
    pub mode: ServerMonitoringMode,
    /// Whether a FaaS platform was detected (then `auto` polls). [`MonitorOptions::new`]
    /// reads it from the environment (handshake spec `client.env` rules).
    pub faas: bool,
    /// Where check outcomes go (the topology actor).
    pub topology: Recipient<ServerCheckCompleted>,
    /// Receives the heartbeat events.
    pub event_handler: Option<Arc<dyn SdamEventHandler>>,
    /// The server's RTT statistics, shared with the RTT pinger and the topology.
    pub rtt: ServerRtt,
    /// The topology's id, for heartbeat log messages.
    pub topology_id: TopologyId,
}

impl std::fmt::Debug for MonitorOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MonitorOptions")
            .field("address", &self.address)
            .field("connection_options", &self.connection_options)
            .field("heartbeat_frequency", &self.heartbeat_frequency)
            .field("mode", &self.mode)
            .field("faas", &self.faas)
            .field("event_handler", &self.event_handler.is_some())
            .field("topology_id", &self.topology_id)
            .finish_non_exhaustive()
    }
}

impl MonitorOptions {
    /// Options with the defaults: heartbeat every 10 s, mode `auto`, FaaS detected from the
    /// environment, no event handler, fresh RTT statistics, a new topology id.
    pub fn new(
        address: ServerAddress,
        connection_options: Arc<ConnectionOptions>,
        topology: Recipient<ServerCheckCompleted>,
    ) -> Self {
        MonitorOptions {
            address,
            connection_options,
            heartbeat_frequency: DEFAULT_HEARTBEAT_FREQUENCY,
            mode: ServerMonitoringMode::Auto,
            faas: protocol::hello::metadata::is_faas(),
            topology,
            event_handler: None,
            rtt: ServerRtt::new(),
            topology_id: TopologyId(bson::oid::ObjectId::new()),
        }
    }

    /// Whether the streaming protocol may be used (it still needs server support).
    pub fn streaming_enabled(&self) -> bool {
        match self.mode {
            ServerMonitoringMode::Stream => true,
            ServerMonitoringMode::Poll => false,
            ServerMonitoringMode::Auto => !self.faas,
        }
    }

    fn validate(&self) -> Result<()> {
        if self.heartbeat_frequency < MIN_HEARTBEAT_FREQUENCY {
            return Err(Error::invalid_argument(format!(
                "heartbeatFrequencyMS must be at least {} ms, not {} ms",
                MIN_HEARTBEAT_FREQUENCY.as_millis(),
                self.heartbeat_frequency.as_millis()
            )));
        }
        Ok(())
    }
}

/// State shared between the actor's handlers and its check loop.
#[derive(Debug, Default)]
struct Shared {
    /// True only while the loop waits between checks (requests are ignored otherwise).
    sleeping: AtomicBool,
    /// Wakes a sleeping loop.
    wake: Notify,
    /// The in-flight check's token ([`CancelCheck`] cancels it).
    check: Mutex<Option<CancellationToken>>,
    /// Set by [`CancelCheck`]: the next check opens a new connection (the current one may be
    /// as bad as the application's).
    reconnect: AtomicBool,
    /// The RTT pinger, while streaming.
    pinger: Mutex<Option<Addr<RttPingerActor>>>,
    /// Set by [`PanicCheckLoop`].
    panic: AtomicBool,
}

/// Monitors one server. Handles [`RequestImmediateCheck`], [`CancelCheck`] and [`StopActor`].
///
/// No task outlives it: stopping (by message, or when its last address is dropped) cancels
/// the check loop and the RTT pinger.
pub struct MonitorActor {
    options: Arc<MonitorOptions>,
    shared: Arc<Shared>,
    stop: CancellationToken,
    task: Option<JoinHandle<()>>,
}

/// Sent by the check loop as it ends, however it ends (its guard's drop).
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "()")]
struct CheckLoopEnded;

/// Tells the actor when its check loop ends, even by a panic (dropped while unwinding).
struct LoopGuard(WeakAddr<MonitorActor>);

impl Drop for LoopGuard {
    fn drop(&mut self) {
        if let Some(monitor) = self.0.upgrade() {
            monitor.do_send(CheckLoopEnded);
        }
    }
}

/// Makes the current check loop panic at its next turn, as a bug would (for tests of the
/// supervision).
#[doc(hidden)]
#[derive(Debug, Clone, Copy, Default, Message)]
#[rtype(result = "()")]
pub struct PanicCheckLoop;

impl std::fmt::Debug for MonitorActor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MonitorActor").field("address", &self.options.address).finish_non_exhaustive()
    }
}

impl MonitorActor {
    /// A monitor; it does no I/O until started. Fails when heartbeatFrequencyMS is below
    /// 500 ms.
    pub fn new(options: MonitorOptions) -> Result<Self> {
        options.validate()?;
        Ok(MonitorActor {
            options: Arc::new(options),
            shared: Arc::new(Shared::default()),
            stop: CancellationToken::new(),
            task: None,
        })
    }

    /// The monitored server.
    pub fn address(&self) -> &ServerAddress {
        &self.options.address
    }

    fn stop_pinger(&self) -> Option<Addr<RttPingerActor>> {
        self.shared.pinger.lock().take()
    }
}

impl Actor for MonitorActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        let guard = LoopGuard(ctx.address().downgrade());
        let checker = Checker {
            options: Arc::clone(&self.options),
            shared: Arc::clone(&self.shared),
            stop: self.stop.clone(),
            conn: None,
            current: (0, None, false),
            last_known: false,
            topology_version: None,
        };
        // Local: the connection stays on this arbiter's thread, and the pinger actor can be
        // started from the loop.
        self.task = Some(tokio::task::spawn_local(async move {
            let _guard = guard;
            checker.run().await;
        }));
        tracing::debug!(address = %self.options.address, "monitor started");
    }

    fn stopped(&mut self, _ctx: &mut Context<Self>) {
        self.stop.cancel();
        if let Some(task) = self.task.take() {
            task.abort();
        }
        if let Some(pinger) = self.stop_pinger() {
            pinger.do_send(StopActor);
        }
        tracing::debug!(address = %self.options.address, "monitor stopped");
    }
}

impl Handler<CheckLoopEnded> for MonitorActor {
    type Result = ();

    fn handle(&mut self, _msg: CheckLoopEnded, ctx: &mut Context<Self>) {
        if self.stop.is_cancelled() {
            return;
        }
        // Ended without being stopped: a bug. Stopping lets the topology start a new monitor.
        tracing::error!(address = %self.options.address, "the monitor's check loop ended on its own");
        ctx.stop();
    }
}

impl Handler<PanicCheckLoop> for MonitorActor {
    type Result = ();

    fn handle(&mut self, _msg: PanicCheckLoop, _ctx: &mut Context<Self>) {
        self.shared.panic.store(true, Ordering::Release);
        self.shared.wake.notify_one();
        if let Some(token) = self.shared.check.lock().as_ref() {
            token.cancel();
        }
    }
}

impl Handler<RequestImmediateCheck> for MonitorActor {
    type Result = ();

    fn handle(&mut self, _msg: RequestImmediateCheck, _ctx: &mut Context<Self>) {
        // A sleeping loop is woken. A request during a check is remembered (one permit):
        // that check may have started before what the requester waits for (a server
        // recovering), and its result may change nothing, leaving the requester to time out.
        // The next check still waits minHeartbeatFrequencyMS.
        if !self.shared.sleeping.load(Ordering::Acquire) {
            tracing::trace!(address = %self.options.address, "immediate check requested during a check");
        }
        self.shared.wake.notify_one();
    }
}

impl Handler<CancelCheck> for MonitorActor {
    type Result = ();

    fn handle(&mut self, _msg: CancelCheck, _ctx: &mut Context<Self>) {
        self.shared.reconnect.store(true, Ordering::Release);
        if let Some(token) = self.shared.check.lock().as_ref() {
            token.cancel();
        }
    }
}

impl Handler<StopActor> for MonitorActor {
    type Result = ResponseActFuture<Self, ()>;

    fn handle(&mut self, _msg: StopActor, _ctx: &mut Context<Self>) -> Self::Result {
        self.stop.cancel();
        let task = self.task.take();
        let pinger = self.stop_pinger();
        Box::pin(
            async move {
                // Both finish promptly: every await in them races the cancelled token.
                if let Some(task) = task {
                    let _ = task.await;
                }
                if let Some(pinger) = pinger {
                    let _ = pinger.send(StopActor).await;
                }
            }
            .into_actor(self)
            .map(|(), _, ctx| ctx.stop()),
        )
    }
}

/// How one check ended.
enum Checked {
    Reply {
        reply: Box<HelloReply>,
        raw: Document,
        awaited: bool,
    },
    Failed {
        error: pool::Error,
        awaited: bool,
    },
    /// [`CancelCheck`] or [`StopActor`] interrupted it.
    Cancelled {
        awaited: bool,
    },
}

/// The check loop's state (the spec's monitor thread).
struct Checker {
    options: Arc<MonitorOptions>,
    shared: Arc<Shared>,
    stop: CancellationToken,
    conn: Option<(Connection, u64)>,
    /// The current heartbeat's driver connection id, server connection id and `awaited`.
    current: (u64, Option<i64>, bool),
    /// The last check succeeded (the server is in a known state for the retry rule).
    last_known: bool,
    /// From the last successful reply: the server supports awaitable hello.
    topology_version: Option<TopologyVersion>,
}

impl Checker {
    async fn run(mut self) {
        let streaming_enabled = self.options.streaming_enabled();
        while !self.stop.is_cancelled() {
            assert!(!self.shared.panic.load(Ordering::Acquire), "PanicCheckLoop: the check loop panics");
            let token = self.stop.child_token();
            *self.shared.check.lock() = Some(token.clone());
            let start = Instant::now();
            let checked = tokio::select! {
                biased;
                () = token.cancelled() => None,
                c = self.check() => Some(c),
            };
            *self.shared.check.lock() = None;
            // Dropping the check future dropped its I/O; the socket closes with the connection.
            let checked = checked.unwrap_or(Checked::Cancelled { awaited: self.current.2 });
            let duration = start.elapsed();
            match checked {
                Checked::Cancelled { awaited } => {
                    self.heartbeat_failed(duration, "the check was cancelled", awaited);
                    self.conn = None;
                    if self.stop.is_cancelled() {
                        return;
                    }
                    // The topology already marked the server Unknown (application error).
                    self.last_known = false;
                    self.topology_version = None;
                    self.stop_pinger();
                    self.wait().await;
                }
                Checked::Reply { reply, raw, awaited } => {
                    self.heartbeat_succeeded(duration, raw, awaited);
                    self.topology_version = reply.topology_version;
                    self.last_known = true;
                    let average_rtt = self.options.rtt.average();
                    self.report(CheckOutcome::Succeeded { reply, average_rtt, awaited });
                    let streaming = streaming_enabled && self.topology_version.is_some();
                    if streaming {
                        self.start_pinger();
                        continue;
                    }
                    self.wait().await;
                }
                Checked::Failed { error, awaited } => {
                    self.heartbeat_failed(duration, &error.to_string(), awaited);
                    self.conn = None;
                    self.options.rtt.reset();
                    self.topology_version = None;
                    self.stop_pinger();
                    let retry_now = error.is_network_error() && self.last_known;
                    self.last_known = false;
                    self.report(CheckOutcome::Failed { error });
                    if retry_now {
                        tracing::debug!(address = %self.options.address, "network error from a known state: checking again at once");
                        continue;
                    }
                    self.wait().await;
                }
            }
        }
    }

    /// One check: the handshake on a new connection, the next streamed reply, an awaitable
    /// hello, or a regular hello.
    async fn check(&mut self) -> Checked {
        let options = Arc::clone(&self.options);
        let connect_timeout = options.connection_options.connect_timeout();
        if self.shared.reconnect.swap(false, Ordering::AcqRel) {
            self.conn = None;
        }
        if self.conn.as_ref().is_none_or(|(c, _)| c.is_closed()) {
            self.conn = None;
            let id = NEXT_MONITOR_CONNECTION_ID.fetch_add(1, Ordering::Relaxed);
            self.heartbeat_started(id, None, false);
            let start = Instant::now();
            return match Connection::connect_monitoring(&options.connection_options, options.address.clone())
                .await
            {
                Ok(conn) => {
                    // The handshake satisfies the check and is an RTT sample (spec).
                    options.rtt.add_sample(start.elapsed());
                    let reply = conn.hello_reply().clone();
                    self.current.1 = reply.connection_id;
                    self.conn = Some((conn, id));
                    // The pool connection keeps only the parsed handshake reply.
                    let raw = handshake_summary(&reply);
                    Checked::Reply { reply: Box::new(reply), raw, awaited: false }
                }
                Err(error) => Checked::Failed { error, awaited: false },
            };
        }
        let Some((conn, conn_id)) = self.conn.as_ref() else {
            return Checked::Failed {
                error: pool::Error::ConnectionClosed { address: options.address.clone() },
                awaited: false,
            };
        };
        let (conn_id, server_id, more_to_come) =
            (*conn_id, conn.hello_reply().connection_id, conn.more_to_come());
        let awaitable = self.topology_version.filter(|_| options.streaming_enabled());
        let awaited = more_to_come || awaitable.is_some();
        self.heartbeat_started(conn_id, server_id, awaited);
        let Some((conn, _)) = self.conn.as_mut() else {
            return Checked::Failed {
                error: pool::Error::ConnectionClosed { address: options.address.clone() },
                awaited,
            };
        };
        let start = Instant::now();
        // Awaited replies may take maxAwaitTimeMS on top of the network (connectTimeoutMS; 0 =
        // no limit).
        let awaited_deadline = connect_timeout
            .and_then(|t| Instant::now().checked_add(t)?.checked_add(options.heartbeat_frequency));
        let result = if more_to_come {
            match conn.read_more_to_come(awaited_deadline).await {
                Ok(raw) => parse_hello(conn, raw),
                Err(e) => Err(e),
            }
        } else if let Some(tv) = &awaitable {
            run_hello(conn, Some((tv, options.heartbeat_frequency)), awaited_deadline).await
        } else {
            let deadline = connect_timeout.and_then(|t| Instant::now().checked_add(t));
            let r = run_hello(conn, None, deadline).await;
            if r.is_ok() {
                options.rtt.add_sample(start.elapsed());
            }
            r
        };
        match result {
            Ok((reply, raw)) => Checked::Reply { reply: Box::new(reply), raw, awaited },
            Err(error) => Checked::Failed { error, awaited },
        }
    }

    /// Sleeps heartbeatFrequencyMS, or less when woken by [`RequestImmediateCheck`], but never
    /// less than minHeartbeatFrequencyMS.
    async fn wait(&self) {
        let start = Instant::now();
        let notified = self.shared.wake.notified();
        tokio::pin!(notified);
        // Registered before `sleeping` is set, so no request is lost.
        notified.as_mut().enable();
        self.shared.sleeping.store(true, Ordering::Release);
        tokio::select! {
            biased;
            () = self.stop.cancelled() => {}
            () = notified => {}
            () = tokio::time::sleep(self.options.heartbeat_frequency) => {}
        }
        self.shared.sleeping.store(false, Ordering::Release);
        let remaining = MIN_HEARTBEAT_FREQUENCY.saturating_sub(start.elapsed());
        if !remaining.is_zero() {
            tokio::select! {
                biased;
                () = self.stop.cancelled() => {}
                () = tokio::time::sleep(remaining) => {}
            }
        }
    }

    fn report(&self, outcome: CheckOutcome) {
        // do_send keeps the order; a topology that is gone stops us soon after.
        self.options
            .topology
            .do_send(ServerCheckCompleted { address: self.options.address.clone(), outcome });
    }

    fn start_pinger(&self) {
        let mut pinger = self.shared.pinger.lock();
        if pinger.as_ref().is_some_and(Addr::connected) {
            return;
        }
        let options = RttPingerOptions {
            address: self.options.address.clone(),
            connection_options: Arc::clone(&self.options.connection_options),
            heartbeat_frequency: self.options.heartbeat_frequency,
            rtt: self.options.rtt.clone(),
            cancel: self.stop.child_token(),
        };
        *pinger = Some(RttPingerActor::new(options).start());
    }

    fn stop_pinger(&self) {
        if let Some(pinger) = self.shared.pinger.lock().take() {
            pinger.do_send(StopActor);
        }
    }

    fn connection_ids(&self) -> (Option<u64>, Option<i64>) {
        (Some(self.current.0), self.current.1)
    }

    /// Logs the event's spec message (derived from the event, as the topology's are), then
    /// hands it to the handler.
    fn emit(&self, event: SdamEvent) {
        crate::observe::sdam_log::log_event(self.options.topology_id, &event);
        if let Some(handler) = &self.options.event_handler {
            handler.handle(&event);
        }
    }

    fn connection_id(&self, driver: Option<u64>, server: Option<i64>) -> ConnectionId {
        ConnectionId {
            address: self.options.address.clone(),
            driver_connection_id: driver,
            server_connection_id: server,
        }
    }

    fn heartbeat_started(&mut self, driver: u64, server: Option<i64>, awaited: bool) {
        self.current = (driver, server, awaited);
        self.emit(SdamEvent::ServerHeartbeatStarted(ServerHeartbeatStartedEvent {
            connection_id: self.connection_id(Some(driver), server),
            awaited,
        }));
    }

    fn heartbeat_succeeded(&self, duration: Duration, reply: Document, awaited: bool) {
        let (driver, server) = self.connection_ids();
        self.emit(SdamEvent::ServerHeartbeatSucceeded(ServerHeartbeatSucceededEvent {
            duration,
            reply,
            connection_id: self.connection_id(driver, server),
            awaited,
        }));
    }

    fn heartbeat_failed(&self, duration: Duration, failure: &str, awaited: bool) {
        let (driver, server) = self.connection_ids();
        self.emit(SdamEvent::ServerHeartbeatFailed(ServerHeartbeatFailedEvent {
            duration,
            failure: failure.to_string(),
            connection_id: self.connection_id(driver, server),
            awaited,
        }));
    }
}

/// A few fields of a handshake reply, for the heartbeat event (the raw reply is not kept).
fn handshake_summary(reply: &HelloReply) -> Document {
    let mut doc = bson::doc! { "ok": 1 };
    if let Some(id) = reply.connection_id {
        doc.insert("connectionId", id);
    }
    if let Some(tv) = &reply.topology_version {
        doc.insert("topologyVersion", bson::doc! { "processId": tv.process_id, "counter": tv.counter });
    }
    doc.insert("minWireVersion", reply.min_wire_version);
    doc.insert("maxWireVersion", reply.max_wire_version);
    doc
}
