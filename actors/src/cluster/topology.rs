//! The topology actor: owns the SDAM [`TopologyDescription`], applies check results and
//! application errors through the pure `protocol::sdam` core, starts and stops the
//! per-server actors, keeps pools in step with the description, and publishes immutable
//! [`TopologySnapshot`]s through a `watch` channel.
//!
//! Monitors are created by a [`MonitorFactory`], so the topology can be driven in tests by a
//! fake monitor that never does I/O: send [`ServerCheckCompleted`] to the actor yourself.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use bson::oid::ObjectId;
use futures_util::future::{join_all, BoxFuture, FutureExt};
use pool::cmap::{CmapEventHandler, EstablishmentErrorHook, Pool, PoolOptions};
use pool::connection::{ConnectionEstablisher, ConnectionOptions};
use protocol::address::ServerAddress;
use protocol::sdam::app_error::{decide, ApplicationError, ApplicationErrorKind, ErrorPhase};
use protocol::sdam::events::{SdamEvent, TopologyId};
use protocol::sdam::{
    ServerDescription, ServerType, TopologyDescription, TopologySettings, TopologyType, TopologyUpdate,
};
use protocol::uri::ConnectionString;
use protocol::uri::ServerMonitoringMode;
use tokio::sync::watch;

use crate::cluster::messages::{
    ApplicationErrorOccurred, CancelCheck, CheckOutcome, RequestImmediateCheck, ServerCheckCompleted,
    StopActor, UpdateSrvHosts, WatchPoolReadiness,
};
use crate::cluster::monitor::{MonitorActor, MonitorOptions, MIN_HEARTBEAT_FREQUENCY};
use crate::cluster::pool_actor::PoolActor;
use crate::cluster::pool_readiness::PoolReadiness;
use crate::cluster::rtt_stats::ServerRtt;
use crate::cluster::snapshot::{ServerHandle, TopologySnapshot};
use crate::error::{Error, Result};
use crate::observe::delivery::{EventQueues, EventStopGuard, SdamEventHandler};
use crate::observe::sdam_log;

/// The handshake's `platform`: the language, and the runtime this client runs on.
pub(crate) fn platform() -> String {
    format!("Rust ({}) / actix", std::env::consts::FAMILY)
}

/// Everything a monitor for one server needs; given to the [`MonitorFactory`].
#[derive(Clone)]
pub struct MonitorSpawn {
    /// The server to monitor.
    pub address: ServerAddress,
    /// The topology's id, for events.
    pub topology_id: TopologyId,
    /// Where to send check results.
    pub topology: Recipient<ServerCheckCompleted>,
    /// Options of the monitoring connections.
    pub connection_options: Arc<ConnectionOptions>,
    /// heartbeatFrequencyMS.
    pub heartbeat_frequency: Duration,
    /// serverMonitoringMode.
    pub monitoring_mode: ServerMonitoringMode,
    /// The server's RTT statistics (the monitor and RTT pinger write them).
    pub rtt: ServerRtt,
    /// Receives heartbeat events.
    pub sdam_handler: Option<Arc<dyn SdamEventHandler>>,
}

impl std::fmt::Debug for MonitorSpawn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MonitorSpawn")
            .field("address", &self.address)
            .field("heartbeat_frequency", &self.heartbeat_frequency)
            .field("monitoring_mode", &self.monitoring_mode)
            .finish_non_exhaustive()
    }
}

impl MonitorSpawn {
    /// The options of a [`MonitorActor`] for this server (what the default factory starts;
    /// a custom factory may adjust them).
    pub fn monitor_options(self) -> MonitorOptions {
        let mut options = MonitorOptions::new(self.address, self.connection_options, self.topology);
        options.heartbeat_frequency = self.heartbeat_frequency;
        options.mode = self.monitoring_mode;
        options.event_handler = self.sdam_handler;
        options.rtt = self.rtt;
        options.topology_id = self.topology_id;
        options
    }
}

/// How the topology actor talks to a started monitor.
#[derive(Clone)]
pub struct MonitorHandles {
    /// Wakes the monitor for an immediate check.
    pub request_check: Recipient<RequestImmediateCheck>,
    /// Cancels its in-flight check.
    pub cancel_check: Recipient<CancelCheck>,
    /// Stops it (answers once its connections are closed).
    pub stop: Recipient<StopActor>,
}

impl MonitorHandles {
    /// The handles of an actor that handles all three messages.
    pub fn of<A>(addr: &Addr<A>) -> Self
    where
        A: Actor + Handler<RequestImmediateCheck> + Handler<CancelCheck> + Handler<StopActor>,
        A::Context: actix::dev::ToEnvelope<A, RequestImmediateCheck>
            + actix::dev::ToEnvelope<A, CancelCheck>
            + actix::dev::ToEnvelope<A, StopActor>,
    {
        MonitorHandles {
            request_check: addr.clone().recipient(),
            cancel_check: addr.clone().recipient(),
            stop: addr.clone().recipient(),
        }
    }
}

