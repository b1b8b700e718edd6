//! The replica-set oplog: physical operations with their undo images, so that secondaries can
//! apply them (after the configured lag) and members that got ahead of a new primary can roll
//! them back.

use std::collections::{BTreeMap, VecDeque};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use bson::{DateTime, Document, Timestamp};

use crate::state::store::{Collection, IdKey, Store};

/// One physical change to a [`Store`], with what is needed to undo it.
#[derive(Clone, Debug)]
pub(crate) enum Op {
    /// A document was inserted.
    Insert { db: String, coll: String, doc: Document },
    /// A document was replaced (any update is logged as its after image); `replacement`:
    /// by a whole new document rather than update operators (change events tell them apart).
    Replace { db: String, coll: String, key: IdKey, before: Document, after: Document, replacement: bool },
    /// A document was deleted.
    Delete { db: String, coll: String, key: IdKey, before: Document },
    /// An empty collection was created.
    Create { db: String, coll: String },
    /// A collection was dropped.
    DropColl { db: String, coll: String, before: Collection },
    /// A database was dropped.
    DropDb { db: String, before: BTreeMap<String, Collection> },
    /// A change without data (an index created or dropped, options modified): only change
    /// streams see it, as `event` (`operationType`, `operationDescription`).
    Ddl { db: String, coll: String, event: Document },
    /// A collection was renamed, replacing `dropped` (the target, with `dropTarget`).
    Rename { db: String, coll: String, to_db: String, to: String, dropped: Option<Collection> },
}

impl Op {
    /// Applies the change to `store` (a secondary replaying the primary's oplog).
    pub(crate) fn apply(&self, store: &mut Store) {
        match self {
            Op::Insert { db, coll, doc } => {
                // A duplicate cannot happen when replaying a consistent oplog; ignore it if it does.
                let _ = store.coll_mut(db, coll).insert(doc.clone());
            }
            Op::Replace { db, coll, key, after, .. } => {
                store.coll_mut(db, coll).replace(key, after.clone());
            }
            Op::Delete { db, coll, key, .. } => {
                store.coll_mut(db, coll).remove(key);
            }
            Op::Create { db, coll } => {
                store.coll_mut(db, coll);
            }
            Op::DropColl { db, coll, .. } => {
                store.drop_coll(db, coll);
            }
            Op::DropDb { db, .. } => {
                store.drop_db(db);
            }
            Op::Ddl { .. } => {}
            Op::Rename { db, coll, to_db, to, .. } => {
                if let Some(c) = store.drop_coll(db, coll) {
                    store.drop_coll(to_db, to);
                    store.put_coll(to_db, to, c);
                }
            }
        }
    }

    /// Reverts the change on a store where it was applied (rollback).
    pub(crate) fn undo(&self, store: &mut Store) {
        match self {
            Op::Insert { db, coll, doc } => {
                if let Some(id) = doc.get("_id") {
                    store.coll_mut(db, coll).remove(&crate::state::store::id_key(id));
                }
            }
            Op::Replace { db, coll, key, before, .. } => {
                store.coll_mut(db, coll).replace(key, before.clone());
            }
            Op::Delete { db, coll, before, .. } => {
                let _ = store.coll_mut(db, coll).insert(before.clone());
            }
            Op::Create { db, coll } => {
                store.drop_coll(db, coll);
            }
            Op::DropColl { db, coll, before } => store.put_coll(db, coll, before.clone()),
            Op::DropDb { db, before } => store.put_db(db, before.clone()),
            Op::Ddl { .. } => {}
            Op::Rename { db, coll, to_db, to, dropped } => {
                if let Some(c) = store.drop_coll(to_db, to) {
                    store.put_coll(db, coll, c);
                }
                if let Some(d) = dropped {
                    store.put_coll(to_db, to, d.clone());
                }
            }
        }
    }
}

/// The position of a write in the replication history (`opTime` plus its wall clock time).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct OpTime {
    /// The oplog timestamp (also the cluster time it produced).
    pub ts: Timestamp,
    /// The term of the primary that wrote it.
    pub term: i64,
    /// The wall clock time of the write (`lastWriteDate`).
    pub wall: DateTime,
}

