//! How a data command runs: the role check, routing into a transaction or to the primary, the
//! retryable-write table, executing the body (each family of commands has its file), logging
//! its writes and waiting for the write concern.

use bson::{Bson, Document};

use super::args::seq_or_array;
use super::context::{check_role, retryable_write, secondary_ok, Access, Ctx};
use super::exec::exec;
use super::outcome::{log_write, Exec};
use super::reply::{number, CmdError};
use super::snapshot::{snapshot_read_command, wait_for_cluster_time};
use super::txn::TxnArgs;
use super::write_concern::{wait_write_concern, WriteConcern};
use super::{cursor, txn};
use crate::state::oplog::{Ops, PendingWrite, SessionRecord};
use crate::state::store::{self};
use crate::state::{Kind, State};

/// Whether this module implements `name`.
pub(crate) fn handles(name: &str) -> bool {
    matches!(
        name,
        "insert"
            | "update"
            | "delete"
            | "find"
            | "getMore"
            | "killCursors"
            | "count"
            | "distinct"
            | "aggregate"
            | "findAndModify"
            | "create"
            | "drop"
            | "dropDatabase"
            | "listDatabases"
            | "listCollections"
            | "createIndexes"
            | "dropIndexes"
            | "listIndexes"
            | "createSearchIndexes"
            | "updateSearchIndex"
            | "dropSearchIndex"
            | "checkMetadataConsistency"
            | "bulkWrite"
            | "collMod"
            | "renameCollection"
            | "shardCollection"
    )
}

fn access(name: &str, cmd: &Document) -> Access {
    match name {
        "insert" | "update" | "delete" | "findAndModify" | "create" | "drop" | "dropDatabase"
        | "createIndexes" | "dropIndexes" | "bulkWrite" | "collMod" | "renameCollection"
        | "shardCollection" => Access::Write,
        // A pipeline that ends in $out or $merge writes (on the primary).
        "aggregate"
            if cmd
                .get_array("pipeline")
                .ok()
                .and_then(|p| p.last())
                .and_then(Bson::as_document)
                .and_then(|s| s.keys().next())
                .is_some_and(|k| k == "$out" || k == "$merge") =>
        {
            Access::Write
        }
        _ => Access::Read,
    }
}

