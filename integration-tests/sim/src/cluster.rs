//! Cluster state shared by every task: members, roles, elections, the oplog and replication,
//! and the control operations behind the public [`Cluster`](super::Cluster) API and the `sim*`
//! admin commands.
//!
//! Everything mutable lives in one [`State`] behind a `parking_lot::Mutex`; it is only ever
//! held for short, non-blocking sections. Per-member data that the hot path needs without the
//! lock (counters, fail points, latency, partition, topology version) lives in [`Member`].

use std::collections::HashMap;
use std::net::{SocketAddr, TcpListener as StdTcpListener};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bson::{oid::ObjectId, Document, Timestamp};
use parking_lot::Mutex;
use tokio::runtime::Handle;
use tokio::sync::{watch, Notify};
use tokio::task::AbortHandle;

use super::commands::cursor::Cursor;
use super::commands::txn::Txn;
use super::failpoint::FailPoints;
use super::repl::{OpTime, Oplog};
use super::store::Store;
use super::{Counters, MemberCounters, MemberOptions, SimError};

/// The shape of the simulated deployment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Standalone,
    ReplicaSet,
    Sharded,
    LoadBalanced,
}

/// A member's `topologyVersion`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct TopologyVersion {
    pub process_id: ObjectId,
    pub counter: i64,
}

/// Per-member counters, updated without the state lock.
#[derive(Debug, Default)]
pub(crate) struct CounterCells {
    pub connections_opened: AtomicU64,
    pub hellos: AtomicU64,
    pub awaited_hellos: AtomicU64,
    pub compressed_replies: AtomicU64,
    pub bytes_in: AtomicU64,
    pub bytes_out: AtomicU64,
    pub commands: Mutex<HashMap<String, u64>>,
    /// Requests that arrived compressed, by `compressor:command`.
    pub compressed_commands: Mutex<HashMap<String, u64>>,
}

impl CounterCells {
    /// Counts one command by name.
    pub(crate) fn command(&self, name: &str) {
        let mut map = self.commands.lock();
        match map.get_mut(name) {
            Some(n) => *n += 1,
            None => {
                map.insert(name.to_owned(), 1);
            }
        }
    }

    /// Counts one request that arrived as OP_COMPRESSED.
    pub(crate) fn compressed_command(&self, compressor_id: u8, name: &str) {
        let compressor = match compressor_id {
            0 => "noop",
            1 => "snappy",
            2 => "zlib",
            3 => "zstd",
            _ => "unknown",
        };
        *self.compressed_commands.lock().entry(format!("{compressor}:{name}")).or_insert(0) += 1;
    }

