//! The member-process part of the state (`mongo-sim member`): votes, peers, timers, the
//! journal, oplog cursors. The loops that change it are in `member/`.

use std::collections::HashMap;
use std::fs::File;
use std::time::Instant;

use bson::Timestamp;

/// What this member last heard from one peer.
#[derive(Clone, Debug, Default)]
pub(crate) struct Peer {
    /// When it last answered a heartbeat.
    pub last_ok: Option<Instant>,
}

/// A tailable cursor over this member's oplog (a secondary pulling from it).
#[derive(Clone, Copy, Debug)]
pub(crate) struct OplogCursor {
    /// The timestamp of the last entry sent.
    pub after: Timestamp,
    /// When a fetcher last used it (the least recently used goes first when too many are open).
    pub used: Instant,
}

/// The member-process part of [`State`]: votes, peers, timers, the journal, oplog cursors.
#[derive(Debug)]
pub(crate) struct Node {
    /// This process's member index.
    pub me: usize,
    /// The vote cast in a term: (term, candidate).
    pub voted: Option<(i64, usize)>,
    /// What the heartbeats said, by member index (this member's slot unused).
    pub peers: Vec<Peer>,
    /// When this member calls an election if it still has not heard from a primary.
    pub election_due: Instant,
    /// The journal in the data directory, if any.
    pub journal: Option<Journal>,
    /// Oplog entries already journaled (absolute end index).
    pub journaled: u64,
    /// Open oplog cursors by id.
    pub oplog_cursors: HashMap<i64, OplogCursor>,
}

/// The open journal file.
#[derive(Debug)]
pub(crate) struct Journal {
    pub(crate) file: File,
    pub(crate) failed: bool,
}
