//! CRUD and namespace commands over the in-memory [`Store`]: insert, find, update, delete,
//! findAndModify, count, distinct, aggregate, create/drop, list*, index stubs.

use bson::{doc, Bson, Document};

use super::cursor;
use super::txn::{self, TxnArgs};
use super::{check_role, number, wait_write_concern, Access, CmdError, Ctx, PendingWrite, WriteConcern};
use crate::cluster::{Kind, Shared, State};
use crate::repl::{Op, Ops, SessionRecord};
use crate::store::{self, id_key, Store};
use crate::ServerVersion;

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

/// The DuplicateKey error of a unique index, with its key pattern and value.
fn unique_error(ns: &str, (name, pattern, value): (String, Document, Document)) -> CmdError {
    let mut e = CmdError::new(
        11000,
        "DuplicateKey",
        format!("E11000 duplicate key error collection: {ns} index: {name} dup key: {value}"),
    );
    e.extra = Some(Box::new(doc! {"keyPattern": pattern, "keyValue": value}));
    e
}

/// What a server without Atlas Search answers to search index commands and stages.
fn atlas_only() -> CmdError {
    CmdError::new(115, "CommandNotSupported", "Search index commands are only supported with Atlas.")
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

/// The outcome of a command body: a plain reply, or documents to return through a cursor.
pub(crate) enum Exec {
    Reply(Document),
    Cursor {
        ns: String,
        docs: Vec<Document>,
        batch: Option<usize>,
        single: bool,
    },
    /// `bulkWrite`'s reply: its per-write results through a cursor, beside its counts.
    Bulk {
        docs: Vec<Document>,
        batch: Option<usize>,
        counts: Document,
    },
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
        if writing_pipeline && st.primary.is_some_and(|p| p != i) && super::secondary_ok(&cmd) {
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
                    .filter(|_| access == Access::Write && super::retryable_write(&cmd))
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
    if ctx.name != "aggregate" || access != Access::Write || !super::secondary_ok(cmd) {
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
        Some((_, Some(p))) if p.rolled_back(st) => {
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

/// How many snapshots snapshot reads keep.
const SNAPSHOTS_KEPT: usize = 16;

/// `readConcern: {afterClusterTime}`: member `i` answers once it has applied every write up
/// to that time (a lagging secondary waits; `maxTimeMS` bounds the wait).
async fn wait_for_cluster_time(
    shared: &Shared,
    i: usize,
    after: bson::Timestamp,
    max_time_ms: Option<i64>,
) -> Result<(), CmdError> {
    if shared.kind != Kind::ReplicaSet {
        return Ok(());
    }
    let mut rx = shared.progress.subscribe();
    let deadline = max_time_ms
        .filter(|ms| *ms > 0)
        .map(|ms| tokio::time::Instant::now() + std::time::Duration::from_millis(ms.unsigned_abs()));
    loop {
        rx.borrow_and_update();
        {
            let st = shared.state.lock();
            let applied = st.members.get(i).map_or(0, |m| m.applied);
            let caught_up =
                applied >= st.oplog.end() || st.oplog.get(applied).is_none_or(|e| e.optime.ts > after);
            if caught_up {
                return Ok(());
            }
        }
        let changed = async {
            let _ = rx.changed().await;
        };
        match deadline {
            Some(d) => {
                if tokio::time::timeout_at(d, changed).await.is_err() {
                    return Err(CmdError::new(50, "MaxTimeMSExpired", "operation exceeded time limit"));
                }
            }
            None => changed.await,
        }
    }
}

/// A read with `readConcern: {level: "snapshot"}` outside a transaction (MongoDB 5.0+):
/// `find`, `aggregate` and `distinct` read the data as of `atClusterTime`, or as of now
/// (reporting that time as `atClusterTime`); other commands and standalones refuse it.
async fn snapshot_read_command(
    ctx: &Ctx<'_>,
    cmd: &Document,
    rc: Option<&Document>,
) -> Result<Document, CmdError> {
    let shared = ctx.shared;
    if shared.kind == Kind::Standalone {
        return Err(CmdError::new(
            123,
            "NotAReplicaSet",
            "readConcern level 'snapshot' is only supported on replica sets and sharded clusters",
        ));
    }
    if !matches!(ctx.name, "find" | "aggregate" | "distinct") {
        return Err(CmdError::new(
            72,
            "InvalidOptions",
            format!("readConcern level 'snapshot' is not supported for {} outside a transaction", ctx.name),
        ));
    }
    let i = ctx.member.index;
    let at = rc.and_then(|rc| rc.get_timestamp("atClusterTime").ok());
    let mut st = shared.state.lock();
    check_role(shared, &st, i, Access::Read, cmd)?;
    let (ts, mut store) = match at {
        Some(t) => {
            let found = st.snapshots.iter().filter(|(ts, _)| *ts <= t).max_by_key(|(ts, _)| *ts);
            match found {
                Some((_, store)) => (t, store.clone()),
                None => {
                    return Err(CmdError::new(
                        239,
                        "SnapshotTooOld",
                        format!("Read timestamp {t:?} is older than the oldest available timestamp"),
                    ))
                }
            }
        }
        None => {
            let ts = shared.cluster_time();
            let store = st.store_mut(shared.kind, i).ok_or_else(|| CmdError::bad("no such member"))?.clone();
            if st.snapshots.len() >= SNAPSHOTS_KEPT {
                st.snapshots.pop_front();
            }
            st.snapshots.push_back((ts, store.clone()));
            (ts, store)
        }
    };
    let mut ops = Ops::new(false);
    let reply = match exec(ctx, cmd, &mut store, &mut ops)? {
        Exec::Reply(mut d) => {
            d.insert("atClusterTime", ts);
            d
        }
        Exec::Cursor { ns, docs, batch, single } => {
            let mut reply = cursor::open(&mut st, i, ns, docs, batch, single, (false, false));
            if let Ok(c) = reply.get_document_mut("cursor") {
                c.insert("atClusterTime", ts);
            }
            reply
        }
        Exec::Bulk { .. } => return Err(CmdError::bad("bulkWrite cannot read a snapshot")),
    };
    Ok(reply)
}

/// Logs a write: a replica-set primary appends an oplog entry (and replicates it); other
/// topologies only advance the cluster time.
pub(crate) fn log_write(
    shared: &Shared,
    st: &mut State,
    i: usize,
    ops: Vec<Op>,
    session: Option<SessionRecord>,
) -> Option<PendingWrite> {
    if shared.kind == Kind::ReplicaSet {
        let term = st.term;
        if st.node.is_some() {
            // A member process: after every cluster time its clients gossiped (from an
            // earlier primary, too), as mongod's clock is.
            st.oplog.observe(shared.cluster_time());
        }
        let end = st.oplog.push(term, ops);
        if let Some(e) = st.oplog.get_mut(end.saturating_sub(1)) {
            e.session = session;
        }
        if let Some(m) = st.members.get_mut(i) {
            m.applied = end;
        }
        let ts = st.oplog.last_ts();
        let State { oplog, history, .. } = st;
        if let Some(entry) = oplog.get(end.saturating_sub(1)) {
            history.record(ts, &entry.ops);
        }
        shared.after_write(st);
        Some(PendingWrite { end, ts })
    } else {
        let ts = st.oplog.next_ts();
        shared.advance_cluster_time(ts);
        if st.history.watched {
            st.history.record(ts, &ops);
            shared.progress.send_modify(|v| *v += 1);
        }
        None
    }
}

fn coll_name<'a>(cmd: &'a Document, name: &str) -> Result<&'a str, CmdError> {
    match cmd.get(name) {
        Some(Bson::String(s)) if !s.is_empty() => Ok(s),
        _ => Err(CmdError::new(73, "InvalidNamespace", format!("{name} needs a collection name"))),
    }
}

/// The documents of a kind-1 sequence named `key`, or else the array `cmd[key]`.
fn seq_or_array(ctx: &Ctx<'_>, cmd: &Document, key: &str) -> Result<Vec<Document>, CmdError> {
    if let Some(seq) = ctx.sequences.iter().find(|s| s.identifier == key) {
        return seq
            .documents
            .iter()
            .map(|d| {
                Document::try_from(d.as_ref()).map_err(|e| CmdError::bad(format!("invalid document: {e}")))
            })
            .collect();
    }
    match cmd.get(key) {
        Some(Bson::Array(items)) => items
            .iter()
            .map(|b| match b {
                Bson::Document(d) => Ok(d.clone()),
                _ => Err(CmdError::new(14, "TypeMismatch", format!("{key} entries must be documents"))),
            })
            .collect(),
        _ => Err(CmdError::bad(format!("BSON field '{key}' is missing but a required field"))),
    }
}

pub(crate) fn usize_opt(v: Option<&Bson>) -> Option<usize> {
    number(v).and_then(|n| usize::try_from(n).ok())
}

fn i32_of(n: usize) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

fn matching(
    coll: Option<&store::Collection>,
    filter: &Document,
    max: Option<usize>,
) -> Result<Vec<Document>, CmdError> {
    let mut out = Vec::new();
    // A bad filter fails like mongod's, even on an empty or missing collection.
    store::matches(&Document::new(), filter)?;
    let Some(c) = coll else { return Ok(out) };
    for d in c.iter() {
        if max.is_some_and(|m| out.len() >= m) {
            break;
        }
        if store::matches(d, filter)? {
            out.push(d.clone());
        }
    }
    Ok(out)
}

/// [`matching`] over a collection or a view.
fn matching_in(
    store: &Store,
    db: &str,
    coll: &str,
    filter: &Document,
    max: Option<usize>,
) -> Result<Vec<Document>, CmdError> {
    if !store.coll(db, coll).is_some_and(|c| c.options().contains_key("viewOn")) {
        return matching(store.coll(db, coll), filter, max);
    }
    let mut out = Vec::new();
    for d in documents_of(store, db, coll)? {
        if max.is_some_and(|m| out.len() >= m) {
            break;
        }
        if store::matches(&d, filter)? {
            out.push(d);
        }
    }
    Ok(out)
}

/// Executes the command body against `store`.
fn exec(ctx: &Ctx<'_>, cmd: &Document, store: &mut Store, ops: &mut Ops) -> Result<Exec, CmdError> {
    let db = ctx.db;
    // `let` variables and a command-level collation hold while the command runs.
    let _scope = super::super::expr::scope(cmd.get_document("let").ok(), cmd.get_document("collation").ok())?;
    match ctx.name {
        "insert" => insert(ctx, cmd, store, ops),
        "find" => find(db, cmd, store),
        "update" => update(ctx, cmd, store, ops),
        "delete" => delete(ctx, cmd, store, ops),
        "findAndModify" => find_and_modify(db, cmd, store, ops),
        "count" | "distinct" => counts(ctx, cmd, store),
        "aggregate" => aggregate(db, cmd, store, ops),
        "create" | "drop" | "dropDatabase" | "listDatabases" | "listCollections" => {
            namespaces(ctx, cmd, store, ops)
        }
        "listIndexes" | "createIndexes" | "dropIndexes" => indexes(ctx, cmd, store, ops),
        "collMod" => coll_mod(db, cmd, store, ops),
        "renameCollection" => rename_collection(cmd, store, ops),
        // A mongos shards a collection; the simulated cluster keeps one copy of the data, so
        // only the collection and the change event come of it.
        "shardCollection" if ctx.shared.kind == Kind::Sharded => {
            let ns = cmd
                .get_str("shardCollection")
                .map_err(|_| CmdError::bad("shardCollection needs a namespace"))?;
            let (sdb, scoll) = ns.split_once('.').ok_or_else(|| {
                CmdError::new(73, "InvalidNamespace", format!("Invalid namespace specified '{ns}'"))
            })?;
            let key =
                cmd.get_document("key").cloned().map_err(|_| CmdError::bad("shardCollection needs a key"))?;
            if !store.has_coll(sdb, scoll) {
                store.coll_mut(sdb, scoll);
                ops.push(|| Op::Create { db: sdb.to_owned(), coll: scoll.to_owned() });
            }
            let event = doc! {"operationType": "shardCollection", "operationDescription": {"shardKey": key, "unique": false}};
            ops.push(|| Op::Ddl { db: sdb.to_owned(), coll: scoll.to_owned(), event });
            Ok(Exec::Reply(doc! {"collectionsharded": ns, "ok": 1.0}))
        }
        "createSearchIndexes" | "updateSearchIndex" | "dropSearchIndex" => Err(atlas_only()),
        "bulkWrite" if ctx.shared.version >= ServerVersion::V8_0 => bulk_write(ctx, cmd, store, ops),
        // A mongos checks the sharding metadata; the simulated one is always consistent.
        "checkMetadataConsistency" if ctx.shared.kind == Kind::Sharded => Ok(Exec::Cursor {
            ns: format!("{db}.$cmd.checkMetadataConsistency"),
            docs: Vec::new(),
            batch: None,
            single: false,
        }),
        other => Err(CmdError::new(59, "CommandNotFound", format!("no such command: '{other}'"))),
    }
}

/// `count` and `distinct`.
fn counts(ctx: &Ctx<'_>, cmd: &Document, store: &mut Store) -> Result<Exec, CmdError> {
    let db = ctx.db;
    match ctx.name {
        "count" => {
            let coll = coll_name(cmd, "count")?;
            let filter = cmd.get_document("query").cloned().unwrap_or_default();
            let skip = usize_opt(cmd.get("skip")).unwrap_or(0);
            let limit = number(cmd.get("limit")).map(|l| l.unsigned_abs()).filter(|l| *l > 0);
            let all = matching_in(store, db, coll, &filter, None)?.len();
            let mut n = all.saturating_sub(skip);
            if let Some(l) = limit {
                n = n.min(usize::try_from(l).unwrap_or(usize::MAX));
            }
            Ok(Exec::Reply(doc! {"n": i32_of(n), "ok": 1.0}))
        }
        "distinct" => {
            let coll = coll_name(cmd, "distinct")?;
            let key = cmd.get_str("key").map_err(|_| CmdError::bad("distinct needs a key"))?;
            let filter = cmd.get_document("query").cloned().unwrap_or_default();
            let mut values: Vec<Bson> = Vec::new();
            for d in matching_in(store, db, coll, &filter, None)? {
                for v in store::lookup(&d, key) {
                    let items: Vec<&Bson> = match v {
                        Bson::Array(a) => a.iter().collect(),
                        other => vec![other],
                    };
                    for item in items {
                        if !values.iter().any(|x| store::compare(x, item).is_eq()) {
                            values.push(item.clone());
                        }
                    }
                }
            }
            values.sort_by(store::compare);
            Ok(Exec::Reply(doc! {"values": values, "ok": 1.0}))
        }
        other => Err(CmdError::new(59, "CommandNotFound", format!("no such command: '{other}'"))),
    }
}

/// Databases and collections: `create`, `drop`, `dropDatabase`, `listDatabases`,
/// `listCollections`.
fn namespaces(ctx: &Ctx<'_>, cmd: &Document, store: &mut Store, ops: &mut Ops) -> Result<Exec, CmdError> {
    let db = ctx.db;
    match ctx.name {
        "create" => create(ctx, cmd, store, ops),
        "drop" => {
            let coll = coll_name(cmd, "drop")?;
            // Since 7.0, dropping a missing collection succeeds.
            if let Some(before) = store.drop_coll(db, coll) {
                ops.push(|| Op::DropColl { db: db.to_owned(), coll: coll.to_owned(), before });
            }
            Ok(Exec::Reply(doc! {"nIndexesWas": 1, "ns": format!("{db}.{coll}"), "ok": 1.0}))
        }
        "dropDatabase" => {
            if let Some(before) = store.drop_db(db) {
                ops.push(|| Op::DropDb { db: db.to_owned(), before });
            }
            Ok(Exec::Reply(doc! {"dropped": db, "ok": 1.0}))
        }
        "listDatabases" => list_databases(cmd, store),
        "listCollections" => list_collections(ctx, cmd, store),
        other => Err(CmdError::new(59, "CommandNotFound", format!("no such command: '{other}'"))),
    }
}

/// `listCollections`: a cursor over the database's collections, views and time series.
fn list_collections(ctx: &Ctx<'_>, cmd: &Document, store: &Store) -> Result<Exec, CmdError> {
    let db = ctx.db;
    let name_only = cmd.get_bool("nameOnly").unwrap_or(false);
    let filter = cmd.get_document("filter").cloned().unwrap_or_default();
    let mut docs = Vec::new();
    for name in store.collections(db) {
        let coll = store.coll(db, &name);
        let options = coll.map(|c| c.options().clone()).unwrap_or_default();
        let kind = if options.contains_key("timeseries") {
            "timeseries"
        } else if options.contains_key("viewOn") {
            "view"
        } else {
            "collection"
        };
        let entry = if name_only {
            doc! {"name": &name, "type": kind}
        } else {
            listed(&name, kind, options, coll.map(|c| c.uuid()))
        };
        if store::matches(&entry, &filter)? {
            docs.push(entry);
        }
    }
    let batch = cmd.get_document("cursor").ok().and_then(|c| usize_opt(c.get("batchSize")));
    Ok(Exec::Cursor { ns: format!("{db}.$cmd.listCollections"), docs, batch, single: false })
}

/// A collection's `listCollections` entry, as mongod writes it: a view is read-only and has
/// no UUID; a view, a time series or a clustered collection has no `_id` index entry.
fn listed(name: &str, kind: &str, options: Document, uuid: Option<bson::Uuid>) -> Document {
    let view = kind == "view";
    let mut info = doc! {"readOnly": view};
    if let (Some(uuid), false) = (uuid, view) {
        info.insert("uuid", uuid);
    }
    let id_index = kind == "collection" && !options.contains_key("clusteredIndex");
    let mut entry = doc! {"name": name, "type": kind, "options": options, "info": info};
    if id_index {
        entry.insert("idIndex", doc! {"v": 2, "key": {"_id": 1}, "name": "_id_"});
    }
    entry
}

/// `listDatabases`: every database, with made-up sizes (64 bytes a document, 8 KiB at least).
fn list_databases(cmd: &Document, store: &Store) -> Result<Exec, CmdError> {
    let name_only = cmd.get_bool("nameOnly").unwrap_or(false);
    let filter = cmd.get_document("filter").cloned().unwrap_or_default();
    let mut dbs = Vec::new();
    let mut total: i64 = 0;
    for (name, count) in store.databases() {
        let size = i64::try_from(count).unwrap_or(i64::MAX).saturating_mul(64).max(8192);
        let entry = if name_only {
            doc! {"name": name}
        } else {
            doc! {"name": name, "sizeOnDisk": size, "empty": count == 0}
        };
        if store::matches(&entry, &filter)? {
            total = total.saturating_add(size);
            dbs.push(Bson::Document(entry));
        }
    }
    let mut reply = doc! {"databases": dbs};
    if !name_only {
        reply.insert("totalSize", total);
        reply.insert("totalSizeMb", total / (1024 * 1024));
    }
    reply.insert("ok", 1.0);
    Ok(Exec::Reply(reply))
}

/// `create`: a collection with its options (`clusteredIndex` gets its default `v: 2`).
fn create(ctx: &Ctx<'_>, cmd: &Document, store: &mut Store, ops: &mut Ops) -> Result<Exec, CmdError> {
    let db = ctx.db;
    let coll = coll_name(cmd, "create")?;
    if store.has_coll(db, coll) {
        return Err(CmdError::new(48, "NamespaceExists", format!("Collection {db}.{coll} already exists.")));
    }
    let created = store.coll_mut(db, coll);
    const OPTIONS: [&str; 15] = [
        "capped",
        "size",
        "max",
        "storageEngine",
        "validator",
        "validationLevel",
        "validationAction",
        "viewOn",
        "pipeline",
        "collation",
        "indexOptionDefaults",
        "timeseries",
        "expireAfterSeconds",
        "clusteredIndex",
        "changeStreamPreAndPostImages",
    ];
    let mut options: Document = cmd
        .iter()
        .filter(|(k, _)| OPTIONS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if let Ok(c) = options.get_document_mut("clusteredIndex") {
        if !c.contains_key("v") {
            c.insert("v", 2);
        }
    }
    created.set_options(options);
    ops.push(|| Op::Create { db: db.to_owned(), coll: coll.to_owned() });
    Ok(Exec::Reply(doc! {"ok": 1.0}))
}

/// Indexes: `listIndexes`, `createIndexes`, `dropIndexes`.
fn indexes(ctx: &Ctx<'_>, cmd: &Document, store: &mut Store, ops: &mut Ops) -> Result<Exec, CmdError> {
    let db = ctx.db;
    match ctx.name {
        "listIndexes" => {
            let coll = coll_name(cmd, "listIndexes")?;
            if !store.has_coll(db, coll) {
                return Err(CmdError::new(
                    26,
                    "NamespaceNotFound",
                    format!("ns does not exist: {db}.{coll}"),
                ));
            }
            let docs = store.coll(db, coll).map(store::Collection::indexes).unwrap_or_default();
            let batch = cmd.get_document("cursor").ok().and_then(|c| usize_opt(c.get("batchSize")));
            Ok(Exec::Cursor { ns: format!("{db}.{coll}"), docs, batch, single: false })
        }
        "createIndexes" => {
            let coll = coll_name(cmd, "createIndexes")?;
            let specs = match cmd.get("indexes") {
                Some(Bson::Array(a)) => a.clone(),
                _ => return Err(CmdError::bad("createIndexes needs an indexes array")),
            };
            let created = !store.has_coll(db, coll);
            if created {
                ops.push(|| Op::Create { db: db.to_owned(), coll: coll.to_owned() });
            }
            // Indexes are listed but not maintained: every query is a collection scan.
            let c = store.coll_mut(db, coll);
            let before = c.indexes().len();
            for spec in specs {
                let Bson::Document(spec) = spec else {
                    return Err(CmdError::bad("an index spec must be a document"));
                };
                if !spec.contains_key("key") || !spec.contains_key("name") {
                    return Err(CmdError::bad("an index spec needs key and name"));
                }
                let mut full = doc! {"v": 2};
                full.extend(spec);
                c.add_index(full);
            }
            let added: Vec<Bson> = c.indexes().iter().skip(before).cloned().map(Bson::Document).collect();
            if !added.is_empty() {
                let event =
                    doc! {"operationType": "createIndexes", "operationDescription": {"indexes": added}};
                ops.push(|| Op::Ddl { db: db.to_owned(), coll: coll.to_owned(), event });
            }
            let c = store.coll_mut(db, coll);
            Ok(Exec::Reply(doc! {
                "numIndexesBefore": i32_of(before),
                "numIndexesAfter": i32_of(c.indexes().len()),
                "createdCollectionAutomatically": created,
                "ok": 1.0,
            }))
        }
        "dropIndexes" => {
            let coll = coll_name(cmd, "dropIndexes")?;
            let Some(c) = store.coll(db, coll) else {
                return Err(CmdError::new(26, "NamespaceNotFound", format!("ns not found {db}.{coll}")));
            };
            let was = c.indexes().len();
            // By name, or by key pattern.
            let index = match cmd.get("index") {
                Some(Bson::String(n)) => n.clone(),
                Some(Bson::Document(key)) => c
                    .indexes()
                    .iter()
                    .find(|i| i.get_document("key").ok() == Some(key))
                    .and_then(|i| i.get_str("name").ok().map(str::to_owned))
                    .unwrap_or_default(),
                _ => return Err(CmdError::bad("dropIndexes needs an index name or key pattern")),
            };
            let index = index.as_str();
            let spec = c.indexes().iter().find(|i| i.get_str("name").ok() == Some(index)).cloned();
            if !store.coll_mut(db, coll).drop_index(index) {
                return Err(CmdError::new(
                    27,
                    "IndexNotFound",
                    format!("index not found with name [{index}]"),
                ));
            }
            let dropped: Vec<Bson> = spec.into_iter().map(Bson::Document).collect();
            let event = doc! {"operationType": "dropIndexes", "operationDescription": {"indexes": dropped}};
            ops.push(|| Op::Ddl { db: db.to_owned(), coll: coll.to_owned(), event });
            Ok(Exec::Reply(doc! {"nIndexesWas": i32_of(was), "ok": 1.0}))
        }
        other => Err(CmdError::new(59, "CommandNotFound", format!("no such command: '{other}'"))),
    }
}

fn insert(ctx: &Ctx<'_>, cmd: &Document, store: &mut Store, ops: &mut Ops) -> Result<Exec, CmdError> {
    let db = ctx.db;
    let coll = coll_name(cmd, "insert")?;
    let docs = seq_or_array(ctx, cmd, "documents")?;
    let ordered = cmd.get_bool("ordered").unwrap_or(true);
    let mut n = 0usize;
    let mut write_errors = Vec::new();
    for (idx, d) in docs.into_iter().enumerate() {
        match insert_one(db, coll, d, bypass_validation(cmd), store, ops) {
            Ok(()) => n += 1,
            Err(e) => {
                write_errors.push(e.write_error(i32_of(idx)));
                if ordered {
                    break;
                }
            }
        }
    }
    Ok(Exec::Reply(write_reply(n, write_errors)))
}

/// Inserts one document (an insert statement), checking its `_id` and unique indexes.
fn insert_one(
    db: &str,
    coll: &str,
    d: Document,
    bypass: bool,
    store: &mut Store,
    ops: &mut Ops,
) -> Result<(), CmdError> {
    if matches!(d.get("_id"), Some(Bson::Document(id)) if id.keys().any(|k| k.starts_with('$'))) {
        return Err(CmdError::new(2, "BadValue", "_id fields may not contain '$'-prefixed fields"));
    }
    let ns = format!("{db}.{coll}");
    let d = store::ensure_id(d);
    if !bypass {
        check_valid(store.coll(db, coll), &d, None)?;
    }
    let c = store.coll_mut(db, coll);
    if let Some(v) = c.unique_violation(&d, None) {
        return Err(unique_error(&ns, v));
    }
    let logged = if ops.recording() { Some(d.clone()) } else { None };
    c.insert(d).map_err(|id| CmdError::from(store::StoreError::duplicate_key(&ns, &id)))?;
    ops.push(|| Op::Insert { db: db.to_owned(), coll: coll.to_owned(), doc: logged.unwrap_or_default() });
    Ok(())
}

fn find(db: &str, cmd: &Document, store: &Store) -> Result<Exec, CmdError> {
    let coll = coll_name(cmd, "find")?;
    // As mongod: a tailable cursor needs a capped collection (a missing one just finds nothing).
    if cursor::tailable_of("find", cmd).0 && store.coll(db, coll).is_some_and(|c| !c.is_capped()) {
        return Err(CmdError::new(
            2,
            "BadValue",
            format!("error processing query: tailable cursor requested on non capped collection {db}.{coll}"),
        ));
    }
    if cmd.contains_key("maxScan") {
        // Removed in 4.2: mongod 7/8 refuse it as an unknown field.
        return Err(CmdError::new(40415, "Location40415", "BSON field 'find.maxScan' is an unknown field."));
    }
    let filter = cmd.get_document("filter").cloned().unwrap_or_default();
    let sort = cmd.get_document("sort").ok().filter(|s| !s.is_empty());
    let skip = usize_opt(cmd.get("skip")).unwrap_or(0);
    let raw_limit = number(cmd.get("limit")).unwrap_or(0);
    let limit = usize::try_from(raw_limit.unsigned_abs()).ok().filter(|l| *l > 0);
    let single = cmd.get_bool("singleBatch").unwrap_or(false) || raw_limit < 0;
    let batch = usize_opt(cmd.get("batchSize"));
    // Without a sort, stop scanning once skip + limit documents matched.
    let max = if sort.is_none() { limit.map(|l| l.saturating_add(skip)) } else { None };
    let mut docs = matching_in(store, db, coll, &filter, max)?;
    if let Some(s) = sort {
        store::sort(&mut docs, s)?;
    }
    let mut docs: Vec<Document> = docs.into_iter().skip(skip).collect();
    if let Some(l) = limit {
        docs.truncate(l);
    }
    if cmd.get_bool("returnKey").unwrap_or(false) {
        // The key of the index the query would use: the first whose leading field the sort
        // or the filter names; a collection scan has no key, so `{}` (as mongod).
        let leading = |f: &str| sort.is_some_and(|s| s.contains_key(f)) || filter.contains_key(f);
        let key = store.coll(db, coll).and_then(|c| {
            c.indexes()
                .into_iter()
                .filter_map(|i| i.get_document("key").ok().cloned())
                .find(|k| k.keys().next().is_some_and(|f| leading(f)))
        });
        docs = docs
            .into_iter()
            .map(|d| match &key {
                Some(k) => k.keys().filter_map(|f| d.get(f).map(|v| (f.clone(), v.clone()))).collect(),
                None => Document::new(),
            })
            .collect();
    } else if let Ok(p) = cmd.get_document("projection") {
        docs = docs.into_iter().map(|d| store::project(d, p)).collect();
    }
    if cmd.get_bool("showRecordId").unwrap_or(false) && !cmd.get_bool("returnKey").unwrap_or(false) {
        // The position in the result stands for the storage engine's record id.
        for (i, d) in docs.iter_mut().enumerate() {
            d.insert("$recordId", i64::try_from(i + 1 + skip).unwrap_or(i64::MAX));
        }
    }
    let batch = if raw_limit < 0 { limit } else { batch };
    Ok(Exec::Cursor { ns: format!("{db}.{coll}"), docs, batch, single })
}

/// One update statement: `q`, `u` (operators, a replacement or a pipeline), `arrayFilters`,
/// `upsert`, `multi` and (findAndModify) `sort`.
struct Stmt<'a> {
    q: &'a Document,
    u: &'a Bson,
    array_filters: Vec<Document>,
    upsert: bool,
    multi: bool,
    sort: Option<&'a Document>,
    /// `bypassDocumentValidation`: the collection's validator is not applied.
    bypass: bool,
}

/// Whether `u` is an update with operators or a pipeline (not a replacement).
fn is_modifier(u: &Bson) -> bool {
    match u {
        Bson::Document(d) => store::is_operator_update(d),
        _ => true,
    }
}

/// Applies one update statement's `u` to `before` (operators, a pipeline, or a replacement).
fn updated(before: &Document, u: &Bson, inserting: bool, filters: &[Document]) -> Result<Document, CmdError> {
    match u {
        Bson::Array(pipeline) => {
            let mut after = super::super::expr::pipeline_update(before, pipeline)?;
            // A pipeline that drops `_id` keeps the document's own (as mongod does).
            if let (Some(id), false) = (before.get("_id"), after.contains_key("_id")) {
                let mut with_id = doc! {"_id": id.clone()};
                with_id.extend(after);
                after = with_id;
            }
            Ok(after)
        }
        Bson::Document(u) if store::is_operator_update(u) => {
            let mut after = before.clone();
            store::apply_update(&mut after, u, inserting, filters)?;
            Ok(after)
        }
        Bson::Document(u) => {
            if u.keys().any(|k| k.starts_with('$')) {
                return Err(CmdError::bad("replacement document must not contain operators"));
            }
            let mut after = Document::new();
            // An upsert's replacement brings its own `_id` (null included).
            if let Some(id) = before.get("_id").or(if inserting { u.get("_id") } else { None }) {
                after.insert("_id", id.clone());
            }
            for (k, v) in u {
                if k != "_id" {
                    after.insert(k.clone(), v.clone());
                }
            }
            Ok(after)
        }
        _ => Err(CmdError::bad("the update must be a document or a pipeline")),
    }
}

fn check_id_unchanged(before: &Document, after: &Document) -> Result<(), CmdError> {
    match (before.get("_id"), after.get("_id")) {
        (Some(a), Some(b)) if store::compare(a, b).is_eq() => Ok(()),
        _ => Err(CmdError::new(
            66,
            "ImmutableField",
            "Performing an update on the path '_id' would modify the immutable field '_id'",
        )),
    }
}

/// The `arrayFilters` of an update statement or a findAndModify.
fn array_filters(d: &Document) -> Result<Vec<Document>, CmdError> {
    match d.get("arrayFilters") {
        None => Ok(Vec::new()),
        Some(Bson::Array(a)) => a
            .iter()
            .map(|f| {
                f.as_document().cloned().ok_or_else(|| CmdError::bad("arrayFilters entries must be objects"))
            })
            .collect(),
        Some(_) => Err(CmdError::bad("arrayFilters must be an array")),
    }
}

/// The result of one update statement.
struct UpdateOutcome {
    matched: usize,
    modified: usize,
    upserted: Option<Bson>,
    /// The document before/after (first match), for findAndModify.
    before: Option<Document>,
    after: Option<Document>,
}

fn update_one_stmt(
    db: &str,
    coll: &str,
    stmt: &Stmt<'_>,
    store: &mut Store,
    ops: &mut Ops,
) -> Result<UpdateOutcome, CmdError> {
    let Stmt { q, u, upsert, multi, sort, .. } = *stmt;
    let filters = stmt.array_filters.as_slice();
    let mut targets =
        matching(store.coll(db, coll), q, if multi || sort.is_some() { None } else { Some(1) })?;
    if let Some(s) = sort {
        store::sort(&mut targets, s)?;
        targets.truncate(1);
    }
    let mut out = UpdateOutcome { matched: 0, modified: 0, upserted: None, before: None, after: None };
    if targets.is_empty() {
        if !upsert {
            return Ok(out);
        }
        let seed = store::upsert_seed(q)?;
        let doc = if is_modifier(u) {
            updated(&seed, u, true, filters)?
        } else {
            let mut d = updated(&Document::new(), u, true, filters)?;
            if let (Some(id), false) = (seed.get("_id"), d.contains_key("_id")) {
                d.insert("_id", id.clone());
            }
            d
        };
        let doc = store::ensure_id(doc);
        if !stmt.bypass {
            check_valid(store.coll(db, coll), &doc, None)?;
        }
        let id = doc.get("_id").cloned().unwrap_or(Bson::Null);
        if let Some(v) = store.coll(db, coll).and_then(|c| c.unique_violation(&doc, None)) {
            return Err(unique_error(&format!("{db}.{coll}"), v));
        }
        let logged = doc.clone();
        store.coll_mut(db, coll).insert(doc.clone()).map_err(|id| {
            let e = store::StoreError::duplicate_key(&format!("{db}.{coll}"), &id);
            CmdError::new(e.code, e.code_name, e.message)
        })?;
        ops.push(|| Op::Insert { db: db.to_owned(), coll: coll.to_owned(), doc: logged });
        out.upserted = Some(id);
        out.after = Some(doc);
        return Ok(out);
    }
    // Validate every statement target before changing anything.
    let mut changes = Vec::with_capacity(targets.len());
    for before in targets {
        let after = updated(&before, u, false, filters)?;
        check_id_unchanged(&before, &after)?;
        if !stmt.bypass && before != after {
            check_valid(store.coll(db, coll), &after, Some(&before))?;
        }
        let own = id_key(before.get("_id").unwrap_or(&Bson::Null));
        if let Some(v) = store.coll(db, coll).and_then(|c| c.unique_violation(&after, Some(&own))) {
            return Err(unique_error(&format!("{db}.{coll}"), v));
        }
        changes.push((before, after));
    }
    let c = store.coll_mut(db, coll);
    for (before, after) in changes {
        out.matched += 1;
        if out.before.is_none() {
            out.before = Some(before.clone());
            out.after = Some(after.clone());
        }
        if before == after {
            continue;
        }
        out.modified += 1;
        let key = id_key(before.get("_id").unwrap_or(&Bson::Null));
        c.replace(&key, after.clone());
        let replacement = !is_modifier(u);
        ops.push(|| Op::Replace {
            db: db.to_owned(),
            coll: coll.to_owned(),
            key,
            before,
            after,
            replacement,
        });
    }
    Ok(out)
}

fn update(ctx: &Ctx<'_>, cmd: &Document, store: &mut Store, ops: &mut Ops) -> Result<Exec, CmdError> {
    let db = ctx.db;
    let coll = coll_name(cmd, "update")?;
    let stmts = seq_or_array(ctx, cmd, "updates")?;
    if ctx.shared.version < ServerVersion::V8_0 && stmts.iter().any(|s| s.contains_key("sort")) {
        // MongoDB 8.0 added sort to update statements.
        return Err(CmdError::new(
            40415,
            "Location40415",
            "BSON field 'update.updates.sort' is an unknown field.",
        ));
    }
    // An update pipeline with an unknown stage fails the whole command when it is parsed,
    // before any statement runs (mongod: 40324 `Unrecognized pipeline stage name`).
    for stmt in &stmts {
        if let Ok(pipeline) = stmt.get_array("u") {
            for name in pipeline.iter().filter_map(Bson::as_document).filter_map(|d| d.keys().next()) {
                const UPDATE_STAGES: [&str; 7] =
                    ["$addFields", "$set", "$project", "$unset", "$replaceRoot", "$replaceWith", "$redact"];
                if name.starts_with('$') && !UPDATE_STAGES.contains(&name.as_str()) {
                    return Err(CmdError::new(
                        40324,
                        "Location40324",
                        format!("Unrecognized pipeline stage name: '{name}'"),
                    ));
                }
            }
        }
    }
    let ordered = cmd.get_bool("ordered").unwrap_or(true);
    let (mut n, mut modified) = (0usize, 0usize);
    let mut upserted = Vec::new();
    let mut write_errors = Vec::new();
    for (idx, stmt) in stmts.iter().enumerate() {
        let result = (|| {
            let q = stmt.get_document("q").map_err(|_| CmdError::bad("update statement needs q"))?;
            let u = match stmt.get("u") {
                Some(u @ (Bson::Document(_) | Bson::Array(_))) => u,
                _ => return Err(CmdError::bad("update statement needs u")),
            };
            let multi = stmt.get_bool("multi").unwrap_or(false);
            if multi && !is_modifier(u) {
                return Err(CmdError::bad("multi update is not supported for replacement-style update"));
            }
            let _collation = super::super::expr::scope(None, stmt.get_document("collation").ok())?;
            let stmt = Stmt {
                q,
                u,
                array_filters: array_filters(stmt)?,
                upsert: stmt.get_bool("upsert").unwrap_or(false),
                multi,
                sort: stmt.get_document("sort").ok().filter(|s| !s.is_empty()),
                bypass: bypass_validation(cmd),
            };
            update_one_stmt(db, coll, &stmt, store, ops)
        })();
        match result {
            Ok(o) => {
                n += o.matched;
                modified += o.modified;
                if let Some(id) = o.upserted {
                    n += 1;
                    upserted.push(doc! {"index": i32_of(idx), "_id": id});
                }
            }
            Err(e) => {
                write_errors.push(e.write_error(i32_of(idx)));
                if ordered {
                    break;
                }
            }
        }
    }
    let mut reply = doc! {"n": i32_of(n), "nModified": i32_of(modified)};
    if !upserted.is_empty() {
        reply.insert("upserted", upserted);
    }
    if !write_errors.is_empty() {
        reply.insert("writeErrors", write_errors);
    }
    reply.insert("ok", 1.0);
    Ok(Exec::Reply(reply))
}

fn delete_matching(
    db: &str,
    coll: &str,
    q: &Document,
    limit_one: bool,
    sort: Option<&Document>,
    store: &mut Store,
    ops: &mut Ops,
) -> Result<Vec<Document>, CmdError> {
    let mut targets =
        matching(store.coll(db, coll), q, if limit_one && sort.is_none() { Some(1) } else { None })?;
    if let Some(s) = sort {
        store::sort(&mut targets, s)?;
    }
    if limit_one {
        targets.truncate(1);
    }
    let c = store.coll_mut(db, coll);
    let mut removed = Vec::with_capacity(targets.len());
    for t in targets {
        let key = id_key(t.get("_id").unwrap_or(&Bson::Null));
        if let Some(before) = c.remove(&key) {
            let logged = before.clone();
            ops.push(|| Op::Delete { db: db.to_owned(), coll: coll.to_owned(), key, before: logged });
            removed.push(before);
        }
    }
    Ok(removed)
}

fn delete(ctx: &Ctx<'_>, cmd: &Document, store: &mut Store, ops: &mut Ops) -> Result<Exec, CmdError> {
    let db = ctx.db;
    let coll = coll_name(cmd, "delete")?;
    let stmts = seq_or_array(ctx, cmd, "deletes")?;
    let ordered = cmd.get_bool("ordered").unwrap_or(true);
    let mut n = 0usize;
    let mut write_errors = Vec::new();
    for (idx, stmt) in stmts.iter().enumerate() {
        let result = (|| {
            let q = stmt.get_document("q").map_err(|_| CmdError::bad("delete statement needs q"))?;
            let limit_one = match number(stmt.get("limit")) {
                Some(0) => false,
                Some(1) => true,
                _ => return Err(CmdError::bad("delete statement needs limit 0 or 1")),
            };
            let _collation = super::super::expr::scope(None, stmt.get_document("collation").ok())?;
            delete_matching(db, coll, q, limit_one, None, store, ops)
        })();
        match result {
            Ok(removed) => n += removed.len(),
            Err(e) => {
                write_errors.push(doc! {"index": i32_of(idx), "code": e.code, "errmsg": e.errmsg});
                if ordered {
                    break;
                }
            }
        }
    }
    Ok(Exec::Reply(write_reply(n, write_errors)))
}

fn find_and_modify(db: &str, cmd: &Document, store: &mut Store, ops: &mut Ops) -> Result<Exec, CmdError> {
    let coll = coll_name(cmd, "findAndModify")?;
    let q = cmd.get_document("query").cloned().unwrap_or_default();
    let sort = cmd.get_document("sort").ok().filter(|s| !s.is_empty());
    let remove = cmd.get_bool("remove").unwrap_or(false);
    let new = cmd.get_bool("new").unwrap_or(false);
    let upsert = cmd.get_bool("upsert").unwrap_or(false);
    let fields = cmd.get_document("fields").ok();
    let project = |d: Option<Document>| match (d, fields) {
        (Some(d), Some(f)) => Bson::Document(store::project(d, f)),
        (Some(d), None) => Bson::Document(d),
        (None, _) => Bson::Null,
    };
    if remove {
        let removed = delete_matching(db, coll, &q, true, sort, store, ops)?;
        let n = removed.len();
        return Ok(Exec::Reply(doc! {
            "lastErrorObject": {"n": i32_of(n)},
            "value": project(removed.into_iter().next()),
            "ok": 1.0,
        }));
    }
    let u = match cmd.get("update") {
        Some(u @ (Bson::Document(_) | Bson::Array(_))) => u.clone(),
        _ => return Err(CmdError::bad("Either an update or remove=true must be specified")),
    };
    let stmt = Stmt {
        q: &q,
        u: &u,
        array_filters: array_filters(cmd)?,
        upsert,
        multi: false,
        sort,
        bypass: bypass_validation(cmd),
    };
    let o = update_one_stmt(db, coll, &stmt, store, ops)?;
    let mut leo =
        doc! {"n": i32_of(o.matched + usize::from(o.upserted.is_some())), "updatedExisting": o.matched > 0};
    if let Some(id) = &o.upserted {
        leo.insert("upserted", id.clone());
    }
    let value = if new { o.after } else { o.before };
    Ok(Exec::Reply(doc! {"lastErrorObject": leo, "value": project(value), "ok": 1.0}))
}

fn aggregate(db: &str, cmd: &Document, store: &mut Store, ops: &mut Ops) -> Result<Exec, CmdError> {
    let pipeline = match cmd.get("pipeline") {
        Some(Bson::Array(p)) => p.as_slice(),
        _ => return Err(CmdError::bad("'pipeline' option must be specified as an array")),
    };
    // `aggregate: 1` runs on the database: its first stage makes the documents.
    let (coll, source, pipeline) = match cmd.get("aggregate") {
        Some(Bson::String(s)) => (s.as_str(), None, pipeline),
        Some(n) if number(Some(n)) == Some(1) => {
            let docs = database_source(cmd, pipeline)?;
            ("$cmd.aggregate", Some(docs), &pipeline[1..])
        }
        _ => return Err(CmdError::bad("aggregate needs a collection name or 1")),
    };
    let level = cmd.get_document("readConcern").ok().and_then(|rc| rc.get_str("level").ok());
    let writes = pipeline
        .last()
        .and_then(Bson::as_document)
        .and_then(|s| s.keys().next())
        .is_some_and(|k| k == "$out" || k == "$merge");
    if writes && level == Some("linearizable") {
        return Err(CmdError::new(
            2,
            "BadValue",
            "Cannot specify readConcern level linearizable with a pipeline that writes ($out or $merge)",
        ));
    }
    let Ok(cursor_opts) = cmd.get_document("cursor") else {
        return Err(CmdError::bad(
            "The 'cursor' option is required, except for aggregate with the explain argument",
        ));
    };
    let batch = usize_opt(cursor_opts.get("batchSize"));
    let mut docs: Vec<Document> = match source {
        Some(docs) => docs,
        None => documents_of(store, db, coll)?,
    };
    for stage in pipeline {
        let Bson::Document(stage) = stage else {
            return Err(CmdError::bad("each pipeline stage must be an object"));
        };
        let Some((name, arg)) = stage.iter().next() else {
            return Err(CmdError::bad("empty pipeline stage"));
        };
        if !matches!(name.as_str(), "$out" | "$merge" | "$listSearchIndexes") {
            docs = match read_stage(name, arg, std::mem::take(&mut docs))? {
                Some(read) => read?,
                None => return Err(unrecognized_stage(name)),
            };
            continue;
        }
        docs = match (name.as_str(), arg) {
            ("$listSearchIndexes", _) => return Err(atlas_only()),
            ("$out", target) => {
                let (out_db, out_coll) = match target {
                    Bson::String(c) => (db.to_string(), c.clone()),
                    Bson::Document(d) => (
                        d.get_str("db").unwrap_or(db).to_string(),
                        d.get_str("coll").map_err(|_| CmdError::bad("$out needs coll"))?.to_string(),
                    ),
                    _ => return Err(CmdError::bad("$out needs a collection name")),
                };
                write_out(store, ops, &out_db, &out_coll, docs, None)?;
                Vec::new()
            }
            ("$merge", spec) => {
                let (into, when_matched) = match spec {
                    Bson::String(c) => (Bson::String(c.clone()), "merge".to_string()),
                    Bson::Document(d) => (
                        d.get("into").cloned().ok_or_else(|| CmdError::bad("$merge needs into"))?,
                        d.get_str("whenMatched").unwrap_or("merge").to_string(),
                    ),
                    _ => return Err(CmdError::bad("$merge needs a target")),
                };
                let (out_db, out_coll) = match into {
                    Bson::String(c) => (db.to_string(), c),
                    Bson::Document(d) => (
                        d.get_str("db").unwrap_or(db).to_string(),
                        d.get_str("coll").map_err(|_| CmdError::bad("$merge into needs coll"))?.to_string(),
                    ),
                    _ => return Err(CmdError::bad("$merge into must be a string or an object")),
                };
                write_out(store, ops, &out_db, &out_coll, docs, Some(&when_matched))?;
                Vec::new()
            }
            (other, _) => return Err(unrecognized_stage(other)),
        };
    }
    Ok(Exec::Cursor { ns: format!("{db}.{coll}"), docs, batch, single: false })
}

/// The documents a database-level aggregate (`aggregate: 1`) starts from, made by its first
/// stage: `$documents`, `$listLocalSessions` (the caller's own session only) or `$currentOp`
/// (nothing: no other client's operations are visible in the simulator).
fn database_source(cmd: &Document, pipeline: &[Bson]) -> Result<Vec<Document>, CmdError> {
    let first = pipeline.first().and_then(Bson::as_document).and_then(|d| d.iter().next());
    Ok(match first {
        Some((name, Bson::Array(docs))) if name == "$documents" => {
            docs.iter().filter_map(Bson::as_document).cloned().collect()
        }
        // No other client's sessions or operations are visible in the simulator.
        // The caller's own session is the only one the simulator lists.
        Some((name, _)) if name == "$listLocalSessions" => {
            cmd.get_document("lsid").map(|l| vec![doc! {"_id": l.clone()}]).unwrap_or_default()
        }
        Some((name, _)) if name == "$currentOp" => Vec::new(),
        _ => {
            return Err(CmdError::new(
                40324,
                "Location40324",
                "a database-level aggregate starts with $documents, $listLocalSessions or $currentOp in the simulator",
            ))
        }
    })
}

/// The error of a stage the simulator does not have (mongod's code for an unknown stage).
pub(crate) fn unrecognized_stage(name: &str) -> CmdError {
    CmdError::new(
        40324,
        "Location40324",
        format!("Unrecognized pipeline stage name: '{name}' (not supported by the simulator)"),
    )
}

/// A stage that only reads: `Some` with its output, `None` when `name` is not one (`$out`,
/// `$merge`, a stage the simulator does not have). Views use these alone.
pub(crate) fn read_stage(
    name: &str,
    arg: &Bson,
    mut docs: Vec<Document>,
) -> Result<Option<Result<Vec<Document>, CmdError>>, CmdError> {
    Ok(Some(Ok(match (name, arg) {
        ("$match", Bson::Document(f)) => {
            let mut kept = Vec::with_capacity(docs.len());
            for d in docs {
                if store::matches(&d, f)? {
                    kept.push(d);
                }
            }
            kept
        }
        ("$limit", n) => {
            let n = usize_opt(Some(n))
                .filter(|n| *n > 0)
                .ok_or_else(|| CmdError::bad("$limit must be positive"))?;
            docs.truncate(n);
            docs
        }
        ("$skip", n) => {
            let n = usize_opt(Some(n)).ok_or_else(|| CmdError::bad("$skip must be a non-negative number"))?;
            docs.into_iter().skip(n).collect()
        }
        ("$sort", Bson::Document(s)) => {
            store::sort(&mut docs, s)?;
            docs
        }
        ("$count", Bson::String(field)) => vec![doc! {field.as_str(): i32_of(docs.len())}],
        ("$group", Bson::Document(spec)) => group(docs, spec)?,
        (name, arg) if super::super::expr::shape(name, arg, Document::new()).is_some() => {
            let mut shaped = Vec::with_capacity(docs.len());
            for d in docs {
                if let Some(r) = super::super::expr::shape(name, arg, d) {
                    shaped.push(r?);
                }
            }
            shaped
        }
        _ => return Ok(None),
    })))
}

/// The documents of `coll`: its own, or a view's (its source's through its pipeline).
fn documents_of(store: &Store, db: &str, coll: &str) -> Result<Vec<Document>, CmdError> {
    let Some(c) = store.coll(db, coll) else { return Ok(Vec::new()) };
    let Ok(source) = c.options().get_str("viewOn") else { return Ok(c.iter().cloned().collect()) };
    let mut docs = documents_of(store, db, source)?;
    for stage in c.options().get_array("pipeline").map(Vec::as_slice).unwrap_or_default() {
        let Some((name, arg)) = stage.as_document().and_then(|s| s.iter().next()) else { continue };
        docs = match read_stage(name, arg, docs)? {
            Some(r) => r?,
            None => {
                return Err(CmdError::bad(format!("a view's {name} stage is not supported by the simulator")))
            }
        };
    }
    Ok(docs)
}

/// `$out` (`merge: None`: the target's documents are replaced) and `$merge` (`whenMatched`:
/// `merge`, `replace`, `keepExisting` or `fail`; unmatched documents are inserted) by `_id`.
fn write_out(
    store: &mut Store,
    ops: &mut Ops,
    db: &str,
    coll: &str,
    docs: Vec<Document>,
    merge: Option<&str>,
) -> Result<(), CmdError> {
    if merge.is_none() {
        if let Some(before) = store.drop_coll(db, coll) {
            ops.push(|| Op::DropColl { db: db.to_owned(), coll: coll.to_owned(), before });
        }
        store.coll_mut(db, coll);
        ops.push(|| Op::Create { db: db.to_owned(), coll: coll.to_owned() });
    }
    let c = store.coll_mut(db, coll);
    for d in docs {
        let d = store::ensure_id(d);
        let key = id_key(d.get("_id").unwrap_or(&Bson::Null));
        match (c.get(&key).cloned(), merge) {
            (Some(existing), Some(mode)) => {
                let after = match mode {
                    "replace" => d,
                    "keepExisting" => continue,
                    "fail" => {
                        let id = existing.get("_id").cloned().unwrap_or(Bson::Null);
                        let v = ("_id_".to_string(), doc! {"_id": 1}, doc! {"_id": id});
                        return Err(unique_error(&format!("{db}.{coll}"), v));
                    }
                    _ => {
                        let mut merged = existing.clone();
                        merged.extend(d);
                        merged
                    }
                };
                c.replace(&key, after.clone());
                ops.push(|| Op::Replace {
                    db: db.to_owned(),
                    coll: coll.to_owned(),
                    key,
                    before: existing,
                    after,
                    replacement: true,
                });
            }
            (Some(_), None) => {
                return Err(CmdError::new(11000, "DuplicateKey", "$out produced a duplicate _id"));
            }
            (None, _) => {
                let logged = d.clone();
                let _ = c.insert(d);
                ops.push(|| Op::Insert { db: db.to_owned(), coll: coll.to_owned(), doc: logged });
            }
        }
    }
    Ok(())
}

/// Evaluates a (tiny subset of an) aggregation expression: `"$path"`, a document of
/// expressions, or a literal.
fn eval(expr: &Bson, doc: &Document) -> Bson {
    match expr {
        Bson::String(s) if s.starts_with('$') => {
            store::lookup(doc, &s[1..]).first().map_or(Bson::Null, |v| (*v).clone())
        }
        Bson::Document(d) if d.keys().next().is_some_and(|k| k == "$literal") => {
            d.get("$literal").cloned().unwrap_or(Bson::Null)
        }
        Bson::Document(d) => Bson::Document(d.iter().map(|(k, v)| (k.clone(), eval(v, doc))).collect()),
        other => other.clone(),
    }
}

/// A running accumulator of `$group`.
enum Acc {
    Sum { int: i64, float: f64, is_float: bool },
    Avg { total: f64, n: u64 },
    Min(Option<Bson>),
    Max(Option<Bson>),
    First(Option<Bson>),
    Last(Option<Bson>),
    Push(Vec<Bson>),
    AddToSet(Vec<Bson>),
}

impl Acc {
    fn new(op: &str) -> Result<Self, CmdError> {
        Ok(match op {
            "$sum" | "$count" => Acc::Sum { int: 0, float: 0.0, is_float: false },
            "$avg" => Acc::Avg { total: 0.0, n: 0 },
            "$min" => Acc::Min(None),
            "$max" => Acc::Max(None),
            "$first" => Acc::First(None),
            "$last" => Acc::Last(None),
            "$push" => Acc::Push(Vec::new()),
            "$addToSet" => Acc::AddToSet(Vec::new()),
            other => {
                return Err(CmdError::new(
                    15952,
                    "Location15952",
                    format!("unknown group operator '{other}' (not supported by the simulator)"),
                ))
            }
        })
    }

    fn add(&mut self, v: Bson) {
        match self {
            Acc::Sum { int, float, is_float } => match v {
                Bson::Int32(i) => *int = int.saturating_add(i64::from(i)),
                Bson::Int64(i) => *int = int.saturating_add(i),
                Bson::Double(d) => {
                    *float += d;
                    *is_float = true;
                }
                _ => {}
            },
            Acc::Avg { total, n } => {
                let x = match v {
                    Bson::Int32(i) => Some(f64::from(i)),
                    Bson::Int64(i) => Some(i as f64),
                    Bson::Double(d) => Some(d),
                    _ => None,
                };
                if let Some(x) = x {
                    *total += x;
                    *n += 1;
                }
            }
            Acc::Min(cur) => {
                if !matches!(v, Bson::Null) && cur.as_ref().is_none_or(|c| store::compare(&v, c).is_lt()) {
                    *cur = Some(v);
                }
            }
            Acc::Max(cur) => {
                if !matches!(v, Bson::Null) && cur.as_ref().is_none_or(|c| store::compare(&v, c).is_gt()) {
                    *cur = Some(v);
                }
            }
            Acc::First(cur) => {
                if cur.is_none() {
                    *cur = Some(v);
                }
            }
            Acc::Last(cur) => *cur = Some(v),
            Acc::Push(items) => items.push(v),
            Acc::AddToSet(items) => {
                if !items.iter().any(|x| store::compare(x, &v).is_eq()) {
                    items.push(v);
                }
            }
        }
    }

    fn finish(self) -> Bson {
        match self {
            Acc::Sum { int, float, is_float } => {
                if is_float {
                    Bson::Double(float + int as f64)
                } else {
                    i32::try_from(int).map_or(Bson::Int64(int), Bson::Int32)
                }
            }
            Acc::Avg { total, n } => {
                if n == 0 {
                    Bson::Null
                } else {
                    Bson::Double(total / n as f64)
                }
            }
            Acc::Min(v) | Acc::Max(v) | Acc::First(v) | Acc::Last(v) => v.unwrap_or(Bson::Null),
            Acc::Push(items) | Acc::AddToSet(items) => Bson::Array(items),
        }
    }
}

/// `$group` with `_id` expressions and the common accumulators (what drivers' helpers such as
/// `count_documents` use).
fn group(docs: Vec<Document>, spec: &Document) -> Result<Vec<Document>, CmdError> {
    let id_expr = spec
        .get("_id")
        .ok_or_else(|| CmdError::new(15955, "Location15955", "a group specification must include an _id"))?;
    let mut fields = Vec::new();
    for (name, acc) in spec.iter().filter(|(k, _)| *k != "_id") {
        let Bson::Document(acc) = acc else {
            return Err(CmdError::new(
                40234,
                "Location40234",
                format!("The field '{name}' must be an accumulator object"),
            ));
        };
        let Some((op, arg)) = acc.iter().next() else {
            return Err(CmdError::new(
                40234,
                "Location40234",
                format!("The field '{name}' must be an accumulator object"),
            ));
        };
        Acc::new(op)?;
        fields.push((name.clone(), op.clone(), arg.clone()));
    }
    let mut groups: Vec<(Bson, Vec<Acc>)> = Vec::new();
    for d in &docs {
        let key = eval(id_expr, d);
        let pos = match groups.iter().position(|(k, _)| store::compare(k, &key).is_eq()) {
            Some(p) => p,
            None => {
                let accs = fields.iter().map(|(_, op, _)| Acc::new(op)).collect::<Result<Vec<_>, _>>()?;
                groups.push((key, accs));
                groups.len() - 1
            }
        };
        for ((_, op, arg), acc) in fields.iter().zip(groups[pos].1.iter_mut()) {
            let v = if op == "$count" { Bson::Int32(1) } else { eval(arg, d) };
            acc.add(v);
        }
    }
    Ok(groups
        .into_iter()
        .map(|(key, accs)| {
            let mut out = doc! {"_id": key};
            for ((name, _, _), acc) in fields.iter().zip(accs) {
                out.insert(name.clone(), acc.finish());
            }
            out
        })
        .collect())
}

/// `{n, writeErrors?, ok: 1}`: the reply shape insert and delete share.
fn write_reply(n: usize, write_errors: Vec<Document>) -> Document {
    let mut reply = doc! {"n": i32_of(n)};
    if !write_errors.is_empty() {
        reply.insert("writeErrors", write_errors);
    }
    reply.insert("ok", 1.0);
    reply
}

/// MongoDB 8.0's `bulkWrite` (run on `admin`): `ops` of `{insert|update|delete: <nsInfo
/// index>, ...}` over the namespaces of `nsInfo`, each answered in the results cursor
/// (`errorsOnly`: the failed ones only), with the counts beside the cursor.
fn bulk_write(ctx: &Ctx<'_>, cmd: &Document, store: &mut Store, ops: &mut Ops) -> Result<Exec, CmdError> {
    if ctx.db != "admin" {
        return Err(CmdError::new(
            13,
            "Unauthorized",
            "bulkWrite may only be run against the admin database.",
        ));
    }
    let writes = seq_or_array(ctx, cmd, "ops")?;
    let namespaces = bulk_namespaces(ctx, cmd)?;
    let ordered = cmd.get_bool("ordered").unwrap_or(true);
    let errors_only = cmd.get_bool("errorsOnly").unwrap_or(false);
    let batch = cmd.get_document("cursor").ok().and_then(|c| usize_opt(c.get("batchSize")));
    let (mut errors, mut inserted, mut matched, mut modified, mut upserted, mut deleted) = (0, 0, 0, 0, 0, 0);
    let mut results = Vec::new();
    for (idx, w) in writes.iter().enumerate() {
        let outcome = (|| -> Result<Document, CmdError> {
            let (kind, ns_index) =
                w.iter().next().ok_or_else(|| CmdError::bad("an empty bulkWrite operation"))?;
            let ns_index = usize_opt(Some(ns_index)).ok_or_else(|| CmdError::bad("bad nsInfo index"))?;
            let (db, coll) = namespaces.get(ns_index).ok_or_else(|| {
                CmdError::new(2, "BadValue", format!("BulkWrite ops entry {idx} has an invalid nsInfo index"))
            })?;
            let _collation = super::super::expr::scope(None, w.get_document("collation").ok())?;
            let filter =
                || w.get_document("filter").map_err(|_| CmdError::bad("BSON field 'filter' is missing"));
            match kind.as_str() {
                "insert" => {
                    let d = w.get_document("document").map_err(|_| CmdError::bad("insert needs document"))?;
                    insert_one(db, coll, d.clone(), bypass_validation(cmd), store, ops)?;
                    inserted += 1;
                    Ok(doc! {"n": 1})
                }
                "update" => {
                    let u = match w.get("updateMods") {
                        Some(u @ (Bson::Document(_) | Bson::Array(_))) => u,
                        _ => return Err(CmdError::bad("BSON field 'updateMods' is missing")),
                    };
                    let multi = w.get_bool("multi").unwrap_or(false);
                    if multi && !is_modifier(u) {
                        return Err(CmdError::bad(
                            "multi update is not supported for replacement-style update",
                        ));
                    }
                    let stmt = Stmt {
                        q: filter()?,
                        u,
                        array_filters: array_filters(w)?,
                        upsert: w.get_bool("upsert").unwrap_or(false),
                        multi,
                        sort: w.get_document("sort").ok().filter(|s| !s.is_empty()),
                        bypass: bypass_validation(cmd),
                    };
                    let o = update_one_stmt(db, coll, &stmt, store, ops)?;
                    matched += o.matched;
                    modified += o.modified;
                    let mut r = doc! {"n": i32_of(o.matched + usize::from(o.upserted.is_some())), "nModified": i32_of(o.modified)};
                    if let Some(id) = o.upserted {
                        upserted += 1;
                        r.insert("upserted", doc! {"_id": id});
                    }
                    Ok(r)
                }
                "delete" => {
                    let limit_one = !w.get_bool("multi").unwrap_or(false);
                    let removed = delete_matching(db, coll, filter()?, limit_one, None, store, ops)?;
                    deleted += removed.len();
                    Ok(doc! {"n": i32_of(removed.len())})
                }
                other => Err(CmdError::bad(format!("Unrecognized bulkWrite operation: {other}"))),
            }
        })();
        match outcome {
            Ok(r) => {
                if !errors_only {
                    let mut item = doc! {"ok": 1.0, "idx": i32_of(idx)};
                    item.extend(r);
                    results.push(item);
                }
            }
            Err(e) => {
                errors += 1;
                results.push(bulk_error(idx, &e));
                if ordered {
                    break;
                }
            }
        }
    }
    let counts = doc! {
        "nErrors": i32_of(errors),
        "nInserted": i32_of(inserted),
        "nMatched": i32_of(matched),
        "nModified": i32_of(modified),
        "nUpserted": i32_of(upserted),
        "nDeleted": i32_of(deleted),
    };
    Ok(Exec::Bulk { docs: results, batch, counts })
}

/// The client bulkWrite's `nsInfo`: each namespace as (database, collection).
fn bulk_namespaces(ctx: &Ctx<'_>, cmd: &Document) -> Result<Vec<(String, String)>, CmdError> {
    seq_or_array(ctx, cmd, "nsInfo")?
        .iter()
        .map(|n| {
            let ns = n.get_str("ns").map_err(|_| CmdError::bad("nsInfo entries need ns"))?;
            match ns.split_once('.') {
                Some((db, coll)) if !db.is_empty() && !coll.is_empty() => {
                    Ok((db.to_owned(), coll.to_owned()))
                }
                _ => {
                    Err(CmdError::new(73, "InvalidNamespace", format!("Invalid namespace specified '{ns}'")))
                }
            }
        })
        .collect()
}

/// The result item of a client bulkWrite's failed write `idx`.
fn bulk_error(idx: usize, e: &CmdError) -> Document {
    let mut item = doc! {"ok": 0.0, "idx": i32_of(idx), "code": e.code, "codeName": e.code_name.as_str(), "errmsg": e.errmsg.as_str()};
    if let Some(extra) = &e.extra {
        item.extend((**extra).clone());
    }
    item
}

/// The command's `bypassDocumentValidation`.
fn bypass_validation(cmd: &Document) -> bool {
    cmd.get_bool("bypassDocumentValidation").unwrap_or(false)
}

/// Applies the collection's `validator` to a document written to it (`before`: the
/// document an update replaces), as its `validationLevel` and `validationAction` say:
/// mongod's DocumentValidationFailure (121) with `errInfo` when it does not match.
fn check_valid(
    coll: Option<&store::Collection>,
    doc: &Document,
    before: Option<&Document>,
) -> Result<(), CmdError> {
    let Some(options) = coll.map(store::Collection::options) else { return Ok(()) };
    let Ok(validator) = options.get_document("validator") else { return Ok(()) };
    let level = options.get_str("validationLevel").unwrap_or("strict");
    let action = options.get_str("validationAction").unwrap_or("error");
    if level == "off" || action == "warn" || validator.is_empty() {
        return Ok(());
    }
    // "moderate": an update of a document that was already invalid is not checked.
    if level == "moderate" && before.is_some_and(|b| !store::matches(b, validator).unwrap_or(true)) {
        return Ok(());
    }
    if store::matches(doc, validator)? {
        return Ok(());
    }
    let mut e = CmdError::new(121, "DocumentValidationFailure", "Document failed validation");
    e.extra = Some(Box::new(doc! {"errInfo": {
        "failingDocumentId": doc.get("_id").cloned().unwrap_or(Bson::Null),
        "details": {"operatorName": validator.keys().next().map_or("$and", String::as_str), "specifiedAs": validator.clone()},
    }}));
    Err(e)
}

/// `collMod`: a new `validator`, `validationLevel` or `validationAction`, and an index's
/// `hidden`, `expireAfterSeconds`, `prepareUnique` or `unique` (refused, with the
/// duplicates as `violations`, while documents share a key).
/// `renameCollection` (on `admin`): moves a collection, replacing the target with `dropTarget`.
fn rename_collection(cmd: &Document, store: &mut Store, ops: &mut Ops) -> Result<Exec, CmdError> {
    let split = |key: &str| -> Result<(String, String), CmdError> {
        let ns = cmd.get_str(key).map_err(|_| CmdError::bad(format!("renameCollection needs {key}")))?;
        ns.split_once('.').map(|(d, c)| (d.to_owned(), c.to_owned())).ok_or_else(|| {
            CmdError::new(73, "InvalidNamespace", format!("Invalid namespace specified '{ns}'"))
        })
    };
    let (db, coll) = split("renameCollection")?;
    let (to_db, to) = split("to")?;
    if !store.has_coll(&db, &coll) {
        return Err(CmdError::new(
            26,
            "NamespaceNotFound",
            format!("Source collection {db}.{coll} does not exist"),
        ));
    }
    let drop_target = cmd.get_bool("dropTarget").unwrap_or(false);
    if store.has_coll(&to_db, &to) && !drop_target {
        return Err(CmdError::new(48, "NamespaceExists", "target namespace exists"));
    }
    let dropped = store.drop_coll(&to_db, &to);
    if let Some(c) = store.drop_coll(&db, &coll) {
        store.put_coll(&to_db, &to, c);
    }
    ops.push(|| Op::Rename { db, coll, to_db, to, dropped });
    Ok(Exec::Reply(doc! {"ok": 1.0}))
}

fn coll_mod(db: &str, cmd: &Document, store: &mut Store, ops: &mut Ops) -> Result<Exec, CmdError> {
    let coll = coll_name(cmd, "collMod")?;
    let event = doc! {"operationType": "modify", "operationDescription": {}};
    ops.push(|| Op::Ddl { db: db.to_owned(), coll: coll.to_owned(), event });
    let Some(c) = store.coll_mut_existing(db, coll) else {
        return Err(CmdError::new(26, "NamespaceNotFound", format!("ns does not exist: {db}.{coll}")));
    };
    let mut reply = Document::new();
    for (k, v) in cmd {
        match k.as_str() {
            "collMod"
            | "writeConcern"
            | "comment"
            | "lsid"
            | "txnNumber"
            | "$db"
            | "$clusterTime"
            | "maxTimeMS"
            | "$readPreference"
            | "apiVersion"
            | "apiStrict"
            | "apiDeprecationErrors" => {}
            "validator"
            | "validationLevel"
            | "validationAction"
            | "expireAfterSeconds"
            | "changeStreamPreAndPostImages" => {
                c.options_mut().insert(k.clone(), v.clone());
            }
            "index" => {
                let spec =
                    v.as_document().ok_or_else(|| CmdError::bad("collMod index must be a document"))?;
                let key = spec.get_document("keyPattern").ok();
                let name = spec.get_str("name").ok();
                if spec.get_bool("unique").unwrap_or(false) {
                    let pattern = c
                        .index_mut(key, name)
                        .and_then(|i| i.get_document("key").ok().cloned())
                        .ok_or_else(|| CmdError::new(27, "IndexNotFound", "cannot find index"))?;
                    let violations = c.duplicates(&pattern);
                    if !violations.is_empty() {
                        let mut e = CmdError::new(
                            359,
                            "CannotConvertIndexToUnique",
                            "Cannot convert the index to unique. Please resolve conflicting documents before running collMod again.",
                        );
                        let violations: Vec<Bson> =
                            violations.into_iter().map(|ids| Bson::Document(doc! {"ids": ids})).collect();
                        e.extra = Some(Box::new(doc! {"violations": violations}));
                        return Err(e);
                    }
                }
                let index = c
                    .index_mut(key, name)
                    .ok_or_else(|| CmdError::new(27, "IndexNotFound", "cannot find index"))?;
                for (field, value) in
                    spec.iter().filter(|(f, _)| !matches!(f.as_str(), "keyPattern" | "name"))
                {
                    let old = index.insert(field.clone(), value.clone());
                    reply.insert(format!("{field}_old"), old.unwrap_or(Bson::Boolean(false)));
                    reply.insert(format!("{field}_new"), value.clone());
                }
            }
            other => {
                return Err(CmdError::new(
                    40415,
                    "Location40415",
                    format!("BSON field 'collMod.{other}' is an unknown field."),
                ));
            }
        }
    }
    reply.insert("ok", 1.0);
    Ok(Exec::Reply(reply))
}
