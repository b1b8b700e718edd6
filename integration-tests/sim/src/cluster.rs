//! Starting and stopping a deployment: binding every member's listener (or the load
//! balancer's) and serving it, the first election, a member process's loops, and closing.
//! The top of the simulator: it names the server loop and the load balancer.

use std::net::TcpListener as StdTcpListener;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use crate::error::SimError;
use crate::member::config::MemberConfig;
use crate::shared::{bind, bind_on, Shared};
use crate::state::member::Member;
use crate::state::Kind;

impl Shared {
    /// Starts listeners for every member (for LB: only the load balancer) and the replicator,
    /// and elects the first primary.
    pub(crate) fn start(self: &Arc<Self>) -> Result<(), SimError> {
        if let Some(config) = &self.remote {
            return self.start_member(config);
        }
        let count = self.state.lock().members.len();
        let mut listeners = Vec::with_capacity(count);
        for i in 0..count {
            if self.kind == Kind::LoadBalanced {
                listeners.push(None);
                continue;
            }
            let port = if self.base_port == 0 { 0 } else { self.base_port.saturating_add(i as u16) };
            let l = bind(port)?;
            listeners.push(Some(l));
        }
        let lb = if self.kind == Kind::LoadBalanced { Some(bind(self.base_port)?) } else { None };
        let lb_addr = match &lb {
            Some(l) => Some(self.advertised(l.local_addr().map_err(SimError::Io)?)),
            None => None,
        };
        {
            let mut st = self.state.lock();
            for (i, l) in listeners.iter().enumerate() {
                let (addr, port) = match (l, &lb_addr) {
                    (Some(l), _) => {
                        let a = l.local_addr().map_err(SimError::Io)?;
                        (self.advertised(a), a.port())
                    }
                    (None, Some(lb)) => (lb.clone(), 0),
                    (None, None) => return Err(SimError::InvalidConfig("no listener".into())),
                };
                st.handles.push(Arc::new(Member::new(i, addr, port)));
            }
            if self.kind == Kind::ReplicaSet {
                let p = st
                    .candidate(None, Instant::now())
                    .ok_or_else(|| SimError::InvalidConfig("no electable member".into()))?;
                st.promote(p)?;
                // The set starts initiated: every member has the initial history.
                let end = st.oplog.end();
                for m in st.members.iter_mut().filter(|m| m.data_bearing()) {
                    m.applied = end;
                }
                st.commit = end;
                self.advance_cluster_time(st.oplog.last_ts());
            }
        }
        *self.lb_addr.lock() = lb_addr;
        for (i, l) in listeners.into_iter().enumerate() {
            if let Some(l) = l {
                spawn_listener(self, i, l);
            }
        }
        if let Some(l) = lb {
            let shared = Arc::clone(self);
            let task = self.handle.spawn(async move { crate::lb::run(shared, l, None).await });
            *self.lb_listener.lock() = Some(task.abort_handle());
        }
        if self.kind == Kind::ReplicaSet {
            let shared = Arc::clone(self);
            self.handle.spawn(async move { shared.replicator().await });
        }
        Ok(())
    }

    /// Starts one member of a multi-process set: its listener and the loops that find the
    /// other members, elect and replicate.
    fn start_member(self: &Arc<Self>, config: &MemberConfig) -> Result<(), SimError> {
        let port = config.validate()?;
        let listener = bind_on(config.bind, port)?;
        {
            let mut st = self.state.lock();
            for (i, name) in config.members.iter().enumerate() {
                let port = name.rsplit_once(':').and_then(|(_, p)| p.parse().ok()).unwrap_or(0);
                st.handles.push(Arc::new(Member::new(i, name.clone(), port)));
            }
            crate::member::init(self, &mut st, config)?;
            self.advance_cluster_time(st.oplog.last_ts());
        }
        spawn_listener(self, config.me, listener);
        crate::member::spawn(self, config);
        Ok(())
    }

    /// Starts another load balancer, in front of service `i` only (the spec tests' single-mongos
    /// LB next to the multi-mongos one); returns its `host:port`.
    pub(crate) fn single_service_lb(self: &Arc<Self>, i: usize) -> Result<String, SimError> {
        if self.kind != Kind::LoadBalanced {
            return Err(SimError::InvalidState(
                "a single-service load balancer needs an LB deployment".into(),
            ));
        }
        self.member(i).ok_or(SimError::NoSuchMember(i))?;
        let l = bind(0)?;
        let addr = self.advertised(l.local_addr().map_err(SimError::Io)?);
        let shared = Arc::clone(self);
        let task = self.handle.spawn(async move { crate::lb::run(shared, l, Some(i)).await });
        self.single_lbs.lock().push(task.abort_handle());
        Ok(addr)
    }

    /// Stops everything: every listener and connection closes.
    pub(crate) fn close(&self) {
        if self.closed.swap(true, Ordering::SeqCst) {
            return;
        }
        if let Some(l) = self.lb_listener.lock().take() {
            l.abort();
        }
        for l in self.single_lbs.lock().drain(..) {
            l.abort();
        }
        let handles = self.state.lock().handles.clone();
        for h in handles {
            if let Some(l) = h.listener.lock().take() {
                l.abort();
            }
            h.incarnation.send_modify(|n| *n += 1);
        }
        self.repl_wake.notify_one();
    }
}

/// Serves member `i` on `l` (the deployment's [`Serve`](crate::shared::Serve)).
pub(crate) fn spawn_listener(shared: &Arc<Shared>, i: usize, l: StdTcpListener) {
    let Some(member) = shared.member(i) else { return };
    let serving = Arc::clone(shared);
    let task = shared.handle.spawn(async move { crate::server::listen(serving, member, l).await });
    if let Some(m) = shared.member(i) {
        *m.listener.lock() = Some(task.abort_handle());
    }
}