impl std::fmt::Debug for MonitorHandles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MonitorHandles").finish_non_exhaustive()
    }
}

/// Starts the monitor of one server (called from inside the topology actor, on its arbiter).
/// An error leaves the server unmonitored (it is logged).
pub type MonitorFactory = Arc<dyn Fn(MonitorSpawn) -> Result<MonitorHandles> + Send + Sync>;

/// The factory of real monitors: a [`MonitorActor`] per server (FaaS detected from the
/// environment for `serverMonitoringMode=auto`).
pub fn default_monitor_factory() -> MonitorFactory {
    Arc::new(|spawn: MonitorSpawn| {
        let monitor = MonitorActor::new(spawn.monitor_options())?.start();
        Ok(MonitorHandles::of(&monitor))
    })
}

/// Builds a topology. The constructor and [`build`](Self::build) do no I/O.
#[must_use]
#[derive(Default)]
pub struct TopologyBuilder {
    settings: Option<TopologySettings>,
    seeds: Option<Vec<ServerAddress>>,
    heartbeat_frequency: Option<Duration>,
    connection_options: Option<Result<ConnectionOptions>>,
    pool_options: Option<Result<PoolOptions>>,
    monitoring_mode: ServerMonitoringMode,
    sdam_handler: Option<Arc<dyn SdamEventHandler>>,
    cmap_handler: Option<Arc<dyn CmapEventHandler>>,
    monitor_factory: Option<MonitorFactory>,
    topology_id: Option<TopologyId>,
    event_queue_capacity: Option<usize>,
    /// Set by a client, whose handlers are bounded already (they share its queues).
    event_queues: Option<(EventQueues, EventStopGuard)>,
}

impl TopologyBuilder {
    /// An empty builder: give it seeds (or settings) before building.
    pub fn new() -> Self {
        Self::default()
    }

    /// Settings, connection, pool and monitoring options from a connection string.
    pub fn from_connection_string(cs: &ConnectionString) -> Self {
        TopologyBuilder {
            settings: Some(TopologySettings::from_connection_string(cs)),
            connection_options: Some(
                ConnectionOptions::builder_from_connection_string(cs)
                    .platform(platform())
                    .build()
                    .map_err(Error::from),
            ),
            pool_options: Some(PoolOptions::from_uri_options(&cs.options).map_err(Error::from)),
            monitoring_mode: cs.options.server_monitoring_mode.unwrap_or_default(),
            ..Self::default()
        }
    }

    /// The SDAM settings (seeds, replicaSet, directConnection, loadBalanced, heartbeat, ...).
    pub fn settings(mut self, settings: TopologySettings) -> Self {
        self.settings = Some(settings);
        self
    }

    /// The seed list (replaces the settings' seeds).
    pub fn seeds(mut self, seeds: impl IntoIterator<Item = ServerAddress>) -> Self {
        self.seeds = Some(seeds.into_iter().collect());
        self
    }

    /// heartbeatFrequencyMS (at least 500 ms; replaces the settings' value).
    pub fn heartbeat_frequency(mut self, frequency: Duration) -> Self {
        self.heartbeat_frequency = Some(frequency);
        self
    }

    /// Options for every connection (pooled and monitoring).
    pub fn connection_options(mut self, options: ConnectionOptions) -> Self {
        self.connection_options = Some(Ok(options));
        self
    }

    /// Options of every server's pool.
    pub fn pool_options(mut self, options: PoolOptions) -> Self {
        self.pool_options = Some(Ok(options));
        self
    }

    /// serverMonitoringMode (default: auto).
    pub fn monitoring_mode(mut self, mode: ServerMonitoringMode) -> Self {
        self.monitoring_mode = mode;
        self
    }

    /// Receives SDAM events (topology, server and, through the monitors, heartbeat events).
    pub fn sdam_event_subscriber(mut self, handler: Arc<dyn SdamEventHandler>) -> Self {
        self.sdam_handler = Some(handler);
        self
    }

    /// Receives the CMAP events of every pool.
    pub fn cmap_event_subscriber(mut self, handler: Arc<dyn CmapEventHandler>) -> Self {
        self.cmap_handler = Some(handler);
        self
    }

    /// Starts the monitors (default: [`default_monitor_factory`]; none run in load-balanced
    /// mode).
    pub fn monitor_factory(mut self, factory: MonitorFactory) -> Self {
        self.monitor_factory = Some(factory);
        self
    }

    /// The topology id in events (default: a new ObjectId).
    pub fn topology_id(mut self, id: TopologyId) -> Self {
        self.topology_id = Some(id);
        self
    }

    /// How many events each subscriber's queue holds (default
    /// [`DEFAULT_EVENT_QUEUE_CAPACITY`](crate::observe::delivery::DEFAULT_EVENT_QUEUE_CAPACITY); see
    /// [`crate::observe::delivery`]). Must be at least 1.
    pub fn event_queue_capacity(mut self, capacity: usize) -> Self {
        self.event_queue_capacity = Some(capacity);
        self
    }

