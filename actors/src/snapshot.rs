//! The immutable view of the topology that the topology actor publishes.
//!
//! Readers get it from a `tokio::sync::watch` channel (`borrow()`), never through the actor's
//! mailbox. A new snapshot is published only when the description changed by SDAM equality
//! or the set of servers changed.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;

use actix::Addr;
use protocol::address::ServerAddress;
use protocol::sdam::{ServerDescription, ServerType, TopologyDescription};

use crate::pool_actor::{PoolActor, ServerPool};
use crate::rtt_stats::ServerRtt;

/// What a snapshot holds for one server besides its description.
#[derive(Debug, Clone)]
pub struct ServerHandle {
    /// The server's RTT statistics (live: updated without republishing).
    pub rtt: ServerRtt,
    /// The server's pool, for readiness, generation and stats.
    pub pool: ServerPool,
    /// The pool actor, for check-outs.
    pub pool_actor: Addr<PoolActor>,
    /// The server's `operationCount`: operations selected for it and not yet finished.
    /// Created once per server and kept while it stays in the topology (every snapshot
    /// shares it); changed only through `selection_actor::OperationGuard`, waking nobody.
    pub operations: Arc<AtomicUsize>,
    /// The `mongo_actors_operations_in_flight{server}` gauge, registered once per server
    /// so that counting an operation allocates nothing.
    pub operations_gauge: metrics::Gauge,
}

/// One published state of the topology.
#[derive(Debug, Clone)]
pub struct TopologySnapshot {
    /// The SDAM description.
    pub description: TopologyDescription,
    /// Per server in the description, its handles.
    pub servers: BTreeMap<ServerAddress, Arc<ServerHandle>>,
    /// Increases by one with every published snapshot (the first is 0).
    pub sequence: u64,
    /// True for the final snapshot, published when the topology closed.
    pub closed: bool,
    /// Each server's handle next to its description's pointer: selection finds a handle by
    /// pointer (or by port first) instead of comparing host strings in the map.
    index: Vec<IndexEntry>,
}

/// A server's handle, with the addresses of its description and of the description's
/// `address` field in this snapshot.
#[derive(Debug, Clone)]
struct IndexEntry {
    description: usize,
    address: usize,
    handle: Arc<ServerHandle>,
}

impl TopologySnapshot {
    /// A snapshot of `description` with the servers' handles.
    pub fn new(
        description: TopologyDescription,
        servers: BTreeMap<ServerAddress, Arc<ServerHandle>>,
        sequence: u64,
        closed: bool,
    ) -> Self {
        let index = description
            .servers()
            .filter_map(|d| {
                servers.get(&d.address).map(|h| IndexEntry {
                    description: Arc::as_ptr(d) as usize,
                    address: std::ptr::from_ref(&d.address) as usize,
                    handle: h.clone(),
                })
            })
            .collect();
        TopologySnapshot { description, servers, sequence, closed, index }
    }

    /// The handle of a server whose description comes from this snapshot (a pointer
    /// comparison; any other description is looked up by address).
    pub fn handle_of(&self, description: &Arc<ServerDescription>) -> Option<&Arc<ServerHandle>> {
        let ptr = Arc::as_ptr(description) as usize;
        match self.index.iter().find(|e| e.description == ptr) {
            Some(e) => Some(&e.handle),
            None => self.handle(&description.address),
        }
    }

    /// One server's description.
    pub fn server(&self, address: &ServerAddress) -> Option<&Arc<ServerDescription>> {
        self.description.server(address)
    }

    /// One server's handles.
    pub fn handle(&self, address: &ServerAddress) -> Option<&Arc<ServerHandle>> {
        // Selection passes the descriptions' own addresses: found by pointer. Otherwise
        // ports differ more often than hosts (and compare without a memcmp).
        let ptr = std::ptr::from_ref(address) as usize;
        if let Some(e) = self.index.iter().find(|e| e.address == ptr) {
            return Some(&e.handle);
        }
        let port = address.port();
        self.index
            .iter()
            .map(|e| &e.handle)
            .find(|h| h.pool.address().port() == port && h.pool.address() == address)
            .or_else(|| self.servers.get(address))
    }

    /// The address of the primary, if there is one.
    pub fn primary(&self) -> Option<&ServerAddress> {
        self.description.servers().find(|s| s.server_type == ServerType::RsPrimary).map(|s| &s.address)
    }

    /// The addresses of the servers of type `ty`, ordered.
    pub fn servers_of_type(&self, ty: ServerType) -> Vec<ServerAddress> {
        self.description.servers().filter(|s| s.server_type == ty).map(|s| s.address.clone()).collect()
    }
}
