//! `GET /health`: from the topology's latest snapshot only, never a command to a server (a
//! health check that opens connections multiplies them under load): healthy while a server
//! for writes (or, when so configured, for reads) is known.

use protocol::sdam::{ServerType, TopologyType};

use super::status::Health;
use crate::cluster::snapshot::TopologySnapshot;

/// What a healthy deployment has: a server that takes writes, or any server that takes reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HealthyWhen {
    /// A primary, a mongos, a standalone or a load balancer is known (the default).
    #[default]
    Writable,
    /// Any data-bearing server is known (a secondary will do).
    Readable,
}

/// Whether `snapshot` is healthy under `rule`, and why.
pub(crate) fn health(snapshot: &TopologySnapshot, rule: HealthyWhen) -> (bool, Health) {
    let description = &snapshot.description;
    let topology_type = description.topology_type().as_str().to_string();
    if snapshot.closed {
        return (false, health_of(false, "the client is shut down", topology_type));
    }
    let types: Vec<ServerType> = description.servers().map(|s| s.server_type).collect();
    let writable = |t: &ServerType| {
        matches!(
            t,
            ServerType::RsPrimary | ServerType::Mongos | ServerType::Standalone | ServerType::LoadBalancer
        )
    };
    let readable = |t: &ServerType| writable(t) || matches!(t, ServerType::RsSecondary);
    let lb = description.topology_type() == TopologyType::LoadBalanced;
    let (ok, reason) = match rule {
        _ if lb => (true, "load balanced: the load balancer takes every operation".to_string()),
        HealthyWhen::Writable if types.iter().any(writable) => (true, "a server takes writes".to_string()),
        HealthyWhen::Readable if types.iter().any(readable) => (true, "a server takes reads".to_string()),
        HealthyWhen::Writable => (false, format!("no server takes writes (known: {})", describe(&types))),
        HealthyWhen::Readable => (false, format!("no server takes reads (known: {})", describe(&types))),
    };
    (ok, health_of(ok, &reason, topology_type))
}

fn health_of(ok: bool, reason: &str, topology_type: String) -> Health {
    Health {
        status: if ok { "ok" } else { "unavailable" }.to_string(),
        reason: reason.to_string(),
        topology_type,
    }
}

fn describe(types: &[ServerType]) -> String {
    if types.is_empty() {
        return "no server".to_string();
    }
    types.iter().map(|t| t.as_str()).collect::<Vec<_>>().join(", ")
}