    /// A client's queues: its handlers are bounded already, and the actor holds the guard
    /// that stops their threads.
    pub(crate) fn event_queues(mut self, queues: EventQueues, guard: EventStopGuard) -> Self {
        self.event_queues = Some((queues, guard));
        self
    }

    /// Validates the options and creates the (not yet started) actor.
    pub fn build(self) -> Result<TopologyActor> {
        let invalid = |message: String| Error::invalid_argument(message);
        let mut settings = self.settings.unwrap_or_else(|| TopologySettings {
            seeds: Vec::new(),
            set_name: None,
            direct_connection: None,
            load_balanced: false,
            heartbeat_frequency: protocol::sdam::DEFAULT_HEARTBEAT_FREQUENCY,
            local_threshold: protocol::sdam::DEFAULT_LOCAL_THRESHOLD,
            srv_max_hosts: None,
        });
        if let Some(seeds) = self.seeds {
            settings.seeds = seeds;
        }
        if let Some(h) = self.heartbeat_frequency {
            settings.heartbeat_frequency = h;
        }
        settings.validate().map_err(|e| invalid(e.to_string()))?;
        if settings.heartbeat_frequency < MIN_HEARTBEAT_FREQUENCY {
            return Err(invalid(format!(
                "heartbeatFrequencyMS must be at least {} ms",
                MIN_HEARTBEAT_FREQUENCY.as_millis()
            )));
        }
        let lb = settings.load_balanced;
        let connection_options = match self.connection_options {
            Some(o) => o?,
            None => ConnectionOptions::builder().load_balanced(lb).platform(platform()).build()?,
        };
        let pool_options = match self.pool_options {
            Some(o) => o?,
            None => PoolOptions::builder().load_balanced(lb).build()?,
        };
        if connection_options.load_balanced() != lb || pool_options.load_balanced() != lb {
            return Err(invalid(
                "loadBalanced differs between the topology, connection and pool options".into(),
            ));
        }
        let (sdam_handler, cmap_handler, event_stop) = match self.event_queues {
            Some((_, guard)) => (self.sdam_handler, self.cmap_handler, guard),
            None => {
                let capacity = self
                    .event_queue_capacity
                    .unwrap_or(crate::observe::delivery::DEFAULT_EVENT_QUEUE_CAPACITY);
                if capacity == 0 {
                    return Err(invalid("the event queue capacity must be at least 1".into()));
                }
                let (queues, guard) = EventQueues::new(capacity);
                (self.sdam_handler.map(|h| queues.sdam(h)), self.cmap_handler.map(|h| queues.cmap(h)), guard)
            }
        };
        let id = self.topology_id.unwrap_or_else(|| TopologyId(ObjectId::new()));
        let (description, opening_events) = TopologyDescription::open(settings, id);
        Ok(TopologyActor {
            id,
            description,
            opening_events,
            config: Config {
                connection_options: Arc::new(connection_options),
                pool_options,
                monitoring_mode: self.monitoring_mode,
                sdam_handler,
                cmap_handler,
                monitor_factory: self.monitor_factory.unwrap_or_else(default_monitor_factory),
            },
            servers: BTreeMap::new(),
            publisher: None,
            published: Arc::new(Published {
                key: NEXT_TOPOLOGY_KEY.fetch_add(1, Ordering::Relaxed),
                sequence: AtomicU64::new(0),
            }),
            closed: false,
            readiness: PoolReadiness::default(),
            _event_stop: event_stop,
        })
    }

    /// Builds and starts the topology (must run inside an actix system).
    pub fn start(self) -> Result<Topology> {
        Ok(self.build()?.spawn())
    }
}

struct Config {
    connection_options: Arc<ConnectionOptions>,
    pool_options: PoolOptions,
    monitoring_mode: ServerMonitoringMode,
    sdam_handler: Option<Arc<dyn SdamEventHandler>>,
    cmap_handler: Option<Arc<dyn CmapEventHandler>>,
    monitor_factory: MonitorFactory,
}

struct ServerEntry {
    handle: Arc<ServerHandle>,
    monitor: Option<MonitorHandles>,
}

/// The topology actor. Create it with [`TopologyBuilder`].
pub struct TopologyActor {
    id: TopologyId,
    description: TopologyDescription,
    /// Emitted when the actor starts (construction does no I/O and emits nothing).
    opening_events: Vec<SdamEvent>,
    config: Config,
    servers: BTreeMap<ServerAddress, ServerEntry>,
    publisher: Option<watch::Sender<Arc<TopologySnapshot>>>,
    /// The sequence of the snapshot last published, for [`Topology::snapshot`]'s cache.
    published: Arc<Published>,
    /// Set once `StopActor` began: later messages change nothing.
    closed: bool,
    /// The selection actors to tell when a pool becomes ready or is cleared.
    readiness: PoolReadiness,
    /// Dropped with the actor, however it goes: the event delivery threads end then.
    _event_stop: EventStopGuard,
}

