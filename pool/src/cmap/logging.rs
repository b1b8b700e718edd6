//! The CMAP log messages (connection pool logging), at debug level through `tracing`.
//!
//! The message strings and field names are the spec's: `serverHost`, `serverPort`,
//! `driverConnectionId`, `durationMS`, `reason`, `error`, `serviceId` and the pool options.

use super::events::{CheckOutFailedReason, CmapEvent, ConnectionClosedReason};

/// The `tracing` target of the pool's log messages (the spec's `connection` component).
pub const LOG_TARGET: &str = "mongo_actors::connection";

fn closed_reason(r: ConnectionClosedReason) -> &'static str {
    match r {
        ConnectionClosedReason::Stale => "Connection became stale because the pool was cleared",
        ConnectionClosedReason::Idle => {
            "Connection has been available but unused for longer than the configured max idle time"
        }
        ConnectionClosedReason::Error => "An error occurred while using the connection",
        ConnectionClosedReason::PoolClosed => "Connection pool was closed",
    }
}

fn failed_reason(r: CheckOutFailedReason) -> &'static str {
    match r {
        CheckOutFailedReason::Timeout => "Wait queue timeout elapsed without a connection becoming available",
        CheckOutFailedReason::ConnectionError => {
            "An error occurred while trying to establish a new connection"
        }
        CheckOutFailedReason::PoolClosed => "Connection pool was closed",
    }
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Logs the message that goes with `event`.
pub(crate) fn log_event(event: &CmapEvent) {
    if !tracing::enabled!(target: LOG_TARGET, tracing::Level::DEBUG) {
        return;
    }
    let address = event.address();
    let server_host = address.host();
    let server_port = address.port();
    match event {
        CmapEvent::PoolCreated { options, .. } => {
            let given = options.given();
            tracing::debug!(
                target: LOG_TARGET,
                serverHost = server_host,
                serverPort = server_port,
                maxIdleTimeMS = given.given_max_idle_time_ms(),
                minPoolSize = given.given_min_pool_size(),
                maxPoolSize = given.given_max_pool_size(),
                maxConnecting = given.given_max_connecting(),
                waitQueueTimeoutMS = given.given_wait_queue_timeout_ms(),
                "Connection pool created"
            );
        }
        CmapEvent::PoolReady { .. } => {
            tracing::debug!(target: LOG_TARGET, serverHost = server_host, serverPort = server_port, "Connection pool ready");
        }
        CmapEvent::PoolCleared { service_id, .. } => {
            tracing::debug!(
                target: LOG_TARGET,
                serverHost = server_host,
                serverPort = server_port,
                serviceId = service_id.map(|s| s.to_hex()),
                "Connection pool cleared"
            );
        }
        CmapEvent::PoolClosed { .. } => {
            tracing::debug!(target: LOG_TARGET, serverHost = server_host, serverPort = server_port, "Connection pool closed");
        }
        CmapEvent::ConnectionCreated { connection_id, .. } => {
            tracing::debug!(
                target: LOG_TARGET,
                serverHost = server_host,
                serverPort = server_port,
                driverConnectionId = connection_id,
                "Connection created"
            );
        }
        CmapEvent::ConnectionReady { connection_id, duration, .. } => {
            tracing::debug!(
                target: LOG_TARGET,
                serverHost = server_host,
                serverPort = server_port,
                driverConnectionId = connection_id,
                durationMS = ms(*duration),
                "Connection ready"
            );
        }
        CmapEvent::ConnectionClosed { connection_id, reason, error, .. } => {
            tracing::debug!(
                target: LOG_TARGET,
                serverHost = server_host,
                serverPort = server_port,
                driverConnectionId = connection_id,
                reason = closed_reason(*reason),
                error = error.as_deref(),
                "Connection closed"
            );
        }
        CmapEvent::CheckOutStarted { .. } => {
            tracing::debug!(
                target: LOG_TARGET,
                serverHost = server_host,
                serverPort = server_port,
                "Connection checkout started"
            );
        }
        CmapEvent::CheckOutFailed { reason, error, duration, .. } => {
            tracing::debug!(
                target: LOG_TARGET,
                serverHost = server_host,
                serverPort = server_port,
                reason = failed_reason(*reason),
                error = error.as_deref(),
                durationMS = ms(*duration),
                "Connection checkout failed"
            );
        }
        CmapEvent::CheckedOut { connection_id, duration, .. } => {
            tracing::debug!(
                target: LOG_TARGET,
                serverHost = server_host,
                serverPort = server_port,
                driverConnectionId = connection_id,
                durationMS = ms(*duration),
                "Connection checked out"
            );
        }
        CmapEvent::CheckedIn { connection_id, .. } => {
            tracing::debug!(
                target: LOG_TARGET,
                serverHost = server_host,
                serverPort = server_port,
                driverConnectionId = connection_id,
                "Connection checked in"
            );
        }
    }
}
