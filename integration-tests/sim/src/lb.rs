//! The load balancer: one port; each accepted connection is assigned a mongos service
//! round-robin (skipping killed services) and served as that service. A single-service load
//! balancer sends every connection to its one service.

use std::net::TcpListener as StdTcpListener;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;

use crate::shared::Shared;

/// Accepts connections on the load balancer port until aborted; `only`: the one service.
pub(crate) async fn run(shared: Arc<Shared>, listener: StdTcpListener, only: Option<usize>) {
    let listener = match TcpListener::from_std(listener) {
        Ok(l) => l,
        Err(e) => {
            tracing::error!(error = %e, "cannot register the load balancer listener");
            return;
        }
    };
    loop {
        let sock = match listener.accept().await {
            Ok((sock, _)) => sock,
            Err(e) => {
                tracing::warn!(error = %e, "load balancer accept failed");
                tokio::time::sleep(Duration::from_millis(5)).await;
                continue;
            }
        };
        let member = {
            let st = shared.state.lock();
            let n = st.members.len();
            if let Some(i) = only {
                st.members.get(i).filter(|m| m.alive).and_then(|_| st.handles.get(i).cloned())
            } else {
                (0..n).find_map(|_| {
                    let i = shared.lb_next.fetch_add(1, Ordering::Relaxed) % n;
                    st.members[i].alive.then(|| Arc::clone(&st.handles[i]))
                })
            }
        };
        match member {
            Some(member) => {
                let incarnation = *member.incarnation.borrow();
                tokio::spawn(super::server::serve(Arc::clone(&shared), member, sock, incarnation, true));
            }
            // Every service is down: the connection is closed at once, like an LB with no
            // healthy backend.
            None => drop(sock),
        }
    }
}