    fn snapshot(&self, current_connections: usize) -> MemberCounters {
        MemberCounters {
            connections_opened: self.connections_opened.load(Ordering::Relaxed),
            current_connections: u64::try_from(current_connections).unwrap_or(u64::MAX),
            hellos: self.hellos.load(Ordering::Relaxed),
            awaited_hellos: self.awaited_hellos.load(Ordering::Relaxed),
            compressed_replies: self.compressed_replies.load(Ordering::Relaxed),
            bytes_in: self.bytes_in.load(Ordering::Relaxed),
            bytes_out: self.bytes_out.load(Ordering::Relaxed),
            commands: self.commands.lock().iter().map(|(k, v)| (k.clone(), *v)).collect(),
            compressed_commands: self
                .compressed_commands
                .lock()
                .iter()
                .map(|(k, v)| (k.clone(), *v))
                .collect(),
        }
    }
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
    fn new(index: usize, addr: String, port: u16) -> Self {
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
    fn new(opts: &MemberOptions) -> Self {
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

/// Everything mutable, behind one lock.
#[derive(Debug)]
pub(crate) struct State {
    pub handles: Vec<Arc<Member>>,
    pub members: Vec<MemberState>,
    pub term: i64,
    pub primary: Option<usize>,
    pub set_version: i32,
    pub oplog: Oplog,
    /// Majority commit point (absolute oplog index); never moves back.
    pub commit: u64,
    /// The data of standalone, sharded and load-balanced deployments.
    pub shared_store: Store,
    pub cursors: HashMap<i64, Cursor>,
    pub next_cursor_id: i64,
    /// Open transactions by lsid bytes.
    pub txns: HashMap<Vec<u8>, Txn>,
    /// The reply of each executed retryable write and its oplog position (if it wrote), by
    /// (lsid bytes, txnNumber): a retry of the same statement gets the reply again instead of
    /// writing twice (mongod's session table, which survives failovers but is rolled back
    /// with the write).
    pub retried_writes: HashMap<(Vec<u8>, i64), (Document, Option<super::commands::PendingWrite>)>,
    /// The newest `txnNumber` each session (lsid bytes) used, in a retryable write or a
    /// transaction: an older one is `TransactionTooOld`, so a write its client gave up on can
    /// never be applied after a later write of the same session.
    pub newest_txn_numbers: HashMap<Vec<u8>, i64>,
    /// The data as snapshot reads saw it, by the `atClusterTime` they reported (the newest
    /// few; an older time is `SnapshotTooOld`).
    pub snapshots: std::collections::VecDeque<(bson::Timestamp, Store)>,
    /// The change events change streams read.
    pub history: super::commands::change_stream::History,
    /// Open change stream cursors (their ids share `next_cursor_id`).
    pub streams: HashMap<i64, super::commands::change_stream::Stream>,
    /// A member process of a multi-process set: its votes, peers and journal (`None`: every
    /// member is in this process).
    pub node: Option<Box<super::member::Node>>,
}

impl State {
    /// The number of data-bearing members that must apply a write for `w: "majority"`.
    pub(crate) fn majority(&self) -> usize {
        let voters = self.members.iter().filter(|m| !m.removed).count();
        let data = self.members.iter().filter(|m| m.data_bearing()).count();
        (voters / 2 + 1).min(data).max(1)
    }

    /// Data-bearing members that have applied everything before `end`.
    pub(crate) fn acked(&self, end: u64) -> usize {
        self.members.iter().filter(|m| m.data_bearing() && m.applied >= end).count()
    }

    /// Number of data-bearing members.
    pub(crate) fn data_members(&self) -> usize {
        self.members.iter().filter(|m| m.data_bearing()).count()
    }

    /// The store a command on member `i` reads and writes.
    pub(crate) fn store_mut(&mut self, kind: Kind, i: usize) -> Option<&mut Store> {
        if kind == Kind::ReplicaSet {
            self.members.get_mut(i).map(|m| &mut m.store)
        } else {
            Some(&mut self.shared_store)
        }
    }

    /// The optime of member `i`'s last applied write.
    pub(crate) fn optime(&self, i: usize) -> OpTime {
        self.oplog.optime_at(self.members.get(i).map_or(0, |m| m.applied))
    }

    /// The majority-committed optime.
    pub(crate) fn majority_optime(&self) -> OpTime {
        self.oplog.optime_at(self.commit)
    }

    fn bump_all(&self) {
        for (h, m) in self.handles.iter().zip(&self.members) {
            if m.alive && !m.removed {
                h.bump();
            }
        }
    }

    /// Applies every entry the lag allows to the live secondaries, moves the commit point and
    /// trims the oplog. Returns whether anything changed and when the next entry becomes due.
    fn replicate(&mut self, lag: Duration, now: Instant) -> (bool, Option<Instant>) {
        if self.node.is_some() {
            return (self.member_commit(), None);
        }
        let end = self.oplog.end();
        let mut changed = false;
        let mut next_due: Option<Instant> = None;
        let primary = self.primary;
        // Secondaries fetch entries from a live member: those of a dead primary that no live
        // member has are out of reach (and rolled back by the next election), as in mongod.
        let source = self.members.iter().filter(|m| m.alive && m.data_bearing()).map(|m| m.applied).max();
        let end = end.min(source.unwrap_or(0));
        let State { members, oplog, .. } = self;
        for (i, m) in members.iter_mut().enumerate() {
            if Some(i) == primary || !m.alive || !m.data_bearing() {
                continue;
            }
            while m.applied < end {
                let Some(entry) = oplog.get(m.applied) else { break };
                let due = entry.at + lag;
                if due > now {
                    next_due = Some(next_due.map_or(due, |d| d.min(due)));
                    break;
                }
                for op in &entry.ops {
                    op.apply(&mut m.store);
                }
                m.applied += 1;
                changed = true;
            }
        }
        changed |= self.advance_commit();
        // Every data-bearing member (dead ones included: they keep their data) has these.
        let min_applied = self.members.iter().filter(|m| m.data_bearing()).map(|m| m.applied).min();
        if let Some(min) = min_applied {
            self.oplog.trim(min.min(self.commit));
        }
        (changed, next_due)
    }

    /// A member process: the primary moves the commit point from the positions its peers
    /// reported (secondaries follow the primary's); both trim what every member has.
    fn member_commit(&mut self) -> bool {
        let me = self.node.as_ref().map(|n| n.me);
        let changed = self.primary.is_some() && self.primary == me && self.advance_member_commit();
        // The slowest member's last entry stays: its fetcher asks for it by timestamp.
        let min_applied = self.members.iter().filter(|m| m.data_bearing()).map(|m| m.applied).min();
        if let Some(min) = min_applied {
            self.oplog.trim(min.min(self.commit).saturating_sub(1));
        }
        changed
    }

    /// A member process's primary: the commit point moves to what a majority has, but only to
    /// an entry of its own term (Raft's rule: counting copies of an older term's entry does not
    /// make it safe from a later election).
    fn advance_member_commit(&mut self) -> bool {
        let mut applied: Vec<u64> =
            self.members.iter().filter(|m| m.data_bearing()).map(|m| m.applied).collect();
        applied.sort_unstable_by(|a, b| b.cmp(a));
        let Some(&c) = applied.get(self.majority().saturating_sub(1)) else { return false };
        let own_term =
            c.checked_sub(1).and_then(|i| self.oplog.get(i)).is_some_and(|e| e.optime.term == self.term);
        if c > self.commit && own_term {
            self.commit = c;
            return true;
        }
        false
    }

    fn advance_commit(&mut self) -> bool {
        let mut applied: Vec<u64> =
            self.members.iter().filter(|m| m.data_bearing()).map(|m| m.applied).collect();
        applied.sort_unstable_by(|a, b| b.cmp(a));
        let need = self.majority();
        match applied.get(need.saturating_sub(1)) {
            Some(&c) if c > self.commit => {
                self.commit = c;
                true
            }
            _ => false,
        }
    }

    /// Steps the primary down (no election); returns who it was.
    fn step_down(&mut self) -> Option<usize> {
        let p = self.primary.take()?;
        // Transactions die with the primary that ran them.
        self.txns.clear();
        self.bump_all();
        Some(p)
    }

    /// Whether member `i` may become primary now.
    fn electable(&self, i: usize, now: Instant) -> bool {
        self.members.get(i).is_some_and(|m| {
            m.alive
                && m.data_bearing()
                && !m.hidden
                && m.priority > 0.0
                && m.stepped_down_until.is_none_or(|t| t <= now)
        })
    }

    /// The member an election would pick: highest priority, then most up to date, then lowest
    /// index; `avoid` only if nobody else qualifies.
    fn candidate(&self, avoid: Option<usize>, now: Instant) -> Option<usize> {
        let mut best: Option<usize> = None;
        for pass in 0..2 {
            for i in 0..self.members.len() {
                if !self.electable(i, now) || (pass == 0 && Some(i) == avoid) {
                    continue;
                }
                let better = match best {
                    None => true,
                    Some(b) => {
                        let (mi, mb) = (&self.members[i], &self.members[b]);
                        mi.priority > mb.priority || (mi.priority == mb.priority && mi.applied > mb.applied)
                    }
                };
                if better {
                    best = Some(i);
                }
            }
            if best.is_some() {
                break;
            }
        }
        best
    }

    /// Makes member `i` primary: it catches up with the most advanced live member (and at least
    /// the commit point), members holding entries beyond that roll them back, the term goes up.
    fn promote(&mut self, i: usize) -> Result<(), SimError> {
        let m = self.members.get(i).ok_or(SimError::NoSuchMember(i))?;
        if !m.alive || !m.data_bearing() {
            return Err(SimError::InvalidState(format!("member {i} is down, removed or an arbiter")));
        }
        if self.primary == Some(i) {
            return Ok(());
        }
        self.step_down();
        let live_max = self.members.iter().filter(|m| m.alive && m.data_bearing()).map(|m| m.applied).max();
        let target = live_max.unwrap_or(0).max(self.commit).min(self.oplog.end());
        {
            let State { members, oplog, .. } = self;
            let m = &mut members[i];
            while m.applied < target {
                let Some(entry) = oplog.get(m.applied) else { break };
                for op in &entry.ops {
                    op.apply(&mut m.store);
                }
                m.applied += 1;
            }
            for (j, other) in members.iter_mut().enumerate() {
                if j == i || other.applied <= target {
                    continue;
                }
                tracing::info!(
                    member = j,
                    from = other.applied,
                    to = target,
                    "rolling back entries the new primary lacks"
                );
                other.undo_to(oplog, target);
            }
            oplog.truncate(target);
            let kept = oplog.optime_at(target).ts;
            self.history.roll_back(kept);
        }
        // The session table is rolled back with the writes it records: their retries run again.
        self.retried_writes.retain(|_, (_, p)| p.is_none_or(|p| p.end <= target));
        self.term += 1;
        self.primary = Some(i);
        // Like mongod, a new primary writes a no-op in its term.
        let end = self.oplog.push(self.term, Vec::new());
        self.members[i].applied = end;
        self.bump_all();
        tracing::info!(member = i, term = self.term, "elected primary");
        Ok(())
    }
}

/// TLS and authentication settings of a cluster (fixed at start).
#[derive(Debug, Default)]
pub(crate) struct Security {
    /// `Some`: every listener serves TLS only.
    pub tls: Option<super::tls::Acceptor>,
    /// Empty: no authentication.
    pub users: super::auth::Users,
}

/// Listener-independent, shared cluster state; one per [`Cluster`](super::Cluster).
#[derive(Debug)]
pub(crate) struct Shared {
    pub security: Security,
    /// The name members advertise (hello, the URI) instead of `127.0.0.1`; they still listen
    /// on 127.0.0.1 only.
    pub host_name: Option<String>,
    /// The release the members answer as.
    pub version: super::ServerVersion,
    pub kind: Kind,
    pub set_name: String,
    pub lag: Duration,
    pub election_timeout: Duration,
    pub base_port: u16,
    pub state: Mutex<State>,
    pub handle: Handle,
    /// The newest cluster time (`Timestamp` packed as time << 32 | increment), readable
    /// without the lock for `$clusterTime` gossip.
    pub cluster_time: AtomicU64,
    /// Bumped whenever replication progresses; write-concern waiters watch it.
    pub progress: watch::Sender<u64>,
    /// Wakes the replicator (new entries, restarts).
    pub repl_wake: Notify,
    pub next_connection_id: AtomicI64,
    /// The load balancer's address and round-robin cursor (LB topology only).
    pub lb_addr: Mutex<Option<String>>,
    pub lb_next: AtomicUsize,
    pub lb_listener: Mutex<Option<AbortHandle>>,
    /// Load balancers in front of one service each ([`Shared::single_service_lb`]).
    pub single_lbs: Mutex<Vec<AbortHandle>>,
    pub closed: AtomicBool,
    /// This process runs one member of a set whose other members are other processes.
    pub remote: Option<super::member::MemberConfig>,
}

/// Binds 127.0.0.1:`port` (0 = ephemeral). A just-killed listener may still be closing on a
/// runtime thread, so `EADDRINUSE` is retried for a short, bounded time.
pub(crate) fn bind(port: u16) -> Result<StdTcpListener, SimError> {
    bind_on(std::net::IpAddr::from([127, 0, 0, 1]), port)
}

/// Binds `ip:port` (a member process in a container listens on its own network).
pub(crate) fn bind_on(ip: std::net::IpAddr, port: u16) -> Result<StdTcpListener, SimError> {
    let addr = SocketAddr::new(ip, port);
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        match StdTcpListener::bind(addr) {
            Ok(l) => {
                l.set_nonblocking(true).map_err(SimError::Io)?;
                return Ok(l);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AddrInUse && port != 0 && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(2));
            }
            Err(e) => return Err(SimError::Bind { port, source: e }),
        }
    }
}

fn pack_ts(ts: Timestamp) -> u64 {
    (u64::from(ts.time) << 32) | u64::from(ts.increment)
}

impl Shared {
    /// Creates the shared state for `options.len()` members (listeners are started separately;
    /// `security` is set by the caller before sharing).
    pub(crate) fn new(
        kind: Kind,
        set_name: String,
        lag: Duration,
        election_timeout: Duration,
        base_port: u16,
        handle: Handle,
        options: &[MemberOptions],
    ) -> Self {
        let oplog = Oplog::new(0);
        let ts = oplog.last_ts();
        let state = State {
            handles: Vec::new(),
            members: options.iter().map(MemberState::new).collect(),
            term: 0,
            primary: None,
            set_version: 1,
            oplog,
            commit: 0,
            shared_store: Store::default(),
            cursors: HashMap::new(),
            next_cursor_id: 0x1000_0000,
            txns: HashMap::new(),
            snapshots: std::collections::VecDeque::new(),
            history: Default::default(),
            streams: HashMap::new(),
            retried_writes: HashMap::new(),
            newest_txn_numbers: HashMap::new(),
            node: None,
        };
        Shared {
            security: Security::default(),
            host_name: None,
            version: super::ServerVersion::default(),
            kind,
            set_name,
            lag,
            election_timeout,
            base_port,
            state: Mutex::new(state),
            handle,
            cluster_time: AtomicU64::new(pack_ts(ts)),
            progress: watch::Sender::new(0),
            repl_wake: Notify::new(),
            next_connection_id: AtomicI64::new(1),
            lb_addr: Mutex::new(None),
            lb_next: AtomicUsize::new(0),
            lb_listener: Mutex::new(None),
            single_lbs: Mutex::new(Vec::new()),
            closed: AtomicBool::new(false),
            remote: None,
        }
    }

