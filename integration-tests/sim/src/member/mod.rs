//! A replica-set member in its own process (`mongo-sim member`): the set's other members run
//! elsewhere (other processes, other containers) and are reached over the wire, as mongod's are.
//!
//! The commands, the store, the oplog and the session table are the in-process set's; only the
//! coordination differs. In [`State`], slot `me` is this process and the other slots mirror what
//! the heartbeats say about the peers (their `applied` is the position of their last write in
//! *this* oplog, so majority counting and write concern waits are the in-process set's code).
//!
//! - `heartbeat`: each peer is asked `replSetHeartbeat` every heartbeat interval; the replies
//!   tell who is primary, in which term, and how far each member got.
//! - `election`: terms, votes (`replSetRequestVotes`, dry run first), priorities, the election
//!   timeout, and a primary stepping down when it no longer reaches a majority.
//! - `sync`: a secondary pulls the primary's oplog (`find`/`getMore` on `local.oplog.rs`),
//!   applies it, reports its position (`replSetUpdatePosition`) and rolls back what a deposed
//!   primary wrote alone.
//! - `oplog_entry`: oplog entries as documents; `journal`: the data directory that lets a
//!   restarted member keep its data, term and vote; `commands`: the server side of all this.

pub(crate) mod commands;
pub(crate) mod config;
mod election;
mod heartbeat;
mod journal;
pub(crate) mod oplog_entry;
mod sync;

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bson::Timestamp;

use crate::error::SimError;
use crate::shared::Shared;
use crate::state::node::{Node, Peer};
use crate::state::oplog::SessionRecord;
use crate::state::State;
pub(crate) use config::MemberConfig;

/// A random duration below `max` (jitter keeps members from calling elections together).
pub(crate) fn jitter(max: Duration) -> Duration {
    let r = std::collections::hash_map::RandomState::new().build_hasher().finish();
    let nanos = u64::try_from(max.as_nanos()).unwrap_or(u64::MAX).max(1);
    Duration::from_nanos(r % nanos)
}

impl Node {
    fn new(config: &MemberConfig) -> Self {
        Node {
            me: config.me,
            voted: None,
            peers: vec![Peer::default(); config.members.len()],
            // The first election comes quickly; priorities still order the members.
            election_due: Instant::now() + config.heartbeat * 2 + rank_delay(config, config.me),
            journal: None,
            journaled: 0,
            oplog_cursors: HashMap::new(),
        }
    }
}

/// How much later than the highest-priority members member `i` stands for election: one
/// heartbeat per distinct higher priority, plus jitter.
pub(crate) fn rank_delay(config: &MemberConfig, i: usize) -> Duration {
    let mine = config.priority(i);
    let mut higher: Vec<f64> =
        (0..config.members.len()).map(|j| config.priority(j)).filter(|p| *p > mine).collect();
    higher.sort_by(f64::total_cmp);
    higher.dedup();
    config.heartbeat * u32::try_from(higher.len()).unwrap_or(u32::MAX) + jitter(config.heartbeat)
}

/// Sets up the member's state (replaying its journal) before the listener starts.
pub(crate) fn init(shared: &Shared, st: &mut State, config: &MemberConfig) -> Result<(), SimError> {
    for (i, m) in st.members.iter_mut().enumerate() {
        m.priority = config.priority(i);
        // Peers are unknown until they answer; slot `me` is this process.
        m.alive = i == config.me;
    }
    st.oplog = crate::state::oplog::Oplog::empty();
    st.commit = 0;
    let mut node = Node::new(config);
    if let Some(dir) = &config.data_dir {
        let (journal, replayed) = crate::state::node::Journal::open(dir, shared, st, config.me)?;
        node.voted = replayed.voted;
        node.journal = Some(journal);
        node.journaled = st.oplog.end();
    }
    st.node = Some(Box::new(node));
    Ok(())
}

/// Starts the heartbeat, election and sync loops.
pub(crate) fn spawn(shared: &Arc<Shared>, config: &MemberConfig) {
    for peer in 0..config.members.len() {
        if peer != config.me {
            shared.handle.spawn(heartbeat::run(Arc::clone(shared), config.clone(), peer));
        }
    }
    shared.handle.spawn(election::run(Arc::clone(shared), config.clone()));
    shared.handle.spawn(sync::run(Arc::clone(shared), config.clone()));
}

