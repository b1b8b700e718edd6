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
        CheckOutFailedReason::WaitQueueFull => "The wait queue was full (maxWaitQueueSize)",
    }
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Logs the message that goes with `event` (CMAP logging spec: the pool's, a connection's, a
/// check-out's).
pub(crate) fn log_event(event: &CmapEvent, topology_id: Option<&str>) {
    if !tracing::enabled!(target: LOG_TARGET, tracing::Level::DEBUG) {
        return;
    }
    let address = event.address();
    let (host, port) = (address.host(), address.tcp_port());
    let host = &*host;
    match event {
        CmapEvent::PoolCreated { .. }
        | CmapEvent::PoolReady { .. }
        | CmapEvent::PoolCleared { .. }
        | CmapEvent::PoolClosed { .. } => log_pool_event(event, topology_id, host, port),
        CmapEvent::ConnectionCreated { .. }
        | CmapEvent::ConnectionReady { .. }
        | CmapEvent::ConnectionClosed { .. } => log_connection_event(event, topology_id, host, port),
        _ => log_check_out_event(event, topology_id, host, port),
    }
}

/// The pool's own messages: created, ready, cleared, closed.
fn log_pool_event(event: &CmapEvent, topology_id: Option<&str>, server_host: &str, server_port: Option<u16>) {
    match event {
        CmapEvent::PoolCreated { options, .. } => {
            let given = options.given();
            tracing::debug!(
                target: LOG_TARGET,
                topologyId = topology_id,
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
            tracing::debug!(target: LOG_TARGET, topologyId = topology_id, serverHost = server_host, serverPort = server_port, "Connection pool ready");
        }
        CmapEvent::PoolCleared { service_id, .. } => {
            tracing::debug!(
                target: LOG_TARGET,
                topologyId = topology_id,
                serverHost = server_host,
                serverPort = server_port,
                serviceId = service_id.map(|s| s.to_hex()),
                "Connection pool cleared"
            );
        }
        CmapEvent::PoolClosed { .. } => {
            tracing::debug!(target: LOG_TARGET, topologyId = topology_id, serverHost = server_host, serverPort = server_port, "Connection pool closed");
        }
        _ => {}
    }
}

/// A connection's messages: created, ready, closed.
fn log_connection_event(
    event: &CmapEvent,
    topology_id: Option<&str>,
    server_host: &str,
    server_port: Option<u16>,
) {
    match event {
        CmapEvent::ConnectionCreated { connection_id, .. } => {
            tracing::debug!(
                target: LOG_TARGET,
                topologyId = topology_id,
                serverHost = server_host,
                serverPort = server_port,
                driverConnectionId = connection_id,
                "Connection created"
            );
        }
        CmapEvent::ConnectionReady { connection_id, duration, .. } => {
            tracing::debug!(
                target: LOG_TARGET,
                topologyId = topology_id,
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
                topologyId = topology_id,
                serverHost = server_host,
                serverPort = server_port,
                driverConnectionId = connection_id,
                reason = closed_reason(*reason),
                error = error.as_deref(),
                "Connection closed"
            );
        }
        _ => {}
    }
}

/// A check-out's messages: started, failed, checked out, checked in.
fn log_check_out_event(
    event: &CmapEvent,
    topology_id: Option<&str>,
    server_host: &str,
    server_port: Option<u16>,
) {
    match event {
        CmapEvent::CheckOutStarted { .. } => {
            tracing::debug!(
                target: LOG_TARGET,
                topologyId = topology_id,
                serverHost = server_host,
                serverPort = server_port,
                "Connection checkout started"
            );
        }
        CmapEvent::CheckOutFailed { reason, error, duration, .. } => {
            tracing::debug!(
                target: LOG_TARGET,
                topologyId = topology_id,
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
                topologyId = topology_id,
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
                topologyId = topology_id,
                serverHost = server_host,
                serverPort = server_port,
                driverConnectionId = connection_id,
                "Connection checked in"
            );
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use protocol::address::ServerAddress;

    use super::*;

    #[derive(Clone, Default)]
    struct Buf(Arc<Mutex<Vec<u8>>>);

    impl Write for Buf {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().map_err(|_| std::io::Error::other("poisoned"))?.extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn logged(event: &CmapEvent) -> String {
        let buf = Buf::default();
        let writer = buf.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::DEBUG)
            .with_ansi(false)
            .without_time()
            .with_writer(move || writer.clone())
            .finish();
        tracing::subscriber::with_default(subscriber, || log_event(event, None));
        let bytes = buf.0.lock().map(|b| b.clone()).unwrap_or_default();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    #[test]
    fn messages_and_fields_follow_the_spec() {
        let address = ServerAddress::tcp("db.example", 27018);
        let line = logged(&CmapEvent::ConnectionClosed {
            address: address.clone(),
            connection_id: 7,
            reason: ConnectionClosedReason::Idle,
            error: None,
        });
        assert!(line.contains("DEBUG mongo_actors::connection: Connection closed"), "{line}");
        assert!(line.contains("serverHost=\"db.example\" serverPort=27018 driverConnectionId=7"), "{line}");
        assert!(line.contains(
            "reason=\"Connection has been available but unused for longer than the configured max idle time\""
        ));
        let line = logged(&CmapEvent::CheckOutFailed {
            address,
            reason: CheckOutFailedReason::Timeout,
            error: None,
            duration: Duration::from_millis(5),
        });
        assert!(line.contains("Connection checkout failed"), "{line}");
        assert!(
            line.contains("reason=\"Wait queue timeout elapsed without a connection becoming available\"")
        );
        assert!(line.contains("durationMS=5.0"), "{line}");
    }
}