    /// The current cluster time.
    pub(crate) fn cluster_time(&self) -> Timestamp {
        let v = self.cluster_time.load(Ordering::Relaxed);
        Timestamp { time: (v >> 32) as u32, increment: v as u32 }
    }

    /// Records `ts` as cluster time if it is newer.
    pub(crate) fn advance_cluster_time(&self, ts: Timestamp) {
        self.cluster_time.fetch_max(pack_ts(ts), Ordering::Relaxed);
    }

    /// The member handle `i`.
    pub(crate) fn member(&self, i: usize) -> Option<Arc<Member>> {
        self.state.lock().handles.get(i).cloned()
    }

    /// Starts listeners for every member (for LB: only the load balancer) and the replicator,
    /// and elects the first primary.
    pub(crate) fn start(self: &Arc<Self>) -> Result<(), SimError> {
        if let Some(config) = &self.remote {
            return self.start_member(config);
        }
        let count = self.state.lock().members.len();
        let mut listeners = Vec::with_capacity(count);
        for i in 0..count {
            if self.kind == Kind::LoadBalanced {
                listeners.push(None);
                continue;
            }
            let port = if self.base_port == 0 { 0 } else { self.base_port.saturating_add(i as u16) };
            let l = bind(port)?;
            listeners.push(Some(l));
        }
        let lb = if self.kind == Kind::LoadBalanced { Some(bind(self.base_port)?) } else { None };
        let lb_addr = match &lb {
            Some(l) => Some(self.advertised(l.local_addr().map_err(SimError::Io)?)),
            None => None,
        };
        {
            let mut st = self.state.lock();
            for (i, l) in listeners.iter().enumerate() {
                let (addr, port) = match (l, &lb_addr) {
                    (Some(l), _) => {
                        let a = l.local_addr().map_err(SimError::Io)?;
                        (self.advertised(a), a.port())
                    }
                    (None, Some(lb)) => (lb.clone(), 0),
                    (None, None) => return Err(SimError::InvalidConfig("no listener".into())),
                };
                st.handles.push(Arc::new(Member::new(i, addr, port)));
            }
            if self.kind == Kind::ReplicaSet {
                let p = st
                    .candidate(None, Instant::now())
                    .ok_or_else(|| SimError::InvalidConfig("no electable member".into()))?;
                st.promote(p)?;
                // The set starts initiated: every member has the initial history.
                let end = st.oplog.end();
                for m in st.members.iter_mut().filter(|m| m.data_bearing()) {
                    m.applied = end;
                }
                st.commit = end;
                self.advance_cluster_time(st.oplog.last_ts());
            }
        }
        *self.lb_addr.lock() = lb_addr;
        for (i, l) in listeners.into_iter().enumerate() {
            if let Some(l) = l {
                self.spawn_listener(i, l);
            }
        }
        if let Some(l) = lb {
            let shared = Arc::clone(self);
            let task = self.handle.spawn(async move { super::lb::run(shared, l, None).await });
            *self.lb_listener.lock() = Some(task.abort_handle());
        }
        if self.kind == Kind::ReplicaSet {
            let shared = Arc::clone(self);
            self.handle.spawn(async move { shared.replicator().await });
        }
        Ok(())
    }

