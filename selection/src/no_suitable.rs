//! The spec's *Server Selection Errors*: what a selection that found no suitable server says.

use std::fmt;
use std::time::Duration;

use protocol::sdam::TopologyDescription;
use protocol::ServerAddress;

use crate::error::Error;
use crate::select::SelectionQuery;
use crate::suitability::Operation;

impl Error {
    /// The timeout error for a selection that found no suitable server in `timeout`: its
    /// message names the criteria when some server is available, and otherwise the servers'
    /// errors (see [`no_suitable_server_message`]).
    pub fn selection_timeout(
        topology: &protocol::sdam::TopologyDescription,
        criteria: &SelectionQuery<'_>,
        timeout: Duration,
    ) -> Self {
        Error::ServerSelectionTimeout { message: no_suitable_server_message(topology, criteria), timeout }
    }
}

/// Why no server was suitable, per the spec's *Server Selection Errors*: with some server
/// available, `No server available for query with ReadPreference <mode>[, tag set list <...>]
/// [, and maxStalenessSeconds <n>]` (or `No server available for writes`); otherwise the
/// servers' errors: the common one if they are all the same, else each `address: error`
/// joined with `, `.
pub fn no_suitable_server_message(topology: &TopologyDescription, criteria: &SelectionQuery<'_>) -> String {
    let any_available = topology.servers().any(|s| s.server_type.is_known());
    let mut errors = topology.servers().filter_map(|s| s.error.as_deref().map(|e| (&s.address, e)));
    if !any_available {
        if let Some((_, first)) = errors.next() {
            let rest: Vec<(&ServerAddress, &str)> = errors.collect();
            if rest.iter().all(|(_, e)| *e == first) {
                return first.to_string();
            }
            let with_errors = topology.servers().filter_map(|s| s.error.as_deref().map(|e| (&s.address, e)));
            return with_errors.map(|(a, e)| format!("{a}: {e}")).collect::<Vec<_>>().join(", ");
        }
    }
    match criteria.operation() {
        Operation::Write => "No server available for writes".to_string(),
        Operation::Any(_) => "No server available that the selection predicate accepts".to_string(),
        Operation::Read(rp) => {
            let mut m = format!("No server available for query with ReadPreference {}", rp.mode());
            let tags = rp.has_tags().then(|| TagList(rp.tag_sets()).to_string());
            match (tags, rp.max_staleness_seconds()) {
                (Some(t), Some(s)) => m.push_str(&format!(", tag set list {t}, and maxStalenessSeconds {s}")),
                (Some(t), None) => m.push_str(&format!(", and tag set list {t}")),
                (None, Some(s)) => m.push_str(&format!(", and maxStalenessSeconds {s}")),
                (None, None) => {}
            }
            m
        }
    }
}

struct TagList<'a>(&'a [protocol::uri::TagSet]);

impl fmt::Display for TagList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        crate::read_preference::fmt_tag_sets(self.0, f)
    }
}
