//! The server side of a member process: `replSetHeartbeat`, `replSetRequestVotes`,
//! `replSetUpdatePosition`, and `find`/`getMore` on `local.oplog.rs` (tailable, awaitData) for
//! the secondaries that pull from this member. Replies to the oplog queries carry mongod's
//! `$replData` (term, commit point, primary) so the fetcher follows terms and commits.

use std::time::{Duration, Instant};

use bson::{doc, Bson, Document, Timestamp};

use super::oplog_entry;
use crate::commands::context::Ctx;
use crate::commands::reply::{number, CmdError};
use crate::shared::Shared;
use crate::state::oplog::ts_key;
use crate::state::State;

/// Most entries in one batch, whatever the batchSize.
const MAX_BATCH: usize = 10_000;

/// Open oplog cursors kept (a fetcher uses one at a time).
const MAX_CURSORS: usize = 64;

/// Whether `name` is one of the member-to-member commands.
pub(crate) fn handles(name: &str) -> bool {
    matches!(name, "replSetHeartbeat" | "replSetRequestVotes" | "replSetUpdatePosition")
}

/// Whether a request is member-to-member traffic, which `failCommand` never affects (as in
/// mongod, where the fail point skips internal clients).
pub(crate) fn is_internal(name: &str, db: &str, body: &bson::RawDocument) -> bool {
    handles(name)
        || (db == "local"
            && (body.get_str("find").is_ok_and(|c| c == "oplog.rs")
                || body.get_str("collection").is_ok_and(|c| c == "oplog.rs")))
}

/// Whether the command queries this member's oplog.
pub(crate) fn is_oplog_query(ctx: &Ctx<'_>) -> bool {
    ctx.db == "local"
        && match ctx.name {
            "find" => ctx.body.get_str("find").is_ok_and(|c| c == "oplog.rs"),
            "getMore" => ctx.body.get_str("collection").is_ok_and(|c| c == "oplog.rs"),
            _ => false,
        }
}

fn not_member() -> CmdError {
    CmdError::new(76, "NoReplicationEnabled", "not running as a replica set member process")
}

/// Runs a member-to-member command.
pub(crate) async fn run(ctx: &Ctx<'_>) -> Result<Document, CmdError> {
    let cmd = ctx.document()?;
    let shared = ctx.shared;
    let mut st = shared.state.lock();
    if st.node.is_none() {
        return Err(not_member());
    }
    match ctx.name {
        "replSetHeartbeat" => {
            if cmd.get_str("replSetHeartbeat").ok() != Some(shared.set_name.as_str()) {
                return Err(CmdError::new(93, "InconsistentReplicaSetNames", "wrong replica set name"));
            }
            super::adopt_term(shared, &mut st, cmd.get_i64("term").unwrap_or(0));
            Ok(heartbeat_reply(shared, &st))
        }
        "replSetRequestVotes" => {
            if cmd.get_str("setName").ok() != Some(shared.set_name.as_str()) {
                return Err(CmdError::new(93, "InconsistentReplicaSetNames", "wrong replica set name"));
            }
            Ok(super::election::vote(shared, &mut st, &cmd))
        }
        _ => update_position(shared, &mut st, &cmd),
    }
}

fn optime_doc(ts: Timestamp, t: i64) -> Document {
    doc! {"ts": ts, "t": t}
}

fn heartbeat_reply(shared: &Shared, st: &State) -> Document {
    let me = st.node.as_ref().map_or(0, |n| n.me);
    let last = st.optime(me);
    let commit = st.majority_optime();
    let state = if st.primary == Some(me) { 1 } else { 2 };
    doc! {
        "set": shared.set_name.as_str(),
        "state": state,
        "term": st.term,
        "configVersion": st.set_version,
        "opTime": optime_doc(last.ts, last.term),
        "lastOpCommitted": optime_doc(commit.ts, commit.term),
        "ok": 1.0,
    }
}

fn update_position(shared: &Shared, st: &mut State, cmd: &Document) -> Result<Document, CmdError> {
    super::adopt_term(shared, st, cmd.get_i64("term").unwrap_or(0));
    let list = cmd.get_array("optimes").map_err(|_| CmdError::bad("replSetUpdatePosition needs optimes"))?;
    for o in list.iter().filter_map(Bson::as_document) {
        let Some(member) = number(o.get("memberId")).and_then(|m| usize::try_from(m).ok()) else { continue };
        let Some((ts, t)) = super::heartbeat::optime_field(o, "appliedOpTime") else { continue };
        if member < st.members.len() && Some(member) != st.node.as_ref().map(|n| n.me) {
            super::peer_position(st, member, ts, t);
            st.members[member].alive = true;
        }
    }
    shared.member_progress(st);
    Ok(doc! {"ok": 1.0})
}

fn repl_data(st: &State) -> Document {
    let commit = st.majority_optime();
    let primary = st.primary.map_or(-1, |p| i64::try_from(p).unwrap_or(-1));
    doc! {"term": st.term, "lastOpCommitted": optime_doc(commit.ts, commit.term), "primaryIndex": primary}
}