/// Runs a CRUD command: role check, transaction routing, execution, oplog, write concern.
pub(crate) async fn run(ctx: &Ctx<'_>) -> Result<Document, CmdError> {
    let cmd = ctx.document()?;
    let sleep = where_sleep(ctx, &cmd);
    if !sleep.is_zero() {
        tokio::time::sleep(sleep).await;
    }
    let access = access(ctx.name, &cmd);
    let wc = WriteConcern::parse(&cmd)?;
    let txn_args = TxnArgs::parse(&cmd)?;
    let shared = ctx.shared;
    let mut i = ctx.member.index;
    let read_concern = cmd.get_document("readConcern").ok();
    if let Some(after) = read_concern.and_then(|rc| rc.get_timestamp("afterClusterTime").ok()) {
        wait_for_cluster_time(shared, i, after, number(cmd.get("maxTimeMS"))).await?;
    }
    let in_txn = txn_args.as_ref().is_some_and(|t| t.in_txn);
    let snapshot_read = !in_txn && read_concern.and_then(|rc| rc.get_str("level").ok()) == Some("snapshot");
    if snapshot_read {
        return snapshot_read_command(ctx, &cmd, read_concern).await;
    }
    if ctx.name == "aggregate" && super::change_stream::is_change_stream(&cmd) {
        return super::change_stream::open(ctx, &cmd);
    }
    if ctx.name == "getMore" && super::change_stream::is_stream(shared, &cmd) {
        return super::change_stream::get_more(ctx, &cmd).await;
    }
    let mut await_data = None;
    let mut retry_key = None;
    if let Some(primary) = forward_to(ctx, &cmd, access) {
        // A member process's $out/$merge on a secondary: the primary is another process.
        return crate::member::forward(shared, primary, ctx.db, cmd).await;
    }
    let (mut reply, pending) = 'locked: {
        let mut st = shared.state.lock();
        // Since 5.0 a secondary runs a $out/$merge pipeline a read preference sends it, and
        // writes its results through the primary.
        let writing_pipeline = ctx.name == "aggregate" && access == Access::Write;
        if writing_pipeline && st.primary.is_some_and(|p| p != i) && secondary_ok(&cmd) {
            check_role(shared, &st, i, Access::Read, &cmd)?;
            i = st.primary.unwrap_or(i);
        } else if !matches!(ctx.name, "getMore" | "killCursors") {
            // A cursor's own commands go to the member that opened it, whatever its role now
            // (mongod checks the read preference when the cursor is opened, not on getMore).
            check_role(shared, &st, i, access, &cmd)?;
        }
        if shared.kind == Kind::Standalone && cmd.contains_key("txnNumber") {
            return Err(CmdError::new(
                20,
                "IllegalOperation",
                "Transaction numbers are only allowed on a replica set member or mongos",
            ));
        }
        match ctx.name {
            "getMore" => {
                let (reply, wait) = cursor::get_more(&mut st, i, ctx.db, &cmd)?;
                await_data = wait;
                break 'locked (reply, None);
            }
            "killCursors" => return Ok(cursor::kill(&mut st, &cmd)),
            _ => {}
        }
        let (exec, ops) = match &txn_args {
            Some(t) if t.in_txn => (in_transaction(ctx, &cmd, &mut st, i, t)?, Ops::new(false)),
            _ => {
                // A retried retryable write gets the first attempt's reply (the statement
                // already ran, maybe after the client gave up waiting for it).
                // Like mongod's session table, the entry is rolled back with the write it
                // records (the retry then runs it again), and a retry waits for the write
                // concern of the write it answers for.
                retry_key = txn_args
                    .as_ref()
                    .filter(|_| access == Access::Write && retryable_write(&cmd))
                    .map(|t| (t.lsid.clone(), t.number));
                if let Some(answered) = retry_key.as_ref().and_then(|key| first_reply(&mut st, key)) {
                    break 'locked answered;
                }
                if let Some((lsid, number)) = &retry_key {
                    super::txn::check_not_too_old(&mut st, lsid, *number)?;
                }
                if access == Access::Write {
                    wc.check(shared, &st)?;
                }
                // Change streams read the ops of every topology once one is open.
                let mut ops = Ops::new(shared.kind == Kind::ReplicaSet || st.history.watched);
                let store = st.store_mut(shared.kind, i).ok_or_else(|| CmdError::bad("no such member"))?;
                let exec = exec(ctx, &cmd, store, &mut ops)?;
                (exec, ops)
            }
        };
        let retry_key = retry_key.take().filter(|_| !matches!(exec, Exec::Cursor { .. }));
        let reply = reply_of(ctx, &cmd, &mut st, i, exec);
        // Member processes replicate the session table with the write.
        let session = retry_key.as_ref().filter(|_| st.node.is_some()).map(|(lsid, n)| {
            SessionRecord::RetryableWrite { lsid: lsid.clone(), txn_number: *n, reply: reply.clone() }
        });
        let pending = if ops.count > 0 { log_write(shared, &mut st, i, ops.list, session) } else { None };
        if let Some(key) = retry_key {
            st.retried_writes.insert(key, (reply.clone(), pending));
        }
        (reply, pending)
    };
    if let Some(w) = await_data {
        // An awaitData getMore with no data: the server waits for its maxTimeMS.
        tokio::time::sleep(w).await;
    }
    if let Some(p) = pending {
        if let Some(wce) = wait_write_concern(shared, p, &wc).await {
            reply.insert("writeConcernError", wce);
        }
    }
    Ok(reply)
}

