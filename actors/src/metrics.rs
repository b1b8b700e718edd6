//! Metrics recorded through the `metrics` crate, from the same events subscribers see.
//!
//! The client wraps the user's SDAM and CMAP event handlers with [`sdam_handler`] and
//! [`cmap_handler`], and records command metrics itself without building command events
//! ([`command_handler`] does the same for a handler of your own). Metric handles are resolved once per server (or command name) and
//! cached in the wrapper, so install the recorder before building the client: a client built
//! with no recorder installed records nothing.
//!
//! | name | kind | labels | from |
//! |---|---|---|---|
//! | `mongo_actors_pool_connections` | gauge | `server` | CMAP: connection created +1, closed -1 |
//! | `mongo_actors_pool_checked_out` | gauge | `server` | CMAP: checked out +1, checked in -1 |
//! | `mongo_actors_heartbeats_total` | counter | `server`, `outcome` | SDAM heartbeat succeeded/failed |
//! | `mongo_actors_heartbeat_duration_seconds` | histogram | `server` | SDAM heartbeat succeeded/failed |
//! | `mongo_actors_server_rtt_seconds` | gauge | `server` | non-awaited heartbeats, and RTTs in server descriptions |
//! | `mongo_actors_commands_total` | counter | `command`, `outcome` | command succeeded/failed |
//! | `mongo_actors_command_duration_seconds` | histogram | `command` | command succeeded/failed |

use std::collections::HashMap;
use std::sync::Arc;

use metrics::{Counter, Gauge, Histogram};
use parking_lot::RwLock;
use pool::cmap::{CmapEvent, CmapEventHandler};
use protocol::sdam::events::SdamEvent;
use protocol::ServerAddress;

use crate::command_events::{CommandEvent, CommandEventHandler};
use crate::events::SdamEventHandler;

/// Pool size gauge: connections of a server's pool (created +1, closed -1).
pub const POOL_CONNECTIONS: &str = "mongo_actors_pool_connections";
/// Checked-out connections of a server's pool (checked out +1, checked in -1).
pub const POOL_CHECKED_OUT: &str = "mongo_actors_pool_checked_out";
/// Heartbeats per server and outcome (`succeeded` | `failed`).
pub const HEARTBEATS_TOTAL: &str = "mongo_actors_heartbeats_total";
/// Heartbeat durations per server, in seconds.
pub const HEARTBEAT_DURATION: &str = "mongo_actors_heartbeat_duration_seconds";
/// The last round trip time measured to a server, in seconds.
pub const SERVER_RTT: &str = "mongo_actors_server_rtt_seconds";
/// Commands per command name and outcome (`succeeded` | `failed`).
pub const COMMANDS_TOTAL: &str = "mongo_actors_commands_total";
/// Command durations per command name, in seconds.
pub const COMMAND_DURATION: &str = "mongo_actors_command_duration_seconds";

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
    connections: Gauge,
    checked_out: Gauge,
}

struct RecordCmap {
    pools: Cache<ServerAddress, PoolMetrics>,
    inner: Option<Arc<dyn CmapEventHandler>>,
}

impl RecordCmap {
    fn pool(&self, address: &ServerAddress) -> Arc<PoolMetrics> {
        self.pools.get(address, |a| {
            let server = a.to_string();
            (
                a.clone(),
                PoolMetrics {
                    connections: metrics::gauge!(POOL_CONNECTIONS, "server" => server.clone()),
                    checked_out: metrics::gauge!(POOL_CHECKED_OUT, "server" => server),
                },
            )
        })
    }
}

impl pool::events::EventHandler<CmapEvent> for RecordCmap {
    // Recording is quick and never blocks; the inner handler is bounded already.
    fn delivery(&self) -> crate::events::Delivery {
        crate::events::Delivery::InPlace { backlog: 0 }
    }

    fn handle(&self, event: &CmapEvent) {
        match event {
            CmapEvent::ConnectionCreated { address, .. } => self.pool(address).connections.increment(1.0),
            CmapEvent::ConnectionClosed { address, .. } => self.pool(address).connections.decrement(1.0),
            CmapEvent::CheckedOut { address, .. } => self.pool(address).checked_out.increment(1.0),
            CmapEvent::CheckedIn { address, .. } => self.pool(address).checked_out.decrement(1.0),
            _ => {}
        }
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
    inner: Option<Arc<dyn SdamEventHandler>>,
}

impl RecordSdam {
    fn server(&self, address: &ServerAddress) -> Arc<HeartbeatMetrics> {
        self.servers.get(address, |a| {
            let server = a.to_string();
            (
                a.clone(),
                HeartbeatMetrics {
                    succeeded: metrics::counter!(HEARTBEATS_TOTAL, "server" => server.clone(), "outcome" => "succeeded"),
                    failed: metrics::counter!(HEARTBEATS_TOTAL, "server" => server.clone(), "outcome" => "failed"),
                    duration: metrics::histogram!(HEARTBEAT_DURATION, "server" => server.clone()),
                    rtt: metrics::gauge!(SERVER_RTT, "server" => server),
                },
            )
        })
    }
}

impl pool::events::EventHandler<SdamEvent> for RecordSdam {
    // Recording is quick and never blocks; the inner handler is bounded already.
    fn delivery(&self) -> crate::events::Delivery {
        crate::events::Delivery::InPlace { backlog: 0 }
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
            _ => {}
        }
        if let Some(inner) = &self.inner {
            inner.handle(event);
        }
    }
}

struct CommandMetrics {
    succeeded: Counter,
    failed: Counter,
    duration: Histogram,
}