/// Writes the entries logged since the last call to the journal (a primary's writes, its
/// election no-op, what a secondary applied).
pub(crate) fn journal_new_entries(st: &mut State) {
    let State { node, oplog, .. } = st;
    let Some(node) = node.as_mut() else { return };
    let end = oplog.end();
    if let Some(j) = node.journal.as_mut() {
        for idx in node.journaled..end {
            if let Some(e) = oplog.get(idx) {
                j.entry(e);
            }
        }
    }
    node.journaled = end;
}

/// The node's term changed (a higher term seen, or a vote): journal it.
pub(crate) fn journal_term(st: &mut State) {
    let term = st.term;
    if let Some(node) = st.node.as_mut() {
        let voted = node.voted;
        if let Some(j) = node.journal.as_mut() {
            j.term(term, voted);
        }
    }
}

/// Adopts `term` if it is newer: a primary steps down, the vote is cleared. Returns whether
/// this member stepped down.
pub(crate) fn adopt_term(shared: &Shared, st: &mut State, term: i64) -> bool {
    if term <= st.term {
        return false;
    }
    st.term = term;
    let stepped = step_down_locked(shared, st, "saw a newer term");
    if let Some(n) = st.node.as_mut() {
        n.voted = None;
    }
    journal_term(st);
    stepped
}

/// Steps this member down if it is primary (transactions die with it). Returns whether it was.
pub(crate) fn step_down_locked(shared: &Shared, st: &mut State, why: &str) -> bool {
    let Some(me) = st.node.as_ref().map(|n| n.me) else { return false };
    if st.primary != Some(me) {
        return false;
    }
    st.primary = None;
    // Open transactions die with the primary; committed ones stay in the session table.
    st.txns.retain(|_, t| t.state == crate::state::txn::TxnState::Committed);
    if let Some(n) = st.node.as_mut() {
        n.election_due = Instant::now() + shared.election_timeout;
    }
    if let Some(h) = st.handles.get(me) {
        h.bump();
    }
    tracing::info!(term = st.term, why, "stepping down");
    shared.progress.send_modify(|v| *v += 1);
    true
}

/// Runs `cmd` on the primary (member `primary`) and returns its reply: a secondary's
/// `$out`/`$merge`, which writes through the primary.
pub(crate) async fn forward(
    shared: &Shared,
    primary: usize,
    db: &str,
    mut cmd: bson::Document,
) -> Result<bson::Document, crate::commands::reply::CmdError> {
    use crate::commands::reply::CmdError;
    let addr = shared.state.lock().handles.get(primary).map(|h| h.addr.clone());
    let addr =
        addr.ok_or_else(|| CmdError::new(10107, "NotWritablePrimary", "no primary to write through"))?;
    cmd.insert("$readPreference", bson::doc! {"mode": "primary"});
    for k in ["$clusterTime", "lsid", "$db"] {
        cmd.remove(k);
    }
    let unreachable = |e: crate::raw_client::RawClientError| {
        CmdError::new(10107, "NotWritablePrimary", format!("cannot reach the primary {addr}: {e}"))
    };
    let reply =
        crate::raw_client::run_command(&addr, db, cmd, shared.election_timeout).await.map_err(unreachable)?;
    Ok(reply)
}

/// Records where member `peer` says its last write is. Its `applied` indexes this member's
/// oplog: a write this oplog does not hold (the peer is ahead, or on another history) says
/// nothing certain, so the position falls back to at most the commit point.
pub(crate) fn peer_position(st: &mut State, peer: usize, ts: Timestamp, term: i64) {
    let found = st.oplog.applied_of(ts, term);
    let commit = st.commit;
    if let Some(m) = st.members.get_mut(peer) {
        m.applied = found.unwrap_or(m.applied.min(commit));
    }
}

/// Records the session-table record of an entry this member applied (or replayed).
pub(crate) fn record_session(st: &mut State, record: &SessionRecord, end: u64, ts: Timestamp) {
    use crate::state::oplog::PendingWrite;
    use crate::state::txn::Txn;
    match record {
        SessionRecord::RetryableWrite { lsid, txn_number, reply } => {
            st.retried_writes
                .insert((lsid.clone(), *txn_number), (reply.clone(), Some(PendingWrite { end, ts })));
        }
        SessionRecord::Transaction { lsid, txn_number } => {
            st.txns.insert(lsid.clone(), Txn::committed(*txn_number, PendingWrite { end, ts }));
        }
    }
}
