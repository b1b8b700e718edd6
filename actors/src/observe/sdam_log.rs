//! The SDAM log messages of the logging-and-monitoring spec for the topology actor's events
//! (heartbeat messages are the monitor's). Emitted through `tracing` at debug level.

use protocol::sdam::events::SdamEvent;

/// The `tracing` target of the topology's log messages.
pub const LOG_TARGET: &str = "mongo_actors::topology";

/// Logs the spec message for `event`, if it has one on the topology side.
pub fn log_event(event: &SdamEvent) {
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
        _ => {}
    }
}