/// Records command metrics; the client calls [`record`](Self::record) directly, so that
/// metrics alone never build command events.
pub(crate) struct RecordCommands {
    commands: Cache<String, CommandMetrics>,
    inner: Option<Arc<dyn CommandEventHandler>>,
    /// A recorder was installed when the client was built.
    enabled: bool,
}

impl RecordCommands {
    /// A recorder that forwards the events it handles to `inner`.
    pub(crate) fn new(inner: Option<Arc<dyn CommandEventHandler>>) -> Self {
        RecordCommands { commands: Cache::new(), inner, enabled: recorder_installed() }
    }

    /// Whether a recorder was installed when the client was built.
    pub(crate) fn enabled(&self) -> bool {
        self.enabled
    }

    /// Records one command's outcome and duration (nothing without a recorder).
    pub(crate) fn record(&self, command_name: &str, succeeded: bool, duration: std::time::Duration) {
        if !self.enabled {
            return;
        }
        let m = self.command(command_name);
        if succeeded {
            m.succeeded.increment(1);
        } else {
            m.failed.increment(1);
        }
        m.duration.record(duration.as_secs_f64());
    }

    fn command(&self, name: &str) -> Arc<CommandMetrics> {
        self.commands.get(name, |n| {
            let command = n.to_owned();
            (
                command.clone(),
                CommandMetrics {
                    succeeded: metrics::counter!(COMMANDS_TOTAL, "command" => command.clone(), "outcome" => "succeeded"),
                    failed: metrics::counter!(COMMANDS_TOTAL, "command" => command.clone(), "outcome" => "failed"),
                    duration: metrics::histogram!(COMMAND_DURATION, "command" => command),
                },
            )
        })
    }
}

impl pool::events::EventHandler<CommandEvent> for RecordCommands {
    // Recording is quick and never blocks; the inner handler is bounded already.
    fn delivery(&self) -> crate::events::Delivery {
        crate::events::Delivery::InPlace { backlog: 0 }
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

/// An SDAM handler that records heartbeat and RTT metrics, then forwards to `inner`; `inner`
/// itself when no recorder is installed.
pub fn sdam_handler(inner: Option<Arc<dyn SdamEventHandler>>) -> Option<Arc<dyn SdamEventHandler>> {
    if !recorder_installed() {
        return inner;
    }
    Some(Arc::new(RecordSdam { servers: Cache::new(), inner }))
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
    use crate::command_events::CommandConnection;

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

    fn gauge(values: &Values, name: &str) -> f64 {
        match values.get(&(MetricKind::Gauge, name.to_owned(), labels(&[("server", "db1:27017")]))) {
            Some(DebugValue::Gauge(v)) => v.into_inner(),
            other => panic!("{name}: {other:?}"),
        }
    }

    #[test]
    fn pool_gauges_follow_cmap_events_and_inner_handler_still_runs() {
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        let (tx, rx) = crossbeam_channel::unbounded::<CmapEvent>();
        metrics::with_local_recorder(&recorder, || {
            let handler = cmap_handler(Some(Arc::new(tx))).expect("a handler");
            let a = address();
            for id in 1..=3 {
                handler.handle(&CmapEvent::ConnectionCreated { address: a.clone(), connection_id: id });
            }
            handler.handle(&CmapEvent::ConnectionClosed {
                address: a.clone(),
                connection_id: 3,
                reason: pool::cmap::ConnectionClosedReason::Error,
                error: None,
            });
            for id in 1..=2 {
                handler.handle(&CmapEvent::CheckedOut {
                    address: a.clone(),
                    connection_id: id,
                    duration: Duration::ZERO,
                });
            }
            handler.handle(&CmapEvent::CheckedIn { address: a.clone(), connection_id: 1 });
        });
        let v = values(&snapshotter);
        assert_eq!(gauge(&v, POOL_CONNECTIONS), 2.0);
        assert_eq!(gauge(&v, POOL_CHECKED_OUT), 1.0);
        assert_eq!(rx.len(), 7, "every event is forwarded");
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
        let counter = |outcome: &str| match v.get(&(
            MetricKind::Counter,
            HEARTBEATS_TOTAL.to_owned(),
            labels(&[("server", "db1:27017"), ("outcome", outcome)]),
        )) {
            Some(DebugValue::Counter(n)) => *n,
            other => panic!("{outcome}: {other:?}"),
        };
        assert_eq!(counter("succeeded"), 2);
        assert_eq!(counter("failed"), 1);
        assert_eq!(gauge(&v, SERVER_RTT), 0.004);
        match v.get(&(
            MetricKind::Histogram,
            HEARTBEAT_DURATION.to_owned(),
            labels(&[("server", "db1:27017")]),
        )) {
            Some(DebugValue::Histogram(h)) => {
                let mut got: Vec<f64> = h.iter().map(|x| x.into_inner()).collect();
                got.sort_by(f64::total_cmp);
                assert_eq!(got, vec![0.002, 0.004, 10.0]);
            }
            other => panic!("histogram: {other:?}"),
        }
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
                        error: crate::command_events::CommandFailure(crate::Error::custom("boom")),
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
        let counter = |outcome: &str| match v.get(&(
            MetricKind::Counter,
            COMMANDS_TOTAL.to_owned(),
            labels(&[("command", "find"), ("outcome", outcome)]),
        )) {
            Some(DebugValue::Counter(n)) => *n,
            other => panic!("{outcome}: {other:?}"),
        };
        assert_eq!(counter("succeeded"), 2);
        assert_eq!(counter("failed"), 1);
        match v.get(&(MetricKind::Histogram, COMMAND_DURATION.to_owned(), labels(&[("command", "find")]))) {
            Some(DebugValue::Histogram(h)) => assert_eq!(h.len(), 3),
            other => panic!("histogram: {other:?}"),
        }
    }
}
