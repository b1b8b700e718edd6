//! Transactions on a single connection: writes run against a private copy of the touched
//! collections and are replayed onto the real data (as one oplog entry) at commit.

use std::collections::HashSet;

use bson::{doc, Bson, Document};

use super::context::{check_role, Access, Ctx};
use super::outcome::log_write;
use super::reply::CmdError;
use super::write_concern::{wait_write_concern, WriteConcern};
use crate::shared::Shared;
use crate::state::oplog::{Op, Ops, SessionRecord};
use crate::state::store::{id_key, IdKey, Store};
use crate::state::txn::{Txn, TxnState};
use crate::state::{Kind, State};

/// The document an oplog operation changed.
fn written(op: &Op) -> Option<(String, String, IdKey)> {
    match op {
        Op::Insert { db, coll, doc } => doc.get("_id").map(|id| (db.clone(), coll.clone(), id_key(id))),
        Op::Replace { db, coll, key, .. } | Op::Delete { db, coll, key, .. } => {
            Some((db.clone(), coll.clone(), key.clone()))
        }
        _ => None,
    }
}

/// The session/transaction fields of a command.
#[derive(Clone, Debug)]
pub(crate) struct TxnArgs {
    pub lsid: Vec<u8>,
    pub number: i64,
    pub start: bool,
    /// `autocommit: false`: the command belongs to a transaction.
    pub in_txn: bool,
}

impl TxnArgs {
    /// `None` when the command carries no `txnNumber` (or no `lsid`).
    pub(crate) fn parse(cmd: &Document) -> Result<Option<Self>, CmdError> {
        let number = match cmd.get("txnNumber") {
            None => return Ok(None),
            Some(Bson::Int64(n)) => *n,
            Some(Bson::Int32(n)) => i64::from(*n),
            Some(_) => return Err(CmdError::new(14, "TypeMismatch", "txnNumber must be a long")),
        };
        let Ok(lsid) = cmd.get_document("lsid") else {
            return Err(CmdError::new(
                50768,
                "Location50768",
                "Transaction number requires a session ID to also be specified",
            ));
        };
        let lsid = crate::bson_compat::document_to_vec(lsid)
            .map_err(|e| CmdError::bad(format!("invalid lsid: {e}")))?;
        let in_txn = match cmd.get("autocommit") {
            None => false,
            Some(Bson::Boolean(false)) => true,
            Some(_) => return Err(CmdError::bad("autocommit must be false")),
        };
        Ok(Some(TxnArgs { lsid, number, start: cmd.get_bool("startTransaction").unwrap_or(false), in_txn }))
    }
}

/// mongod's session table: a session's `txnNumber` never goes back. A retryable write or a
/// transaction numbered below the newest the session used is `TransactionTooOld` (a request
/// its client gave up on, arriving after the session's next one); otherwise `number` becomes
/// the newest.
pub(crate) fn check_not_too_old(st: &mut State, lsid: &[u8], number: i64) -> Result<(), CmdError> {
    let newest = st.newest_txn_numbers.entry(lsid.to_vec()).or_insert(number);
    if number < *newest {
        return Err(CmdError::new(
            225,
            "TransactionTooOld",
            format!("Cannot start transaction {number} on session because a newer transaction {newest} has already started"),
        ));
    }
    *newest = number;
    // A newer number aborts the transaction the session had open (mongod's session catalog).
    if let Some(t) = st.txns.get_mut(lsid).filter(|t| t.number < number && t.state == TxnState::Active) {
        t.abort();
    }
    Ok(())
}

fn no_such(number: i64) -> CmdError {
    CmdError::new(251, "NoSuchTransaction", format!("Transaction with txnNumber {number} has been aborted."))
        .label("TransientTransactionError")
}

/// Runs `f` inside the transaction described by `args` (starting it if asked), against the
/// transaction's private copy of collection `coll` of `db`.
pub(crate) fn in_transaction<R>(
    shared: &Shared,
    st: &mut State,
    member: usize,
    args: &TxnArgs,
    namespaces: &[(String, String)],
    f: impl FnOnce(&mut Store, &mut Ops) -> Result<R, CmdError>,
) -> Result<R, CmdError> {
    if args.start {
        check_not_too_old(st, &args.lsid, args.number)?;
        if let Some(t) = st.txns.get(&args.lsid) {
            if t.number >= args.number {
                return Err(CmdError::new(
                    225,
                    "TransactionTooOld",
                    format!("Cannot start transaction {} on session because a newer transaction {} has already started", args.number, t.number),
                ));
            }
        }
        let txn = Txn {
            number: args.number,
            state: TxnState::Active,
            shadow: Store::default(),
            touched: HashSet::new(),
            writes: HashSet::new(),
            ops: Vec::new(),
            commit: None,
        };
        st.txns.insert(args.lsid.clone(), txn);
    }
    let State { txns, members, shared_store, .. } = st;
    let base = if shared.kind == Kind::ReplicaSet {
        &members.get(member).ok_or_else(|| CmdError::bad("no such member"))?.store
    } else {
        &*shared_store
    };
    let txn = txns
        .get_mut(&args.lsid)
        .filter(|t| t.number == args.number && t.state == TxnState::Active)
        .ok_or_else(|| no_such(args.number))?;
    for (db, coll) in namespaces {
        let key = (db.clone(), coll.clone());
        if !txn.touched.contains(&key) {
            // Snapshot the collection the first time the transaction uses it.
            if let Some(c) = base.coll(db, coll) {
                txn.shadow.put_coll(db, coll, c.clone());
            }
            txn.touched.insert(key);
        }
    }
    let mut ops = Ops::new(true);
    let result = f(&mut txn.shadow, &mut ops);
    let new_writes: Vec<_> = ops.list.iter().filter_map(written).collect();
    txn.ops.extend(ops.list);
    // Another open transaction wrote one of the same documents: a write conflict (the
    // transaction that comes second aborts, and may be retried whole).
    let conflict = new_writes.iter().any(|w| {
        txns.iter().any(|(lsid, t)| *lsid != args.lsid && t.state == TxnState::Active && t.writes.contains(w))
    });
    let Some(txn) = txns.get_mut(&args.lsid) else { return result };
    txn.writes.extend(new_writes);
    let result = if conflict {
        Err(CmdError::new(
            112,
            "WriteConflict",
            "Caused by :: Write conflict during plan execution and yielding is disabled. :: Please retry your operation or multi-document transaction.",
        )
        .label("TransientTransactionError"))
    } else {
        result
    };
    if result.is_err() {
        // An error aborts the transaction on the server: later statements get
        // NoSuchTransaction.
        txn.abort();
    }
    result
}