/// However the actor goes (closed, or its actix System stopped under it, when no handler
/// runs any more), no connection outlives it: every pool is closed (idle connections close
/// now, checked-out ones at check-in) and the last snapshot says closed, so operations fail
/// with a typed error instead of waiting.
impl Drop for TopologyActor {
    fn drop(&mut self) {
        for entry in self.servers.values() {
            entry.handle.pool.close();
        }
        if let Some(publisher) = &self.publisher {
            if !publisher.borrow().closed {
                self.closed = true;
                let sequence = publisher.borrow().sequence + 1;
                let mut snapshot = self.make_snapshot(sequence);
                snapshot.closed = true;
                publisher.send_replace(Arc::new(snapshot));
                self.published.sequence.store(sequence, Ordering::Release);
            }
        }
    }
}

impl std::fmt::Debug for TopologyActor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TopologyActor")
            .field("id", &self.id)
            .field("description", &self.description)
            .field("closed", &self.closed)
            .finish_non_exhaustive()
    }
}

impl TopologyActor {
    /// The topology id.
    pub fn id(&self) -> TopologyId {
        self.id
    }

    /// The description (before start: the initial one).
    pub fn description(&self) -> &TopologyDescription {
        &self.description
    }

    /// Starts the actor, its servers' pools, pool actors and monitors, and publishes the
    /// first snapshot. Must run inside an actix system.
    pub fn spawn(self) -> Topology {
        let id = self.id;
        let connection_options = Arc::clone(&self.config.connection_options);
        let published = Arc::clone(&self.published);
        let mut receiver = None;
        let addr = TopologyActor::create(|ctx| {
            let mut actor = self;
            let events = std::mem::take(&mut actor.opening_events);
            actor.emit(events);
            let addresses: Vec<ServerAddress> = actor.description.addresses().cloned().collect();
            for a in addresses {
                actor.start_server(a, ctx);
            }
            let (tx, rx) = watch::channel(Arc::new(actor.make_snapshot(0)));
            actor.publisher = Some(tx);
            receiver = Some(rx);
            actor
        });
        let receiver = match receiver {
            Some(r) => r,
            // `create` runs its closure before returning; this is only for the type.
            None => {
                watch::channel(Arc::new(TopologySnapshot::new(
                    TopologyDescription::new(TopologySettings {
                        seeds: Vec::new(),
                        set_name: None,
                        direct_connection: None,
                        load_balanced: false,
                        heartbeat_frequency: protocol::sdam::DEFAULT_HEARTBEAT_FREQUENCY,
                        local_threshold: protocol::sdam::DEFAULT_LOCAL_THRESHOLD,
                        srv_max_hosts: None,
                    }),
                    BTreeMap::new(),
                    0,
                    true,
                )))
                .1
            }
        };
        let guard = Arc::new(CloseOnDrop(addr.clone()));
        Topology { id, addr, receiver, published, connection_options, _guard: guard }
    }

    fn emit(&self, events: Vec<SdamEvent>) {
        for e in &events {
            sdam_log::log_event(self.id, e);
            if let Some(h) = &self.config.sdam_handler {
                h.handle(e);
            }
        }
    }

    fn start_server(&mut self, address: ServerAddress, ctx: &mut Context<Self>) {
        if self.servers.contains_key(&address) {
            return;
        }
        let weak = ctx.address().downgrade();
        let hook_address = address.clone();
        // Establishment errors (background minPoolSize or a check-out's) are application
        // errors before the handshake; SDAM decides, with the generation checks. The pool
        // awaits the handling, so a clear precedes the failed connection's ConnectionClosed.
        let hook: EstablishmentErrorHook =
            Arc::new(move |error: &pool::Error, generation: u32, service_id| {
                let topology = weak.upgrade();
                let error = application_error(
                    hook_address.clone(),
                    error,
                    generation,
                    ErrorPhase::ConnectionEstablishment,
                    service_id,
                    None,
                );
                async move {
                    if let Some(topology) = topology {
                        // A stopped topology has nothing to update.
                        let _ = topology.send(ApplicationErrorOccurred { error }).await;
                    }
                }
                .boxed()
            });
        let mut builder = Pool::builder(
            address.clone(),
            ConnectionEstablisher::new((*self.config.connection_options).clone()),
        )
        .options(self.config.pool_options.clone())
        .topology_id(self.id.0.to_string())
        .on_establishment_error(hook)
        .maintained_by_owner();
        if let Some(h) = &self.config.cmap_handler {
            builder = builder.event_handler(h.clone());
        }
        let pool = match builder.build() {
            Ok(p) => p,
            Err(e) => {
                // Only possible outside a tokio runtime, which an actor never is.
                tracing::error!(target: sdam_log::LOG_TARGET, %address, error = %e, "cannot create a pool");
                return;
            }
        };
        let rtt = ServerRtt::new();
        let load_balanced = self.description.topology_type() == TopologyType::LoadBalanced;
        if load_balanced {
            // Load balancers are never monitored: the pool serves at once.
            pool.ready();
        }
        let pool_actor = PoolActor::new(pool.clone()).start();
        let monitor = if load_balanced { None } else { self.spawn_monitor(&address, &rtt, ctx) };
        let operations_gauge =
            metrics::gauge!(crate::observe::metrics::OPERATIONS_IN_FLIGHT, "server" => address.to_string());
        let handle =
            Arc::new(ServerHandle { rtt, pool, pool_actor, operations: Arc::default(), operations_gauge });
        self.servers.insert(address, ServerEntry { handle, monitor });
    }

