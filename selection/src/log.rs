//! Server selection log data: the `topologyDescription` string and the spec's four log
//! messages (component `serverSelection`, tracing target
//! `mongo_actors::server_selection`).

use std::fmt;

use protocol::sdam::TopologyDescription;
use protocol::ServerAddress;

use crate::select::SelectionQuery;

/// Displays a topology for the log's `topologyDescription` field:
/// `{type: ReplicaSetWithPrimary, setName: "rs", servers: [{address: a:27017, type: RSPrimary,
/// roundTripTime: 5.000 ms}, {address: b:27017, type: Unknown, error: "..."}]}`.
#[derive(Debug, Clone, Copy)]
pub struct TopologySummary<'a>(pub &'a TopologyDescription);

impl fmt::Display for TopologySummary<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let td = self.0;
        write!(f, "{{type: {}", td.topology_type())?;
        if let Some(name) = td.set_name() {
            write!(f, ", setName: {name:?}")?;
        }
        if let Some(e) = td.compatibility_error() {
            write!(f, ", compatibilityError: {e:?}")?;
        }
        f.write_str(", servers: [")?;
        for (i, s) in td.servers().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{{address: {}, type: {}", s.address, s.server_type)?;
            if let Some(rtt) = s.round_trip_time {
                write!(f, ", roundTripTime: {:.3} ms", rtt.as_secs_f64() * 1000.0)?;
            }
            if !s.tags.is_empty() {
                f.write_str(", tags: ")?;
                let tags: protocol::uri::TagSet = s.tags.clone().into_iter().collect();
                crate::read_preference::fmt_tag_sets(std::slice::from_ref(&tags), f)?;
            }
            if let Some(e) = &s.error {
                write!(f, ", error: {e:?}")?;
            }
            f.write_str("}")?;
        }
        f.write_str("]}")
    }
}

/// Logs "Server selection started" (debug).
pub fn selection_started(
    topology_id: Option<&str>,
    operation: &str,
    operation_id: Option<i64>,
    criteria: &SelectionQuery<'_>,
    topology: &TopologyDescription,
) {
    tracing::debug!(
        target: "mongo_actors::server_selection",
        message = "Server selection started",
        topologyId = topology_id,
        operation,
        operationId = operation_id,
        selector = %criteria,
        topologyDescription = %TopologySummary(topology),
    );
}

/// Logs "Server selection succeeded" (debug) for the selected server.
pub fn selection_succeeded(
    topology_id: Option<&str>,
    operation: &str,
    operation_id: Option<i64>,
    criteria: &SelectionQuery<'_>,
    topology: &TopologyDescription,
    selected: &ServerAddress,
) {
    tracing::debug!(
        target: "mongo_actors::server_selection",
        message = "Server selection succeeded",
        topologyId = topology_id,
        operation,
        operationId = operation_id,
        selector = %criteria,
        topologyDescription = %TopologySummary(topology),
        serverHost = %selected.host(),
        serverPort = selected.tcp_port(),
    );
}

/// Logs "Server selection failed" (debug) with the error the caller will return.
pub fn selection_failed(
    topology_id: Option<&str>,
    operation: &str,
    operation_id: Option<i64>,
    criteria: &SelectionQuery<'_>,
    topology: &TopologyDescription,
    failure: &crate::Error,
) {
    tracing::debug!(
        target: "mongo_actors::server_selection",
        message = "Server selection failed",
        topologyId = topology_id,
        operation,
        operationId = operation_id,
        selector = %criteria,
        topologyDescription = %TopologySummary(topology),
        failure = %failure,
    );
}

/// Logs "Waiting for suitable server to become available" (info); the caller logs it once
/// per operation.
pub fn waiting_for_suitable_server(
    topology_id: Option<&str>,
    operation: &str,
    operation_id: Option<i64>,
    criteria: &SelectionQuery<'_>,
    topology: &TopologyDescription,
    remaining_time_ms: Option<u64>,
) {
    tracing::info!(
        target: "mongo_actors::server_selection",
        message = "Waiting for suitable server to become available",
        topologyId = topology_id,
        operation,
        operationId = operation_id,
        selector = %criteria,
        topologyDescription = %TopologySummary(topology),
        remainingTimeMS = remaining_time_ms,
    );
}
