//! Elections, as mongod runs them: a secondary that has not heard from a primary for the
//! election timeout (plus a delay that lets higher priorities go first, plus jitter) first asks
//! for votes in a dry run at the next term, so an isolated member does not inflate the term;
//! with a majority it takes the term, votes for itself and asks again. Voters grant one vote
//! per term, only to candidates at least as up to date as themselves, and not while they hear
//! from a healthy primary. A new primary writes a no-op in its term. A primary that no longer
//! reaches a majority steps down (and its `w: "majority"` writes stop being acknowledged).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bson::{doc, Document};
use futures_util::future::join_all;

use super::{adopt_term, journal_new_entries, journal_term, rank_delay, step_down_locked, MemberConfig};
use crate::raw_client::RawClient;
use crate::shared::Shared;
use crate::state::State;

/// mongod's periodicNoopIntervalSecs: keeps `lastWriteDate` moving on an idle set.
const NOOP_EVERY: Duration = Duration::from_secs(10);

/// The votes a candidate needs: a majority of the members.
pub(crate) fn majority(config: &MemberConfig) -> usize {
    config.members.len() / 2 + 1
}

/// Runs the election timer (and the primary's periodic work) until the cluster closes.
pub(crate) async fn run(shared: Arc<Shared>, config: MemberConfig) {
    let tick = config.heartbeat / 2;
    let mut last_noop = Instant::now();
    while !shared.closed.load(Ordering::Relaxed) {
        tokio::time::sleep(tick).await;
        let stand = {
            let mut st = shared.state.lock();
            let now = Instant::now();
            if st.primary == Some(config.me) {
                primary_tick(&shared, &mut st, &config, now, &mut last_noop);
                false
            } else {
                should_stand(&st, &config, now)
            }
        };
        if stand {
            stand_for_election(&shared, &config).await;
        }
    }
}

fn primary_tick(
    shared: &Shared,
    st: &mut State,
    config: &MemberConfig,
    now: Instant,
    last_noop: &mut Instant,
) {
    let reachable = st.node.as_ref().map_or(0, |n| {
        n.peers
            .iter()
            .filter(|p| p.last_ok.is_some_and(|t| now.duration_since(t) < config.election_timeout))
            .count()
    });
    if reachable + 1 < majority(config) {
        step_down_locked(shared, st, "cannot see a majority of the set");
        return;
    }
    if now.duration_since(*last_noop) >= NOOP_EVERY {
        *last_noop = now;
        let term = st.term;
        let end = st.oplog.push(term, Vec::new());
        st.members[config.me].applied = end;
        shared.after_write(st);
    }
}

fn should_stand(st: &State, config: &MemberConfig, now: Instant) -> bool {
    let Some(node) = st.node.as_ref() else { return false };
    let me = st.members.get(config.me);
    config.priority(config.me) > 0.0
        && now >= node.election_due
        && me.is_some_and(|m| m.stepped_down_until.is_none_or(|t| t <= now))
}

/// One election attempt: dry run, then the real vote.
async fn stand_for_election(shared: &Arc<Shared>, config: &MemberConfig) {
    let (term, request) = {
        let st = shared.state.lock();
        (st.term, vote_request(shared, &st, config, st.term + 1, true))
    };
    let yes = ask_for_votes(shared, config, request).await;
    if yes < majority(config) {
        tracing::debug!(term = term + 1, yes, "dry-run election lost");
        reset_timer(shared, config);
        return;
    }
    let request = {
        let mut st = shared.state.lock();
        // A primary this member still names (unreachable, or it would not stand) is no bar.
        if st.term != term || st.primary == Some(config.me) {
            return;
        }
        st.term = term + 1;
        if let Some(n) = st.node.as_mut() {
            n.voted = Some((term + 1, config.me));
        }
        journal_term(&mut st);
        vote_request(shared, &st, config, term + 1, false)
    };
    let yes = ask_for_votes(shared, config, request).await;
    let mut st = shared.state.lock();
    if yes >= majority(config) && st.term == term + 1 && st.primary != Some(config.me) {
        become_primary(shared, &mut st, config);
    } else {
        tracing::debug!(term = term + 1, yes, "election lost");
        drop(st);
        reset_timer(shared, config);
    }
}

fn reset_timer(shared: &Shared, config: &MemberConfig) {
    let mut st = shared.state.lock();
    if let Some(n) = st.node.as_mut() {
        n.election_due = Instant::now() + config.election_timeout + rank_delay(config, config.me);
    }
}

