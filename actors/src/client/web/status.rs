//! What `GET /status` answers (and every server-sent event carries): the client's view of its
//! deployment, as serde types. Built from the topology's snapshot, the pools' counters, the
//! selection actor's waiters and the executor's operation counts; it holds no credentials
//! and no documents.

use serde::{Deserialize, Serialize};

/// The client's view of its deployment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Status {
    /// The topology type (`ReplicaSetWithPrimary`, `Sharded`...).
    pub topology_type: String,
    /// The replica set's name.
    pub set_name: Option<String>,
    /// The topology snapshot's sequence number (increases with every change).
    pub sequence: u64,
    /// When this status was made, in milliseconds since the Unix epoch.
    pub generated_at_ms: u64,
    /// Every server the client knows.
    pub servers: Vec<ServerStatus>,
    /// Operations waiting for a suitable server.
    pub selection_waiters: usize,
    /// Operation counts and latencies since the status page started.
    pub operations: OperationsStatus,
    /// The last failovers, oldest first.
    pub failovers: Vec<Failover>,
}

/// One server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerStatus {
    /// `host:port`.
    pub address: String,
    /// The server type (`RSPrimary`, `RSSecondary`, `Mongos`, `Unknown`...).
    pub server_type: String,
    /// Round-trip times.
    pub rtt: RttStatus,
    /// Milliseconds since the last heartbeat's outcome reached the topology.
    pub last_heartbeat_ms_ago: Option<u64>,
    /// The last heartbeat's error, when it failed.
    pub error: Option<String>,
    /// The server's connection pool.
    pub pool: PoolStatus,
    /// Operations running on the server.
    pub operations_in_flight: usize,
}

/// A server's round-trip times, in milliseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RttStatus {
    /// The moving average the server description holds.
    pub average_ms: Option<f64>,
    /// The minimum over the RTT pinger's window.
    pub min_ms: Option<f64>,
    /// The 90th percentile of `history_ms`.
    pub p90_ms: Option<f64>,
    /// The average, sampled once a second, oldest first (at most a minute).
    pub history_ms: Vec<f64>,
}

/// A connection pool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PoolStatus {
    /// `paused`, `ready` or `closed`.
    pub state: String,
    /// Connections: establishing, idle and in use.
    pub size: usize,
    /// Idle connections.
    pub idle: usize,
    /// Connections checked out.
    pub in_use: usize,
    /// Connections being established.
    pub pending: usize,
    /// Check-outs waiting.
    pub wait_queue: usize,
    /// `maxPoolSize`.
    pub max_size: u32,
    /// The generation (increased by every clear).
    pub generation: u32,
    /// Load-balanced mode: connections pinned by cursors.
    pub pinned_cursors: usize,
    /// Load-balanced mode: connections pinned by transactions.
    pub pinned_transactions: usize,
}

/// Operation counts and latencies (bucket bounds, in milliseconds).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OperationsStatus {
    /// Operations that succeeded.
    pub succeeded: u64,
    /// Operations that failed.
    pub failed: u64,
    /// The mean latency.
    pub mean_ms: Option<f64>,
    /// The latency under which half the operations ended.
    pub p50_ms: Option<f64>,
    /// The latency under which 90% of the operations ended.
    pub p90_ms: Option<f64>,
    /// The latency under which 99% of the operations ended.
    pub p99_ms: Option<f64>,
}

/// One failover, as the client saw it: its primary lost, a new primary, the first write that
/// succeeded after it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Failover {
    /// The primary that was lost.
    pub old_primary: String,
    /// When the topology stopped showing it as primary (ms since the Unix epoch).
    pub stepdown_seen_at_ms: u64,
    /// The new primary, once there is one.
    pub new_primary: Option<String>,
    /// Milliseconds from the stepdown to the new primary.
    pub new_primary_after_ms: Option<u64>,
    /// Milliseconds from the stepdown to the first write that succeeded after the new
    /// primary appeared (while the failover was open).
    pub first_write_after_ms: Option<u64>,
    /// Milliseconds from the stepdown to the first operation of any kind that succeeded after
    /// the new primary appeared: it closes the failover (so does the next failover, or a
    /// minute without a success).
    #[serde(default)]
    pub first_operation_after_ms: Option<u64>,
}

/// What `GET /health` answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Health {
    /// `ok` or `unavailable`.
    pub status: String,
    /// Why, in words.
    pub reason: String,
    /// The topology type.
    pub topology_type: String,
}

/// Milliseconds, from a duration.
pub(crate) fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Now, in milliseconds since the Unix epoch.
pub(crate) fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}