/// The entries from absolute index `from` (up to `to`, if given), projected to `ts`/`t` if
/// asked.
fn entries(
    st: &State,
    from: u64,
    limit: usize,
    ids_only: bool,
    to: Option<Timestamp>,
) -> (Vec<Bson>, Option<Timestamp>) {
    let mut out = Vec::new();
    let mut last = None;
    for idx in from..st.oplog.end() {
        if out.len() >= limit {
            break;
        }
        let Some(e) = st.oplog.get(idx) else { break };
        if to.is_some_and(|to| ts_key(e.optime.ts) > ts_key(to)) {
            break;
        }
        last = Some(e.optime.ts);
        out.push(Bson::Document(if ids_only {
            doc! {"ts": e.optime.ts, "t": e.optime.term}
        } else {
            oplog_entry::encode(e)
        }));
    }
    (out, last)
}

/// `find` and `getMore` on `local.oplog.rs`.
pub(crate) async fn oplog_query(ctx: &Ctx<'_>) -> Result<Document, CmdError> {
    let cmd = ctx.document()?;
    if ctx.name == "find" {
        find(ctx.shared, &cmd)
    } else {
        get_more(ctx.shared, &cmd).await
    }
}

fn find(shared: &Shared, cmd: &Document) -> Result<Document, CmdError> {
    let mut st = shared.state.lock();
    if st.node.is_none() {
        return Err(not_member());
    }
    let range = cmd.get_document("filter").ok().and_then(|f| f.get_document("ts").ok());
    let from_ts =
        range.and_then(|t| t.get_timestamp("$gte").ok()).unwrap_or(Timestamp { time: 0, increment: 0 });
    let to_ts = range.and_then(|t| t.get_timestamp("$lte").ok());
    if ts_key(from_ts) == 0 && st.oplog.base() > 0 {
        return Err(CmdError::new(292, "OplogStartMissing", "the start of the oplog is no longer held"));
    }
    let ids_only = cmd.get_document("projection").is_ok();
    let batch = number(cmd.get("batchSize")).and_then(|n| usize::try_from(n).ok()).filter(|n| *n > 0);
    let limit = batch.unwrap_or(MAX_BATCH).min(MAX_BATCH);
    let from = st.oplog.first_at_or_after(from_ts);
    let (docs, last) = entries(&st, from, limit, ids_only, to_ts);
    let tailable = cmd.get_bool("tailable").unwrap_or(false);
    let id = if tailable {
        st.next_cursor_id += 1;
        let id = st.next_cursor_id;
        let after = last.unwrap_or(from_ts);
        if let Some(n) = st.node.as_mut() {
            // Fetchers that went away leave their cursors: keep the newest few.
            while n.oplog_cursors.len() >= MAX_CURSORS {
                let Some(lru) = n.oplog_cursors.iter().min_by_key(|(_, c)| c.used).map(|(id, _)| *id) else {
                    break;
                };
                n.oplog_cursors.remove(&lru);
            }
            n.oplog_cursors.insert(id, crate::state::node::OplogCursor { after, used: Instant::now() });
        }
        id
    } else {
        0
    };
    Ok(doc! {
        "cursor": {"firstBatch": docs, "id": id, "ns": "local.oplog.rs"},
        "$replData": repl_data(&st),
        "ok": 1.0,
    })
}

async fn get_more(shared: &Shared, cmd: &Document) -> Result<Document, CmdError> {
    let id = number(cmd.get("getMore")).ok_or_else(|| CmdError::bad("getMore needs a cursor id"))?;
    let batch = number(cmd.get("batchSize")).and_then(|n| usize::try_from(n).ok()).filter(|n| *n > 0);
    let limit = batch.unwrap_or(MAX_BATCH).min(MAX_BATCH);
    let wait = number(cmd.get("maxTimeMS"))
        .and_then(|ms| u64::try_from(ms).ok())
        .filter(|ms| *ms > 0)
        .map_or(super::sync::DEFAULT_AWAIT, Duration::from_millis);
    let deadline = Instant::now() + wait;
    let mut rx = shared.progress.subscribe();
    loop {
        rx.borrow_and_update();
        {
            let mut st = shared.state.lock();
            let cursor = st.node.as_ref().and_then(|n| n.oplog_cursors.get(&id).copied());
            let Some(cursor) = cursor else {
                return Err(CmdError::new(43, "CursorNotFound", format!("cursor id {id} not found")));
            };
            // Entries strictly after the last one sent.
            let mut from = st.oplog.first_at_or_after(cursor.after);
            if st.oplog.get(from).is_some_and(|e| e.optime.ts == cursor.after) {
                from += 1;
            }
            let (docs, last) = entries(&st, from, limit, false, None);
            if !docs.is_empty() || Instant::now() >= deadline {
                if let Some(c) = st.node.as_mut().and_then(|n| n.oplog_cursors.get_mut(&id)) {
                    c.used = Instant::now();
                    if let Some(ts) = last {
                        c.after = ts;
                    }
                }
                return Ok(doc! {
                    "cursor": {"nextBatch": docs, "id": id, "ns": "local.oplog.rs"},
                    "$replData": repl_data(&st),
                    "ok": 1.0,
                });
            }
        }
        let _ = tokio::time::timeout_at(deadline.into(), rx.changed()).await;
    }
}
