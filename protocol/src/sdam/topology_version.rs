//! A server's `topologyVersion` and the spec's rule for which of two is more recent.

use std::cmp::Ordering;

use bson::oid::ObjectId;
use serde::{Deserialize, Serialize};

/// A server's `topologyVersion`: which process answered, and a counter it bumps on every
/// state change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TopologyVersion {
    /// The server process's id.
    pub process_id: ObjectId,
    /// Incremented on every topology change of that process.
    pub counter: i64,
}

/// The spec's `compareTopologyVersion(current, new)`: `Less` when `new` is more recent.
///
/// A missing version on either side, or a different `processId`, means `new` is assumed more
/// recent (`Less`); otherwise the counters decide.
pub fn compare_topology_versions(
    current: Option<&TopologyVersion>,
    new: Option<&TopologyVersion>,
) -> Ordering {
    match (current, new) {
        (Some(c), Some(n)) if c.process_id == n.process_id => c.counter.cmp(&n.counter),
        _ => Ordering::Less,
    }
}