    /// Starts the monitor of `address` through the factory (`None`, logged, when it fails).
    fn spawn_monitor(
        &self,
        address: &ServerAddress,
        rtt: &ServerRtt,
        ctx: &mut Context<Self>,
    ) -> Option<MonitorHandles> {
        let spawned = (self.config.monitor_factory)(MonitorSpawn {
            address: address.clone(),
            topology_id: self.id,
            topology: ctx.address().recipient(),
            connection_options: self.config.connection_options.clone(),
            heartbeat_frequency: self.description.settings().heartbeat_frequency,
            monitoring_mode: self.config.monitoring_mode,
            rtt: rtt.clone(),
            sdam_handler: self.config.sdam_handler.clone(),
        });
        match spawned {
            Ok(m) => Some(m),
            Err(e) => {
                tracing::error!(target: sdam_log::LOG_TARGET, %address, error = %e, "cannot start a monitor");
                None
            }
        }
    }

    /// Supervision: a monitor that stopped without being told to (its check loop died) is
    /// replaced, so its server is checked again.
    fn restart_stopped_monitors(&mut self, ctx: &mut Context<Self>) {
        if self.closed {
            return;
        }
        let stopped: Vec<ServerAddress> = self
            .servers
            .iter()
            .filter(|(_, e)| e.monitor.as_ref().is_some_and(|m| !m.stop.connected()))
            .map(|(a, _)| a.clone())
            .collect();
        for address in stopped {
            tracing::warn!(target: sdam_log::LOG_TARGET, %address, "the monitor stopped on its own; starting a new one");
            let Some(rtt) = self.servers.get(&address).map(|e| e.handle.rtt.clone()) else { continue };
            let monitor = self.spawn_monitor(&address, &rtt, ctx);
            if let Some(entry) = self.servers.get_mut(&address) {
                entry.monitor = monitor;
            }
        }
    }

    /// Stops a removed server's actors without waiting for them.
    fn stop_server(&mut self, address: &ServerAddress) {
        if let Some(entry) = self.servers.remove(address) {
            if let Some(m) = entry.monitor {
                m.stop.do_send(StopActor);
            }
            entry.handle.pool.close();
            entry.handle.pool_actor.do_send(StopActor);
        }
    }

    fn make_snapshot(&self, sequence: u64) -> TopologySnapshot {
        TopologySnapshot::new(
            self.description.clone(),
            self.servers.iter().map(|(a, e)| (a.clone(), e.handle.clone())).collect(),
            sequence,
            self.closed,
        )
    }

    /// Publishes a snapshot if the description (by SDAM equality) or the server set changed,
    /// then tells the selection actors which pools changed readiness meanwhile.
    fn publish_if_changed(&mut self) {
        let published = self.publish_snapshot();
        self.readiness.tell(published);
    }

    /// The snapshot's part of [`publish_if_changed`](Self::publish_if_changed): its sequence,
    /// if one was published.
    fn publish_snapshot(&mut self) -> Option<u64> {
        let tx = self.publisher.as_ref()?;
        let previous = tx.borrow().clone();
        let same_servers = previous.servers.len() == self.servers.len()
            && previous.servers.keys().zip(self.servers.keys()).all(|(a, b)| a == b);
        if same_servers && previous.closed == self.closed && previous.description.same_as(&self.description) {
            return None;
        }
        let sequence = previous.sequence + 1;
        tx.send_replace(Arc::new(self.make_snapshot(sequence)));
        // After the channel: a reader that sees this number finds the snapshot there.
        self.published.sequence.store(sequence, Ordering::Release);
        Some(sequence)
    }

    /// Carries out an applied update: events, starting and stopping servers, pool readiness,
    /// immediate checks of invalidated primaries.
    fn carry_out(&mut self, update: &TopologyUpdate, ctx: &mut Context<Self>) {
        if !update.is_applied() {
            return;
        }
        self.emit(update.events(self.id, &self.description));
        for a in &update.removed {
            self.stop_server(a);
        }
        for a in &update.added {
            self.start_server(a.clone(), ctx);
        }
        if let (Some(sd), Some(entry)) =
            (self.description.server(&update.address), self.servers.get(&update.address))
        {
            if pool_may_serve(sd.server_type, self.description.topology_type()) {
                self.readiness.change(&entry.handle.pool, |p| p.ready());
            }
        }
        for a in &update.check_now {
            if let Some(m) = self.servers.get(a).and_then(|e| e.monitor.as_ref()) {
                m.request_check.do_send(RequestImmediateCheck);
            }
        }
    }

