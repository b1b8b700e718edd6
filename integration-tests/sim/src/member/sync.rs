//! Replication, as mongod's secondaries do it: a tailable, awaitData `find` on the primary's
//! `local.oplog.rs` from this member's last write, then `getMore`s; each batch is applied in
//! order, journaled, and reported back with `replSetUpdatePosition` (which is what lets the
//! primary acknowledge `w: "majority"`).
//!
//! The first entry returned must be this member's last write. When it is not, the histories
//! diverged (this member was a primary whose last writes no majority has): it asks the source
//! for the entries since its commit point, finds the newest one both have, and rolls back
//! everything after it, undoing each op with its image.

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use bson::{doc, Bson, Document, Timestamp};

use super::{adopt_term, journal_new_entries, oplog_entry, record_session, MemberConfig};
use crate::raw_client::RawClient;
use crate::shared::Shared;
use crate::state::oplog::ts_key;
use crate::state::State;

/// The error of a batch whose entry is not after this member's last one.
const OUT_OF_ORDER: &str = "the source sent an entry out of order";

/// Entries per batch.
const BATCH: i32 = 1000;

/// Pulls from the primary until the cluster closes.
pub(crate) async fn run(shared: Arc<Shared>, config: MemberConfig) {
    while !shared.closed.load(Ordering::Relaxed) {
        let source = shared.state.lock().primary.filter(|p| *p != config.me);
        let Some(source) = source else {
            tokio::time::sleep(config.heartbeat).await;
            continue;
        };
        match pull(&shared, &config, source).await {
            Ok(()) => tracing::debug!(source = %config.members[source], "oplog fetcher restarting"),
            Err(e) => {
                tracing::debug!(source = %config.members[source], error = %e, "oplog fetcher stopped");
                tokio::time::sleep(config.heartbeat).await;
            }
        }
    }
}

fn check(reply: Document) -> Result<Document, String> {
    if reply.get_f64("ok").unwrap_or(0.0) == 1.0 {
        Ok(reply)
    } else {
        Err(format!(
            "{}: {}",
            reply.get_str("codeName").unwrap_or("error"),
            reply.get_str("errmsg").unwrap_or("")
        ))
    }
}

fn batch_of(reply: &Document, key: &str) -> Result<(i64, Vec<Document>), String> {
    let c = reply.get_document("cursor").map_err(|_| "a reply without cursor".to_owned())?;
    let id = c.get_i64("id").unwrap_or(0);
    let docs = c
        .get_array(key)
        .map_err(|_| format!("a cursor without {key}"))?
        .iter()
        .filter_map(Bson::as_document)
        .cloned()
        .collect();
    Ok((id, docs))
}

/// One fetcher session against `source`; returns when the source is no longer the primary.
async fn pull(shared: &Arc<Shared>, config: &MemberConfig, source: usize) -> Result<(), String> {
    let me = config.me;
    let timeout = config.election_timeout;
    let mut c =
        RawClient::connect_with_timeout(&config.members[source], timeout).await.map_err(|e| e.to_string())?;
    c.set_timeout(timeout + config.heartbeat);
    let (last, applied) = {
        let st = shared.state.lock();
        (st.optime(me), st.members[me].applied)
    };
    let find = doc! {
        "find": "oplog.rs",
        "filter": {"ts": {"$gte": last.ts}},
        "tailable": true,
        "awaitData": true,
        "batchSize": BATCH,
    };
    let reply = check(c.command("local", find).await.map_err(|e| e.to_string())?)?;
    let (id, mut docs) = batch_of(&reply, "firstBatch")?;
    if applied > 0 {
        let same = docs.first().is_some_and(|d| {
            d.get_timestamp("ts").ok() == Some(last.ts) && d.get_i64("t").ok() == Some(last.term)
        });
        if !same {
            return roll_back(shared, config, &mut c).await;
        }
        docs.remove(0);
    }
    if let Err(e) = apply_batch(shared, config, &reply, &docs) {
        // Not after this member's last write: the histories differ after all.
        return if e.starts_with(OUT_OF_ORDER) { roll_back(shared, config, &mut c).await } else { Err(e) };
    }
    report(shared, config, &mut c).await?;
    let mut id = id;
    while id != 0 && !shared.closed.load(Ordering::Relaxed) {
        if shared.state.lock().primary != Some(source) {
            return Ok(());
        }
        let more = doc! {
            "getMore": id,
            "collection": "oplog.rs",
            "batchSize": BATCH,
            "maxTimeMS": i64::try_from(config.heartbeat.as_millis()).unwrap_or(1000),
        };
        let reply = check(c.command("local", more).await.map_err(|e| e.to_string())?)?;
        let (next, docs) = batch_of(&reply, "nextBatch")?;
        id = next;
        if !docs.is_empty() {
            apply_batch(shared, config, &reply, &docs)?;
            report(shared, config, &mut c).await?;
        } else {
            apply_batch(shared, config, &reply, &[])?;
        }
    }
    Ok(())
}

