//! The SDAM log messages of the logging-and-monitoring spec, each derived from the event it
//! reports: the topology actor's and the monitors' heartbeats alike. Emitted through `tracing`
//! at debug level.

use protocol::sdam::events::{ConnectionId, SdamEvent, TopologyId};

/// The `tracing` target of the topology's log messages.
pub const LOG_TARGET: &str = "mongo_actors::topology";

/// Logs the spec message for `event`, if it has one; `topology` is the topology a heartbeat
/// belongs to (heartbeat events carry no topology id, the log messages do).
pub fn log_event(topology: TopologyId, event: &SdamEvent) {
    if !tracing::enabled!(target: LOG_TARGET, tracing::Level::DEBUG) {
        return;
    }
    match event {
        SdamEvent::TopologyOpening(e) => {
            tracing::debug!(target: LOG_TARGET, topologyId = %e.topology_id.0, "Starting topology monitoring")
        }
        SdamEvent::TopologyClosed(e) => {
            tracing::debug!(target: LOG_TARGET, topologyId = %e.topology_id.0, "Stopped topology monitoring")
        }
        SdamEvent::ServerOpening(e) => tracing::debug!(
            target: LOG_TARGET,
            topologyId = %e.topology_id.0,
            serverHost = %e.address.host(),
            serverPort = e.address.tcp_port().unwrap_or(27017),
            "Starting server monitoring"
        ),
        SdamEvent::ServerClosed(e) => tracing::debug!(
            target: LOG_TARGET,
            topologyId = %e.topology_id.0,
            serverHost = %e.address.host(),
            serverPort = e.address.tcp_port().unwrap_or(27017),
            "Stopped server monitoring"
        ),
        SdamEvent::TopologyDescriptionChanged(e) => tracing::debug!(
            target: LOG_TARGET,
            topologyId = %e.topology_id.0,
            previousDescription = ?e.previous_description,
            newDescription = ?e.new_description,
            "Topology description changed"
        ),
        SdamEvent::ServerHeartbeatStarted(e) => {
            let (host, port, driver, server) = connection(&e.connection_id);
            tracing::debug!(
                target: LOG_TARGET,
                topologyId = %topology.0,
                serverHost = host.as_ref(),
                serverPort = port,
                driverConnectionId = driver,
                serverConnectionId = server,
                awaited = e.awaited,
                "Server heartbeat started"
            )
        }
        SdamEvent::ServerHeartbeatSucceeded(e) => {
            let (host, port, driver, server) = connection(&e.connection_id);
            tracing::debug!(
                target: LOG_TARGET,
                topologyId = %topology.0,
                serverHost = host.as_ref(),
                serverPort = port,
                driverConnectionId = driver,
                serverConnectionId = server,
                awaited = e.awaited,
                durationMS = e.duration.as_secs_f64() * 1000.0,
                reply = %bson::Bson::Document(e.reply.clone()).into_relaxed_extjson(),
                "Server heartbeat succeeded"
            )
        }
        SdamEvent::ServerHeartbeatFailed(e) => {
            let (host, port, driver, server) = connection(&e.connection_id);
            tracing::debug!(
                target: LOG_TARGET,
                topologyId = %topology.0,
                serverHost = host.as_ref(),
                serverPort = port,
                driverConnectionId = driver,
                serverConnectionId = server,
                awaited = e.awaited,
                durationMS = e.duration.as_secs_f64() * 1000.0,
                failure = e.failure.as_str(),
                "Server heartbeat failed"
            )
        }
        _ => {}
    }
}

/// The fields a heartbeat message takes from its monitoring connection.
fn connection(c: &ConnectionId) -> (std::borrow::Cow<'_, str>, u16, Option<u64>, Option<i64>) {
    (c.address.host(), c.address.tcp_port().unwrap_or(27017), c.driver_connection_id, c.server_connection_id)
}