    fn finish_close(&mut self) {
        let events = self.description.close(self.id);
        self.emit(events);
        self.publish_if_changed();
    }
}

/// The SDAM rule for marking a pool ready after a successful check.
fn pool_may_serve(ty: ServerType, topology: TopologyType) -> bool {
    matches!(
        ty,
        ServerType::Mongos
            | ServerType::RsPrimary
            | ServerType::RsSecondary
            | ServerType::Standalone
            | ServerType::LoadBalancer
    ) || (ty != ServerType::Unknown && topology == TopologyType::Single)
}

/// Describes a pool or connection error for SDAM error handling.
pub fn application_error(
    address: ServerAddress,
    error: &pool::Error,
    generation: u32,
    phase: ErrorPhase,
    service_id: Option<ObjectId>,
    max_wire_version: Option<i32>,
) -> ApplicationError {
    let kind = match error {
        pool::Error::Timeout { .. } => ApplicationErrorKind::Timeout,
        e if e.is_network_error() => ApplicationErrorKind::Network,
        pool::Error::Command { error, .. } => ApplicationErrorKind::Command {
            code: error.code,
            message: error.message.clone(),
            topology_version: error.topology_version,
            write_concern: false,
        },
        pool::Error::Authentication { code, message, .. } => ApplicationErrorKind::Command {
            code: *code,
            message: message.clone(),
            topology_version: None,
            write_concern: false,
        },
        other => ApplicationErrorKind::Command {
            code: None,
            message: other.to_string(),
            topology_version: None,
            write_concern: false,
        },
    };
    let phase = match (phase, error) {
        (ErrorPhase::ConnectionEstablishment, pool::Error::Authentication { .. }) => {
            ErrorPhase::Authentication
        }
        // A network error or timeout during the SASL conversation: not a possible overload
        // (the pool adds no backpressure label), so SDAM marks the server Unknown.
        (
            ErrorPhase::ConnectionEstablishment,
            pool::Error::Io { phase: pool::Phase::Authentication, .. }
            | pool::Error::Timeout { phase: pool::Phase::Authentication, .. },
        ) => ErrorPhase::Authentication,
        (p, _) => p,
    };
    ApplicationError {
        address,
        generation,
        service_id,
        max_wire_version,
        phase,
        kind,
        labels: error.labels(),
    }
}

impl Actor for TopologyActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        // Monitors are checked for once a heartbeat (at least once a second).
        let every = self.description.settings().heartbeat_frequency.min(std::time::Duration::from_secs(1));
        ctx.run_interval(every, |act, ctx| act.restart_stopped_monitors(ctx));
    }
}

impl Handler<ServerCheckCompleted> for TopologyActor {
    type Result = ();

    fn handle(&mut self, msg: ServerCheckCompleted, ctx: &mut Self::Context) {
        if self.closed || !self.servers.contains_key(&msg.address) {
            return;
        }
        let now = Some(std::time::Instant::now());
        let (description, interrupt) = match &msg.outcome {
            CheckOutcome::Succeeded { reply, average_rtt, .. } => {
                (ServerDescription::from_hello_reply(msg.address.clone(), reply, *average_rtt, now), false)
            }
            CheckOutcome::Failed { error } => (
                ServerDescription {
                    last_update_time: now,
                    ..ServerDescription::new_error(msg.address.clone(), error.to_string(), None)
                },
                error.is_timeout(),
            ),
        };
        let failed = description.error.is_some();
        let update = self.description.apply(description);
        if !update.is_applied() {
            tracing::trace!(target: sdam_log::LOG_TARGET, address = %msg.address, outcome = ?update.outcome, "check result ignored");
            return;
        }
        self.carry_out(&update, ctx);
        if failed {
            // After marking Unknown, before publishing: nobody selects the server with a
            // pool of the old generation.
            if let Some(entry) = self.servers.get(&msg.address) {
                self.readiness.change(&entry.handle.pool, |p| p.clear(None, interrupt));
            }
        }
        self.publish_if_changed();
    }
}

impl Handler<ApplicationErrorOccurred> for TopologyActor {
    type Result = ();