/// Applies a batch under the lock, journals it, follows the source's term and commit point.
fn apply_batch(
    shared: &Shared,
    config: &MemberConfig,
    reply: &Document,
    docs: &[Document],
) -> Result<(), String> {
    let mut st = shared.state.lock();
    let source_term = reply.get_document("$replData").ok().and_then(|m| m.get_i64("term").ok()).unwrap_or(0);
    adopt_term(shared, &mut st, source_term);
    if st.primary == Some(config.me) {
        return Err("this member became primary".into());
    }
    // Raft's rule: nothing from a source in an older term than this member's (it voted in a
    // newer election since the batch was asked for); applied and reported, such an entry
    // could be counted towards a majority the new primary never had.
    if source_term < st.term {
        return Err(format!("the source is in term {source_term}, this member in {}", st.term));
    }
    let mut result = Ok(());
    for d in docs {
        // The last entry's time (the oplog's clock may be ahead of it: gossiped cluster time).
        let last = st.oplog.optime_at(st.oplog.end()).ts;
        if !d.get_timestamp("ts").is_ok_and(|ts| ts_key(ts) > ts_key(last)) {
            result =
                Err(format!("{OUT_OF_ORDER}: {:?} after this member's {last:?}", d.get_timestamp("ts").ok()));
            break;
        }
        if let Err(e) = apply_entry(shared, &mut st, config.me, d) {
            tracing::error!(error = %e, "cannot apply an oplog entry");
            result = Err(e);
            break;
        }
    }
    journal_new_entries(&mut st);
    if let Some((ts, t)) = reply.get_document("$replData").ok().and_then(|m| {
        let o = m.get_document("lastOpCommitted").ok()?;
        Some((o.get_timestamp("ts").ok()?, o.get_i64("t").ok()?))
    }) {
        learn_commit(&mut st, ts, t, true);
    }
    shared.member_progress(&mut st);
    result
}

/// Tells the source how far this member got.
async fn report(shared: &Shared, config: &MemberConfig, c: &mut RawClient) -> Result<(), String> {
    let (last, term) = {
        let st = shared.state.lock();
        (st.optime(config.me), st.term)
    };
    let cmd = doc! {
        "replSetUpdatePosition": 1,
        "term": term,
        "optimes": [{
            "memberId": i64::try_from(config.me).unwrap_or(-1),
            "appliedOpTime": {"ts": last.ts, "t": last.term},
            "durableOpTime": {"ts": last.ts, "t": last.term},
        }],
    };
    check(c.command("admin", cmd).await.map_err(|e| e.to_string())?).map(drop)
}

/// Follows the primary's commit point as far as this member has the same entries.
/// `prefix`: this member's history is known to be a prefix of the primary's (the fetcher just
/// checked it), so a commit point beyond its last write covers everything it has.
pub(crate) fn learn_commit(st: &mut State, ts: Timestamp, t: i64, prefix: bool) {
    let Some(me) = st.node.as_ref().map(|n| n.me) else { return };
    let applied = st.members[me].applied;
    let point = match st.oplog.applied_of(ts, t) {
        Some(p) => p,
        None if prefix && ts_key(ts) >= ts_key(st.oplog.optime_at(applied).ts) => applied,
        None => return,
    };
    st.commit = st.commit.max(point.min(applied));
}