    /// Starts one member of a multi-process set: its listener and the loops that find the
    /// other members, elect and replicate.
    fn start_member(self: &Arc<Self>, config: &super::member::MemberConfig) -> Result<(), SimError> {
        let port = config.validate()?;
        let listener = bind_on(config.bind, port)?;
        {
            let mut st = self.state.lock();
            for (i, name) in config.members.iter().enumerate() {
                let port = name.rsplit_once(':').and_then(|(_, p)| p.parse().ok()).unwrap_or(0);
                st.handles.push(Arc::new(Member::new(i, name.clone(), port)));
            }
            super::member::init(self, &mut st, config)?;
            self.advance_cluster_time(st.oplog.last_ts());
        }
        self.spawn_listener(config.me, listener);
        super::member::spawn(self, config);
        Ok(())
    }

    fn spawn_listener(self: &Arc<Self>, i: usize, l: StdTcpListener) {
        let Some(member) = self.member(i) else { return };
        let shared = Arc::clone(self);
        let task = self.handle.spawn(async move { super::server::listen(shared, member, l).await });
        if let Some(m) = self.member(i) {
            *m.listener.lock() = Some(task.abort_handle());
        }
    }

    /// Background replication for lagged secondaries and the periodic no-op writer.
    async fn replicator(self: Arc<Self>) {
        // mongod's periodicNoopIntervalSecs: keeps lastWriteDate moving on an idle set.
        const NOOP_EVERY: Duration = Duration::from_secs(10);
        let mut last_noop = Instant::now();
        loop {
            if self.closed.load(Ordering::Relaxed) {
                return;
            }
            let now = Instant::now();
            let next = {
                let mut st = self.state.lock();
                if now.duration_since(last_noop) >= NOOP_EVERY {
                    last_noop = now;
                    if let Some(p) = st.primary {
                        let term = st.term;
                        let end = st.oplog.push(term, Vec::new());
                        st.members[p].applied = end;
                        self.advance_cluster_time(st.oplog.last_ts());
                    }
                }
                let (changed, next) = st.replicate(self.lag, now);
                if changed {
                    self.progress.send_modify(|v| *v += 1);
                }
                next
            };
            let wake = next.unwrap_or(now + NOOP_EVERY).min(last_noop + NOOP_EVERY);
            tokio::select! {
                () = self.repl_wake.notified() => {}
                () = tokio::time::sleep_until(wake.into()) => {}
            }
        }
    }

