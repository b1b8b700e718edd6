//! Transactions: each session's open (or last) transaction, its private copies of what it
//! touched and the writes it replays at commit.

use std::collections::HashSet;

use super::oplog::{Op, PendingWrite};
use crate::state::store::{IdKey, Store};

/// The lifecycle of a transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TxnState {
    Active,
    Committed,
    Aborted,
}

/// One transaction of one session.
#[derive(Debug)]
pub(crate) struct Txn {
    pub(crate) number: i64,
    pub(crate) state: TxnState,
    /// Private copies of the collections the transaction touched.
    pub(crate) shadow: Store,
    pub(crate) touched: HashSet<(String, String)>,
    /// The documents the transaction wrote (db, collection, `_id` key): another
    /// transaction writing one of them meets a write conflict.
    pub(crate) writes: HashSet<(String, String, IdKey)>,
    /// The writes to replay at commit.
    pub(crate) ops: Vec<Op>,
    /// The commit's oplog entry: a retried `commitTransaction` waits for its write concern
    /// (and finds the transaction gone if the entry was rolled back).
    pub(crate) commit: Option<PendingWrite>,
}

impl Txn {
    /// Aborts the transaction: its writes are gone, later statements get NoSuchTransaction.
    pub(crate) fn abort(&mut self) {
        self.state = TxnState::Aborted;
        self.ops.clear();
        self.writes.clear();
        self.shadow = Store::default();
    }

    /// The session-table record of a transaction committed on another member (replicated to
    /// this one): a retried `commitTransaction` succeeds, anything else finds it committed.
    pub(crate) fn committed(number: i64, commit: PendingWrite) -> Self {
        Txn {
            number,
            state: TxnState::Committed,
            shadow: Store::default(),
            touched: HashSet::new(),
            writes: HashSet::new(),
            ops: Vec::new(),
            commit: Some(commit),
        }
    }
}
