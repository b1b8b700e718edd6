//! Heartbeats: every interval, each peer is asked `replSetHeartbeat`. Its reply says its state,
//! term, last write and commit point; from those this member learns who is primary, adopts
//! newer terms, counts the peer's position towards `w: "majority"`, and (as a secondary)
//! follows the commit point. A peer that does not answer within half the election timeout
//! is marked unreachable; a primary that stops answering is replaced by the election loop.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bson::{doc, Document, Timestamp};

use super::{adopt_term, rank_delay, MemberConfig};
use crate::raw_client::RawClient;
use crate::shared::Shared;
use crate::state::node::Peer;
use crate::state::State;

/// Sends heartbeats to member `peer` until the cluster closes.
pub(crate) async fn run(shared: Arc<Shared>, config: MemberConfig, peer: usize) {
    let Some(addr) = config.members.get(peer).cloned() else { return };
    let timeout = config.election_timeout / 2;
    let mut conn: Option<RawClient> = None;
    while !shared.closed.load(Ordering::Relaxed) {
        let started = Instant::now();
        let request = {
            let st = shared.state.lock();
            doc! {
                "replSetHeartbeat": shared.set_name.as_str(),
                "from": i64::try_from(config.me).unwrap_or(-1),
                "term": st.term,
                "configVersion": st.set_version,
            }
        };
        match beat(&mut conn, &addr, timeout, request).await {
            Ok(reply) => {
                let mut st = shared.state.lock();
                observe(&shared, &mut st, &config, peer, &reply);
            }
            Err(e) => {
                conn = None;
                tracing::debug!(peer = %addr, error = %e, "heartbeat failed");
                let mut st = shared.state.lock();
                if let Some(m) = st.members.get_mut(peer) {
                    m.alive = false;
                }
            }
        }
        let next = started + config.heartbeat;
        tokio::time::sleep_until(next.max(Instant::now() + Duration::from_millis(1)).into()).await;
    }
}

async fn beat(
    conn: &mut Option<RawClient>,
    addr: &str,
    timeout: Duration,
    request: Document,
) -> Result<Document, String> {
    let c = match conn {
        Some(c) => c,
        None => conn.insert(RawClient::connect_with_timeout(addr, timeout).await.map_err(|e| e.to_string())?),
    };
    c.set_timeout(timeout);
    let reply = c.command("admin", request).await.map_err(|e| e.to_string())?;
    if reply.get_f64("ok").unwrap_or(0.0) != 1.0 {
        return Err(format!("heartbeat refused: {reply}"));
    }
    Ok(reply)
}

/// `{ts, t}` of a reply field.
pub(crate) fn optime_field(d: &Document, key: &str) -> Option<(Timestamp, i64)> {
    let o = d.get_document(key).ok()?;
    Some((o.get_timestamp("ts").ok()?, o.get_i64("t").ok()?))
}

/// Learns from a heartbeat reply of `peer`.
fn observe(shared: &Shared, st: &mut State, config: &MemberConfig, peer: usize, reply: &Document) {
    let now = Instant::now();
    let term = reply.get_i64("term").unwrap_or(0);
    adopt_term(shared, st, term);
    let state = reply.get_i32("state").unwrap_or(0);
    let optime = optime_field(reply, "opTime");
    let me = config.me;
    if let Some(m) = st.members.get_mut(peer) {
        m.alive = true;
    }
    if let Some((ts, t)) = optime {
        super::peer_position(st, peer, ts, t);
    }
    let mut changed = false;
    if state == 1 && term >= st.term && st.primary != Some(me) {
        if st.primary != Some(peer) {
            tracing::info!(primary = %config.members[peer], term, "following a new primary");
            st.primary = Some(peer);
            changed = true;
        }
        if let Some(n) = st.node.as_mut() {
            n.election_due = now + config.election_timeout + rank_delay(config, me);
        }
        if let Some((ts, t)) = optime_field(reply, "lastOpCommitted") {
            super::sync::learn_commit(st, ts, t, false);
        }
    } else if st.primary == Some(peer) && state != 1 {
        // The primary stepped down: elect a new one soon (priorities still order members).
        st.primary = None;
        if let Some(n) = st.node.as_mut() {
            n.election_due = n.election_due.min(now + rank_delay(config, me));
        }
        changed = true;
    }
    if let Some(n) = st.node.as_mut() {
        if let Some(p) = n.peers.get_mut(peer) {
            *p = Peer { last_ok: Some(now) };
        }
    }
    if changed {
        if let Some(h) = st.handles.get(me) {
            h.bump();
        }
    }
    shared.member_progress(st);
}