/// Applies one pulled (or replayed) oplog document to member `me`.
pub(crate) fn apply_entry(shared: &Shared, st: &mut State, me: usize, d: &Document) -> Result<(), String> {
    let store = &mut st.members.get_mut(me).ok_or("no such member")?.store;
    let pulled = oplog_entry::apply(d, store)?;
    let ts = pulled.optime.ts;
    st.term = st.term.max(pulled.optime.term);
    let session = pulled.session.clone();
    let end = st.oplog.push_at(pulled.optime, pulled.ops, pulled.session);
    st.members[me].applied = end;
    if let Some(rec) = &session {
        record_session(st, rec, end, ts);
    }
    let State { oplog, history, .. } = st;
    if let Some(e) = oplog.get(end - 1) {
        history.record(ts, &e.ops);
    }
    shared.advance_cluster_time(ts);
    Ok(())
}

/// Undoes member `me`'s entries from `target` on (rollback), and what they recorded.
pub(crate) fn roll_back_to(st: &mut State, me: usize, target: u64) {
    let State { members, oplog, history, retried_writes, node, .. } = st;
    // The peers' positions index this oplog: past `target` they named entries that are gone.
    for (j, other) in members.iter_mut().enumerate() {
        if j != me {
            other.applied = other.applied.min(target);
        }
    }
    let Some(m) = members.get_mut(me) else { return };
    m.undo_to(oplog, target);
    oplog.truncate(target);
    history.roll_back(oplog.optime_at(target).ts);
    retried_writes.retain(|_, (_, p)| p.is_none_or(|p| p.end <= target));
    if let Some(n) = node.as_mut() {
        if let Some(j) = n.journal.as_mut() {
            j.truncate(target);
        }
        n.journaled = n.journaled.min(target);
    }
}

/// The histories diverged: find the newest entry the source also has and roll back to it.
/// The search looks at the last `k` entries here (16, then 4 times more each round) and asks
/// the source for its entries in the same time window; the newest of ours it also holds is
/// the common point. A window that reaches below the commit point (or the oldest entry held)
/// ends the search there.
async fn roll_back(shared: &Shared, config: &MemberConfig, c: &mut RawClient) -> Result<(), String> {
    let mut k: u64 = 16;
    let common = loop {
        let (floor, lo, from, to) = {
            let st = shared.state.lock();
            let floor = st.commit.max(st.oplog.base());
            let end = st.oplog.end();
            let lo = end.saturating_sub(k).max(floor);
            (floor, lo, st.oplog.optime_at(lo).ts, st.oplog.optime_at(end).ts)
        };
        let window = doc! {"ts": {"$gte": from, "$lte": to}};
        let find = doc! {"find": "oplog.rs", "filter": window, "projection": {"ts": 1, "t": 1}};
        let reply = check(c.command("local", find).await.map_err(|e| e.to_string())?)?;
        let (_, docs) = batch_of(&reply, "firstBatch")?;
        let theirs: HashSet<(u64, i64)> = docs
            .iter()
            .filter_map(|d| Some((ts_key(d.get_timestamp("ts").ok()?), d.get_i64("t").ok()?)))
            .collect();
        let st = shared.state.lock();
        let found = (lo..st.oplog.end()).rev().find(|idx| {
            st.oplog.get(*idx).is_some_and(|e| theirs.contains(&(ts_key(e.optime.ts), e.optime.term)))
        });
        match found {
            Some(idx) => break idx + 1,
            None if lo <= floor => break floor,
            None => k = k.saturating_mul(4),
        }
    };
    let mut st = shared.state.lock();
    let me = config.me;
    let from_end = st.members[me].applied;
    if common >= from_end {
        // Nothing here that the source lacks, yet it does not hold this member's last write:
        // that write was trimmed from its oplog. Only an initial sync could help.
        return Err("the source no longer holds this member's last write (initial sync needed)".into());
    }
    tracing::info!(from = from_end, to = common, "rolling back entries the primary does not have");
    roll_back_to(&mut st, me, common);
    shared.member_progress(&mut st);
    Ok(())
}

/// How long a getMore on an oplog cursor waits for new entries when asked for no time.
pub(crate) const DEFAULT_AWAIT: Duration = Duration::from_secs(1);
