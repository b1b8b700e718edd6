//! How one member process of a multi-process replica set is configured (`mongo-sim member`).

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::error::SimError;

/// How one member process of a multi-process replica set is configured.
#[derive(Clone, Debug, PartialEq)]
pub struct MemberConfig {
    /// Every member's `host:port` as the replica set config names it (what hello reports and
    /// what peers dial), in member-id order.
    pub members: Vec<String>,
    /// This process's entry in `members`.
    pub me: usize,
    /// Election priority of each member (empty: 1 for every member); 0 never stands.
    pub priorities: Vec<f64>,
    /// The address to listen on (the port is this member's in `members`).
    pub bind: IpAddr,
    /// Where the member keeps its journal (oplog, term and vote) across restarts; `None`: in
    /// memory only (a restarted member comes back empty).
    pub data_dir: Option<PathBuf>,
    /// How often each peer is sent a heartbeat (mongod: 2 s).
    pub heartbeat: Duration,
    /// How long secondaries wait without hearing from the primary before calling an election
    /// (mongod: 10 s).
    pub election_timeout: Duration,
}

impl MemberConfig {
    /// A config with the defaults used by the compose tests: 250 ms heartbeats and a 2 s
    /// election timeout, listening on 127.0.0.1 (a container passes its own network's
    /// address, or `0.0.0.0` inside its network namespace).
    pub fn new(members: Vec<String>, me: usize) -> Self {
        MemberConfig {
            members,
            me,
            priorities: Vec::new(),
            bind: IpAddr::from([127, 0, 0, 1]),
            data_dir: None,
            heartbeat: Duration::from_millis(250),
            election_timeout: Duration::from_secs(2),
        }
    }

    /// Checks the config; returns this member's port.
    pub(crate) fn validate(&self) -> Result<u16, SimError> {
        let bad = |m: String| Err(SimError::InvalidConfig(m));
        if self.members.is_empty() || self.me >= self.members.len() {
            return bad(format!("member {} is not among the {} members", self.me, self.members.len()));
        }
        let mut seen = std::collections::HashSet::new();
        for m in &self.members {
            if port_of(m).is_none() {
                return bad(format!("member {m:?}: expected HOST:PORT"));
            }
            if !seen.insert(m.to_ascii_lowercase()) {
                return bad(format!("member {m:?} is listed twice"));
            }
        }
        if !self.priorities.is_empty() && self.priorities.len() != self.members.len() {
            return bad(format!("{} priorities for {} members", self.priorities.len(), self.members.len()));
        }
        if self.priorities.iter().any(|p| !(p.is_finite() && *p >= 0.0)) {
            return bad("priorities must be >= 0".into());
        }
        if !self.priorities.is_empty() && self.priorities.iter().all(|p| *p == 0.0) {
            return bad("no electable member (every priority is 0)".into());
        }
        if self.heartbeat.is_zero() || self.election_timeout < self.heartbeat * 2 {
            return bad("the election timeout must be at least two heartbeat intervals".into());
        }
        port_of(&self.members[self.me]).ok_or_else(|| SimError::InvalidConfig("no port".into()))
    }

    /// Member `i`'s priority.
    pub(crate) fn priority(&self, i: usize) -> f64 {
        self.priorities.get(i).copied().unwrap_or(1.0)
    }
}

/// The port of `host:port` (`[v6]:port` too).
fn port_of(host_port: &str) -> Option<u16> {
    let (host, port) = host_port.rsplit_once(':')?;
    (!host.is_empty()).then_some(())?;
    port.parse().ok().filter(|p| *p != 0)
}