    /// Called after a primary logged an entry: replicate at once when there is no lag,
    /// otherwise wake the replicator.
    pub(crate) fn after_write(&self, st: &mut State) {
        self.advance_cluster_time(st.oplog.last_ts());
        if st.node.is_some() {
            super::member::journal_new_entries(st);
            self.member_progress(st);
        } else if self.lag.is_zero() {
            let (_, _) = st.replicate(Duration::ZERO, Instant::now());
            self.progress.send_modify(|v| *v += 1);
        } else {
            st.advance_commit();
            self.progress.send_modify(|v| *v += 1);
            self.repl_wake.notify_one();
        }
    }

    /// A member process learned something (a peer's position, the commit point, a rollback):
    /// move the commit point and wake write-concern waiters and oplog cursors.
    pub(crate) fn member_progress(&self, st: &mut State) {
        st.member_commit();
        self.progress.send_modify(|v| *v += 1);
    }

    fn schedule_election(self: &Arc<Self>, delay: Duration, avoid: Option<usize>) {
        let shared = Arc::clone(self);
        self.handle.spawn(async move {
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            shared.auto_elect(avoid);
        });
    }

    fn auto_elect(self: &Arc<Self>, avoid: Option<usize>) {
        if self.closed.load(Ordering::Relaxed) {
            return;
        }
        let retry = {
            let mut st = self.state.lock();
            if st.primary.is_some() {
                return;
            }
            let now = Instant::now();
            match st.candidate(avoid, now) {
                Some(c) => {
                    if let Err(e) = st.promote(c) {
                        tracing::warn!(error = %e, "election failed");
                    }
                    self.advance_cluster_time(st.oplog.last_ts());
                    self.progress.send_modify(|v| *v += 1);
                    None
                }
                // Someone is only temporarily ineligible (replSetStepDown): try again then.
                None => st
                    .members
                    .iter()
                    .filter_map(|m| m.stepped_down_until.filter(|t| *t > now && m.alive))
                    .min()
                    .map(|t| t.duration_since(now)),
            }
        };
        if let Some(delay) = retry {
            self.schedule_election(delay, avoid);
        }
    }

