//! What every task of a deployment shares ([`Shared`]): its settings, the one [`State`] behind
//! a `parking_lot::Mutex` (held only for short, non-blocking sections), the cluster time, the
//! progress signal write-concern waiters watch, and the quick control operations that only
//! change state (latency, partition, tags, fail points, counters). Elections, kills and
//! restarts are in `control.rs`; starting the listeners in `cluster.rs`.

use std::collections::HashMap;
use std::net::{SocketAddr, TcpListener as StdTcpListener};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bson::{Document, Timestamp};
use parking_lot::Mutex;
use tokio::runtime::Handle;
use tokio::sync::{watch, Notify};
use tokio::task::AbortHandle;

use crate::counters::{Counters, MemberCounters};
use crate::error::SimError;
use crate::member::config::MemberConfig;
use crate::options::{MemberOptions, ServerVersion};
use crate::state::member::{Member, MemberState};
use crate::state::oplog::Oplog;
use crate::state::store::Store;
use crate::state::{Kind, State};

/// TLS and authentication settings of a cluster (fixed at start).
#[derive(Debug, Default)]
pub(crate) struct Security {
    /// `Some`: every listener serves TLS only.
    pub tls: Option<crate::tls::Acceptor>,
    /// Empty: no authentication.
    pub users: crate::auth::Users,
}

/// Listener-independent, shared cluster state; one per [`Cluster`](crate::Cluster).
#[derive(Debug)]
pub(crate) struct Shared {
    pub security: Security,
    /// The name members advertise (hello, the URI) instead of `127.0.0.1`; they still listen
    /// on 127.0.0.1 only.
    pub host_name: Option<String>,
    /// The release the members answer as.
    pub version: ServerVersion,
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
    /// Serves member `i` on a bound listener: the server loop (`server.rs`, above this file),
    /// handed in by whoever builds the deployment, so that a restart can start it again.
    pub serve: Serve,
    /// This process runs one member of a set whose other members are other processes.
    pub remote: Option<MemberConfig>,
}

/// Starts serving member `i` on a bound listener (see [`Shared::serve`]).
pub(crate) type Serve = fn(&Arc<Shared>, usize, StdTcpListener);

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
    /// `security`, `version` and `base_port` are set by the caller before sharing).
    pub(crate) fn new(
        kind: Kind,
        set_name: String,
        lag: Duration,
        election_timeout: Duration,
        handle: Handle,
        options: &[MemberOptions],
        serve: Serve,
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
            version: ServerVersion::default(),
            kind,
            set_name,
            lag,
            election_timeout,
            base_port: 0,
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
            serve,
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

    /// A member process learned something (a peer's position, the commit point, a rollback):
    /// move the commit point and wake write-concern waiters and oplog cursors.
    pub(crate) fn member_progress(&self, st: &mut State) {
        st.member_commit();
        self.progress.send_modify(|v| *v += 1);
    }

    pub(crate) fn check_rs(&self, what: &str) -> Result<(), SimError> {
        if self.kind == Kind::ReplicaSet {
            Ok(())
        } else {
            Err(SimError::InvalidState(format!("{what} needs a replica set")))
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
