//! Metrics recorded through the `metrics` crate, from the same events subscribers see: the
//! OpenTelemetry semantic conventions' database client metrics (`db.client.*`), then this
//! client's own (`mongo_actors.*`). Any exporter of the `metrics` crate takes them (Prometheus
//! writes `db.client.operation.duration` as `db_client_operation_duration`).
//!
//! The client wraps the user's SDAM and CMAP event handlers with [`sdam_handler`] and
//! [`cmap_handler`], and records operation and command metrics itself without building
//! events ([`command_handler`] does the same for a handler of your own). Metric handles are
//! resolved once per server (or name) and cached in the wrapper, so install the recorder before
//! building the client: a client built with no recorder installed records nothing and reads no
//! clock for metrics.
//!
//! | name | kind | labels | what |
//! |---|---|---|---|
//! | `db.client.operation.duration` | histogram (s) | `db.system.name`, `db.namespace`, `db.collection.name`, `db.operation.name`, `server.address`, `server.port`, and on failure `error.type`, `db.response.status_code` | an operation from the call to its read result (selection, check-out, retries) |
//! | `db.client.connection.count` | gauge | `db.client.connection.pool.name` (the server), `db.client.connection.state` = idle/used | a pool's connections |
//! | `db.client.connection.max` | gauge | pool name | `maxPoolSize` |
//! | `db.client.connection.idle.min` | gauge | pool name | `minPoolSize` |
//! | `db.client.connection.pending_requests` | gauge | pool name | check-outs waiting |
//! | `db.client.connection.timeouts` | counter | pool name | check-outs that timed out |
//! | `db.client.connection.create_time` | histogram (s) | pool name | connection establishment (handshake and authentication) |
//! | `db.client.connection.wait_time` | histogram (s) | pool name | check-out waits that got a connection |
//! | `db.client.connection.use_time` | histogram (s) | pool name | check-out to check-in |
//! | `mongo_actors.command.duration` | histogram (s) | `db.command.name`, `outcome` = succeeded/failed | one command's round trip |
//! | `mongo_actors.server_selection.duration` | histogram (s) | `outcome`, `path` = fast/waiter | server selection |
//! | `mongo_actors.server_selection.waiters` | gauge | | selections waiting in the selection actor |
//! | `mongo_actors.operations.in_flight` | gauge | `server` | operations running on a server |
//! | `mongo_actors.heartbeats` | counter | `server`, `outcome` | monitor heartbeats |
//! | `mongo_actors.heartbeat.duration` | histogram (s) | `server` | heartbeats (awaited ones included) |
//! | `mongo_actors.server.rtt` | gauge (s) | `server` | the last round trip time |
//! | `mongo_actors.topology.changes` | counter | | topology description changes |
//! | `mongo_actors.admission.rejections` | counter | `queue` = server_selection/connection_pool | operations refused by admission control |
//! | `mongo_actors.events.dropped` | counter | `kind` = sdam/cmap/command | events a full subscriber queue dropped |

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use metrics::{Counter, Gauge, Histogram};
use parking_lot::{Mutex, RwLock};
use pool::cmap::{CheckOutFailedReason, CmapEvent, CmapEventHandler};
use protocol::sdam::events::SdamEvent;
use protocol::ServerAddress;

use crate::observe::command_events::{CommandEvent, CommandEventHandler};
use crate::observe::delivery::SdamEventHandler;