/// The primary a member process's secondary sends a writing pipeline to (mongod 5.0+ runs
/// `$out`/`$merge` that a read preference sent to a secondary, writing through the primary).
fn forward_to(ctx: &Ctx<'_>, cmd: &Document, access: Access) -> Option<usize> {
    if ctx.name != "aggregate" || access != Access::Write || !secondary_ok(cmd) {
        return None;
    }
    let st = ctx.shared.state.lock();
    let me = st.node.as_ref()?.me;
    st.primary.filter(|p| *p != me)
}

/// The reply a retried retryable write gets: the first attempt's, unless the write it
/// records was rolled back (the entry goes with it, and the retry runs the write again).
fn first_reply(st: &mut State, key: &(Vec<u8>, i64)) -> Option<(Document, Option<PendingWrite>)> {
    match st.retried_writes.get(key) {
        Some((_, Some(p))) if p.rolled_back(&st.oplog) => {
            st.retried_writes.remove(key);
            None
        }
        Some((reply, p)) => Some((reply.clone(), *p)),
        None => None,
    }
}

/// `$where: "sleep(ms) || true"` keeps the connection busy, as the spec tests expect (in the
/// body or in a document sequence's statements): how long.
fn where_sleep(ctx: &Ctx<'_>, cmd: &Document) -> std::time::Duration {
    let mut sleep = store::where_sleep(&Bson::Document(cmd.clone()));
    for seq in ctx.sequences.iter() {
        for d in seq.documents.iter() {
            if let Ok(d) = Document::try_from(d.as_ref()) {
                sleep += store::where_sleep(&Bson::Document(d));
            }
        }
    }
    sleep
}

/// Runs a statement of transaction `t` on member `i`: on the transaction's snapshot of the
/// namespaces it names; a write error aborts the transaction.
fn in_transaction(
    ctx: &Ctx<'_>,
    cmd: &Document,
    st: &mut State,
    i: usize,
    t: &TxnArgs,
) -> Result<Exec, CmdError> {
    if ctx.name == "count" {
        return Err(CmdError::new(
            50851,
            "OperationNotSupportedInTransaction",
            "Cannot run 'count' in a multi-document transaction.",
        ));
    }
    let namespaces = match cmd.get_str(ctx.name) {
        Ok(coll) => vec![(ctx.db.to_owned(), coll.to_owned())],
        // The client bulkWrite: every namespace of its nsInfo.
        Err(_) if ctx.name == "bulkWrite" => seq_or_array(ctx, cmd, "nsInfo")?
            .iter()
            .filter_map(|d| d.get_str("ns").ok())
            .filter_map(|ns| ns.split_once('.'))
            .map(|(d, c)| (d.to_owned(), c.to_owned()))
            .collect(),
        Err(_) => Vec::new(),
    };
    let exec =
        txn::in_transaction(ctx.shared, st, i, t, &namespaces, |store, ops| exec(ctx, cmd, store, ops))?;
    if matches!(&exec, Exec::Reply(d) if d.contains_key("writeErrors")) {
        txn::abort_on_error(st, t);
    }
    Ok(exec)
}

/// The reply of what a command did: its document, or a cursor opened on member `i` over its
/// results (the client bulkWrite's with its counts).
fn reply_of(ctx: &Ctx<'_>, cmd: &Document, st: &mut State, i: usize, exec: Exec) -> Document {
    match exec {
        Exec::Reply(d) => d,
        Exec::Cursor { ns, docs, batch, single } => {
            cursor::open(st, i, ns, docs, batch, single, cursor::tailable_of(ctx.name, cmd))
        }
        Exec::Bulk { docs, batch, counts } => {
            let ns = "admin.$cmd.bulkWrite".to_owned();
            let mut reply = cursor::open(st, i, ns, docs, batch, false, (false, false));
            reply.remove("ok");
            reply.extend(counts);
            reply.insert("ok", 1.0);
            reply
        }
    }
}
