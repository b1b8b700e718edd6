//! Pool readiness as a message: the topology actor makes pools ready and clears them in step
//! with the description (synchronously, as the SDAM spec wants), records each change of a
//! pool's state here, and tells the selection actors after publishing the snapshot that goes
//! with it ([`PoolReadinessChanged`]), so their waiters are served without waiting for the
//! next snapshot.

use actix::Recipient;
use pool::cmap::PoolState;
use protocol::address::ServerAddress;

use crate::cluster::messages::PoolReadinessChanged;
use crate::cluster::pool_actor::ServerPool;

/// The watchers and the changes not yet told.
#[derive(Debug, Default)]
pub(crate) struct PoolReadiness {
    watchers: Vec<Recipient<PoolReadinessChanged>>,
    pending: Vec<(ServerAddress, bool)>,
}

impl PoolReadiness {
    /// Adds a watcher.
    pub(crate) fn watch(&mut self, watcher: Recipient<PoolReadinessChanged>) {
        self.watchers.push(watcher);
    }

    /// Runs `change` on `pool` and records whether it moved the pool between serving and not.
    pub(crate) fn change(&mut self, pool: &ServerPool, change: impl FnOnce(&ServerPool)) {
        let before = pool.state() == PoolState::Ready;
        change(pool);
        let after = pool.state() == PoolState::Ready;
        if before != after && !self.watchers.is_empty() {
            self.pending.push((pool.address().clone(), after));
        }
    }

    /// Tells every live watcher the recorded changes; `published_in` is the snapshot just
    /// published with them, if one was.
    pub(crate) fn tell(&mut self, published_in: Option<u64>) {
        if self.pending.is_empty() {
            return;
        }
        self.watchers.retain(Recipient::connected);
        for (address, ready) in self.pending.drain(..) {
            for w in &self.watchers {
                // Rare (at most one per check or error) and small: past the mailbox's bound.
                w.do_send(PoolReadinessChanged { address: address.clone(), ready, published_in });
            }
        }
    }
}