fn vote_request(shared: &Shared, st: &State, config: &MemberConfig, term: i64, dry_run: bool) -> Document {
    let last = st.optime(config.me);
    doc! {
        "replSetRequestVotes": 1,
        "setName": shared.set_name.as_str(),
        "dryRun": dry_run,
        "term": term,
        "candidateIndex": i64::try_from(config.me).unwrap_or(-1),
        "configVersion": st.set_version,
        "lastAppliedOpTime": {"ts": last.ts, "t": last.term},
    }
}

/// Sends the request to every peer at once; returns the votes granted, this member's included.
async fn ask_for_votes(shared: &Arc<Shared>, config: &MemberConfig, request: Document) -> usize {
    let timeout = config.heartbeat * 2;
    let asks = config.members.iter().enumerate().filter(|(i, _)| *i != config.me).map(|(_, addr)| {
        let request = request.clone();
        async move {
            let mut c = RawClient::connect_with_timeout(addr, timeout).await.ok()?;
            c.set_timeout(timeout);
            c.command("admin", request).await.ok()
        }
    });
    let replies = join_all(asks).await;
    let mut st = shared.state.lock();
    let mut yes = 1;
    for r in replies.into_iter().flatten() {
        adopt_term(shared, &mut st, r.get_i64("term").unwrap_or(0));
        if r.get_bool("voteGranted").unwrap_or(false) {
            yes += 1;
        }
    }
    yes
}

fn become_primary(shared: &Shared, st: &mut State, config: &MemberConfig) {
    let me = config.me;
    st.primary = Some(me);
    // Its entries come after every time the old primary handed out (gossiped to this member).
    st.oplog.observe(shared.cluster_time());
    // Entries beyond the old commit point are committed by this term's first majority write.
    let end = st.oplog.push(st.term, Vec::new());
    st.members[me].applied = end;
    if let Some(h) = st.handles.get(me) {
        h.bump();
    }
    tracing::info!(term = st.term, member = %config.members[me], "elected primary");
    journal_new_entries(st);
    shared.after_write(st);
}

/// The voter's side of `replSetRequestVotes`.
pub(crate) fn vote(shared: &Shared, st: &mut State, req: &Document) -> Document {
    let term = req.get_i64("term").unwrap_or(0);
    let dry_run = req.get_bool("dryRun").unwrap_or(false);
    let candidate = req.get_i64("candidateIndex").ok().and_then(|c| usize::try_from(c).ok());
    let last = super::heartbeat::optime_field(req, "lastAppliedOpTime");
    if !dry_run {
        adopt_term(shared, st, term);
    }
    let reply = |st: &State, granted: bool, reason: &str| {
        doc! {"term": st.term, "voteGranted": granted, "reason": reason, "ok": 1.0}
    };
    let Some(candidate) = candidate.filter(|c| *c < st.members.len()) else {
        return reply(st, false, "unknown candidate");
    };
    if term < st.term || (dry_run && term == st.term) {
        return reply(st, false, "candidate's term is stale");
    }
    let mine = st.optime(st.node.as_ref().map_or(0, |n| n.me));
    let up_to_date = last.is_some_and(|(ts, t)| (t, ts) >= (mine.term, mine.ts));
    if !up_to_date {
        return reply(st, false, "candidate's data is staler than mine");
    }
    let now = Instant::now();
    let Some(node) = st.node.as_ref() else { return reply(st, false, "not a member process") };
    let timeout = shared.election_timeout;
    let primary_alive = match st.primary {
        Some(p) if p == node.me => true,
        Some(p) => node.peers.get(p).and_then(|x| x.last_ok).is_some_and(|t| now.duration_since(t) < timeout),
        None => false,
    };
    if primary_alive && st.primary != Some(candidate) {
        return reply(st, false, "there is a healthy primary");
    }
    if dry_run {
        return reply(st, true, "");
    }
    match st.node.as_ref().and_then(|n| n.voted) {
        Some((t, c)) if t == term && c != candidate => return reply(st, false, "already voted in this term"),
        _ => {}
    }
    if let Some(n) = st.node.as_mut() {
        n.voted = Some((term, candidate));
        // Granting a vote restarts the timer: give the candidate time to win.
        n.election_due = now + timeout;
    }
    journal_term(st);
    reply(st, true, "")
}