/// Operations, from the call to the read result (semantic conventions).
pub const OPERATION_DURATION: &str = "db.client.operation.duration";
/// A pool's connections by state, `idle` or `used` (semantic conventions).
pub const CONNECTION_COUNT: &str = "db.client.connection.count";
/// A pool's `maxPoolSize` (semantic conventions).
pub const CONNECTION_MAX: &str = "db.client.connection.max";
/// A pool's `minPoolSize` (semantic conventions).
pub const CONNECTION_IDLE_MIN: &str = "db.client.connection.idle.min";
/// Check-outs waiting for a connection (semantic conventions).
pub const CONNECTION_PENDING_REQUESTS: &str = "db.client.connection.pending_requests";
/// Check-outs that timed out (semantic conventions).
pub const CONNECTION_TIMEOUTS: &str = "db.client.connection.timeouts";
/// Connection establishment times, in seconds (semantic conventions).
pub const CONNECTION_CREATE_TIME: &str = "db.client.connection.create_time";
/// Check-out waits that got a connection, in seconds (semantic conventions).
pub const CONNECTION_WAIT_TIME: &str = "db.client.connection.wait_time";
/// Check-out to check-in, in seconds (semantic conventions).
pub const CONNECTION_USE_TIME: &str = "db.client.connection.use_time";
/// One command's round trip, per command name and outcome, in seconds.
pub const COMMAND_DURATION: &str = "mongo_actors.command.duration";
/// Server selection, per outcome and path, in seconds.
pub const SERVER_SELECTION_DURATION: &str = "mongo_actors.server_selection.duration";
/// Selections waiting in the selection actor.
pub const SERVER_SELECTION_WAITERS: &str = "mongo_actors.server_selection.waiters";
/// Operations running on a server.
pub const OPERATIONS_IN_FLIGHT: &str = "mongo_actors.operations.in_flight";
/// Heartbeats per server and outcome (`succeeded` | `failed`).
pub const HEARTBEATS: &str = "mongo_actors.heartbeats";
/// Heartbeat durations per server, in seconds.
pub const HEARTBEAT_DURATION: &str = "mongo_actors.heartbeat.duration";
/// The last round trip time measured to a server, in seconds.
pub const SERVER_RTT: &str = "mongo_actors.server.rtt";
/// Topology description changes.
pub const TOPOLOGY_CHANGES: &str = "mongo_actors.topology.changes";
/// Operations admission control refused, per queue (`server_selection` | `connection_pool`).
pub const ADMISSION_REJECTIONS: &str = "mongo_actors.admission.rejections";

const POOL: &str = "db.client.connection.pool.name";
const STATE: &str = "db.client.connection.state";

/// Handles resolved once per key: a lookup under a read lock instead of building a labelled
/// key on every event (CMAP events come several times per operation).
struct Cache<K, V> {
    map: RwLock<HashMap<K, Arc<V>>>,
}

impl<K: std::hash::Hash + Eq + Clone, V> Cache<K, V> {
    fn new() -> Self {
        Cache { map: RwLock::new(HashMap::new()) }
    }

    fn get<Q>(&self, key: &Q, make: impl FnOnce(&Q) -> (K, V)) -> Arc<V>
    where
        K: std::borrow::Borrow<Q>,
        Q: std::hash::Hash + Eq + ?Sized,
    {
        if let Some(v) = self.map.read().get(key) {
            return v.clone();
        }
        let (k, v) = make(key);
        self.map.write().entry(k).or_insert_with(|| Arc::new(v)).clone()
    }
}

struct PoolMetrics {
    idle: Gauge,
    used: Gauge,
    max: Gauge,
    idle_min: Gauge,
    pending: Gauge,
    timeouts: Counter,
    rejections: Counter,
    create_time: Histogram,
    wait_time: Histogram,
    use_time: Histogram,
    /// When each checked-out connection was checked out, by id.
    checked_out: Mutex<HashMap<u32, Instant>>,
}

impl PoolMetrics {
    fn new(address: &ServerAddress) -> Self {
        let pool = address.to_string();
        PoolMetrics {
            idle: metrics::gauge!(CONNECTION_COUNT, POOL => pool.clone(), STATE => "idle"),
            used: metrics::gauge!(CONNECTION_COUNT, POOL => pool.clone(), STATE => "used"),
            max: metrics::gauge!(CONNECTION_MAX, POOL => pool.clone()),
            idle_min: metrics::gauge!(CONNECTION_IDLE_MIN, POOL => pool.clone()),
            pending: metrics::gauge!(CONNECTION_PENDING_REQUESTS, POOL => pool.clone()),
            timeouts: metrics::counter!(CONNECTION_TIMEOUTS, POOL => pool.clone()),
            rejections: metrics::counter!(ADMISSION_REJECTIONS, "queue" => "connection_pool"),
            create_time: metrics::histogram!(CONNECTION_CREATE_TIME, POOL => pool.clone()),
            wait_time: metrics::histogram!(CONNECTION_WAIT_TIME, POOL => pool.clone()),
            use_time: metrics::histogram!(CONNECTION_USE_TIME, POOL => pool),
            checked_out: Mutex::new(HashMap::new()),
        }
    }