/// The session-table record an oplog entry carries (mongod's `config.transactions`), so that a
/// new primary answers a retried statement instead of running it twice.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum SessionRecord {
    /// A retryable write: its first reply is the answer to every retry.
    RetryableWrite { lsid: Vec<u8>, txn_number: i64, reply: Document },
    /// A committed transaction: a retried `commitTransaction` succeeds again.
    Transaction { lsid: Vec<u8>, txn_number: i64 },
}

/// One oplog entry: the ops of one write command (or of a committed transaction).
#[derive(Debug)]
pub(crate) struct Entry {
    pub optime: OpTime,
    /// When it was written, for the replication lag.
    pub at: Instant,
    pub ops: Vec<Op>,
    /// The session record it writes (member processes replicate it).
    pub session: Option<SessionRecord>,
}

/// The oplog, indexed by absolute position: entry `i` takes a member from `applied == i` to
/// `applied == i + 1`. Entries every member has applied are trimmed from the front.
#[derive(Debug)]
pub(crate) struct Oplog {
    entries: VecDeque<Entry>,
    base: u64,
    base_optime: OpTime,
    last_ts: Timestamp,
}

/// A timestamp as one orderable number.
pub(crate) fn ts_key(ts: Timestamp) -> u64 {
    (u64::from(ts.time) << 32) | u64::from(ts.increment)
}

fn now_secs() -> u32 {
    let secs = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    u32::try_from(secs).unwrap_or(u32::MAX)
}

impl Oplog {
    /// An oplog whose history starts with the "initiating set" no-op at the current time.
    pub(crate) fn new(term: i64) -> Self {
        let ts = Timestamp { time: now_secs(), increment: 1 };
        let base_optime = OpTime { ts, term, wall: DateTime::now() };
        Oplog { entries: VecDeque::new(), base: 0, base_optime, last_ts: ts }
    }

    /// An oplog with no history at all: a member process before the set's first election
    /// (every member starts from the same empty history, so absolute indexes agree).
    pub(crate) fn empty() -> Self {
        let base_optime =
            OpTime { ts: Timestamp { time: 0, increment: 0 }, term: -1, wall: DateTime::from_millis(0) };
        Oplog { entries: VecDeque::new(), base: 0, base_optime, last_ts: base_optime.ts }
    }

    /// Absolute index one past the last entry.
    pub(crate) fn end(&self) -> u64 {
        self.base + self.entries.len() as u64
    }

    /// The first index still held.
    pub(crate) fn base(&self) -> u64 {
        self.base
    }

    /// The entry at absolute index `idx`.
    pub(crate) fn get(&self, idx: u64) -> Option<&Entry> {
        let rel = idx.checked_sub(self.base)?;
        self.entries.get(usize::try_from(rel).ok()?)
    }

    /// The optime of a member that has applied everything before `applied`.
    pub(crate) fn optime_at(&self, applied: u64) -> OpTime {
        match applied.checked_sub(1).and_then(|i| self.get(i)) {
            Some(e) => e.optime,
            None => self.base_optime,
        }
    }

    /// The newest timestamp handed out (the cluster time).
    pub(crate) fn last_ts(&self) -> Timestamp {
        self.last_ts
    }

    /// A fresh timestamp, strictly after every previous one.
    pub(crate) fn next_ts(&mut self) -> Timestamp {
        let now = now_secs();
        let ts = if now > self.last_ts.time {
            Timestamp { time: now, increment: 1 }
        } else {
            Timestamp { time: self.last_ts.time, increment: self.last_ts.increment.wrapping_add(1) }
        };
        self.last_ts = ts;
        ts
    }

    /// Moves the clock to at least `ts` (a cluster time this member has seen), so that its next
    /// entries come after it.
    pub(crate) fn observe(&mut self, ts: Timestamp) {
        if ts_key(ts) > ts_key(self.last_ts) {
            self.last_ts = ts;
        }
    }