    // ----- control operations (public API and admin commands) -----

    fn check_rs(&self, what: &str) -> Result<(), SimError> {
        if self.kind == Kind::ReplicaSet {
            Ok(())
        } else {
            Err(SimError::InvalidState(format!("{what} needs a replica set")))
        }
    }

    /// Steps the primary down; a new one is elected after `gap`. `ineligible` keeps the old
    /// primary out of elections for that long (replSetStepDown's stepDownSecs).
    pub(crate) fn step_down(
        self: &Arc<Self>,
        gap: Duration,
        ineligible: Option<Duration>,
    ) -> Result<(), SimError> {
        self.check_rs("step down")?;
        if self.remote.is_some() {
            let mut st = self.state.lock();
            let me = st.node.as_ref().map_or(0, |n| n.me);
            if !super::member::step_down_locked(self, &mut st, "replSetStepDown") {
                return Err(SimError::InvalidState("this member is not primary".into()));
            }
            st.members[me].stepped_down_until = ineligible.map(|d| Instant::now() + d);
            return Ok(());
        }
        let old = {
            let mut st = self.state.lock();
            let old = st.step_down();
            if let (Some(p), Some(d)) = (old, ineligible) {
                st.members[p].stepped_down_until = Some(Instant::now() + d);
            }
            old
        };
        match old {
            Some(p) => {
                tracing::info!(member = p, ?gap, "primary stepped down");
                self.schedule_election(gap, Some(p));
                Ok(())
            }
            None => Err(SimError::InvalidState("there is no primary".into())),
        }
    }

    /// Makes member `i` primary now.
    pub(crate) fn elect(&self, i: usize) -> Result<(), SimError> {
        self.check_rs("elect")?;
        let mut st = self.state.lock();
        if let Some(m) = st.members.get_mut(i) {
            m.stepped_down_until = None;
        }
        st.promote(i)?;
        self.advance_cluster_time(st.oplog.last_ts());
        drop(st);
        self.progress.send_modify(|v| *v += 1);
        Ok(())
    }

    /// Kills member `i`: closes its listener and every connection.
    pub(crate) fn kill(self: &Arc<Self>, i: usize) -> Result<(), SimError> {
        let (member, was_primary) = {
            let mut st = self.state.lock();
            let member = st.handles.get(i).cloned().ok_or(SimError::NoSuchMember(i))?;
            let m = &mut st.members[i];
            if !m.alive {
                return Ok(());
            }
            m.alive = false;
            st.cursors.retain(|_, c| c.member != i);
            st.streams.retain(|_, c| c.member() != i);
            let was_primary = st.primary == Some(i);
            if was_primary {
                st.step_down();
            }
            (member, was_primary)
        };
        member.shut_down();
        tracing::info!(member = i, "killed");
        if was_primary {
            self.schedule_election(self.election_timeout, None);
        }
        Ok(())
    }

