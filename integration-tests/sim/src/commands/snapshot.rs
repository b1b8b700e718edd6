//! Reads at a cluster time: `readConcern: {afterClusterTime}` waits, and snapshot reads
//! answer from the data as it was (`atClusterTime`).

use bson::Document;

use super::context::{check_role, Access, Ctx};
use super::cursor;
use super::exec::exec;
use super::outcome::Exec;
use super::reply::CmdError;
use crate::shared::Shared;
use crate::state::oplog::Ops;
use crate::state::Kind;

/// How many snapshots snapshot reads keep.
const SNAPSHOTS_KEPT: usize = 16;

/// `readConcern: {afterClusterTime}`: member `i` answers once it has applied every write up
/// to that time (a lagging secondary waits; `maxTimeMS` bounds the wait).
pub(crate) async fn wait_for_cluster_time(
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
pub(crate) async fn snapshot_read_command(
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