    fn handle(&mut self, msg: ApplicationErrorOccurred, ctx: &mut Self::Context) {
        let error = msg.error;
        if self.closed {
            return;
        }
        let Some(entry) = self.servers.get(&error.address) else { return };
        let generation = entry.handle.pool.generation(error.service_id);
        let decision = decide(&self.description, generation, &error);
        if let Some(why) = decision.ignored {
            tracing::trace!(target: sdam_log::LOG_TARGET, address = %error.address, ?why, "application error ignored");
            return;
        }
        if let Some(update) = self.description.apply_error_decision(&decision) {
            self.carry_out(&update, ctx);
        }
        if let Some(entry) = self.servers.get(&error.address) {
            if let Some(clear) = decision.clear_pool {
                self.readiness
                    .change(&entry.handle.pool, |p| p.clear(clear.service_id, clear.interrupt_in_use));
            }
            if let Some(m) = &entry.monitor {
                if decision.cancel_check {
                    m.cancel_check.do_send(CancelCheck);
                }
                if decision.request_immediate_check {
                    m.request_check.do_send(RequestImmediateCheck);
                }
            }
        }
        self.publish_if_changed();
    }
}

impl Handler<RequestImmediateCheck> for TopologyActor {
    type Result = ();

    fn handle(&mut self, _msg: RequestImmediateCheck, _ctx: &mut Self::Context) {
        // Every request is passed on: monitors remember one made during a check and keep
        // checks 500 ms apart, while dropping repeats here would stall a waiter for a whole
        // heartbeat when a check finds nothing new (no new snapshot).
        if self.closed {
            return;
        }
        for m in self.servers.values().filter_map(|e| e.monitor.as_ref()) {
            m.request_check.do_send(RequestImmediateCheck);
        }
    }
}

impl Handler<WatchPoolReadiness> for TopologyActor {
    type Result = ();

    fn handle(&mut self, msg: WatchPoolReadiness, _ctx: &mut Self::Context) {
        self.readiness.watch(msg.watcher);
    }
}

impl Handler<UpdateSrvHosts> for TopologyActor {
    type Result = bool;

    fn handle(&mut self, msg: UpdateSrvHosts, ctx: &mut Self::Context) -> bool {
        if self.closed {
            return false;
        }
        let Some(update) = self.description.apply_srv_hosts(&msg.hosts) else { return false };
        if !update.changed() {
            return false;
        }
        tracing::debug!(target: sdam_log::LOG_TARGET, added = ?update.added, removed = ?update.removed, "SRV hosts changed");
        self.emit(update.events(self.id, &self.description));
        for a in &update.removed {
            self.stop_server(a);
        }
        for a in &update.added {
            self.start_server(a.clone(), ctx);
        }
        self.publish_if_changed();
        true
    }
}

impl Handler<StopActor> for TopologyActor {
    type Result = ResponseActFuture<Self, ()>;

    fn handle(&mut self, _msg: StopActor, _ctx: &mut Self::Context) -> Self::Result {
        if self.closed {
            return Box::pin(actix::fut::ready(()));
        }
        self.closed = true;
        let mut stops: Vec<BoxFuture<'static, ()>> = Vec::new();
        for entry in self.servers.values() {
            if let Some(m) = &entry.monitor {
                let stop = m.stop.clone();
                stops.push(
                    async move {
                        let _ = stop.send(StopActor).await;
                    }
                    .boxed(),
                );
            }
            entry.handle.pool.close();
            let pool_actor = entry.handle.pool_actor.clone();
            stops.push(
                async move {
                    let _ = pool_actor.send(StopActor).await;
                }
                .boxed(),
            );
        }
        Box::pin(join_all(stops).into_actor(self).map(|_, act, ctx| {
            act.servers.clear();
            act.finish_close();
            ctx.stop();
        }))
    }
}

/// Shared by every clone of a [`Topology`]: when the last one goes, the topology closes
/// (monitors hold strong recipients of the actor, so it would otherwise run forever).
#[derive(Debug)]
struct CloseOnDrop(Addr<TopologyActor>);

impl Drop for CloseOnDrop {
    fn drop(&mut self) {
        // Ignored when the actor already stopped (closed explicitly).
        self.0.do_send(StopActor);
    }
}

/// A handle to a running topology: cheap to clone.
///
/// Dropping every clone closes the topology in the background, as [`close`](Self::close)
/// would (addresses taken with [`actor`](Self::actor) do not keep it open).
#[derive(Debug, Clone)]
pub struct Topology {
    id: TopologyId,
    addr: Addr<TopologyActor>,
    receiver: watch::Receiver<Arc<TopologySnapshot>>,
    /// What the actor published last (the receiver's lock is not taken to learn it).
    published: Arc<Published>,
    /// Shared with every pool and monitor (their handshake metadata included).
    connection_options: Arc<ConnectionOptions>,
    _guard: Arc<CloseOnDrop>,
}

/// The sequence of a topology's latest snapshot, next to a key no other topology of the
/// process has (ids can repeat: a user may choose them).
#[derive(Debug)]
struct Published {
    key: u64,
    sequence: AtomicU64,
}