    fn record(&self, event: &CmapEvent) {
        match event {
            CmapEvent::PoolCreated { options, .. } => {
                self.max.set(f64::from(options.max_pool_size()));
                self.idle_min.set(f64::from(options.min_pool_size()));
            }
            // A connection is idle from its creation until checked out, and closed idle (a
            // checked-out connection is checked in before it is closed).
            CmapEvent::ConnectionCreated { .. } => self.idle.increment(1.0),
            CmapEvent::ConnectionClosed { .. } => self.idle.decrement(1.0),
            CmapEvent::ConnectionReady { duration, .. } => self.create_time.record(duration.as_secs_f64()),
            CmapEvent::CheckOutStarted { .. } => self.pending.increment(1.0),
            CmapEvent::CheckOutFailed { reason, .. } => {
                self.pending.decrement(1.0);
                match reason {
                    CheckOutFailedReason::Timeout => self.timeouts.increment(1),
                    CheckOutFailedReason::WaitQueueFull => self.rejections.increment(1),
                    _ => {}
                }
            }
            CmapEvent::CheckedOut { connection_id, duration, .. } => {
                self.pending.decrement(1.0);
                self.idle.decrement(1.0);
                self.used.increment(1.0);
                self.wait_time.record(duration.as_secs_f64());
                self.checked_out.lock().insert(*connection_id, Instant::now());
            }
            CmapEvent::CheckedIn { connection_id, .. } => {
                self.used.decrement(1.0);
                self.idle.increment(1.0);
                if let Some(at) = self.checked_out.lock().remove(connection_id) {
                    self.use_time.record(at.elapsed().as_secs_f64());
                }
            }
            _ => {}
        }
    }
}

struct RecordCmap {
    pools: Cache<ServerAddress, PoolMetrics>,
    inner: Option<Arc<dyn CmapEventHandler>>,
}

impl pool::events::EventHandler<CmapEvent> for RecordCmap {
    // Recording is quick and never blocks; the inner handler is bounded already.
    fn delivery(&self) -> crate::observe::delivery::Delivery {
        crate::observe::delivery::Delivery::InPlace { backlog: 0 }
    }

    fn handle(&self, event: &CmapEvent) {
        let address = event.address();
        self.pools.get(address, |a| (a.clone(), PoolMetrics::new(a))).record(event);
        if let Some(inner) = &self.inner {
            inner.handle(event);
        }
    }
}

struct HeartbeatMetrics {
    succeeded: Counter,
    failed: Counter,
    duration: Histogram,
    rtt: Gauge,
}

struct RecordSdam {
    servers: Cache<ServerAddress, HeartbeatMetrics>,
    topology_changes: Counter,
    inner: Option<Arc<dyn SdamEventHandler>>,
}

impl RecordSdam {
    fn server(&self, address: &ServerAddress) -> Arc<HeartbeatMetrics> {
        self.servers.get(address, |a| {
            let server = a.to_string();
            (
                a.clone(),
                HeartbeatMetrics {
                    succeeded: metrics::counter!(HEARTBEATS, "server" => server.clone(), "outcome" => "succeeded"),
                    failed: metrics::counter!(HEARTBEATS, "server" => server.clone(), "outcome" => "failed"),
                    duration: metrics::histogram!(HEARTBEAT_DURATION, "server" => server.clone()),
                    rtt: metrics::gauge!(SERVER_RTT, "server" => server),
                },
            )
        })
    }
}

impl pool::events::EventHandler<SdamEvent> for RecordSdam {
    // Recording is quick and never blocks; the inner handler is bounded already.
    fn delivery(&self) -> crate::observe::delivery::Delivery {
        crate::observe::delivery::Delivery::InPlace { backlog: 0 }
    }

    fn handle(&self, event: &SdamEvent) {
        match event {
            SdamEvent::ServerHeartbeatSucceeded(e) => {
                let m = self.server(&e.connection_id.address);
                m.succeeded.increment(1);
                m.duration.record(e.duration.as_secs_f64());
                // An awaited (streaming) hello waits for a change: its duration is no RTT.
                if !e.awaited {
                    m.rtt.set(e.duration.as_secs_f64());
                }
            }
            SdamEvent::ServerHeartbeatFailed(e) => {
                let m = self.server(&e.connection_id.address);
                m.failed.increment(1);
                m.duration.record(e.duration.as_secs_f64());
            }
            // With streaming, RTTs come from the RTT pinger into the descriptions.
            SdamEvent::ServerDescriptionChanged(e) => {
                if let Some(rtt) = e.new_description.round_trip_time {
                    self.server(&e.address).rtt.set(rtt.as_secs_f64());
                }
            }
            SdamEvent::TopologyDescriptionChanged(_) => self.topology_changes.increment(1),
            _ => {}
        }
        if let Some(inner) = &self.inner {
            inner.handle(event);
        }
    }
}