/// A statement of the transaction `args` reported write errors, or its client went away
/// mid-statement: like any error in a transaction, that aborts it on the server.
pub(crate) fn abort_on_error(st: &mut State, args: &TxnArgs) {
    if let Some(txn) = st.txns.get_mut(&args.lsid).filter(|t| t.number == args.number) {
        txn.abort();
    }
}

/// Aborts every open transaction (`killAllSessions`).
pub(crate) fn abort_all(st: &mut State) {
    for txn in st.txns.values_mut().filter(|t| t.state == TxnState::Active) {
        txn.abort();
    }
}

/// `commitTransaction` / `abortTransaction`.
pub(crate) async fn run(ctx: &Ctx<'_>) -> Result<Document, CmdError> {
    let cmd = ctx.document()?;
    let shared = ctx.shared;
    let i = ctx.member.index;
    let args = TxnArgs::parse(&cmd)?
        .ok_or_else(|| CmdError::bad(format!("{} needs lsid and txnNumber", ctx.name)))?;
    let wc = WriteConcern::parse(&cmd)?;
    let commit = ctx.name == "commitTransaction";
    let pending = {
        let mut st = shared.state.lock();
        // Both commands are retryable writes, whatever the transaction state.
        let mut plain = cmd.clone();
        plain.remove("autocommit");
        check_role(shared, &st, i, Access::Write, &plain)?;
        let first_commit = st.txns.get(&args.lsid).filter(|t| t.number == args.number).and_then(|t| t.commit);
        let first_rolled_back = first_commit.is_some_and(|p| p.rolled_back(&st.oplog));
        let txn = st.txns.get_mut(&args.lsid).filter(|t| t.number == args.number);
        let Some(txn) = txn else {
            return Err(no_such(args.number));
        };
        match (txn.state, commit) {
            // A retried commit answers once the first commit's write concern holds; if that
            // commit was rolled back (a failover), the transaction is gone.
            (TxnState::Committed, true) if first_rolled_back => return Err(no_such(args.number)),
            (TxnState::Committed, true) => first_commit,
            (TxnState::Committed, false) => {
                return Err(CmdError::new(
                    256,
                    "TransactionCommitted",
                    format!("Transaction with txnNumber {} has been committed.", args.number),
                ))
            }
            (TxnState::Aborted, _) => return Err(no_such(args.number)),
            (TxnState::Active, false) => {
                txn.abort();
                None
            }
            (TxnState::Active, true) => {
                txn.state = TxnState::Committed;
                txn.writes.clear();
                let shadow = std::mem::take(&mut txn.shadow);
                let touched = std::mem::take(&mut txn.touched);
                let ops = std::mem::take(&mut txn.ops);
                let store = st.store_mut(shared.kind, i).ok_or_else(|| CmdError::bad("no such member"))?;
                for op in &ops {
                    op.apply(store);
                }
                // Indexes the transaction created (not in the oplog's operations).
                for (db, coll) in &touched {
                    if let Some(c) = shadow.coll(db, coll) {
                        let target = store.coll_mut(db, coll);
                        for index in c.indexes() {
                            target.add_index(index);
                        }
                    }
                }
                if ops.is_empty() {
                    None
                } else {
                    let session = st.node.is_some().then(|| SessionRecord::Transaction {
                        lsid: args.lsid.clone(),
                        txn_number: args.number,
                    });
                    let pending = log_write(shared, &mut st, i, ops, session);
                    if let Some(t) = st.txns.get_mut(&args.lsid) {
                        t.commit = pending;
                    }
                    pending
                }
            }
        }
    };
    let mut reply = doc! {"ok": 1.0};
    let unsatisfiable = {
        let st = shared.state.lock();
        wc.check(shared, &st).err()
    };
    if let Some(e) = unsatisfiable {
        // The transaction is committed; its write concern can never be satisfied.
        reply.insert("writeConcernError", doc! {"code": e.code, "codeName": e.code_name, "errmsg": e.errmsg});
        return Ok(reply);
    }
    if let Some(p) = pending {
        if let Some(wce) = wait_write_concern(shared, p, &wc).await {
            reply.insert("writeConcernError", wce);
        }
    }
    Ok(reply)
}