    /// Restarts member `i` on the same port with a new processId (killing it first if needed).
    pub(crate) fn restart(self: &Arc<Self>, i: usize) -> Result<(), SimError> {
        let alive = {
            let st = self.state.lock();
            st.members.get(i).ok_or(SimError::NoSuchMember(i))?.alive
        };
        if alive {
            self.kill(i)?;
        }
        let member = self.member(i).ok_or(SimError::NoSuchMember(i))?;
        let listener = if self.kind == Kind::LoadBalanced { None } else { Some(bind(member.port)?) };
        let no_primary = {
            let mut st = self.state.lock();
            if st.members[i].removed {
                return Err(SimError::InvalidState(format!("member {i} was removed")));
            }
            st.members[i].alive = true;
            st.members[i].stepped_down_until = None;
            member.failpoints.clear();
            member.topology.send_replace(TopologyVersion { process_id: ObjectId::new(), counter: 0 });
            st.primary.is_none()
        };
        if let Some(l) = listener {
            self.spawn_listener(i, l);
        }
        tracing::info!(member = i, "restarted");
        if self.kind == Kind::ReplicaSet {
            self.repl_wake.notify_one();
            if no_primary {
                self.schedule_election(Duration::ZERO, None);
            }
        }
        Ok(())
    }

    /// Adds latency before every reply of member `i`.
    pub(crate) fn set_latency(&self, i: usize, latency: Duration) -> Result<(), SimError> {
        let m = self.member(i).ok_or(SimError::NoSuchMember(i))?;
        m.latency_us.store(u64::try_from(latency.as_micros()).unwrap_or(u64::MAX), Ordering::Relaxed);
        Ok(())
    }

    /// Turns the client-side partition of member `i` on or off.
    pub(crate) fn partition(&self, i: usize, on: bool) -> Result<(), SimError> {
        let m = self.member(i).ok_or(SimError::NoSuchMember(i))?;
        m.partitioned.store(on, Ordering::Relaxed);
        // Pending awaitable hellos re-check the flag.
        m.bump();
        Ok(())
    }

    /// `host:port` as clients are told to dial it: the configured host name, else the
    /// listener's own address.
    pub(crate) fn advertised(&self, a: SocketAddr) -> String {
        match &self.host_name {
            Some(name) => format!("{name}:{}", a.port()),
            None => a.to_string(),
        }
    }

    /// Adds a secondary (initial sync from the most advanced member); returns its index.
    pub(crate) fn add_member(self: &Arc<Self>, tags: Option<Document>) -> Result<usize, SimError> {
        self.check_rs("add_member")?;
        let index = self.state.lock().members.len();
        let port = if self.base_port == 0 { 0 } else { self.base_port.saturating_add(index as u16) };
        let l = bind(port)?;
        let addr = l.local_addr().map_err(SimError::Io)?;
        {
            let mut st = self.state.lock();
            if st.members.len() != index {
                return Err(SimError::InvalidState("concurrent add_member".into()));
            }
            let opts = MemberOptions { tags: tags.unwrap_or_default(), ..MemberOptions::default() };
            let mut ms = MemberState::new(&opts);
            // Initial sync: copy the most advanced live data member.
            if let Some(src) =
                st.members.iter().filter(|m| m.alive && m.data_bearing()).max_by_key(|m| m.applied)
            {
                ms.store = src.store.clone();
                ms.applied = src.applied;
            }
            st.members.push(ms);
            st.handles.push(Arc::new(Member::new(index, self.advertised(addr), addr.port())));
            st.set_version += 1;
            st.bump_all();
        }
        self.spawn_listener(index, l);
        tracing::info!(member = index, %addr, "member added");
        Ok(index)
    }

    /// Removes member `i` from the set (reconfig) and shuts it down.
    pub(crate) fn remove_member(self: &Arc<Self>, i: usize) -> Result<(), SimError> {
        self.check_rs("remove_member")?;
        let was_primary = {
            let mut st = self.state.lock();
            let m = st.members.get(i).ok_or(SimError::NoSuchMember(i))?;
            if m.removed {
                return Ok(());
            }
            let was_primary = st.primary == Some(i);
            if was_primary {
                st.step_down();
            }
            st.members[i].removed = true;
            st.set_version += 1;
            st.bump_all();
            was_primary
        };
        // The removed member goes down (its connections close).
        {
            let mut st = self.state.lock();
            st.members[i].alive = false;
        }
        if let Some(m) = self.member(i) {
            m.shut_down();
        }
        if was_primary {
            self.schedule_election(Duration::ZERO, None);
        }
        Ok(())
    }

    /// Replaces member `i`'s tags (reconfig).
    pub(crate) fn set_tags(&self, i: usize, tags: Document) -> Result<(), SimError> {
        self.check_rs("set_tags")?;
        let mut st = self.state.lock();
        st.members.get_mut(i).ok_or(SimError::NoSuchMember(i))?.tags = tags;
        st.set_version += 1;
        st.bump_all();
        Ok(())
    }

