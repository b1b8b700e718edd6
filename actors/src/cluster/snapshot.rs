//! The immutable view of the topology that the topology actor publishes.
//!
//! Readers get it from a `tokio::sync::watch` channel (`borrow()`), never through the actor's
//! mailbox. A new snapshot is published only when the description changed by SDAM equality
//! or the set of servers changed.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, OnceLock};

use actix::Addr;
use protocol::address::ServerAddress;
use protocol::sdam::{ServerDescription, ServerType, TopologyDescription};

use crate::cluster::pool_actor::{PoolActor, ServerPool};
use crate::cluster::rtt_stats::ServerRtt;

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
    /// shares it); changed only by a [`crate::cluster::selection::SelectedServer`], waking nobody.
    pub operations: Arc<AtomicUsize>,
    /// The `mongo_actors.operations.in_flight{server}` gauge, registered once per server
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
    /// The suitable servers (entries of `index`) for the common criteria, computed on the
    /// first selection that asks: suitability is a pure function of the description, so a
    /// snapshot answers it once, not on every operation. `None` inside: the criteria fail
    /// validation on this description (the full path reports the error).
    suitable: [OnceLock<Option<Remembered>>; SUITABLE_SLOTS],
}

/// What a snapshot remembers for one of the common criteria, as entries of its index.
#[derive(Debug, Clone)]
pub(crate) struct Remembered {
    /// The suitable servers.
    pub(crate) suitable: Box<[u16]>,
    /// Those of them in the latency window: the window while every suitable server's pool is
    /// ready.
    pub(crate) window: Box<[u16]>,
}

/// The criteria whose suitable servers a snapshot remembers: a write, and a read in each mode
/// with no tag set and no maximum staleness.
const SUITABLE_SLOTS: usize = 6;

/// A server's handle, with the addresses of its description and of the description's
/// `address` field in this snapshot.
#[derive(Debug, Clone)]
struct IndexEntry {
    description: Arc<ServerDescription>,
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
                    description: d.clone(),
                    address: std::ptr::from_ref(&d.address) as usize,
                    handle: h.clone(),
                })
            })
            .collect();
        TopologySnapshot { description, servers, sequence, closed, index, suitable: Default::default() }
    }

    /// The handle of a server whose description comes from this snapshot (a pointer
    /// comparison; any other description is looked up by address).
    pub fn handle_of(&self, description: &Arc<ServerDescription>) -> Option<&Arc<ServerHandle>> {
        match self.entry_of(description) {
            Some(i) => Some(&self.index[i].handle),
            None => self.handle(&description.address),
        }
    }

    /// The position in the index of a description from this snapshot (by pointer, then by
    /// address): what a [`crate::cluster::selection::SelectedServer`] keeps instead of three `Arc`s.
    pub(crate) fn entry_of(&self, description: &Arc<ServerDescription>) -> Option<usize> {
        let found = self.index.iter().position(|e| Arc::ptr_eq(&e.description, description));
        found.or_else(|| self.index.iter().position(|e| e.description.address == description.address))
    }

    /// The suitable servers and their latency window for the criteria of `slot` (see
    /// [`suitable_slot`]), computed once per snapshot with `suitable`; `None` if it failed.
    pub(crate) fn remembered(
        &self,
        slot: usize,
        suitable: impl FnOnce(&Self) -> Option<selection::Servers<'_>>,
    ) -> Option<&Remembered> {
        let cached = self.suitable.get(slot)?.get_or_init(|| {
            let mut servers = suitable(self)?;
            let entries = |servers: &selection::Servers<'_>| -> Option<Box<[u16]>> {
                servers.iter().map(|d| self.entry_of(d).and_then(|i| u16::try_from(i).ok())).collect()
            };
            let suitable = entries(&servers)?;
            selection::in_latency_window(&self.description, &mut servers);
            Some(Remembered { suitable, window: entries(&servers)? })
        });
        cached.as_ref()
    }

    /// The description and handle at `entry` (from [`Self::entry_of`]).
    pub(crate) fn entry(&self, entry: usize) -> (&Arc<ServerDescription>, &Arc<ServerHandle>) {
        let e = &self.index[entry];
        (&e.description, &e.handle)
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
        let port = address.tcp_port();
        self.index
            .iter()
            .map(|e| &e.handle)
            .find(|h| h.pool.address().tcp_port() == port && h.pool.address() == address)
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

/// The slot of [`TopologySnapshot::suitable`] for a write (`None`) or a read with `read`, if
/// the snapshot remembers those criteria.
pub(crate) fn suitable_slot(read: Option<&selection::ReadPreference>) -> Option<usize> {
    use protocol::uri::ReadPreferenceMode as Mode;
    let Some(rp) = read else { return Some(0) };
    if !rp.tag_sets().is_empty() || rp.max_staleness_seconds().is_some() {
        return None;
    }
    Some(match rp.mode() {
        Mode::Primary => 1,
        Mode::PrimaryPreferred => 2,
        Mode::Secondary => 3,
        Mode::SecondaryPreferred => 4,
        Mode::Nearest => 5,
    })
}
