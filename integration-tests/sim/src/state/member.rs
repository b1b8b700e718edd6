//! One member of the deployment: its lock-free handle ([`Member`]: counters, fail points,
//! latency, partition, topology version, listener) and its replication state ([`MemberState`]).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bson::{oid::ObjectId, Document};
use parking_lot::Mutex;
use tokio::sync::watch;
use tokio::task::AbortHandle;

use super::oplog::Oplog;
use crate::counters::CounterCells;
use crate::failpoint::FailPoints;
use crate::options::MemberOptions;
use crate::state::store::Store;

/// A member's `topologyVersion`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct TopologyVersion {
    pub process_id: ObjectId,
    pub counter: i64,
}

/// The lock-free part of one member (a mongod, a mongos, or a load-balanced service).
#[derive(Debug)]
pub(crate) struct Member {
    pub index: usize,
    /// "127.0.0.1:port" (for LB services, the load balancer's address).
    pub addr: String,
    pub port: u16,
    /// The `serviceId` reported behind a load balancer.
    pub service_id: ObjectId,
    pub counters: CounterCells,
    pub failpoints: FailPoints,
    pub latency_us: AtomicU64,
    pub partitioned: AtomicBool,
    /// Changes on every state change of this member; awaitable hellos wait on it.
    pub topology: watch::Sender<TopologyVersion>,
    /// Bumped by kill: every connection of the previous incarnation closes.
    pub incarnation: watch::Sender<u64>,
    pub listener: Mutex<Option<AbortHandle>>,
    /// Connections being served (kill waits for them to close).
    pub live_connections: AtomicUsize,
}

impl Member {
    pub(crate) fn new(index: usize, addr: String, port: u16) -> Self {
        Member {
            index,
            addr,
            port,
            service_id: ObjectId::new(),
            counters: CounterCells::default(),
            failpoints: FailPoints::default(),
            latency_us: AtomicU64::new(0),
            partitioned: AtomicBool::new(false),
            topology: watch::Sender::new(TopologyVersion { process_id: ObjectId::new(), counter: 0 }),
            incarnation: watch::Sender::new(0),
            listener: Mutex::new(None),
            live_connections: AtomicUsize::new(0),
        }
    }

    /// Closes the listener and every connection, and waits (bounded) until they are closed, so
    /// that callers observe a dead member as soon as this returns.
    pub(crate) fn shut_down(&self) {
        let listener = self.listener.lock().take();
        if let Some(l) = &listener {
            l.abort();
        }
        self.incarnation.send_modify(|n| *n += 1);
        // Tasks are dropped on the runtime's threads; this is only ever a few milliseconds.
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline {
            let listener_gone = listener.as_ref().is_none_or(AbortHandle::is_finished);
            if listener_gone && self.live_connections.load(Ordering::Acquire) == 0 {
                return;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        tracing::warn!(member = self.index, "listener or connections still closing after 2 s");
    }

    /// Bumps the topologyVersion counter, waking awaitable hellos.
    pub(crate) fn bump(&self) {
        self.topology.send_modify(|t| t.counter += 1);
    }

    /// The latency added before each reply.
    pub(crate) fn latency(&self) -> Duration {
        Duration::from_micros(self.latency_us.load(Ordering::Relaxed))
    }
}

/// The locked part of one member.
#[derive(Debug)]
pub(crate) struct MemberState {
    pub hidden: bool,
    pub arbiter: bool,
    pub priority: f64,
    pub tags: Document,
    pub removed: bool,
    pub alive: bool,
    /// Replica-set members' own data (other topologies use [`State::shared_store`]).
    pub store: Store,
    /// Oplog entries applied (absolute index one past the last one).
    pub applied: u64,
    /// Not electable before this instant (replSetStepDown).
    pub stepped_down_until: Option<Instant>,
}

impl MemberState {
    pub(crate) fn new(opts: &MemberOptions) -> Self {
        MemberState {
            hidden: opts.hidden,
            arbiter: opts.arbiter,
            priority: opts.priority.unwrap_or(if opts.hidden || opts.arbiter { 0.0 } else { 1.0 }),
            tags: opts.tags.clone(),
            removed: false,
            alive: true,
            store: Store::default(),
            applied: 0,
            stepped_down_until: None,
        }
    }

    /// Undoes this member's entries of `oplog` from `target` on, newest first (rollback).
    pub(crate) fn undo_to(&mut self, oplog: &Oplog, target: u64) {
        while self.applied > target {
            let Some(entry) = oplog.get(self.applied - 1) else { break };
            for op in entry.ops.iter().rev() {
                op.undo(&mut self.store);
            }
            self.applied -= 1;
        }
    }

    /// Holds data (not an arbiter) and is part of the config.
    pub(crate) fn data_bearing(&self) -> bool {
        !self.arbiter && !self.removed
    }
}