    /// Applies a configureFailPoint document to member `i`.
    pub(crate) fn configure_fail_point(&self, i: usize, cmd: &Document) -> Result<(), SimError> {
        self.member(i).ok_or(SimError::NoSuchMember(i))?.failpoints.configure(cmd)
    }

    /// A snapshot of every counter.
    pub(crate) fn counters(&self) -> Counters {
        let handles = self.state.lock().handles.clone();
        let members: Vec<MemberCounters> =
            handles.iter().map(|h| h.counters.snapshot(h.live_connections.load(Ordering::Acquire))).collect();
        let mut total = MemberCounters::default();
        for m in &members {
            total.connections_opened += m.connections_opened;
            total.current_connections += m.current_connections;
            total.hellos += m.hellos;
            total.awaited_hellos += m.awaited_hellos;
            total.compressed_replies += m.compressed_replies;
            total.bytes_in += m.bytes_in;
            total.bytes_out += m.bytes_out;
            for (k, v) in &m.commands {
                *total.commands.entry(k.clone()).or_insert(0) += v;
            }
            for (k, v) in &m.compressed_commands {
                *total.compressed_commands.entry(k.clone()).or_insert(0) += v;
            }
        }
        Counters { members, total }
    }

    /// Starts another load balancer, in front of service `i` only (the spec tests' single-mongos
    /// LB next to the multi-mongos one); returns its `host:port`.
    pub(crate) fn single_service_lb(self: &Arc<Self>, i: usize) -> Result<String, SimError> {
        if self.kind != Kind::LoadBalanced {
            return Err(SimError::InvalidState(
                "a single-service load balancer needs an LB deployment".into(),
            ));
        }
        self.member(i).ok_or(SimError::NoSuchMember(i))?;
        let l = bind(0)?;
        let addr = self.advertised(l.local_addr().map_err(SimError::Io)?);
        let shared = Arc::clone(self);
        let task = self.handle.spawn(async move { super::lb::run(shared, l, Some(i)).await });
        self.single_lbs.lock().push(task.abort_handle());
        Ok(addr)
    }

    /// Stops everything: every listener and connection closes.
    pub(crate) fn close(&self) {
        if self.closed.swap(true, Ordering::SeqCst) {
            return;
        }
        if let Some(l) = self.lb_listener.lock().take() {
            l.abort();
        }
        for l in self.single_lbs.lock().drain(..) {
            l.abort();
        }
        let handles = self.state.lock().handles.clone();
        for h in handles {
            if let Some(l) = h.listener.lock().take() {
                l.abort();
            }
            h.incarnation.send_modify(|n| *n += 1);
        }
        self.repl_wake.notify_one();
    }

    /// Addresses of every member in index order.
    pub(crate) fn hosts(&self) -> Vec<String> {
        if self.kind == Kind::LoadBalanced {
            return self.lb_addr.lock().iter().cloned().collect();
        }
        self.state.lock().handles.iter().map(|h| h.addr.clone()).collect()
    }

    /// The replica-set config members as `(index, addr, state)` for hello/URI building.
    pub(crate) fn uri(&self) -> String {
        let st = self.state.lock();
        let (hosts, mut options) = match self.kind {
            Kind::Standalone => (st.handles.first().map_or("", |h| h.addr.as_str()).to_owned(), Vec::new()),
            Kind::Sharded => {
                let hosts: Vec<&str> = st.handles.iter().map(|h| h.addr.as_str()).collect();
                (hosts.join(","), Vec::new())
            }
            Kind::LoadBalanced => {
                (self.lb_addr.lock().clone().unwrap_or_default(), vec!["loadBalanced=true".to_owned()])
            }
            Kind::ReplicaSet => {
                let hosts: Vec<&str> = st
                    .handles
                    .iter()
                    .zip(&st.members)
                    .filter(|(_, m)| !m.hidden && !m.removed)
                    .map(|(h, _)| h.addr.as_str())
                    .collect();
                (hosts.join(","), vec![format!("replicaSet={}", self.set_name)])
            }
        };
        if self.security.tls.is_some() {
            options.push("tls=true".to_owned());
        }
        if options.is_empty() {
            format!("mongodb://{hosts}/")
        } else {
            format!("mongodb://{hosts}/?{}", options.join("&"))
        }
    }

    /// The primary's index (standalone: 0).
    pub(crate) fn primary(&self) -> Option<usize> {
        match self.kind {
            Kind::ReplicaSet => self.state.lock().primary,
            Kind::Standalone => Some(0),
            _ => None,
        }
    }
}

/// Builds mongod's electionId for a term: `7fffffff` followed by the term, big-endian.
pub(crate) fn election_id(term: i64) -> ObjectId {
    let mut bytes = [0u8; 12];
    bytes[..4].copy_from_slice(&[0x7f, 0xff, 0xff, 0xff]);
    bytes[4..].copy_from_slice(&term.to_be_bytes());
    ObjectId::from_bytes(bytes)
}
