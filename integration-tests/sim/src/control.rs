//! The control operations that move the deployment's roles: elections (scheduled after a step
//! down, a kill or a restart), replication after a write, kills, restarts, added and removed
//! members. Behind the public [`Cluster`](crate::Cluster) API and the `sim*` admin commands;
//! a restarted listener is served through [`Shared::serve`], so nothing here names the server.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bson::{oid::ObjectId, Document};

use crate::error::SimError;
use crate::options::MemberOptions;
use crate::shared::{bind, Shared};
use crate::state::member::TopologyVersion;
use crate::state::member::{Member, MemberState};
use crate::state::{Kind, State};

impl Shared {
    /// Called after a primary logged an entry: replicate at once when there is no lag,
    /// otherwise wake the replicator.
    pub(crate) fn after_write(&self, st: &mut State) {
        self.advance_cluster_time(st.oplog.last_ts());
        if st.node.is_some() {
            crate::member::journal_new_entries(st);
            self.member_progress(st);
        } else if self.lag.is_zero() {
            let (_, _) = st.replicate(Duration::ZERO, Instant::now());
            self.progress.send_modify(|v| *v += 1);
        } else {
            st.advance_commit();
            self.progress.send_modify(|v| *v += 1);
            self.repl_wake.notify_one();
        }
    }

    /// Background replication for lagged secondaries and the periodic no-op writer.
    pub(crate) async fn replicator(self: Arc<Self>) {
        // mongod's periodicNoopIntervalSecs: keeps lastWriteDate moving on an idle set.
        const NOOP_EVERY: Duration = Duration::from_secs(10);
        let mut last_noop = Instant::now();
        loop {
            if self.closed.load(Ordering::Relaxed) {
                return;
            }
            let now = Instant::now();
            let next = {
                let mut st = self.state.lock();
                if now.duration_since(last_noop) >= NOOP_EVERY {
                    last_noop = now;
                    if let Some(p) = st.primary {
                        let term = st.term;
                        let end = st.oplog.push(term, Vec::new());
                        st.members[p].applied = end;
                        self.advance_cluster_time(st.oplog.last_ts());
                    }
                }
                let (changed, next) = st.replicate(self.lag, now);
                if changed {
                    self.progress.send_modify(|v| *v += 1);
                }
                next
            };
            let wake = next.unwrap_or(now + NOOP_EVERY).min(last_noop + NOOP_EVERY);
            tokio::select! {
                () = self.repl_wake.notified() => {}
                () = tokio::time::sleep_until(wake.into()) => {}
            }
        }
    }

    pub(crate) fn schedule_election(self: &Arc<Self>, delay: Duration, avoid: Option<usize>) {
        let shared = Arc::clone(self);
        self.handle.spawn(async move {
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            shared.auto_elect(avoid);
        });
    }

    fn auto_elect(self: &Arc<Self>, avoid: Option<usize>) {
        if self.closed.load(Ordering::Relaxed) {
            return;
        }
        let retry = {
            let mut st = self.state.lock();
            if st.primary.is_some() {
                return;
            }
            let now = Instant::now();
            match st.candidate(avoid, now) {
                Some(c) => {
                    if let Err(e) = st.promote(c) {
                        tracing::warn!(error = %e, "election failed");
                    }
                    self.advance_cluster_time(st.oplog.last_ts());
                    self.progress.send_modify(|v| *v += 1);
                    None
                }
                // Someone is only temporarily ineligible (replSetStepDown): try again then.
                None => st
                    .members
                    .iter()
                    .filter_map(|m| m.stepped_down_until.filter(|t| *t > now && m.alive))
                    .min()
                    .map(|t| t.duration_since(now)),
            }
        };
        if let Some(delay) = retry {
            self.schedule_election(delay, avoid);
        }
    }

    /// Steps the primary down; a new one is elected after `gap`. `ineligible` keeps the old
    /// primary out of elections for that long (replSetStepDown's stepDownSecs).
    pub(crate) fn step_down(
        self: &Arc<Self>,
        gap: Duration,
        ineligible: Option<Duration>,
    ) -> Result<(), SimError> {
        self.check_rs("step down")?;
        if self.remote.is_some() {
            let mut st = self.state.lock();
            let me = st.node.as_ref().map_or(0, |n| n.me);
            if !crate::member::step_down_locked(self, &mut st, "replSetStepDown") {
                return Err(SimError::InvalidState("this member is not primary".into()));
            }
            st.members[me].stepped_down_until = ineligible.map(|d| Instant::now() + d);
            return Ok(());
        }
        let old = {
            let mut st = self.state.lock();
            let old = st.step_down();
            if let (Some(p), Some(d)) = (old, ineligible) {
                st.members[p].stepped_down_until = Some(Instant::now() + d);
            }
            old
        };
        match old {
            Some(p) => {
                tracing::info!(member = p, ?gap, "primary stepped down");
                self.schedule_election(gap, Some(p));
                Ok(())
            }
            None => Err(SimError::InvalidState("there is no primary".into())),
        }
    }

