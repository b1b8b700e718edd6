//! The server selection log messages and the selection duration metric.

use protocol::sdam::TopologyDescription;
use selection::SelectionQuery;
use tokio::time::Instant;

use super::pipeline::full_criteria;
use super::request::{CustomSelector, SelectedServer, SelectionRequest};
use crate::error::{Error, Result};

pub(super) const LOG_TARGET: &str = "mongo_actors::server_selection";

/// The spec's "Server selection failed" message, for any error (`selection::log` has it for
/// `selection::Error` only).
fn log_failed(
    topology_id: &str,
    request: &SelectionRequest,
    criteria: &SelectionQuery<'_>,
    topology: &TopologyDescription,
    failure: &Error,
) {
    tracing::debug!(
        target: LOG_TARGET,
        message = "Server selection failed",
        topologyId = topology_id,
        operation = &*request.operation,
        operationId = request.operation_id,
        selector = %criteria,
        topologyDescription = %selection::TopologySummary(topology),
        failure = %failure,
    );
}

pub(super) fn log_outcome(
    topology_id: &str,
    request: &SelectionRequest,
    custom: Option<&CustomSelector>,
    topology: &TopologyDescription,
    outcome: &Result<SelectedServer>,
) {
    if !tracing::enabled!(target: LOG_TARGET, tracing::Level::DEBUG) {
        return;
    }
    let criteria = full_criteria(request, custom);
    match outcome {
        Ok(s) => selection::log::selection_succeeded(
            Some(topology_id),
            &request.operation,
            request.operation_id,
            &criteria,
            topology,
            s.address(),
        ),
        Err(e) => log_failed(topology_id, request, &criteria, topology, e),
    }
}

pub(super) fn log_waiting(
    topology_id: &str,
    request: &SelectionRequest,
    custom: Option<&CustomSelector>,
    topology: &TopologyDescription,
    deadline: Instant,
) {
    let remaining = deadline.saturating_duration_since(Instant::now()).as_millis();
    selection::log::waiting_for_suitable_server(
        Some(topology_id),
        &request.operation,
        request.operation_id,
        &full_criteria(request, custom),
        topology,
        Some(u64::try_from(remaining).unwrap_or(u64::MAX)),
    );
}

/// Records `mongo_actors.server_selection.duration` (literal labels: no allocation).
pub(super) fn record_duration(started: Instant, succeeded: bool, fast: bool) {
    let seconds = started.elapsed().as_secs_f64();
    const NAME: &str = crate::observe::metrics::SERVER_SELECTION_DURATION;
    match (succeeded, fast) {
        (true, true) => metrics::histogram!(NAME, "outcome" => "succeeded", "path" => "fast").record(seconds),
        (false, true) => metrics::histogram!(NAME, "outcome" => "failed", "path" => "fast").record(seconds),
        (true, false) => {
            metrics::histogram!(NAME, "outcome" => "succeeded", "path" => "waiter").record(seconds)
        }
        (false, false) => {
            metrics::histogram!(NAME, "outcome" => "failed", "path" => "waiter").record(seconds)
        }
    }
}