static NEXT_TOPOLOGY_KEY: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// The snapshot this thread read last, by topology key and sequence: reading it again
    /// costs one reference count instead of the channel's lock. Weak, so that an idle thread
    /// keeps no pool or connection alive.
    static LAST_SNAPSHOT: std::cell::RefCell<(u64, u64, std::sync::Weak<TopologySnapshot>)> =
        const { std::cell::RefCell::new((0, 0, std::sync::Weak::new())) };
}

impl Topology {
    /// A builder.
    pub fn builder() -> TopologyBuilder {
        TopologyBuilder::new()
    }

    /// The topology's id (the `topologyId` of its events and log messages).
    pub fn id(&self) -> TopologyId {
        self.id
    }

    /// The options every connection of this topology is opened with.
    pub fn connection_options(&self) -> &ConnectionOptions {
        &self.connection_options
    }

    /// The actor's address.
    pub fn actor(&self) -> &Addr<TopologyActor> {
        &self.addr
    }

    /// The current snapshot (no mailbox round trip, and no lock while it stays current).
    pub fn snapshot(&self) -> Arc<TopologySnapshot> {
        let (key, sequence) = (self.published.key, self.published.sequence.load(Ordering::Acquire));
        // `try_with`: a thread's destructors may still select (the lock path serves them).
        let cached = LAST_SNAPSHOT
            .try_with(|last| {
                let last = last.borrow();
                (last.0 == key && last.1 == sequence).then(|| last.2.upgrade()).flatten()
            })
            .ok()
            .flatten();
        if let Some(snapshot) = cached {
            return snapshot;
        }
        let snapshot = self.receiver.borrow().clone();
        let _ = LAST_SNAPSHOT
            .try_with(|last| *last.borrow_mut() = (key, snapshot.sequence, Arc::downgrade(&snapshot)));
        snapshot
    }

    /// A receiver of every published snapshot.
    pub fn watch(&self) -> watch::Receiver<Arc<TopologySnapshot>> {
        self.receiver.clone()
    }

    /// Waits until a snapshot satisfies `predicate` (the current one included). `None` if
    /// `timeout` passes first or the topology closes without satisfying it.
    pub async fn wait_for(
        &self,
        mut predicate: impl FnMut(&TopologySnapshot) -> bool,
        timeout: Duration,
    ) -> Option<Arc<TopologySnapshot>> {
        let mut rx = self.receiver.clone();
        let wait = async {
            let found = rx.wait_for(|s| predicate(s) || s.closed).await.ok()?.clone();
            (!found.closed || predicate(&found)).then_some(found)
        };
        tokio::time::timeout(timeout, wait).await.ok().flatten()
    }

    /// Reports an error an operation saw on a pooled connection.
    pub async fn report_error(&self, error: ApplicationError) -> Result<()> {
        self.addr.send(ApplicationErrorOccurred { error }).await.map_err(|_| Error::stopped("topology"))
    }

    /// Asks every monitor for an immediate check (at most once per snapshot).
    pub async fn request_immediate_check(&self) -> Result<()> {
        self.addr.send(RequestImmediateCheck).await.map_err(|_| Error::stopped("topology"))
    }

    /// Closes the topology: stops every monitor and pool actor, waits for them, emits the
    /// closing events and publishes a final, empty snapshot. Idempotent.
    pub async fn close(&self) -> Result<()> {
        // An actor already gone was closed by someone else; wait for its final snapshot.
        let _ = self.addr.send(StopActor).await;
        let mut rx = self.receiver.clone();
        let closed = rx.wait_for(|s| s.closed).await.is_ok();
        if closed {
            Ok(())
        } else {
            Err(Error::stopped("topology"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr() -> ServerAddress {
        ServerAddress::Tcp { host: "a".into(), port: Some(27017) }
    }

    #[test]
    fn network_error_during_authentication_is_not_an_overload() {
        let io = pool::Error::Io {
            address: addr(),
            phase: pool::Phase::Authentication,
            source: Arc::new(std::io::Error::from(std::io::ErrorKind::ConnectionReset)),
        };
        let app = application_error(addr(), &io, 0, ErrorPhase::ConnectionEstablishment, None, None);
        assert_eq!(app.phase, ErrorPhase::Authentication);
        assert!(matches!(app.kind, ApplicationErrorKind::Network));
        assert!(!app.is_overload());

        let timeout = pool::Error::Timeout { address: addr(), phase: pool::Phase::Authentication };
        let app = application_error(addr(), &timeout, 0, ErrorPhase::ConnectionEstablishment, None, None);
        assert_eq!(app.phase, ErrorPhase::Authentication);
        assert!(matches!(app.kind, ApplicationErrorKind::Timeout));
        assert!(!app.is_overload());

        // A network error while connecting stays a possible overload.
        let connect = pool::Error::Timeout { address: addr(), phase: pool::Phase::TcpConnect };
        let app = application_error(addr(), &connect, 0, ErrorPhase::ConnectionEstablishment, None, None);
        assert_eq!(app.phase, ErrorPhase::ConnectionEstablishment);
        assert!(app.is_overload());
    }
}