    /// Kills member `i`: closes its listener and every connection.
    pub(crate) fn kill(self: &Arc<Self>, i: usize) -> Result<(), SimError> {
        let (member, was_primary) = {
            let mut st = self.state.lock();
            let member = st.handles.get(i).cloned().ok_or(SimError::NoSuchMember(i))?;
            let m = &mut st.members[i];
            if !m.alive {
                return Ok(());
            }
            m.alive = false;
            st.cursors.retain(|_, c| c.member != i);
            st.streams.retain(|_, c| c.member() != i);
            let was_primary = st.primary == Some(i);
            if was_primary {
                st.step_down();
            }
            (member, was_primary)
        };
        member.shut_down();
        tracing::info!(member = i, "killed");
        if was_primary {
            self.schedule_election(self.election_timeout, None);
        }
        Ok(())
    }

    /// Restarts member `i` on the same port with a new processId (killing it first if needed).
    pub(crate) fn restart(self: &Arc<Self>, i: usize) -> Result<(), SimError> {
        let alive = {
            let st = self.state.lock();
            st.members.get(i).ok_or(SimError::NoSuchMember(i))?.alive
        };
        if alive {
            self.kill(i)?;
        }
        let member = self.member(i).ok_or(SimError::NoSuchMember(i))?;
        let listener = if self.kind == Kind::LoadBalanced { None } else { Some(bind(member.port)?) };
        let no_primary = {
            let mut st = self.state.lock();
            if st.members[i].removed {
                return Err(SimError::InvalidState(format!("member {i} was removed")));
            }
            st.members[i].alive = true;
            st.members[i].stepped_down_until = None;
            member.failpoints.clear();
            member.topology.send_replace(TopologyVersion { process_id: ObjectId::new(), counter: 0 });
            st.primary.is_none()
        };
        if let Some(l) = listener {
            (self.serve)(self, i, l);
        }
        tracing::info!(member = i, "restarted");
        if self.kind == Kind::ReplicaSet {
            self.repl_wake.notify_one();
            if no_primary {
                self.schedule_election(Duration::ZERO, None);
            }
        }
        Ok(())
    }

    /// Adds a secondary (initial sync from the most advanced member); returns its index.
    pub(crate) fn add_member(self: &Arc<Self>, tags: Option<Document>) -> Result<usize, SimError> {
        self.check_rs("add_member")?;
        let index = self.state.lock().members.len();
        let port = if self.base_port == 0 { 0 } else { self.base_port.saturating_add(index as u16) };
        let l = bind(port)?;
        let addr = l.local_addr().map_err(SimError::Io)?;
        {
            let mut st = self.state.lock();
            if st.members.len() != index {
                return Err(SimError::InvalidState("concurrent add_member".into()));
            }
            let opts = MemberOptions { tags: tags.unwrap_or_default(), ..MemberOptions::default() };
            let mut ms = MemberState::new(&opts);
            // Initial sync: copy the most advanced live data member.
            if let Some(src) =
                st.members.iter().filter(|m| m.alive && m.data_bearing()).max_by_key(|m| m.applied)
            {
                ms.store = src.store.clone();
                ms.applied = src.applied;
            }
            st.members.push(ms);
            st.handles.push(Arc::new(Member::new(index, self.advertised(addr), addr.port())));
            st.set_version += 1;
            st.bump_all();
        }
        (self.serve)(self, index, l);
        tracing::info!(member = index, %addr, "member added");
        Ok(index)
    }

    /// Removes member `i` from the set (reconfig) and shuts it down.
    pub(crate) fn remove_member(self: &Arc<Self>, i: usize) -> Result<(), SimError> {
        self.check_rs("remove_member")?;
        let was_primary = {
            let mut st = self.state.lock();
            let m = st.members.get(i).ok_or(SimError::NoSuchMember(i))?;
            if m.removed {
                return Ok(());
            }
            let was_primary = st.primary == Some(i);
            if was_primary {
                st.step_down();
            }
            st.members[i].removed = true;
            st.set_version += 1;
            st.bump_all();
            was_primary
        };
        // The removed member goes down (its connections close).
        {
            let mut st = self.state.lock();
            st.members[i].alive = false;
        }
        if let Some(m) = self.member(i) {
            m.shut_down();
        }
        if was_primary {
            self.schedule_election(Duration::ZERO, None);
        }
        Ok(())
    }
}