    /// Appends an entry written in `term`; returns the new end index.
    pub(crate) fn push(&mut self, term: i64, ops: Vec<Op>) -> u64 {
        let ts = self.next_ts();
        let optime = OpTime { ts, term, wall: DateTime::now() };
        self.entries.push_back(Entry { optime, at: Instant::now(), ops, session: None });
        self.end()
    }

    /// Appends an entry another member wrote (a secondary's applier); returns the new end.
    pub(crate) fn push_at(&mut self, optime: OpTime, ops: Vec<Op>, session: Option<SessionRecord>) -> u64 {
        if (optime.ts.time, optime.ts.increment) > (self.last_ts.time, self.last_ts.increment) {
            self.last_ts = optime.ts;
        }
        self.entries.push_back(Entry { optime, at: Instant::now(), ops, session });
        self.end()
    }

    /// The entry at `idx`, to change it.
    pub(crate) fn get_mut(&mut self, idx: u64) -> Option<&mut Entry> {
        let rel = idx.checked_sub(self.base)?;
        self.entries.get_mut(usize::try_from(rel).ok()?)
    }

    /// The `applied` value of a member whose last write is `optime`, when this oplog holds that
    /// write (`None`: not here, either trimmed or from a history that diverged from this one).
    pub(crate) fn applied_of(&self, ts: Timestamp, term: i64) -> Option<u64> {
        if ts == self.base_optime.ts && term == self.base_optime.term {
            return Some(self.base);
        }
        let rel = self.entries.partition_point(|e| ts_key(e.optime.ts) < ts_key(ts));
        let e = self.entries.get(rel)?;
        (e.optime.ts == ts && e.optime.term == term).then_some(self.base + rel as u64 + 1)
    }

    /// The index of the first entry at or after `ts`.
    pub(crate) fn first_at_or_after(&self, ts: Timestamp) -> u64 {
        self.base + self.entries.partition_point(|e| ts_key(e.optime.ts) < ts_key(ts)) as u64
    }

    /// Drops every entry at or after `end` (they are being rolled back).
    pub(crate) fn truncate(&mut self, end: u64) {
        if let Some(keep) = end.checked_sub(self.base).and_then(|k| usize::try_from(k).ok()) {
            self.entries.truncate(keep);
        }
    }

    /// Forgets entries before `upto` (every member has them).
    pub(crate) fn trim(&mut self, upto: u64) {
        while self.base < upto {
            match self.entries.pop_front() {
                Some(e) => {
                    self.base_optime = e.optime;
                    self.base += 1;
                }
                None => break,
            }
        }
    }
}

/// Collects the ops of one write command. Outside replica sets nothing needs the ops, so they
/// are only counted (saving the document clones).
#[derive(Debug, Default)]
pub(crate) struct Ops {
    record: bool,
    /// The recorded ops.
    pub list: Vec<Op>,
    /// How many ops were pushed (recorded or not).
    pub count: usize,
}

impl Ops {
    /// A sink that records ops only when `record` is set.
    pub(crate) fn new(record: bool) -> Self {
        Ops { record, list: Vec::new(), count: 0 }
    }

    /// Whether ops are recorded (callers skip preparing clones otherwise).
    pub(crate) fn recording(&self) -> bool {
        self.record
    }

    /// Records one op (built lazily).
    pub(crate) fn push(&mut self, op: impl FnOnce() -> Op) {
        self.count += 1;
        if self.record {
            self.list.push(op());
        }
    }
}

/// A write to wait for: the oplog end index after it and its timestamp (to detect rollback).
#[derive(Clone, Copy, Debug)]
pub(crate) struct PendingWrite {
    pub end: u64,
    pub ts: Timestamp,
}

impl PendingWrite {
    /// Whether the write's oplog entry is gone: truncated, or replaced by another primary's.
    /// Entries before the oplog's base were trimmed, which only happens once majority-committed.
    pub(crate) fn rolled_back(&self, oplog: &Oplog) -> bool {
        oplog.end() < self.end || (self.end >= oplog.base() && oplog.optime_at(self.end).ts != self.ts)
    }
}