struct CommandMetrics {
    succeeded: Histogram,
    failed: Histogram,
}

/// The labels of an operation's duration that do not depend on its outcome.
#[derive(Clone, PartialEq, Eq, Hash)]
pub(crate) struct OperationKey {
    pub name: String,
    pub db: String,
    pub collection: Option<String>,
    /// The server that answered, else the one an error names (`None`: no server was
    /// selected).
    pub address: Option<ServerAddress>,
}

/// Records operation and command metrics; the client calls [`record`](Self::record) and
/// [`record_operation`](Self::record_operation) directly, so that metrics alone never build
/// events.
pub(crate) struct RecordCommands {
    commands: Cache<String, CommandMetrics>,
    operations: Cache<OperationKey, Histogram>,
    inner: Option<Arc<dyn CommandEventHandler>>,
    /// A recorder was installed when the client was built.
    enabled: bool,
}

impl RecordCommands {
    /// A recorder that forwards the events it handles to `inner`.
    pub(crate) fn new(inner: Option<Arc<dyn CommandEventHandler>>) -> Self {
        RecordCommands {
            commands: Cache::new(),
            operations: Cache::new(),
            inner,
            enabled: recorder_installed(),
        }
    }

    /// Whether a recorder was installed when the client was built.
    #[inline]
    pub(crate) fn enabled(&self) -> bool {
        self.enabled
    }

    /// Records one command's outcome and duration (nothing without a recorder).
    pub(crate) fn record(&self, command_name: &str, succeeded: bool, duration: std::time::Duration) {
        if !self.enabled {
            return;
        }
        let m = self.command(command_name);
        let h = if succeeded { &m.succeeded } else { &m.failed };
        h.record(duration.as_secs_f64());
    }

    /// Records one operation's duration: a succeeded one through a cached handle, a failed
    /// one with its error's type and server code.
    pub(crate) fn record_operation(
        &self,
        key: &OperationKey,
        duration: std::time::Duration,
        error: Option<&crate::error::Error>,
    ) {
        if !self.enabled {
            return;
        }
        let seconds = duration.as_secs_f64();
        let Some(error) = error else {
            let h = self
                .operations
                .get(key, |k| (k.clone(), metrics::histogram!(OPERATION_DURATION, operation_labels(k))));
            h.record(seconds);
            return;
        };
        let mut labels = operation_labels(key);
        labels.push(metrics::Label::from_static_parts("error.type", error.kind.name()));
        if let Some(code) = error.code() {
            labels.push(metrics::Label::new("db.response.status_code", code.to_string()));
        }
        metrics::histogram!(OPERATION_DURATION, labels).record(seconds);
    }

    fn command(&self, name: &str) -> Arc<CommandMetrics> {
        self.commands.get(name, |n| {
            let command = n.to_owned();
            (
                command.clone(),
                CommandMetrics {
                    succeeded: metrics::histogram!(COMMAND_DURATION, "db.command.name" => command.clone(), "outcome" => "succeeded"),
                    failed: metrics::histogram!(COMMAND_DURATION, "db.command.name" => command, "outcome" => "failed"),
                },
            )
        })
    }
}

/// The semantic conventions' attributes of an operation.
fn operation_labels(key: &OperationKey) -> Vec<metrics::Label> {
    let mut labels = vec![
        metrics::Label::from_static_parts("db.system.name", "mongodb"),
        metrics::Label::new("db.namespace", key.db.clone()),
        metrics::Label::new("db.operation.name", key.name.clone()),
    ];
    if let Some(c) = &key.collection {
        labels.push(metrics::Label::new("db.collection.name", c.clone()));
    }
    match &key.address {
        Some(ServerAddress::Tcp { host, port }) => {
            labels.push(metrics::Label::new("server.address", host.clone()));
            labels.push(metrics::Label::new("server.port", port.unwrap_or(27017).to_string()));
        }
        Some(other) => labels.push(metrics::Label::new("server.address", other.to_string())),
        None => {}
    }
    labels
}

