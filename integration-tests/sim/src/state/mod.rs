//! The deployment's state, below the commands that read and change it: everything mutable in
//! one [`State`] behind a `parking_lot::Mutex` (held only for short, non-blocking sections),
//! the stores and the query language they answer (`value`, `expr`, `store`), the oplog and the
//! session table (`oplog`), cursors, transactions, change events and a member process's node.

pub(crate) mod change_events;
pub(crate) mod cursor;
pub(crate) mod expr;
pub(crate) mod member;
pub(crate) mod node;
pub(crate) mod oplog;
pub(crate) mod store;
pub(crate) mod txn;
pub(crate) mod value;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bson::{oid::ObjectId, Document};

use crate::error::SimError;
use change_events::{History, Stream};
use cursor::Cursor;
use member::{Member, MemberState};
use node::Node;
use oplog::{OpTime, Oplog, PendingWrite};
use store::Store;
use txn::Txn;

/// The shape of the simulated deployment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Standalone,
    ReplicaSet,
    Sharded,
    LoadBalanced,
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
    pub retried_writes: HashMap<(Vec<u8>, i64), (Document, Option<PendingWrite>)>,
    /// The newest `txnNumber` each session (lsid bytes) used, in a retryable write or a
    /// transaction: an older one is `TransactionTooOld`, so a write its client gave up on can
    /// never be applied after a later write of the same session.
    pub newest_txn_numbers: HashMap<Vec<u8>, i64>,
    /// The data as snapshot reads saw it, by the `atClusterTime` they reported (the newest
    /// few; an older time is `SnapshotTooOld`).
    pub snapshots: std::collections::VecDeque<(bson::Timestamp, Store)>,
    /// The change events change streams read.
    pub history: History,
    /// Open change stream cursors (their ids share `next_cursor_id`).
    pub streams: HashMap<i64, Stream>,
    /// A member process of a multi-process set: its votes, peers and journal (`None`: every
    /// member is in this process).
    pub node: Option<Box<Node>>,
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

    pub(crate) fn bump_all(&self) {
        for (h, m) in self.handles.iter().zip(&self.members) {
            if m.alive && !m.removed {
                h.bump();
            }
        }
    }

    /// Applies every entry the lag allows to the live secondaries, moves the commit point and
    /// trims the oplog. Returns whether anything changed and when the next entry becomes due.
    pub(crate) fn replicate(&mut self, lag: Duration, now: Instant) -> (bool, Option<Instant>) {
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
    pub(crate) fn member_commit(&mut self) -> bool {
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
    pub(crate) fn advance_member_commit(&mut self) -> bool {
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

    pub(crate) fn advance_commit(&mut self) -> bool {
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
    pub(crate) fn step_down(&mut self) -> Option<usize> {
        let p = self.primary.take()?;
        // Transactions die with the primary that ran them.
        self.txns.clear();
        self.bump_all();
        Some(p)
    }

    /// Whether member `i` may become primary now.
    pub(crate) fn electable(&self, i: usize, now: Instant) -> bool {
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
    pub(crate) fn candidate(&self, avoid: Option<usize>, now: Instant) -> Option<usize> {
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
    pub(crate) fn promote(&mut self, i: usize) -> Result<(), SimError> {
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

/// Builds mongod's electionId for a term: `7fffffff` followed by the term, big-endian.
pub(crate) fn election_id(term: i64) -> ObjectId {
    let mut bytes = [0u8; 12];
    bytes[..4].copy_from_slice(&[0x7f, 0xff, 0xff, 0xff]);
    bytes[4..].copy_from_slice(&term.to_be_bytes());
    ObjectId::from_bytes(bytes)
}