impl pool::events::EventHandler<CommandEvent> for RecordCommands {
    // Recording is quick and never blocks; the inner handler is bounded already.
    fn delivery(&self) -> crate::observe::delivery::Delivery {
        crate::observe::delivery::Delivery::InPlace { backlog: 0 }
    }

    fn handle(&self, event: &CommandEvent) {
        match event {
            CommandEvent::Succeeded { command_name, duration, .. } => {
                self.record(command_name, true, *duration)
            }
            CommandEvent::Failed { command_name, duration, .. } => {
                self.record(command_name, false, *duration)
            }
            _ => {}
        }
        if let Some(inner) = &self.inner {
            inner.handle(event);
        }
    }
}

/// Whether a recorder that keeps values is installed: `metrics`' no-op recorder is a unit
/// struct, and every recorder that keeps values has state. Without one, the client records
/// nothing and builds no event for the metrics' sake.
pub fn recorder_installed() -> bool {
    metrics::with_recorder(|r| std::mem::size_of_val(r) != 0)
}

/// An SDAM handler that records heartbeat, RTT and topology metrics, then forwards to
/// `inner`; `inner` itself when no recorder is installed.
pub fn sdam_handler(inner: Option<Arc<dyn SdamEventHandler>>) -> Option<Arc<dyn SdamEventHandler>> {
    if !recorder_installed() {
        return inner;
    }
    Some(Arc::new(RecordSdam {
        servers: Cache::new(),
        topology_changes: metrics::counter!(TOPOLOGY_CHANGES),
        inner,
    }))
}

/// A CMAP handler that records pool metrics, then forwards to `inner`; `inner` itself when
/// no recorder is installed (the pools then build no check-out or check-in event nobody
/// takes).
pub fn cmap_handler(inner: Option<Arc<dyn CmapEventHandler>>) -> Option<Arc<dyn CmapEventHandler>> {
    if !recorder_installed() {
        return inner;
    }
    Some(Arc::new(RecordCmap { pools: Cache::new(), inner }))
}

/// A command handler that records command metrics, then forwards to `inner`.
pub fn command_handler(inner: Option<Arc<dyn CommandEventHandler>>) -> Option<Arc<dyn CommandEventHandler>> {
    Some(Arc::new(RecordCommands::new(inner)))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use bson::doc;
    use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
    use metrics_util::{CompositeKey, MetricKind};
    use protocol::sdam::events::{ConnectionId, ServerHeartbeatFailedEvent, ServerHeartbeatSucceededEvent};

    use super::*;
    use crate::observe::command_events::CommandConnection;

    fn address() -> ServerAddress {
        ServerAddress::parse("db1:27017").expect("address")
    }

    type Values = HashMap<(MetricKind, String, Vec<(String, String)>), DebugValue>;

    /// Every metric of the snapshot as (kind, name, sorted labels) -> value.
    fn values(snapshotter: &Snapshotter) -> Values {
        snapshotter
            .snapshot()
            .into_vec()
            .into_iter()
            .map(|(key, _, _, value): (CompositeKey, _, _, _)| {
                let (kind, key) = key.into_parts();
                let mut labels: Vec<_> =
                    key.labels().map(|l| (l.key().to_owned(), l.value().to_owned())).collect();
                labels.sort();
                ((kind, key.name().to_owned(), labels), value)
            })
            .collect()
    }

    fn labels(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        let mut v: Vec<_> = pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        v.sort();
        v
    }

    fn value<'v>(values: &'v Values, kind: MetricKind, name: &str, pairs: &[(&str, &str)]) -> &'v DebugValue {
        match values.get(&(kind, name.to_owned(), labels(pairs))) {
            Some(v) => v,
            None => panic!("{name} {pairs:?} not recorded: {:?}", values.keys().collect::<Vec<_>>()),
        }
    }

    fn gauge(values: &Values, name: &str, pairs: &[(&str, &str)]) -> f64 {
        match value(values, MetricKind::Gauge, name, pairs) {
            DebugValue::Gauge(v) => v.into_inner(),
            other => panic!("{name}: {other:?}"),
        }
    }

    fn counter(values: &Values, name: &str, pairs: &[(&str, &str)]) -> u64 {
        match value(values, MetricKind::Counter, name, pairs) {
            DebugValue::Counter(n) => *n,
            other => panic!("{name}: {other:?}"),
        }
    }

    fn histogram(values: &Values, name: &str, pairs: &[(&str, &str)]) -> Vec<f64> {
        match value(values, MetricKind::Histogram, name, pairs) {
            DebugValue::Histogram(h) => {
                let mut got: Vec<f64> = h.iter().map(|x| x.into_inner()).collect();
                got.sort_by(f64::total_cmp);
                got
            }
            other => panic!("{name}: {other:?}"),
        }
    }

    const POOL_DB1: (&str, &str) = (POOL, "db1:27017");

    #[test]
    fn pool_metrics_follow_cmap_events_and_inner_handler_still_runs() {
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        let (tx, rx) = crossbeam_channel::unbounded::<CmapEvent>();
        let a = address();
        let events = [
            CmapEvent::PoolCreated {
                address: a.clone(),
                options: pool::cmap::PoolOptions::builder()
                    .max_pool_size(7)
                    .min_pool_size(2)
                    .build()
                    .expect("options"),
            },
            CmapEvent::ConnectionCreated { address: a.clone(), connection_id: 1 },
            CmapEvent::ConnectionCreated { address: a.clone(), connection_id: 2 },
            CmapEvent::ConnectionCreated { address: a.clone(), connection_id: 3 },
            CmapEvent::ConnectionReady {
                address: a.clone(),
                connection_id: 1,
                duration: Duration::from_millis(5),
            },
            CmapEvent::ConnectionClosed {
                address: a.clone(),
                connection_id: 3,
                reason: pool::cmap::ConnectionClosedReason::Error,
                error: None,
            },
            CmapEvent::CheckOutStarted { address: a.clone() },
            CmapEvent::CheckOutStarted { address: a.clone() },
            CmapEvent::CheckOutStarted { address: a.clone() },
            CmapEvent::CheckOutStarted { address: a.clone() },
            CmapEvent::CheckedOut {
                address: a.clone(),
                connection_id: 1,
                duration: Duration::from_millis(2),
            },
            CmapEvent::CheckedOut {
                address: a.clone(),
                connection_id: 2,
                duration: Duration::from_millis(1),
            },
            CmapEvent::CheckOutFailed {
                address: a.clone(),
                reason: CheckOutFailedReason::Timeout,
                error: None,
                duration: Duration::from_millis(9),
            },
            CmapEvent::CheckedIn { address: a.clone(), connection_id: 1 },
        ];
        metrics::with_local_recorder(&recorder, || {
            let handler = cmap_handler(Some(Arc::new(tx))).expect("a handler");
            for e in &events {
                handler.handle(e);
            }
        });
        let v = values(&snapshotter);
        assert_eq!(gauge(&v, CONNECTION_COUNT, &[POOL_DB1, (STATE, "idle")]), 1.0);
        assert_eq!(gauge(&v, CONNECTION_COUNT, &[POOL_DB1, (STATE, "used")]), 1.0);
        assert_eq!(gauge(&v, CONNECTION_MAX, &[POOL_DB1]), 7.0);
        assert_eq!(gauge(&v, CONNECTION_IDLE_MIN, &[POOL_DB1]), 2.0);
        assert_eq!(gauge(&v, CONNECTION_PENDING_REQUESTS, &[POOL_DB1]), 1.0);
        assert_eq!(counter(&v, CONNECTION_TIMEOUTS, &[POOL_DB1]), 1);
        assert_eq!(histogram(&v, CONNECTION_CREATE_TIME, &[POOL_DB1]), [0.005]);
        assert_eq!(histogram(&v, CONNECTION_WAIT_TIME, &[POOL_DB1]), [0.001, 0.002]);
        assert_eq!(histogram(&v, CONNECTION_USE_TIME, &[POOL_DB1]).len(), 1);
        assert_eq!(rx.len(), events.len(), "every event is forwarded");
    }

    fn connection_id() -> ConnectionId {
        ConnectionId { address: address(), driver_connection_id: Some(1), server_connection_id: None }
    }

    #[test]
    fn heartbeats_and_rtt_from_sdam_events() {
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        metrics::with_local_recorder(&recorder, || {
            let handler = sdam_handler(None).expect("a handler");
            handler.handle(&SdamEvent::ServerHeartbeatSucceeded(ServerHeartbeatSucceededEvent {
                duration: Duration::from_millis(4),
                reply: doc! { "ok": 1 },
                connection_id: connection_id(),
                awaited: false,
            }));
            // Awaited: counted, but not an RTT sample.
            handler.handle(&SdamEvent::ServerHeartbeatSucceeded(ServerHeartbeatSucceededEvent {
                duration: Duration::from_secs(10),
                reply: doc! { "ok": 1 },
                connection_id: connection_id(),
                awaited: true,
            }));
            handler.handle(&SdamEvent::ServerHeartbeatFailed(ServerHeartbeatFailedEvent {
                duration: Duration::from_millis(2),
                failure: "closed".into(),
                connection_id: connection_id(),
                awaited: false,
            }));
        });
        let v = values(&snapshotter);
        let server = ("server", "db1:27017");
        assert_eq!(counter(&v, HEARTBEATS, &[server, ("outcome", "succeeded")]), 2);
        assert_eq!(counter(&v, HEARTBEATS, &[server, ("outcome", "failed")]), 1);
        assert_eq!(gauge(&v, SERVER_RTT, &[server]), 0.004);
        assert_eq!(histogram(&v, HEARTBEAT_DURATION, &[server]), [0.002, 0.004, 10.0]);
    }

    #[test]
    fn commands_counted_by_name_and_outcome() {
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        let connection = CommandConnection {
            address: address(),
            driver_connection_id: 1,
            server_connection_id: None,
            service_id: None,
        };
        metrics::with_local_recorder(&recorder, || {
            let handler = command_handler(None).expect("a handler");
            for ok in [true, true, false] {
                handler.handle(&CommandEvent::Started {
                    command: doc! { "find": "c" },
                    database_name: "db".into(),
                    command_name: "find".into(),
                    request_id: 1,
                    operation_id: 1,
                    connection: connection.clone(),
                });
                handler.handle(&if ok {
                    CommandEvent::Succeeded {
                        reply: doc! { "ok": 1 },
                        command_name: "find".into(),
                        database_name: "db".into(),
                        request_id: 1,
                        operation_id: 1,
                        duration: Duration::from_millis(1),
                        connection: connection.clone(),
                    }
                } else {
                    CommandEvent::Failed {
                        failure: "boom".into(),
                        error: crate::observe::command_events::CommandFailure(crate::error::Error::custom(
                            "boom",
                        )),
                        command_name: "find".into(),
                        database_name: "db".into(),
                        request_id: 1,
                        operation_id: 1,
                        duration: Duration::from_millis(3),
                        connection: connection.clone(),
                    }
                });
            }
        });
        let v = values(&snapshotter);
        let find = ("db.command.name", "find");
        assert_eq!(histogram(&v, COMMAND_DURATION, &[find, ("outcome", "succeeded")]), [0.001, 0.001]);
        assert_eq!(histogram(&v, COMMAND_DURATION, &[find, ("outcome", "failed")]), [0.003]);
    }

    #[test]
    fn operation_durations_with_the_semantic_conventions_attributes() {
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        metrics::with_local_recorder(&recorder, || {
            let record = RecordCommands { enabled: true, ..RecordCommands::new(None) };
            let key = OperationKey {
                name: "find".into(),
                db: "shop".into(),
                collection: Some("orders".into()),
                address: Some(address()),
            };
            record.record_operation(&key, Duration::from_millis(7), None);
            record.record_operation(&key, Duration::from_millis(8), None);
            let e = crate::error::Error::invalid_argument("no");
            record.record_operation(
                &OperationKey { address: None, ..key },
                Duration::from_millis(1),
                Some(&e),
            );
        });
        let v = values(&snapshotter);
        let common = [
            ("db.system.name", "mongodb"),
            ("db.namespace", "shop"),
            ("db.operation.name", "find"),
            ("db.collection.name", "orders"),
        ];
        let ok: Vec<_> =
            common.iter().copied().chain([("server.address", "db1"), ("server.port", "27017")]).collect();
        assert_eq!(histogram(&v, OPERATION_DURATION, &ok), [0.007, 0.008]);
        let failed: Vec<_> = common.iter().copied().chain([("error.type", "InvalidArgument")]).collect();
        assert_eq!(histogram(&v, OPERATION_DURATION, &failed), [0.001]);
    }
}
